"""The golden cases: how each input log is made (only when re-freezing with `--inputs`) and
how it is replayed (coordinator settings, watermark delay, micro-batches).

Four logs come from the generator; three are written record by record with the fold tests'
factories, for what the generator never produces (offset expiry in its several forms,
transaction edge cases, tombstones, static-member fencing, snapshot mismatches; KIP-848
consumer groups; share and streams groups, some of their records as Kafka's own classes
wrote them). Several groups share one hand-written log, each on the partition Kafka maps it to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from pipeline.decode import decode_record
from pipeline.fold import CoordinatorConfig, Event
from pipeline.fold.partitioning import partition_for
from pipeline.generator import LogSpec, generate
from tests.decode import kafka_records
from tests.fold.consumer_records import ORDERS_ID, PAYMENTS_ID, UNRELEASED, UNREVOKED, ConsumerLog
from tests.fold.records import T0, Log
from tests.fold.share_records import ShareLog
from tests.fold.streams_records import UNRELEASED as STREAMS_UNRELEASED
from tests.fold.streams_records import UNREVOKED as STREAMS_UNREVOKED
from tests.fold.streams_records import StreamsLog

DAY = 86_400_000
TEN_MINUTES = 600_000


@dataclass(frozen=True)
class Case:
    name: str
    about: str
    make: Callable[[], list[Event]]
    source: str
    config: CoordinatorConfig = CoordinatorConfig()
    delay_ms: int = TEN_MINUTES
    batches: int = 1  # micro-batches the stored log is cut into, in its stored order
    covers: tuple[str, ...] = ()  # features (coverage.REQUIRED) the case must keep showing


def _generated(spec: LogSpec) -> tuple[Callable[[], list[Event]], str]:
    shown = ", ".join(f"{k}={v!r}" for k, v in vars(spec).items() if k != "config")
    return (lambda: generate(spec)), f"pipeline.generator.generate(LogSpec({shown}))"


SHORT_RETENTION = CoordinatorConfig(offsets_retention_ms=120_000,
                                    offsets_retention_check_interval_ms=15_000)


def _merged(*logs: Log) -> list[Event]:
    """Several groups' logs as one, in time order (each keeps its partition and offsets)."""
    events = [e for log in logs for e in log.events]
    return sorted(events, key=lambda e: (e.event_time, e.log_partition, e.log_offset))


def classic_by_hand() -> list[Event]:
    retired = Log("retired").stable_group("a-1", "b-2")
    retired.commit("orders", 0, 50, member="a-1", generation=1)
    retired.commit("orders", 1, 60, member="b-2", generation=1)
    retired.at(10_000).leave("a-1")
    retired.leave("b-2")  # Empty at T0+10s: offsets expire a week later, then the group dies

    simple = Log("simple")
    simple.commit("orders", 0, 5)
    simple.commit("orders", 1, 6, metadata="m" * 5000)  # OFFSET_METADATA_TOO_LARGE
    simple.at(3 * DAY).commit("orders", 1, 7)  # expires from its own commit time
    simple.commit("orders", 2, 8, member="ghost", generation=4)  # generation to a simple group

    explicit = Log("explicit").stable_group("a-1")
    explicit.commit("orders", 0, 5, member="a-1", generation=1, expire=T0 + 20_000)
    explicit.commit("orders", 1, 5, member="a-1", generation=7)  # ILLEGAL_GENERATION
    for t in range(14_000, 40_000, 5_000):
        explicit.at(t).heartbeat("a-1", 1)  # then silence: the session times out

    txn = Log("txn")
    txn.commit("orders", 0, 3)
    txn.commit("orders", 0, 9, producer_id=77)
    txn.marker(77, "ABORT")
    txn.commit("orders", 1, 5, producer_id=78)
    txn.commit("orders", 1, 8)  # newer plain commit: the marker must not go back to 5
    txn.marker(78, "COMMIT")
    txn.commit("orders", 2, 4, producer_id=79)
    txn.add("OFFSET_TOMBSTONE", topic="orders", partition=2)  # drops the pending offset too
    txn.commit("orders", 3, 11, producer_id=80)  # never resolved: blocks expiry for good

    records = Log("records")
    records.snapshot(2, {"a-1": [("orders", 0)], "b-2": [("orders", 1)]})
    records.commit("orders", 0, 5, generation=None)
    records.commit("orders", 1, 6, generation=None)
    records.at(1_000).snapshot(3, {"a-1": [("orders", 0), ("orders", 1)]})
    records.add("OFFSET_TOMBSTONE", topic="orders", partition=1)
    records.add("OFFSET_TOMBSTONE", topic="gone", partition=0)
    records.at(2_000).add("GROUP_TOMBSTONE")  # the offset outlives the group

    static = Log("static")
    static.join("a-1", new=True, instance="inst-a")
    static.join("b-2", new=True, instance="inst-b")
    static.at(9_000).sync("a-1", 1, {"a-1": [("orders", 0)], "b-2": [("orders", 1)]})
    static.sync("b-2", 1)
    static.at(10_000).join("b-9", new=True, instance="inst-b")  # restarted: fences b-2
    static.heartbeat("b-2", 1)
    static.add("HEARTBEAT", member_id="b-2", generation_id=1, group_instance_id="inst-b")
    static.at(11_000).leave("", instance="inst-a")  # admin removal by instance id
    static.leave("", instance="inst-unknown")

    mismatch = Log("mismatch").stable_group("a-1", "b-2")
    mismatch.snapshot(3, {"a-1": [("orders", 0)]})

    clock = Log("clock")
    clock.at(9 * DAY).commit("orders", 0, 1)  # moves the watermark past the week
    return _merged(retired, simple, explicit, txn, records, static, mismatch, clock)


def _two_member(log: ConsumerLog) -> ConsumerLog:
    log.stable_with("a-1")
    log.at(10_000)
    log.joins("b-2", 2, {"a-1": {ORDERS_ID: [0, 1]}, "b-2": {ORDERS_ID: [2, 3]}})
    log.current("b-2", 2, {}, state=UNRELEASED, previous=0)
    log.current("a-1", 1, {ORDERS_ID: [0, 1]}, state=UNREVOKED, previous=0,
                pending={ORDERS_ID: [2, 3]})
    log.at(12_000)
    log.current("a-1", 2, {ORDERS_ID: [0, 1]}, previous=1)
    log.current("b-2", 2, {ORDERS_ID: [2, 3]}, previous=0)
    return log


def kip848_by_hand() -> list[Event]:
    moving = _two_member(ConsumerLog("cg-moving"))
    moving.record_commit("orders", 0, 42)
    moving.add("OFFSET_COMMIT", member_id="a-1", generation_id=2, topic="orders", partition=1,
               committed_offset=7)
    moving.add("OFFSET_COMMIT", member_id="a-1", generation_id=0, topic="orders", partition=1,
               committed_offset=8)  # STALE_MEMBER_EPOCH
    moving.add("OFFSET_COMMIT", member_id="zz-9", generation_id=2, topic="orders", partition=1,
               committed_offset=9)  # UNKNOWN_MEMBER_ID
    moving.add("OFFSET_COMMIT", member_id="a-1", generation_id=2, topic="orders", partition=2,
               committed_offset=9, api_version=8)  # UNSUPPORTED_VERSION
    moving.add("OFFSET_COMMIT", member_id="a-1", generation_id=2, topic="old", partition=0,
               committed_offset=1)  # not subscribed: expires while the group is Stable
    moving.at(20_000)
    moving.leaves("b-2")
    moving.epoch(3)
    moving.target("a-1", {ORDERS_ID: [0, 1, 2, 3]})
    moving.target_epoch(3)
    moving.current("a-1", 3, {ORDERS_ID: [0, 1, 2, 3]}, previous=2)
    moving.join("a-1", new=True)  # a classic request to a consumer group
    moving.add("CONSUMER_GROUP_METADATA", group_epoch=-3)  # malformed
    moving.tombstone("MEMBER_METADATA", "a-1")  # before its assignment tombstones: malformed

    deleted = ConsumerLog("cg-deleted")
    deleted.stable_with("a-1")
    deleted.add("OFFSET_COMMIT", member_id="a-1", generation_id=1, topic="orders", partition=0,
                committed_offset=3)
    deleted.tombstone("METADATA")  # members remain: malformed
    deleted.at(5_000)
    deleted.deleted(("a-1",))

    regex = ConsumerLog("cg-regex")
    regex.member("a-1", topics=(), regex="pay.*")
    regex.regex("pay.*", ("payments",))
    regex.partition_metadata((PAYMENTS_ID,))
    regex.epoch(1)
    regex.target("a-1", {PAYMENTS_ID: [0, 1]})
    regex.target_epoch(1)
    regex.current("a-1", 1, {PAYMENTS_ID: [0, 1]})
    regex.at(3_000)
    regex.tombstone("REGULAR_EXPRESSION")
    regex.events[-1] = replace(regex.events[-1], regular_expression="pay.*")

    upgraded = ConsumerLog("cg-upgraded")
    upgraded.snapshot(3, {"a-1": [("orders", 0)]})
    upgraded.record_commit("orders", 0, 1)
    upgraded.epoch(1)  # a live classic group: malformed
    upgraded.at(1_000).add("GROUP_TOMBSTONE")
    upgraded.stable_with("a-1")
    upgraded.at(2_000).snapshot(5, {"a-1": [("orders", 0)]})  # and back to classic

    emptied = ConsumerLog("cg-emptied")
    emptied.stable_with("a-1")
    emptied.add("OFFSET_COMMIT", member_id="a-1", generation_id=1, topic="orders", partition=0,
                committed_offset=1)
    emptied.leaves("a-1")  # Empty: its offsets expire, then it dies

    abandoned = ConsumerLog("cg-abandoned")
    abandoned.joins("a-1", 1, {"a-1": {ORDERS_ID: [0, 1, 2, 3]}})
    abandoned.add("GROUP_TOMBSTONE")

    clock = Log("clock")
    clock.at(9 * DAY).commit("orders", 0, 1)
    return _merged(moving, deleted, regex, upgraded, emptied, abandoned, clock)


def _kafka_written(group: str, names: list[str], at_ms: int) -> list[Event]:
    """Records Kafka's own classes wrote (tests/decode/kafka_records.json), decoded, in
    `group`'s log a millisecond apart from T0 + `at_ms`."""
    records = kafka_records.records()
    return [Event.from_row({**decode_record(*records[name]), "group_id": group,
                            "log_partition": partition_for(group), "log_offset": i,
                            "event_time": T0 + at_ms + i})
            for i, name in enumerate(names)]


def share_streams_by_hand() -> list[Event]:
    """Share and streams groups: members join, tasks move through revocation, a member
    leaves, a group is deleted in Kafka's order, refused records and commits; the values the
    tables add for them (state partitions, topology, tasks, group types) are frozen."""
    shared = ShareLog("sg-queue")
    shared.stable_with("a-1")
    shared.at(5_000).joins("b-2", 2, {"a-1": {ORDERS_ID: [0, 1, 2, 3]},
                                      "b-2": {ORDERS_ID: [0, 1, 2, 3]}})
    shared.state_partitions(initializing={PAYMENTS_ID: [0, 1]}, initialized={ORDERS_ID: [0, 1, 2, 3]})
    shared.commit("orders", 0, 7, generation=None)  # a share group takes no offsets
    shared.tombstone("METADATA")  # members remain: malformed
    shared.at(8_000).leaves("b-2")
    shared.epoch(3)

    gone = ShareLog("sg-deleted")
    gone.stable_with("a-1")
    gone.at(4_000).deleted(("a-1",))

    app = StreamsLog("wordcount")
    app.commit("words", 0, 3)  # a simple classic group, which the streams records replace
    app.stable_with("m-1")
    app.member("m-1", endpoint=("app-host", 8080), tags=(("zone", "eu-1"),))
    half, other = {"0": [0, 1], "1": [0, 1]}, {"0": [2, 3], "1": [2, 3]}
    app.at(10_000).joins("m-2", 2, {"m-1": half, "m-2": other}, process="p-2")
    app.current("m-2", 2, {}, state=STREAMS_UNRELEASED, previous=0)
    app.current("m-1", 1, half, state=STREAMS_UNREVOKED, previous=0, pending_active=other)
    app.commit("words", 1, 9, member="m-1", generation=1)  # in its epoch: taken
    app.commit("words", 2, 4, member="m-1", generation=0)  # STALE_MEMBER_EPOCH
    app.at(12_000).current("m-1", 2, half, previous=1)
    app.current("m-2", 2, other, previous=0)
    app.at(20_000).deleted(("m-1", "m-2"))  # its offsets outlive it: Empty, classic

    ready = StreamsLog("not-ready")
    ready.topology()
    ready.member("m-1")
    ready.epoch(1, validated=-1)  # as a Kafka 4.1 log reads: NotReady
    ready.add("STREAMS_GROUP_TOPOLOGY_TOMBSTONE")

    clock = Log("clock")
    clock.at(9 * DAY).commit("orders", 0, 1)
    kafka = Log("kafka-written")
    kafka.events = (_kafka_written("kafka-share", _SHARE_LIFE, 30_000)
                    + _kafka_written("kafka-streams", _STREAMS_LIFE, 30_000))
    return _merged(shared, gone, app, ready, kafka, clock)


# What Kafka's classes wrote for a share group and a streams group (group-coordinator 4.2.1).
_SHARE_LIFE = ["share_member_no_rack", "share_metadata", "share_state_partitions",
               "share_target_member", "share_target_metadata", "share_current"]
_STREAMS_LIFE = ["streams_topology", "streams_member_nulls", "streams_metadata_tags",
                 "streams_target_member", "streams_target_metadata", "streams_current"]


def _case(name: str, about: str, spec: LogSpec, **run: object) -> Case:
    make, source = _generated(spec)
    return Case(name, about, make, source, config=spec.config, **run)  # type: ignore[arg-type]


CASES: tuple[Case, ...] = (
    _case("journal-bad-rows",
          "a journal log: static members, cooperative and eager assignors, transactional "
          "commits that commit and abort, malformed rows and duplicate deliveries",
          LogSpec(groups=16, events=8000, seed=5, log_kind="journal", bad_rows=0.03),
          covers=("journal log", "malformed rows", "unsupported records", "duplicate rows",
                  "static members", "cooperative assignor", "eager assignor",
                  "transaction committed", "transaction aborted", "session timeout")),
    _case("offsets-topic-bad-rows",
          "an offsets-topic log (records only, no timers): snapshots, transactional commits, "
          "malformed rows and duplicate deliveries",
          LogSpec(groups=16, events=8000, seed=4, log_kind="offsets-topic", bad_rows=0.03),
          covers=("offsets-topic log", "malformed rows", "unsupported records",
                  "duplicate rows", "cooperative assignor", "transaction committed",
                  "transaction aborted")),
    _case("journal-out-of-order-4-batches",
          "a journal log with rows delivered late, replayed in four micro-batches under a "
          "30-second watermark delay: rows behind their group's position are OUT_OF_ORDER, "
          "rows behind the watermark counted late, timers fired at each batch's watermark",
          LogSpec(groups=12, events=6000, seed=2, log_kind="journal", bad_rows=0.02,
                  out_of_order=0.01),
          batches=4, delay_ms=30_000,
          covers=("journal log", "out-of-order rows", "late rows", "duplicate rows",
                  "malformed rows", "refused requests", "static members",
                  "cooperative assignor")),
    _case("journal-short-retention",
          "a journal log under a two-minute offset retention and a one-minute watermark delay: "
          "offsets of topics a Stable group no longer subscribes to expire, with transactions",
          LogSpec(groups=3, events=8000, seed=7, log_kind="journal", config=SHORT_RETENTION),
          delay_ms=60_000,
          covers=("journal log", "offset expiry", "static members", "transaction committed",
                  "transaction aborted")),
    Case("classic-by-hand",
         "classic groups written record by record: a group emptied then expired and dead, "
         "simple-group expiry from the commit, an explicit expire timestamp, session expiry, "
         "transactions (abort, commit under a newer commit, tombstoned, pending forever), "
         "records-only snapshots and tombstones, static fencing and admin removal, a snapshot "
         "mismatch; a last commit nine days on moves the watermark past the retention",
         classic_by_hand, "tests.golden.cases.classic_by_hand",
         covers=("offset expiry", "offset tombstone", "transaction committed",
                 "transaction aborted", "static members", "refused requests",
                 "snapshot mismatch", "session timeout", "group dead")),
    Case("kip848-by-hand",
         "KIP-848 consumer groups written record by record: join, revocation, leave, epoch "
         "checks on commits, expiry of an unsubscribed topic and of an emptied group, regex "
         "subscription, group deletion, online upgrade and back, malformed records",
         kip848_by_hand, "tests.golden.cases.kip848_by_hand",
         covers=("KIP-848 records", "offset expiry", "malformed rows", "unsupported records",
                 "refused requests", "group dead")),
    Case("share-streams-by-hand",
         "share and streams groups written record by record and as Kafka's classes wrote "
         "them: joins, a share member leaving, streams tasks moving through revocation, a "
         "topology never validated, deletion in Kafka's order with the streams group's "
         "offsets outliving it, refused records and commits",
         share_streams_by_hand, "tests.golden.cases.share_streams_by_hand",
         covers=("share records", "streams records", "malformed rows", "refused requests",
                 "offset expiry", "group dead")),
)
