"""The backfill's fold over Arrow batches of many groups (`folding.batch_fold`): whatever
batches carry a partition's rows (one row each, a few, a group cut anywhere, one batch for
all), every group folds alike and alone, a group whose rows cannot be stored is rejected as
INTERNAL by itself, and a group's left rows come back as the input carried them."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from pipeline.fold import Event
from pipeline.generator import LogSpec, generate
from pipeline.spark.events.eventlog import select_events, write_event_log
from pipeline.spark.events.packing import packed_events
from pipeline.spark.fold.folding import batch_fold
from pipeline.spark.fold.left import LEFT, LEFT_CURRENT
from pipeline.times import PANDAS_MS_RANGE
from tests.spark.backends import CONFIG

pytestmark = pytest.mark.spark


def _rows(batches: list[pa.RecordBatch]) -> Counter[tuple[Any, ...]]:
    table = pa.Table.from_batches(batches)
    return Counter(tuple(row.values()) for row in table.to_pylist())


def test_groups_fold_alike_in_any_batches_and_a_bad_one_alone(
        spark: SparkSession, tmp_path: Path) -> None:
    records = generate(LogSpec(groups=4, events=600, seed=5, log_kind="offsets-topic",
                               bad_rows=0.03))
    journal = generate(LogSpec(groups=2, events=300, seed=6, log_kind="journal"))
    # One journal group moved to the edge of time: its next deadline no column can hold.
    edge = next(e.group_id for e in journal if e.group_id is not None)
    late = PANDAS_MS_RANGE[1] - 10_000
    journal = [replace(e, event_time=late + k) if e.group_id == edge else e
               for k, e in enumerate(journal)]
    events: list[Event] = records + journal
    path = str(tmp_path / "events")
    write_event_log(spark, events, path)
    table = (packed_events(select_events(spark.read.format("delta").load(path)))
             .orderBy("group_id").toArrow())
    fold = batch_fold(CONFIG, None, seed=True)
    ids = table.column("group_id").to_pylist()
    starts = [k for k in range(len(ids)) if k == 0 or ids[k] != ids[k - 1]]
    alone = [batch for a, b in zip(starts, [*starts[1:], len(ids)], strict=True)
             for batch in fold(iter(table.slice(a, b - a).to_batches()))]
    expected = _rows(alone)
    for size in (1, 3, 50, len(ids)):
        assert _rows(list(fold(iter(table.to_batches(max_chunksize=size))))) == expected, size

    out = pa.Table.from_batches(alone).to_pylist()
    internal = Counter(json.loads(row["_row"])["group_id"] for row in out
                       if row["_table"] == "rejected_events"
                       and json.loads(row["_row"])["reason"].startswith("INTERNAL"))
    assert internal == {edge: sum(e.group_id == edge for e in events)}
    left = [row for row in out if row["_table"] in (LEFT, LEFT_CURRENT)]
    assert {row["_table"] for row in left} == {LEFT, LEFT_CURRENT}
    at: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for e in events:  # a bad row may share a position with a good one
        at.setdefault((e.group_id, e.log_partition, e.log_offset), []).append(
            (e.topic, e.partition, e.committed_offset))
    for row in left:
        assert (row["topic"], row["partition"], row["committed_offset"]) in at[
            (row["group_id"], row["log_partition"], row["log_offset"])]
