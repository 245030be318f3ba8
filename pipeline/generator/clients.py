"""Simulated Kafka consumers of one group, driving the fold as if it were their coordinator.

Each client acts on its own clock: it reads the coordinator's state (what a response would
have told it), then sends the request a real consumer would send next: join (two-phase for
dynamic members), sync (the leader computing the assignment with the group's assignor),
heartbeat, auto-commit of every owned partition, leave, rejoin after a revocation
(cooperative), a restart under the same static instance id, or nothing at all (a crash).
What a commit says comes from the group's position on the partition, which its clients share
(a partition's new owner resumes from it), moved on at the group's `Pace` and never past where
the simulated producers have brought the log's end.
"""

from __future__ import annotations

import random
from dataclasses import KW_ONLY, dataclass, field

from pipeline.fold import CoordinatorConfig, Event, Group, Protocol, advance, apply
from pipeline.fold.context import Outputs
from pipeline.fold.partitioning import partition_for
from pipeline.fold.states import COMPLETING_REBALANCE, PREPARING_REBALANCE, STABLE
from pipeline.generator.assignors import Subscription, assign
from pipeline.generator.producers import Pace, Producers

EAGER = frozenset({"range", "roundrobin", "sticky"})


@dataclass
class Client:
    name: str
    instance: str | None
    assignors: tuple[str, ...]
    topics: tuple[str, ...]
    session_ms: int
    rebalance_ms: int
    producer_id: int | None = None
    member_id: str | None = None
    owned: tuple[tuple[str, int], ...] = ()
    crashed_until: int | None = None
    next_commit: int = 0
    serial: int = 0


@dataclass
class GroupSim:
    """One group: its clients, the coordinator's state, and every event and record so far."""

    group_id: str
    clients: list[Client]
    partitions: dict[str, int]
    rng: random.Random
    config: CoordinatorConfig
    standalone: bool = False
    group: Group = field(init=False)
    # Everything the group's log would hold, in order: ("request" | "record", event).
    log: list[tuple[str, Event]] = field(default_factory=list)
    last_time: int = 0
    _: KW_ONLY
    producers: Producers
    pace: Pace
    # The group's position on each partition, when it last committed it, when it first
    # committed at all, and the partitions it has sought back on (a rewinding group does so
    # once per partition).
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    committed_at: dict[tuple[str, int], int] = field(default_factory=dict)
    first_commit: int | None = None
    rewound: set[tuple[str, int]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.group = Group(self.group_id)

    # --- the coordinator ----------------------------------------------------------------
    def _keep(self, out: Outputs, after_request: bool) -> None:
        # Records a timer wrote are appended 1 ms after it fired, so a replay fires it first.
        for r in out.records:
            r = r if after_request else _later(r)
            assert r.event_time is not None
            self.last_time = max(self.last_time, r.event_time)
            self.log.append(("record", r))

    def send(self, event_type: str, t: int, **values: object) -> bool:
        """Send one request at `t`; True when the coordinator accepted it."""
        t = max(t, self.last_time)  # a group's log never goes back in time
        self.last_time = t
        e = Event(None, None, t, self.group_id, event_type, **values)  # type: ignore[arg-type]
        at = positioned(self.group, e, self.config.offsets_topic_num_partitions)
        r = apply(self.group, at, self.config, records=True)
        self.group = r.group
        self.log.append(("request", e))
        self._keep(r.outputs, True)
        return not r.outputs.rejected

    def advance_to(self, t: int) -> None:
        r = advance(self.group, max(t, self.last_time), self.config, records=True)
        self.group = r.group
        self._keep(r.outputs, False)

    # --- a client's turn -----------------------------------------------------------------
    def act(self, c: Client, t: int) -> int:
        """Let client `c` do what it would do at `t`; returns when it acts next."""
        self.advance_to(t)
        if self.standalone:
            return self._standalone_commit(c, t)
        if c.crashed_until is not None:
            if t < c.crashed_until:
                return c.crashed_until
            self._restart(c)
        self.turn(c, t)
        return t + self.rng.randint(800, 3000)

    def turn(self, c: Client, t: int) -> None:
        """What a consumer sends at `t`, by what the coordinator last told it: a join when it
        is no member, a rejoin when a rebalance waits on it, a sync when its generation waits
        for one, else its steady work."""
        m = self.group.member(c.member_id)
        g = self.group
        if m is None:
            self._join_new(c, t)
        elif g.state == PREPARING_REBALANCE and not m.awaiting_join:
            self.rejoin(c, t)
        elif g.state in (COMPLETING_REBALANCE, STABLE) and m.member_id in g.pending_sync:
            self._sync(c, t)
        elif g.state == STABLE:
            self._steady(c, t)

    def _standalone_commit(self, c: Client, t: int) -> int:
        for tp in c.owned:
            offset = self._consume(tp, t, self.rng.randint(1, 500), 250.5)
            self.send("OFFSET_COMMIT", t, member_id="", generation_id=-1, topic=tp[0],
                      partition=tp[1], committed_offset=offset, commit_timestamp=t)
        return t + self.rng.randint(4000, 6000)

    def _restart(self, c: Client) -> None:
        c.crashed_until = None
        c.owned = ()
        if c.instance is None:
            c.member_id = None  # a dynamic member forgets its id; a static one keeps its name

    def _protocols(self, c: Client) -> tuple[Protocol, ...]:
        return tuple(Protocol(a, c.topics) for a in c.assignors)

    def _join_fields(self, c: Client) -> dict[str, object]:
        return dict(group_instance_id=c.instance, client_id=c.name,
                    client_host=f"/10.0.0.{len(c.name) % 250}",
                    session_timeout_ms=c.session_ms, rebalance_timeout_ms=c.rebalance_ms,
                    protocol_type="consumer", protocols=self._protocols(c))

    def _join_new(self, c: Client, t: int) -> None:
        c.serial += 1
        member_id = f"{c.instance or c.name}-{self.rng.getrandbits(48):012x}"
        ok = self.send("JOIN", t, member_id=member_id, request_member_id="",
                       **self._join_fields(c))
        c.member_id = member_id if ok else None
        if ok and self.group.pending(member_id) is not None:
            self.send("JOIN", t + 1, member_id=member_id, request_member_id=member_id,
                      **self._join_fields(c))

    def rejoin(self, c: Client, t: int) -> None:
        """Join again as the member it is (after a change of subscription, or when a
        rebalance waits on it); an eager assignor gives up everything first."""
        if self.group.protocol in EAGER or self.group.protocol is None:
            c.owned = ()  # eager protocols revoke everything before rejoining
        self.send("JOIN", t, member_id=c.member_id, request_member_id=c.member_id,
                  **self._join_fields(c))

    def _sync(self, c: Client, t: int) -> None:
        g = self.group
        plan = None
        if g.leader_id == c.member_id and g.state == COMPLETING_REBALANCE:
            plan = self._assignment()
        self.send("SYNC", t, member_id=c.member_id, group_instance_id=c.instance,
                  generation_id=g.generation_id, protocol_type=g.protocol_type,
                  protocol=g.protocol, assignments=plan)
        if self.group.state == STABLE:
            self._adopt(c, t)

    def _assignment(self) -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
        g = self.group
        by_member = {c.member_id: c for c in self.clients}
        subs = [
            Subscription(m.member_id, m.topics_for(g.protocol), m.group_instance_id,
                         by_member[m.member_id].owned if m.member_id in by_member else (),
                         g.generation_id - 1)
            for m in g.members
        ]
        plan = assign(g.protocol or "range", subs, self.partitions)
        return tuple(sorted((m, tuple(tps)) for m, tps in plan.items()))

    def _adopt(self, c: Client, t: int) -> None:
        m = self.group.member(c.member_id)
        if m is None:
            return
        lost = set(c.owned) - set(m.assignment)
        c.owned = m.assignment
        if lost and self.group.protocol == "cooperative-sticky":
            self.rejoin(c, t + 2)  # revoked partitions: the second cooperative round

    def _steady(self, c: Client, t: int) -> None:
        m = self.group.member(c.member_id)
        assert m is not None
        if set(m.assignment) != set(c.owned):
            self._adopt(c, t)
            return
        roll = self.rng.random()
        if roll < 0.004:
            c.crashed_until = t + self.rng.randint(20_000, 120_000)  # heartbeats stop
        elif roll < 0.007 and c.instance is None:
            self.send("LEAVE", t, member_id=c.member_id)
            c.crashed_until, c.owned = t + self.rng.randint(5_000, 60_000), ()
        elif roll < 0.009:
            c.topics = self._other_topics(c.topics)
            self.rejoin(c, t)
        elif t >= c.next_commit and c.owned:
            self._commit(c, t)
        else:
            self.send("HEARTBEAT", t, member_id=c.member_id, group_instance_id=c.instance,
                      generation_id=self.group.generation_id)

    def _other_topics(self, topics: tuple[str, ...]) -> tuple[str, ...]:
        pool = sorted(self.partitions)
        extra = self.rng.choice(pool)
        return tuple(sorted(set(topics) ^ {extra})) or (extra,)

    def _commit(self, c: Client, t: int) -> None:
        c.next_commit = t + 5000
        g = self.group
        for tp in c.owned:
            offset = self._consume(tp, t, self.rng.randint(0, 300), 150.0)
            self.send("OFFSET_COMMIT", t, member_id=c.member_id, group_instance_id=c.instance,
                      generation_id=g.generation_id, topic=tp[0], partition=tp[1],
                      committed_offset=offset, commit_timestamp=t, producer_id=c.producer_id)
        if c.producer_id is not None and c.owned:
            result = "ABORT" if self.rng.random() < 0.15 else "COMMIT"
            self.send("TXN_MARKER", t + 1, producer_id=c.producer_id, txn_result=result)

    def _consume(self, tp: tuple[str, int], t: int, draw: int, draw_mean: float) -> int:
        """The offset the group commits for `tp` at `t`: its position moved on by what it read
        since it last committed there (`draw`, around `draw_mean`, scaled by its pace), never
        past the log's end at `t` nor behind its start. A partition new to the group starts a
        little behind the end; a rewinding group seeks back once instead."""
        topic, partition = tp
        if self.first_commit is None:
            self.first_commit = t
        end = self.producers.end_offset(topic, partition, t)
        rate = self.producers.rate(topic, partition)
        seeks = self._seeks_back(tp, t)
        if tp not in self.offsets:
            offset = end - round(self.pace.backlog_s * rate)
        elif seeks:
            offset = self.offsets[tp] - round(self.pace.rewind_s * rate)
        else:
            read = self.pace.consumed(draw, draw_mean, rate, t - self.committed_at[tp])
            offset = self.offsets[tp] + read
        offset = max(min(offset, end), self.producers.log_start_offset(topic, partition, t))
        self.offsets[tp], self.committed_at[tp] = offset, t
        return offset

    def _seeks_back(self, tp: tuple[str, int], t: int) -> bool:
        """True the first time the group touches `tp` once its rewind time has come."""
        after, first = self.pace.rewind_after_ms, self.first_commit
        if after is None or first is None or t < first + after or tp in self.rewound:
            return False
        self.rewound.add(tp)
        return True


def positioned(g: Group, e: Event, partitions: int) -> Event:
    """Give a simulated request the next position of its group, in the partition the fold
    expects it in; real positions come later."""
    last = g.position[1] if g.position is not None else -1
    return e.evolve(log_partition=partition_for(g.group_id, partitions), log_offset=last + 1)


def _later(r: Event) -> Event:
    assert r.event_time is not None
    return r.evolve(event_time=r.event_time + 1)
