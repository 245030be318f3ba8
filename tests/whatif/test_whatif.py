"""The what-if, without Spark: a group's consumers' lives, recorded through the fold, read back
as a script and played again under another configuration, with Kafka's rules deciding what the
change saves or costs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from matplotlib import image

from pipeline.fold import CoordinatorConfig
from pipeline.fold.context import Outputs
from pipeline.report.whatif import played_frames, whatif_page
from pipeline.whatif import Change, WhatIfError, what_if
from pipeline.whatif.script import CRASH, LEAVE, Life, Script, script_of
from pipeline.whatif.simulate import HEARTBEAT_MS, simulate
from tests.fold.consumer_records import ConsumerLog

T0 = 1_700_000_000_000
CONFIG = CoordinatorConfig()
TOPICS = ("orders",)


def life(client: str, start_s: float, end_s: float | None = None, ending: str | None = None,
         static: bool = False, session_ms: int = 10_000) -> Life:
    return Life(client, "", T0 + int(start_s * 1000), TOPICS, session_ms, 30_000, static,
                ended_at=None if end_s is None else T0 + int(end_s * 1000), ending=ending)


def script(*lives: Life, assignor: str = "range", end_s: float = 300) -> Script:
    return Script("g", list(lives), {"orders": 6}, assignor, T0, T0 + int(end_s * 1000),
                  heartbeats=True, expelled=0)


AS_RECORDED = Change()


def recorded(s: Script, change: Change = AS_RECORDED) -> Outputs:
    """What the fold writes when the script's consumers live under `change`: the history a
    replay of that group's journal would hold."""
    return simulate(s, change, CONFIG).outputs


def compare(s: Script, change: Change, as_recorded: Change = AS_RECORDED,
            from_s: float = 20):  # noqa: ANN201
    """The what-if of `change` on the history `s` leaves under `as_recorded`, over a window
    from `from_s` on (by default once the group has formed)."""
    out = recorded(s, as_recorded)
    w = what_if("g", out.history, out.rebalance_cost, change, CONFIG, heartbeats=True,
                start=T0 + int(from_s * 1000), end=s.end)
    return {row["run"]: row for row in w.summary}, w


def rolling_restart(static: bool = False) -> Script:
    """Three consumers; each in turn restarts (stops, back 5 s later), 60 s apart."""
    lives = [life(c, 0) for c in ("a", "b", "c")]
    for i, (first, c) in enumerate(zip(lives[:3], ("a", "b", "c"), strict=True)):
        stop = 60 + 60 * i
        first.ended_at, first.ending = T0 + stop * 1000, LEAVE
        lives.append(life(c, stop + 5))
    for x in lives:
        x.static = static
    return script(*lives)


def test_the_script_read_back_from_the_history_is_the_script_played() -> None:
    played = rolling_restart()
    out = recorded(played)
    read = script_of("g", out.history, heartbeats=True)
    assert [(x.client.split("@")[0], x.ended_at, x.ending) for x in read.lives] == [
        (x.client, x.ended_at, x.ending) for x in played.lives]
    # A dynamic member joins in two phases: it is a member from the second JoinGroup, 1 ms on.
    assert [x.started_at - y.started_at for x, y in zip(read.lives, played.lives, strict=True)
            ] == [1] * len(played.lives)
    assert read.partitions == {"orders": 6} and read.assignor == "range"


def test_the_simulated_run_repeats_the_recorded_one_when_nothing_changes() -> None:
    runs, w = compare(rolling_restart(), Change())
    assert w.owners["simulated"] == w.owners["recorded"] and len(w.owners["recorded"]) == 3
    counts = ("rebalances", "members_expelled", "partitions_revoked", "partitions_moved")
    assert runs["recorded"]["rebalances"] == 6
    assert [runs["simulated"][k] for k in counts] == [runs["recorded"][k] for k in counts]
    # The clients' heartbeats are in another phase (the simulated run starts its members before
    # the window): each rebalance is noticed up to one heartbeat interval sooner or later.
    slack = runs["recorded"]["rebalances"] * 6 * HEARTBEAT_MS
    assert abs(runs["simulated"]["unowned_partition_ms"]
               - runs["recorded"]["unowned_partition_ms"]) <= slack


def test_static_membership_spares_a_rolling_restart_every_rebalance() -> None:
    # KIP-345: a static consumer sends no LeaveGroup when it stops and takes its old identity
    # back when it returns within its session: no rebalance at all, nobody expelled.
    runs, _ = compare(rolling_restart(), Change(static_membership=True))
    assert runs["recorded"]["rebalances"] == 6  # each restart: a leave, then a join
    assert (runs["what-if"]["rebalances"], runs["what-if"]["members_expelled"]) == (0, 0)
    assert runs["what-if"]["unowned_partition_ms"] == 0 < runs["recorded"]["unowned_partition_ms"]


def test_a_restart_longer_than_the_session_costs_a_static_group_an_expiry_and_a_rejoin() -> None:
    s = script(life("a", 0, static=True), life("b", 0, 60, CRASH, static=True),
               life("b", 80, static=True))
    runs, _ = compare(s, Change(), as_recorded=Change())
    assert (runs["recorded"]["rebalances"], runs["recorded"]["members_expelled"]) == (2, 1)
    longer, _ = compare(s, Change(session_timeout_ms=45_000))
    assert (longer["what-if"]["rebalances"], longer["what-if"]["members_expelled"]) == (0, 0)


def test_cooperative_sticky_leaves_only_the_moved_partitions_unowned() -> None:
    s = script(life("a", 0), life("b", 0), life("c", 60))  # c joins a stable group
    runs, w = compare(s, Change(assignor="cooperative-sticky"))
    eager, coop = runs["recorded"], runs["what-if"]
    assert coop["partitions_revoked"] < eager["partitions_revoked"]
    assert 0 < coop["unowned_partition_ms"] < eager["unowned_partition_ms"]
    protocols = {(r["run"], r["rebalance_protocol"]) for r in w.rebalances}
    assert ("recorded", "EAGER") in protocols and ("what-if", "COOPERATIVE") in protocols


def test_the_initial_delay_gathers_a_group_starting_from_empty_into_one_rebalance() -> None:
    s = script(*(life(c, 0.5 * i) for i, c in enumerate("abcd")))
    runs, _ = compare(s, Change(initial_rebalance_delay_ms=0),
                      as_recorded=Change(initial_rebalance_delay_ms=3_000), from_s=0)
    assert runs["recorded"]["rebalances"] == 1
    assert runs["what-if"]["rebalances"] > 1


def test_the_consumer_protocol_moves_only_what_it_must_and_the_fold_reads_its_records() -> None:
    # KIP-848: the broker assigns (uniform), each member reconciles on its own heartbeats;
    # the coordinator's records go through the fold like any consumer group's.
    runs, w = compare(rolling_restart(), Change(protocol="consumer"))
    eager, kip848 = runs["recorded"], runs["what-if"]
    assert {r["rebalance_protocol"] for r in w.rebalances if r["run"] == "what-if"} == {
        "INCREMENTAL"}
    assert {r["group_type"] for r in w.rebalances if r["run"] == "what-if"} == {"consumer"}
    assert 0 < kip848["partitions_revoked"] < eager["partitions_revoked"]
    assert kip848["partitions_moved"] <= eager["partitions_moved"]
    # Balanced at the end: six partitions, two each, every one owned.
    owned = sorted(tp for tps in w.owners["what-if"].values() for tp in tps)
    assert owned == [("orders", p) for p in range(6)]
    assert {len(tps) for tps in w.owners["what-if"].values()} == {2}


def test_static_members_of_a_consumer_protocol_group_restart_without_an_epoch_bump() -> None:
    runs, _ = compare(rolling_restart(), Change(protocol="consumer", static_membership=True))
    assert (runs["what-if"]["rebalances"], runs["what-if"]["members_expelled"]) == (0, 0)
    # A dynamic member that dies is held for the broker's session (45 s), then expelled.
    s = script(life("a", 0), life("b", 0), life("c", 0, 60, CRASH), end_s=200)
    died, _ = compare(s, Change(protocol="consumer"))
    assert died["what-if"]["members_expelled"] == 1


def test_the_consumer_protocols_range_assignor_gives_contiguous_ranges() -> None:
    _, w = compare(script(life("a", 0), life("b", 0)),
                   Change(protocol="consumer", assignor="range"), from_s=0)
    assert sorted(w.owners["what-if"].values()) == [
        tuple(("orders", p) for p in range(3)), tuple(("orders", p) for p in range(3, 6))]


@pytest.mark.parametrize(("change", "said"), [
    (Change(assignor="bogus"), "unknown assignor 'bogus'"),
    (Change(assignor="uniform"), "server-side assignor of the consumer protocol: add --protocol"),
    (Change(protocol="consumer", assignor="cooperative-sticky"),
     "the broker assigns, with uniform or range"),
    (Change(protocol="consumer", initial_rebalance_delay_ms=0), "no initial rebalance delay"),
    (Change(protocol="consumer", session_timeout_ms=10_000), "[45000, 60000]"),
    (Change(protocol="kafka"), "unknown protocol 'kafka'"),
    (Change(session_timeout_ms=1_000), "outside the broker's bounds [6000, 1800000]"),
    (Change(session_timeout_ms=3_600_000), "INVALID_SESSION_TIMEOUT"),
    (Change(rebalance_timeout_ms=-1), "must not be negative"),
])
def test_a_change_kafka_would_refuse_is_one_clear_line(change: Change, said: str) -> None:
    out = recorded(rolling_restart())
    with pytest.raises(WhatIfError, match=re.escape(said)):
        what_if("g", out.history, out.rebalance_cost, change, CONFIG, heartbeats=True)


def test_a_kip848_group_is_refused_in_one_line() -> None:
    log = ConsumerLog()
    log.stable_with("a-1")
    r = log.replay()
    with pytest.raises(WhatIfError, match="'cg' is a consumer group: the what-if plays a classic"):
        what_if("cg", r.outputs.history, r.outputs.rebalance_cost, Change(), CONFIG, False)


def test_a_group_never_seen_a_window_without_rebalances_and_a_records_only_timeout() -> None:
    with pytest.raises(WhatIfError, match="group 'nope' has no history"):
        what_if("nope", [], [], Change(), CONFIG, heartbeats=True)
    out = recorded(rolling_restart())
    quiet = (T0 + 30_000, T0 + 50_000)  # formed, nobody restarted yet
    with pytest.raises(WhatIfError, match="no rebalance in the window"):
        what_if("g", out.history, out.rebalance_cost, Change(), CONFIG, True, *quiet)
    with pytest.raises(WhatIfError, match="no heartbeats"):
        what_if("g", out.history, out.rebalance_cost, Change(session_timeout_ms=30_000), CONFIG,
                heartbeats=False)


def test_the_page_shows_both_runs_one_above_the_other_and_the_summary(tmp_path: Path) -> None:
    s = script(life("a", 0), life("b", 0), life("c", 60))
    out = recorded(s)
    w = what_if("g", out.history, out.rebalance_cost, Change(assignor="cooperative-sticky"),
                CONFIG, heartbeats=True, start=T0 + 20_000, end=s.end)
    tables = {"group_history": out.history, "group_transitions": out.transitions,
              "rebalances": out.rebalances}
    page = whatif_page("g", w.change.describe(), played_frames(tables), w.played["what-if"],
                       w.summary, w.start, w.end, path=tmp_path / "g.html")
    text = page.read_text()
    assert text.count("data:image/png;base64,") == 2
    assert text.index("As recorded") < text.index("What-if: assignor=cooperative-sticky")
    assert all(f"<td>{run}</td>" in text for run in ("recorded", "simulated", "what-if"))
    recorded_png, what_if_png = (image.imread(tmp_path / f"g-{run}.png")
                                 for run in ("recorded", "what-if"))
    assert recorded_png.shape == what_if_png.shape  # one time axis, the same panels
    assert (recorded_png != what_if_png).any()  # cooperative-sticky owns differently
