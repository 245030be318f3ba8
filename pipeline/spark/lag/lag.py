"""The lag step: end-offset samples joined, as of each sample's time, with the replayed
history, into `partition_lag` and `group_lag` (`schemas/lag.py`), all in Spark.

Every "as of" here is one sort, never a loop: the rows asking (a sample's time) and the rows
answering (offset changes, group shapes, transitions, samples) are unioned, ordered by time
within their key, and each asking row takes the last answer before it (`last(...,
ignorenulls)` over the window). In turn:

1. per topic partition, over the samples: the running maximum of the end offset, the least
   end offset of the last `intervals` samples (Burrow's broker window), the sample after each;
2. per partition, each commit's end offset as of its time (its lag, as Burrow stores it);
3. per group and partition, each commit's window (its last `intervals` commits), then at each
   sample the last offset change (the committed offset, or its deletion) and the window;
4. per topic partition, for a lagging row, the last sample whose log end had not yet passed
   the committed offset (time lag, `pipeline.lag.rules.time_lag`);
5. per group, at each sample: its shape (state, generation, members), last transitions, last
   completed rebalance; the partition's owner comes from the members' assignments.

Burrow's verdict and the group's cause are column expressions over those values, the same
rules as `pipeline.lag.rules` (a test holds them equal). Which (group, partition) pairs get
a row: those with an offset change at or before the sample (a deletion only while the group
lives), and those assigned to a member then without one (NO_COMMIT).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from pipeline.fold.model import SHARE
from pipeline.fold.states import DEAD, EMPTY
from pipeline.lag import LagConfig
from pipeline.lag.rules import (
    CAUGHT_UP,
    INTERPOLATED,
    LOWER_BOUND,
    NO_COMMITS,
    REBALANCING,
)
from pipeline.spark.tables import paths
from pipeline.spark.tables.contract import as_table
from pipeline.spark.tables.options import read_delta
from schemas.lag import (
    COMMITTED,
    DELETED,
    ERR,
    EXPIRED,
    GROUP_LAG,
    NO_COMMIT,
    NOTFOUND,
    PARTITION_LAG,
    STATUS_CODES,
    LagCause,
)

TP = ("topic", "partition")
PAIR = ("group_id", "topic", "partition")
ASKED, ANSWERED = 1, 0  # at one time, the answers (history) sort before the question
HISTORY_TABLES = ("offset_history", "group_history", "group_transitions", "rebalances")


@dataclass(frozen=True)
class History:
    """What the lag step reads: the fold's history tables and every sample known."""

    changes: DataFrame  # offset_history
    shapes: DataFrame  # group_history
    transitions: DataFrame  # group_transitions
    rebalances: DataFrame
    samples: DataFrame  # good samples (`samples.read_samples`, reason null), any times

    @classmethod
    def read(cls, spark: SparkSession, warehouse: str, samples: DataFrame,
             versions: Mapping[str, int] | None = None) -> History:
        """Every history row, at `versions` (a table's Delta version) where given."""
        changes, shapes, transitions, rebalances = (
            read_delta(spark, paths.join(warehouse, t), (versions or {}).get(t))
            for t in HISTORY_TABLES)
        return cls(changes, shapes, transitions, rebalances, samples)


def union_all(frames: Sequence[DataFrame]) -> DataFrame:
    """The frames' rows under the union of their columns (a column one lacks: null)."""
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f, allowMissingColumns=True)
    return out


def by_tp(df: DataFrame) -> DataFrame:
    """`df` hash-partitioned by topic partition into the session's shuffle partitions, a
    number Spark's adaptive execution keeps (it would coalesce a small input into one task,
    and the windows over it are CPU work, not bytes)."""
    return df.repartition(int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or 8), *TP)


def ms(c: str | Column) -> Column:
    return F.unix_millis(F.col(c) if isinstance(c, str) else c)


def behind(end: Column, committed: Column) -> Column:
    """Lag in messages (`rules.lag`): never negative, null when either side is unknown
    (`greatest` alone would skip a null)."""
    return F.when(end.isNotNull() & committed.isNotNull(), F.greatest(F.lit(0), end - committed))


def sample_stats(samples: DataFrame, cfg: LagConfig) -> DataFrame:
    """One row per distinct sample (a key given twice keeps its greatest offsets), in epoch
    ms, hash-partitioned by topic partition (every later step keeps that partitioning: one
    shuffle of each input), with what later steps take from the partition's samples up to
    it: `high` (the running maximum end offset), `broker_min` (the least end offset of the
    last `intervals` samples), `prev_t`, `first_t`, the next sample's `next_t`/`next_high`."""
    distinct = (by_tp(samples).groupBy(*TP, ms("sampled_at").alias("t"))
                .agg(F.max("log_end_offset").alias("end"),
                     F.max("log_start_offset").alias("start")))
    by_time = Window.partitionBy(*TP).orderBy("t")
    whole = Window.partitionBy(*TP)
    stats = distinct.select(
        *TP, "t", "end", "start",
        F.max("end").over(by_time.rowsBetween(Window.unboundedPreceding, 0)).alias("high"),
        F.min("end").over(by_time.rowsBetween(1 - cfg.intervals, 0)).alias("broker_min"),
        F.lag("t").over(by_time).alias("prev_t"),
        F.min("t").over(whole).alias("first_t"))
    return stats.select("*", F.lead("t").over(by_time).alias("next_t"),
                        F.lead("high").over(by_time).alias("next_high"))


def commit_lags(changes: DataFrame, stats: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(each offset change (a TXN_ABORTED row changes nothing) in ms, partitioned by topic
    partition; each commit with `end_then`, the end offset sampled at or before it, and its
    `lag` then)."""
    moved = changes.where(F.col("change") != "TXN_ABORTED").select(
        *PAIR, ms("event_time").alias("t"), "log_partition", "log_offset", "change",
        "committed_offset")
    moved = by_tp(moved)
    asked = moved.where(F.col("change") == "COMMIT").withColumn("kind", F.lit(ASKED))
    answers = stats.select(*TP, "t", "end", F.lit(ANSWERED).alias("kind"))
    union = asked.unionByName(answers, allowMissingColumns=True)
    then = Window.partitionBy(*TP).orderBy("t", "kind").rowsBetween(Window.unboundedPreceding, 0)
    end_then = F.last("end", ignorenulls=True).over(then)
    commits = (union.withColumn("end_then", end_then)
               .where(F.col("kind") == ASKED).drop("kind", "end")
               .withColumn("lag", behind(F.col("end_then"), F.col("committed_offset"))))
    return moved, commits


def commit_windows(moved: DataFrame, commits: DataFrame, cfg: LagConfig) -> DataFrame:
    """Each offset change (`commit_lags`); a commit also carries `ring`: its last `intervals`
    commits (itself included), each with its lag against the end offset sampled at or before
    it, leaving out those no sample precedes (which have no ring themselves)."""
    last_n = (Window.partitionBy(*PAIR).orderBy("t", "log_partition", "log_offset")
              .rowsBetween(1 - cfg.intervals, 0))
    # A commit no sample precedes never enters a window (`rules.window`): as Burrow, which
    # skips a commit of a partition it has no broker offset for yet.
    sampled = F.col("end_then").isNotNull()
    ringed = commits.where(sampled).select(
        *PAIR, "t", "log_partition", "log_offset", "change", "committed_offset",
        F.collect_list(F.struct(F.col("committed_offset").alias("offset"), F.col("t").alias("t"),
                                F.col("lag").alias("lag"))).over(last_n).alias("ring"))
    unsampled = commits.where(~sampled).select(*ringed.columns[:-1])
    return (ringed.unionByName(unsampled, allowMissingColumns=True)
            .unionByName(moved.where(F.col("change") != "COMMIT"), allowMissingColumns=True))


def related_pairs(changes: DataFrame, shapes: DataFrame) -> DataFrame:
    """(group, partition) pairs that can have a row, with the time from which they can: the
    first offset change of the pair, or the first shape in which a member owned it."""
    changed = (changes.where(F.col("change") != "TXN_ABORTED")
               .groupBy(*PAIR).agg(F.min(ms("event_time")).alias("since")))
    # A share group's members share partitions and commit nothing: its rows are the share
    # lag's (`pipeline.spark.share.lag`), never NO_COMMIT (`engine.assigned_partitions`).
    owned = (shapes.where(~F.coalesce(F.col("group_type") == SHARE, F.lit(False)))
             .select("group_id", ms("event_time").alias("t"),
                           F.explode("members").alias("m"))
             .select("group_id", "t", F.explode("m.assignment").alias("a"))
             .groupBy("group_id", F.col("a.topic").alias("topic"),
                      F.col("a.partition").alias("partition"))
             .agg(F.min("t").alias("since")))
    return changed.unionByName(owned).groupBy(*PAIR).agg(F.min("since").alias("since"))


def owned_shapes(shapes: DataFrame, pairs: DataFrame) -> DataFrame:
    """Each group shape once for every partition of the group (`pairs`), with what a
    partition's row takes from it: state, generation, type, and the member owning the partition
    then (null when none does), partitioned by topic partition."""
    owners = F.filter(F.col("members"), lambda m: F.exists(
        F.coalesce(m["assignment"], F.array()),
        lambda a: (a["topic"] == F.col("topic")) & (a["partition"] == F.col("partition"))))
    owner = F.try_element_at(owners, F.lit(1))
    return by_tp(shapes.join(pairs.select(*PAIR), "group_id")
            .select(*PAIR, ms("event_time").alias("t"), "log_partition", "log_offset", "seq",
                    F.struct("state", "generation_id", "group_type",
                             owner["member_id"].alias("member_id"),
                             owner["client_id"].alias("client_id"),
                             owner["client_host"].alias("client_host")).alias("shape")))


def partition_as_of(candidates: DataFrame, changes: DataFrame, shapes: DataFrame) -> DataFrame:
    """Each candidate row (a pair at a sample's time `t`) with the pair's last offset change
    at or before then (`last_change`: change, committed_offset, at), its last commit's
    window (`ring`) and the group's shape then as the partition saw it (`shape`)."""
    asked = candidates.withColumn("kind", F.lit(ASKED))
    answers = changes.select(
        *PAIR, "t", "log_partition", "log_offset", "ring", F.lit(ANSWERED).alias("kind"),
        F.struct("change", "committed_offset", F.col("t").alias("at")).alias("last_change"))
    owned = shapes.withColumn("kind", F.lit(ANSWERED))
    union = (asked.unionByName(answers, allowMissingColumns=True)
             .unionByName(owned, allowMissingColumns=True))
    then = (Window.partitionBy(*PAIR).orderBy("t", "kind", "log_partition", "log_offset", "seq")
            .rowsBetween(Window.unboundedPreceding, 0))
    carried = ("last_change", "ring", "shape")
    return (union.select(*[c for c in union.columns if c not in carried],
                         *[F.last(c, ignorenulls=True).over(then).alias(c) for c in carried])
            .where(F.col("kind") == ASKED).drop("kind", "log_partition", "log_offset", "seq"))


def group_as_of(keys: DataFrame, shapes: DataFrame, transitions: DataFrame,
                rebalances: DataFrame) -> DataFrame:
    """Each (group_id, t) of `keys` with what the group's history says then, for its cause:
    `since` (when it entered its state), the last transition's cause, the last entry into a
    rebalance, into and out of Empty, and the last rebalance completed."""
    entered = entered_rebalance()
    parts = [
        keys.select("group_id", "t", F.lit(ASKED).alias("kind")),
        shapes.select("group_id", ms("event_time").alias("t"), *_positions("seq"),
                      ms("state_since").alias("since")),
        transitions.select(
            "group_id", ms("event_time").alias("t"), *_positions("seq"),
            F.col("cause").alias("last_cause"),
            F.when(entered, F.struct(ms("event_time").alias("at"), "cause")).alias("rebalance_started"),
            F.when(F.col("to_state") == EMPTY, ms("event_time")).alias("empty_entered"),
            F.when(F.col("from_state") == EMPTY, ms("event_time")).alias("empty_left")),
        rebalances.select("group_id", ms("completed_at").alias("t"), *_positions(None), F.struct(
            "generation_id", "cause", ms("started_at").alias("started"),
            ms("completed_at").alias("completed")).alias("last_rebalance")),
    ]
    union = union_all(parts)
    then = (Window.partitionBy("group_id").orderBy("t", "kind", "o1", "o2", "o3")
            .rowsBetween(Window.unboundedPreceding, 0))
    carried = ["since", "last_cause", "rebalance_started", "empty_entered", "empty_left",
               "last_rebalance"]
    return (union.select("group_id", "t", "kind",
                         *[F.last(c, ignorenulls=True).over(then).alias(c) for c in carried])
            .where(F.col("kind") == ASKED).drop("kind"))


def entered_rebalance() -> Column:
    """A group_transitions row that enters a rebalance (from outside one)."""
    rebalancing = F.col("to_state").isin(*REBALANCING)
    return rebalancing & (F.col("from_state").isNull()
                          | ~F.col("from_state").isin(*REBALANCING))


def _positions(seq: str | None) -> list[Column]:
    """A history row's place among rows of the same time: its log position (and seq)."""
    return [F.lit(ANSWERED).alias("kind"), F.col("log_partition").alias("o1"),
            F.col("log_offset").alias("o2"),
            (F.col(seq) if seq else F.lit(None).cast("int")).alias("o3")]


def brackets(asked: DataFrame, stats: DataFrame) -> DataFrame:
    """`asked` (with `committed`) with `a`: the partition's last sample whose running maximum
    end offset had not passed the committed offset (t, high, the next sample's next_t and
    next_high)."""
    asked = asked.withColumn("key", F.col("committed")).withColumn("kind", F.lit(ASKED))
    answers = stats.select(*TP, F.col("high").alias("key"), F.lit(ANSWERED).alias("kind"),
                           F.col("t").alias("at"), F.struct(
                               F.col("t").alias("t"), "high", "next_t", "next_high").alias("a"))
    union = asked.unionByName(answers, allowMissingColumns=True)
    then = Window.partitionBy(*TP).orderBy("key", "kind", "at").rowsBetween(Window.unboundedPreceding, 0)
    return (union.withColumn("a", F.last("a", ignorenulls=True).over(then))
            .where(F.col("kind") == ASKED).drop("key", "kind", "at"))


def with_time_lag(rows: DataFrame, stats: DataFrame) -> DataFrame:
    """`rows` (with `committed`, `end`, `t`, `first_t`) with `lag_ms` and `lag_ms_basis`: for a
    lagging row, the partition's last sample whose running maximum end offset had not passed
    the committed offset and the one after it bracket when the log end stood there."""
    behind_ = F.col("committed") < F.col("end")
    found = brackets(rows.where(behind_), stats)
    interpolated = F.expr(
        "a.t + (cast(committed - a.high AS decimal(38,0)) * cast(a.next_t - a.t AS decimal(38,0)))"
        " div cast(a.next_high - a.high AS decimal(38,0))")
    timed = found.select(
        *[c for c in found.columns if c != "a"],
        F.when(F.col("a").isNull(), F.col("t") - F.col("first_t"))
        .otherwise(F.col("t") - interpolated).alias("lag_ms"),
        F.when(F.col("a").isNull(), F.lit(LOWER_BOUND)).otherwise(F.lit(INTERPOLATED))
        .alias("lag_ms_basis"))
    rest = rows.where(~behind_ | F.col("committed").isNull()).select(
        "*", F.when(F.col("committed").isNotNull(), F.lit(0)).cast("bigint").alias("lag_ms"),
        F.when(F.col("committed").isNotNull(), F.lit(CAUGHT_UP)).alias("lag_ms_basis"))
    return timed.unionByName(rest)


def burrow(cfg: LagConfig) -> Column:
    """Burrow's partition verdict, struct(status, rule), over `w` (the window of commits,
    oldest first: offset, t, lag), `lag` (the current lag), `broker_min` and `t`: the rules of
    `pipeline.lag.rules.partition_status`, in Burrow's code order."""
    last, first = "try_element_at(w, -1)", "try_element_at(w, 1)"
    verdict = "named_struct('status', '{0}', 'rule', '{1}')"
    drop = ("try_element_at(filter(sequence(1, greatest(size(w) - 1, 1)), "
            "i -> get(w, i).offset < get(w, i - 1).offset), 1)")
    lags = "filter(transform(w, c -> c.lag), x -> x IS NOT NULL)"
    return F.expr(f"""CASE
        WHEN size(w) = 0 THEN {verdict.format('OK', 'NO_COMMITS')}
        WHEN size(w) / {cfg.intervals} < {cfg.minimum_complete} THEN {verdict.format('OK', 'INCOMPLETE')}
        WHEN lag <= {cfg.allowed_lag} THEN {verdict.format('OK', 'CAUGHT_UP')}
        WHEN t - {last}.t > {last}.t - {first}.t AND NOT (broker_min <= {last}.offset)
            THEN {verdict.format('STOP', 'STOPPED')}
        WHEN {drop} IS NOT NULL AND NOT exists(slice(w, {drop} + 1, size(w)),
                                               c -> c.offset >= get(w, {drop} - 1).offset)
            THEN {verdict.format('REWIND', 'REWOUND')}
        WHEN exists(w, c -> c.lag <= {cfg.allowed_lag}) THEN {verdict.format('OK', 'LAG_ZERO_IN_WINDOW')}
        WHEN forall(w, c -> c.offset = {first}.offset) THEN {verdict.format('STALL', 'STALLED')}
        WHEN forall(sequence(1, greatest(size({lags}) - 1, 1)),
                    i -> coalesce(get({lags}, i) >= get({lags}, i - 1), true))
            THEN {verdict.format('WARN', 'LAG_NOT_DECREASING')}
        ELSE {verdict.format('OK', 'PROGRESSING')}
    END""")


def with_committed(rows: DataFrame, cfg: LagConfig) -> DataFrame:
    """From the last offset change: `committed`, `offset_status`, `committed_at`, `lag`, and
    `w`, Burrow's window (the last commit's ring, without commits older than expire-group)."""
    change = F.col("last_change.change")
    status = (F.when(F.col("last_change").isNull(), F.lit(NO_COMMIT))
              .when(change == "COMMIT", F.lit(COMMITTED))
              .when(change == "TOMBSTONE", F.lit(DELETED)).otherwise(change))  # EXPIRED
    committed = F.when(change == "COMMIT", F.col("last_change.committed_offset"))
    # Empty without a committed offset: a deleted offset keeps no window.
    recent = F.filter(F.coalesce(F.col("ring"), F.array()),
                      lambda c: (c["t"] > F.col("t") - F.lit(cfg.expire_group_ms))
                      & committed.isNotNull())
    return rows.select(
        *[c for c in rows.columns if c not in ("last_change", "ring")],
        committed.alias("committed"), status.alias("offset_status"),
        F.col("last_change.at").alias("committed_at"),
        behind(F.col("end"), committed).alias("lag"), recent.alias("w"))


def emitted(rows: DataFrame) -> DataFrame:
    """The rows that say something: a committed offset; a deletion while the group lives;
    an assignment without a commit. With the shape's state, generation and owner."""
    shaped = rows.select(
        "*", *[F.col(f"shape.{c}").alias(c) for c in
               ("member_id", "client_id", "client_host", "state", "generation_id",
                "group_type")])
    status, state = F.col("offset_status"), F.col("state")
    alive = state.isNotNull() & (state != DEAD)
    return shaped.where((status == COMMITTED)
                        | (status.isin(DELETED, EXPIRED) & alive)
                        | ((status == NO_COMMIT) & F.col("member_id").isNotNull()))


@dataclass(frozen=True)
class Derived:
    """What the lag step and the carry both derive from the history: `sample_stats`, and the
    offset changes and commits of `commit_lags`."""

    stats: DataFrame
    moved: DataFrame
    commits: DataFrame

    @classmethod
    def of(cls, history: History, cfg: LagConfig,
           keep: Callable[[DataFrame], DataFrame] = lambda df: df) -> Derived:
        stats = keep(sample_stats(history.samples, cfg))
        moved, commits = commit_lags(history.changes, stats)
        return cls(stats, keep(moved), keep(commits))


def partition_rows(ready: DataFrame, history: History, cfg: LagConfig,
                   derived: Derived | None = None) -> DataFrame:
    """Every partition_lag row of the `ready` samples, with the columns group_lag needs."""
    derived = derived or Derived.of(history, cfg)
    stats = derived.stats
    asked = by_tp(ready.select(*TP, ms("sampled_at").alias("t")).distinct())
    pairs = related_pairs(history.changes, history.shapes)
    candidates = (stats.join(asked, [*TP, "t"]).join(by_tp(pairs), list(TP))
                  .where(F.col("t") >= F.col("since")).drop("since"))
    rows = partition_as_of(candidates, commit_windows(derived.moved, derived.commits, cfg),
                           owned_shapes(history.shapes, pairs))
    rows = emitted(with_time_lag(with_committed(rows, cfg), stats))
    verdict = F.when(F.col("committed").isNotNull(), burrow(cfg))
    last, first = F.try_element_at("w", F.lit(-1)), F.try_element_at("w", F.lit(1))
    lags = F.transform("w", lambda c: c["lag"])
    return rows.select(
        "*", verdict["status"].alias("status"), verdict["rule"].alias("rule"),
        F.when(F.col("committed").isNotNull(), F.size("w")).alias("window_commits"),
        (last["t"] - first["t"]).alias("window_span_ms"), (F.col("t") - last["t"]).alias("idle_ms"),
        F.when(F.size("w") > 0, F.array_min(lags)).alias("window_min_lag"),
        F.when(F.size("w") > 0, F.array_max(lags)).alias("window_max_lag"))


def partition_lag(rows: DataFrame) -> DataFrame:
    """`partition_rows` as the partition_lag table."""
    named = {"sampled_at": F.timestamp_millis(F.col("t")), "log_end_offset": F.col("end"),
             "log_start_offset": F.col("start"), "committed_offset": F.col("committed"),
             "committed_at": F.timestamp_millis(F.col("committed_at"))}
    return as_table(rows, PARTITION_LAG, named)


def _code(status: Column) -> Column:
    """Burrow's status code of a status name."""
    return F.create_map(*[F.lit(x) for kv in STATUS_CODES.items() for x in kv])[status]


def group_lag(rows: DataFrame, history: History, cfg: LagConfig) -> DataFrame:
    """`partition_rows` summed up per group and sample: Burrow's group form, and the cause
    (from the group's history then, `group_as_of`)."""
    known = F.col("status").isNotNull() & (F.col("rule") != NO_COMMITS)
    worst = F.max(F.when(known, F.struct(
        _code(F.col("status")).alias("code"), F.coalesce(F.col("lag"), F.lit(-1)).alias("lag"),
        "topic", "partition", "status", "rule"))).alias("worst")
    summed = rows.groupBy("group_id", "t").agg(
        F.sum("lag").alias("total_lag"), F.max("lag").alias("max_lag"),
        F.max("lag_ms").alias("max_lag_ms"), F.count(F.lit(1)).cast("int").alias("partitions"),
        F.count_if(F.col("lag").isNull()).cast("int").alias("partitions_unknown"),
        F.count_if(F.col("window_commits") >= cfg.intervals).alias("full"),
        F.count_if(F.col("status").isNotNull()).alias("evaluated"), worst,
        F.max("prev_t").alias("prev_t"),
        F.min(F.when(F.col("offset_status") == EXPIRED, F.col("committed_at"))).alias("expired_at"),
        F.count_if(F.col("offset_status") == EXPIRED).alias("expired"),
        F.min(F.when(F.col("offset_status") == DELETED, F.col("committed_at"))).alias("deleted_at"),
        F.count_if(F.col("offset_status") == DELETED).alias("deleted"),
        F.max("state").alias("state"), F.max("generation_id").alias("generation_id"),
        F.max("group_type").alias("group_type"))
    summed = summed.join(group_as_of(summed.select("group_id", "t"), history.shapes,
                                     history.transitions, history.rebalances),
                         ["group_id", "t"], "left")
    status = (F.when(F.col("worst").isNull() | (F.col("state") == DEAD), F.lit(NOTFOUND))
              .when(F.col("worst.code") > STATUS_CODES[ERR], F.lit(ERR))
              .otherwise(F.col("worst.status")))
    start = F.col("t") - F.greatest(F.coalesce(F.col("max_lag_ms"), F.lit(0)),
                                    F.col("t") - F.coalesce(F.col("prev_t"), F.col("t")))
    framed = summed.select("*", status.alias("status"), start.alias("window_start"))
    why = F.when((F.coalesce(F.col("max_lag"), F.lit(0)) > 0) | (F.col("partitions_unknown") > 0),
                 cause())
    named = {
        "sampled_at": F.timestamp_millis(F.col("t")),
        "complete": F.when(F.col("evaluated") > 0, F.col("full") / F.col("evaluated"))
        .otherwise(F.lit(0.0)),
        "worst_topic": F.col("worst.topic"), "worst_partition": F.col("worst.partition"),
        "worst_status": F.col("worst.status"), "worst_rule": F.col("worst.rule"),
        "cause": why["cause"], "cause_generation_id": why["generation_id"],
        "cause_detail": why["detail"], "cause_since": F.timestamp_millis(why["since"]),
        "cause_ms": why["ms"], "cause_window_start": F.timestamp_millis(F.col("window_start")),
    }
    return framed.select(*[named.get(c.name, F.col(c.name)).alias(c.name) for c in GROUP_LAG])


def cause() -> Column:
    """`pipeline.lag.rules.cause` over a group_lag row's columns: struct(cause, generation_id,
    detail, since, ms)."""
    def found(name: str, generation: str = "CAST(NULL AS INT)",
              detail: str = "CAST(NULL AS STRING)", since: str = "CAST(NULL AS BIGINT)",
              covered: str = "CAST(NULL AS BIGINT)") -> str:
        return (f"named_struct('cause', {name}, 'generation_id', {generation}, 'detail', "
                f"{detail}, 'since', {since}, 'ms', {covered})")

    def covered(since: str, until: str) -> str:
        return f"CASE WHEN {since} IS NULL THEN NULL ELSE {until} - greatest({since}, window_start) END"

    rebalancing = ", ".join(f"'{s}'" for s in REBALANCING)
    lr = "last_rebalance"
    return F.expr(f"""CASE
        WHEN state IN ('{DEAD}', '{EMPTY}') THEN {found("upper(state)", "generation_id",
            "last_cause", "since", covered("since", "t"))}
        WHEN state IN ({rebalancing}) THEN {found(f"'{LagCause.REBALANCE}'", "generation_id",
            "rebalance_started.cause", "rebalance_started.at", covered("rebalance_started.at", "t"))}
        WHEN {lr}.completed >= window_start THEN {found(f"'{LagCause.REBALANCE}'", f"{lr}.generation_id",
            f"{lr}.cause", f"{lr}.started", covered(f"coalesce({lr}.started, {lr}.completed)",
                                                     f"{lr}.completed"))}
        WHEN empty_left >= window_start AND empty_entered IS NOT NULL THEN {found(f"'{LagCause.EMPTY}'",
            since="empty_entered", covered=covered("empty_entered", "empty_left"))}
        WHEN expired > 0 THEN {found(f"'{LagCause.OFFSETS_EXPIRED}'",
            detail="concat(CAST(expired AS STRING), ' partitions')", since="expired_at")}
        WHEN deleted > 0 THEN {found(f"'{LagCause.OFFSETS_DELETED}'",
            detail="concat(CAST(deleted AS STRING), ' partitions')", since="deleted_at")}
        ELSE {found(f"'{LagCause.NONE}'")}
    END""")
