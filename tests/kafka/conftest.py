"""One real Kafka broker for the whole run (KRaft, loopback), the real client workload on it,
and that broker's `__consumer_offsets` ingested and replayed by the real jobs' code."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.fold import CoordinatorConfig
from pipeline.kafka.broker import DEFAULT_CONFIG, Broker, kafka_broker
from pipeline.spark.ingest.ingest import OFFSETS_TOPIC, IngestOptions, kafka_reader_options, run_ingest
from pipeline.spark.lag.lagflow import LagOptions
from pipeline.spark.stream.replay import ReplayOptions, run_replay
from tests.kafka.clients import (
    BrokerMember,
    Scenarios,
    broker_group,
    broker_offsets,
    run_scenarios,
    topic_names,
)
from tests.spark import conftest as spark_conftest

spark = spark_conftest.spark  # the one shared session fixture, under its own name


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    with kafka_broker(tmp_path_factory.mktemp("kafka")) as b:
        yield b


@pytest.fixture(scope="session")
def workload(broker: Broker) -> Iterator[Scenarios]:
    """Every client scenario, run once; consumers kept in their groups stay open until the end."""
    with run_scenarios(broker.bootstrap_servers) as s:
        yield s


@pytest.fixture(scope="session")
def session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ingest")


@dataclass
class Replayed:
    events: str
    warehouse: Path
    offsets: dict[str, dict[tuple[str, int], tuple[int, str]]]  # the broker's, per group
    groups: dict[str, tuple[str, tuple[BrokerMember, ...]]]  # the broker's, per group
    topics: dict[str, str]  # the broker's topic ids -> names
    ingested: dict[int, int]  # where the ingest stopped: each partition's next offset

    def table(self, spark: SparkSession, name: str) -> DataFrame:
        return spark.read.format("delta").load(str(self.warehouse / name))


def replay(spark: SparkSession, events: str, root: Path, share_state: str | None = None,
           end_offsets: str | None = None, dumped: bool = False) -> Path:
    """The replay into `root/warehouse`; with `end_offsets`, the lag of those samples, and a
    watermark delay of a second (the logs' records after a sample pass it).

    The fold checks each group's rows are in the partition Kafka maps it to: it takes the
    broker's partition count (3) from the log, where the live ingest recorded it; a log
    made from a dump (`dumped`) records none, so it is given, as --coordinator-conf would."""
    config = CoordinatorConfig(offsets_topic_num_partitions=int(
        DEFAULT_CONFIG["offsets.topic.num.partitions"])) if dumped else CoordinatorConfig()
    run_replay(spark, ReplayOptions(events=events, warehouse=str(root / "warehouse"),
                                    checkpoint=str(root / "replay-ckpt"), database=None,
                                    config=config, partitions_from_log=not dumped,
                                    share_state=share_state,
                                    **({} if end_offsets is None else {
                                        "lag": LagOptions(end_offsets),
                                        "watermark_delay": "1 second"})))
    return root / "warehouse"


def ingest(spark: SparkSession, bootstrap: str, root: Path, share_state: bool = False,
           sample: bool = False) -> None:
    """The broker's log now, ingested live into `root/events` (available-now, topic ids
    recorded; with `share_state`, `__share_group_state` too, into `root/share-state`; with
    `sample`, the end offsets of the topics the logs name into `root/samples`, at the
    run's start and end, as `jobs/ingest.py --end-offsets` samples them)."""
    run_ingest(spark, IngestOptions(
        events=str(root / "events"), bootstrap_servers=bootstrap,
        checkpoint=str(root / "ingest-ckpt"), warehouse=str(root / "warehouse"),
        share_state=str(root / "share-state") if share_state else None,
        end_offsets=str(root / "samples") if sample else None))


def ingest_and_replay(spark: SparkSession, bootstrap: str, root: Path,
                      share_state: bool = False, sample: bool = False) -> Path:
    """`ingest`, then the replay into `root/warehouse` (with `sample`, of the lag of every
    sample in `root/samples` too)."""
    ingest(spark, bootstrap, root, share_state, sample)
    return replay(spark, str(root / "events"), root,
                  str(root / "share-state") if share_state else None,
                  str(root / "samples") if sample else None)


@pytest.fixture(scope="session")
def live(spark: SparkSession, broker: Broker, workload: Scenarios, session_dir: Path) -> Replayed:
    """The broker's truth first, then its topic ingested (available-now, the cluster's topic
    ids and names and its partition count recorded with the log, no --warehouse) and
    replayed (which copies the names into the warehouse's `topics` table)."""
    bootstrap = broker.bootstrap_servers
    offsets = {g: broker_offsets(bootstrap, g) for g in workload.groups + workload.kip848_groups}
    groups = {g: broker_group(bootstrap, g) for g in workload.groups + workload.kip848_groups}
    root = session_dir / "live"
    events = str(root / "events")
    checkpoint = root / "ingest-ckpt"
    run_ingest(spark, IngestOptions(events=events, bootstrap_servers=bootstrap,
                                    checkpoint=str(checkpoint)))
    return Replayed(events, replay(spark, events, root), offsets, groups, topic_names(bootstrap),
                    ingested_until(checkpoint))


def topic_now(spark: SparkSession, broker: Broker) -> DataFrame:
    """`__consumer_offsets` as the broker holds it now (the suite's broker: groups of later
    tests, or a late record of an earlier one, may have written since an ingest stopped)."""
    opts = IngestOptions(events="unused", checkpoint="unused",
                         bootstrap_servers=broker.bootstrap_servers)
    return spark.read.format("kafka").options(**kafka_reader_options(spark, opts)).load()


def before(ends: dict[int, int]) -> Column:
    """A topic row below its partition's offset in `ends` (`ingested_until`)."""
    return F.coalesce(*[F.when(F.col("partition") == p, F.col("offset") < end)
                        for p, end in ends.items()], F.lit(False))


def ingested_until(checkpoint: Path) -> dict[int, int]:
    """Each `__consumer_offsets` partition's next offset after the ingest's last batch, from
    its checkpoint's offset log (the Kafka source's line: topic -> partition -> offset)."""
    last = max((f for f in (checkpoint / "offsets").iterdir() if f.name.isdigit()),
               key=lambda f: int(f.name))
    source = json.loads(last.read_text().splitlines()[2])
    return {int(p): int(o) for p, o in source[OFFSETS_TOPIC].items()}
