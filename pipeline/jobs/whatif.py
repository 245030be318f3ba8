"""What a classic group's rebalances cost, and what they would have cost under another
assignor, static membership, session or rebalance timeout, or initial delay.

    spark-submit jobs/whatif.py --warehouse /data/wh --group orders \\
        --assignor cooperative-sticky --static-membership

Reads the group's group_history and rebalance_cost rows (and its group_state, for the kind of
log it came from) under --warehouse, with --where instead of --group for every group a SQL
condition on group_state picks. Plays the group's consumers again through the fold
(`pipeline.whatif`): as recorded, and under the change. Prints, per group, one line a run
(rebalances, members expelled, partitions revoked and moved, partition-seconds unowned, the
longest stop) and a line for what the log could not tell. With --output, appends the runs to
the Delta tables whatif_summary and whatif_rebalances there (schemas/whatif.py); with --report,
writes a page of the group as recorded and as played under the change. A change
Kafka would refuse, a group that never existed or a window without a rebalance is one line
and writes nothing.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipeline.errors import UsageError
from pipeline.fold import CoordinatorConfig
from pipeline.jobs._common import (
    JobParser,
    add_profile_arg,
    add_warehouse_arg,
    cli,
    coordinator_config,
    job_session,
    positive_int,
    whole_number,
)
from pipeline.jobs.report import load_group
from pipeline.report.whatif import whatif_page
from pipeline.spark.events.validate import warehouse_tables
from pipeline.spark.tables import paths, writes
from pipeline.spark.tables.contract import arrow_schema, struct_of
from pipeline.spark.tables.creation import create_table
from pipeline.spark.tables.options import read_delta
from pipeline.spark.tables.whatif_sql import INPUT
from pipeline.times import event_time_ms
from pipeline.whatif import Change, WhatIf, WhatIfError, check, what_if
from pipeline.whatif.compare import PROTOCOLS, WHAT_IF
from pipeline.whatif.simulate import HEARTBEAT_MS
from schemas.whatif import WHATIF_TABLES

log = logging.getLogger("whatif")

def _time(text: str) -> int:
    try:
        return event_time_ms(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = JobParser(__file__, __doc__)
    add_warehouse_arg(p)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--group", help="the group id, taken literally")
    which.add_argument("--where", help="a SQL condition on group_state picking the groups, "
                                       "e.g. \"group_id LIKE 'etl-%%'\"")
    p.add_argument("--from", dest="start", type=_time, help="the window's start (event time)")
    p.add_argument("--to", dest="end", type=_time, help="the window's end (event time)")
    p.add_argument("--assignor", help="range, roundrobin, sticky or cooperative-sticky; with "
                                      "--protocol consumer, uniform or range")
    p.add_argument("--protocol", choices=PROTOCOLS,
                   help="the group protocol the consumers would use (consumer: KIP-848, the "
                        "broker assigning with --assignor uniform (its default) or range); "
                        "default: the recorded one")
    p.add_argument("--static-membership", action=argparse.BooleanOptionalAction, default=None,
                   help="every consumer static (group.instance.id from its client id and host), "
                        "or none")
    p.add_argument("--session-timeout", type=whole_number, metavar="MS",
                   help="session.timeout.ms of every consumer")
    p.add_argument("--rebalance-timeout", type=whole_number, metavar="MS",
                   help="the rebalance timeout (max.poll.interval.ms) of every consumer")
    p.add_argument("--initial-rebalance-delay", type=whole_number, metavar="MS",
                   help="the broker's group.initial.rebalance.delay.ms")
    p.add_argument("--heartbeat-interval", type=positive_int, metavar="MS", default=HEARTBEAT_MS,
                   help="the consumers' heartbeat.interval.ms, which no log records: how soon "
                        "they notice a rebalance")
    p.add_argument("--coordinator-conf", help="the broker's group settings (.properties)")
    p.add_argument("--output", help="a folder to append the runs to, as Delta tables")
    p.add_argument("--report", metavar="FILE.html",
                   help="with --group: a page with the group as recorded above, as the what-if "
                        "played it below, on one time axis, and the runs' summary")
    add_profile_arg(p)
    args = p.parse_args(argv)
    if args.start is not None and args.end is not None and args.end <= args.start:
        p.error("--to must be after --from")
    if args.report is not None and args.group is None:
        p.error("--report draws one group: give --group")
    return args


def change_of(args: argparse.Namespace) -> Change:
    return Change(args.assignor, args.static_membership, args.protocol, args.session_timeout,
                  args.rebalance_timeout, args.initial_rebalance_delay)


@dataclass
class Asked:
    """What-ifs answered, and the groups that had none (their one line each)."""

    answers: list[WhatIf]
    refused: dict[str, str]


def ask(spark: SparkSession, warehouse: str, groups: list[str], change: Change,
        config: CoordinatorConfig, start: int | None = None, end: int | None = None,
        heartbeat_ms: int = HEARTBEAT_MS) -> Asked:
    """The what-if of `change` for each of `groups` from the tables under `warehouse`."""
    root = paths.qualify(warehouse)
    wanted = F.col("group_id").isin(groups)  # the ids as values, never as SQL text
    for table in ("group_history", "group_state"):
        read_delta(spark, paths.join(root, table)).where(wanted).createOrReplaceTempView(
            f"_whatif_{table}")
    known = {r.group_id: r.log_kind for r in
             spark.table("_whatif_group_state").select("group_id", "log_kind").collect()}
    history: dict[str, list[dict[str, Any]]] = {}
    for row in spark.sql(INPUT.format(history="_whatif_group_history",
                                      state="_whatif_group_state")).collect():
        history.setdefault(row.group_id, []).append(row.asDict(recursive=True))
    cost = read_delta(spark, paths.join(root, "rebalance_cost")).where(wanted).selectExpr(
        "*", "unix_millis(completed_at) AS completed_ms")
    recorded: dict[str, list[dict[str, Any]]] = {}
    for row in cost.collect():
        r = row.asDict(recursive=True)
        r["completed_at"] = r.pop("completed_ms")
        recorded.setdefault(r["group_id"], []).append(r)
    answers, refused = [], {}
    for group in groups:
        try:
            if group not in known:
                raise WhatIfError(f"group {group!r} is not in {warehouse} (group ids are "
                                  "matched exactly)")
            answers.append(what_if(group, history.get(group, []), recorded.get(group, []),
                                   change, config, known[group] == "journal", start, end,
                                   heartbeat_ms))
        except WhatIfError as e:
            refused[group] = str(e)
    return Asked(answers, refused)


def lines(asked: Asked) -> list[str]:
    """What the job prints: per group, a line a run, and its notes; a line per refusal."""
    out = []
    for w in asked.answers:
        out.append(f"{w.group_id}: {w.change.describe()}")
        for s in w.summary:
            out.append(
                f"  {s['run']:<9}  {s['rebalances']:>4} rebalances  {s['members_expelled']:>3} "
                f"expelled  {s['partitions_revoked']:>5} revoked  {s['partitions_moved']:>5} "
                f"moved  {s['unowned_partition_ms'] / 1000:>10.1f} partition-s unowned  "
                f"longest stop {s['longest_stop_ms'] / 1000:.1f} s")
        out += [f"  note: {n}" for n in w.notes]
    out += [f"{g}: {why}" for g, why in asked.refused.items()]
    return out


def write(spark: SparkSession, output: str, asked: Asked, asked_at: int) -> None:
    """Append the runs to whatif_summary and whatif_rebalances under `output`."""
    root = paths.qualify(output)
    rows: dict[str, list[Mapping[str, Any]]] = {t: [] for t in WHATIF_TABLES}
    for w in asked.answers:
        base = {"asked_at": asked_at, "change": w.change.describe()}
        window = {"window_start": w.start, "window_end": w.end}
        rows["whatif_summary"] += [base | window | s for s in w.summary]
        rows["whatif_rebalances"] += [base | r for r in w.rebalances]
    for table, columns in WHATIF_TABLES.items():
        schema = struct_of(columns)
        path = paths.join(root, table)
        create_table(spark, path, schema)
        names = [c.name for c in columns]
        data = pa.Table.from_pylist([{n: r.get(n) for n in names} for r in rows[table]],
                                    schema=_ms_schema(arrow_schema(schema)))
        writes.append(spark, data.cast(arrow_schema(schema)), path)


def _ms_schema(schema: pa.Schema) -> pa.Schema:
    """`schema` with its timestamps in milliseconds: the rows hold epoch ms, which Arrow reads
    in the field's unit (and the cast to the table's scales)."""
    return pa.schema([pa.field(f.name, pa.timestamp("ms", tz=f.type.tz))
                      if pa.types.is_timestamp(f.type) else f for f in schema])


@cli(parse)
def main(args: argparse.Namespace, spark: SparkSession | None = None) -> None:
    """Prints the what-ifs (`ask` returns them); a session passed in is used and left
    running."""
    config = coordinator_config(args.coordinator_conf)
    change = change_of(args)
    try:
        check(change, config)
    except WhatIfError as e:
        raise UsageError(str(e)) from None
    with job_session("whatif", args.profile, spark, args=args) as session:
        warehouse_tables(session, args.warehouse)
        groups = [args.group] if args.group is not None else _picked(session, args)
        asked = ask(session, args.warehouse, groups, change, config, args.start, args.end,
                    args.heartbeat_interval)
        for line in lines(asked):
            print(line)
        if not asked.answers:
            raise UsageError("no what-if answered: " + "; ".join(asked.refused.values()))
        if args.output:
            write(session, args.output, asked, int(time.time() * 1000))
            log.info("appended %d what-ifs to %s (whatif_summary, whatif_rebalances)",
                     len(asked.answers), args.output)
        if args.report:
            (w,) = asked.answers
            recorded = load_group(session, args.warehouse, w.group_id)
            page = whatif_page(w.group_id, w.change.describe(), recorded, w.played[WHAT_IF],
                               w.summary, w.start, w.end, path=args.report)
            log.info("wrote %s", page)


def _picked(spark: SparkSession, args: argparse.Namespace) -> list[str]:
    state = read_delta(spark, paths.join(paths.qualify(args.warehouse), "group_state"))
    picked = sorted(r.group_id for r in state.where(args.where).select("group_id").collect())
    if not picked:
        raise UsageError(f"--where {args.where}: no group in {args.warehouse}")
    return picked


if __name__ == "__main__":
    main()
