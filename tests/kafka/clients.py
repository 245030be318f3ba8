"""Real Kafka clients (confluent-kafka / librdkafka) driving consumer groups on a real broker,
and what the broker itself says about them afterwards. Every wait polls with a deadline."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from pipeline.decode.primitives import uuid_to_text

TOPIC = "orders"
OUT_TOPIC = "orders-out"
PARTITIONS = 3
PER_PARTITION = 40
T = TypeVar("T")


def until(what: str, probe: Callable[[], T | None], timeout_s: float = 60.0,
          every_s: float = 0.2) -> T:
    """Call `probe` until it returns something truthy; fail naming `what` after the deadline."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except KafkaException as exc:  # a coordinator still loading, say: ask again
            last = exc
        else:
            if last:
                return last
        time.sleep(every_s)  # the pause between polls of a deadline loop, not a race cover
    raise TimeoutError(f"{what}: not true after {timeout_s:.0f}s (last: {last!r})")


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topics(bootstrap: str) -> None:
    client = admin(bootstrap)  # kept referenced: the futures die with their client
    futures = client.create_topics(
        [NewTopic(TOPIC, PARTITIONS, 1), NewTopic(OUT_TOPIC, 1, 1)], operation_timeout=30)
    for f in futures.values():
        f.result(60)


def produce(bootstrap: str) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for part in range(PARTITIONS):
        for i in range(PER_PARTITION):
            p.produce(TOPIC, key=f"k{i}".encode(), value=f"order {part}-{i}".encode(),
                      partition=part)
    assert p.flush(30) == 0


def consumer_conf(bootstrap: str, group: str, **extra: Any) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "client.id": f"{group}-client",
    }
    if extra.get("group.protocol") != "consumer":  # classic-only settings
        conf.update({"session.timeout.ms": 30_000, "heartbeat.interval.ms": 1000})
    # Consumers kept open while Spark ingests and replays never poll again: let them stay.
    conf["max.poll.interval.ms"] = 900_000
    conf.update(extra)
    return conf


def poll_until_assigned(c: Consumer, want: int, timeout_s: float = 60.0) -> list[TopicPartition]:
    """Poll (delivering rebalances) until `c` owns exactly `want` partitions and has read some."""
    seen: list[int] = [0]

    def probe() -> list[TopicPartition] | None:
        msg = c.poll(0.2)
        if msg is not None and msg.error() is None:
            seen[0] += 1
        owned = c.assignment()
        return owned if len(owned) == want and seen[0] > 0 else None

    return until(f"{want} partitions assigned", probe, timeout_s, every_s=0)


def commit(c: Consumer, offsets: dict[int, int], metadata: str | None = None) -> None:
    tps = [TopicPartition(TOPIC, p, o) if metadata is None
           else TopicPartition(TOPIC, p, o, metadata=metadata) for p, o in offsets.items()]
    c.commit(offsets=tps, asynchronous=False)


CRASHING_CONSUMER = textwrap.dedent("""
    import sys
    from confluent_kafka import Consumer, TopicPartition
    conf = {"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "client.id": "crasher"}
    c = Consumer(conf)
    c.subscribe([sys.argv[3]])
    while True:
        m = c.poll(0.5)
        if m is not None and m.error() is None and len(c.assignment()) == int(sys.argv[4]):
            break
    c.commit(offsets=[TopicPartition(sys.argv[3], p, 7) for p in range(int(sys.argv[4]))],
             asynchronous=False)
    print("COMMITTED", flush=True)
    while True:
        c.poll(1.0)
""")


@dataclass
class Scenarios:
    """The groups a real workload leaves behind; `open` are consumers still in their group."""

    bootstrap: str
    open: list[Consumer] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    kip848_groups: list[str] = field(default_factory=list)
    kip848_error: str | None = None

    def close(self) -> None:
        for c in self.open:
            c.close()
        self.open.clear()

    def _consumer(self, group: str, **extra: Any) -> Consumer:
        c = Consumer(consumer_conf(self.bootstrap, group, **extra))
        c.subscribe([TOPIC])
        return c

    def join_commit_leave(self, group: str = "g-leave") -> None:
        c = self._consumer(group)
        poll_until_assigned(c, PARTITIONS)
        commit(c, {0: 10, 1: 11, 2: 12}, metadata="first")
        commit(c, {0: 20, 1: 21})
        c.close()  # a dynamic member leaves (LeaveGroup): the group goes Empty
        self.groups.append(group)

    def crash(self, group: str = "g-crash") -> None:
        """A consumer process killed with SIGKILL: the broker expires it after its session."""
        proc = subprocess.Popen([sys.executable, "-c", CRASHING_CONSUMER, self.bootstrap,
                                 group, TOPIC, str(PARTITIONS)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()  # blocks until it committed (or died)
            assert line.strip() == "COMMITTED", proc.stderr.read() if proc.stderr else line
        finally:
            proc.kill()
            proc.wait(30)
        until(f"{group} Empty after its member's session expired",
              lambda: group_state(self.bootstrap, group) == "Empty", timeout_s=60)
        self.groups.append(group)

    def static_rejoin(self, group: str = "g-static") -> None:
        """A static member closes without leaving and comes back under the same instance id."""
        first = self._consumer(group, **{"group.instance.id": "static-1"})
        poll_until_assigned(first, PARTITIONS)
        commit(first, {0: 3, 1: 4, 2: 5})
        old = describe(self.bootstrap, group).members[0].member_id
        first.close()  # static: no LeaveGroup, the member stays until its session ends
        second = self._consumer(group, **{"group.instance.id": "static-1"})
        poll_until_assigned(second, PARTITIONS)
        commit(second, {0: 6})
        until(f"{group} has the rejoined static member",
              lambda: [m.member_id for m in describe(self.bootstrap, group).members]
              not in ([], [old]))
        self.open.append(second)
        self.groups.append(group)

    def cooperative(self, group: str = "g-coop") -> None:
        """cooperative-sticky: a second member joins (incremental rebalance), then leaves."""
        strategy = {"partition.assignment.strategy": "cooperative-sticky"}
        a = self._consumer(group, **strategy, **{"client.id": "coop-a"})
        poll_until_assigned(a, PARTITIONS)
        commit(a, {0: 1, 1: 1, 2: 1})
        b = self._consumer(group, **strategy, **{"client.id": "coop-b"})

        def split() -> bool:
            a.poll(0.1)
            b.poll(0.1)
            return (len(a.assignment()) + len(b.assignment()) == PARTITIONS
                    and len(b.assignment()) > 0 and len(describe(self.bootstrap, group).members) == 2
                    and group_state(self.bootstrap, group) == "Stable")

        until(f"{group} split between two members", split, every_s=0)
        commit(b, {tp.partition: 30 for tp in b.assignment()})
        b.close()
        poll_until_assigned(a, PARTITIONS)
        until(f"{group} Stable with one member",
              lambda: group_state(self.bootstrap, group) == "Stable"
              and len(describe(self.bootstrap, group).members) == 1)
        commit(a, {tp.partition: 33 for tp in a.assignment() if tp.partition == 0})
        self.open.append(a)
        self.groups.append(group)

    def transactional(self, group: str, abort: bool) -> None:
        """Offsets committed through a producer's transaction (send_offsets_to_transaction)."""
        c = self._consumer(group, **{"isolation.level": "read_committed"})
        poll_until_assigned(c, PARTITIONS)
        commit(c, {0: 5, 1: 5, 2: 5})  # a plain commit first, which an abort must leave
        p = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": f"txn-{group}"})
        p.init_transactions(30)
        p.begin_transaction()
        p.produce(OUT_TOPIC, value=b"derived")
        p.send_offsets_to_transaction([TopicPartition(TOPIC, q, 25) for q in range(PARTITIONS)],
                                      c.consumer_group_metadata(), 30)
        if abort:
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)
        c.close()
        self.groups.append(group)

    def kip848(self, group: str = "g-848") -> None:
        """A consumer on the KIP-848 protocol (group.protocol=consumer), kept in its group."""
        try:
            c = self._consumer(group, **{"group.protocol": "consumer"})
        except KafkaException as exc:
            self.kip848_error = str(exc)
            return
        poll_until_assigned(c, PARTITIONS)
        commit(c, {0: 8, 1: 9, 2: 10})
        until(f"{group} Stable", lambda: group_state(self.bootstrap, group) == "Stable")
        self.open.append(c)
        self.kip848_groups.append(group)


@contextmanager
def run_scenarios(bootstrap: str) -> Iterator[Scenarios]:
    create_topics(bootstrap)
    produce(bootstrap)
    s = Scenarios(bootstrap)
    try:
        s.join_commit_leave()
        s.crash()
        s.static_rejoin()
        s.cooperative()
        s.transactional("g-txn-commit", abort=False)
        s.transactional("g-txn-abort", abort=True)
        s.kip848()
        yield s
    finally:
        s.close()


# ---- what the broker says -------------------------------------------------------------------

_STATES = {"PREPARING_REBALANCING": "PreparingRebalance",
           "COMPLETING_REBALANCING": "CompletingRebalance",
           "STABLE": "Stable", "EMPTY": "Empty", "DEAD": "Dead", "UNKNOWN": "Unknown"}


def describe(bootstrap: str, group: str) -> Any:
    client = admin(bootstrap)
    return client.describe_consumer_groups([group])[group].result(30)


def group_state(bootstrap: str, group: str) -> str:
    """Kafka's name for the group's state (librdkafka's enum spells them differently)."""
    state = describe(bootstrap, group).state
    return _STATES.get(getattr(state, "name", str(state)), str(state))


def _kafka_text(u: Any) -> str:
    """Kafka's `Uuid.toString()` (URL-safe base64): librdkafka's `str(Uuid)` uses the standard
    alphabet ('+', '/'), so the two disagree on about half of all ids."""
    raw = b"".join((bits & (2**64 - 1)).to_bytes(8, "big") for bits in
                   (u.get_most_significant_bits(), u.get_least_significant_bits()))
    return uuid_to_text(raw)


def topic_names(bootstrap: str) -> dict[str, str]:
    """Topic id (as Kafka and the decoder write it) -> topic name, as DescribeTopics answers."""
    client = admin(bootstrap)
    found = client.describe_topics(TopicCollection([TOPIC, OUT_TOPIC]))
    return {_kafka_text(d.topic_id): d.name for d in (f.result(30) for f in found.values())}


def _fetched(bootstrap: str, group: str) -> list[Any]:
    client = admin(bootstrap)
    result = client.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)])[group].result(30)
    return [tp for tp in result.topic_partitions if tp.offset >= 0]


def broker_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], tuple[int, str]]:
    """(topic, partition) -> (offset, metadata), as the broker's OffsetFetch answers."""
    return {(tp.topic, tp.partition): (tp.offset, tp.metadata or "")
            for tp in _fetched(bootstrap, group)}


def broker_positions(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """(topic, partition) -> offset, the metadata left unread: under confluent-kafka 2.16 a
    Kafka Streams commit's metadata (a 12-character base64 timestamp) once came back with a
    stray byte after it and failed to decode as UTF-8, though Kafka wrote valid UTF-8."""
    return {(tp.topic, tp.partition): tp.offset for tp in _fetched(bootstrap, group)}


@dataclass(frozen=True)
class BrokerMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: tuple[tuple[str, int], ...]


def broker_group(bootstrap: str, group: str) -> tuple[str, tuple[BrokerMember, ...]]:
    d = describe(bootstrap, group)
    members = tuple(sorted(
        (BrokerMember(m.member_id, m.group_instance_id, m.client_id, m.host,
                      tuple(sorted((tp.topic, tp.partition)
                                   for tp in m.assignment.topic_partitions)))
         for m in d.members), key=lambda m: m.member_id))
    return group_state(bootstrap, group), members
