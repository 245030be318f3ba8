"""The what-if in SQL: `whatif`, a Python table function over the view `whatif_input`.

    SELECT * FROM whatif('assignor=cooperative-sticky',
                         TABLE(SELECT * FROM whatif_input WHERE group_id = 'orders')
                         PARTITION BY group_id)

`whatif_input` is group_history as the what-if reads it (times in epoch ms) with each group's
kind of log; `whatif` plays each group's consumers as recorded and under the change
(`pipeline.whatif`, with Kafka's default broker settings and heartbeat interval) and returns
a row a run: `simulated` and `what-if` (the recorded run is rebalance_cost's rows), or one
`refused` row saying why, so that a query over many groups answers for the others. Spark
cannot call a table function with a TABLE argument from a SQL function, so the call is
written out as above (docs/whatif.md); the change comes first, as Spark's parser takes what
follows PARTITION BY for more of its expressions.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from pyspark.sql import Row, SparkSession
from pyspark.sql.functions import udtf
from pyspark.sql.udtf import UserDefinedTableFunction

from pipeline.fold import CoordinatorConfig
from pipeline.whatif import Change, WhatIfError, what_if
from pipeline.whatif.compare import RECORDED
from schemas.columns import Column, ddl
from schemas.whatif import WHATIF_SUMMARY

INPUT_VIEW = "whatif_input"  # the view of group_history the table function reads
# How a query calls it, as `jobs/query.py --help` lists it.
CALL = f"whatif(change, TABLE({INPUT_VIEW}) PARTITION BY group_id)"
# What the what-if reads of group_history, with the group's kind of log (`journal`: its
# departures have causes and timing).
INPUT = """
SELECT h.group_id, unix_millis(h.event_time) AS event_time, h.log_partition, h.log_offset,
       h.seq, h.protocol, h.group_type, h.departures, s.log_kind = 'journal' AS journal,
       transform(h.members, m -> named_struct(
           'member_id', m.member_id, 'group_instance_id', m.group_instance_id,
           'client_id', m.client_id, 'client_host', m.client_host,
           'session_timeout_ms', m.session_timeout_ms,
           'rebalance_timeout_ms', m.rebalance_timeout_ms, 'subscription', m.subscription,
           'assignment', m.assignment, 'joined_at', unix_millis(m.joined_at))) AS members
FROM {history} h LEFT JOIN {state} s USING (group_id)
"""
_ASKED = ("asked_at", "change", "window_start", "window_end")
# Every column nullable: a refused group's row has no counts.
RETURNS: tuple[Column, ...] = (
    *(replace(c, nullable=True) for c in WHATIF_SUMMARY if c.name not in _ASKED),
    Column("note", "string", doc="what the log could not tell, or why a group got no "
                                 "what-if (run = refused)"),
)
_NAMES = tuple(c.name for c in RETURNS)


class WhatIfRuns:
    """The table function: a group's rows (PARTITION BY group_id) in, its runs out."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.change = ""

    def eval(self, change: str, row: Row) -> None:
        self.rows.append(row.asDict(recursive=True))
        self.change = change

    def terminate(self) -> Iterator[tuple[Any, ...]]:
        if not self.rows:
            return
        group_id = self.rows[0]["group_id"]
        try:
            w = what_if(group_id, self.rows, [], Change.parse(self.change or ""),
                        CoordinatorConfig(), bool(self.rows[0]["journal"]))
        except WhatIfError as e:
            yield tuple({"group_id": group_id, "run": "refused", "note": str(e)}.get(n)
                        for n in _NAMES)
            return
        for s in w.summary:
            if s["run"] != RECORDED:
                yield tuple({**s, "note": "; ".join(w.notes) or None}.get(n) for n in _NAMES)


def register_whatif(spark: SparkSession, history: str = "group_history",
                    state: str = "group_state") -> None:
    """The view `whatif_input` over the registered `history` and `state` views, and the
    table function `whatif`."""
    spark.sql(INPUT.format(history=history, state=state)).createOrReplaceTempView(INPUT_VIEW)
    function = udtf(WhatIfRuns, returnType=ddl(RETURNS))
    assert isinstance(function, UserDefinedTableFunction)  # udtf(cls, ...) makes one at once
    spark.udtf.register("whatif", function)
