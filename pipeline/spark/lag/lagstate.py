"""The lag step: the incremental engine (`pipeline.lag.engine`, through `pipeline.lag.batch`'s
per-key steps) run over the keys a batch touches, its state kept in one Delta table,
`_lag_state` (`kind`, `key`, `state`: a row per topic partition and per group with lag, its
JSON state, and a `meta` row). The stream and the backfill run this one step: the stream
over a micro-batch's rows and its state, the backfill over every history row from no state.

1. Per topic partition: its ready samples, its new offset changes (offset_history), an
   assignment fact for each new group_history row that assigns it, and its state row (only
   the touched keys' rows are joined in). Out: candidate rows keyed by group, its next
   state, or `redo` where the state cannot answer.
2. Per group: its candidates, its new group_history, group_transitions and rebalances rows
   and its state row. Out: its partition_lag and group_lag rows (wire JSON: the tables'
   columns, times in epoch ms), its next state, or `redo`.

Where: on the executors (`step`), two grouped maps (`applyInArrow`), each call a hash bucket
of keys (`by_bucket`); a small stream batch (at most `LOCAL_ROWS` input rows, its tables
written from the driver) on the driver (`local_step`), the same `step_keys` over the same
rows, with no shuffle: a step on the executors costs a few seconds of Spark jobs whatever
its size.

A key marked `redo` is run again from no state over all it was ever sent (`Tables`: the
history tables filtered to it, the samples evaluated so far), its candidates kept for the
batch's samples only: what `batch.run` does on one machine, here a grouped map over just
those keys (`partitions_again`, `groups_again`). Without a state at all (a new stream, one
of an earlier release), every key is run that way once.

Cost: a batch's rows and the state rows of the keys they touch (on the executors the state
table is scanned, not shuffled; on the driver it is read whole by delta-rs); the touched
keys' states are MERGEd back."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    IntegerType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pipeline.fold.model import SHARE
from pipeline.lag import LagConfig
from pipeline.lag.batch import KINDS, TP, PartitionInput, step_group, step_partition
from pipeline.lag.engine import FORMAT as ENGINE_FORMAT
from pipeline.lag.engine import PREV_T, assigned_partitions
from pipeline.spark.lag.samples import REASON, read_samples, samples_schema
from pipeline.spark.runtime.keep import keep, release
from pipeline.spark.tables import paths, writes
from pipeline.spark.tables.contract import arrow_schema, table_schema
from pipeline.spark.tables.creation import create_table
from pipeline.spark.tables.options import read_delta
from schemas.internal import INTERNAL_KEYS, LAG_STATE
from schemas.lag import SAMPLE_KEY

log = logging.getLogger(__name__)

PARTITION, GROUP, META = "partition", "group", "meta"
READ = "read"  # the stream's record of what its lag step was given (lagflow.Read)
# The state table's version (its meta row's): the engine's state format, so states of an older
# engine are not read but rebuilt from the history by the next step.
TABLE_FORMAT = ENGINE_FORMAT

# The history tables the engine reads, the columns it reads of each, and the stage input
# kind each feeds (`batch.KINDS` for a group's; offset changes for a partition's).
ENGINE_INPUTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "offset_history": ("changes", ("group_id", "topic", "partition", "event_time",
                                   "log_partition", "log_offset", "change", "committed_offset")),
    "group_history": ("shapes", ("group_id", "event_time", "log_partition", "log_offset", "seq",
                                 "state", "generation_id", "group_type", "state_since",
                                 "members")),
    "group_transitions": ("transitions", ("group_id", "event_time", "log_partition",
                                          "log_offset", "seq", "from_state", "to_state",
                                          "cause")),
    "rebalances": ("rebalances", ("group_id", "generation_id", "started_at", "completed_at",
                                  "cause", "log_partition", "log_offset")),
}
GROUP_TABLES = {ENGINE_INPUTS[t][0]: t for t in ("group_history", "group_transitions", "rebalances")}
# The nested fields the engine reads of a column of structs (a member's own times never travel).
FIELDS = {"members": ("member_id", "client_id", "client_host", "assignment")}
SAMPLE_COLUMNS = ("topic", "partition", "sampled_at", "log_end_offset", "log_start_offset")
TIME = {"offset_history": "event_time", "group_history": "event_time",
        "group_transitions": "event_time", "samples": "sampled_at"}  # -> the engine's `t`

# A stage's input rows (its key's columns, then these) and its output rows.
SAMPLE_IN, CHANGE_IN, ASSIGN_IN, STATE_IN = "samples", "changes", "assigned", "state"
CANDIDATE, REDO, PART_ROW, GROUP_ROW = "candidate", "redo", "partition_lag", "group_lag"
IN_COLUMNS = (StructField("kind", StringType(), False), StructField("j", StringType(), True),
              StructField("now", BooleanType(), True))
OUT = StructType([StructField("kind", StringType(), False),
                  StructField("key", StringType(), False),
                  StructField("text", StringType(), False)])
BUCKET = "_bucket"  # a stage's grouping: a hash bucket of its keys
TP_COLUMNS = (StructField("topic", StringType(), True),
              StructField("partition", IntegerType(), True))


def state_path(warehouse: str) -> str:
    return paths.join(warehouse, LAG_STATE)


def state_schema() -> StructType:
    return StructType([StructField("kind", StringType(), False),
                       StructField("key", StringType(), False),
                       StructField("state", StringType(), False)])


def ensure_state(spark: SparkSession, warehouse: str) -> None:
    create_table(spark, state_path(warehouse), state_schema())


def partition_key(tp: TP) -> str:
    """A topic partition's `key` in the state table."""
    return json.dumps(list(tp))


def _column(name: str, schema: StructType) -> Column:
    """`name` as the engine reads it: times as epoch ms; an array of structs cut to the
    fields it reads (`FIELDS`)."""
    dtype = schema[name].dataType
    if isinstance(dtype, TimestampType):
        return F.unix_millis(F.col(name)).alias(name)
    if name in FIELDS:
        return F.transform(F.col(name), lambda m: F.struct(
            *[m[f].alias(f) for f in FIELDS[name]])).alias(name)
    return F.col(name)


def as_json(df: DataFrame, table: str) -> Column:
    """`df`'s rows of `table` (a history table or the samples) as one JSON text column."""
    columns = SAMPLE_COLUMNS if table == "samples" else ENGINE_INPUTS[table][1]
    schema = df.schema
    return F.to_json(F.struct(*[_column(c, schema) for c in columns]),
                     {"ignoreNullFields": "false"}).alias("j")


def _parsed(text: str, time: str | None) -> dict[str, Any]:
    row: dict[str, Any] = orjson.loads(text)
    if time is not None:
        row["t"] = row[time]
    return row


# ---------------------------------------------------------------- the grouped maps

Out = list[tuple[str, str, str]]
InRow = tuple[str, str | None, bool | None]  # kind, j, now
KeyStep = Callable[[tuple[Any, ...], list[InRow]], Out]
KeyRows = dict[tuple[Any, ...], list[InRow]]


def by_bucket(keys: Sequence[str], step_key: KeyStep) -> Callable[[pa.Table], pa.Table]:
    """A grouped map over a bucket of keys (`groupBy(BUCKET).applyInArrow`): the bucket's rows
    split by `keys`, `step_key` run on each key's (kind, j, now) rows in turn. One call a
    bucket, not a key: Spark's cost a group call (~0.3 ms) would be most of a step of
    10,000 keys (docs/performance.md, "The lag step")."""

    def run(table: pa.Table) -> pa.Table:
        mine: KeyRows = {}
        columns = [table.column(k).to_pylist() for k in keys]
        for key, row in zip(zip(*columns, strict=True),
                            zip(*(table.column(c).to_pylist() for c in ("kind", "j", "now")),
                                strict=True), strict=True):
            mine.setdefault(key, []).append(row)
        out = step_keys(mine, step_key)
        return pa.table([pa.array([r[i] for r in out], pa.string()) for i in range(3)],
                        schema=pa.schema([pa.field(f.name, pa.string(), False) for f in OUT]))

    return run


def step_keys(mine: KeyRows, step_key: KeyStep) -> Out:
    """`step_key` over each key's rows, in one order."""
    out: Out = []
    for key in sorted(mine, key=repr):
        out += step_key(key, mine[key])
    return out


def partition_key_step(cfg: LagConfig, until_ms: int | None) -> KeyStep:
    """Stage 1 for one topic partition: a key with only its state row (not touched) gives
    nothing; one with its state row runs from it; one without, from no state over all its
    rows, candidates kept for samples marked `now`."""

    def run(key: tuple[Any, ...], rows: list[InRow]) -> Out:
        tp = (key[0], int(key[1]))
        mine = PartitionInput()
        state: str | None = None
        now: set[int] = set()
        for kind, j, is_now in rows:
            assert j is not None
            if kind == STATE_IN:
                state = j
            elif kind == SAMPLE_IN:
                row = _parsed(j, "sampled_at")
                mine.samples.append(row)
                if is_now:
                    now.add(row["t"])
            elif kind == CHANGE_IN:
                mine.changes.append(_parsed(j, "event_time"))
            else:
                mine.assigned.append(_parsed(j, None))
        if not (mine.samples or mine.changes or mine.assigned):
            return []
        r = step_partition(state, tp, mine, cfg, until_ms, None if state is not None else now)
        if not r.exact:
            return [(REDO, partition_key(tp), r.reasons[0])]
        out = [(CANDIDATE, c["group_id"], orjson.dumps(c).decode())
               for c in r.candidates]
        out.append((STATE_IN, partition_key(tp), r.state.to_json()))
        return out

    return run


def group_key_step(cfg: LagConfig, until_ms: int | None) -> KeyStep:
    """Stage 2 for one group: its lag rows as wire JSON (the tables' column names, times in
    epoch ms), its next state, or `redo`."""
    times = {"shapes": "event_time", "transitions": "event_time", "rebalances": None}

    def run(key: tuple[Any, ...], rows: list[InRow]) -> Out:
        group = key[0]
        state: str | None = None
        candidates: list[dict[str, Any]] = []
        mine: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
        for kind, j, _ in rows:
            assert j is not None
            if kind == STATE_IN:
                state = j
            elif kind == CANDIDATE:
                candidates.append(orjson.loads(j))
            else:
                mine[kind].append(_parsed(j, times[kind]))
        if not (candidates or any(mine.values())):
            return []
        g = step_group(state, group, candidates, mine, cfg, until_ms)
        if not g.exact:
            return [(REDO, group, g.reasons[0])]
        out = [(name, group, _wire_row(r)) for name, rows_ in
               ((PART_ROW, g.partition_rows), (GROUP_ROW, g.group_rows)) for r in rows_]
        out.append((STATE_IN, group, g.state.to_json()))
        return out

    return run


def _wire_row(row: Mapping[str, Any]) -> str:
    """An engine's row as the wire's JSON of its table (`t` is `sampled_at`)."""
    return orjson.dumps({("sampled_at" if k == "t" else k): v for k, v in row.items()
                         if k != PREV_T}).decode()


# ---------------------------------------------------------------- the stages' inputs


def _tagged(df: DataFrame, keys: Sequence[str], kind: str, j: Column,
            now: Column | None = None) -> DataFrame:
    return df.select(*[F.col(k) for k in keys], F.lit(kind).alias("kind"), j,
                     (now if now is not None else F.lit(False)).alias("now"))


def samples_input(samples: DataFrame) -> DataFrame:
    """Samples (their columns and a boolean `now`) as stage 1's rows."""
    return _tagged(samples, ("topic", "partition"), SAMPLE_IN, as_json(samples, "samples"),
                   F.col("now"))


def changes_input(changes: DataFrame) -> DataFrame:
    return _tagged(changes, ("topic", "partition"), CHANGE_IN,
                   as_json(changes, "offset_history"))


def assigned_input(shapes: DataFrame) -> DataFrame:
    """One fact per group_history row and topic partition it assigns (`assigned_partitions`:
    a share group's never)."""
    owned = (shapes.where(F.col("group_type").isNull() | (F.col("group_type") != SHARE))
             .select("group_id", F.unix_millis("event_time").alias("t"),
                     F.explode("members").alias("m"))
             .select("group_id", "t", F.explode("m.assignment").alias("a"))
             .select("group_id", "t", F.col("a.topic").alias("topic"),
                     F.col("a.partition").alias("partition")).distinct())
    return _tagged(owned, ("topic", "partition"), ASSIGN_IN,
                   F.to_json(F.struct("group_id", "t")).alias("j"))


def group_input(kind: str, rows: DataFrame) -> DataFrame:
    return _tagged(rows, ("group_id",), kind, as_json(rows, GROUP_TABLES[kind]))


def _union(parts: Iterable[DataFrame]) -> DataFrame | None:
    out = None
    for p in parts:
        out = p if out is None else out.unionByName(p)
    return out


def _partition_states(states: DataFrame, touched: DataFrame) -> DataFrame:
    key = F.from_json("key", "array<string>")
    rows = states.where(F.col("kind") == PARTITION).select(
        key[0].alias("topic"), key[1].cast("int").alias("partition"),
        F.lit(STATE_IN).alias("kind"), F.col("state").alias("j"), F.lit(False).alias("now"))
    return rows.join(F.broadcast(touched), ["topic", "partition"], "left_semi")


def _group_states(states: DataFrame, touched: DataFrame) -> DataFrame:
    rows = states.where(F.col("kind") == GROUP).select(
        F.col("key").alias("group_id"), F.lit(STATE_IN).alias("kind"),
        F.col("state").alias("j"), F.lit(False).alias("now"))
    return rows.join(F.broadcast(touched), ["group_id"], "left_semi")


@dataclass
class Tables:
    """All a key was sent, read from the warehouse's history tables (which hold the batch's
    own rows by then) and the samples table at the batch's version (its good samples but
    those still waiting for the watermark): a key's input when run from no state."""

    spark: SparkSession
    warehouse: str
    end_offsets: str
    version: int | None
    until_ms: int
    waiting: pa.Table  # the samples the watermark has not passed (SAMPLE_KEY columns)

    def table(self, table: str) -> DataFrame:
        return read_delta(self.spark, paths.join(self.warehouse, table))

    def samples(self, ready: DataFrame) -> DataFrame:
        """Every sample evaluated so far and the batch's `ready` ones, `now` on those."""
        marked = ready.select(*SAMPLE_KEY).distinct().withColumn("now", F.lit(True))
        if self.version is None:
            return ready.select(*SAMPLE_COLUMNS, F.lit(True).alias("now"))
        good = read_samples(self.spark, self.end_offsets, self.version).where(
            F.col(REASON).isNull())
        if self.waiting.num_rows:
            waiting = self.spark.createDataFrame(self.waiting.select(list(SAMPLE_KEY)))
            good = good.join(waiting, list(SAMPLE_KEY), "left_anti")
        seen = good.select(*SAMPLE_COLUMNS).unionByName(ready.select(*SAMPLE_COLUMNS))
        return (seen.join(marked, list(SAMPLE_KEY), "left")
                .select(*SAMPLE_COLUMNS, F.coalesce("now", F.lit(False)).alias("now")))


@dataclass
class Stage:
    """A stage's output rows, kept for the jobs that read them, and the keys it ran again."""

    rows: DataFrame
    redone: list[str] = field(default_factory=list)  # "<key>: <why>", for the log
    _kept: list[DataFrame] = field(default_factory=list)

    def of(self, kind: str) -> DataFrame:
        return self.rows.where(F.col("kind") == kind)

    def release(self) -> None:
        for df in self._kept:
            release(df)


def _run_stage(inputs: DataFrame, keys: Sequence[str], step_key: KeyStep) -> DataFrame:
    """`step_key` over each key of `inputs`, a bucket of keys a call."""
    spark = inputs.sparkSession
    buckets = int(spark.conf.get("spark.sql.shuffle.partitions") or "8")
    return (inputs.withColumn(BUCKET, F.pmod(F.xxhash64(*keys), F.lit(buckets)))
            .groupBy(BUCKET).applyInArrow(by_bucket(keys, step_key), OUT))


def _staged(first: DataFrame, again: Callable[[list[str]], DataFrame | None],
            name: Callable[[str], str]) -> Stage:
    """`first` kept; its redo keys run `again` from no state and put in their place."""
    held = keep(first)
    stage = Stage(held, _kept=[held])
    redo = [(r[0], r[1]) for r in held.where(F.col("kind") == REDO).select("key", "text")
            .collect()]
    if redo:
        stage.redone = [f"{name(k)}: {why}" for k, why in redo]
        rerun = again([k for k, _ in redo])
        rows = held.where(F.col("kind") != REDO)
        if rerun is not None:
            rows = rows.unionByName(rerun)
        stage.rows = keep(rows)
        stage._kept.append(stage.rows)
    return stage


@dataclass(frozen=True)
class Step:
    """One batch's lag: its rows (typed as the lag tables) and the state rows to write after
    them; `release` once written."""

    partition_lag: DataFrame
    group_lag: DataFrame
    states: DataFrame  # (kind, key, state) of every key the batch touched
    whole: bool  # states hold every key (run from no state): replace the table with them
    rows: int  # partition_lag's
    group_rows: int
    rebuilt: list[str]
    stages: tuple[Stage, ...]

    def release(self) -> None:
        for s in self.stages:
            s.release()


TP_KEYS = ("topic", "partition")


def _partition_rows(samples: DataFrame, rows: Mapping[str, DataFrame]) -> DataFrame:
    """Stage 1's input: `samples` (with `now`) and the offset changes and assignments of
    `rows` (history tables by name)."""
    parts = [samples_input(samples)]
    if "offset_history" in rows:
        parts.append(changes_input(rows["offset_history"]))
    if "group_history" in rows:
        parts.append(assigned_input(rows["group_history"]))
    union = _union(parts)
    assert union is not None
    return union


def _group_rows(rows: Mapping[str, DataFrame]) -> list[DataFrame]:
    return [group_input(kind, rows[t]) for kind, t in GROUP_TABLES.items() if t in rows]


def partitions_again(tables: Tables, now: DataFrame, keys: list[str], step_key: KeyStep
                     ) -> DataFrame:
    """Stage 1 from no state for the topic partitions `keys` (state keys) over all they were
    sent, candidates kept for the samples `now` (the batch's)."""
    tps = [tuple(json.loads(k)) for k in keys]
    wanted = tables.spark.createDataFrame(tps, StructType(list(TP_COLUMNS)))
    every = _partition_rows(tables.samples(now), {
        "offset_history": tables.table("offset_history"),
        "group_history": tables.table("group_history")})
    return _run_stage(every.join(F.broadcast(wanted), list(TP_KEYS), "left_semi"), TP_KEYS,
                      step_key)


def groups_again(tables: Tables, candidates: DataFrame, keys: list[str], step_key: KeyStep
                 ) -> DataFrame:
    """Stage 2 from no state for the groups `keys` over their whole history and this batch's
    `candidates` (stage 2's rows)."""
    wanted = tables.spark.createDataFrame([(k,) for k in keys], "group_id string")
    every = _union([candidates, *_group_rows({t: tables.table(t)
                                              for t in GROUP_TABLES.values()})])
    assert every is not None
    return _run_stage(every.join(F.broadcast(wanted), ["group_id"], "left_semi"),
                      ("group_id",), step_key)


def step(spark: SparkSession, warehouse: str, tables: Tables, history: Mapping[str, DataFrame],
         ready: DataFrame, cfg: LagConfig, until_ms: int | None,
         states: DataFrame | None) -> Step:
    """The lag rows of the batch's `ready` samples (their columns) and `history` (its rows
    of each history table), and the touched keys' next states, on the executors.
    `states`: the state table's rows; None: no state, every key runs from all it was sent
    (`tables`)."""
    if states is None:
        log.debug("lag: building the lag state from every history row (first step)")
        history = {t: tables.table(t) for t in ENGINE_INPUTS}
        ready = tables.samples(ready)
    else:
        ready = ready.select(*SAMPLE_COLUMNS, F.lit(True).alias("now"))
    p_fn, g_fn = partition_key_step(cfg, until_ms), group_key_step(cfg, until_ms)
    first_in = _partition_rows(ready, history)
    if states is not None:
        touched = first_in.select(*TP_KEYS).distinct()
        first_in = first_in.unionByName(_partition_states(states, touched))
    started = time.monotonic()
    now = ready.where(F.col("now"))
    stage1 = _staged(_run_stage(first_in, TP_KEYS, p_fn),
                     lambda keys: partitions_again(tables, now, keys, p_fn),
                     lambda k: "partition {}-{}".format(*json.loads(k)))
    candidates = stage1.of(CANDIDATE).select(
        F.col("key").alias("group_id"), F.col("kind"), F.col("text").alias("j"),
        F.lit(False).alias("now"))
    second_in = _union([candidates, *_group_rows(history)])
    assert second_in is not None
    if states is not None:
        touched_g = second_in.select("group_id").distinct()
        second_in = second_in.unionByName(_group_states(states, touched_g))
    stage1_s = time.monotonic() - started
    stage2 = _staged(_run_stage(second_in, ("group_id",), g_fn),
                     lambda keys: groups_again(tables, candidates, keys, g_fn),
                     lambda k: f"group {k}")
    for why in stage1.redone + stage2.redone:
        log.info("lag: read the history again for %s", why)
    parts, groups = (_typed(stage2.of(kind), kind) for kind in (PART_ROW, GROUP_ROW))
    new_states = stage1.of(STATE_IN).select(F.lit(PARTITION).alias("kind"), "key",
                                            F.col("text").alias("state")).unionByName(
        stage2.of(STATE_IN).select(F.lit(GROUP).alias("kind"), "key",
                                   F.col("text").alias("state")))
    if states is None:
        new_states = new_states.unionByName(meta_row(spark))
    counts = {k: n for k, n in stage2.rows.groupBy("kind").count().collect()}
    log.debug("the lag step: per topic partition %.2f s, per group %.2f s (%s)", stage1_s,
              time.monotonic() - started - stage1_s, counts)
    return Step(parts, groups, new_states, states is None, counts.get(PART_ROW, 0),
                counts.get(GROUP_ROW, 0), stage1.redone + stage2.redone, (stage1, stage2))


def _typed(rows: DataFrame, table: str) -> DataFrame:
    """The wire JSON rows of a lag table (flat: times in epoch ms) in the table's schema, as
    SQL text (two calls into the JVM, where Column functions cost one each)."""
    schema = table_schema(table)
    times = {f.name for f in schema.fields if isinstance(f.dataType, TimestampType)}
    ddl = ", ".join(f"`{f.name}` {'bigint' if f.name in times else f.dataType.simpleString()}"
                    for f in schema.fields)
    parsed = rows.selectExpr(f"from_json(text, '{ddl}', map('mode', 'FAILFAST')) AS r")
    return parsed.selectExpr(*[
        (f"timestamp_millis(r.`{f.name}`)" if f.name in times else f"r.`{f.name}`")
        + f" AS `{f.name}`" for f in schema.fields])


def _current(meta: str) -> bool:
    """Whether the state table's meta row is of this format (else: no state yet)."""
    return bool(json.loads(meta).get("v") == TABLE_FORMAT)


def meta_row(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([(META, "", json.dumps({"v": TABLE_FORMAT}))], state_schema())


def read_states(spark: SparkSession, warehouse: str) -> DataFrame | None:
    """The state table's rows; None: no state yet (no meta row, or one of another format)."""
    table = read_delta(spark, state_path(warehouse))
    meta = table.where(F.col("kind") == META).select("state").collect()
    if not meta or not _current(meta[0][0]):
        return None
    return table


def save_states(spark: SparkSession, warehouse: str, step_: Step,
                also: pa.Table | None = None) -> None:
    """The step's states, and `also`'s rows, into the state table: replacing it when they are
    every key's, else MERGEd by (kind, key) (from the driver when they are few)."""
    path = state_path(warehouse)
    states = step_.states
    if also is not None:
        states = states.unionByName(spark.createDataFrame(also, state_schema()))
    if step_.whole:
        writes.overwrite(spark, states, path)
    else:
        writes.merge(spark, states, path, INTERNAL_KEYS[LAG_STATE])


def epoch_ms(times: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """Arrow timestamps as whole epoch milliseconds (int64), as Spark's `unix_millis`."""
    micros = times.cast(pa.timestamp("us", "UTC")).cast(pa.int64()).cast(pa.float64())
    return pc.floor(pc.divide(micros, 1000)).cast(pa.int64())  # exact below 2**53 us


# ---------------------------------------------------------------- a small batch, on the driver

LOCAL_ROWS = 50_000  # the most input rows (history rows and samples) a step on the driver takes


@dataclass(frozen=True)
class LocalStep:
    """A small batch's lag, stepped on the driver: its rows and the touched keys' states, as
    Arrow for the driver's commits (`writes`)."""

    partition_lag: pa.Table
    group_lag: pa.Table
    states: pa.Table  # (kind, key, state) of the keys the batch touched
    rows: int
    group_rows: int
    rebuilt: list[str]


def local_step(spark: SparkSession, warehouse: str, tables: Tables,
               history: Mapping[str, DataFrame], ready: pa.Table, cfg: LagConfig,
               until_ms: int | None) -> LocalStep | None:
    """`step` for a batch of at most `LOCAL_ROWS` input rows, the same per-key steps run on
    the driver: its history rows collected in one Spark job, the state read and the rows
    written by delta-rs, no shuffle (a step on the executors costs a few seconds of Spark
    jobs whatever its size: docs/performance.md, "The lag step"). None: a bigger batch, or no
    state yet; `step` takes those. A key the state cannot answer still runs again on the
    executors (`partitions_again`, `groups_again`)."""
    if ready.num_rows > LOCAL_ROWS:
        return None
    state = writes.read(spark, state_path(warehouse)).select(["kind", "key", "state"])
    kinds, keys, texts = (state.column(c).to_pylist() for c in ("kind", "key", "state"))
    stored = dict(zip(zip(kinds, keys, strict=True), texts, strict=True))
    meta = stored.get((META, ""))
    if meta is None or not _current(meta):
        return None
    rows = _collect(history, LOCAL_ROWS - ready.num_rows)
    if rows is None:
        return None
    p_fn, g_fn = partition_key_step(cfg, until_ms), group_key_step(cfg, until_ms)
    first: KeyRows = {}
    sample_rows = ready.select([c for c in SAMPLE_COLUMNS if c != "sampled_at"]).to_pylist()
    for row, at in zip(sample_rows, epoch_ms(ready.column("sampled_at")).to_pylist(),
                       strict=True):
        row["sampled_at"] = at
        first.setdefault((row["topic"], row["partition"]), []).append(
            (SAMPLE_IN, orjson.dumps(row).decode(), True))
    for j in rows.get("offset_history", ()):
        c = orjson.loads(j)
        first.setdefault((c["topic"], c["partition"]), []).append((CHANGE_IN, j, False))
    for j in rows.get("group_history", ()):
        shape = orjson.loads(j)
        shape["t"] = shape["event_time"]
        fact = orjson.dumps({"group_id": shape["group_id"], "t": shape["t"]}).decode()
        for tp in assigned_partitions(shape):
            first.setdefault(tp, []).append((ASSIGN_IN, fact, False))
    for tp in first:
        text = stored.get((PARTITION, partition_key(tp)))
        if text is not None:
            first[tp].append((STATE_IN, text, False))
    now = spark.createDataFrame(ready) if ready.num_rows else None
    out1 = _local_stage(first, p_fn, lambda keys: partitions_again(
        tables, now if now is not None else tables.spark.createDataFrame([], samples_schema()),
        keys, p_fn), lambda k: "partition {}-{}".format(*json.loads(k)))
    second: KeyRows = {}
    candidates = [(group, j) for kind, group, j in out1.rows if kind == CANDIDATE]
    for group, j in candidates:
        second.setdefault((group,), []).append((CANDIDATE, j, False))
    for kind, table in GROUP_TABLES.items():
        for j in rows.get(table, ()):
            second.setdefault((orjson.loads(j)["group_id"],), []).append((kind, j, False))
    for (group,) in second:
        text = stored.get((GROUP, group))
        if text is not None:
            second[(group,)].append((STATE_IN, text, False))

    def groups_redo(keys: list[str]) -> DataFrame:
        wanted = set(keys)
        mine = [(g, CANDIDATE, j, False) for g, j in candidates if g in wanted]
        frame = spark.createDataFrame(mine, "group_id string, kind string, j string, "
                                            "now boolean")
        return groups_again(tables, frame, keys, g_fn)

    out2 = _local_stage(second, g_fn, groups_redo, lambda k: f"group {k}")
    for why in out1.redone + out2.redone:
        log.info("lag: read the history again for %s", why)
    by_kind: dict[str, list[tuple[str, str]]] = {}
    for kind, key, text in out1.rows:
        by_kind.setdefault(PARTITION if kind == STATE_IN else kind, []).append((key, text))
    for kind, key, text in out2.rows:
        by_kind.setdefault(GROUP if kind == STATE_IN else kind, []).append((key, text))
    parts = _arrow_rows([t for _, t in by_kind.get(PART_ROW, [])], PART_ROW)
    groups = _arrow_rows([t for _, t in by_kind.get(GROUP_ROW, [])], GROUP_ROW)
    new = [(kind, key, text) for kind in (PARTITION, GROUP) for key, text in by_kind.get(kind, [])]
    states = pa.table([pa.array([r[i] for r in new], pa.string()) for i in range(3)],
                      schema=pa.schema([pa.field(f.name, pa.string(), False)
                                        for f in state_schema().fields]))
    return LocalStep(parts, groups, states, parts.num_rows, groups.num_rows,
                     out1.redone + out2.redone)


def _collect(history: Mapping[str, DataFrame], limit: int) -> dict[str, list[str]] | None:
    """The batch's history rows as the engine reads them (JSON text by table), in one Spark
    job; None if there are more than `limit`."""
    parts = [as_json(df, table).alias("j") for table, df in history.items()]
    frames = [df.select(F.lit(table).alias("table"), j)
              for (table, df), j in zip(history.items(), parts, strict=True)]
    union = _union(frames)
    out: dict[str, list[str]] = {}
    if union is None:
        return out
    got = union.limit(limit + 1).collect()
    if len(got) > limit:
        return None
    for table, j in got:
        out.setdefault(table, []).append(j)
    return out


@dataclass
class _Local:
    rows: Out
    redone: list[str]


def _local_stage(mine: KeyRows, step_key: KeyStep, again: Callable[[list[str]], DataFrame],
                 name: Callable[[str], str]) -> _Local:
    """`step_key` over `mine` on the driver; its redo keys run `again` (Spark) in their place."""
    out = step_keys(mine, step_key)
    redo = [(key, why) for kind, key, why in out if kind == REDO]
    if not redo:
        return _Local(out, [])
    kept = [r for r in out if r[0] != REDO]
    rerun = again([k for k, _ in redo]).toArrow()
    kept += list(zip(*(rerun.column(c).to_pylist() for c in ("kind", "key", "text")),
                     strict=True))
    return _Local(kept, [f"{name(k)}: {why}" for k, why in redo])


def _arrow_rows(texts: list[str], table: str) -> pa.Table:
    """Wire JSON rows of a lag table (flat, times in epoch ms) as Arrow in its schema (a value
    its column cannot hold raises)."""
    schema = arrow_schema(table_schema(table))
    rows = [orjson.loads(t) for t in texts]
    columns = []
    for f in schema:
        values = [r.get(f.name) for r in rows]
        if pa.types.is_timestamp(f.type):
            columns.append(pa.array(values, pa.int64()).cast(pa.timestamp("ms", "UTC"))
                           .cast(f.type))
        else:
            columns.append(pa.array(values, f.type))
    return pa.Table.from_arrays(columns, schema=pa.schema([f.with_nullable(True) for f in schema]))
