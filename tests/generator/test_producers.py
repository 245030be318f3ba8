"""The simulated producers behind the generated log: end offsets that only rise, commits that
never pass them, groups that keep up, fall behind or seek back, and samples of the log ends at
the interval, the same in every part of a log, with the log's own events left as they were."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterator, Mapping
from functools import cache

import pytest

from pipeline.fold import Event
from pipeline.generator import LogSpec, end_offset_samples, generate, last_event_ms, producers_for
from pipeline.generator import log as log_module
from pipeline.generator.log import pace_for
from pipeline.generator.producers import PROFILES, Producers, build_producers
from schemas.lag import LOG_END_OFFSETS
from tests.grouping import by_group

KINDS = ("journal", "offsets-topic")
SEEDS = (1, 2, 3)
TP = tuple[str, int]

# sha256 over (event_type, group_id, event_time, member_id, log_partition, log_offset) of every
# event, taken from the generator as it was before it had producers: they must not move a thing.
BEFORE_PRODUCERS = {
    (LogSpec(groups=20, events=6000, seed=1), 0, 1):
        "5a0f31243579cdbe2d9b421735540e1f66523330274a3c73d6f739a02a64ff97",
    (LogSpec(groups=20, events=6000, seed=2, log_kind="offsets-topic"), 0, 1):
        "9e950ad9c46ecd6c17630833b0ff59b6310bec490aef48ce4101050e52d380d3",
    (LogSpec(groups=20, events=6000, seed=5, log_kind="offsets-topic"), 0, 2):
        "aabc9469f7515da4700a4ddeb9a0983a628e856663eb6001946df6e011d3c2d3",
    (LogSpec(groups=10, events=4000, seed=6, bad_rows=0.05, out_of_order=0.02), 0, 1):
        "23b30942fb29cd239178533604e358b692cec35868ea832bcf855224ef4a783a",
}


def _spec(kind: str, seed: int) -> LogSpec:
    return LogSpec(groups=20, events=6000, seed=seed, log_kind=kind)


@cache
def _log(spec: LogSpec) -> list[Event]:
    return generate(spec)


def _commits(events: list[Event]) -> dict[str, list[Event]]:
    """Each group's OFFSET_COMMITs, in log order."""
    commits = [e for e in events
               if e.event_type == "OFFSET_COMMIT" and e.committed_offset is not None]
    for e in commits:
        assert e.group_id is not None and e.topic is not None and e.partition is not None
    return by_group(commits)


def _tp(e: Event) -> TP:
    assert e.topic is not None and e.partition is not None
    return (e.topic, e.partition)


def _lag(producers: Producers, e: Event) -> int:
    assert e.event_time is not None and e.committed_offset is not None
    return producers.end_offset(*_tp(e), e.event_time) - e.committed_offset


def _index(group_id: str) -> int:
    return int(group_id.split("-")[1])  # group-00003-search


def _times(samples: list[dict[str, object]]) -> list[int]:
    """The samples' times, in order."""
    times = {r["sampled_at"] for r in samples}
    assert all(isinstance(t, int) for t in times)
    return sorted(t for t in times if isinstance(t, int))


def _logs() -> Iterator[tuple[LogSpec, list[Event]]]:
    for kind in KINDS:
        for seed in SEEDS:
            yield _spec(kind, seed), _log(_spec(kind, seed))


@pytest.mark.parametrize(("spec", "part", "parts"), list(BEFORE_PRODUCERS))
def test_the_event_sequence_is_the_one_before_there_were_producers(
        spec: LogSpec, part: int, parts: int) -> None:
    digest = hashlib.sha256()
    for e in generate(spec, part, parts):
        digest.update(repr((e.event_type, e.group_id, e.event_time, e.member_id,
                            e.log_partition, e.log_offset)).encode())
    assert digest.hexdigest() == BEFORE_PRODUCERS[(spec, part, parts)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", SEEDS)
def test_no_commit_passes_its_partitions_log_end(kind: str, seed: int) -> None:
    producers = producers_for(_spec(kind, seed))
    lags = [_lag(producers, e) for rows in _commits(_log(_spec(kind, seed))).values()
            for e in rows]
    assert len(lags) > 1000 and min(lags) >= 0
    # The end binds: many commits stop right at it, and many are behind it.
    assert sum(1 for lag in lags if lag == 0) > len(lags) / 10
    assert sum(1 for lag in lags if lag > 0) > len(lags) / 10


@pytest.mark.parametrize("seed", range(1, 6))
def test_end_and_start_offsets_never_decrease_and_the_ends_rise(seed: int) -> None:
    producers = producers_for(LogSpec(seed=seed))
    start = producers.start_ms
    times = sorted({start + k * 997 for k in range(1200)} | {start - 5_000, start + 7 * 3_600_000})
    for (topic, p), _ in producers.logs.items():
        ends = [producers.end_offset(topic, p, t) for t in times]
        starts = [producers.log_start_offset(topic, p, t) for t in times]
        assert ends == sorted(ends) and starts == sorted(starts)
        assert all(s <= e for s, e in zip(starts, ends, strict=True))
        assert 2_000 <= producers.end_offset(topic, p, start) <= 400_000  # the base
        until = producers.stop_ms(topic) or start + 600_000  # while it produces: >= 1/s
        assert producers.end_offset(topic, p, until) > ends[0] + (until - start) // 1000
    # Retention moves the start along (a long log's later samples start later).
    assert any(producers.log_start_offset(t, p, times[-1]) > producers.log_start_offset(t, p, start)
               for t, p in producers.logs)


def test_every_log_has_each_profile() -> None:
    for seed in range(1, 40):
        assert sorted(set(producers_for(LogSpec(seed=seed)).profiles.values())) == sorted(PROFILES)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", SEEDS)
def test_each_profile_produces_as_it_says(kind: str, seed: int) -> None:
    spec = _spec(kind, seed)
    producers = producers_for(spec)
    end = last_event_ms(_log(spec))
    for (topic, p), log in producers.logs.items():
        profile, stop = producers.profiles[topic], producers.stop_ms(topic)
        per_10s = [producers.end_offset(topic, p, t + 10_000) - producers.end_offset(topic, p, t)
                   for t in range(spec.start_ms, end, 10_000)]
        if profile == "stopping":
            assert stop is not None and spec.start_ms < stop < end - spec.sample_interval_ms
            flat = [producers.end_offset(topic, p, t) for t in range(stop, end + 60_000, 5_000)]
            assert len(set(flat)) == 1
            assert producers.end_offset(topic, p, stop - 10_000) < flat[0]
        elif profile == "steady":
            assert stop is None and max(per_10s) - min(per_10s) <= 1
        else:
            assert stop is None and profile == "bursty"
            period = [producers.end_offset(topic, p, t + 5_000) - producers.end_offset(topic, p, t)
                      for t in range(spec.start_ms, spec.start_ms + log.period_ms, 5_000)]
            assert max(period) >= 3 * min(period) > 0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", SEEDS)
def test_a_slow_groups_lag_grows_while_producers_go_on(kind: str, seed: int) -> None:
    """Sampled as the lag tables do: each partition's end at a sample minus the group's last
    commit before it, the greatest over the group's partitions that are still produced to."""
    spec, events = _spec(kind, seed), _log(_spec(kind, seed))
    producers = producers_for(spec)
    times = _times(end_offset_samples(spec, last_event_ms(events)))
    slow = 0
    for group_id, commits in _commits(events).items():
        if pace_for(spec, _index(group_id)).kind != "slow":
            continue
        maxima = []
        for t in times:
            latest = {_tp(e): e.committed_offset for e in commits if (e.event_time or 0) <= t}
            lags = [producers.end_offset(*tp, t) - offset for tp, offset in latest.items()
                    if offset is not None and producers.profiles[tp[0]] != "stopping"]
            if lags:
                maxima.append(max(lags))
        if len(maxima) >= 3:
            slow += 1
            assert maxima[-1] > maxima[0], (group_id, maxima)
    assert slow >= 1


def _excess_lag_s(producers: Producers, commits: list[Event]) -> list[float]:
    """At each commit, the group's lag there in seconds of the partition's mean production,
    less the time the group had spent not committing the partition (beyond a commit
    interval): what regular consumption failed to read. Near zero for a group that keeps up."""
    last: dict[TP, int] = {}
    idle_ms: dict[TP, int] = defaultdict(int)
    out = []
    for e in commits:
        tp, t = _tp(e), e.event_time or 0
        if tp in last:
            idle_ms[tp] += max(0, t - last[tp] - 10_000)
        last[tp] = t
        out.append(_lag(producers, e) / producers.rate(*tp) - idle_ms[tp] / 1000)
    return out


def test_a_healthy_group_keeps_up_and_a_slow_one_does_not() -> None:
    logs = [*_logs(), (LogSpec(groups=10, events=20_000, seed=1),
                       _log(LogSpec(groups=10, events=20_000, seed=1)))]
    kinds: dict[str, int] = defaultdict(int)
    for spec, events in logs:
        producers = producers_for(spec)
        for group_id, commits in _commits(events).items():
            kind = pace_for(spec, _index(group_id)).kind
            if kind == "healthy":  # bursts and rebalances aside, never far behind
                assert max(_excess_lag_s(producers, commits)) < 120, group_id
            elif kind == "slow" and spec.events == 20_000:  # a long log: far behind by its end
                assert max(_excess_lag_s(producers, commits)) > 120, group_id
                kind = "slow in a long log"
            kinds[kind] += 1
    assert kinds["healthy"] > 2 * (kinds["slow"] + kinds["rewind"]) and kinds["slow"] >= 2
    assert kinds["slow in a long log"] >= 1


def test_a_rewinding_group_seeks_back_once_and_no_other_group_ever_does() -> None:
    rewinders = 0
    for spec, events in _logs():
        for group_id, commits in _commits(events).items():
            by_tp: dict[TP, list[int]] = defaultdict(list)
            for e in commits:
                assert e.committed_offset is not None
                by_tp[_tp(e)].append(e.committed_offset)
            drops = {tp: [i for i in range(1, len(o)) if o[i] < o[i - 1]]
                     for tp, o in by_tp.items()}
            if pace_for(spec, _index(group_id)).kind != "rewind":
                assert not any(drops.values()), group_id
                continue
            assert all(len(d) <= 1 for d in drops.values()), group_id
            # It drops by a chunk and stays below where it was for several commits.
            below = [tp for tp, d in drops.items()
                     if d and all(o < by_tp[tp][d[0] - 1] for o in by_tp[tp][d[0]:d[0] + 3])
                     and len(by_tp[tp]) >= d[0] + 3]
            rewinders += bool(below)
    assert rewinders >= 3


@pytest.mark.parametrize("interval", [30_000, 45_000])
def test_the_samples_cover_the_log_at_the_interval(interval: int) -> None:
    spec = LogSpec(groups=20, events=6000, seed=2, sample_interval_ms=interval)
    events = _log(_spec("journal", 2))  # the interval changes the samples, not the log
    producers = producers_for(spec)
    until = last_event_ms(events)
    rows = end_offset_samples(spec, until)
    times = _times(rows)
    assert times == list(range(spec.start_ms, times[-1] + 1, interval))
    assert times[-2] < until <= times[-1]
    assert len(rows) == len(times) * len(producers.logs)
    assert {_tp(e) for rows_ in _commits(events).values() for e in rows_} <= set(producers.logs)
    names = [c.name for c in LOG_END_OFFSETS]
    for r in rows:
        assert list(r) == names
        topic, p, end, at = r["topic"], r["partition"], r["log_end_offset"], r["sampled_at"]
        assert isinstance(topic, str) and isinstance(p, int) and isinstance(at, int)
        assert isinstance(end, int) and end == producers.end_offset(topic, p, at)
        first = r["log_start_offset"]
        assert isinstance(first, int) and 0 <= first <= end
        assert (r["isolation_level"], r["source"]) == ("READ_UNCOMMITTED", "generator")
        stamp = r["max_timestamp"]
        if stamp is None:  # nothing produced since the log's start: the base is the end
            assert end == producers.end_offset(topic, p, spec.start_ms)
            assert r["max_timestamp_offset"] is None
        else:  # the record at end - 1 was appended then
            assert isinstance(stamp, int) and spec.start_ms < stamp <= at
            assert producers.end_offset(topic, p, stamp) == end
            assert producers.end_offset(topic, p, stamp - 1) < end
            assert r["max_timestamp_offset"] == end - 1
    assert {r["max_timestamp"] is None for r in rows if r["sampled_at"] == spec.start_ms} == {True}


def test_every_part_of_a_log_sees_the_same_producers(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Producers] = []

    def recording(seed: int, topics: Mapping[str, int], start_ms: int, span_ms: int) -> Producers:
        built.append(build_producers(seed, topics, start_ms, span_ms))
        return built[-1]

    monkeypatch.setattr(log_module, "build_producers", recording)
    spec = LogSpec(groups=20, events=6000, seed=5, log_kind="offsets-topic")
    part, whole = generate(spec, 0, 2), generate(spec)
    assert len(built) == 2 and built[0] == built[1]
    until = max(last_event_ms(part), last_event_ms(whole))
    samples = end_offset_samples(spec, until)
    assert built[0].samples(until, spec.sample_interval_ms) == samples
    assert built[1].samples(until, spec.sample_interval_ms) == samples
    # The part's commits were bound by those very producers: many sit right at their end.
    lags = [_lag(built[0], e) for rows in _commits(part).values() for e in rows]
    assert min(lags) >= 0 and sum(1 for lag in lags if lag == 0) > len(lags) / 10
