"""Serve the warehouse's tables by name to many SQL clients at once: Spark Connect and JDBC/ODBC.

    spark-submit --driver-class-path "$(python -m pipeline.spark.runtime.jars --print-jars | tr , :)" \
        jobs/serve.py --warehouse /data/wh --host 127.0.0.1

One long-running Spark application (`python jobs/serve.py ...` or `cgr-serve ...` start it
the same way, without spark-submit): it registers every table present under --warehouse in
--database (created if missing; no table is created), with the permanent table functions
(group_state_as_of, rebalance_summary, ...; lag_as_of and group_lag_between when the lag
tables exist) and the group_members view, then serves that catalog over Spark Connect
(sc://HOST:CONNECT-PORT: pyspark's SparkSession.builder.remote) and the Thrift JDBC/ODBC
server (jdbc:hive2://HOST:THRIFT-PORT/DATABASE: beeline, BI tools), logging one line per
endpoint with its URL, until Ctrl-C or SIGTERM. With the local profile it holds the
warehouse's embedded Derby metastore for all its clients; a stream keeps writing the same
warehouse beside it with `jobs/replay.py --database ''` (by path: no names, no Derby), and
every query reads the tables' newest commits. With --metrics-port it also serves Prometheus
metrics over the warehouse's newest rows (docs/metrics.md), read afresh at each scrape. Writes
nothing under the warehouse. No client authenticates: the default host is loopback
(docs/serving.md).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from types import FrameType

from pyspark.sql import SparkSession

from pipeline.jobs._common import (
    JobParser,
    add_metastore_arg,
    add_metrics_args,
    add_profile_arg,
    add_warehouse_arg,
    cli,
    database_arg,
    default_metastore,
    log_level,
    metrics_endpoint,
)
from pipeline.spark.newest_rows import WarehouseRows
from pipeline.spark.runtime.session import build_session, session_conf, stop_session
from pipeline.spark.serve import (
    CONNECT_PORT,
    THRIFT_PORT,
    SqlEndpoints,
    check_port_free,
    check_thrift_class_path,
    endpoint_conf,
    register_warehouse,
)

log = logging.getLogger("serve")
CLASS_PATH = "spark.driver.extraClassPath"
_POLL_S = 5.0  # how often the waiting job checks that Spark still runs


def port_arg(text: str) -> int:
    """argparse type: a TCP port, or 0 for none."""
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a port from 1 to 65535, or 0 "
                                         "to leave this endpoint off")
    return int(text)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = JobParser(__file__, __doc__)
    add_warehouse_arg(p)
    p.add_argument("--database", default="consumer_groups", type=database_arg,
                   help="catalog database the tables are served from: schema, or "
                        "catalog.schema")
    p.add_argument("--host", default="127.0.0.1",
                   help="address every endpoint listens on (0.0.0.0: every interface)")
    p.add_argument("--connect-port", default=CONNECT_PORT, type=port_arg, metavar="PORT",
                   help="Spark Connect (gRPC) port; 0: no Spark Connect")
    p.add_argument("--thrift-port", default=THRIFT_PORT, type=port_arg, metavar="PORT",
                   help="Thrift JDBC/ODBC (HiveServer2) port; 0: no JDBC/ODBC")
    add_metrics_args(p, host=False)
    add_metastore_arg(p)
    add_profile_arg(p)
    args = p.parse_args(argv)
    if not args.database:
        p.error("--database: the endpoints serve names; give a schema")
    if not args.connect_port and not args.thrift_port and args.metrics_port is None:
        p.error("--connect-port 0 and --thrift-port 0 leave nothing to serve")
    ports = {"--connect-port": args.connect_port, "--thrift-port": args.thrift_port,
             "--metrics-port": args.metrics_port}
    for port in {n for n in ports.values() if n}:
        if len(same := [flag for flag, n in ports.items() if n == port]) > 1:
            p.error(f"{' and '.join(same)} name the same port, {port}")
    return args


def wait_for_stop(spark: SparkSession) -> str:
    """Block until SIGINT or SIGTERM (returns its name) or until Spark stops by itself."""
    stop = threading.Event()
    said: list[str] = []

    def on_signal(number: int, _frame: FrameType | None) -> None:
        said.append(signal.Signals(number).name)
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop.wait(_POLL_S):
            if spark.sparkContext._jsc.sc().isStopped():
                raise RuntimeError("the Spark application stopped under the endpoints")
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    return said[0]


@cli(parse)
def main(args: argparse.Namespace) -> int:
    """Serves until stopped; returns the exit status (0 after Ctrl-C or SIGTERM)."""
    for port in (args.connect_port, args.thrift_port, args.metrics_port):
        if port:
            check_port_free(args.host, port)
    class_path = session_conf(args.profile, with_jars=False).get(CLASS_PATH, "")
    spark = build_session("serve", args.profile,
                          endpoint_conf(args.host, args.connect_port, args.thrift_port,
                                        class_path),
                          metastore=args.metastore or default_metastore(args.warehouse),
                          log_level=log_level(args))
    try:
        if args.thrift_port:
            check_thrift_class_path(spark)  # before the tables: a refusal comes at once
        register_warehouse(spark, args.warehouse, args.database)
        rows = WarehouseRows(spark, args.warehouse, args.metrics_per_partition)
        with SqlEndpoints(spark, args.database, connect=bool(args.connect_port),
                          thrift=bool(args.thrift_port)) as endpoints, \
                metrics_endpoint(args, args.host, "serve", rows.publish):
            for name, url in endpoints.urls.items():
                log.info("%s: %s", name, url)
            log.info("serving %s until Ctrl-C or SIGTERM", args.database)
            why = wait_for_stop(spark)
            log.info("%s: stopping the endpoints", why)
    finally:
        stop_session(spark)
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
