"""Consumer lag end to end on the suite's real broker: a live workload (`lag_workload`: one topic
produced to steadily, five groups each shaped for one Burrow verdict) runs while the live
ingest (`start_ingest`, processing-time trigger) reads `__consumer_offsets` and its sampler
samples end offsets (asked every half second; a round takes seconds on two busy cores, and the
workload's tick is paced to the rounds it measures), and Kafka's own `kafka-consumer-groups
--describe` is run at recorded moments meanwhile. The ingested log is then backfilled with lag,
and the replayed `partition_lag` must print what the tool printed at each moment (within one
sample interval's production), and each group must get its verdict while the workload runs:
OK, WARN, STOP (its group Empty), REWIND after its drop, and REBALANCE as the cause of the
rebalancing group's lag.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import statistics
import time
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import IsolationLevel, TopicPartition
from confluent_kafka.admin import OffsetSpec
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from pipeline.fold import CoordinatorConfig
from pipeline.kafka.broker import DEFAULT_CONFIG, Broker, describe_consumer_groups
from pipeline.spark.backfill import BackfillOptions, run_backfill
from pipeline.spark.ingest.ingest import OFFSETS_TOPIC, IngestOptions, end_offset_sampler, start_ingest
from pipeline.spark.ingest.sampler import EndOffsetSampler, SampleRound
from pipeline.spark.lag.lagflow import LagOptions
from tests.kafka.clients import admin, until
from tests.kafka.lag_workload import (
    TOPIC,
    Workload,
    group_id,
    now_ms,
)

pytestmark = [pytest.mark.kafka, pytest.mark.spark]
log = logging.getLogger(__name__)

SAMPLE_INTERVAL = "500 ms"
DELAY = "2 seconds"  # the backfill's watermark delay: rows for samples older than the log's end
MOMENT_TICKS = (2, 5, 8)  # the tool runs once healthy has taken this many ticks
TICKS = 11  # the workload's length, in healthy's ticks: the last moment well before the cut
AFTER_LAST = 2  # ticks the workload takes at least after the last moment (TICK_S each, >= DELAY)
LAST = 3  # the last samples a steady verdict is checked at
# The broker's; the fold checks each group's rows are in the partition Kafka maps it to.
OFFSETS_PARTITIONS = int(DEFAULT_CONFIG["offsets.topic.num.partitions"])


@dataclass(frozen=True)
class ToolRow:
    """One row of `kafka-consumer-groups --describe`; None where it printed `-`."""

    group: str
    topic: str
    partition: int
    current: int | None
    end: int | None
    lag: int | None


@dataclass(frozen=True)
class Moment:
    before_ms: int
    after_ms: int
    rows: tuple[ToolRow, ...]


def _number(text: str) -> int | None:
    return None if text == "-" else int(text)


def parse_describe(text: str) -> list[ToolRow]:
    """The offset rows of every group's table (each under its own header line)."""
    rows: list[ToolRow] = []
    header: list[str] = []
    for line in text.splitlines():
        fields = line.split()
        if fields[:1] == ["GROUP"]:
            header = fields
        elif header and len(fields) == len(header):
            r = dict(zip(header, fields, strict=True))
            rows.append(ToolRow(r["GROUP"], r["TOPIC"], int(r["PARTITION"]),
                                _number(r["CURRENT-OFFSET"]), _number(r["LOG-END-OFFSET"]),
                                _number(r["LAG"])))
    return rows


@dataclass
class LagRun:
    """What the run left: the workload's record, the tool's moments, the replayed lag."""

    workload: Workload
    moments: list[Moment]
    # partition_lag of the workload's groups at the samples taken while it ran (after it, every
    # group stops committing and its verdict moves on), times in epoch ms
    parts: list[dict[str, Any]]
    groups: list[dict[str, Any]]  # their group_lag, the same samples
    samples: list[dict[str, Any]]  # the workload topic's samples
    rounds: list[SampleRound]  # the sampler's rounds, as it took them

    def gaps_ms(self) -> list[int]:
        """The times between the sampler's rounds of the topic."""
        times = sorted({s["t"] for s in self.samples})
        return [b - a for a, b in itertools.pairwise(times)]

    def answer_ms(self, lo: int, hi: int) -> int:
        """The longest a round sampled between `lo` and `hi` took to answer: the broker read
        its end offsets at some moment from its `sampled_at` to then."""
        return max((r.answered_at - r.sampled_at for r in self.rounds
                    if r.answered_at is not None and lo <= r.sampled_at <= hi), default=0)

    def rate(self, partition: int) -> float:
        """The partition's production in records per ms, as its samples saw it: from the
        first sample to the first that saw the final end offset (the producer had stopped)."""
        own = sorted((s["t"], s["log_end_offset"]) for s in self.samples
                     if s["partition"] == partition)
        t0, e0 = own[0]
        t1, e1 = next(x for x in own if x[1] == own[-1][1])
        return float((e1 - e0) / (t1 - t0))

    def of(self, name: str, table: str = "parts") -> list[dict[str, Any]]:
        rows = self.parts if table == "parts" else self.groups
        return sorted((r for r in rows if r["group_id"] == group_id(name)),
                      key=lambda r: (r["t"], r.get("partition") or 0))

    def last(self, name: str, table: str = "parts", n: int = LAST) -> list[dict[str, Any]]:
        rows = self.of(name, table)
        times = sorted({r["t"] for r in rows})[-n:]
        return [r for r in rows if r["t"] in times]


def describe_at(broker: Broker, workload: Workload, sampler: EndOffsetSampler,
                tick: int) -> Moment:
    """Kafka's tool run once the workload is at `tick`, the wall clock read around it; returned
    once the sampler has written a round begun after it, so that a sample follows every
    moment however long the tool took (seconds on busy cores; run_live then keeps the
    workload going until the backfill can evaluate that sample)."""
    until(f"the workload's tick {tick}", lambda: workload.ticks() >= tick or workload.errors(),
          timeout_s=_allowed_s(workload, tick))
    before = now_ms()
    text = describe_consumer_groups(broker)
    moment = Moment(before, now_ms(), tuple(r for r in parse_describe(text) if r.topic == TOPIC))
    until("a sampler round after the tool", lambda: _sampled_after(sampler, moment.after_ms),
          timeout_s=_allowed_s(workload, 1))
    return moment


def _allowed_s(workload: Workload, tick: int) -> float:
    """How long `tick` ticks may take: ticks count sampler rounds, which may slow down well
    below what `pace` measured when the machine gets busy."""
    return 3 * workload.tick_s * tick + 300


def _sampled_after(sampler: EndOffsetSampler, ms: int) -> bool:
    """Whether the sampler's last round, begun after `ms` (epoch), sampled the topic."""
    last = sampler.last  # set by the sampler's thread once a round is written
    return last is not None and last.sampled_at > ms and any(r["topic"] == TOPIC
                                                             for r in last.rows)


def _ingested_all(query: StreamingQuery, bootstrap: str) -> bool:
    """Whether the stream's last batch ended where `__consumer_offsets` ends now (its last
    stable offsets: the ingest reads read_committed)."""
    if not query.isActive:
        raise AssertionError(f"the ingest stream ended: {query.exception()}")
    progress = query.lastProgress
    if progress is None or not progress.sources:
        return False
    done = json.loads(progress.sources[0].endOffset or "{}").get(OFFSETS_TOPIC, {})
    client = admin(bootstrap)  # kept referenced: the futures die with their client
    futures = client.list_offsets({TopicPartition(OFFSETS_TOPIC, p): OffsetSpec.latest()
                                   for p in range(OFFSETS_PARTITIONS)},
                                  isolation_level=IsolationLevel.READ_COMMITTED)
    return all(int(done.get(str(tp.partition), -1)) >= f.result(30).offset
               for tp, f in futures.items())


def _stop(workload: Workload, query: StreamingQuery | None, sampler: EndOffsetSampler) -> None:
    """The workload's threads and members, then the stream once it has read everything they
    caused, then the sampler after its final round."""
    workload.finish()
    try:
        if query is not None:
            until("the ingest read all of __consumer_offsets",
                  lambda: _ingested_all(query, workload.bootstrap), timeout_s=120, every_s=1)
    finally:
        if query is not None:
            query.stop()
        # start_ingest starts the sampler before the stream: stopped even if that failed.
        sampler.stop(final_round=query is not None)


def run_live(spark: SparkSession, broker: Broker, workload: Workload, opts: IngestOptions,
             rounds: list[SampleRound]) -> list[Moment]:
    """The workload with the live ingest and its sampler beside it, the tool run at each of
    MOMENT_TICKS, every round of the sampler kept in `rounds`; everything stopped cleanly at
    the end."""
    sampler = end_offset_sampler(spark, opts)
    assert sampler is not None
    take = sampler.sample_once

    def kept() -> SampleRound:
        rounds.append(take())
        return rounds[-1]
    sampler.sample_once = kept  # type: ignore[method-assign]  # its thread calls this
    workload.sample_rounds = lambda: sampler.rounds  # counted as each round begins
    query: StreamingQuery | None = None
    try:
        workload.join()  # first: its groups make the broker create __consumer_offsets
        query = start_ingest(spark, opts, sampler)
        # The sampler learns the topic from the ingested log: no commit before it samples it,
        # so every commit has a lag.
        until("the sampler samples the workload's topic", lambda: _sampled_after(sampler, 0),
              timeout_s=120)
        workload.pace()  # how long a tick takes on this machine now, for the timeouts
        workload.begin()
        moments = [describe_at(broker, workload, sampler, tick) for tick in MOMENT_TICKS]
        # The backfill evaluates a sample once the log holds events DELAY past it: the
        # workload goes on AFTER_LAST ticks past the last moment's sample, however long the
        # tool took (a CI run saw it outlast the ticks left to TICKS, and the samples after
        # the moment were too near the log's end to get rows).
        last = max(TICKS, workload.ticks() + AFTER_LAST)
        until("the workload's last tick", lambda: workload.ticks() >= last or workload.errors(),
              timeout_s=_allowed_s(workload, last))
    finally:
        _stop(workload, query, sampler)
    assert not workload.errors(), workload.errors()
    return moments


def _ms(df: DataFrame) -> list[dict[str, Any]]:
    timed = df.withColumn("t", F.unix_millis("sampled_at"))
    return [r.asDict(recursive=True) for r in timed.collect()]


@pytest.fixture(scope="module")
def lag_run(spark: SparkSession, broker: Broker, tmp_path_factory: pytest.TempPathFactory
            ) -> LagRun:
    """The workload run live, then the ingested log backfilled with lag: the lag tables of
    the workload's groups, and what the tool printed."""
    root = tmp_path_factory.mktemp("lag-broker")
    events, samples = str(root / "events"), str(root / "samples")
    # Every 5 s, not 1: the stream's batches take seconds, and each delays the sampler's
    # rounds (a Delta MERGE each) on the same two cores.
    opts = IngestOptions(events=events, bootstrap_servers=broker.bootstrap_servers,
                         checkpoint=str(root / "ingest-ckpt"), trigger="processing-time:5",
                         end_offsets=samples, sample_interval=SAMPLE_INTERVAL)
    workload = Workload(broker.bootstrap_servers)
    started = time.monotonic()
    rounds: list[SampleRound] = []
    moments = run_live(spark, broker, workload, opts, rounds)
    live_s = time.monotonic() - started
    warehouse = root / "warehouse"
    run_backfill(spark, BackfillOptions(
        events=events, warehouse=str(warehouse), database=None, watermark_delay=DELAY,
        config=CoordinatorConfig(offsets_topic_num_partitions=OFFSETS_PARTITIONS),
        lag=LagOptions(samples)))
    log.info("live %.1f s, backfill %.1f s", live_s, time.monotonic() - started - live_s)
    assert workload.finished_at_ms is not None
    ours = F.col("group_id").startswith("lag-") & (
        F.unix_millis("sampled_at") <= workload.finished_at_ms)
    read = spark.read.format("delta")
    return LagRun(workload, moments,
                  _ms(read.load(str(warehouse / "partition_lag")).where(ours)),
                  _ms(read.load(str(warehouse / "group_lag")).where(ours)),
                  _ms(read.load(samples).where(F.col("topic") == TOPIC)), rounds)


def _around(rows: list[dict[str, Any]], moment: Moment) -> list[dict[str, Any]]:
    """A pair's rows from its last sample at or before the moment to its first at or after."""
    before = [r["t"] for r in rows if r["t"] <= moment.before_ms]
    after = [r["t"] for r in rows if r["t"] >= moment.after_ms]
    lo = max(before, default=moment.before_ms)
    hi = min(after, default=moment.after_ms)
    return [r for r in rows if lo <= r["t"] <= hi]


def test_partition_lag_is_what_kafka_consumer_groups_printed_at_each_moment(
        lag_run: LagRun) -> None:
    """Every LAG the tool printed is the replayed lag of the pair at a sample bracketing the
    moment, within the production of one sample interval there (the time between the two
    samples around it: the sampler's resolution; its rounds took seconds, not 0.5 s) and of
    the longest a round there took to answer (a sample's end offset was read by the broker
    between its `sampled_at` and the answer: seconds, on cores busy enough)."""
    compared = 0
    for moment in lag_run.moments:
        printed = [r for r in moment.rows if r.lag is not None]
        assert len(printed) >= 8, f"the tool printed {moment.rows}"  # 4+ groups x 2 partitions
        for row in printed:
            pair = [r for r in lag_run.of(row.group.removeprefix("lag-"))
                    if r["partition"] == row.partition]
            around = _around(pair, moment)
            times = sorted(r["t"] for r in around)
            # The tool read somewhere in its span: a sample after it, or the tolerance below
            # does not bound what it read last. (Not asked before it: a group's first commit
            # may fall between the last round and the tool, and the pair has no row before.)
            assert times and times[-1] >= moment.after_ms, (
                row, moment.before_ms, moment.after_ms, [r["t"] for r in pair])
            interval = max((b - a for a, b in itertools.pairwise(times)),
                           default=statistics.median(lag_run.gaps_ms()))
            answer = lag_run.answer_ms(times[0], times[-1]) if times else 0
            tolerance = math.ceil(lag_run.rate(row.partition) * (interval + answer))
            lags = [(r["t"] - moment.after_ms, r["committed_offset"], r["lag"]) for r in around]
            # The samples nearest the moment first: a failure shows those, not the oldest.
            lags.sort(key=lambda x: abs(x[0]))
            assert any(lag is not None and abs(lag - row.lag) <= tolerance
                       for _, _, lag in lags), (row, tolerance, interval, answer,
                                                moment.after_ms - moment.before_ms, lags)
            compared += 1
    assert compared >= 8 * len(MOMENT_TICKS)


def _statuses(rows: list[dict[str, Any]]) -> set[tuple[str | None, str | None]]:
    """(status, rule) of partition_lag rows, (status, cause) of group_lag rows."""
    return {(r["status"], r.get("rule", r.get("cause"))) for r in rows}


def test_healthy_is_ok_and_slowed_warns_at_the_last_samples(lag_run: LagRun) -> None:
    healthy = lag_run.last("healthy")
    assert {r["status"] for r in healthy} == {"OK"}, _statuses(healthy)
    assert {r["status"] for r in lag_run.last("healthy", "groups")} == {"OK"}
    slowed = lag_run.last("slowed")
    # Burrow's WARN: every commit's lag (against the end offset sampled before it) at least
    # the previous one's, which holds only if a sample falls between every two commits.
    assert _statuses(slowed) == {("WARN", "LAG_NOT_DECREASING")}, \
        (_statuses(slowed),
         f"sample gaps {lag_run.gaps_ms()} ms vs commits every {lag_run.workload.tick_s} s")
    assert min(r["window_commits"] for r in slowed) >= 3, slowed  # two rises at least
    assert {r["status"] for r in lag_run.last("slowed", "groups")} == {"WARN"}


def test_stopped_is_stop_its_group_err_and_empty(lag_run: LagRun) -> None:
    stopped = lag_run.last("stopped")
    assert lag_run.workload.stopped_at_ms is not None
    assert all(r["t"] > lag_run.workload.stopped_at_ms for r in stopped)
    assert _statuses(stopped) == {("STOP", "STOPPED")}
    assert all(r["idle_ms"] > r["window_span_ms"] for r in stopped)
    groups = lag_run.last("stopped", "groups")
    assert {(r["status"], r["state"], r["cause"]) for r in groups} == {("ERR", "Empty", "EMPTY")}


def test_rewinding_is_rewind_from_its_drop_on(lag_run: LagRun) -> None:
    drop = lag_run.workload.rewound_at_ms
    assert drop is not None and lag_run.workload.rewinding_at_ms is not None
    rows = lag_run.of("rewinding")
    after = [r for r in rows if r["t"] >= drop]
    assert all(r["committed_offset"] < lag_run.workload.rewound_from[r["partition"]]
               for r in after)
    # Burrow's REWIND: an offset in the window went back, so while the window's oldest commit
    # is one from before the drop. On a busy machine rewinding may commit 10 times after it
    # before the workload ends; from then on its window no longer holds the drop.
    sent = lag_run.workload.rewinding_at_ms
    holding = [r for r in after if r["window_span_ms"] is not None
               and r["t"] - r["idle_ms"] - r["window_span_ms"] < sent]
    assert len({r["t"] for r in holding}) >= LAST, _statuses(after)
    assert _statuses(holding) == {("REWIND", "REWOUND")}
    # Before it, a consumer reading everything: REWIND only from the drop on.
    before = [r for r in rows if r["status"] is not None
              and r["t"] < lag_run.workload.rewinding_at_ms]
    assert "OK" in {r["status"] for r in before}, _statuses(before)
    assert "REWIND" not in {r["status"] for r in before}
    times = {r["t"] for r in holding}
    groups = [r for r in lag_run.of("rewinding", "groups") if r["t"] in times]
    assert groups and {r["status"] for r in groups} == {"ERR"}


def test_the_rebalancing_groups_lag_is_caused_by_its_rebalances(lag_run: LagRun) -> None:
    assert lag_run.workload.joins >= 3 and lag_run.workload.leaves >= 3
    rows = lag_run.of("rebalancing", "groups")
    caused = [r for r in rows if r["cause"] == "REBALANCE"]
    assert caused, _statuses(rows)
    # Joins and leaves, one rebalance each: more than one of them is named.
    assert len({r["cause_generation_id"] for r in caused}) >= 2, caused
    assert {r["cause_detail"] for r in caused} - {None}


