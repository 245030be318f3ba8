"""The one converter from the fold's rows per table to the narrow wire (JSON rows, the same
for the backfill's Arrow and the stream's pandas), and the JVM's parse of each table's rows
back into its schema: times at any depth exact, ints never through float, bytes and flags
whole, a value that does not fit refused with its column's name."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipeline.fold import CoordinatorConfig
from pipeline.fold.group_replay import DELETES_KEY, STATE, Tables, replay_group
from pipeline.spark.fold.folding import frame_of
from pipeline.spark.fold.wire import table_rows, wire_checks, wire_schema
from pipeline.spark.tables.contract import table_schema
from pipeline.times import PANDAS_MS_RANGE, utc_datetime
from schemas import OUTPUT_TABLES
from schemas.internal import BACKFILL_STATE
from tests.golden.files import read_case
from tests.grouping import by_group
from tests.spark.backends import wire_table

pytestmark = pytest.mark.spark
CONFIG = CoordinatorConfig()


def naive_utc(ms: int) -> Any:
    """How Spark's collect() gives a time of a UTC session: a naive datetime."""
    return utc_datetime(ms).replace(tzinfo=None)


@pytest.fixture(scope="module")
def calls() -> list[Tables]:
    case = read_case("classic-by-hand", OUTPUT_TABLES)
    groups = by_group(case.events, unkeyed=True)
    # No timers: the groups end with members (their sessions would have expired since).
    return [replay_group(g, None, events, None, CONFIG, seed=True).tables
            for g, events in groups.items()]


def _state_row(calls: list[Tables], **changes: Any) -> Tables:
    row = next(r for t in calls for r in t.get("group_state", []) if r["members"])
    member = {**row["members"][0], **changes.pop("member", {})}
    return {"group_state": [{**row, "members": [member], **changes}]}


def _through(spark: SparkSession, rows: Tables, table: str, extra: bool = False
             ) -> list[dict[str, Any]]:
    """`table`'s rows as the JVM reads them back off the wire, and checks the stream's frame
    carries what the backfill's Arrow table does."""
    arrow = wire_table(rows, wire_checks())
    frame = frame_of(arrow)
    assert frame.to_dict("list") == arrow.to_pydict()
    wire = spark.createDataFrame(frame, wire_schema())
    return [r.asDict(recursive=True) for r in table_rows(wire, table, extra).collect()]


def test_times_at_any_depth_come_back_exactly(spark: SparkSession, calls: list[Tables]) -> None:
    low, high = PANDAS_MS_RANGE
    rows = _state_row(calls, member={"last_heartbeat": high, "joined_at": low},
                      state_since=high - 1, next_deadline=None)
    [out] = _through(spark, rows, "group_state")
    assert out["members"][0]["last_heartbeat"] == naive_utc(high)
    assert out["members"][0]["joined_at"] == naive_utc(low)
    assert out["state_since"] == naive_utc(high - 1) and out["next_deadline"] is None


def test_ints_never_pass_through_float(spark: SparkSession, calls: list[Tables]) -> None:
    row = next(r for t in calls for r in t.get("committed_offsets", []))
    rows = {"committed_offsets": [{**row, "committed_offset": 2**53 + 1},
                                  {**row, "committed_offset": 2**63 - 1, "leader_epoch": None}]}
    out = _through(spark, rows, "committed_offsets")
    assert [r["committed_offset"] for r in out] == [2**53 + 1, 2**63 - 1]


def test_bytes_and_flags_come_back_exactly(spark: SparkSession, calls: list[Tables]) -> None:
    seed = next(t[BACKFILL_STATE] for t in calls if BACKFILL_STATE in t)
    [state] = _through(spark, {BACKFILL_STATE: seed}, BACKFILL_STATE)
    assert state == seed[0] and isinstance(state[STATE], bytes | bytearray)
    gone = {"group_id": "g", "topic": "t", "partition": 0, DELETES_KEY: True}
    [out] = _through(spark, {"committed_offsets": [gone]}, "committed_offsets", extra=True)
    assert out[DELETES_KEY] is True and out["committed_offset"] is None


@pytest.mark.parametrize(("changes", "named"), [
    ({"member": {"last_heartbeat": PANDAS_MS_RANGE[1] + 1}}, "members.last_heartbeat = "),
    ({"state_since": PANDAS_MS_RANGE[0] - 1}, "state_since = "),
    ({"generation_id": 2**31}, "generation_id = 2147483648 does not fit"),
    ({"rebalance_count": 2**63}, "rebalance_count = 9223372036854775808 does not fit"),
    ({"member": {"session_timeout_ms": True}}, "members.session_timeout_ms = True is not"),
    ({"member_count": "3"}, "member_count = '3' is not an integer"),
])
def test_a_value_that_does_not_fit_is_refused_naming_its_column(
        spark: SparkSession, calls: list[Tables], changes: dict[str, Any], named: str) -> None:
    rows = _state_row(calls, **changes)
    with pytest.raises(ValueError, match=named):
        wire_table(rows, wire_checks())


def test_every_table_comes_back_as_its_own_schema_whole(
        spark: SparkSession, calls: list[Tables]) -> None:
    tables: Tables = defaultdict(list)
    for call in calls:
        for table, rows in call.items():
            tables[table] += rows
    wire = spark.createDataFrame(wire_table(tables, wire_checks()).to_pandas(), wire_schema())
    for table in OUTPUT_TABLES:
        back = table_rows(wire, table)
        assert back.schema == table_schema(table), table
        assert back.count() == len(tables.get(table, [])), table
    names = [r["_table"] for r in wire.collect()]
    assert names == [t for t, rows in tables.items() for _ in rows]
