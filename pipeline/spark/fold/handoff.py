"""The hand-off from a batch backfill to a stream: what the backfill read, and its states.

A backfill of a whole event-log version writes each group's final fold state to
`<warehouse>/_backfill_state` in one Delta commit whose `userMetadata` is the `Manifest`.
A stream started on a fresh checkpoint reads the event log from `version + 1` on and, as
a second source, these states: every group starts from where the backfill left it, and the
stream's watermark from the backfill's latest event time.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import BinaryType, StringType, StructField, StructType

from pipeline.spark.tables import paths, sqltext
from pipeline.spark.tables.contract import SEED, event_schema
from pipeline.spark.tables.creation import create_table
from pipeline.spark.tables.options import AVAILABLE_NOW, latest_version, trigger_seconds
from schemas.internal import BACKFILL_STATE

log = logging.getLogger("replay")
POLL_S = 5.0  # how often a stream waiting for a source's next version looks


def after_backfill(spark: SparkSession, read: Mapping[str, int], trigger: str, what: str) -> bool:
    """Whether a new stream over a backfilled warehouse can start: it reads each source of
    `read` (source -> the version the backfill read) from the next version, which Delta
    refuses until it exists. Under a processing-time trigger it waits for them; under
    available-now it says there is nothing yet and returns False. `what`: the query's name
    in that line."""
    def pending() -> list[str]:
        return [f"{source} (the backfill read version {version})"
                for source, version in read.items() if latest_version(spark, source) <= version]

    missing = pending()
    if missing and trigger == AVAILABLE_NOW:
        log.info("nothing %s to replay after the backfill yet: no new version of %s", what,
                 ", ".join(missing))
        return False
    if missing:
        log.info("waiting for a new version of %s", ", ".join(missing))
        while pending():
            time.sleep(min(POLL_S, trigger_seconds(trigger)))
    return True


SEED_SCHEMA = StructType([StructField("group_id", StringType()), StructField("_state", BinaryType())])


@dataclass(frozen=True)
class Manifest:
    """What a backfill read and where it stopped: the hand-off to a stream."""

    events: str
    version: int
    until_ms: int | None
    watermark_ms: int | None
    max_event_time_ms: int | None
    groups: int
    samples: str | None = None  # --end-offsets, when the backfill wrote lag
    samples_version: int | None = None  # its Delta version read; later samples are pending

    @property
    def streamable(self) -> bool:
        return self.until_ms is None

    def to_json(self) -> str:
        return json.dumps({"backfill": asdict(self)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> Manifest | None:
        if not text:
            return None
        doc: Any = json.loads(text)
        return cls(**doc["backfill"]) if isinstance(doc, dict) and "backfill" in doc else None


def seed_path(warehouse: str) -> str:
    return paths.join(warehouse, BACKFILL_STATE)


def read_manifest(spark: SparkSession, warehouse: str) -> Manifest | None:
    path = seed_path(warehouse)
    if not DeltaTable.isDeltaTable(spark, path):
        return None
    last = DeltaTable.forPath(spark, path).history(1).select("userMetadata").first()
    return Manifest.from_json(last[0] if last else None)


def ensure_seed_table(spark: SparkSession, warehouse: str) -> None:
    """The seed table exists, empty, until a backfill fills it: a stream always reads it."""
    create_table(spark, seed_path(warehouse), SEED_SCHEMA)


def seed_rows(spark: SparkSession, warehouse: str, manifest: Manifest | None) -> DataFrame:
    """The hand-off as a stream: one row per group, its state in `_seed`, at the backfill's
    latest event time (so the stream's watermark starts where the backfill's stood)."""
    latest = None if manifest is None else manifest.max_event_time_ms
    stamp = "CAST(NULL AS TIMESTAMP)" if latest is None else f"timestamp_millis({latest})"
    seeds = (spark.readStream.format("delta").option("maxFilesPerTrigger", 1_000_000)
             .load(seed_path(warehouse)))
    columns = [sqltext.named(sqltext.ident("group_id") if f.name == "group_id" else
                             stamp if f.name == "event_time" else sqltext.null(f.dataType),
                             f.name) for f in event_schema().fields]
    return seeds.selectExpr(*columns, sqltext.named("_state", SEED))
