"""The share-state log of tests/share/log.py through the jobs, built once a session: its four
dumps ingested into a share-state log (`share_base`), with end-offset samples, and that log
backfilled with share lag (`share_backfilled`). tests/spark/test_share_state.py checks them
against the pure replay; tests/spark/test_golden_tables.py answers the docs' share questions
from the backfill (tests/conftest.py keeps both files on one worker, so it is built once)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline.spark.backfill import BackfillOptions, run_backfill
from pipeline.spark.ingest.ingest import IngestOptions, ingest_raw
from pipeline.spark.lag.lagflow import LagOptions
from pipeline.spark.lag.samples import write_samples
from pipeline.spark.runtime.session import temporary_conf
from pipeline.spark.tables.topics import record_topics
from pipeline.spark.tables.writes import SMALL_CONF
from tests.decode import kafka_records
from tests.share.log import T0, TOPICS, Raw, share_log

RAW = share_log(5)
# Four dumps in log order, each a version of the log (as a live ingest's batches come).
CHUNKS = [RAW[k * len(RAW) // 4:(k + 1) * len(RAW) // 4] for k in range(4)]
NAMES = {TOPICS[0]: "orders", TOPICS[1]: "payments"}
DELAY, DELAY_MS = "1 minute", 60_000
# Every 5 s over the log's 240 s (some at a record's very time), each topic partition's end
# offset growing: the share lag's samples.
SAMPLES = [{"topic": name, "partition": p, "log_end_offset": 150 + 2 * k + p,
            "log_start_offset": 0, "sampled_at": T0 - 5_000 + 5_000 * k}
           for k in range(52) for name in NAMES.values() for p in (0, 1)]
RAW_SCHEMA = "key binary, value binary, partition int, offset bigint, timestamp bigint"
# The ingest's shuffles as a cluster's are: several partitions, not coalesced into one, so
# each commit of the log has several files (one a log partition: two) and a stream of three
# files a batch splits commits. Spark's writer, as for a batch too large for the driver's
# (`writes.on_driver`), which would write the commit as one file.
SPREAD = {"spark.sql.adaptive.coalescePartitions.enabled": "false",
          "spark.sql.shuffle.partitions": "8", SMALL_CONF: "false"}


def _dump(spark: SparkSession, rows: list[Raw], path: Path) -> str:
    spark.createDataFrame(rows, RAW_SCHEMA).write.parquet(str(path))
    return str(path)


def ingest_share_dumps(spark: SparkSession, base: Path, chunks: list[int],
                       share_log_path: Path) -> None:
    """The dumps `chunks` ingested into the share-state log at `share_log_path`, one commit
    each (and an event log of one record, `base/events`, the ingest's other output), its
    shuffles `SPREAD`."""
    events = base / "events-dump"
    if not events.exists():
        commit = kafka_records.records()["share_metadata"]
        _dump(spark, [(commit[0], commit[1], 0, 0, 1_700_000_000_000)], events)
    for k in chunks:
        dump = base / f"share-dump-{k}"
        if not dump.exists():
            _dump(spark, CHUNKS[k], dump)
        with temporary_conf(spark, SPREAD):
            ingest_raw(spark, IngestOptions(events=str(base / "events"), raw=str(events),
                                            share_state=str(share_log_path),
                                            raw_share_state=str(dump)))


def named(spark: SparkSession, warehouse: Path) -> LagOptions:
    """The warehouse's `topics` table (what the ingest records), and the samples' options
    (`samples` beside the warehouse)."""
    record_topics(spark, str(warehouse), NAMES, "map")
    return LagOptions(str(warehouse.parent / "samples"))


@pytest.fixture(scope="session")
def share_base(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the share-state log of all four dumps (`share-log`), the ingest's event
    log (`events`) and the samples (`samples`)."""
    root = tmp_path_factory.mktemp("share-state")
    ingest_share_dumps(spark, root, [0, 1, 2, 3], root / "share-log")
    write_samples(spark, SAMPLES, str(root / "samples"))
    return root


@pytest.fixture(scope="session")
def share_backfilled(spark: SparkSession, share_base: Path) -> Path:
    """The warehouse a backfill of `share_base`'s logs writes, with share lag."""
    warehouse = share_base / "backfilled"
    run_backfill(spark, BackfillOptions(events=str(share_base / "events"),
                                        warehouse=str(warehouse), database=None,
                                        share_state=str(share_base / "share-log"),
                                        lag=named(spark, warehouse), watermark_delay=DELAY))
    return warehouse
