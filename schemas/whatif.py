"""The what-if's tables (`jobs/whatif.py --output`): each what-if asked adds its runs side by
side, one summary row a run and the rebalance_cost rows of each run (docs/whatif.md)."""

from __future__ import annotations

from schemas.columns import Column
from schemas.tables import REBALANCE_COST

_ASKED: tuple[Column, ...] = (
    Column("asked_at", "timestamp", False, "when the what-if was run (wall clock)"),
    Column("change", "string", False, "the configuration changed, e.g. assignor=cooperative-sticky"),
    Column("run", "string", False, "recorded (what the replay wrote), simulated (the recorded "
           "consumers played again as recorded: the baseline) or what-if (played under the "
           "change)"),
)

WHATIF_SUMMARY: tuple[Column, ...] = (
    *_ASKED,
    Column("group_id", "string", False),
    Column("window_start", "timestamp", False),
    Column("window_end", "timestamp", False),
    Column("rebalances", "int", False, "rebalances completed in the window (not abandoned)"),
    Column("members_expelled", "int", False,
           "members the coordinator removed by a timer (session, rebalance, join, sync)"),
    Column("partitions_revoked", "bigint", False),
    Column("partitions_moved", "bigint", False),
    Column("unowned_partition_ms", "bigint", False,
           "partition-milliseconds nobody consumed because of a rebalance"),
    Column("longest_stop_ms", "bigint", False,
           "the longest rebalance that left partitions unowned"),
)

WHATIF_REBALANCES: tuple[Column, ...] = (*_ASKED, *REBALANCE_COST)

WHATIF_TABLES: dict[str, tuple[Column, ...]] = {
    "whatif_summary": WHATIF_SUMMARY,
    "whatif_rebalances": WHATIF_REBALANCES,
}
