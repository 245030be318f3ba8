"""The Prometheus metrics of a running replay and of a warehouse, end to end: `jobs/replay.py
--end-offsets ... --metrics-port 0 --metrics-per-partition` runs in this process (its own
`main`, on the suite's session) over a generated log of three commits, one a micro-batch, and
a real Prometheus (tests/metrics/prometheus.py) scrapes the port the job logged. Once the
stream has nothing left to do, what Prometheus' query API returns equals, series for series,
what the exporter renders from the tables' own newest rows (each live group's newest
group_lag sample, each of its partitions' newest partition_lag sample, its group_state row),
read here independently, and the stream's own progress (the last batch's id and input rows,
the input rows of every batch). `WarehouseRows`, which jobs/serve.py refreshes at each scrape,
serves the same rows over the same warehouse.
"""

from __future__ import annotations

import logging
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.window import Window

from pipeline.fold.states import DEAD
from pipeline.generator import LogSpec, end_offset_samples, generate, last_event_ms
from pipeline.metrics import RowsCollector, serve
from pipeline.metrics.catalogue import KEYS
from pipeline.spark.events.eventlog import write_event_log
from pipeline.spark.lag.samples import write_samples
from pipeline.spark.newest_rows import WarehouseRows
from schemas.lag import STATUS_CODES
from tests.jobs.jobs import load_job
from tests.metrics.prometheus import OURS, Prometheus, Series, prometheus_server, until
from tests.metrics.test_exposition import samples, scrape_text
from tests.said import Said

pytestmark = [pytest.mark.spark, pytest.mark.prometheus]
DELAY = "20 seconds"
SPEC = LogSpec(groups=6, events=1500, seed=31, log_kind="offsets-topic")
STREAM_S = 240.0  # the stream's three batches with lag, on a busy two-core machine


@dataclass
class Streamed:
    warehouse: Path
    query: StreamingQuery
    prometheus: Prometheus
    log_rows: int  # the event log's and the samples' rows: what the stream reads in all


def quiet(query: StreamingQuery) -> bool:
    """The stream ran a batch and its last trigger found nothing to do."""
    status = query.status
    return bool(query.recentProgress) and not status["isTriggerActive"] \
        and status["message"] == "Waiting for data to arrive"


@pytest.fixture(scope="module")
def streamed(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Streamed]:
    root = tmp_path_factory.mktemp("metrics")
    events, samples_path = str(root / "events"), str(root / "end_offsets")
    log = generate(SPEC)
    write_event_log(spark, log, events)
    taken = end_offset_samples(SPEC, last_event_ms(log))
    write_samples(spark, taken, samples_path)
    argv = ["--events", events, "--end-offsets", samples_path, "--warehouse",
            str(root / "wh"), "--checkpoint", str(root / "ck"), "--database", "",
            "--watermark-delay", DELAY, "--trigger", "processing-time:1",
            "--metrics-port", "0", "--metrics-per-partition"]
    said, logger = Said(), logging.getLogger("replay")
    level = logger.level
    logger.addHandler(said)
    logger.setLevel(logging.INFO)
    failed: list[BaseException] = []

    def run() -> None:
        try:
            load_job("replay").main(argv, spark)
        except BaseException as exc:  # noqa: B036 - SystemExit too: the test says it
            failed.append(exc)
    job = threading.Thread(target=run, name="replay-job")
    job.start()
    try:
        def logged_url() -> str | None:
            assert not failed, failed
            return next((line.split(": ", 1)[1] for line in said.lines
                         if line.startswith("Prometheus metrics: ")), None)
        url = until("metrics URL in the replay's log", logged_url)
        query = until("running replay", lambda: next(iter(spark.streams.active), None))
        target = url.removeprefix("http://").removesuffix("/metrics")
        with prometheus_server(root, [target]) as prometheus:
            until("quiet stream", lambda: quiet(query) or None, STREAM_S)
            yield Streamed(root / "wh", query, prometheus, len(log) + len(taken))
    finally:
        for active in spark.streams.active:
            active.stop()
        job.join(timeout=120)
        logger.removeHandler(said)
        logger.setLevel(level)
    assert not failed, failed


def newest(spark: SparkSession, warehouse: Path, table: str, live: DataFrame) -> list[Any]:
    """The newest sample per key of a lag table, of the live groups: read here, by SQL."""
    by_key = Window.partitionBy(*KEYS[table]).orderBy(F.col("sampled_at").desc())
    rows = spark.read.format("delta").load(str(warehouse / table))
    return (rows.join(live, "group_id", "left_semi").withColumn("n", F.row_number().over(by_key))
            .where("n = 1").drop("n").collect())


def expected_series(spark: SparkSession, warehouse: Path) -> tuple[Series, dict[str, Any]]:
    """The series the tables' newest rows give (rendered by the exporter, whose rendering
    tests/metrics holds to the rows), and those rows per table."""
    state = spark.read.format("delta").load(str(warehouse / "group_state")).where(
        F.col("state") != DEAD)
    rows = {"group_state": state.collect(),
            **{t: newest(spark, warehouse, t, state.select("group_id"))
               for t in ("group_lag", "partition_lag")}}
    collector = RowsCollector(per_partition=True)
    collector.publish(**rows)
    return samples(scrape_text(collector)), rows


def progress_of(found: Series) -> dict[str, float]:
    return {name: v for (name, labels), v in found.items() if name.startswith("cgr_replay_")}


def test_prometheus_scrapes_the_replay_s_newest_rows_and_its_own_progress(
        spark: SparkSession, streamed: Streamed) -> None:
    batches = [p for p in streamed.query.recentProgress if "addBatch" in p.durationMs]
    last = batches[-1]
    tables, rows = expected_series(spark, streamed.warehouse)
    assert len(batches) >= 2 and rows["group_lag"] and rows["partition_lag"]

    def agreed() -> Series | None:
        found = streamed.prometheus.query(OURS)
        wanted = progress_of(found).get("cgr_replay_batch_id") == last.batchId
        return found if wanted and {k: v for k, v in found.items()
                                    if not k[0].startswith("cgr_replay_")} == tables else None
    found = streamed.prometheus.until("the stream's last batch and the tables' rows", agreed)
    progress = progress_of(found)
    assert progress["cgr_replay_last_batch_input_rows"] == last.numInputRows
    assert progress["cgr_replay_input_rows_total"] == sum(p.numInputRows for p in batches) \
        == streamed.log_rows
    assert progress["cgr_replay_last_batch_duration_seconds"] == \
        last.durationMs["triggerExecution"] / 1000
    assert progress["cgr_replay_watermark_delay_seconds"] >= 20  # DELAY behind the newest event
    # every row the stream appended is counted out (the MERGEd tables' source rows too)
    appended = sum(spark.read.format("delta").load(str(streamed.warehouse / t)).count()
                   for t in ("offset_history", "group_history", "partition_lag", "group_lag"))
    assert progress["cgr_replay_output_rows_total"] > appended > 0
    assert progress["cgr_replay_last_batch_output_rows"] > 0
    # ... and the rows' values, read straight from them
    for r in rows["group_lag"]:
        group = frozenset({("group", r["group_id"])})
        assert found.get(("kafka_consumergroup_group_max_lag", group)) == r["max_lag"]
        assert found[("cgr_group_status", group | {("status", r["status"])})] == \
            STATUS_CODES[r["status"]]
    for r in rows["partition_lag"]:
        labels = frozenset({("group", r["group_id"]), ("topic", r["topic"]),
                            ("partition", str(r["partition"]))})
        assert found.get(("kafka_consumergroup_group_lag", labels)) == r["lag"]


def test_a_warehouse_served_by_refresh_at_each_scrape_gives_the_same_rows(
        spark: SparkSession, streamed: Streamed) -> None:
    """What jobs/serve.py --metrics-port serves: `WarehouseRows` refreshed at each scrape,
    over the warehouse the stream wrote, scraped over HTTP: the tables' newest rows, no
    progress."""
    rows = WarehouseRows(spark, str(streamed.warehouse), per_partition=True)
    with serve(0, per_partition=True, refresh=rows.publish) as server:
        with urllib.request.urlopen(server.url, timeout=120) as r:
            first = samples(r.read().decode())
        with urllib.request.urlopen(server.url, timeout=120) as r:  # only what is newer: none
            again = samples(r.read().decode())
    tables, _ = expected_series(spark, streamed.warehouse)
    assert first == again == tables
