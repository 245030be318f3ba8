"""The lag rules, one function each, on plain values: the definitions the incremental engine
(`pipeline.lag.engine`) applies per key, the one lag step the stream and the backfill run;
tests hold the engine equal to the slow, obvious oracle (`tests/lag/oracle.py`).

- `time_lag`: how long ago the log end stood at the committed offset, interpolated linearly
  between the two samples that bracket it (kafka-lag-exporter's lookup, solved for
  end offset = committed offset), never extrapolated.
- `partition_status`: Burrow's partition evaluator (linkedin/Burrow v1.9.5,
  core/internal/evaluator/caching.go `calculatePartitionStatus`), its rules in its code's
  order, with the sample's time where Burrow reads the clock.
- `group_status`: Burrow's group status, the worst partition's, STOP/STALL/REWIND as ERR.
- `lost_records`, `pace`, `catch_up_ms`, `loss_eta_ms`: records deleted before the group
  read them, the window's produce, consume and retention rates, and at those rates the time
  to catch up and the time until records are lost.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from pipeline.fold.states import (
    ASSIGNING,
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    RECONCILING,
)
from pipeline.lag.config import LagConfig
from schemas.lag import (
    DELETED,
    ERR,
    EXPIRED,
    LOST,
    NOTFOUND,
    OK,
    REWIND,
    STALL,
    STATUS_CODES,
    STOP,
    WARN,
    LagCause,
)

CAUGHT_UP = "CAUGHT_UP"
INTERPOLATED = "INTERPOLATED"
LOWER_BOUND = "LOWER_BOUND"

NO_COMMITS = "NO_COMMITS"  # the rule of a partition without a commit in its window
RECORDS_LOST = "RECORDS_LOST"  # the rule of a LOST partition


@dataclass(frozen=True)
class Sample:
    """An end-offset sample of one partition."""

    time_ms: int
    end_offset: int


@dataclass(frozen=True)
class Commit:
    """A commit in a partition's window: its offset, its time, and its lag against the end
    offset sampled at or before it (None when no sample precedes it)."""

    offset: int
    time_ms: int
    lag: int | None


@dataclass(frozen=True)
class Verdict:
    status: str
    rule: str


def lag(end_offset: int, committed: int) -> int:
    """Lag in messages: never negative (a commit ahead of a sample taken before it is 0)."""
    return max(0, end_offset - committed)


def lost_records(committed: int | None, log_start: int | None) -> int | None:
    """Records deleted before the group read them: how far the log start is past the
    committed offset (0 when it is not); None when either is unknown."""
    if committed is None or log_start is None:
        return None
    return max(0, log_start - committed)


class Mark(NamedTuple):
    """A group's partition at one of the partition's samples: what its rates are taken from
    (a tuple: the engine keeps marks as JSON lists, which `pace` reads the same way)."""

    time_ms: int
    end_offset: int
    start_offset: int | None
    committed: int | None


class Pace(NamedTuple):
    """Records per second over a window: the log end's growth, the committed offset's advance,
    the log start's advance; each None where the window lacks the figure."""

    produce_rate: float | None = None
    consume_rate: float | None = None
    retention_rate: float | None = None


_NO_PACE = Pace()
_FIGURES = (1, 3, 2)  # a Mark's end_offset, committed, start_offset: Pace's order


def pace(marks: Sequence[Sequence[int | None]]) -> Pace:
    """Each rate from the oldest mark of the window (oldest first; `Mark`s or lists of their
    fields) that has its figure to the newest mark (the sample evaluated), which must have it
    too: a group's first commit inside the window starts its consume rate there."""
    if len(marks) < 2:
        return _NO_PACE
    last = marks[-1]
    t = cast(int, last[0])
    rates: list[float | None] = []
    for i in _FIGURES:
        now = last[i]
        first = next((m for m in marks if m[i] is not None), None)
        if now is None or first is None or cast(int, first[0]) >= t:
            rates.append(None)
        else:
            rates.append((now - cast(int, first[i])) * 1000 / (t - cast(int, first[0])))
    return Pace(*rates)


def catch_up_ms(current_lag: int | None, p: Pace, cfg: LagConfig) -> int | None:
    """At the window's rates, how long until the lag is gone: 0 when it is (at or below
    allowed_lag); None when it is not shrinking (consumed no faster than produced) or a rate
    is unknown."""
    if current_lag is None:
        return None
    if current_lag <= cfg.allowed_lag:
        return 0
    if p.produce_rate is None or p.consume_rate is None:
        return None
    net = p.consume_rate - p.produce_rate
    return None if net <= 0 else round(current_lag * 1000 / net)


def loss_eta_ms(committed: int | None, log_start: int | None, current_lag: int | None,
                p: Pace, cfg: LagConfig) -> int | None:
    """At the window's rates, how long until the log start passes the committed offset: 0
    once it has; None when not at risk: caught up (lag at or below allowed_lag), the log
    start not gaining on the committed offset, or a figure unknown."""
    lost = lost_records(committed, log_start)
    if lost is None or current_lag is None:
        return None
    if lost > 0:
        return 0
    if current_lag <= cfg.allowed_lag or p.retention_rate is None or p.consume_rate is None:
        return None
    assert committed is not None and log_start is not None
    closing = p.retention_rate - p.consume_rate
    return None if closing <= 0 else round((committed - log_start) * 1000 / closing)


def time_lag(samples: Sequence[Sample], committed: int, now_ms: int,
             allowed: int = 0) -> tuple[int, str]:
    """(lag_ms, basis) of a committed offset at `now_ms`, from the partition's samples at or
    before then, oldest first (the last is the sample taken at `now_ms`).

    Caught up (committed at or past the newest end offset): 0. Else the last sample whose log
    end (its running maximum, so a log end that went back cannot bracket twice) was at or
    below the committed offset and the sample after it bracket the moment the log end passed
    it; linear between them, in whole milliseconds (rounded down). With no such sample the
    offset predates every sample: the time since the oldest one, a lower bound. A lag at or
    below `allowed` (Burrow's allowed-lag: an exactly-once topic's trailing transaction
    marker) is caught up too."""
    if not samples:
        raise ValueError("time_lag needs the sample taken at now_ms")
    if samples[-1].end_offset - committed <= allowed:
        return 0, CAUGHT_UP
    highest = []
    top: int | None = None
    for s in samples:
        top = s.end_offset if top is None else max(top, s.end_offset)
        highest.append(top)
    below = [i for i, m in enumerate(highest) if m <= committed]
    if not below:
        return now_ms - samples[0].time_ms, LOWER_BOUND
    a = below[-1]
    b = a + 1  # exists: the newest running maximum is above the committed offset
    ta, tb, ma, mb = samples[a].time_ms, samples[b].time_ms, highest[a], highest[b]
    at = ta + (committed - ma) * (tb - ta) // (mb - ma)
    return now_ms - at, INTERPOLATED


def window(commits: Sequence[Commit], now_ms: int, cfg: LagConfig) -> list[Commit]:
    """Burrow's window at `now_ms`: the last `intervals` commits (in log order) at or before
    then, none older than `expire_group_ms` (Burrow drops those on arrival), and none made
    before the partition's first sample (a commit without a lag: Burrow skips a commit of a
    partition it has no broker offset for yet, `storage/inmemory.go`, addConsumerOffset)."""
    recent = [c for c in commits if c.lag is not None
              and now_ms - cfg.expire_group_ms < c.time_ms <= now_ms]
    return recent[-cfg.intervals:]


def partition_status(commits: Sequence[Commit], broker_ends: Sequence[int], current_lag: int,
                     now_ms: int, cfg: LagConfig, lost: int | None = None) -> Verdict:
    """Burrow's verdict on a partition at `now_ms`: `commits` is its window (`window`), oldest
    first; `broker_ends` the end offsets of its last `intervals` samples at or before then;
    `current_lag` the newest sample's end offset minus the newest committed offset. Ours
    before Burrow's rules: `lost` records (`lost_records`) make it LOST, whatever the window
    holds (a group stopped long ago, its commits out of the window, is the likeliest)."""
    if lost:
        return Verdict(LOST, RECORDS_LOST)
    if not commits:
        return Verdict(OK, NO_COMMITS)
    if len(commits) / cfg.intervals < cfg.minimum_complete:
        return Verdict(OK, "INCOMPLETE")
    if current_lag <= cfg.allowed_lag:
        return Verdict(OK, "CAUGHT_UP")
    first, last = commits[0], commits[-1]
    stopped = now_ms - last.time_ms > last.time_ms - first.time_ms
    caught_up_recently = any(end <= last.offset for end in broker_ends)
    if stopped and not caught_up_recently:
        return Verdict(STOP, "STOPPED")
    offsets = [c.offset for c in commits]
    drop = next((i for i in range(1, len(offsets)) if offsets[i] < offsets[i - 1]), None)
    if drop is not None and not any(o >= offsets[drop - 1] for o in offsets[drop:]):
        return Verdict(REWIND, "REWOUND")
    lags = [c.lag for c in commits if c.lag is not None]
    if any(x <= cfg.allowed_lag for x in lags):
        return Verdict(OK, "LAG_ZERO_IN_WINDOW")
    if all(o == offsets[0] for o in offsets):
        return Verdict(STALL, "STALLED")
    if all(b >= a for a, b in zip(lags, lags[1:], strict=False)):
        return Verdict(WARN, "LAG_NOT_DECREASING")
    return Verdict(OK, "PROGRESSING")


def group_status(verdicts: Sequence[Verdict | None], alive: bool) -> str:
    """Burrow's group status from its partitions' verdicts (None: a partition without a
    committed offset): NOTFOUND when the group is gone or none of its partitions has a
    commit in its window (Burrow would have expired the group), else the worst partition's
    status, STOP, STALL and REWIND shown as ERR."""
    known = [v.status for v in verdicts if v is not None and v.rule != NO_COMMITS]
    if not alive or not known:
        return NOTFOUND
    worst = max(known, key=STATUS_CODES.__getitem__)
    return ERR if STATUS_CODES[worst] > STATUS_CODES[ERR] else worst


REBALANCING = (PREPARING_REBALANCE, COMPLETING_REBALANCE, ASSIGNING, RECONCILING)


@dataclass(frozen=True)
class Moment:
    """What a group's history says at a sample's time; each None when there is none yet."""

    state: str | None = None
    generation_id: int | None = None
    group_type: str | None = None
    state_since_ms: int | None = None
    last_cause: str | None = None  # the cause of its last state transition
    # (time, cause) of its last transition into a rebalance from outside one
    rebalance_started: tuple[int, str] | None = None
    empty_entered_ms: int | None = None  # its last transition into Empty
    empty_left_ms: int | None = None  # its last transition out of Empty
    # (generation, cause, started, completed) of its last rebalance completed by then
    last_rebalance: tuple[int | None, str, int | None, int] | None = None


@dataclass(frozen=True)
class Cause:
    cause: str
    generation_id: int | None = None
    detail: str | None = None
    since_ms: int | None = None
    ms: int | None = None  # how much of the window it covered


def cause(m: Moment, offsets: Sequence[tuple[str, int | None]], window_start: int,
          now_ms: int) -> Cause:
    """What the coordinator was doing while a group's lag built up, from `window_start` to
    `now_ms`, first match wins: the group Dead, Empty, or rebalancing now; a rebalance that
    completed inside the window; an Empty stretch that ended inside it; offsets of its
    partitions expired or deleted (`offsets`: each partition's offset_status and the time
    of its last offset change); else NONE."""
    def covered(since: int | None, until: int) -> int | None:
        return None if since is None else until - max(since, window_start)

    if m.state in (DEAD, EMPTY):
        return Cause(m.state.upper(), m.generation_id, m.last_cause, m.state_since_ms,
                     covered(m.state_since_ms, now_ms))
    if m.state in REBALANCING:
        since, why = m.rebalance_started or (None, None)
        return Cause(LagCause.REBALANCE, m.generation_id, why, since, covered(since, now_ms))
    if m.last_rebalance is not None and m.last_rebalance[3] >= window_start:
        generation, why, started, completed = m.last_rebalance
        return Cause(LagCause.REBALANCE, generation, why, started,
                     covered(completed if started is None else started, completed))
    if (m.empty_left_ms is not None and m.empty_left_ms >= window_start
            and m.empty_entered_ms is not None):
        return Cause(LagCause.EMPTY, None, None, m.empty_entered_ms,
                     covered(m.empty_entered_ms, m.empty_left_ms))
    for status, name in ((EXPIRED, LagCause.OFFSETS_EXPIRED), (DELETED, LagCause.OFFSETS_DELETED)):
        times = [at for s, at in offsets if s == status and at is not None]
        if times:
            return Cause(name, None, f"{len(times)} partitions", min(times), None)
    return Cause(LagCause.NONE)


def group_row(group: str, t: int, parts: Sequence[Mapping[str, Any]], moment: Moment,
              cfg: LagConfig) -> dict[str, Any]:
    """The group_lag row (schemas/lag.py GROUP_LAG, times in ms) of `group` at the sample time
    `t`, from its partition rows then (status, rule, lag, lag_ms, prev_t: the partition's
    sample before, offset_status, committed_at, window_commits, topic, partition) and its
    `moment`: the sums, the worst partition, Burrow's group status and the cause."""
    lags = [r["lag"] for r in parts if r["lag"] is not None]
    timed = [r["lag_ms"] for r in parts if r["lag_ms"] is not None]
    verdicts = [None if r["status"] is None else Verdict(r["status"], r["rule"]) for r in parts]
    known = [r for r, v in zip(parts, verdicts, strict=True)
             if v is not None and v.rule != NO_COMMITS]
    # the worst partition: its status (Burrow's code), then the most lag, then the greatest
    # topic and partition
    worst = max(known, key=lambda r: (STATUS_CODES[r["status"]],
                                      -1 if r["lag"] is None else r["lag"], r["topic"],
                                      r["partition"]), default=None)
    # A group with offsets and no shape yet (an offsets-topic log's first commits) lives.
    status = group_status(verdicts, moment.state != DEAD)
    evaluated = [r for r in parts if r["status"] is not None]
    max_lag_ms = max(timed, default=None)
    lost = [r["lost_records"] for r in parts if r.get("lost_records") is not None]
    behind = [r for r in parts if r["lag"] is not None and r["lag"] > cfg.allowed_lag]
    catch_up: list[int | None] = [r.get("catch_up_ms") for r in behind]
    known_eta = [c for c in catch_up if c is not None]
    prev = max((r["prev_t"] for r in parts if r["prev_t"] is not None), default=None)
    start = t - max(max_lag_ms or 0, t - (prev if prev is not None else t))
    has_lag = (max(lags, default=0) or 0) > 0 or len(lags) < len(parts)
    why = cause(moment, [(r["offset_status"], r["committed_at"]) for r in parts], start, t) \
        if has_lag else None
    return {
        "t": t, "group_id": group, "state": moment.state, "generation_id": moment.generation_id,
        "group_type": moment.group_type, "total_lag": sum(lags) if lags else None,
        "max_lag": max(lags, default=None),
        "max_lag_ms": max_lag_ms,
        "lost_records": sum(lost) if lost else None,
        "lost_since": min((r["lost_since"] for r in parts if r.get("lost_since") is not None),
                          default=None),
        "loss_eta_ms": min((r["loss_eta_ms"] for r in parts
                            if r.get("loss_eta_ms") is not None), default=None),
        "produce_rate": _total(r.get("produce_rate") for r in parts),
        "consume_rate": _total(r.get("consume_rate") for r in parts),
        "catch_up_ms": (max(known_eta, default=0) if len(known_eta) == len(catch_up) else None)
        if lags else None,
        "partitions": len(parts),
        "partitions_unknown": len(parts) - len(lags),
        "complete": (sum(1 for r in evaluated if r["window_commits"] >= cfg.intervals)
                     / len(evaluated)) if evaluated else 0.0,
        "status": status, "worst_topic": worst and worst["topic"],
        "worst_partition": worst and worst["partition"], "worst_status": worst and worst["status"],
        "worst_rule": worst and worst["rule"],
        "cause": why and why.cause, "cause_generation_id": why and why.generation_id,
        "cause_detail": why and why.detail, "cause_since": why and why.since_ms,
        "cause_ms": why and why.ms, "cause_window_start": start,
    }


def _total(values: Iterable[float | None]) -> float | None:
    """The sum of the known values, exactly rounded, so in any order the same (math.fsum)."""
    known = [v for v in values if v is not None]
    return math.fsum(known) if known else None
