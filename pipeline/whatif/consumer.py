"""A script's consumers played under the consumer protocol (KIP-848), through the fold.

Under KIP-848 the broker assigns: each heartbeat of a member may change the group, and the
coordinator writes what changed as records (types 3 to 8 of `__consumer_offsets`), which
the fold replays like any KIP-848 group's. This module is that coordinator, for the what-if:

- a member joins with a heartbeat at epoch 0: its metadata record, the group epoch bumped,
  the new target assignment (the broker's assignor, `uniform` or `range`) and its epoch;
- a member reconciles on its own heartbeats (`group.consumer.heartbeat.interval.ms`, 5 s by
  default): first it revokes what its target no longer holds (UNREVOKED_PARTITIONS, its
  epoch unchanged), then, with the heartbeat that acknowledges it (sent at once, as Kafka's
  clients do), takes the target epoch and whatever of its target nobody else still holds
  (UNRELEASED_PARTITIONS until the rest is released, which it learns at a later heartbeat);
- a member that stops cleanly leaves (its records tombstoned, the epoch bumped, new
  targets); a dynamic member that dies, or a static one that stops, stays until its session
  ends (`group.consumer.session.timeout.ms`, 45 s by default); a static member back within
  its session takes its old place and assignment with no epoch bump.

No group-wide barrier: the fold's rebalance runs from the epoch bump until every member has
reconciled, and the partitions it counts as unowned are only those handed out that nobody
owned before (`rebalance_cost`, INCREMENTAL).

The assignors, on a group whose members subscribe to the same topics: `uniform` is sticky
and balanced (each member keeps what it had up to its share; the rest goes to the least
loaded, in member id order), as Kafka's OptimizedUniformAssignmentBuilder aims; `range`
gives each topic's partitions in contiguous ranges to its subscribers in member id order,
as the classic RangeAssignor does.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field, replace

from pipeline.fold import CoordinatorConfig, Event, Group, advance, apply
from pipeline.fold.context import Outputs
from pipeline.fold.events import TopicMetadata
from pipeline.generator.clients import positioned
from pipeline.whatif.schedule import Schedule
from pipeline.whatif.script import CRASH, LEAVE, Life, Script

HEARTBEAT_MS = 5_000  # group.consumer.heartbeat.interval.ms, Kafka's default
RESPONSE_MS = 100  # a member's acknowledging heartbeat, sent once it has revoked
SESSION_MS = 45_000  # group.consumer.session.timeout.ms, Kafka's default
STABLE, UNREVOKED, UNRELEASED = 0, 1, 2  # MemberState, as the records hold it
SERVER_ASSIGNORS = ("uniform", "range")
# group.consumer.min/max.session.timeout.ms, Kafka's defaults: the broker's bounds.
SESSION_BOUNDS = (45_000, 60_000)
TP = tuple[str, int]  # (topic name, partition)


def topic_id(name: str) -> str:
    """A stable topic id for `name` (the what-if's topics have none of their own): 16 bytes
    of its SHA-256, as Kafka prints a Uuid (URL-safe base64, unpadded)."""
    raw = hashlib.sha256(name.encode()).digest()[:16]
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@dataclass
class _Member:
    member_id: str
    client: str
    topics: tuple[str, ...]
    static: bool
    rebalance_ms: int
    epoch: int = 0
    state: int = STABLE
    assigned: frozenset[TP] = frozenset()
    pending: frozenset[TP] = frozenset()  # partitions pending revocation
    silent_since: int | None = None  # stopped heartbeating (a crash, a static stop)


@dataclass
class _Coordinator:
    group_id: str
    partitions: dict[str, int]
    assignor: str
    session_ms: int
    config: CoordinatorConfig
    group: Group = field(init=False)
    members: dict[str, _Member] = field(default_factory=dict)
    targets: dict[str, frozenset[TP]] = field(default_factory=dict)
    group_epoch: int = 0
    outputs: Outputs = field(default_factory=Outputs)
    expelled: int = 0
    serial: int = 0
    last: int = 0

    def __post_init__(self) -> None:
        self.group = Group(self.group_id)

    # --- the log ------------------------------------------------------------------------
    def write(self, t: int, event_type: str, **values: object) -> None:
        t = max(t, self.last)
        self.last = t
        e = Event(None, None, t, self.group_id, event_type, **values)  # type: ignore[arg-type]
        r = apply(self.group, positioned(self.group, e, self.config.offsets_topic_num_partitions),
                  self.config)
        self.group = r.group
        self.outputs.extend(r.outputs)

    def advance_to(self, t: int) -> None:
        r = advance(self.group, max(t, self.last), self.config)
        self.group = r.group
        self.outputs.extend(r.outputs)

    @staticmethod
    def _ids(tps: frozenset[TP]) -> tuple[tuple[str, tuple[int, ...]], ...]:
        by_topic: dict[str, list[int]] = {}
        for topic, p in sorted(tps):
            by_topic.setdefault(topic_id(topic), []).append(p)
        return tuple((t, tuple(ps)) for t, ps in by_topic.items())

    def _current(self, t: int, m: _Member, previous: int) -> None:
        self.write(t, "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT", member_id=m.member_id,
                   member_epoch=m.epoch, previous_member_epoch=previous, member_state=m.state,
                   assigned_partitions=self._ids(m.assigned),
                   partitions_pending_revocation=self._ids(m.pending))

    def _metadata(self, t: int, m: _Member) -> None:
        client_id, _, host = m.client.partition("@")
        self.write(t, "CONSUMER_GROUP_MEMBER_METADATA", member_id=m.member_id,
                   group_instance_id=m.client if m.static else None, client_id=client_id,
                   client_host=host or None, subscribed_topic_names=m.topics,
                   rebalance_timeout_ms=m.rebalance_ms, server_assignor=self.assignor)

    # --- what changes the group ---------------------------------------------------------
    def _retarget(self, t: int) -> None:
        """Bump the group epoch and write the new target assignment (the members whose
        target changed, then its epoch)."""
        self.group_epoch += 1
        self.write(t, "CONSUMER_GROUP_PARTITION_METADATA", topics_metadata=tuple(
            TopicMetadata(topic_id(n), n, c) for n, c in sorted(self.partitions.items())))
        self.write(t, "CONSUMER_GROUP_METADATA", group_epoch=self.group_epoch, metadata_hash=0)
        new = assign(self.assignor, {m.member_id: m.topics for m in self.members.values()},
                     self.partitions, self.targets)
        for member_id, tps in sorted(new.items()):
            if self.targets.get(member_id) != tps:
                self.write(t, "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER", member_id=member_id,
                           assigned_partitions=self._ids(tps))
        self.targets = new
        self.write(t, "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA",
                   assignment_epoch=self.group_epoch)

    def join(self, t: int, life: Life, static: bool) -> _Member:
        self.advance_to(t)
        old = next((m for m in self.members.values() if m.client == life.client), None)
        self.serial += 1
        m = _Member(f"{life.client}-{self.serial:06d}", life.client, life.topics, static,
                    life.rebalance_timeout_ms)
        if old is not None and old.static and static and old.topics == life.topics:
            # A static member back within its session: its place, epoch and assignment.
            self._remove(t, old)
            m = replace(m, epoch=old.epoch, state=old.state, assigned=old.assigned,
                        pending=old.pending)
            self.members[m.member_id] = m
            self.targets[m.member_id] = self.targets.pop(old.member_id, frozenset())
            self._metadata(t, m)
            self.write(t, "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER", member_id=m.member_id,
                       assigned_partitions=self._ids(self.targets[m.member_id]))
            self._current(t, m, m.epoch)
            return m
        self.members[m.member_id] = m
        self._metadata(t, m)
        self._retarget(t)
        return m

    def _remove(self, t: int, m: _Member) -> None:
        del self.members[m.member_id]
        for record in ("CURRENT_MEMBER_ASSIGNMENT", "TARGET_ASSIGNMENT_MEMBER", "MEMBER_METADATA"):
            self.write(t, f"CONSUMER_GROUP_{record}_TOMBSTONE", member_id=m.member_id)

    def leave(self, t: int, m: _Member) -> None:
        self.advance_to(t)
        if m.member_id not in self.members:
            return
        self._remove(t, m)
        self.targets.pop(m.member_id, None)
        self._retarget(t)

    def heartbeat(self, t: int, m: _Member) -> bool:
        """The member's heartbeat at `t`: one step of its reconciliation, if it has one. True
        when the member is told to revoke: it acknowledges with a heartbeat as soon as it has
        (Kafka's clients do not wait for the interval then)."""
        self.advance_to(t)
        target = self.targets.get(m.member_id, frozenset())
        previous = m.epoch
        if m.pending:  # revoked since its last heartbeat: acknowledged now
            m.pending = frozenset()
        elif m.epoch != self.group_epoch and m.assigned - target:
            m.pending, m.assigned, m.state = m.assigned - target, m.assigned & target, UNREVOKED
            self._current(t, m, previous)
            return True
        elif m.epoch == self.group_epoch and m.state == STABLE:
            return False
        held = {tp for o in self.members.values() if o is not m for tp in o.assigned | o.pending}
        assigned = frozenset(target - held)
        state = STABLE if assigned == target else UNRELEASED
        if (m.epoch, m.state, m.assigned) != (self.group_epoch, state, assigned):
            m.epoch, m.state, m.assigned = self.group_epoch, state, assigned
            self._current(t, m, previous)
        return False

    def expire(self, t: int) -> None:
        """Members silent for a whole session are removed, as Kafka's session timer does."""
        for m in list(self.members.values()):
            ends = None if m.silent_since is None else m.silent_since + self.session_ms
            if ends is not None and t >= ends:
                self.expelled += 1
                self.leave(ends, m)


def assign(assignor: str, members: dict[str, tuple[str, ...]], partitions: dict[str, int],
           previous: dict[str, frozenset[TP]]) -> dict[str, frozenset[TP]]:
    """The target assignment of `members` (member id -> subscribed topics)."""
    order = sorted(members)
    result: dict[str, set[TP]] = {m: set() for m in order}
    if assignor == "range":
        for topic in sorted(partitions):
            subs = [m for m in order if topic in members[m]]
            if not subs:
                continue
            n, extra = divmod(partitions[topic], len(subs))
            start = 0
            for i, m in enumerate(subs):
                size = n + (1 if i < extra else 0)
                result[m] |= {(topic, p) for p in range(start, start + size)}
                start += size
        return {m: frozenset(tps) for m, tps in result.items()}
    every = sorted((t, p) for t, n in partitions.items() for p in range(n)
                   if any(t in topics for topics in members.values()))
    if not order:
        return {}
    quota, extra = divmod(len(every), len(order))
    # Sticky: each keeps what it had, up to its share (the first `extra` by load may hold one
    # more); the rest goes to the least loaded, in member id order.
    taken: set[TP] = set()
    for m in sorted(order, key=lambda m: (-len(previous.get(m, ())), m)):
        cap = quota + (1 if extra > 0 else 0)
        kept = sorted(tp for tp in previous.get(m, ()) if tp in every and tp[0] in members[m]
                      and tp not in taken)[:cap]
        if len(kept) > quota:
            extra -= 1
        result[m] |= set(kept)
        taken |= set(kept)
    for tp in (tp for tp in every if tp not in taken):
        eligible = [m for m in order if tp[0] in members[m]]
        if eligible:
            result[min(eligible, key=lambda m: (len(result[m]), m))].add(tp)
    return {m: frozenset(tps) for m, tps in result.items()}


@dataclass
class PlayedConsumer:
    outputs: Outputs
    owners: dict[str, tuple[TP, ...]]
    until: int
    expelled: int


def simulate_consumer(script: Script, assignor: str, static_membership: bool | None,
                      session_ms: int | None, config: CoordinatorConfig,
                      heartbeat_ms: int = HEARTBEAT_MS, warm_up_ms: int = 30_000
                      ) -> PlayedConsumer:
    """The script's consumers under the consumer protocol with the broker's `assignor`."""
    co = _Coordinator(script.group_id, dict(script.partitions), assignor,
                      session_ms or SESSION_MS, config)
    co.last = script.start - warm_up_ms
    deadline = script.end + (0 if script.heartbeats else co.session_ms)  # as `simulate`
    plan: Schedule[Life] = Schedule(script.end, deadline)
    for life in script.lives:
        plan.at(life.started_at - warm_up_ms if life.before_window else life.started_at,
                "start", life)
        if life.ended_at is not None:
            plan.at(life.ended_at, life.ending or LEAVE, life)
    member: dict[int, _Member] = {}  # id(life) -> its member
    for t, what, life in plan.run("beat", lambda: _settled(co)):
        co.expire(t)
        static = life.static if static_membership is None else static_membership
        if what == "start":
            joined = member[id(life)] = co.join(t, life, static)
            revoking = co.heartbeat(t, joined)  # the joining heartbeat: its first assignment
            plan.at(t + (RESPONSE_MS if revoking else heartbeat_ms), "beat", life)
        elif what == "beat":
            beating = member.get(id(life))
            if beating is not None and beating.silent_since is None \
                    and beating.member_id in co.members:
                revoking = co.heartbeat(t, beating)
                plan.at(t + (RESPONSE_MS if revoking else heartbeat_ms), "beat", life)
        else:  # LEAVE or CRASH
            gone = member.pop(id(life))
            if what == LEAVE and not static:
                co.leave(t, gone)
            else:
                assert what in (LEAVE, CRASH)
                gone.silent_since = t
    co.expire(plan.until)
    co.advance_to(plan.until)
    owners = {m.client: tuple(sorted(m.assigned)) for m in co.members.values()
              if m.silent_since is None}
    return PlayedConsumer(co.outputs, owners, plan.until, co.expelled)


def _settled(co: _Coordinator) -> bool:
    return all(m.epoch == co.group_epoch and m.state == STABLE and not m.pending
               for m in co.members.values() if m.silent_since is None)
