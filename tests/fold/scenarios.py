"""Record sequences of scenarios shared by the fold tests and the backend tests (pure fold,
stream, backfill): each builds on a `Log` and returns it."""

from __future__ import annotations

from tests.fold.records import Log

# b-2 and g-7 after a-1 leaves; g-7 leads (HashMap order), see test_leader.
LEADER_PLAN = {"b-2": [("orders", 0), ("orders", 1)], "g-7": [("orders", 2), ("orders", 3)]}


def slow_leader(log: Log) -> Log:
    """a-1 (leader) and b-2 complete the join at 6 s (initial delay, extended once); b-2 syncs
    at 7 s and waits in SyncGroup while a-1 only heartbeats. Sessions 10 s, rebalance 30 s."""
    for m in ("a-1", "b-2"):
        log.join(m, new=True)
        log.join(m)
    log.at(7_000).sync("b-2", 1)
    log.at(12_000).heartbeat("a-1", 1)
    return log


def slow_leader_syncs(log: Log) -> Log:
    """The leader syncs 13 s after b-2; b-2, on a fresh session, heartbeats, commits, leaves."""
    slow_leader(log)
    log.at(20_000).sync("a-1", 1, {"a-1": [("orders", 0)], "b-2": [("orders", 1)]})
    log.at(27_000).heartbeat("b-2", 1)
    log.commit("orders", 1, 5, member="b-2", generation=1)
    log.at(28_000).leave("b-2")
    return log


def leader_leaves(log: Log) -> Log:
    """a-1 leads a-1, b-2, g-7 and leaves; b-2 and g-7 rejoin; g-7 (the new leader in
    HashMap order) syncs the plan, b-2 syncs as a follower."""
    log.stable_group("a-1", "b-2", "g-7")
    log.at(10_000).leave("a-1")
    log.join("b-2")
    log.join("g-7")
    log.at(11_000).sync("g-7", 2, LEADER_PLAN)
    log.sync("b-2", 2)
    return log
