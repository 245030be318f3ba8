"""A script's clients played against the fold again, as Kafka's consumers would play them.

The generator's simulated consumers (`pipeline.generator.clients.GroupSim`) already speak the
classic protocol to the fold: two-phase joins, the leader's assignment by the group's
assignor (Kafka's own, `pipeline.generator.assignors`), syncs, heartbeats, cooperative second
rounds, static members. Here they act on a script instead of dice: each client starts, stops
cleanly, dies or changes its subscription when its recorded life did, and otherwise does what
a healthy KafkaConsumer does: a heartbeat every `heartbeat.interval.ms` (no log records it:
Kafka's default of 3 s unless the caller knows better), an answer to the coordinator within
`RESPONSE_MS` while a rebalance runs. From a records-only log, where a member shows only when
the rebalance it caused completes, a rebalance under way when the window ends is played to
its end (no scripted action is), within the longest rebalance timeout; a journal's window
ends where it ends, as the recorded run does.

What changes between runs is only the configuration (`Change`): the assignor, static
membership, the members' session and rebalance timeouts, the broker's initial delay. A static
consumer does not send LeaveGroup when it stops (KIP-345: it stays a member until its session
expires, so a restart within the session costs no rebalance); a dynamic one does.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields, replace

from pipeline.fold import CoordinatorConfig
from pipeline.fold.context import Outputs
from pipeline.fold.states import EMPTY, STABLE
from pipeline.generator.clients import Client, GroupSim
from pipeline.generator.producers import build_producers, consumer_pace
from pipeline.whatif.consumer import simulate_consumer
from pipeline.whatif.schedule import Schedule
from pipeline.whatif.script import CRASH, LEAVE, Life, Script, WhatIfError

HEARTBEAT_MS = 3_000  # heartbeat.interval.ms, Kafka's default
RESPONSE_MS = 100  # a client's turn-around while a rebalance waits on it
# Members present when the window opens start this long before it, so that the group has
# formed (its initial delay run out, its first assignment synced) when counting starts.
WARM_UP_MS = 30_000


@dataclass(frozen=True)
class Change:
    """The configuration a what-if runs under; None keeps what was recorded."""

    assignor: str | None = None
    static_membership: bool | None = None
    protocol: str | None = None  # classic or consumer (KIP-848); None: classic, as recorded
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None
    initial_rebalance_delay_ms: int | None = None

    def describe(self) -> str:
        said = [f"{k}={v}" for k, v in vars(self).items() if v is not None]
        return ", ".join(said) or "as recorded"

    @classmethod
    def parse(cls, text: str) -> Change:
        """`describe`'s text back: `assignor=cooperative-sticky, static_membership=true`
        (the SQL function's second argument); empty or `as recorded` changes nothing."""
        values: dict[str, object] = {}
        kinds = {f.name: f.type for f in fields(cls)}
        for part in filter(None, (p.strip() for p in text.split(","))):
            if part == "as recorded":
                continue
            key, sep, value = (x.strip() for x in part.partition("="))
            if not sep or key not in kinds:
                raise WhatIfError(f"{part!r}: a change is name=value, the names "
                                  f"{', '.join(kinds)}")
            if "bool" in str(kinds[key]):
                if value.lower() not in ("true", "false"):
                    raise WhatIfError(f"{key} is true or false, got {value!r}")
                values[key] = value.lower() == "true"
            elif "int" in str(kinds[key]):
                try:
                    values[key] = int(value)
                except ValueError:
                    raise WhatIfError(f"{key} is a whole number of ms, got {value!r}") from None
            else:
                values[key] = value
        return cls(**values)  # type: ignore[arg-type]


class _ScriptedSim(GroupSim):
    """GroupSim whose clients do only what the script says, and that keeps every output row."""

    outputs: Outputs
    heartbeat_ms: int = HEARTBEAT_MS

    def _keep(self, out: Outputs, after_request: bool) -> None:
        super()._keep(out, after_request)
        self.outputs.extend(out)

    def act(self, c: Client, t: int) -> int:
        self.advance_to(t)
        self.turn(c, t)
        m = self.group.member(c.member_id)
        waiting = m is None or self.group.state != STABLE
        return t + (RESPONSE_MS if waiting else self.heartbeat_ms)

    def _steady(self, c: Client, t: int) -> None:
        """A healthy consumer's turn in a Stable group: take a new assignment, or heartbeat."""
        m = self.group.member(c.member_id)
        assert m is not None
        if set(m.assignment) != set(c.owned):
            self._adopt(c, t)
        else:
            self.send("HEARTBEAT", t, member_id=c.member_id, group_instance_id=c.instance,
                      generation_id=self.group.generation_id)


@dataclass
class Played:
    outputs: Outputs  # every row the fold wrote
    owners: dict[str, tuple[tuple[str, int], ...]]  # client -> what it owns at the end
    until: int  # when the run ended: the window's end, or the end of a rebalance under way
    expelled: int | None = None  # members removed by a timer, where the rows do not say


def simulate(script: Script, change: Change, config: CoordinatorConfig,
             heartbeat_ms: int = HEARTBEAT_MS) -> Played:
    """Every row the fold writes while the script's clients live their lives under `change`
    (the assignor, when not changed, the one the group ran under), and who owns what at the
    window's end. Under the consumer protocol, `pipeline.whatif.consumer` plays them."""
    if change.protocol == "consumer":
        played = simulate_consumer(script, change.assignor or "uniform",
                                   change.static_membership, change.session_timeout_ms, config)
        return Played(played.outputs, played.owners, played.until, played.expelled)
    if change.initial_rebalance_delay_ms is not None:
        config = replace(config, initial_rebalance_delay_ms=change.initial_rebalance_delay_ms)
    assignor = change.assignor or script.assignor or "range"
    clients = {name: Client(name, None, (assignor,), (), 0, 0) for name in script.clients}
    sim = _ScriptedSim(script.group_id, list(clients.values()), dict(script.partitions),
                       random.Random(0), config,
                       producers=build_producers(0, script.partitions, script.start, 1),
                       pace=consumer_pace(0, 0, 1))
    sim.outputs, sim.heartbeat_ms = Outputs(), heartbeat_ms
    sim.last_time = script.start - WARM_UP_MS
    deadline = script.end + (0 if script.heartbeats else
                             max(life.rebalance_timeout_ms for life in script.lives))
    plan: Schedule[tuple[str, object]] = Schedule(script.end, deadline)
    for life in script.lives:
        began = life.started_at - WARM_UP_MS if life.before_window else life.started_at
        plan.at(began, "start", (life.client, life))
        for t, topics in life.resubscribed:
            plan.at(t, "subscribe", (life.client, topics))
        if life.ended_at is not None:
            plan.at(life.ended_at, life.ending or LEAVE, (life.client, life))
    on: dict[str, Life] = {}
    for t, what, (name, payload) in plan.run("act", lambda: _settled(sim)):
        c = clients[name]
        if what == "start":
            assert isinstance(payload, Life)
            static = payload.static if change.static_membership is None else change.static_membership
            c.instance = name if static else None
            c.topics = payload.topics
            c.session_ms = _or(change.session_timeout_ms, payload.session_timeout_ms)
            c.rebalance_ms = _or(change.rebalance_timeout_ms, payload.rebalance_timeout_ms)
            c.member_id, c.owned = None, ()
            on[name] = payload
            plan.at(t, "act", (name, payload))
        elif what == "act" and on.get(name) is payload:
            plan.at(sim.act(c, t), "act", (name, payload))
        elif what == "subscribe" and name in on:
            assert isinstance(payload, tuple)
            c.topics = payload
            if sim.group.member(c.member_id) is not None:
                sim.rejoin(c, t)
        elif what in (LEAVE, CRASH) and on.get(name) is payload:
            del on[name]
            sim.advance_to(t)
            if what == LEAVE and c.instance is None and sim.group.member(c.member_id):
                sim.send("LEAVE", t, member_id=c.member_id)
            c.owned = ()
    sim.advance_to(plan.until)
    client = {c.member_id: name for name, c in clients.items() if name in on}
    owners = {client[m.member_id]: tuple(sorted(m.assignment)) for m in sim.group.members
              if m.member_id in client}
    return Played(sim.outputs, owners, plan.until)


def _settled(sim: GroupSim) -> bool:
    g = sim.group
    return g.rebalance is None and g.state in (STABLE, EMPTY) and not g.pending_sync


def _or(changed: int | None, recorded: int) -> int:
    return recorded if changed is None else changed
