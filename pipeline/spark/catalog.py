"""The output tables as SQL names: each `<warehouse>/<table>` Delta table as a view."""

from __future__ import annotations

from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from schemas import OUTPUT_TABLES


def register_views(spark: SparkSession, warehouse: str) -> list[str]:
    """Make every output table under `warehouse` queryable by its name; returns the names."""
    names = []
    for table in OUTPUT_TABLES:
        path = str(Path(warehouse).resolve() / table)
        if DeltaTable.isDeltaTable(spark, path):
            spark.read.format("delta").load(path).createOrReplaceTempView(table)
            names.append(table)
    if not names:
        raise FileNotFoundError(f"no output tables under {warehouse!r}: run jobs/replay.py first")
    return names


DEMO_QUERIES: dict[str, str] = {
    "groups now": """
        SELECT group_id, state, generation_id, protocol, member_count, rebalance_count,
               rejected_count
        FROM group_state ORDER BY rebalance_count DESC, group_id LIMIT 10""",
    "most rebalanced groups, with their main cause": """
        SELECT group_id, count(*) AS rebalances, max_by(cause, cnt) AS main_cause,
               round(avg(duration_ms)) AS avg_ms, sum(partitions_moved) AS moved
        FROM (SELECT *, count(*) OVER (PARTITION BY group_id, cause) AS cnt FROM rebalances)
        GROUP BY group_id ORDER BY rebalances DESC LIMIT 5""",
    "refused or malformed rows, by reason": """
        SELECT reason, count(*) AS rows FROM rejected_events
        GROUP BY reason ORDER BY rows DESC""",
    "offsets committed per group": """
        SELECT group_id, count(*) AS partitions, sum(committed_offset) AS total_offset,
               max(commit_timestamp) AS last_commit
        FROM committed_offsets GROUP BY group_id ORDER BY partitions DESC LIMIT 5""",
}
