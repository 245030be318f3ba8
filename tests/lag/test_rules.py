"""The lag rules on hand-made inputs: Burrow's partition verdict rule by rule (in its code's
order, where it departs from its wiki), time lag by interpolation, and the group's cause."""

from __future__ import annotations

import pytest

from pipeline.lag import Commit, LagConfig, Sample, Verdict, group_status, partition_status, time_lag
from pipeline.lag.rules import Cause, Moment, cause, window

CFG = LagConfig()
S = 1000


def commits(*points: tuple[int, int, int | None]) -> list[Commit]:
    """(offset, seconds, lag) -> commits, oldest first."""
    return [Commit(o, t * S, lag) for o, t, lag in points]


def status(window_: list[Commit], current: int, now_s: int, broker: list[int] | None = None,
           cfg: LagConfig = CFG) -> Verdict:
    return partition_status(window_, broker if broker is not None else [10**9], current,
                            now_s * S, cfg)


def test_no_commits_is_ok() -> None:
    assert status([], 500, 100) == Verdict("OK", "NO_COMMITS")


def test_an_incomplete_window_is_ok_when_asked() -> None:
    w = commits((10, 0, 5), (10, 10, 9))
    cfg = LagConfig(minimum_complete=0.5)
    assert status(w, 500, 100, cfg=cfg) == Verdict("OK", "INCOMPLETE")
    assert status(w, 500, 100).status == "STOP"  # Burrow's default minimum-complete is 0


def test_current_lag_within_allowed_is_ok_whatever_the_window() -> None:
    stalled = commits((10, 0, 50), (10, 10, 60), (10, 20, 70))
    assert status(stalled, 0, 25) == Verdict("OK", "CAUGHT_UP")
    assert status(stalled, 1, 25, cfg=LagConfig(allowed_lag=1)) == Verdict("OK", "CAUGHT_UP")


def test_stop_when_idle_longer_than_the_window_spans() -> None:
    w = commits((10, 0, 0), (20, 10, 5), (30, 20, 8))
    # 21 s since the last commit > its 20 s span; no broker sample at or below 30.
    assert status(w, 40, 41, broker=[35, 40]) == Verdict("STOP", "STOPPED")
    # The code checks STOP before the zero-lag rule (the wiki has zero lag first): a lag of 0
    # earlier in the window does not save a stopped partition.
    assert w[0].lag == 0
    # Caught up recently: a broker sample at or below the newest committed offset.
    assert status(w, 40, 41, broker=[30, 40]) == Verdict("OK", "LAG_ZERO_IN_WINDOW")
    assert status(w, 40, 40, broker=[35]).rule != "STOPPED"  # 20 s idle is not > 20 s span


def test_a_single_commit_is_stopped_as_soon_as_time_passes() -> None:
    """Burrow's default minimum-complete (0) and a window of one commit: span 0."""
    assert status(commits((10, 5, 3)), 3, 6, broker=[13]) == Verdict("STOP", "STOPPED")


def test_rewind_unless_recovered_and_before_the_zero_lag_rule() -> None:
    dropped = commits((100, 0, 0), (120, 10, 2), (50, 20, 80), (60, 30, 75))
    assert status(dropped, 75, 35) == Verdict("REWIND", "REWOUND")
    recovered = dropped + commits((130, 40, 0))
    assert status(recovered, 5, 45) == Verdict("OK", "LAG_ZERO_IN_WINDOW")


def test_stall_warn_and_progressing() -> None:
    assert status(commits((7, 0, 10), (7, 10, 20), (7, 20, 30)), 30, 25) == \
        Verdict("STALL", "STALLED")
    assert status(commits((7, 0, 10), (8, 10, 20), (9, 20, 20)), 30, 25) == \
        Verdict("WARN", "LAG_NOT_DECREASING")
    assert status(commits((7, 0, 10), (8, 10, 30), (20, 20, 5)), 30, 25) == \
        Verdict("OK", "PROGRESSING")


def test_null_lags_are_skipped_by_the_lag_rules() -> None:
    # Commits before the first sample have no lag: WARN holds over the known ones only.
    assert status(commits((7, 0, None), (8, 10, 20), (9, 20, None), (10, 21, 25)), 30, 25) == \
        Verdict("WARN", "LAG_NOT_DECREASING")
    # Every lag unknown: the zero-lag rule never fires, WARN holds trivially.
    assert status(commits((7, 0, None), (8, 10, None)), 30, 15) == \
        Verdict("WARN", "LAG_NOT_DECREASING")


def test_window_takes_the_last_intervals_commits_none_too_old() -> None:
    history = commits(*((i, i, 0) for i in range(30)))
    assert [c.offset for c in window(history, 29 * S, CFG)] == list(range(20, 30))
    short = LagConfig(expire_group_ms=5 * S)
    assert [c.offset for c in window(history, 29 * S, short)] == [25, 26, 27, 28, 29]
    assert window(history, 10 * S, CFG)[-1].offset == 10  # nothing after `now`
    # A commit no sample precedes (no lag) never enters it: Burrow skips those commits.
    early = commits((1, 0, None), (2, 1, None), (3, 2, 7), (4, 3, 5))
    assert [c.offset for c in window(early, 5 * S, CFG)] == [3, 4]


def test_group_status_is_the_worst_partition_with_errors_as_err() -> None:
    ok, warn, stop = Verdict("OK", "PROGRESSING"), Verdict("WARN", "LAG_NOT_DECREASING"), \
        Verdict("STOP", "STOPPED")
    assert group_status([ok, warn], True) == "WARN"
    assert group_status([ok, stop, warn], True) == "ERR"
    assert group_status([ok, None], True) == "OK"
    assert group_status([None, Verdict("OK", "NO_COMMITS")], True) == "NOTFOUND"
    assert group_status([warn], False) == "NOTFOUND"


def samples(*points: tuple[int, int]) -> list[Sample]:
    return [Sample(t * S, end) for t, end in points]


def test_time_lag_is_zero_when_caught_up() -> None:
    assert time_lag(samples((0, 100), (30, 200)), 200, 30 * S) == (0, "CAUGHT_UP")
    assert time_lag(samples((0, 100), (30, 200)), 250, 30 * S) == (0, "CAUGHT_UP")


def test_time_lag_interpolates_when_the_log_end_stood_at_the_offset() -> None:
    s = samples((0, 100), (30, 200), (60, 400))
    assert time_lag(s, 150, 60 * S) == (45 * S, "INTERPOLATED")  # end was 150 at 15 s
    assert time_lag(s, 200, 60 * S) == (30 * S, "INTERPOLATED")  # exactly a sample
    assert time_lag(s, 201, 60 * S) == (60 * S - (30 * S + 30 * S // 200), "INTERPOLATED")


def test_time_lag_after_a_flat_stretch_starts_at_its_last_sample() -> None:
    s = samples((0, 100), (30, 100), (60, 100), (90, 160))
    assert time_lag(s, 100, 90 * S) == (30 * S, "INTERPOLATED")


def test_time_lag_rises_one_second_a_second_while_producers_are_idle() -> None:
    s = samples((0, 100), (30, 200))
    first = time_lag(s, 150, 30 * S)[0]
    idle = time_lag([*s, Sample(90 * S, 200)], 150, 90 * S)[0]
    assert idle - first == 60 * S


def test_time_lag_is_a_lower_bound_before_the_oldest_sample() -> None:
    assert time_lag(samples((10, 100), (40, 200)), 50, 40 * S) == (30 * S, "LOWER_BOUND")


def test_time_lag_uses_the_running_maximum_of_the_log_end() -> None:
    # The end went back (a recreated topic): the dip cannot bracket the offset a second time.
    s = samples((0, 100), (30, 300), (60, 120), (90, 400))
    assert time_lag(s, 150, 90 * S) == (90 * S - 7_500, "INTERPOLATED")  # end 150 at 7.5 s


def test_time_lag_needs_the_current_sample() -> None:
    with pytest.raises(ValueError):
        time_lag([], 1, 0)


def test_cause_first_match_wins() -> None:
    now, start = 100 * S, 40 * S
    assert cause(Moment(state="Dead", state_since_ms=90 * S, last_cause="GROUP_TOMBSTONE"),
                 [], start, now) == Cause("DEAD", None, "GROUP_TOMBSTONE", 90 * S, 10 * S)
    assert cause(Moment(state="Empty", state_since_ms=20 * S), [], start, now).ms == 60 * S
    rebalancing = Moment(state="PreparingRebalance", generation_id=4,
                         rebalance_started=(70 * S, "MEMBER_JOINED"))
    assert cause(rebalancing, [], start, now) == \
        Cause("REBALANCE", 4, "MEMBER_JOINED", 70 * S, 30 * S)
    done = Moment(state="Stable", last_rebalance=(5, "SESSION_TIMEOUT", 30 * S, 60 * S))
    assert cause(done, [], start, now) == Cause("REBALANCE", 5, "SESSION_TIMEOUT", 30 * S, 20 * S)
    assert cause(done, [], 61 * S, now).cause == "NONE"  # completed before the window
    emptied = Moment(state="Stable", empty_entered_ms=10 * S, empty_left_ms=50 * S)
    assert cause(emptied, [], start, now) == Cause("EMPTY", None, None, 10 * S, 10 * S)
    assert cause(Moment(state="Stable"), [("EXPIRED", 30 * S), ("EXPIRED", 20 * S),
                                          ("COMMITTED", 1)], start, now) == \
        Cause("OFFSETS_EXPIRED", None, "2 partitions", 20 * S)
    assert cause(Moment(state="Stable"), [("DELETED", 30 * S)], start, now).cause == \
        "OFFSETS_DELETED"


def test_lag_config_reads_burrow_names_and_refuses_unknown_ones(tmp_path) -> None:  # type: ignore[no-untyped-def]
    conf = tmp_path / "lag.properties"
    conf.write_text("lag.burrow.intervals=15\nlag.burrow.allowed.lag=1\n")
    assert LagConfig.from_file(conf) == LagConfig(intervals=15, allowed_lag=1)
    conf.write_text("lag.burrow.interval=15\n")
    with pytest.raises(ValueError, match="unknown lag setting"):
        LagConfig.from_file(conf)
    with pytest.raises(ValueError):
        LagConfig.from_properties({"lag.burrow.intervals": "0"})
