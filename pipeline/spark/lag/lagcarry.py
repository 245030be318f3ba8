"""The lag step's carry: what the lag of samples taken after a time T needs from the history
at or before T, so a micro-batch reads only the rows after T instead of every history row.

Every answer the lag step takes from the past is "the last row of a key at or before the
sample" (`pipeline.spark.lag.lag`), except three that need a few more: Burrow's window (a pair's
last `intervals` commits, each with the end offset sampled then), the broker window (a
partition's last `intervals` samples) and time lag (the sample whose running maximum end
offset had not yet passed a committed offset, and the one after it). The carry keeps,
as of T, exactly those rows of the history tables, in their own columns:

- per (group, partition): its last offset change, and its last `intervals` sampled commits
  with the end offset sampled then (`seed_end_then`);
- per group: its last group_history row; its last transition, its last entry into a
  rebalance, into Empty and out of Empty; its last completed rebalance;
- per topic partition: its last `intervals` samples; the sample bracketing each pair's
  committed offset and the one after it; every sample since the oldest bracket of a pair
  that committed in the last `MOVING_MS` (its next commit brackets there); each with its
  running maximum (`seed_high`), the partition's first sample time, and whether the sample
  after it is carried too (`linked`).

Running the lag step's SQL over the carry and the rows after T gives what it gives over the
whole history, for every sample after T. Where the carry cannot tell (a commit bracketed
before the carried samples: a long rewind, a stopped group resuming), the step says so
(`bracket_exact`) and the caller reads the whole history. One Delta table, overwritten
in one commit per lag step (its `meta` row holds T and the history tables' versions it
was built from), so a killed batch leaves the previous carry whole."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from pipeline.fold.states import EMPTY
from pipeline.lag import LagConfig
from pipeline.spark.lag.lag import (
    HISTORY_TABLES,
    PAIR,
    SEEDS,
    TP,
    Derived,
    History,
    brackets,
    entered_rebalance,
    ms,
    union_all,
)
from pipeline.spark.lag.samples import samples_schema
from pipeline.spark.tables import paths
from pipeline.spark.tables.contract import table_schema
from pipeline.spark.tables.options import latest_version, read_delta
from pipeline.times import event_time_ms

CARRY = "_lag_carry"
MOVING_MS = 15 * 60 * 1000  # a pair that committed this recently keeps its samples contiguous

# The columns of each history table the lag step reads, and the column that orders it in time.
COLUMNS: dict[str, tuple[str, ...]] = {
    "offset_history": ("group_id", "topic", "partition", "event_time", "log_partition",
                       "log_offset", "change", "committed_offset"),
    "group_history": ("group_id", "event_time", "log_partition", "log_offset", "seq", "state",
                      "generation_id", "members", "state_since"),
    "group_transitions": ("group_id", "event_time", "log_partition", "log_offset", "seq",
                          "from_state", "to_state", "cause"),
    "rebalances": ("group_id", "generation_id", "started_at", "completed_at", "cause",
                   "log_partition", "log_offset"),
}
TIME_COLUMN = {"offset_history": "event_time", "group_history": "event_time",
               "group_transitions": "event_time", "rebalances": "completed_at"}
SAMPLE_COLUMNS = ("topic", "partition", "sampled_at", "log_end_offset", "log_start_offset")
KIND = {"offset_history": "changes", "group_history": "shapes",
        "group_transitions": "transitions", "rebalances": "rebalances"}


def carry_schema() -> StructType:
    """The carry table: a `kind` column, every column the lag step reads of each history
    table and of the samples (nullable), the seeds, and the meta row's T and versions."""
    fields: dict[str, StructField] = {"kind": StructField("kind", StringType(), False)}
    sources = [(table_schema(t), cols) for t, cols in COLUMNS.items()]
    sources.append((samples_schema(), SAMPLE_COLUMNS))
    for schema, cols in sources:
        for c in cols:
            if c not in fields:
                fields[c] = StructField(c, schema[c].dataType, True)
    for name, kind in {**SEEDS, "seed_end_then": "bigint"}.items():
        fields[name] = StructField(name, BooleanType() if kind == "boolean" else LongType(), True)
    fields["horizon_ms"] = StructField("horizon_ms", LongType(), True)
    fields["versions"] = StructField("versions", MapType(StringType(), LongType()), True)
    return StructType(list(fields.values()))


def carry_path(warehouse: str) -> str:
    return paths.join(warehouse, CARRY)


@dataclass(frozen=True)
class Carry:
    """A carry as read: its rows, T (`horizon_ms`) and the history versions it was built at."""

    rows: DataFrame
    horizon_ms: int
    versions: dict[str, int]

    @classmethod
    def read(cls, spark: SparkSession, warehouse: str) -> Carry | None:
        path = carry_path(warehouse)
        if not paths.exists(spark, paths.join(path, "_delta_log")):
            return None
        # Pinned to its version: the step that reads it overwrites it.
        rows = read_delta(spark, path, latest_version(spark, path))
        meta = rows.where(F.col("kind") == "meta").select("horizon_ms", "versions").first()
        if meta is None or meta[0] is None:
            return None
        return cls(rows.where(F.col("kind") != "meta"), int(meta[0]),
                   {k: int(v) for k, v in meta[1].items()})

    def history(self, spark: SparkSession, warehouse: str, versions: dict[str, int],
                samples: DataFrame) -> History:
        """The carry and the history rows after T (read at `versions`), as the lag step's
        input; `samples`: the samples after T."""
        parts = []
        for table, cols in COLUMNS.items():
            seeds = ["seed_end_then"] if table == "offset_history" else []
            carried = self.rows.where(F.col("kind") == KIND[table]).select(*cols, *seeds)
            after = (read_delta(spark, paths.join(warehouse, table), versions[table])
                     .where(F.unix_millis(TIME_COLUMN[table]) > F.lit(self.horizon_ms))
                     .select(*cols))
            parts.append(carried.unionByName(after, allowMissingColumns=True))
        carried_samples = self.rows.where(F.col("kind") == "samples").select(
            *SAMPLE_COLUMNS, *SEEDS)
        fresh = samples.where(F.unix_millis("sampled_at") > F.lit(self.horizon_ms)).select(
            *SAMPLE_COLUMNS)
        return History(parts[0], parts[1], parts[2], parts[3],
                       carried_samples.unionByName(fresh, allowMissingColumns=True))

    def fresh(self, spark: SparkSession, warehouse: str, versions: dict[str, int]) -> bool:
        """Whether every commit to the history tables since the carry was built only added
        rows after T (a late row, a deletion, or a log the carry cannot read: not fresh)."""
        for table in HISTORY_TABLES:
            built = self.versions.get(table)
            if built is None or built > versions[table]:
                return False
            for version in range(built + 1, versions[table] + 1):
                if not _adds_after(spark, paths.join(warehouse, table), version,
                                   TIME_COLUMN[table], self.horizon_ms):
                    return False
        return True


def _adds_after(spark: SparkSession, table: str, version: int, column: str,
                horizon_ms: int) -> bool:
    """Whether commit `version` of `table` changed data only by adding files whose least
    `column` is after `horizon_ms` (from the commit's own log entry and file statistics)."""
    text = paths.read_text(spark, paths.join(table, "_delta_log", f"{version:020d}.json"))
    if text is None:
        return False
    for line in text.splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "remove" in action and action["remove"].get("dataChange", True):
            return False
        add = action.get("add")
        if add is None or not add.get("dataChange", True):
            continue
        stats = json.loads(add.get("stats") or "{}")
        if not stats.get("numRecords"):
            continue
        least = stats.get("minValues", {}).get(column)
        if least is None or event_time_ms(least) <= horizon_ms:
            return False
    return True


def history_versions(spark: SparkSession, warehouse: str) -> dict[str, int]:
    return {t: latest_version(spark, paths.join(warehouse, t)) for t in HISTORY_TABLES}


def _last(df: DataFrame, keys: Iterable[str], order: Iterable[str], n: int = 1) -> DataFrame:
    """The last `n` rows of each key by `order` (ascending: the last are the greatest)."""
    w = Window.partitionBy(*keys).orderBy(*[F.col(c).desc_nulls_last() for c in order])
    return df.withColumn("_n", F.row_number().over(w)).where(F.col("_n") <= n).drop("_n")


@dataclass(frozen=True)
class Built:
    """A carry's rows, and whether every bracket it kept was found exactly."""

    rows: DataFrame
    exact: DataFrame  # one row per bracket looked up: `bracket_exact`


def build(history: History, horizon_ms: int, versions: dict[str, int], cfg: LagConfig,
          derived: Derived | None = None) -> Built:
    """The carry as of `horizon_ms` (T) from `history` (the whole history, or an earlier
    carry and the rows after it)."""
    at_or_before = F.col("t") <= F.lit(horizon_ms)
    derived = derived or Derived.of(history, cfg)
    stats, moved, commits = derived.stats, derived.moved, derived.commits
    order = ("t", "log_partition", "log_offset")
    last_change = _last(moved.where(at_or_before), PAIR, order)
    ring = _last(commits.where(at_or_before & F.col("end_then").isNotNull()), PAIR, order,
                 cfg.intervals)
    changes = (last_change.withColumn("seed_end_then", F.lit(None).cast("bigint"))
               .unionByName(ring.select(*last_change.columns,
                                        F.col("end_then").alias("seed_end_then")))
               .groupBy(*PAIR, "t", "log_partition", "log_offset", "change", "committed_offset")
               .agg(F.max("seed_end_then").alias("seed_end_then")))

    upto = stats.where(at_or_before)
    # The last `intervals` samples at or before T; the last of them is the partition's tip.
    ranked = upto.withColumn("_n", F.row_number().over(
        Window.partitionBy(*TP).orderBy(F.col("t").desc()))).where(F.col("_n") <= cfg.intervals)
    tip = ranked.where(F.col("_n") == 1).select(*TP, F.col("high").alias("high_T"),
                                                "first_t", "held_first_t")
    lagging = (last_change.where(F.col("change") == "COMMIT")
               .select(*PAIR, F.col("t").alias("changed_at"),
                       F.col("committed_offset").alias("committed"))
               .join(tip, list(TP)).where(F.col("committed") < F.col("high_T")))
    found = brackets(lagging, upto)
    moving = F.col("changed_at") >= F.lit(horizon_ms - MOVING_MS)
    horizon = found.where(moving).groupBy(*TP).agg(F.min("a.t").alias("from_t"))
    pinned = found.where(F.col("a").isNotNull()).select(
        *TP, F.explode(F.array(F.col("a.t"), F.col("a.next_t"))).alias("t")).distinct()
    recent = ranked.select(*TP, "t")
    kept_keys = (upto.join(horizon, list(TP)).where(F.col("t") >= F.col("from_t"))
                 .select(*TP, "t").unionByName(pinned).unionByName(recent).distinct()
                 .withColumn("keep", F.lit(True)))
    marked = upto.join(kept_keys, [*TP, "t"], "left")
    following = F.lead("keep").over(Window.partitionBy(*TP).orderBy("t"))
    # Linked: the sample after it is carried too (it was before, and is kept now).
    marked = marked.withColumn("linked_now", F.coalesce(following, F.lit(True)) & F.col("linked"))
    samples = marked.where(F.col("keep")).select(
        F.lit("samples").alias("kind"), *TP, F.timestamp_millis("t").alias("sampled_at"),
        F.col("end").alias("log_end_offset"), F.col("start").alias("log_start_offset"),
        F.col("high").alias("seed_high"), F.col("first_t").alias("seed_first_t"),
        F.col("linked_now").alias("linked"))

    shapes = _last(history.shapes.withColumn("t", ms("event_time")).where(at_or_before),
                   ["group_id"], ("t", "log_partition", "log_offset", "seq")).drop("t")
    transitions = history.transitions.withColumn("t", ms("event_time")).where(at_or_before)
    t_order = ("t", "log_partition", "log_offset", "seq")
    picked = [transitions, transitions.where(entered_rebalance()),
              transitions.where(F.col("to_state") == EMPTY),
              transitions.where(F.col("from_state") == EMPTY)]
    last_transitions = union_all([_last(p, ["group_id"], t_order) for p in picked]).drop(
        "t").distinct()
    rebalances = _last(history.rebalances.withColumn("t", ms("completed_at")).where(at_or_before),
                       ["group_id"], ("t", "log_partition", "log_offset")).drop("t")

    meta = history.samples.sparkSession.createDataFrame(
        [("meta", horizon_ms, versions)],
        StructType([StructField("kind", StringType(), False),
                    StructField("horizon_ms", LongType()),
                    StructField("versions", MapType(StringType(), LongType()))]))
    rows = union_all([
        changes.select(F.lit("changes").alias("kind"), *PAIR,
                       F.timestamp_millis("t").alias("event_time"), "log_partition",
                       "log_offset", "change", "committed_offset", "seed_end_then"),
        shapes.select(F.lit("shapes").alias("kind"), *COLUMNS["group_history"]),
        last_transitions.select(F.lit("transitions").alias("kind"), *COLUMNS["group_transitions"]),
        rebalances.select(F.lit("rebalances").alias("kind"), *COLUMNS["rebalances"]),
        samples, meta])
    schema = carry_schema()
    rows = rows.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields])
    return Built(rows, found.select("bracket_exact"))

