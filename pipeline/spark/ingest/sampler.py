"""The live ingest's end-offset sampler: a thread beside the stream that, every interval, asks
the cluster where each consumed topic partition's log ends and merges the answers into the
samples table (`pipeline.spark.lag.samples`, `schemas/lag.py` LOG_END_OFFSETS). The topics are
those the logs name as consumed, by the one rule `schemas/consumed.py` states for every event
type (offset commits; classic, consumer and share groups' subscriptions and assignments;
share-partition state; streams topologies' source, repartition and changelog topics): read
once from the event log and the share-state log at the first round, then added from each
micro-batch's decoded rows (`observe`), with why each is sampled. Topics the share-state log
names by id are named through the cluster's topic listing at the next round. On a log that
names no topic yet, the first round waits for the first micro-batch's rows: a run's first
round samples what it is about to write. Each round expands the topics to their
partitions with one describeTopics call (partitions without a leader are left out, since
ListOffsets would wait the whole timeout for them; a topic the cluster no longer has is
dropped; a topic whose description fails keeps the partitions last seen), then issues three
`listOffsets` calls at once, OffsetSpec latest, earliest and maxTimestamp, each of which the
Admin client sends as one request per leader broker; all three are in flight before any is
awaited. The client is Kafka's own Java Admin, already on the Spark Kafka source's classpath,
built from the ingest's consumer properties so a secured cluster needs nothing more, and
called only from the thread that runs the rounds (py4j gives each Python thread its own
connection). Every row of a round has one `sampled_at`: the wall clock as its ListOffsets
calls go out, after the round's describeTopics (on busy cores a round's start can be seconds
before the broker answers, and lag pairs the end offset with the commits as of `sampled_at`);
the MERGE on (topic, partition, sampled_at) makes a round written twice count once. A round never
raises: a failed round is logged with its reason and the next interval tries again; a
partition whose own answer failed is left out of the round, and a maxTimestamp answer failing
alone (a broker before Kafka 3.0) leaves `max_timestamp` null.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from py4j.java_gateway import JavaClass
from py4j.protocol import Py4JError, Py4JJavaError
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.errors import UsageError
from pipeline.spark.lag.samples import write_samples
from pipeline.spark.tables import paths
from pipeline.spark.tables.options import read_delta
from schemas.consumed import CONSUMED_TOPICS, SHARE_STATE_CONSUMED_TOPICS, TopicsNamed

log = logging.getLogger("sampler")
SOURCE = "cluster"
# The CLI's spelling -> Kafka's IsolationLevel, which is also what the samples record.
ISOLATION_LEVELS = {"read_uncommitted": "READ_UNCOMMITTED", "read_committed": "READ_COMMITTED"}
_UNKNOWN_TOPIC = "org.apache.kafka.common.errors.UnknownTopicOrPartitionException"
_EXECUTION = "java.util.concurrent.ExecutionException"
_GRACE_MS = 2000  # past the Admin call's own timeout, so its reason, not ours, is reported
_SHOWN = 10  # partitions named in one log line
_SHOWN_TOPICS = 20  # topics named in one log line

TP = tuple[str, int]


def _named(rule: TopicsNamed) -> Column:
    """The names (or ids) `rule`'s path reaches in a row, an array<string>; nulls left in,
    for the caller to drop."""
    steps = rule.steps

    def after(value: Column, at: int) -> Column:
        if at == len(steps):
            return F.array(value)
        name, each = steps[at]
        return through(value[name], each, at + 1)

    def through(value: Column, each: bool, at: int) -> Column:
        if not each:
            return after(value, at)
        parts = F.transform(value, lambda e: after(e, at))
        # flatten is null when one part is: a member without a subscription names nothing
        return F.flatten(F.filter(parts, lambda a: a.isNotNull()))

    name, each = steps[0]
    return F.coalesce(through(F.col(name), each, 1), F.array()).cast("array<string>")


def _tagged(rule: TopicsNamed) -> Column:
    """`_named(rule)` as (topic, by_id, why) structs."""
    by_id, why = F.lit(rule.by_id).alias("by_id"), F.lit(rule.reason).alias("why")
    return F.transform(_named(rule), lambda t: F.struct(t.alias("topic"), by_id, why))


def named_topics(rows: DataFrame, rules: Mapping[str, tuple[TopicsNamed, ...]] = CONSUMED_TOPICS
                 ) -> dict[tuple[str, bool], set[str]]:
    """What `rows` (of the event log, or with `SHARE_STATE_CONSUMED_TOPICS` of the
    share-state log) name as consumed, in one aggregation: (topic, by id) -> why, by the
    rules a row's event type has; a log written before a column existed names nothing
    through it."""
    kinds = {t: [r for r in named if r.steps[0][0] in rows.columns]
             for t, named in rules.items()}
    kinds = {t: named for t, named in kinds.items() if named}
    if "event_type" not in rows.columns or not kinds:
        return {}
    entry = "array<struct<topic:string,by_id:boolean,why:string>>"
    kind = F.col("event_type")
    found: Column = F.lit(None).cast(entry)
    for event_type, named in kinds.items():
        tagged = [_tagged(r) for r in named]
        found = F.when(kind == event_type, F.concat(*tagged) if len(tagged) > 1
                       else tagged[0]).otherwise(found)
    named_rows = (rows.where(kind.isin(*kinds)).select(F.explode(found).alias("t"))
                  .select("t.*").where(F.col("topic").isNotNull() & (F.col("topic") != ""))
                  .distinct().collect())
    out: dict[tuple[str, bool], set[str]] = {}
    for r in named_rows:
        out.setdefault((r["topic"], bool(r["by_id"])), set()).add(r["why"])
    return out


def _cause(exc: BaseException) -> Any:
    """The Java throwable behind a py4j error, unwrapped from the ExecutionException a
    KafkaFuture throws; None for a Python error."""
    if not isinstance(exc, Py4JJavaError):
        return None
    java = exc.java_exception
    if java.getClass().getName() == _EXECUTION and java.getCause() is not None:
        java = java.getCause()
    return java


def reason(exc: BaseException) -> str:
    """What went wrong, in one line: a Java exception's own class and message."""
    try:
        java = _cause(exc)
        if java is not None:
            name = str(java.getClass().getSimpleName())
            # java.util.concurrent's TimeoutException (our own wait ran out) has no message.
            message = java.getMessage() or ("no answer in time" if name == "TimeoutException"
                                            else None)
            return name + (f": {message}" if message else "")
    except Py4JError:  # the JVM gone: say what Python saw
        pass
    lines = str(exc).strip().splitlines()
    return type(exc).__name__ + (f": {lines[0]}" if lines else "")


def _answers(lines: str, partitions: list[TP]
             ) -> tuple[dict[TP, tuple[int, int]], dict[TP, str]]:
    """Each partition's (offset, timestamp) from `EndOffsetsRound.answers`' lines (one a
    partition, in `partitions`' order), and why the others failed."""
    found: dict[TP, tuple[int, int]] = {}
    failed: dict[TP, str] = {}
    for tp, line in zip(partitions, lines.splitlines(), strict=True):
        first, second = line.split("\t", 1)
        if first == "!":
            failed[tp] = second
        else:
            found[tp] = (int(first), int(second))
    return found, failed


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def _shown(failed: Mapping[TP, str]) -> str:
    items = [f"{t}-{p} ({why})" for (t, p), why in sorted(failed.items())[:_SHOWN]]
    more = len(failed) - _SHOWN
    return ", ".join(items) + (f" and {more} more" if more > 0 else "")


@dataclass
class SampleRound:
    """One round: its time (the rows' `sampled_at` when it asked for end offsets, else its
    start), the rows it found (dicts, times in epoch ms), the partitions left out and why,
    and, when it found nothing, why. `answered_at`: when the answers were all back (the
    broker read each end offset between the two)."""

    sampled_at: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    left_out: dict[TP, str] = field(default_factory=dict)
    error: str | None = None
    written: int = 0
    answered_at: int | None = None


class EndOffsetSampler:
    """Samples the end offsets of the partitions the logs name into `target` (a Delta path).
    `sample_once()` takes one round on the calling thread; `start()` runs rounds on a thread
    of its own, every `interval_ms` (None: once at the start, then only the last round), until
    `stop()`, which takes one last round. `events` and `share_state`: the logs whose topics it
    reads at its first round."""

    def __init__(self, spark: SparkSession, bootstrap: str, consumer_props: Mapping[str, str],
                 target: str, *, events: str | None = None, share_state: str | None = None,
                 interval_ms: int | None = 30_000, isolation_level: str = "read_uncommitted",
                 timeout_ms: int = 30_000) -> None:
        if isolation_level.lower() not in ISOLATION_LEVELS:
            raise ValueError(f"isolation level must be one of {', '.join(ISOLATION_LEVELS)}, "
                             f"got {isolation_level!r}")
        self.spark = spark
        self.bootstrap = bootstrap
        self.consumer_props = dict(consumer_props)
        self.target = target
        self.logs = {path: rules for path, rules in ((events, CONSUMED_TOPICS),
                                                     (share_state, SHARE_STATE_CONSUMED_TOPICS))
                     if path is not None}
        self.interval_ms = interval_ms
        self.isolation_level = ISOLATION_LEVELS[isolation_level.lower()]
        self.timeout_ms = timeout_ms
        self.rounds = 0  # rounds attempted
        self.failures = 0  # of them, those that wrote nothing for an error
        self.sampled = 0  # rows written, over every round
        self.last: SampleRound | None = None
        self._lock = threading.Lock()  # _topics and _ids: added to from the stream's batches
        self._topics: dict[str, set[str]] = {}  # topic -> why it is sampled
        self._ids: dict[str, set[str]] = {}  # topic ids not named yet -> why
        self._said: set[str] = set()  # topics the log has been told of
        self._seeded: set[str] = set()  # of `logs`, those read
        self._partitions: dict[str, list[int]] = {}  # describeTopics, as last answered
        self._absent: set[str] = set()  # named by the log, not on the cluster (logged once)
        self._no_max_timestamp = False  # logged once
        self._admin: Any = None
        self._stopping = threading.Event()
        self._wake = threading.Event()  # set by stop(), and by observe() naming a topic
        self._final_round = True
        self._thread: threading.Thread | None = None

    # ---- the topics ---------------------------------------------------------------------------

    def add_topics(self, topics: Iterable[str] | Mapping[str, Iterable[str]],
                   why: str = "asked for") -> None:
        """Sample these topics too (a mapping: each with why)."""
        reasons = topics if isinstance(topics, Mapping) else {t: (why,) for t in topics}
        with self._lock:
            for topic, whys in reasons.items():
                self._topics.setdefault(topic, set()).update(whys)

    def _add_named(self, named: Mapping[tuple[str, bool], set[str]]) -> None:
        with self._lock:
            for (topic, by_id), whys in named.items():
                (self._ids if by_id else self._topics).setdefault(topic, set()).update(whys)
        if named:
            self._wake.set()

    def topics(self) -> set[str]:
        with self._lock:
            return set(self._topics)

    def _named_anything(self) -> bool:
        with self._lock:
            return bool(self._topics or self._ids)

    def observe(self, rows: DataFrame, share_state: bool = False) -> None:
        """Add the topics a micro-batch's decoded rows name (of the share-state log, with
        `share_state`), on the batch's thread: the batch lives only there. Never raises:
        sampling must not end the ingest."""
        try:
            self._add_named(named_topics(rows, SHARE_STATE_CONSUMED_TOPICS if share_state
                                         else CONSUMED_TOPICS))
        except Exception as exc:
            log.warning("could not read the topics of a batch, sampled from the next: %s",
                        reason(exc))

    def _seed(self) -> None:
        for path, rules in self.logs.items():
            if path in self._seeded or (paths.is_path(path) and not paths.exists(self.spark, path)):
                continue  # the share-state log is made once the cluster has its topic
            try:
                self._add_named(named_topics(read_delta(self.spark, path), rules))
                self._seeded.add(path)
            except Exception as exc:  # the log unreadable now: ask again next round
                log.warning("could not read the topics of %s (asked again next round): %s",
                            path, reason(exc))

    def _name_ids(self, admin: Any) -> None:
        """The topic ids the share-state log named, by the cluster's names for them; an id
        the cluster does not know (a topic deleted, or not visible yet) waits."""
        with self._lock:
            ids = dict(self._ids)
        if not ids:
            return
        jvm: Any = self.spark._jvm
        listings = admin.listTopics(jvm.org.apache.kafka.clients.admin.ListTopicsOptions()
                                    .timeoutMs(self.timeout_ms)).listings().get(
            self.timeout_ms + _GRACE_MS, jvm.java.util.concurrent.TimeUnit.MILLISECONDS)
        names = {str(t.topicId().toString()): str(t.name()) for t in listings.toArray()}
        self.add_topics({names[i]: whys for i, whys in ids.items() if i in names})
        with self._lock:
            for i in names.keys() & ids.keys():
                self._ids.pop(i, None)

    def _say_topics(self) -> None:
        """One line naming the topics no line named yet, each with why it is sampled."""
        with self._lock:
            new = {t: sorted(w) for t, w in self._topics.items() if t not in self._said}
            self._said |= new.keys()
        if not new:
            return
        shown = [f"{t} ({', '.join(w)})" for t, w in sorted(new.items())[:_SHOWN_TOPICS]]
        more = len(new) - len(shown)
        log.info("sampling the end offsets of %s%d topic%s: %s%s", "" if len(new) == len(
            self._said) else "another ", len(new), "" if len(new) == 1 else "s", ", ".join(shown),
                 f" and {more} more" if more > 0 else "")

    # ---- a round ------------------------------------------------------------------------------

    def sample_once(self) -> SampleRound:
        """One round on this thread: asked, written, logged; never raises."""
        started_at = int(time.time() * 1000)  # wall-clock: a time of day, not a duration
        self.rounds += 1
        try:
            result = self.take_round(started_at)
            if result.rows:
                result.written = write_samples(self.spark, result.rows, self.target)
                self.sampled += result.written
        except Exception as exc:  # one bad round never ends the job: the next one tries again
            result = SampleRound(started_at, error=reason(exc))
        self.last = result
        if result.error is not None:
            self.failures += 1
            log.warning("end-offset round at %s wrote nothing (retried in the next round): %s",
                        _when(started_at), result.error)
        elif result.rows:
            log.info("end offsets of %d partitions sampled at %s into %s", result.written,
                     _when(result.sampled_at), self.target)
        return result

    def take_round(self, started_at: int) -> SampleRound:
        """Ask the cluster for the end offsets of every known partition; write nothing. A
        round that asks nothing keeps `started_at` as its time."""
        self._seed()
        admin = self._admin_client() if self._named_anything() else None
        if admin is not None:
            self._name_ids(admin)
        topics = sorted(self.topics())
        if admin is None or not topics:
            log.info("no consumed topic named yet: no end offsets to sample")
            return SampleRound(started_at)
        self._say_topics()
        partitions, left_out, problem = self._describe(admin, topics)
        if not partitions:
            return SampleRound(started_at, left_out=left_out,
                               error=problem or "no partition of a named topic has a leader")
        sampled_at = int(time.time() * 1000)  # as the end offsets are asked: their moment
        rows, failed = self._list_offsets(admin, partitions, sampled_at)
        left_out.update(failed)
        if left_out:
            log.warning("left out of the round at %s: %s", _when(sampled_at), _shown(left_out))
        error = None if rows else f"no partition answered: {_shown(failed)}"
        return SampleRound(sampled_at, rows, left_out, error,
                           answered_at=int(time.time() * 1000))

    def admin_properties(self) -> dict[str, str]:
        """The consumer properties, with the Admin's time-outs held to the round's: an
        answer later than that is no use to the round, and describeTopics looks its brokers
        up (listNodes) under `default.api.timeout.ms`, not under its own `timeoutMs`."""
        props = {"bootstrap.servers": self.bootstrap, **self.consumer_props}
        request = min(self.timeout_ms, int(props.get("request.timeout.ms", self.timeout_ms)))
        props["request.timeout.ms"] = str(request)
        props["default.api.timeout.ms"] = str(self.timeout_ms)
        return props

    def _admin_client(self) -> Any:
        if self._admin is None:
            jvm: Any = self.spark._jvm
            props = jvm.java.util.Properties()
            for key, value in self.admin_properties().items():
                props.put(key, value)
            self._admin = jvm.org.apache.kafka.clients.admin.Admin.create(props)
        return self._admin

    def _remaining_ms(self, deadline: float) -> int:
        return max(0, int((deadline - time.monotonic()) * 1000))

    def _describe(self, admin: Any, topics: list[str]
                  ) -> tuple[list[TP], dict[TP, str], str | None]:
        """The topics' partitions that have a leader, those left out, and the first failure:
        one describeTopics call, its answers read in the JVM (`EndOffsetsRound.describe`)."""
        jvm: Any = self.spark._jvm
        names = jvm.java.util.ArrayList()
        for t in topics:
            names.add(t)
        options = jvm.org.apache.kafka.clients.admin.DescribeTopicsOptions().timeoutMs(
            self.timeout_ms)
        futures = admin.describeTopics(names, options).topicNameValues()
        lines = str(self.helper().describe(futures, "\n".join(topics),
                                            self.timeout_ms + _GRACE_MS))
        found: dict[str, list[tuple[int, bool]]] = {}
        problem: str | None = None
        for line in lines.splitlines():
            topic, part, *rest = line.split("\t")
            if part == "!":
                java_class, why = rest
                problem = problem or f"describeTopics {topic}: {why}"
                found[topic] = self._undescribed(topic, java_class, why)
                continue
            if topic not in found:
                found[topic] = []
                self._partitions[topic] = []
                self._absent.discard(topic)
            found[topic].append((int(part), rest[0] == "1"))
            self._partitions[topic].append(int(part))
        partitions: list[TP] = []
        left_out: dict[TP, str] = {}
        for topic in topics:
            for p, leader in found.get(topic, []):
                if leader:
                    partitions.append((topic, p))
                else:
                    left_out[(topic, p)] = "no leader"
        return partitions, left_out, problem

    def _undescribed(self, topic: str, java_class: str, why: str) -> list[tuple[int, bool]]:
        """A topic whose description failed: none if the cluster has no such topic (deleted,
        or not created yet), else the partitions last seen, their leaders unknown."""
        if java_class == _UNKNOWN_TOPIC:
            self._partitions.pop(topic, None)
            if topic not in self._absent:
                self._absent.add(topic)
                log.warning("topic %s is named by the event log but not on the cluster "
                            "(deleted?): not sampled", topic)
            return []
        seen = self._partitions.get(topic, [])
        log.warning("could not describe topic %s (%s): %s", topic, why,
                    f"sampling the {len(seen)} partitions last seen" if seen
                    else "not sampled this round")
        return [(p, True) for p in seen]

    def helper(self) -> Any:
        """The JVM side of a round (pipeline/spark/ingest/java/EndOffsetsRound.java, compiled
        into the jar cache): through Py4J a round would cost a dozen calls a partition
        (docs/performance.md, "The sampler at a big cluster's size")."""
        jvm: Any = self.spark._jvm
        helper = jvm.cgr.ingest.EndOffsetsRound
        if not isinstance(helper, JavaClass):
            raise UsageError("the end-offset sampler's class cgr.ingest.EndOffsetsRound is not "
                             "on Spark's class path: `python -m pipeline.spark.runtime.jars` "
                             "compiles it on a machine with a JDK (javac), and `--print-jars` "
                             "lists its jar for spark-submit --jars")
        return helper

    def _list_offsets(self, admin: Any, partitions: list[TP], sampled_at: int
                      ) -> tuple[list[dict[str, Any]], dict[TP, str]]:
        """Rows for the partitions whose latest and earliest offsets came back, and why the
        others did not: three listOffsets calls, their requests built and their answers read
        in the JVM (`EndOffsetsRound`)."""
        jvm: Any = self.spark._jvm
        kafka = jvm.org.apache.kafka
        helper = self.helper()
        asked = "\n".join(f"{t}\t{p}" for t, p in partitions)
        options = kafka.clients.admin.ListOffsetsOptions(
            kafka.common.IsolationLevel.valueOf(self.isolation_level)).timeoutMs(self.timeout_ms)
        specs = {"latest": kafka.clients.admin.OffsetSpec.latest(),
                 "earliest": kafka.clients.admin.OffsetSpec.earliest(),
                 "max": kafka.clients.admin.OffsetSpec.maxTimestamp()}
        calls = {name: admin.listOffsets(helper.request(asked, spec), options)
                 for name, spec in specs.items()}  # all three in flight before any is awaited
        deadline = time.monotonic() + (self.timeout_ms + _GRACE_MS) / 1000
        answers = {name: _answers(str(helper.answers(call, asked, self._remaining_ms(deadline))),
                                  partitions)
                   for name, call in calls.items()}
        return self._rows(partitions, answers, sampled_at)

    def _rows(self, partitions: list[TP],
              answers: Mapping[str, tuple[dict[TP, tuple[int, int]], dict[TP, str]]],
              sampled_at: int) -> tuple[list[dict[str, Any]], dict[TP, str]]:
        (latest, latest_failed), (earliest, earliest_failed) = answers["latest"], answers["earliest"]
        maxima, max_failed = answers["max"]
        if max_failed and not self._no_max_timestamp:
            self._no_max_timestamp = True  # an old broker says so every round: say it once
            log.warning("max timestamps not answered, left null (%s)", _shown(max_failed))
        rows, failed = [], {}
        for tp in partitions:
            if tp not in latest or tp not in earliest:
                failed[tp] = latest_failed.get(tp) or earliest_failed.get(tp) or "no answer"
                continue
            offset, stamp = maxima.get(tp, (-1, -1))
            rows.append({"topic": tp[0], "partition": tp[1], "log_end_offset": latest[tp][0],
                         "sampled_at": sampled_at, "log_start_offset": earliest[tp][0],
                         "max_timestamp": stamp if stamp >= 0 else None,
                         "max_timestamp_offset": offset if offset >= 0 and stamp >= 0 else None,
                         "isolation_level": self.isolation_level, "source": SOURCE})
        return rows, failed

    # ---- the thread ---------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("the sampler is already started")
        self._thread = threading.Thread(target=self._run, name="end-offset-sampler", daemon=True)
        self._thread.start()
        every = "once now" if self.interval_ms is None else f"every {self.interval_ms} ms"
        log.info("sampling end offsets (%s) from %s %s into %s", self.isolation_level,
                 self.bootstrap, every, self.target)

    def is_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self, final_round: bool = True, timeout_s: float | None = None) -> None:
        """End the thread, after one last round unless told not to; wait for it (at most
        `timeout_s`, by default two rounds' time-outs and a minute for the write)."""
        self._final_round = final_round
        self._stopping.set()
        self._wake.set()
        if self._thread is None:
            return
        wait = timeout_s if timeout_s is not None else 2 * (self.timeout_ms + _GRACE_MS) / 1000 + 60
        self._thread.join(wait)
        if self._thread.is_alive():
            log.warning("the end-offset sampler did not stop within %.0f s; left behind", wait)

    def _run(self) -> None:
        try:
            self._first_round()
            while not self._stopping.is_set():
                began = time.monotonic()
                self.sample_once()
                if self.interval_ms is None:
                    self._stopping.wait()
                else:
                    self._stopping.wait(max(0.0, self.interval_ms / 1000
                                            - (time.monotonic() - began)))
            if self._final_round:
                self.sample_once()
        finally:
            self.close()

    def _first_round(self) -> None:
        """Wait, on a log that names no topic yet, until a batch's rows name one (or stop):
        the run's first round then samples what the run is about to write."""
        self._seed()
        if self._named_anything() or self._stopping.is_set():
            return
        log.info("no consumed topic named yet: the first round waits for the first records "
                 "that name one")
        while not self._named_anything() and not self._stopping.is_set():
            self._wake.wait()
            self._wake.clear()

    def close(self) -> None:
        """Close the Admin client (on the thread that made it, when the thread ran)."""
        admin, self._admin = self._admin, None
        if admin is not None:
            try:
                admin.close(self.spark._jvm.java.time.Duration.ofSeconds(5))  # type: ignore[union-attr]
            except Py4JError as exc:
                log.warning("could not close the sampler's Admin client: %s", reason(exc))
