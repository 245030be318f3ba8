"""The rebalance_cost rows: what each rebalance took from the group's consumers, by how its
members give partitions up (eager, cooperative, KIP-848's incremental reconciliation)."""

from __future__ import annotations

from tests.fold.records import Log
from tests.fold.test_consumer_groups import two_member_group

COOPERATIVE = (("cooperative-sticky", ("orders",)),)


def _costs(log: Log) -> list[dict[str, object]]:
    r = log.replay()
    assert len(r.outputs.rebalance_cost) == len(r.outputs.rebalances)
    return r.outputs.rebalance_cost


def test_an_eager_rebalance_leaves_every_partition_unowned_from_its_start_to_its_sync() -> None:
    log = Log().stable_group("a-1", "b-2", session=60_000)  # 4 partitions, Stable at 9 s
    log.at(20_000).join("c-3", new=True, session=60_000)
    log.join("c-3", session=60_000)
    log.at(21_000).join("a-1", session=60_000)
    log.join("b-2", session=60_000)  # every member has joined: CompletingRebalance, generation 2
    log.at(23_000).sync("a-1", 2, {"a-1": [("orders", 0), ("orders", 1)],
                                    "b-2": [("orders", 2)], "c-3": [("orders", 3)]})
    first, second = _costs(log)
    assert (first["rebalance_protocol"], first["partitions_revoked"],
            first["partitions_unowned"]) == ("EAGER", 0, 4)
    assert second["rebalance_protocol"] == "EAGER"
    assert second["duration_ms"] == 3_000
    # b-2 gave up orders 2 and 3 and got 2 back, a-1 kept 0 and 1: all four were revoked and
    # nobody consumed any of them for the three seconds; one moved.
    assert (second["partitions_revoked"], second["partitions_moved"],
            second["partitions_unowned"], second["unowned_partition_ms"]) == (4, 1, 4, 12_000)


def test_a_cooperative_rebalance_charges_only_the_moved_partitions_in_its_second_round() -> None:
    log = Log()
    log.join("a-1", new=True, protocols=COOPERATIVE, session=60_000)
    log.join("a-1", protocols=COOPERATIVE, session=60_000)
    log.at(9_000).sync("a-1", 1, {"a-1": [("orders", p) for p in range(4)]})
    log.at(20_000).join("b-2", new=True, protocols=COOPERATIVE, session=60_000)
    log.join("b-2", protocols=COOPERATIVE, session=60_000)
    log.at(21_000).join("a-1", protocols=COOPERATIVE, session=60_000)  # generation 2
    # First round: the assignor takes orders 2 and 3 from a-1 and gives them to nobody yet.
    log.at(22_000).sync("a-1", 2, {"a-1": [("orders", 0), ("orders", 1)], "b-2": []})
    log.sync("b-2", 2)
    # a-1 revoked them and rejoins: the second round hands them to b-2.
    log.at(23_000).join("a-1", protocols=COOPERATIVE, session=60_000)
    log.at(24_000).join("b-2", protocols=COOPERATIVE, session=60_000)
    log.at(25_000).sync("a-1", 3, {"a-1": [("orders", 0), ("orders", 1)],
                                    "b-2": [("orders", 2), ("orders", 3)]})
    log.sync("b-2", 3)
    _, first, second = _costs(log)
    assert {first["rebalance_protocol"], second["rebalance_protocol"]} == {"COOPERATIVE"}
    assert (first["partitions_revoked"], first["partitions_moved"],
            first["partitions_unowned"], first["unowned_partition_ms"]) == (2, 2, 0, 0)
    assert (second["partitions_revoked"], second["partitions_moved"],
            second["partitions_unowned"], second["duration_ms"],
            second["unowned_partition_ms"]) == (0, 2, 2, 2_000, 4_000)


def test_a_rebalance_seen_only_as_a_snapshot_has_no_duration_and_no_unowned_time() -> None:
    log = Log()
    log.snapshot(1, {"a-1": [("orders", 0), ("orders", 1)]})
    log.at(5_000).snapshot(2, {"a-1": [("orders", 0)], "b-2": [("orders", 1)]})
    rows = _costs(log)
    assert rows[-1]["cause"] == "SNAPSHOT" and rows[-1]["duration_ms"] is None
    assert (rows[-1]["partitions_moved"], rows[-1]["partitions_revoked"],
            rows[-1]["unowned_partition_ms"]) == (1, 2, None)


def test_a_cooperative_round_counts_a_leavers_partitions_unowned() -> None:
    log = Log()
    log.join("a-1", new=True, protocols=COOPERATIVE, session=60_000)
    log.join("a-1", protocols=COOPERATIVE, session=60_000)
    log.join("b-2", new=True, protocols=COOPERATIVE, session=60_000)
    log.join("b-2", protocols=COOPERATIVE, session=60_000)
    log.at(9_000).sync("a-1", 1, {"a-1": [("orders", 0), ("orders", 1)],
                                   "b-2": [("orders", 2), ("orders", 3)]})
    log.sync("b-2", 1)
    log.at(20_000).leave("b-2")
    log.at(21_000).join("a-1", protocols=COOPERATIVE, session=60_000)
    log.at(22_000).sync("a-1", 2, {"a-1": [("orders", p) for p in range(4)]})
    last = _costs(log)[-1]
    # a-1 kept 0 and 1; 2 and 3 had no owner from b-2's leave until the sync.
    assert (last["rebalance_protocol"], last["partitions_moved"], last["partitions_unowned"],
            last["duration_ms"], last["unowned_partition_ms"]) == (
        "COOPERATIVE", 2, 2, 2_000, 4_000)


def test_an_incremental_reconciliation_counts_every_partition_that_changes_owner() -> None:
    log = two_member_group()  # b-2 joins at 10 s; a-1 revokes 2 and 3, b-2 has them at 12 s
    last = _costs(log)[-1]
    assert (last["rebalance_protocol"], last["group_type"], last["partitions_revoked"],
            last["partitions_moved"], last["partitions_unowned"], last["duration_ms"],
            last["unowned_partition_ms"]) == ("INCREMENTAL", "consumer", 2, 2, 2, 2_000, 4_000)
