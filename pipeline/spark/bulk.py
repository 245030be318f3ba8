"""Plain commit records kept in the JVM: the bulk of a real `__consumer_offsets` log never
crosses into Python one by one.

A plain commit record (an OFFSET_COMMIT with no generation and no producer: a record the
coordinator already accepted) of a group whose log carries no requests is always applied as
it stands: no timer runs in such a group, nothing refuses a record, and the row it writes to
`offset_history` is a projection of its own columns, with the group's clock (the latest
event time the group has applied) as its time. So, per group, in log order:

- each row is classified (`classified`): *bulk* if it is such a record on the group's own
  partition, past the group's previous position, with every value a commit needs; every
  other row is *shape* (it can change the group, or be refused, or is a duplicate);
- consecutive bulk rows form a *stretch*; the first of each stretch goes to the fold as it
  is (it may create the group), the rest never do: their offset_history rows are built here
  (`projected`), and the fold gets one summary row a stretch (`summaries`): for each
  partition its last commit's stored values, the stretch's last positions and times, so the
  group's state (offsets, position, clock) is what the row-by-row fold would leave.

A group with any request in its log (JOIN, SYNC, HEARTBEAT, LEAVE, a commit with a
generation) keeps every row on the general path: timers run there, and a stretch could not
say when one fires. The fold stays the only judge: everything here is a function of the rows,
decided before the fold the same way for any group, and a group the rules here do not
cover is folded row by row as before.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from pipeline.fold.config import CoordinatorConfig
from pipeline.fold.events import NESTED_COLUMNS
from pipeline.fold.runs import STRETCH
from pipeline.spark.contract import event_schema
from pipeline.spark.packing import PACKED, packed_events, unpacked_schema

REQUESTS = ("JOIN", "SYNC", "HEARTBEAT", "LEAVE")
ORDER = ("log_partition", "log_offset")
# Stored values of a commit, as the fold keeps them (`offsets.from_request`'s defaults applied).
STORED = ("committed_offset", "leader_epoch", "commit_metadata", "commit_timestamp",
          "expire_timestamp", "member_id", "log_partition", "log_offset")


def home_partition(cfg: CoordinatorConfig) -> Column:
    """Kafka's `partitionFor(group_id)`: Utils.abs(group_id.hashCode()) % partitions, with
    Java's own String.hashCode."""
    h = F.expr("CAST(java_method('java.util.Objects', 'hashCode', group_id) AS INT)")
    positive = F.when(h == F.lit(-(2**31)), F.lit(0)).otherwise(F.abs(h))
    return positive % F.lit(cfg.offsets_topic_num_partitions)


def _is_request() -> Column:
    return (F.col("event_type").isin(*REQUESTS)
            | ((F.col("event_type") == "OFFSET_COMMIT") & F.col("generation_id").isNotNull()))


def _plain_commit() -> Column:
    """A commit record as it stands: what the fold's quiet path takes without a check (no
    decoder's error and no nested value, which the fold reads, `runs.Batch.quiet_rows`)."""
    nothing_nested = [F.col(name).isNull() for name in NESTED_COLUMNS]
    return reduce(Column.__and__, nothing_nested, (
        (F.col("event_type") == "OFFSET_COMMIT") & F.col("generation_id").isNull()
        & F.col("producer_id").isNull() & F.col("decode_error").isNull()
        & F.col("topic").isNotNull() & F.col("partition").isNotNull()
        & (F.col("partition") >= 0) & F.col("committed_offset").isNotNull()))


# What the classification and the projections read of a row, beside its packed form.
CARRIED = (*ORDER, "topic", "partition", "committed_offset", "leader_epoch", "commit_metadata",
           "commit_timestamp", "expire_timestamp", "member_id", "event_time")
FLAGS = ("positioned", "request", "plain")


def _flagged(events: DataFrame, cfg: CoordinatorConfig) -> DataFrame:
    """`events` with what decides a row alone: `positioned` (a valid position on the group's
    partition, with a time), `request`, `plain` (a plain commit record)."""
    positioned = (F.col("log_partition").isNotNull() & F.col("log_offset").isNotNull()
                  & (F.col("log_partition") >= 0) & (F.col("log_offset") >= 0)
                  & F.col("event_time").isNotNull()
                  & (F.col("log_partition") == F.col("_home")))
    # Java's hashCode by reflection costs ~6 us a call: once a group, not once a row.
    homes = events.select("group_id").distinct().select(
        "group_id", home_partition(cfg).alias("_home"))
    events = events.join(F.broadcast(homes), "group_id", "left")

    def known(flag: Column) -> Column:  # a null (a null event_type, say) is no
        return F.coalesce(flag, F.lit(False))

    return events.select("*", known(positioned).alias("positioned"),
                         known(_is_request()).alias("request"),
                         known(_plain_commit() & F.col("group_id").isNotNull()).alias("plain")
                         ).drop("_home")


def _in_order(rows: DataFrame) -> DataFrame:
    """`_flagged` rows with, per row: `applied` (it moves the group's position and clock: a
    positioned row past the previous one), `clock` (the group's clock after it, in ms),
    `bulk`, `stretch` (bulk rows with the same number are one stretch) and `first` (the
    stretch's first row). One window spec (one shuffle and one sort of the rows): each
    column is a frame of the group's rows in log order."""
    in_order = Window.partitionBy("group_id").orderBy(*ORDER)
    so_far = in_order.rowsBetween(Window.unboundedPreceding, 0)
    before = in_order.rowsBetween(Window.unboundedPreceding, -1)
    whole = in_order.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    at = F.struct(*ORDER)
    # Two passes over each group's rows (every window column of a pass reads only the row's
    # own columns and the pass before: a third pass would copy every row again).
    rows = rows.select(
        "*", F.max(F.col("request").cast("int")).over(whole).alias("journal"),
        # The previous positioned row's position (in log order, the greatest before this
        # one) decides a duplicate (the same position again); rows the fold rejects before
        # its position check move neither position nor clock.
        F.max(F.when(F.col("positioned"), at)).over(before).alias("_previous"),
        # A row whose position the next row repeats (a duplicate delivery of it follows)
        # stays general too: the fold must meet the two in that order, the original first.
        F.lead(at).over(in_order).alias("_next"))
    applied = F.col("positioned") & (F.col("_previous").isNull() | (F.col("_previous") < at))
    rows = rows.withColumn("applied", applied).withColumn(
        "bulk", F.col("applied") & (F.col("journal") == 0) & F.col("plain")
        & ~F.coalesce(F.col("_next") == at, F.lit(False)))
    rows = rows.select(
        "*", F.max(F.when(F.col("applied"), F.unix_millis("event_time"))).over(so_far)
        .alias("clock"),
        F.sum(F.when(~F.col("bulk"), 1).otherwise(0)).over(so_far).alias("stretch"),
        F.lag("bulk").over(in_order).alias("_bulk_before"))
    first = F.col("bulk") & (F.col("_bulk_before").isNull() | ~F.col("_bulk_before"))
    return rows.withColumn("first", first).drop("_previous", "_next", "_bulk_before")


def classified(events: DataFrame, cfg: CoordinatorConfig) -> DataFrame:
    """`events` (`select_events`' rows) packed as the fold reads them (`packing.packed_events`)
    with the columns the projections read (`CARRIED`) and `_in_order`'s classification. The
    windows move the packed row, not the log's 60 columns (a window copies each row it
    passes: over the wide rows this cost twice the whole fold's JVM time)."""
    return _in_order(packed_events(_flagged(events, cfg), *FLAGS, *CARRIED))


def stored(rows: DataFrame) -> list[Column]:
    """A bulk row's commit as the fold stores it, `offsets.from_request`'s defaults in Spark
    terms (the JVM cannot call it; tests/spark/test_bulk.py holds the two equal): metadata ""
    for none, the commit timestamp the clock's for none, an empty member id none."""
    return [F.col("committed_offset"), F.col("leader_epoch"),
            F.coalesce(F.col("commit_metadata"), F.lit("")).alias("commit_metadata"),
            F.coalesce(F.unix_millis("commit_timestamp"), F.col("clock")).alias("commit_timestamp"),
            F.unix_millis("expire_timestamp").alias("expire_timestamp"),
            F.when(F.col("member_id") != "", F.col("member_id")).alias("member_id"),
            F.col("log_partition"), F.col("log_offset")]


def projected(rows: DataFrame, events: DataFrame, failed: DataFrame | None,
              cfg: CoordinatorConfig) -> dict[str, DataFrame]:
    """The rows of the output tables the bulk rows the fold did not see (every bulk row but
    the first of its stretch) stand for, built from their own columns: offset_history, a
    projection of each; and, for a group whose fold raised (`failed`: group_id and the
    reason its rows are rejected as; None when none did), rejected_events instead, as the
    fold rejects the rows it saw (state unknown: none), from `events` themselves."""
    rest = rows.where(F.col("bulk") & ~F.col("first"))
    if failed is not None:  # few groups fail, if any: broadcast them, never shuffle the rows
        rest = rest.join(F.broadcast(failed.select("group_id")), "group_id", "left_anti")
    values = rest.select("group_id", "topic", "partition", *stored(rest), "clock")
    history = values.select(
        "group_id", "topic", "partition", "committed_offset", "leader_epoch", "commit_metadata",
        F.timestamp_millis("commit_timestamp").alias("commit_timestamp"),
        F.timestamp_millis("expire_timestamp").alias("expire_timestamp"), "member_id",
        F.lit(None).cast("int").alias("generation_id"), "log_partition", "log_offset",
        F.timestamp_millis("clock").alias("event_time"), F.lit("COMMIT").alias("change"),
        F.lit(None).cast("bigint").alias("producer_id"))
    if failed is None:
        return {"offset_history": history}
    lost = _in_order(_flagged(events.join(F.broadcast(failed.select("group_id", "rejected_as")),
                                          "group_id"), cfg))
    rejected = lost.where(F.col("bulk") & ~F.col("first")).select(
        *event_schema().names, F.col("rejected_as").alias("reason"),
        F.lit(None).cast("string").alias("group_state"),
        F.lit(None).cast("int").alias("group_generation_id"))
    return {"offset_history": history, "rejected_events": rejected}


def summaries(rows: DataFrame, cfg: CoordinatorConfig) -> DataFrame:
    """One row a stretch (bulk rows past its first), packed as the fold reads a row
    (`packing.PACKED`): event_type `runs.STRETCH` at the stretch's last position and time, and
    under `runs.STRETCH` each partition's last commit as stored (with the position of its
    first commit in the stretch: the order the fold would have put them), the last
    `recent_positions` positions, the last row's time and the clock after it."""
    rest = rows.where(F.col("bulk") & ~F.col("first")).select(
        "group_id", "stretch", "topic", "partition", *stored(rows), "clock",
        F.unix_millis("event_time").alias("t"))
    at = F.struct(*ORDER)
    per_partition = rest.groupBy("group_id", "stretch", "topic", "partition").agg(
        F.max_by(F.struct(*STORED), at).alias("o"), F.min(at).alias("first"))
    offsets = per_partition.groupBy("group_id", "stretch").agg(F.collect_list(F.struct(
        "topic", "partition", "o.*", F.col("first.log_partition").alias("first_partition"),
        F.col("first.log_offset").alias("first_offset"))).alias("offsets"))
    keep = cfg.recent_positions
    positions = F.array_sort(F.collect_list(at))
    stats = rest.groupBy("group_id", "stretch").agg(
        # The last `keep` (Spark's slice from -keep is empty for a shorter array).
        F.slice(positions, F.greatest(-F.size(positions), F.lit(-keep)), F.lit(keep))
        .alias("positions"),
        F.max_by("t", at).alias("last_time"), F.max("clock").alias("clock"),
        F.max(at).alias("last"))
    joined = stats.join(offsets, ["group_id", "stretch"])
    summary = F.struct("positions", "last_time", "clock", "offsets")
    packed = F.to_json(F.struct(
        F.col("last.log_partition").alias("log_partition"),
        F.col("last.log_offset").alias("log_offset"), F.col("last_time").alias("event_time"),
        F.lit(STRETCH).alias("event_type"), summary.alias(STRETCH)))
    return joined.select("group_id", packed.alias(PACKED))


def fold_input(rows: DataFrame, cfg: CoordinatorConfig) -> DataFrame:
    """What the fold gets: every row but the stretches' rest, packed, and one summary a
    stretch."""
    kept = rows.where(~(F.col("bulk") & ~F.col("first")))
    packed = kept.select(*unpacked_schema().names, PACKED)
    return packed.unionByName(summaries(rows, cfg), allowMissingColumns=True)
