"""Share lag in the lag tables: Kafka 4.2's (end offset - start offset - delivery-complete
count) for each share partition at each end-offset sample, as of the sample's time, from
share_partition_state (`pipeline.spark.share.replay`).

A share group commits no offsets; what it has consumed is its share partitions' state. A
sample (topic, partition, t) gives a `partition_lag` row (offset_status SHARE_STATE) for each
share partition of that topic partition (its topic id named through the `topics` table)
whose state as of t, its last share_partition_state row by (event_time, log_offset) with
event_time <= t, exists and is not DELETED; and a `group_lag` row per share group and
sample, the sum. The rule of one value is `pipeline.share.state.share_lag` (Kafka's; here
floored at 0 like consumer lag).

When. A sample's share rows are written once the share-state log's watermark (its newest
applied record's time less the watermark delay, or the backfill's `--until`) has passed
it, so a record that reaches the log late but inside the delay still counts; the samples
behind it wait, as consumer lag's do for the event log's watermark. `_share_lag` keeps what
the next step needs: the watermark, and each share partition's last row at or before it
(a DELETED one dropped: the partition has no state). A step reads that, the
share_partition_state rows after the old watermark (Delta's file statistics skip the
files of older ones), the batch's own rows whatever their time, and the samples from the
old watermark to the new one: its cost follows what came since, not the history. The
backfill runs the step once from nothing; the stream's share query once a micro-batch, over
`_share_lag` as the last batch (or the backfill) left it.

What the stream cannot redo: a sample's rows, once written, stay. A share-state record that
reaches the log later than the watermark delay moves the state for the samples after it,
not for those already written (the backfill counts it for them too); a sample written to
the samples table after the watermark passed its time gets no share rows (the backfill
writes them). The ingest's sampler writes samples as it takes them, and the share
coordinator appends its records in time order, so neither happens in a live pipeline.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cache

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from pipeline.fold.model import SHARE
from pipeline.share.state import DELETED, UNSET
from pipeline.spark.lag.samples import REASON, read_samples
from pipeline.spark.runtime.keep import keep, release
from pipeline.spark.share.replay import HISTORY
from pipeline.spark.tables import paths
from pipeline.spark.tables.contract import as_table, table_schema
from pipeline.spark.tables.creation import create_table
from pipeline.spark.tables.options import read_delta
from pipeline.spark.tables.topics import name_at, topic_names
from schemas.internal import SHARE_LAG
from schemas.lag import GROUP_LAG, NOTFOUND, PARTITION_LAG, SHARE_STATE
from schemas.share_state import SHARE_KEY

log = logging.getLogger("replay")
WATERMARK = "watermark_ms"
ASKED, ANSWERED = 1, 0  # at one time, the state's rows sort before the sample asking


@cache
def lag_state_schema() -> StructType:
    """share_partition_state's columns, all nullable, and the watermark: one row with only
    the watermark set marks it when no partition has a state."""
    fields = [StructField(f.name, f.dataType, True) for f in table_schema(HISTORY).fields]
    return StructType([*fields, StructField(WATERMARK, LongType(), True)])


def lag_state_path(warehouse: str) -> str:
    return paths.join(warehouse, SHARE_LAG)


def ensure_lag_state(spark: SparkSession, warehouse: str) -> None:
    create_table(spark, lag_state_path(warehouse), lag_state_schema())


@dataclass(frozen=True)
class ShareLag:
    """One step: the samples' share rows (`partition_lag_rows`, `group_lag_rows` make the
    tables' rows of them) and the next `_share_lag`."""

    rows: DataFrame
    state: DataFrame
    watermark_ms: int
    since_ms: int | None  # the watermark the step started from (None: from nothing)
    held: tuple[DataFrame, ...] = ()  # kept for the writes: `release_step` after them


def share_lag_step(spark: SparkSession, warehouse: str, end_offsets: str, delay_ms: int,
                   until_ms: int | None = None, fresh: bool = False,
                   new_rows: DataFrame | None = None, samples_version: int | None = None
                   ) -> ShareLag | None:
    """The share rows of the samples the share-state log's watermark passed since the last
    step (`fresh`: since nothing, the backfill's), over share_partition_state as written
    now: its rows after the last watermark, and `new_rows` (the batch's, whatever their
    time: a row at or before the last watermark still moves the state the next samples
    are answered from). The samples at `samples_version` (default: the latest). None while
    there is no watermark (no record applied yet)."""
    state = None if fresh else read_delta(spark, lag_state_path(warehouse))
    before = None
    if state is not None:
        first = state.agg(F.max(WATERMARK)).first()
        before = None if first is None else first[0]
    history = read_delta(spark, paths.join(warehouse, HISTORY)).where(
        F.col("event_time").isNotNull())
    # The column itself compared (not a function of it): Delta skips the files whose
    # statistics say they hold only older rows.
    after = history if before is None else history.where(
        F.col("event_time") > F.timestamp_millis(F.lit(before)))
    if new_rows is not None:
        after = after.unionByName(new_rows.where(F.col("event_time").isNotNull())).dropDuplicates(
            [*SHARE_KEY, "log_partition", "log_offset"])
    after = keep(after)  # read by the watermark, the rows and the next state
    if until_ms is not None:
        watermark: int | None = until_ms
    else:
        newest = after.agg(F.max(F.unix_millis("event_time"))).first()
        watermark = None if newest is None or newest[0] is None else newest[0] - delay_ms
    if before is not None:
        watermark = before if watermark is None else max(before, watermark)
    if watermark is None:
        release(after)
        return None
    known = after if state is None else state.where(F.col("group_id").isNotNull()).drop(
        WATERMARK).unionByName(after)
    samples = read_samples(spark, end_offsets, samples_version).where(F.col(REASON).isNull())
    at = F.col("sampled_at")
    ready = samples.where((at < F.timestamp_millis(F.lit(watermark)))
                          & (F.lit(True) if before is None
                             else at >= F.timestamp_millis(F.lit(before))))
    rows = keep(_rows(spark, warehouse, known, ready))  # both lag tables' rows come from it
    return ShareLag(rows, _next_state(known, watermark), watermark, before, (after, rows))


def release_step(step: ShareLag) -> None:
    """Free what the step kept for its writes."""
    for df in step.held:
        release(df)


def _rows(spark: SparkSession, warehouse: str, known: DataFrame, ready: DataFrame) -> DataFrame:
    """Each ready sample's share partitions as of its time: `t`, the sample's offsets, the
    key, the state's start offset and delivery-complete count, and the share lag."""
    names = topic_names(spark, warehouse)
    if names is None:
        log.warning("no topics table in %s: share lag needs the topic ids' names (the live "
                    "ingest records them; a dump brings --topic-map)", warehouse)
        names = spark.createDataFrame([], "topic_names map<string,array<struct<"
                                          "seen_at:timestamp,topic_name:string>>>")
    named = (known.crossJoin(F.broadcast(names))
             .withColumn("topic", name_at(F.col("topic_names"), F.col("topic_id"),
                                          F.col("event_time")))
             .where(F.col("topic").isNotNull()))
    key = [*SHARE_KEY, "topic"]
    distinct = (ready.groupBy("topic", "partition", F.unix_millis("sampled_at").alias("t"))
                .agg(F.max("log_end_offset").alias("end"),
                     F.max("log_start_offset").alias("start")))
    asked = distinct.join(named.select(*key).distinct(), ["topic", "partition"]).select(
        *key, "t", "end", "start", F.lit(ASKED).alias("kind"))
    answers = named.select(*key, F.unix_millis("event_time").alias("t"), "log_offset",
                           F.lit(ANSWERED).alias("kind"),
                           F.struct("change", "start_offset",
                                    "delivery_complete_count").alias("s"))
    then = (Window.partitionBy(*key).orderBy("t", "kind", "log_offset")
            .rowsBetween(Window.unboundedPreceding, 0))
    both = asked.unionByName(answers, allowMissingColumns=True)
    asof = both.select("*", F.last("s", ignorenulls=True).over(then).alias("as_of"))
    return asof.where((F.col("kind") == ASKED) & F.col("as_of").isNotNull()
                      & (F.col("as_of.change") != DELETED)).select(
        *key, "t", "end", "start", F.col("as_of.start_offset").alias("start_offset"),
        F.col("as_of.delivery_complete_count").alias("delivery_complete_count"),
        _share_lag(F.col("end"), F.col("as_of.start_offset"),
                   F.col("as_of.delivery_complete_count")).alias("lag"))


def _share_lag(end: Column, start: Column, count: Column) -> Column:
    """`pipeline.share.state.share_lag` as a column, floored at 0."""
    known = (end.isNotNull() & start.isNotNull() & count.isNotNull()
             & (start != UNSET) & (count != UNSET))
    return F.when(known, F.greatest(F.lit(0).cast("bigint"), end - start - count))


def partition_lag_rows(rows: DataFrame) -> DataFrame:
    return as_table(rows, PARTITION_LAG, {
        "sampled_at": F.timestamp_millis(F.col("t")), "log_end_offset": F.col("end"),
        "log_start_offset": F.col("start"), "offset_status": F.lit(SHARE_STATE),
        "group_type": F.lit(SHARE)})


def group_lag_rows(rows: DataFrame) -> DataFrame:
    summed = rows.groupBy("group_id", "t").agg(
        F.sum("lag").alias("total_lag"), F.max("lag").alias("max_lag"),
        F.count(F.lit(1)).alias("partitions"),
        F.count_if(F.col("lag").isNull()).alias("partitions_unknown"))
    return as_table(summed, GROUP_LAG, {
        "sampled_at": F.timestamp_millis(F.col("t")), "group_type": F.lit(SHARE),
        "complete": F.lit(0.0), "status": F.lit(NOTFOUND)})


# The lag tables a step's rows go to, and what makes each table's rows of them.
LAG_WRITES = (("partition_lag", partition_lag_rows), ("group_lag", group_lag_rows))


def _next_state(known: DataFrame, watermark: int) -> DataFrame:
    """Each share partition's last row at or before `watermark` (none for one DELETED), and
    the row marking the watermark."""
    newest = Window.partitionBy(*SHARE_KEY).orderBy(F.col("event_time").desc(),
                                                   F.col("log_offset").desc())
    last = (known.where(F.unix_millis("event_time") <= F.lit(watermark))
            .withColumn("_n", F.row_number().over(newest)).where(F.col("_n") == 1).drop("_n")
            .where(F.col("change") != DELETED).withColumn(WATERMARK, F.lit(watermark)))
    spark = known.sparkSession
    mark = spark.createDataFrame([(watermark,)], f"{WATERMARK} bigint")
    return last.unionByName(mark, allowMissingColumns=True).select(
        *[F.col(f.name).cast(f.dataType) for f in lag_state_schema().fields])
