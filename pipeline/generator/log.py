"""The whole synthetic log: many groups simulated side by side, merged into one partitioned log.

`generate(LogSpec(...))` returns events with log positions: each group lives on the
partition Kafka would give it, offsets rise in time order. `log_kind="journal"` keeps the
clients' requests plus the coordinator's snapshots and tombstones (an instrumented
coordinator); `"offsets-topic"` keeps only what a real `__consumer_offsets` holds for the
same history. `bad_rows` mixes in malformed rows and duplicate deliveries at that fraction of the log.

A log too big for one process is generated in `parts`: each part simulates its own share of
the groups and events in a process of its own, and numbers its records so that the parts,
written side by side, make one log (`generate`).

Behind the topics run simulated producers (`producers_for`, from the seed alone, the same in
every part): consumers never commit past a partition's end, and `end_offset_samples` gives
where every partition's log ended at each sample time, for the lag tables.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field, replace

from pipeline.fold import CoordinatorConfig, Event
from pipeline.fold.partitioning import partition_for
from pipeline.generator.clients import Client, GroupSim
from pipeline.generator.producers import Pace, Producers, build_producers, consumer_pace

LOG_KINDS = ("journal", "offsets-topic")
T0 = 1_700_000_000_000
ASSIGNOR_CHOICES = (
    ("range", "cooperative-sticky"), ("cooperative-sticky",), ("range",),
    ("roundrobin",), ("sticky",),
)
SIZES = (1, 1, 2, 2, 3, 3, 4, 4, 5, 6, 8, 12, 20)


@dataclass(frozen=True)
class LogSpec:
    groups: int = 20
    events: int = 10_000
    seed: int = 1
    log_kind: str = "journal"
    bad_rows: float = 0.0
    out_of_order: float = 0.0  # rows delivered last, behind their group's later rows
    num_partitions: int = 50
    start_ms: int = T0
    config: CoordinatorConfig = field(default_factory=CoordinatorConfig)
    sample_interval_ms: int = 30_000  # end-offset samples, `end_offset_samples`

    def __post_init__(self) -> None:
        if self.log_kind not in LOG_KINDS:
            raise ValueError(f"log_kind must be one of {LOG_KINDS}, got {self.log_kind!r}")
        if self.groups < 1 or self.events < 1:
            raise ValueError(f"groups and events must be positive, got {self.groups}, {self.events}")
        if self.sample_interval_ms < 1:
            raise ValueError(f"sample_interval_ms must be positive, got {self.sample_interval_ms}")
        for name in ("bad_rows", "out_of_order"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{name} must be a fraction in [0, 1), got {value!r}")


def generate(spec: LogSpec, part: int = 0, parts: int = 1) -> list[Event]:
    """The log `spec` describes; with `parts` > 1, part `part` of a log of that shape made of
    `parts` independent pieces: the groups i = part (mod parts), simulated from a seed of
    their own on the same topics, with their share of the events, and in each partition the
    offsets = part (mod parts), so that the parts together hold each position once. A log
    in parts is not the log `generate(spec)` gives in one piece, but one of the same shape."""
    if not 0 <= part < parts:
        raise ValueError(f"part must be in [0, {parts}), got {part}")
    rng = random.Random(spec.seed)
    topics = _topics(rng)
    producers = producers_for(spec)
    if parts > 1:
        rng = random.Random(f"{spec.seed}/{part}/{parts}")
    sims = [_make_group(i, rng, topics, spec, producers) for i in range(part, spec.groups, parts)]
    share = spec.events // parts + (1 if part < spec.events % parts else 0)
    _simulate(sims, replace(spec, events=max(share, 1)), rng)
    per_group = [_kept(s, spec.log_kind) for s in sims]
    if spec.bad_rows:
        per_group = [_with_malformed(rows, spec.bad_rows, rng) for rows in per_group]
    events = _positioned(per_group, spec, rng, part, parts)
    if spec.bad_rows:
        events = _redelivered(events, spec.bad_rows, rng)
    if spec.out_of_order:
        events = _delayed(events, spec.out_of_order, rng)
    return events


def producers_for(spec: LogSpec) -> Producers:
    """The producers behind `spec`'s topics: from the seed alone, so every part of a log sees
    the same ones, and drawn apart from the simulation, which they leave as it was."""
    return build_producers(spec.seed, _topics(random.Random(spec.seed)), spec.start_ms,
                           _span_hint_ms(spec))


def pace_for(spec: LogSpec, index: int) -> Pace:
    """How fast group `index` (the number in its id) of `spec`'s log consumes, in any part."""
    return consumer_pace(spec.seed, index, _span_hint_ms(spec))


def end_offset_samples(spec: LogSpec, until_ms: int) -> list[dict[str, object]]:
    """Where every partition of `spec`'s topics ended, every `spec.sample_interval_ms` from the
    log's start until `until_ms` (normally its last event's time; the last sample is at or
    after it): rows under schemas/lag.py LOG_END_OFFSETS' names, times in epoch ms. The same
    whatever the parts the log was made in: write them once."""
    return producers_for(spec).samples(until_ms, spec.sample_interval_ms)


def last_event_ms(events: list[Event]) -> int:
    """The latest event time in `events` (`end_offset_samples` runs until it; 0 for none)."""
    return max((e.event_time for e in events if e.event_time is not None), default=0)


def _topics(rng: random.Random) -> dict[str, int]:
    """The topics and their partition counts: the first draws of the log's seed."""
    return {f"topic-{i}": rng.randint(1, 12) for i in range(8)}


def _span_hint_ms(spec: LogSpec) -> int:
    """About the least time a log of this shape spans (measured: each client acts every ~2 s
    and a group has ~5 of them; a journal keeps more rows per action than an offsets-topic log,
    so this is the journal's), so that a stopping topic stops, and a rewinding group seeks
    back, partway through it. From the spec as a whole, so every part of a log agrees, and
    not from its kind: both kinds of a spec come from one simulation and commit the same."""
    return 30_000 + 200 * spec.events // spec.groups


def _delayed(events: list[Event], fraction: float, rng: random.Random) -> list[Event]:
    """Some rows, positions kept, moved to the end of the log: delivered late.

    A replay that has applied later rows of the group by then rejects them as OUT_OF_ORDER;
    one that reads the whole log in one batch sorts them back into place. So such a log
    replays differently under different micro-batching, by design of the input.
    """
    late = {i for i in range(len(events)) if rng.random() < fraction}
    return [e for i, e in enumerate(events) if i not in late] + [events[i] for i in sorted(late)]


def _make_group(i: int, rng: random.Random, topics: dict[str, int], spec: LogSpec,
                producers: Producers) -> GroupSim:
    group_id = f"group-{i:05d}-{rng.choice(['orders', 'billing', 'search', 'etl', 'audit'])}"
    kind = rng.random()
    size = rng.choice(SIZES)
    static = rng.random() < 0.25
    assignors = rng.choice(ASSIGNOR_CHOICES)
    subscribed = tuple(sorted(rng.sample(sorted(topics), rng.randint(1, 3))))
    session = rng.choice((10_000, 30_000, 45_000))
    clients = [
        Client(name=f"c{j}", instance=f"{group_id}-inst-{j}" if static else None,
               assignors=assignors, topics=subscribed, session_ms=session,
               rebalance_ms=rng.choice((30_000, 60_000)),
               producer_id=(1000 * i + j) if kind > 0.92 else None)
        for j in range(size)
    ]
    sim = GroupSim(group_id, clients, topics, random.Random(rng.random()), spec.config,
                   standalone=kind < 0.06, producers=producers, pace=pace_for(spec, i))
    if sim.standalone:
        for c in clients:
            c.owned = tuple((t, p) for t in subscribed for p in range(topics[t]))[:4]
    return sim


def _simulate(sims: list[GroupSim], spec: LogSpec, rng: random.Random) -> None:
    queue: list[tuple[int, int, int, int]] = []
    seq = 0
    for gi, sim in enumerate(sims):
        start = spec.start_ms + rng.randint(0, 60_000)
        for ci in range(len(sim.clients)):
            late = rng.randint(0, 5_000) if rng.random() < 0.8 else rng.randint(60_000, 600_000)
            queue.append((start + late, seq, gi, ci))
            seq += 1
    retire = {gi: spec.start_ms + rng.randint(600_000, 7_200_000)
              for gi in range(len(sims)) if rng.random() < 0.2}
    heapq.heapify(queue)
    produced = 0
    while queue and produced < spec.events:
        t, _, gi, ci = heapq.heappop(queue)
        sim = sims[gi]
        before = len(sim.log)
        if gi in retire and t >= retire[gi]:
            _retire(sim, sim.clients[ci], t)
        else:
            heapq.heappush(queue, (sim.act(sim.clients[ci], t), seq, gi, ci))
        seq += 1
        produced += _counted(sim.log[before:], spec.log_kind)


def _retire(sim: GroupSim, c: Client, t: int) -> None:
    """The client goes away for good: dynamic ones say so, static ones just stop."""
    if c.member_id is not None and c.instance is None and sim.group.member(c.member_id):
        sim.send("LEAVE", t, member_id=c.member_id)
    sim.advance_to(t)


def _kept(sim: GroupSim, log_kind: str) -> list[Event]:
    keep = []
    for kind, e in sim.log:
        if log_kind == "journal":
            if kind == "request" or e.event_type not in ("OFFSET_COMMIT", "TXN_MARKER"):
                keep.append(e)
        elif kind == "record":
            keep.append(e.evolve(member_id=None) if e.event_type == "OFFSET_COMMIT" else e)
    return keep


def _counted(entries: list[tuple[str, Event]], log_kind: str) -> int:
    if log_kind == "journal":
        return sum(1 for k, e in entries
                   if k == "request" or e.event_type not in ("OFFSET_COMMIT", "TXN_MARKER"))
    return sum(1 for k, _ in entries if k == "record")


def _positioned(per_group: list[list[Event]], spec: LogSpec, rng: random.Random,
                part: int = 0, parts: int = 1) -> list[Event]:
    """Merge the groups' logs in time order and number each partition's records (in a log
    made of `parts`, this part's positions: the offsets = `part` mod `parts`)."""
    keyed = (
        [((e.event_time or 0), gi, n, e) for n, e in enumerate(rows)]
        for gi, rows in enumerate(per_group)
    )
    next_offset = [0] * spec.num_partitions
    out = []
    for _, _, _, e in heapq.merge(*keyed):
        p = (partition_for(e.group_id, spec.num_partitions) if e.group_id is not None
             else rng.randrange(spec.num_partitions))
        out.append(e.evolve(log_partition=p, log_offset=next_offset[p] * parts + part))
        next_offset[p] += 1 + (1 if rng.random() < 0.05 else 0)  # markers and compaction leave gaps
    return out


def _with_malformed(rows: list[Event], fraction: float, rng: random.Random) -> list[Event]:
    if not rows:
        return rows
    out = list(rows)
    for _ in range(max(1, round(len(rows) * fraction / 2))):
        i = rng.randrange(len(out) + 1)
        anchor = out[min(i, len(out) - 1)]
        out.insert(i, _malformed(anchor, rng))
    return out


def _malformed(anchor: Event, rng: random.Random) -> Event:
    base = Event(None, None, anchor.event_time, anchor.group_id, "OFFSET_COMMIT",
                 topic="topic-0", partition=0, committed_offset=1)
    kind = rng.randrange(5)
    if kind == 0:
        return base.evolve(group_id=None)
    if kind == 1:
        return base.evolve(event_type="JOIN_GROUP_V99")
    if kind == 2:
        return base.evolve(committed_offset=None)
    if kind == 3:
        return base.evolve(partition=-3)
    return base.evolve(event_type="UNSUPPORTED_RECORD", raw_key=b"\x00\x63\x00", raw_value=b"?")


def _redelivered(events: list[Event], fraction: float, rng: random.Random) -> list[Event]:
    """Duplicate deliveries (the same position twice), right behind the original.

    Rows that arrive behind their group's position in a later micro-batch are not made
    here: whether they are OUT_OF_ORDER depends on how the log is cut into batches, so a
    generated log would not replay the same under every trigger. Tests append them.
    """
    out: list[Event] = []
    for e in events:
        out.append(e)
        if rng.random() < fraction / 2:
            out.append(e)
    return out
