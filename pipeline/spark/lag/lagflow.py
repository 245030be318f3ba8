"""How replay and backfill feed the lag step (`pipeline.spark.lag.lagstate`) with end-offset
samples.

Backfill: the samples table is read at one version; every sample taken before the cut (the
watermark a stream over the same log would stand at) gets its rows from the step run from no
state, each lag table is replaced in one commit, and the later samples are left in
`<warehouse>/_lag_pending` (the version in the hand-off manifest) and the step's states in
`_lag_state`, for a stream to continue from.

Stream: the samples table's change data feed is a second streaming source of the replay,
unioned after the fold as wire rows tagged `_sample`, each with the commit it came in, so
Spark's checkpoint delivers each sample once. A sample's rows are written once the stream's
watermark has passed `sampled_at`, so a commit that reaches the log late (but inside the
watermark delay) is not missed: until then it waits in `_lag_pending`. The watermark and the
samples' version are the stream's own record (`Read`, a row of `_lag_state`), never Spark's
checkpoint files: the newest event time the fold was given before the batch (its `NEWEST`
wire rows) less the watermark delay, as Spark computes the watermark the batch runs with,
and the newest commit a sample came in. Each micro-batch takes the pending and new samples
that watermark has passed, computes their rows with the incremental engine over the batch's
own history rows and the state rows of the keys they touch (`pipeline.spark.lag.lagstate`:
on the executors, or on the driver for a small batch; the history tables and the samples
table at that version are read only where the state cannot answer), then rewrites the
pending set and MERGEs the touched keys' states and the record. A sample arriving after the
watermark passed it is used at once. Every write carries the batch's mark
(`sinks.BatchWriter`), pending and state last, so a batch run again after a crash computes
the same rows (from the record it started from) and skips what it had written.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.errors import UsageError
from pipeline.lag import LagConfig
from pipeline.spark.fold.wire import COMMIT_VERSION, ROW, SAMPLE, TABLE, row_schema, wire_json
from pipeline.spark.lag.lagstate import (
    READ,
    Step,
    Tables,
    ensure_state,
    epoch_ms,
    local_step,
    read_states,
    save_states,
    state_path,
    state_schema,
)
from pipeline.spark.lag.lagstate import step as lag_step
from pipeline.spark.lag.samples import (
    REASON,
    read_samples,
    samples_schema,
    select_samples,
    with_change_feed,
)
from pipeline.spark.runtime.keep import keep, release
from pipeline.spark.tables import paths, writes
from pipeline.spark.tables.contract import arrow_schema
from pipeline.spark.tables.creation import create_table
from pipeline.spark.tables.options import latest_version, read_delta, stream_delta
from pipeline.times import ms_text
from schemas.internal import INTERNAL_KEYS, LAG_PENDING, LAG_STATE
from schemas.lag import LAG_TABLES, SAMPLE_KEY

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LagOptions:
    """`--end-offsets` and the lag settings."""

    end_offsets: str
    config: LagConfig = field(default_factory=LagConfig)

    def __post_init__(self) -> None:
        if paths.is_path(self.end_offsets):
            object.__setattr__(self, "end_offsets", paths.qualify(self.end_offsets))


def pending_path(warehouse: str) -> str:
    return paths.join(warehouse, LAG_PENDING)


def ensure_pending(spark: SparkSession, warehouse: str) -> None:
    """The pending set and the lag state, made empty unless they are there."""
    create_table(spark, pending_path(warehouse), samples_schema())
    ensure_state(spark, warehouse)


CHANGE_TYPE = "_change_type"  # a change-feed row's kind: insert, delete, update_pre/postimage


def sample_wire(samples: DataFrame) -> DataFrame:
    """Change-feed rows of the samples table as wire rows (`_table`, `_row`: the sample and
    its `_commit_version` as JSON, times in epoch ms), the form `wire.table_rows` parses back;
    the samples' own columns, whatever the table has beyond them. Only inserts: a row the
    table's owner deletes or updates later changes no lag already written."""
    typed = select_samples(samples.where(F.col(CHANGE_TYPE) == "insert"),
                           COMMIT_VERSION).drop(REASON)
    return typed.select(F.lit(SAMPLE).alias(TABLE), wire_json(row_schema(SAMPLE)).alias(ROW))


def sample_stream(spark: SparkSession, opts: LagOptions, after_version: int | None,
                  max_files_per_trigger: int | None = None) -> DataFrame:
    """The samples table's change data feed as a stream of wire rows, from the version after
    `after_version` (a backfill's) or from its beginning (its rows then, and every insert
    after), at most `max_files_per_trigger` of its files a micro-batch (the replay's
    `--max-files-per-trigger`, as for the event log)."""
    options: dict[str, str | int] = {"readChangeFeed": "true"}
    if after_version is not None:
        options["startingVersion"] = after_version + 1
    if max_files_per_trigger:
        options["maxFilesPerTrigger"] = max_files_per_trigger
    return sample_wire(stream_delta(spark, opts.end_offsets, **options))


@dataclass(frozen=True)
class Read:
    """The stream's own record of what its lag step was given: the newest event time the fold
    saw (epoch ms) and the newest commit of the samples table a sample came in. Kept as the
    state table's `READ` row, with the record the batch that last changed it started from:
    a batch run again after its writes went in starts from that one, as the first run did."""

    newest_ms: int | None = None
    version: int | None = None

    def then(self, newest_ms: int | None, version: int | None) -> Read:
        """The record after a batch that brought events up to `newest_ms` and samples up to
        commit `version` (None: none)."""
        return Read(_max(self.newest_ms, newest_ms), _max(self.version, version))

    def watermark(self, delay_ms: int) -> int:
        """Spark's rule for its event-time watermark (the newest event time less the delay,
        never below 0): over the record a batch starts from, the watermark its fold runs
        with."""
        return 0 if self.newest_ms is None else max(0, self.newest_ms - delay_ms)

    def row(self, before: Read, mark: str) -> pa.Table:
        """The record as the state table's row, made by the batch of `mark` from `before`."""
        text = json.dumps({"mark": mark, "before": [before.newest_ms, before.version],
                           "after": [self.newest_ms, self.version]})
        return pa.Table.from_pylist([{"kind": READ, "key": "", "state": text}],
                                    schema=arrow_schema(state_schema()))

    @classmethod
    def of_row(cls, text: str | None, mark: str) -> tuple[Read, Read]:
        """(what the batch of `mark` starts from, the record the row holds), from the row's
        text (None: no record yet)."""
        if text is None:
            return cls(), cls()
        record = json.loads(text)
        after = cls(*record["after"])
        return (cls(*record["before"]) if record["mark"] == mark else after), after

    @classmethod
    def stored(cls, spark: SparkSession, warehouse: str, mark: str) -> tuple[Read, Read]:
        """`of_row` of the state table's record."""
        found = read_delta(spark, state_path(warehouse)).where(
            F.col("kind") == READ).select("state").collect()
        return cls.of_row(found[0][0] if found else None, mark)


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


Writes = dict[str, Callable[[], None]]


@dataclass
class StreamLag:
    """The lag phase of each micro-batch (called by `sinks.BatchWriter`)."""

    opts: LagOptions
    warehouse: str
    delay_ms: int  # --watermark-delay
    after_version: int | None = None  # the samples' version a backfill read, if continued
    written: dict[str, int] = field(default_factory=dict)  # the last batch's lag rows, by table
    held: Held | None = None  # the samples the last batch left waiting, and its watermark
    watermark_ms: int | None = None
    read: Read | None = None  # the record as the last batch left it (None: not loaded yet)
    _saved: Read | None = None  # the record as the state table holds it
    _steps: list[Step] = field(default_factory=list)

    def writes(self, spark: SparkSession, new: DataFrame | None, newest_ms: int | None,
               mark: str, history: Mapping[str, DataFrame] | None = None
               ) -> tuple[Writes, Writes]:
        """(the lag tables' appends, then the pending set's and the state's rewrites) for the
        batch of `mark` (`sinks.batch_mark`); `new`: its sample rows, parsed (None when it
        has none); `newest_ms`: the newest event time its fold was given (`wire.NEWEST`);
        `history`: its rows of each history table it wrote."""
        if self.read is None:
            self.read, self._saved = Read.stored(spark, self.warehouse, mark)
        history = history or {}
        self.written = {}
        # The pending set, the batch's new samples and what the watermark passed are a few
        # hundred rows: held on the driver as Arrow (no Spark job each), the pending set
        # read and written by delta-rs where the driver writes the tables (`writes`).
        pending = writes.read(spark, pending_path(self.warehouse))
        checked = select_samples(new, COMMIT_VERSION).toArrow() if new is not None else None
        came = None if checked is None else pc.max(checked.column(COMMIT_VERSION)).as_py()
        # Spark's watermark for this batch: from the events of the batches before it.
        watermark = self.read.watermark(self.delay_ms)
        before, self.read = self.read, self.read.then(newest_ms, came)
        record = self.read.row(before, mark)  # written with the batch's states, or alone
        version = self.read.version if self.read.version is not None else self.after_version
        good = rejected = None
        if checked is not None:
            checked = checked.drop_columns([COMMIT_VERSION])
            malformed = pc.is_valid(checked.column(REASON))
            rejected = checked.filter(malformed)
            good = writes.conformed(checked.filter(pc.invert(malformed)), pending.schema)
        pending = writes.conformed(pending, pending.schema)  # nullable, as `good`, to concat
        candidates = writes.distinct(pending if good is None else pa.concat_tables([pending, good]),
                              SAMPLE_KEY)
        passed = pc.less(epoch_ms(candidates.column("sampled_at")), watermark)
        ready, waiting = candidates.filter(passed), candidates.filter(pc.invert(passed))
        self.held, self.watermark_ms = Held.of(waiting), watermark
        first: Writes = {}
        then: Writes = {}
        any_ready = ready.num_rows > 0
        if any_ready or history:
            tables = Tables(spark, self.warehouse, self.opts.end_offsets, version, watermark,
                            waiting)
            path = state_path(self.warehouse)
            local = local_step(spark, self.warehouse, tables, history, ready,
                               self.opts.config, watermark) \
                if writes.on_driver(spark, path) else None
            if local is not None:  # a small batch: stepped and written from the driver
                self._append_rows(spark, first, local.partition_lag, local.group_lag,
                                  local.rows, local.group_rows)
                if local.states.num_rows:
                    then[LAG_STATE] = partial(
                        writes.merge, spark, pa.concat_tables([local.states, record]),
                        path, INTERNAL_KEYS[LAG_STATE])
            else:
                self._step_on_executors(spark, tables, history, ready, watermark, record,
                                        first, then)
        if LAG_STATE not in then and self.read != self._saved:  # the record alone
            then[LAG_STATE] = partial(writes.merge, spark, record, state_path(self.warehouse),
                                      INTERNAL_KEYS[LAG_STATE])
        if LAG_STATE in then:
            self._saved = self.read
        if rejected is not None and rejected.num_rows:
            first["rejected_samples"] = partial(writes.append, spark, rejected,
                                                paths.join(self.warehouse, "rejected_samples"))
        arrived = good is not None and good.num_rows > 0  # a good sample came in this batch
        if any_ready or arrived:  # the pending set changed; else it is left as it is
            then[LAG_PENDING] = partial(writes.overwrite, spark, waiting,
                                        pending_path(self.warehouse))
        return first, then

    def _step_on_executors(self, spark: SparkSession, tables: Tables,
                           history: Mapping[str, DataFrame], ready: pa.Table, watermark: int,
                           record: pa.Table, first: Writes, then: Writes) -> None:
        states = read_states(spark, self.warehouse)
        if states is None and not ready.num_rows:
            return  # no state and no sample yet: built at the first batch with samples
        rows = (spark.createDataFrame(ready) if ready.num_rows
                else spark.createDataFrame([], samples_schema()))
        step = lag_step(spark, self.warehouse, tables, history, rows, self.opts.config,
                        watermark, states)
        self._steps.append(step)
        self._append_rows(spark, first, step.partition_lag, step.group_lag, step.rows,
                          step.group_rows)
        then[LAG_STATE] = partial(save_states, spark, self.warehouse, step, record)

    def _append_rows(self, spark: SparkSession, first: Writes, partition_lag: DataFrame | pa.Table,
                     group_lag: DataFrame | pa.Table, rows: int, group_rows: int) -> None:
        """The step's lag rows appended in the batch's first phase (no commit for a table
        with no rows)."""
        if not rows:
            return
        for table, data in (("partition_lag", partition_lag), ("group_lag", group_lag)):
            first[table] = partial(writes.append, spark, data, paths.join(self.warehouse, table))
        self.written = {"partition_lag": rows, "group_lag": group_rows}

    def release(self) -> None:
        for step in self._steps:
            step.release()
        self._steps.clear()


SOURCES = "_replay_sources.json"  # in a checkpoint: the sources its stream reads (ours)


def check_lag_checkpoint(spark: SparkSession, checkpoint: str, lag: bool) -> None:
    """A checkpoint keeps its sources: one started without --end-offsets cannot take the
    samples stream later, nor one started with it lose it (Spark refuses a changed source
    list); say so before Spark fails on it. The replay records its sources beside Spark's
    files when it starts a checkpoint (one from before the record is not checked)."""
    record = paths.join(checkpoint, SOURCES)
    if paths.is_empty(spark, paths.join(checkpoint, "offsets")):  # new: its sources from now
        paths.write_text(spark, record, json.dumps({"end_offsets": lag}))
        return
    text = paths.read_text(spark, record)
    if text is None:
        return
    had = bool(json.loads(text).get("end_offsets"))
    if had != lag:
        raise UsageError(
            f"--checkpoint {checkpoint} was started {'with' if had else 'without'} "
            f"--end-offsets; a checkpoint keeps its sources: run it "
            f"{'with' if had else 'without'} them, or start a new --checkpoint")


LAG_APPEND_TABLES = tuple(LAG_TABLES)


@dataclass(frozen=True)
class Held:
    """Samples held back for the watermark: how many, the first and last sample times (ms)."""

    count: int
    first_ms: int | None
    last_ms: int | None

    @classmethod
    def of(cls, samples: pa.Table) -> Held:
        times = epoch_ms(samples.column("sampled_at"))
        low, high = pc.min(times).as_py(), pc.max(times).as_py()
        return cls(samples.num_rows, low, high)

    def line(self, watermark_ms: int | None, delay: str, then: str) -> str:
        """One line on the samples held back: how many, until when, and what to change."""
        return (f"{self.count} end-offset samples ({ms_text(self.first_ms)} to "
                f"{ms_text(self.last_ms)}) wait in _lag_pending, after the watermark "
                f"{ms_text(watermark_ms)} (the log's last event time less --watermark-delay "
                f"{delay}): {then}")


@dataclass
class BackfillLag:
    """The lag tables of a backfill: its samples read at one version, rows for those taken
    before the cut, the rest pending for a stream."""

    opts: LagOptions
    version: int
    checked: DataFrame  # every sample of that version, `reason` set on a malformed one

    @classmethod
    def read(cls, spark: SparkSession, opts: LagOptions) -> BackfillLag:
        with_change_feed(spark, opts.end_offsets)  # a stream continues from its next version
        version = latest_version(spark, opts.end_offsets)
        checked = keep(read_samples(spark, opts.end_offsets, version))
        return cls(opts, version, checked)

    def good(self) -> DataFrame:
        return self.checked.where(F.col(REASON).isNull()).drop(REASON)

    def passed(self, cut: int | None) -> Column:
        if cut is None:
            return F.lit(False)
        return F.unix_millis(F.col("sampled_at")) < F.lit(cut)

    def tables(self, spark: SparkSession, warehouse: str, cut: int | None) -> dict[str, DataFrame]:
        """Each lag table's rows, over the history tables the backfill has just written: the
        stream's step from no state, every sample before the cut ready, the cut its
        watermark (its states are what a stream continuing from here starts from)."""
        ready = self.good().where(self.passed(cut))
        tables = Tables(spark, warehouse, self.opts.end_offsets, None, cut or 0,
                        pa.table({}))
        self._step = lag_step(spark, warehouse, tables, {}, ready, self.opts.config, cut, None)
        return {"partition_lag": self._step.partition_lag,
                "group_lag": self._step.group_lag,
                "rejected_samples": self.checked.where(F.col(REASON).isNotNull())}

    def write_pending(self, warehouse: str, cut: int | None) -> Held:
        """The samples no row was written for yet, and the lag state after the cut: where a
        stream continues. Returns what was held back."""
        held = self.good().where(~self.passed(cut))
        spark = held.sparkSession
        save_states(spark, warehouse, self._step)
        writes.overwrite(spark, held, pending_path(warehouse), new_schema=True)
        row = held.agg(F.count(F.lit(1)), F.min(F.unix_millis("sampled_at")),
                       F.max(F.unix_millis("sampled_at"))).first()
        assert row is not None
        return Held(int(row[0]), row[1], row[2])

    def release(self) -> None:
        release(self.checked)
        step = getattr(self, "_step", None)
        if step is not None:
            step.release()

