"""The stream's lag step in proportion to its batch: the incremental engine
(`pipeline.lag.batch`) run on the driver over the batch's own history rows and ready samples,
its state kept in one small Delta table, `_lag_state`, between batches.

A micro-batch collects what it brings: the history rows it has just written (the columns the
engine reads, times in epoch ms, as JSON text: a few hundred rows for a batch of ~500
events) and the samples the watermark passed; it reads the state table (one row per topic
partition and per group with lag: its JSON state), runs the engine, and writes the lag
tables' rows and then the whole state table back in one commit (`kind`, `key`, `state`),
with the batch's mark like every write, so a killed batch leaves the previous state whole
and a batch run again computes the same rows. The history tables are read only where the
engine says its state cannot answer (`batch.Everything`): one key's rows, filtered, and on
the first batch that finds no state (a new stream, one continuing a backfill, a warehouse
of an earlier release): every history row once (`meta` row absent).

Cost: the batch's rows, plus the state table, which holds a row per live topic partition
and group (its size is the live keys', not the history's)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from pipeline.lag import LagConfig
from pipeline.lag.batch import TP, Result, Rows, run
from pipeline.spark.lag.samples import REASON, read_samples
from pipeline.spark.tables import paths, small
from pipeline.spark.tables.contract import table_schema
from pipeline.spark.tables.creation import create_table
from pipeline.spark.tables.options import read_delta
from schemas.lag import SAMPLE_KEY

log = logging.getLogger(__name__)

STATE = "_lag_state"
PARTITION, GROUP, META = "partition", "group", "meta"
FORMAT = 1  # the state table's own version (the meta row's)

# The history tables the engine reads, the columns it reads of each, and the batch input
# (`batch.Rows`) each feeds.
HISTORY: dict[str, tuple[str, tuple[str, ...]]] = {
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
# The nested fields the engine reads of a column of structs (a member's own times never travel).
FIELDS = {"members": ("member_id", "client_id", "client_host", "assignment")}
SAMPLE_COLUMNS = ("topic", "partition", "sampled_at", "log_end_offset", "log_start_offset")
TIME = {"offset_history": "event_time", "group_history": "event_time",
        "group_transitions": "event_time", "samples": "sampled_at"}  # -> the engine's `t`


def state_path(warehouse: str) -> str:
    return paths.join(warehouse, STATE)


def state_schema() -> StructType:
    return StructType([StructField("kind", StringType(), False),
                       StructField("key", StringType(), False),
                       StructField("state", StringType(), False)])


def ensure_state(spark: SparkSession, warehouse: str) -> None:
    create_table(spark, state_path(warehouse), state_schema())


def reset_state(spark: SparkSession, warehouse: str) -> None:
    """No state: the next step builds it from every history row (after a backfill replaced
    the history tables)."""
    (spark.createDataFrame([], state_schema()).write.format("delta").mode("overwrite")
     .save(state_path(warehouse)))


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


def as_json(df: DataFrame, table: str) -> DataFrame:
    """`df`'s rows of `table` (a history table or the samples) as one JSON text column."""
    columns = SAMPLE_COLUMNS if table == "samples" else HISTORY[table][1]
    schema = df.schema
    return df.select(F.to_json(F.struct(*[_column(c, schema) for c in columns]),
                               {"ignoreNullFields": "false"}).alias("j"))


def local_rows(texts: Iterable[str], table: str) -> list[dict[str, Any]]:
    out = []
    for text in texts:
        row = json.loads(text)
        if table in TIME:
            row["t"] = row[TIME[table]]
        out.append(row)
    return out


def collect_rows(df: DataFrame, table: str) -> list[dict[str, Any]]:
    return local_rows((r[0] for r in as_json(df, table).collect()), table)


def epoch_ms(times: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """Arrow timestamps as whole epoch milliseconds (int64), as Spark's `unix_millis`."""
    micros = times.cast(pa.timestamp("us", "UTC")).cast(pa.int64()).cast(pa.float64())
    return pc.floor(pc.divide(micros, 1000)).cast(pa.int64())  # exact below 2**53 us


def sample_rows(samples: pa.Table) -> list[dict[str, Any]]:
    """Samples held on the driver (Arrow, the contract's columns) as the engine reads them:
    `SAMPLE_COLUMNS`, `sampled_at` in epoch ms, and `t`."""
    rows: list[dict[str, Any]] = samples.select(
        [c for c in SAMPLE_COLUMNS if c != "sampled_at"]).to_pylist()
    for row, at in zip(rows, epoch_ms(samples.column("sampled_at")).to_pylist(), strict=True):
        row["sampled_at"] = row["t"] = at
    return rows


def batch_rows(history: Mapping[str, DataFrame], samples: pa.Table | None) -> Rows:
    """A batch's input: its history rows by table (the tables it wrote), collected in one
    Spark job, and its ready samples (on the driver already)."""
    parts = [as_json(df, table).select(F.lit(table).alias("table"), "j")
             for table, df in history.items()]
    texts: dict[str, list[str]] = {}
    if parts:
        union = parts[0]
        for p in parts[1:]:
            union = union.unionByName(p)
        for r in union.collect():
            texts.setdefault(r[0], []).append(r[1])
    by_table = {t: local_rows(v, t) for t, v in texts.items()}
    if samples is not None:
        by_table["samples"] = sample_rows(samples)
    return _rows(by_table)


def _rows(by_table: Mapping[str, list[dict[str, Any]]]) -> Rows:
    fields = {HISTORY[t][0] if t in HISTORY else t: rows for t, rows in by_table.items()}
    return Rows(**fields)


@dataclass
class Tables:
    """All a key was sent, read from the warehouse's history tables (which hold the batch's
    own rows by then) and the samples table at the batch's version (its good samples but
    those still waiting for the watermark): the engine's fallback."""

    spark: SparkSession
    warehouse: str
    end_offsets: str
    version: int | None
    until_ms: int
    waiting: pa.Table  # the samples the watermark has not passed (SAMPLE_KEY columns)

    def _table(self, table: str) -> DataFrame:
        return read_delta(self.spark, paths.join(self.warehouse, table))

    def samples(self) -> DataFrame:
        if self.version is None:
            return self.spark.createDataFrame([], "topic string, partition int")
        good = read_samples(self.spark, self.end_offsets, self.version).where(
            F.col(REASON).isNull())
        waiting = self.spark.createDataFrame(self.waiting.select(list(SAMPLE_KEY)))
        return good.join(waiting, list(SAMPLE_KEY), "left_anti")

    def partition(self, tp: TP) -> Rows:
        topic, partition = tp
        on = (F.col("topic") == topic) & (F.col("partition") == partition)
        assigns = F.exists("members", lambda m: F.exists(
            m["assignment"], lambda a: (a["topic"] == topic) & (a["partition"] == partition)))
        return _rows({
            "samples": collect_rows(self.samples().where(on), "samples"),
            "offset_history": collect_rows(self._table("offset_history").where(on),
                                           "offset_history"),
            "group_history": collect_rows(self._table("group_history").where(assigns),
                                          "group_history")})

    def group(self, group_id: str) -> Rows:
        mine = F.col("group_id") == group_id
        return _rows({t: collect_rows(self._table(t).where(mine), t)
                      for t in ("group_history", "group_transitions", "rebalances")})

    def everything(self) -> Rows:
        rows = {t: collect_rows(self._table(t), t) for t in HISTORY}
        rows["samples"] = collect_rows(self.samples(), "samples")
        return _rows(rows)


@dataclass
class States:
    """The state table's rows: per topic partition and per group, JSON text."""

    partitions: dict[TP, str]
    groups: dict[str, str]

    @classmethod
    def read(cls, spark: SparkSession, warehouse: str) -> States | None:
        """None: no state yet (the table empty, or of another format)."""
        partitions: dict[TP, str] = {}
        groups: dict[str, str] = {}
        meta = None
        table = small.read(spark, state_path(warehouse)).select(["kind", "key", "state"])
        for kind, key, state in zip(*(c.to_pylist() for c in table.columns), strict=True):
            if kind == PARTITION:
                topic, partition = json.loads(key)
                partitions[(topic, partition)] = state
            elif kind == GROUP:
                groups[key] = state
            elif kind == META:
                meta = json.loads(state)
        if meta is None or meta.get("v") != FORMAT:
            return None
        return cls(partitions, groups)

    def updated(self, result: Result) -> States:
        return States({**self.partitions, **result.partitions}, {**self.groups, **result.groups})

    def arrow(self) -> pa.Table:
        """The state table's rows, to write on the driver (`small.save_arrow`)."""
        rows = [(META, "", json.dumps({"v": FORMAT}))]
        rows += [(PARTITION, json.dumps(list(tp)), s) for tp, s in sorted(self.partitions.items())]
        rows += [(GROUP, g, s) for g, s in sorted(self.groups.items())]
        names = [f.name for f in state_schema().fields]
        return pa.table([pa.array([r[i] for r in rows], pa.string()) for i in range(3)],
                        schema=pa.schema([pa.field(n, pa.string(), False) for n in names]))


@dataclass(frozen=True)
class Step:
    """One batch's lag: its rows, and the state to write after them (Arrow, on the driver)."""

    partition_lag: pa.Table
    group_lag: pa.Table
    rows: int  # partition_lag's
    group_rows: int
    state: pa.Table  # the state table's rows, replacing it after the lag tables' rows


def lag_arrow(rows: list[dict[str, Any]], table: str) -> pa.Table:
    """The engine's rows (`t`: sampled_at, times in epoch ms) as `table`'s, typed by the
    contract, on the driver where the engine made them (a value its column cannot hold
    raises, as Spark's parsing of them did)."""
    schema = to_arrow_schema(table_schema(table), timezone="UTC")
    columns = []
    for f in schema:
        values = [r["t"] if f.name == "sampled_at" else r.get(f.name) for r in rows]
        if pa.types.is_timestamp(f.type):
            ms = pa.array(values, pa.int64())
            columns.append(ms.cast(pa.timestamp("ms", "UTC")).cast(f.type))
        else:
            columns.append(pa.array(values, f.type))
    return pa.Table.from_arrays(columns, schema=pa.schema([f.with_nullable(True) for f in schema]))


def _sample_key(s: Mapping[str, Any]) -> tuple[str, int, int]:
    return s["topic"], s["partition"], s["t"]


def step(spark: SparkSession, warehouse: str, tables: Tables, history: Mapping[str, DataFrame],
         ready: pa.Table | None, cfg: LagConfig) -> Step | None:
    """The lag of one micro-batch (`ready`: the samples the watermark passed, on the driver);
    None: no state yet and nothing to build it for."""
    states = States.read(spark, warehouse)
    if states is None and ready is None:
        return None  # built at the first batch with samples, from every row then
    batch = batch_rows(history, ready)
    if states is None:
        # No state: built once from every history row and every sample evaluated before
        # (rows ahead of a sample are what the engine keeps pending), then this batch's
        # samples run over it as over any state.
        log.debug("lag: building the lag state from every history row (first step)")
        every = tables.everything()
        ready_keys = {_sample_key(s) for s in batch.samples}
        before = Rows([s for s in every.samples if _sample_key(s) not in ready_keys],
                      every.changes, every.shapes, every.transitions, every.rebalances)
        built = run({}, {}, before, tables, cfg, None)
        states = States(built.partitions, built.groups)
        batch = Rows(batch.samples)
    result = run(states.partitions, states.groups, batch, tables, cfg, tables.until_ms)
    for why in result.rebuilt:
        log.info("lag: read the history again for %s", why)
    return Step(lag_arrow(result.partition_rows, "partition_lag"),
                lag_arrow(result.group_rows, "group_lag"),
                len(result.partition_rows), len(result.group_rows),
                states.updated(result).arrow())
