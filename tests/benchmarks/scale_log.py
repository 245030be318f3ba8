"""A busy cluster's `__consumer_offsets`, made fast (numpy and Arrow, no simulated clients),
for the scale benchmark: `groups` classic consumer groups, each consuming `partitions`
partitions of a topic of its own, each committing every partition every `commit_every_s`
seconds (the Java consumer's auto-commit), a rebalance per group every `rebalance_every_s`
on average (a GROUP_METADATA snapshot: a new generation and member); the end-offset samples
of every partition every `sample_every_s` of event time. That is the shape a real cluster's
log has: offset commits are nearly every record (20,000 groups x 5 partitions committed
every 5 s: 20,000 events/s).

The log is made in `chunk_s` seconds of event time at a time, as an Arrow table of the event
log's columns (the rest null), in log order: each chunk is one append. Event time starts at
`start_ms` (the benchmark passes the wall clock, so that event time and the wall clock run
together). `pipeline.generator` makes logs by simulating clients through the fold, every
protocol's corner; at ~2,500 events/s it cannot feed a stream of 20,000/s.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa

from pipeline.fold.partitioning import partition_for

LOG_PARTITIONS = 50  # offsets.topic.num.partitions, Kafka's default
MEMBER_TYPE = pa.struct([
    ("member_id", pa.string()), ("group_instance_id", pa.string()), ("client_id", pa.string()),
    ("client_host", pa.string()), ("session_timeout_ms", pa.int32()),
    ("rebalance_timeout_ms", pa.int32()), ("subscription", pa.list_(pa.string())),
    ("assignment", pa.list_(pa.struct([("topic", pa.string()), ("partition", pa.int32())]))),
])


@dataclass(frozen=True)
class ScaleSpec:
    groups: int = 20_000
    partitions: int = 5  # of each group's topic
    commit_every_s: float = 5.0
    rebalance_every_s: float = 3_600.0  # per group, on average
    sample_every_s: float = 30.0
    consume_per_s: float = 50.0  # records a partition's consumer reads (and its producer writes)
    # After the first chunk, only the first `active` groups commit and rebalance; the rest
    # stay in the stream's state, idle (None: every group).
    active: int | None = None
    start_ms: int = 1_700_000_000_000
    seed: int = 7

    @property
    def rate(self) -> float:
        """Offset commits a second (after the first chunk)."""
        return self.committing * self.partitions / self.commit_every_s

    @property
    def committing(self) -> int:
        return self.groups if self.active is None else min(self.active, self.groups)

    @cached_property
    def group_ids(self) -> np.ndarray:
        return np.array([f"group-{g:06d}" for g in range(self.groups)], dtype=object)

    @cached_property
    def topics(self) -> np.ndarray:
        return np.array([f"topic-{g:06d}" for g in range(self.groups)], dtype=object)

    @cached_property
    def homes(self) -> np.ndarray:
        """Each group's `__consumer_offsets` partition, as Kafka's coordinator maps it."""
        return np.array([partition_for(g, LOG_PARTITIONS) for g in self.group_ids], np.int32)

    @cached_property
    def phases(self) -> np.ndarray:
        """Each group's commit phase within `commit_every_s`, in ms."""
        rng = np.random.default_rng(self.seed)
        return rng.uniform(0, self.commit_every_s * 1000, self.groups).astype(np.int64)


def _times(ms: np.ndarray) -> pa.Array:
    return pa.array(ms * 1000, pa.int64()).cast(pa.timestamp("us", "UTC"))


class ScaleLog:
    """The log of `spec` chunk by chunk, with its positions kept from chunk to chunk:
    `schema` is the event log's, `samples_schema` the samples table's (Arrow)."""

    def __init__(self, spec: ScaleSpec, schema: pa.Schema, samples_schema: pa.Schema) -> None:
        self.spec = spec
        self.schema = schema
        self.samples_schema = samples_schema
        self.next_offset = np.zeros(LOG_PARTITIONS, np.int64)
        self.generation = np.zeros(spec.groups, np.int64)
        self.rng = np.random.default_rng(spec.seed + 1)
        self.sampled_until = 0  # ms after start: samples before it are made

    def chunks(self, chunk_s: float, count: int) -> Iterator[tuple[pa.Table, pa.Table | None]]:
        """`count` chunks of `chunk_s` seconds each: (the events, the samples taken in them)."""
        step = int(chunk_s * 1000)
        for k in range(count):
            yield self.events(k * step, (k + 1) * step), self.samples((k + 1) * step)

    def events(self, since: int, until: int) -> pa.Table:
        """The records with event time in [start + since, start + until) ms, in log order."""
        s = self.spec
        first = since == 0
        joins = self._snapshots(np.arange(s.groups), np.zeros(s.groups, np.int64)) if first \
            else None
        period = int(s.commit_every_s * 1000)
        # each group's commit rounds in the window: t = phase + n * period
        n_lo = np.ceil((since - s.phases) / period).astype(np.int64)
        n_hi = np.ceil((until - s.phases) / period).astype(np.int64)
        if not first:
            n_hi[s.committing:] = n_lo[s.committing:]  # the idle groups: no round
        rounds = np.maximum(n_hi - n_lo, 0)
        group = np.repeat(np.arange(s.groups), rounds)
        n = np.concatenate([np.arange(a, b) for a, b in zip(n_lo, n_hi, strict=True) if b > a]) \
            if rounds.sum() else np.zeros(0, np.int64)
        at = s.phases[group] + n * period + 1  # after the group's first snapshot
        group = np.repeat(group, s.partitions)
        at = np.repeat(at, s.partitions)
        partition = np.tile(np.arange(s.partitions, dtype=np.int32), len(at) // s.partitions)
        committed = (at * s.consume_per_s / 1000).astype(np.int64) + partition * 1_000_000
        commits = self._commits(group, at, partition, committed)
        # rebalances: a Poisson count per group in the window, each a new snapshot
        expected = (until - since) / 1000 / s.rebalance_every_s
        moved = np.nonzero(self.rng.poisson(expected, s.committing))[0]
        rebalances = self._snapshots(moved, self.rng.integers(since, until, len(moved)))
        parts = [t for t in (joins, commits, rebalances) if t is not None and t.num_rows]
        table = pa.concat_tables(parts) if parts else commits
        return self._positioned(table)

    def _commits(self, group: np.ndarray, at: np.ndarray, partition: np.ndarray,
                 committed: np.ndarray) -> pa.Table:
        s = self.spec
        times = _times(s.start_ms + at)
        return self._table({
            "event_time": times, "group_id": pa.array(s.group_ids[group], pa.string()),
            "event_type": pa.array(np.full(len(at), "OFFSET_COMMIT", object), pa.string()),
            "topic": pa.array(s.topics[group], pa.string()),
            "partition": pa.array(partition, pa.int32()),
            "committed_offset": pa.array(committed, pa.int64()),
            "commit_metadata": pa.array(np.full(len(at), "", object), pa.string()),
            "commit_timestamp": times,
            "_home": pa.array(s.homes[group], pa.int32()),
        })

    def _snapshots(self, groups: np.ndarray, at: np.ndarray) -> pa.Table | None:
        """A GROUP_METADATA per group: a new generation, one member owning every partition."""
        if not len(groups):
            return None
        s = self.spec
        self.generation[groups] += 1
        generation = self.generation[groups]
        members = []
        for g, gen in zip(groups.tolist(), generation.tolist(), strict=True):
            topic = s.topics[g]
            member = f"consumer-{g}-{gen}"
            members.append([{
                "member_id": member, "group_instance_id": None, "client_id": f"consumer-{g}",
                "client_host": "/10.0.0.7", "session_timeout_ms": 45_000,
                "rebalance_timeout_ms": 300_000, "subscription": [topic],
                "assignment": [{"topic": topic, "partition": p} for p in range(s.partitions)]}])
        times = _times(s.start_ms + at)
        leaders = [m[0]["member_id"] for m in members]
        return self._table({
            "event_time": times, "group_id": pa.array(s.group_ids[groups], pa.string()),
            "event_type": pa.array(["GROUP_METADATA"] * len(groups), pa.string()),
            "protocol_type": pa.array(["consumer"] * len(groups), pa.string()),
            "generation_id": pa.array(generation, pa.int32()),
            "protocol": pa.array(["range"] * len(groups), pa.string()),
            "leader_id": pa.array(leaders, pa.string()),
            "members": pa.array(members, pa.list_(MEMBER_TYPE)),
            "current_state_timestamp": times,
            "_home": pa.array(s.homes[groups], pa.int32()),
        })

    def _table(self, columns: dict[str, pa.Array]) -> pa.Table:
        n = len(next(iter(columns.values())))
        arrays = [columns[f.name].cast(f.type) if f.name in columns else pa.nulls(n, f.type)
                  for f in self.schema]
        return pa.Table.from_arrays([*arrays, columns["_home"]],
                                    schema=self.schema.append(pa.field("_home", pa.int32())))

    def _positioned(self, table: pa.Table) -> pa.Table:
        """In event-time order, each row given its log partition and the next offset there."""
        table = table.sort_by([("event_time", "ascending")])
        home = table.column("_home").to_numpy()
        order = np.argsort(home, kind="stable")
        counts = np.bincount(home, minlength=LOG_PARTITIONS)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        within = np.empty(len(home), np.int64)
        within[order] = np.arange(len(home)) - np.repeat(starts, counts)
        offsets = self.next_offset[home] + within
        self.next_offset += counts
        i_part = table.schema.get_field_index("log_partition")
        i_off = table.schema.get_field_index("log_offset")
        table = table.set_column(i_part, table.schema.field(i_part),
                                 pa.array(home, pa.int32()))
        table = table.set_column(i_off, table.schema.field(i_off), pa.array(offsets, pa.int64()))
        return table.drop_columns(["_home"])

    def samples(self, until: int) -> pa.Table | None:
        """The sample rounds taken before `until` ms after start not made yet: every partition
        of every group's topic, its log end a little ahead of what the group committed."""
        s = self.spec
        step = int(s.sample_every_s * 1000)
        rounds = []
        while self.sampled_until + step <= until:
            self.sampled_until += step
            rounds.append(self.sampled_until)
        if not rounds:
            return None
        at = np.repeat(np.array(rounds, np.int64), s.groups * s.partitions)
        group = np.tile(np.repeat(np.arange(s.groups), s.partitions), len(rounds))
        partition = np.tile(np.arange(s.partitions, dtype=np.int32), s.groups * len(rounds))
        ends = (at * s.consume_per_s / 1000).astype(np.int64) + int(
            s.consume_per_s * s.commit_every_s) + partition * 1_000_000
        columns = {"topic": pa.array(s.topics[group], pa.string()),
                   "partition": pa.array(partition, pa.int32()),
                   "log_end_offset": pa.array(ends, pa.int64()),
                   "sampled_at": _times(s.start_ms + at),
                   "source": pa.array(np.full(len(at), "scale", object), pa.string())}
        n = len(at)
        return pa.Table.from_arrays(
            [columns[f.name].cast(f.type) if f.name in columns else pa.nulls(n, f.type)
             for f in self.samples_schema], schema=self.samples_schema)
