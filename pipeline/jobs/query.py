"""SQL over the consumer-group tables, now or as of a past event time.

    spark-submit jobs/query.py --warehouse /data/wh "SELECT * FROM group_state"
    spark-submit jobs/query.py --warehouse /data/wh --as-of 2026-11-17T03:12:00 --group orders
    spark-submit jobs/query.py --warehouse /data/wh --as-of 2026-11-17T03:12:00 \
        "SELECT * FROM group_members WHERE group_id = 'orders'"
    spark-submit jobs/query.py --warehouse /data/wh --demo

Every table under --warehouse is a SQL name, with the views and table functions
`--help` lists (`pipeline.spark.tables.catalog.names_help`, from the catalog itself).
`--as-of` without SQL prints state, members and offsets as of that time, for one --group
or all. With SQL, the statement sees the tables as they were then: group_state,
committed_offsets and group_members are their as-of forms, the append-only tables hold only
their rows up to that time (rebalances: completed by then). The time is parsed first and
reaches SQL as a timestamp literal built from the parsed value, the group id only as a Column
value. Reads the tables; writes nothing.
"""

from __future__ import annotations

import argparse
import sys

from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import DataFrame, SparkSession

from pipeline.errors import UsageError
from pipeline.jobs._common import (
    JobParser,
    add_profile_arg,
    add_warehouse_arg,
    cli,
    event_time_arg,
    job_session,
    open_warehouse,
    positive_int,
)
from pipeline.spark.tables.catalog import (
    AS_OF,
    DEMO_QUERIES,
    LAG_DEMO_QUERIES,
    as_of,
    bind_as_of,
    names_help,
    timestamp_sql,
)
from pipeline.spark.tables.errors import first_line, user_sql


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = JobParser(__file__, __doc__, epilog=names_help())
    add_warehouse_arg(p)
    p.add_argument("--demo", action="store_true", help="run the example questions")
    p.add_argument("--as-of", type=event_time_arg, metavar="TIMESTAMP",
                   help="the tables as of this event time (ISO; UTC); alone: state, members "
                        "and offsets then")
    p.add_argument("--group", help="with --as-of and no SQL: only this group")
    p.add_argument("--limit", type=positive_int, default=50, help="rows to show")
    add_profile_arg(p)
    p.add_argument("sql", nargs="?", help="one SQL statement over the tables' names")
    args = p.parse_args(argv)
    if not args.demo and not args.sql and args.as_of is None:
        p.error("give a SQL statement, --as-of TIMESTAMP, or --demo")
    if args.demo and args.as_of is not None:
        p.error("--demo asks about now; give --as-of with a SQL statement instead")
    if args.group is not None and args.sql:
        p.error("--group goes with --as-of alone; filter the group in the SQL statement")
    return args


def answers(session: SparkSession, args: argparse.Namespace) -> dict[str, DataFrame]:
    """Each answer the arguments ask for, by title, over views already registered."""
    if args.as_of is not None and not args.sql:
        return {f"{function}({timestamp_sql(args.as_of)})":
                as_of(session, function, args.as_of, args.group) for function in AS_OF}
    if args.as_of is None:
        lag = session.catalog.tableExists("group_lag")
        queries = ((DEMO_QUERIES | (LAG_DEMO_QUERIES if lag else {})) if args.demo
                   else {"result": args.sql})
        return {title: session.sql(sql) for title, sql in queries.items()}
    bound = bind_as_of(session, args.as_of)
    try:
        return {f"result as of {timestamp_sql(args.as_of)}": session.sql(args.sql)}
    except ParseException:
        raise  # the statement itself is wrong, as/of or not: user_sql says so
    except AnalysisException as exc:
        raise UsageError(f"SQL: {first_line(exc)} With --as-of, the statement's tables are: "
                         + "; ".join(f"{t}: {how}" for t, how in bound.items())
                         + ". group_state then has the columns "
                         + ", ".join(session.table("group_state").columns)) from exc


@cli(parse)
def main(args: argparse.Namespace, spark: SparkSession | None = None) -> int:
    """Prints the answers; returns the exit status. A session passed in is used and left
    running (the docs' examples run in-process in one test session)."""
    with job_session("query", args.profile, spark, args=args) as session:
        open_warehouse(session, args.warehouse, args.group)
        with user_sql():
            results = answers(session, args)
        for title, df in results.items():
            print(f"\n== {title}")
            with user_sql("SQL" if args.sql else title):
                df.show(args.limit, truncate=False)
        return 0


if __name__ == "__main__":
    sys.exit(main())
