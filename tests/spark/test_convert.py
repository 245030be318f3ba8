"""The one converter from the fold's rows per table to Arrow (backfill) and to the stream's
pandas frame: times at any depth exact, ints never through float, a value that does not fit
refused with its column's name in both, and the wire exactly the union of the tables.
Spark only parses the schemas here; the frames go through Spark's own pandas-to-Arrow step."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import to_arrow_schema

from pipeline.fold import CoordinatorConfig
from pipeline.fold.tables import Tables, replay_group
from pipeline.spark.convert import table_arrow, wire_frame, wire_table
from pipeline.spark.tables import wire_name, wire_schema
from pipeline.times import PANDAS_MS_RANGE, utc_datetime
from schemas import OUTPUT_TABLES
from tests.golden.files import read_case
from tests.spark.test_boundary import spark_arrow

pytestmark = pytest.mark.spark
CONFIG = CoordinatorConfig()


@pytest.fixture(scope="module")
def wire(spark: SparkSession) -> pa.Schema:
    return to_arrow_schema(wire_schema(), timezone="UTC")


@pytest.fixture(scope="module")
def calls() -> list[Tables]:
    case = read_case("classic-by-hand", OUTPUT_TABLES)
    by_group = defaultdict(list)
    for e in case.events:
        by_group[e.group_id].append(e)
    # No timers: the groups end with members (their sessions would have expired since).
    return [replay_group(g, None, events, None, CONFIG, seed=True)[1]
            for g, events in by_group.items()]


def _state_row(calls: list[Tables], **changes: Any) -> Tables:
    row = next(r for t in calls for r in t.get("group_state", []) if r["members"])
    member = {**row["members"][0], **changes.pop("member", {})}
    return {"group_state": [{**row, "members": [member], **changes}]}


def _both(rows: Tables, wire: pa.Schema) -> list[dict[str, Any]]:
    arrow = wire_table(rows, wire).to_pylist()
    assert spark_arrow(wire_frame(rows, wire_schema())).to_pylist() == arrow
    return arrow


def test_times_at_any_depth_reach_both_outputs_exactly(calls: list[Tables], wire: pa.Schema) -> None:
    low, high = PANDAS_MS_RANGE
    rows = _state_row(calls, member={"last_heartbeat": high, "joined_at": low},
                      state_since=high - 1, next_deadline=None)
    [out] = _both(rows, wire)
    assert out["state_members"][0]["last_heartbeat"] == utc_datetime(high)
    assert out["state_members"][0]["joined_at"] == utc_datetime(low)
    assert out["state_since"] == utc_datetime(high - 1) and out["next_deadline"] is None


def test_ints_never_pass_through_float(calls: list[Tables], wire: pa.Schema) -> None:
    row = next(r for t in calls for r in t.get("committed_offsets", []))
    rows = {"committed_offsets": [{**row, "committed_offset": 2**53 + 1},
                                  {**row, "committed_offset": 2**63 - 1, "leader_epoch": None}]}
    assert [r["committed_offset"] for r in _both(rows, wire)] == [2**53 + 1, 2**63 - 1]


@pytest.mark.parametrize(("changes", "named"), [
    ({"member": {"last_heartbeat": PANDAS_MS_RANGE[1] + 1}}, "state_members.last_heartbeat = "),
    ({"state_since": PANDAS_MS_RANGE[0] - 1}, "state_since = "),
    ({"generation_id": 2**31}, "generation_id = 2147483648 does not fit"),
    ({"rebalance_count": 2**63}, "rebalance_count = 9223372036854775808 does not fit"),
])
def test_a_value_that_does_not_fit_is_refused_naming_its_column(
        calls: list[Tables], wire: pa.Schema, changes: dict[str, Any], named: str) -> None:
    rows = _state_row(calls, **changes)
    with pytest.raises(ValueError, match=named):
        wire_table(rows, wire)
    with pytest.raises(ValueError, match=named):
        wire_frame(rows, wire)


def test_the_wire_is_the_tables_one_after_another(calls: list[Tables], wire: pa.Schema) -> None:
    for tables in calls:
        out = wire_table(tables, wire).to_pylist()
        assert [r["_table"] for r in out] == [t for t, rows in tables.items() for _ in rows]
        at = 0
        for table, rows in tables.items():
            alone = table_arrow(table, rows, wire).to_pylist()
            assert [{c: r[wire_name(table, c)] for c in a} for r, a in
                    zip(out[at:at + len(rows)], alone, strict=True)] == alone
            assert all(v is None for r, a in zip(out[at:at + len(rows)], alone, strict=True)
                       for c, v in r.items()
                       if c != "_table" and c not in {wire_name(table, n) for n in a})
            at += len(rows)
