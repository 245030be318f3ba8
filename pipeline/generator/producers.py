"""Simulated producers behind the generated log's topics, and how fast its groups consume them.

Each topic gets a profile drawn from its own seeded stream (`build_producers`), never from the
simulation's, so adding producers leaves the log's event sequence as it was: **steady** (a
constant rate per partition), **bursty** (a base rate plus periodic bursts) or **stopping** (a
steady rate until a moment partway through the log, then nothing). A partition's end offset is
a pure, non-decreasing function of time (`Producers.end_offset`), so every part of a log made
in parts sees the same producers and the same samples (`Producers.samples`, ListOffsets as the
lag tables read it). Each group gets a `Pace` (`consumer_pace`): healthy groups read faster than
their partitions grow, slow ones read a fixed share of it (their lag grows: Burrow's WARN), and
a rare one seeks back once (REWIND). Standard library only.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

PROFILES = ("steady", "bursty", "stopping")
# Roles of eight consecutive topics, shuffled per seed: any eight topics hold all three.
ROLES = ("steady", "steady", "steady", "steady", "bursty", "bursty", "bursty", "stopping")
PACES = ("healthy", "slow", "rewind")
HOUR_MS = 3_600_000
SEGMENT_RECORDS = 1_000  # retention deletes whole segments: the log start moves in these steps
COMMIT_EVERY_MS = 6_000  # a consumer's mean auto-commit interval in the simulation (5 s + its turn)


@dataclass(frozen=True)
class PartitionLog:
    """One partition's producer: its end offset at the log's start (`base`) and how it grows.

    Rates are whole records per hour, so the counts are exact integers and never go back."""

    base: int
    per_hour: int
    burst_per_hour: int = 0  # extra rate inside a burst
    period_ms: int = 1
    burst_ms: int = 0
    phase_ms: int = 0  # the first burst starts this long after the log's start
    stop_ms: int | None = None  # nothing is produced this long after the log's start

    def produced(self, elapsed_ms: int) -> int:
        """Records appended in the first `elapsed_ms` of the log (none before its start)."""
        t = max(0, elapsed_ms if self.stop_ms is None else min(elapsed_ms, self.stop_ms))
        return (self.per_hour * t + self.burst_per_hour * self._in_bursts(t)) // HOUR_MS

    def _in_bursts(self, t: int) -> int:
        """Milliseconds of the first `t` spent inside a burst."""
        x = t - self.phase_ms
        if x <= 0 or not self.burst_ms:
            return 0
        whole, rest = divmod(x, self.period_ms)
        return whole * self.burst_ms + min(rest, self.burst_ms)

    def end_at(self, elapsed_ms: int) -> int:
        """The end offset `elapsed_ms` after the log's start; before it, as if the partition had
        been produced to at its base rate all along (what retention has kept of that history)."""
        if elapsed_ms >= 0:
            return self.base + self.produced(elapsed_ms)
        return max(0, self.base - self.per_hour * -elapsed_ms // HOUR_MS)

    def per_second(self) -> float:
        """The mean production rate while producing, bursts averaged in."""
        bursts = self.burst_per_hour * self.burst_ms / self.period_ms
        return (self.per_hour + bursts) / 3600


@dataclass(frozen=True)
class Producers:
    """Every partition's producer, from `start_ms` (the log's start) on."""

    start_ms: int
    retention_ms: int
    profiles: Mapping[str, str]  # topic -> one of PROFILES
    logs: Mapping[tuple[str, int], PartitionLog]

    def end_offset(self, topic: str, partition: int, t_ms: int) -> int:
        """Where the partition's log ends at `t_ms`: the offset its next record will take."""
        return self.logs[(topic, partition)].end_at(t_ms - self.start_ms)

    def log_start_offset(self, topic: str, partition: int, t_ms: int) -> int:
        """The first offset retention has kept at `t_ms`: the segment holding what the log end
        was `retention_ms` earlier. Rises slowly, never past the end."""
        log = self.logs[(topic, partition)]
        kept = log.end_at(t_ms - self.retention_ms - self.start_ms)
        return kept - kept % SEGMENT_RECORDS

    def last_append_ms(self, topic: str, partition: int, t_ms: int) -> int | None:
        """When the last record at or before `t_ms` was appended; None if none has been since the
        log's start (what came before has no known timestamp)."""
        log = self.logs[(topic, partition)]
        n = log.produced(t_ms - self.start_ms)
        if n == 0:
            return None
        lo, hi = 0, t_ms - self.start_ms  # produced(lo) < n == produced(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if log.produced(mid) >= n else (mid, hi)
        return self.start_ms + hi

    def rate(self, topic: str, partition: int) -> float:
        """Mean records per second the partition grows by while its producer runs."""
        return self.logs[(topic, partition)].per_second()

    def stop_ms(self, topic: str) -> int | None:
        """When a stopping topic stops (epoch ms); None for the others."""
        stop = self.logs[(topic, 0)].stop_ms  # a topic's partitions stop together
        return None if stop is None else self.start_ms + stop

    def sample(self, topic: str, partition: int, t_ms: int,
               source: str = "generator") -> dict[str, object]:
        """One ListOffsets sample, under schemas/lag.py LOG_END_OFFSETS' names, times in ms."""
        end = self.end_offset(topic, partition, t_ms)
        appended = self.last_append_ms(topic, partition, t_ms)
        return {"topic": topic, "partition": partition, "log_end_offset": end,
                "sampled_at": t_ms,
                "log_start_offset": self.log_start_offset(topic, partition, t_ms),
                "max_timestamp": appended,
                "max_timestamp_offset": None if appended is None else end - 1,
                "isolation_level": "READ_UNCOMMITTED", "source": source}

    def samples(self, until_ms: int, interval_ms: int,
                source: str = "generator") -> list[dict[str, object]]:
        """Every partition sampled every `interval_ms` from the log's start until `until_ms`,
        the last sample at or after it; in time order, then topic and partition."""
        if interval_ms < 1:
            raise ValueError(f"interval_ms must be positive, got {interval_ms}")
        rounds = max(0, -(-(until_ms - self.start_ms) // interval_ms))  # ceiling division
        keys = sorted(self.logs)
        return [self.sample(topic, p, self.start_ms + k * interval_ms, source)
                for k in range(rounds + 1) for topic, p in keys]


def build_producers(seed: int, topics: Mapping[str, int], start_ms: int,
                    span_ms: int) -> Producers:
    """Producers for `topics` (name -> partitions), from `seed` alone. `span_ms` is about how
    long the log lasts at least: a stopping topic stops partway through it."""
    rng = random.Random(f"{seed}/producers")
    roles = list(ROLES)
    rng.shuffle(roles)
    profiles: dict[str, str] = {}
    logs: dict[tuple[str, int], PartitionLog] = {}
    for i, topic in enumerate(sorted(topics)):
        profiles[topic] = roles[i % len(roles)]
        for p, log in enumerate(_partition_logs(rng, profiles[topic], topics[topic], span_ms)):
            logs[(topic, p)] = log
    retention = rng.choice((10, 20, 30)) * 60_000
    return Producers(start_ms, retention, profiles, logs)


def _partition_logs(rng: random.Random, profile: str, partitions: int,
                    span_ms: int) -> list[PartitionLog]:
    """A topic's partitions: one rate, burst rhythm or stop per topic (its producers share
    them), each partition's rate skewed a little (keys do not spread evenly), bases anywhere
    from a young topic's to an old one's."""
    bursty = profile == "bursty"
    rate = rng.uniform(2, 8) if bursty else rng.uniform(4, 20)  # records per second
    period, burst_ms, factor = ((rng.randint(60_000, 180_000), rng.randint(8_000, 25_000),
                                 rng.uniform(4, 9)) if bursty else (1, 0, 0.0))
    phase = rng.randrange(period)
    stop_ms = round(span_ms * rng.uniform(0.3, 0.6)) if profile == "stopping" else None
    logs = []
    for _ in range(partitions):
        per_hour = round(rate * rng.uniform(0.7, 1.3) * 3600)
        logs.append(PartitionLog(rng.randint(2_000, 400_000), per_hour, round(per_hour * factor),
                                 period, burst_ms, phase, stop_ms))
    return logs


@dataclass(frozen=True)
class Pace:
    """How fast a group consumes: `speed` is the share of a partition's production it can read
    (above 1 it keeps up; below, its lag grows). A new group starts `backlog_s` seconds of
    production behind the log end; a rewinding one seeks `rewind_s` back once, `rewind_after_ms`
    after its first commit (on each partition it had committed by then)."""

    kind: str  # one of PACES
    speed: float
    backlog_s: float
    rewind_after_ms: int | None = None
    rewind_s: float = 0.0

    def consumed(self, draw: int, draw_mean: float, per_second: float, elapsed_ms: int) -> int:
        """Records read between two commits `elapsed_ms` apart: the simulation's draw (its
        spread kept, its scale set by `speed` and the partition's rate). The time is capped at
        one commit interval: a consumer that sat idle reads no faster for it."""
        elapsed = min(elapsed_ms, COMMIT_EVERY_MS)
        return round(draw / draw_mean * self.speed * per_second * elapsed / 1000)


def consumer_pace(seed: int, index: int, span_ms: int) -> Pace:
    """Group `index`'s pace, from its own seeded stream (the same whichever part simulates it):
    mostly healthy, some slow, rarely one that rewinds once, early in a log of `span_ms`."""
    rng = random.Random(f"{seed}/consumers/{index}")
    roll = rng.random()
    backlog = rng.uniform(0, 15)
    if roll < 0.2:
        return Pace("slow", rng.uniform(0.3, 0.7), backlog)
    speed = rng.uniform(1.5, 2.5)
    if roll < 0.26:
        after = round(span_ms * rng.uniform(0.15, 0.35))
        return Pace("rewind", speed, backlog, after, rng.uniform(60, 120))
    return Pace("healthy", speed, backlog)
