"""A live consumer-lag workload on a real broker: one topic produced to at a steady rate for the
whole run, and five consumer groups on it, each driven by its own thread on a fixed tick and
committing explicit offsets (what it has read), shaped so Burrow's rules (`pipeline.lag.rules`)
give each its own verdict: `healthy` reads everything available (OK), `slowed` a tenth of what
was produced (WARN), `stopped` reads slowly for a few ticks and closes (STOP, its group Empty),
`rewinding` reads everything, then goes back to offset 0 and reads slowly (REWIND), and
`rebalancing` reads everything while a second member joins and leaves over and over (cause
REBALANCE). The ticks are the workload's pace: each thread waits on the run's stop event
between them, so it ends promptly.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewTopic, OffsetSpec

from tests.kafka.clients import admin, group_state, until

log = logging.getLogger("lag-workload")

TOPIC = "lag-orders"
PARTITIONS = 2
RATE = 100  # records per second per partition
PRODUCE_EVERY_S = 0.1  # the producer's step: RATE * this records per partition per step
# Every group commits once a tick; slowed also waits for a sampler round begun since its last
# commit (see Workload._slowed). A round, a Delta MERGE sharing two cores with the stream's and
# with whatever else the machine runs, takes 0.5-20 s here, and changes within a run: with a
# sampler, a tick is ROUNDS_PER_TICK rounds of it (and TICK_S at least), so every tick has
# samples between its commits however slow the rounds get (`Workload.begin`).
TICK_S = 3.0
ROUNDS_PER_TICK = 2
# What slowed, stopped, and rewinding after its drop read of what was produced: little, so
# that slowed's commits gain less than the end offset gains between two samples, however
# close together two rounds come.
READ_SHARE = 0.1
# stopped commits on ticks 0..2, then closes. It lags from the start: a caught-up consumer
# would be STOP only once Burrow's broker window (the last 10 samples, 15-50 s here) no longer
# held an end offset at or below its last commit.
STOP_AFTER = 3
# rewinding commits offset 0 on this tick: REWIND as long as its last commit before (tick 3)
# is in the window, 9 commits on, past the workload's end (tick 10)
REWIND_AT = 4
JOIN_EVERY = 3  # rebalancing's second member joins on ticks 1, 4, 7, ... and leaves 1 tick later
GROUPS = ("healthy", "slowed", "stopped", "rewinding", "rebalancing")
MAX_POLL_INTERVAL_MS = 150_000  # slowed may wait 120 s for a sampler round between polls
# How long a tick of a group that reads everything may read: its member alone in its group
# (healthy, rewinding before its drop) reads until it has everything, however busy the cores
# (a CI run saw rewinding read too little in 1.5 s, tick after tick, and never get OK);
# rebalancing gives up after Member.read's 1.5 s, a rebalance under way.
READ_ALL_S = 60.0


def group_id(name: str) -> str:
    return f"lag-{name}"


def create_topic(bootstrap: str) -> None:
    client = admin(bootstrap)  # kept referenced: the futures die with their client
    for f in client.create_topics([NewTopic(TOPIC, PARTITIONS, 1)], operation_timeout=30).values():
        f.result(60)


def end_offsets(bootstrap: str) -> dict[int, int]:
    """Every partition's high watermark, as ListOffsets answers now."""
    client = admin(bootstrap)
    futures = client.list_offsets({TopicPartition(TOPIC, p): OffsetSpec.latest()
                                   for p in range(PARTITIONS)}, request_timeout=30)
    return {tp.partition: f.result(30).offset for tp, f in futures.items()}


class Member:
    """One consumer of a group, subscribed to the topic; reads partition by partition up to a
    target offset and commits exactly what it has read (`position`: the next offset to read)."""

    def __init__(self, bootstrap: str, group: str, client_id: str) -> None:
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "session.timeout.ms": 10_000, "heartbeat.interval.ms": 500,
            # Also the group's rebalance timeout: a rebalance the run's end cut short (a
            # member closed while another joined) ends within it, not Kafka's 5 minutes
            # later, when the next test reads __consumer_offsets. Above any tick's wait.
            "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
            "fetch.wait.max.ms": 100})  # an idle fetch answers within a tick's reading time
        self.consumer.subscribe([TOPIC])
        self.position: dict[int, int] = {}
        self.targets: dict[int, int] = {}  # where reading stops; a member without one only polls
        self.closed = False

    def assigned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def end_offsets(self) -> dict[int, int]:
        """The high watermark of every partition, asked of the broker now."""
        return {p: self.consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10,
                                                       cached=False)[1]
                for p in range(PARTITIONS)}

    def poll(self) -> set[int]:
        """One round of consuming (which also serves the group's rebalances); the partitions
        assigned after it."""
        for msg in self.consumer.consume(500, 0.1):
            p, offset = msg.partition(), msg.offset()
            if msg.error() is None and p is not None and offset is not None:
                self._take(p, offset)
        return self.assigned()

    def _take(self, p: int, offset: int) -> None:
        """A record at the position is read if the target allows; one past it means the
        fetcher ran ahead of what this member chose to read: seek back, skipping nothing."""
        if p not in self.targets:
            return
        at = self.position.get(p, 0)
        if offset == at and at < self.targets[p]:
            self.position[p] = at + 1
        elif offset > at:
            # Not fetching that partition (yet): the next record asks again.
            with contextlib.suppress(KafkaException):
                self.consumer.seek(TopicPartition(TOPIC, p, at))

    def read(self, targets: dict[int, int], timeout_s: float = 1.5) -> None:
        """Consume until every assigned partition's position reaches its target, or the time
        is up (a rebalance under way)."""
        self.targets = targets
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            owned = self.assigned()
            if owned and all(self.position.get(p, 0) >= targets.get(p, 0) for p in owned):
                return
            self.poll()

    def rewind(self, offset: int) -> None:
        """Go back to `offset` on every partition: the next record past it seeks there."""
        self.position = {p: offset for p in range(PARTITIONS)}

    def commit(self) -> bool:
        """Commit the assigned partitions' positions; False when the coordinator refused (a
        rebalance under way: the next tick commits again)."""
        offsets = [TopicPartition(TOPIC, p, self.position[p])
                   for p in sorted(self.assigned()) if p in self.position]
        if not offsets:
            return False
        try:
            self.consumer.commit(offsets=offsets, asynchronous=False)
            return True
        except KafkaException as exc:
            log.info("commit refused: %s", exc)
            return False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.consumer.close()


def read_all(m: Member, timeout_s: float = 1.5) -> None:
    """What healthy does each tick: read everything the log holds now, commit it."""
    m.read(m.end_offsets(), timeout_s)
    m.commit()


@dataclass
class Slow:
    """Reads READ_SHARE of what was produced since its last tick (at least one record)."""

    member: Member
    ends: dict[int, int] = field(default_factory=dict)

    def tick(self) -> None:
        ends = self.member.end_offsets()
        targets = {}
        for p, end in ends.items():
            share = max(1, math.ceil(READ_SHARE * (end - self.ends.get(p, end))))
            targets[p] = min(end, self.member.position.get(p, 0) + share)
        self.ends = ends
        self.member.read(targets)
        self.member.commit()


@dataclass
class Ticker:
    """A thread calling `tick(n)` every `every_s` from `start` (n = 0, 1, ...) until `stop`;
    a late tick runs at once, so the pace holds on average. With `due`, tick n also waits
    until `due(n)`."""

    name: str
    tick: Callable[[int], None]
    stop: threading.Event
    start: float
    every_s: float = TICK_S
    due: Callable[[int], bool] | None = None
    ticks: int = 0
    error: BaseException | None = None
    thread: threading.Thread | None = None

    def run(self) -> None:
        try:
            while not self.stop.wait(max(0.0, self.start + self.ticks * self.every_s
                                         - time.monotonic())):
                due = self.due
                while due is not None and not due(self.ticks):
                    if self.stop.wait(0.05):
                        return
                self.tick(self.ticks)
                self.ticks += 1
        except BaseException as exc:  # the main thread asserts there is none
            log.exception("%s failed", self.name)
            self.error = exc

    def begin(self) -> None:
        self.thread = threading.Thread(target=self.run, name=self.name, daemon=True)
        self.thread.start()


def now_ms() -> int:
    return int(time.time() * 1000)  # wall clock: compared with the samples' and the log's times


@dataclass
class Workload:
    """The running workload, and what its threads did when (wall-clock epoch ms)."""

    bootstrap: str
    stop: threading.Event = field(default_factory=threading.Event)
    members: dict[str, Member] = field(default_factory=dict)
    tickers: list[Ticker] = field(default_factory=list)
    stopped_at_ms: int | None = None  # stopped closed
    rewinding_at_ms: int | None = None  # rewinding's commit of offset 0 sent ...
    rewound_at_ms: int | None = None  # ... and answered
    rewound_from: dict[int, int] = field(default_factory=dict)  # its positions before that
    joins: int = 0  # rebalancing's second member joined ...
    leaves: int = 0  # ... and left
    # How many rounds the end-offset sampler has begun (None: no sampler to wait for).
    sample_rounds: Callable[[], int] | None = None
    tick_s: float = TICK_S  # the groups' tick (`pace` sets it from the sampler's rounds)
    finished_at_ms: int | None = None  # finish() began: every thread told to stop

    def __post_init__(self) -> None:
        self.producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        self.visitors: list[Member] = []  # rebalancing's second member, one per join

    def ticks(self) -> int:
        """Ticks healthy has taken: the workload's clock (the others may run behind it: a
        join takes rebalancing a while, slowed waits for a sample)."""
        return next((t.ticks for t in self.tickers if t.name == "healthy"), 0)

    def errors(self) -> dict[str, BaseException]:
        return {t.name: t.error for t in self.tickers if t.error is not None}

    def join(self) -> None:
        """The topic, its producer, and every group's first member assigned (the log names the
        topic from here on), no tick yet."""
        create_topic(self.bootstrap)
        self.tickers.append(Ticker("producer", self._producer(), self.stop, time.monotonic(),
                                   every_s=PRODUCE_EVERY_S))
        self.tickers[0].begin()
        # The groups start behind: slowed's first commit must lag already.
        until("a second's records produced",
              lambda: min(end_offsets(self.bootstrap).values()) >= RATE, timeout_s=30)
        self.members = {g: Member(self.bootstrap, group_id(g), f"{group_id(g)}-a") for g in GROUPS}
        until("every group's member assigned",
              lambda: all([m.poll() for m in self.members.values()]),
              timeout_s=60, every_s=0)

    def pace(self, rounds: int = 3) -> float:
        """About how long a tick will take: ROUNDS_PER_TICK of the sampler's rounds as they take
        now (TICK_S at least), for the callers' timeouts; the ticks themselves count rounds."""
        counted = self.sample_rounds
        assert counted is not None, "pace needs the sampler's rounds"
        first, begun = counted(), time.monotonic()
        until(f"{rounds} sampler rounds", lambda: counted() >= first + rounds, timeout_s=300)
        self.tick_s = max(TICK_S, ROUNDS_PER_TICK * (time.monotonic() - begun) / rounds)
        log.info("a tick is about %.1f s", self.tick_s)
        return self.tick_s

    def begin(self) -> None:
        """Every group's ticks, from now: tick n once the sampler has begun ROUNDS_PER_TICK * n
        rounds since, and TICK_S * n seconds have passed."""
        begun = time.monotonic()
        rounds = self.sample_rounds
        due = None
        if rounds is not None:
            first = rounds()
            due = lambda n: rounds() >= first + ROUNDS_PER_TICK * n  # noqa: E731
        ticks = {"healthy": self._healthy, "slowed": self._slowed, "stopped": self._stopped,
                 "rewinding": self._rewinding, "rebalancing": self._rebalancing}
        for i, g in enumerate(GROUPS):  # phases apart: the five commits do not come at once
            self.tickers.append(Ticker(g, self._staggered(ticks[g](), 0.3 * i), self.stop,
                                       begun, due=due))
            self.tickers[-1].begin()

    def _staggered(self, tick: Callable[[int], None], delay_s: float) -> Callable[[int], None]:
        """`tick` run `delay_s` after it is due: a round begun releases every group at once."""
        def run(n: int) -> None:
            if not self.stop.wait(delay_s):
                tick(n)
        return run

    def finish(self, timeout_s: float = 60.0) -> None:
        self.finished_at_ms = now_ms()
        self.stop.set()
        for t in self.tickers:
            if t.thread is not None:
                t.thread.join(timeout_s)
        for m in [*self.visitors, *self.members.values()]:
            m.close()
        self.producer.flush(30)
        # Every group Empty: the coordinator has written all it will for them, so the
        # __consumer_offsets read after this (here, and by the suite's later tests) is whole.
        until("every group of the workload Empty",
              lambda: all(group_state(self.bootstrap, group_id(g)) == "Empty" for g in GROUPS),
              timeout_s=MAX_POLL_INTERVAL_MS / 1000 + 60, every_s=1)

    def _producer(self) -> Callable[[int], None]:
        producer = self.producer
        begun = time.monotonic()
        sent = [0]

        def tick(n: int) -> None:
            due = int((time.monotonic() - begun) * RATE)  # catch up after a late step
            for i in range(sent[0], due):
                for p in range(PARTITIONS):
                    producer.produce(TOPIC, value=f"order {p}-{i}".encode(), partition=p)
            sent[0] = due
            producer.poll(0)
        return tick

    def _healthy(self) -> Callable[[int], None]:
        m = self.members["healthy"]
        return lambda n: read_all(m, READ_ALL_S)

    def _slowed(self) -> Callable[[int], None]:
        slow = Slow(self.members["slowed"], self.members["slowed"].end_offsets())
        rounds = self.sample_rounds
        seen = [-1 if rounds is None else rounds()]

        def tick(n: int) -> None:
            # Burrow's WARN wants every commit's lag (against the end offset sampled at or
            # before it) at least the previous one's: two commits with no sample between them
            # would make it drop. The sampler's rounds take seconds, more when the machine is
            # busy: slowed commits only once a round has begun since its last commit.
            if rounds is not None:
                until("a sampler round begun since slowed's last commit",
                      lambda: self.stop.is_set() or rounds() > seen[0], timeout_s=120)
            if not self.stop.is_set():
                slow.tick()
                seen[0] = -1 if rounds is None else rounds()
        return tick

    def _stopped(self) -> Callable[[int], None]:
        m = self.members["stopped"]
        slow = Slow(m, m.end_offsets())

        def tick(n: int) -> None:
            if n < STOP_AFTER:
                slow.tick()
            elif not m.closed:
                m.close()  # LeaveGroup: the group goes Empty, its offsets stay
                self.stopped_at_ms = now_ms()
        return tick

    def _rewinding(self) -> Callable[[int], None]:
        m = self.members["rewinding"]
        slow = Slow(m)

        def tick(n: int) -> None:
            if n < REWIND_AT:
                read_all(m, READ_ALL_S)
            elif n == REWIND_AT:
                self.rewound_from = dict(m.position)
                self.rewinding_at_ms = now_ms()
                m.rewind(0)
                if not m.commit():
                    raise RuntimeError("rewinding's commit of offset 0 was refused")
                self.rewound_at_ms = now_ms()
                slow.ends = m.end_offsets()
            else:
                slow.tick()
        return tick

    def _rebalancing(self) -> Callable[[int], None]:
        a = self.members["rebalancing"]
        b = self.visitors

        def tick(n: int) -> None:
            read_all(a)
            if n % JOIN_EVERY == 1:
                b.append(Member(self.bootstrap, group_id("rebalancing"), "lag-rebalancing-b"))
                until("the second member shares the partitions",
                      lambda: self.stop.is_set() or all([a.poll(), b[-1].poll()]),
                      timeout_s=30, every_s=0)
                self.joins += 1
            elif n % JOIN_EVERY == 2 and b and not b[-1].closed:
                b[-1].close()  # LeaveGroup: another rebalance
                self.leaves += 1
        return tick
