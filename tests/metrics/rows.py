"""Rows shaped as the contract's tables give them (every column present, typed as Spark
returns them), for the exporter's tests: two groups, one of them in ERR with a cause."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pipeline.fold.states import EMPTY, STABLE
from pipeline.metrics.catalogue import TABLES
from schemas.lag import ERR, OK, STALL

AT = datetime(2023, 11, 14, 22, 16)


def row(table: str, **values: Any) -> dict[str, Any]:
    """A row of `table` with every contract column: `values`, None elsewhere."""
    names = {c.name for c in TABLES[table]}
    unknown = set(values) - names
    assert not unknown, f"{table} has no columns {unknown}"
    return {name: values.get(name) for name in (c.name for c in TABLES[table])}


GROUP_LAG = [
    row("group_lag", sampled_at=AT, group_id="orders", state=STABLE, generation_id=4,
        total_lag=1500, max_lag=1200, max_lag_ms=95_064, status=ERR, cause="NONE",
        partitions=2, partitions_unknown=0, complete=1.0),
    row("group_lag", sampled_at=AT, group_id="audit", state=EMPTY, generation_id=9,
        total_lag=0, max_lag=0, max_lag_ms=0, status=OK, partitions=1, partitions_unknown=0,
        complete=1.0),
]
PARTITION_LAG = [
    row("partition_lag", sampled_at=AT, group_id="orders", topic="orders", partition=0,
        log_end_offset=5200, committed_offset=4000, lag=1200, lag_ms=95_064, status=STALL,
        offset_status="COMMITTED"),
    row("partition_lag", sampled_at=AT, group_id="orders", topic="orders", partition=1,
        log_end_offset=700, committed_offset=400, lag=300, lag_ms=12_011, status=OK,
        offset_status="COMMITTED"),
    row("partition_lag", sampled_at=AT, group_id="audit", topic="orders", partition=0,
        log_end_offset=5200, committed_offset=5200, lag=0, lag_ms=0, status=OK,
        offset_status="COMMITTED"),
]
GROUP_STATE = [
    row("group_state", group_id="orders", state=STABLE, generation_id=4, member_count=2,
        rebalance_count=3, members=[]),
    row("group_state", group_id="audit", state=EMPTY, generation_id=9, member_count=0,
        rebalance_count=11, members=[]),
]
