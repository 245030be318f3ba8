"""SQL over the consumer-group tables.

    spark-submit jobs/query.py --warehouse /data/wh "SELECT * FROM group_state"

Every output table under --warehouse is a SQL name (group_state, committed_offsets,
offset_history, group_transitions, rebalances, rejected_events). `--demo` runs a few
example questions instead of one statement. Reads the tables; writes nothing.
"""

from __future__ import annotations

import argparse

from pipeline.spark.catalog import DEMO_QUERIES, register_views
from pipeline.spark.session import build_session

from _common import setup_logging


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--warehouse", required=True)
    p.add_argument("--demo", action="store_true", help="run the example questions")
    p.add_argument("--limit", type=int, default=50, help="rows to show")
    p.add_argument("sql", nargs="?", help="one SQL statement")
    args = p.parse_args(argv)
    if not args.demo and not args.sql:
        p.error("give a SQL statement, or --demo")
    return args


def main(argv: list[str] | None = None) -> None:
    setup_logging()
    args = parse(argv)
    spark = build_session("query", "local")
    try:
        register_views(spark, args.warehouse)
        queries = DEMO_QUERIES if args.demo else {"result": args.sql}
        for title, sql in queries.items():
            print(f"\n== {title}")
            spark.sql(sql).show(args.limit, truncate=False)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
