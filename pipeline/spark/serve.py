"""One Spark application as a SQL endpoint for many users: the warehouse's tables registered in
a catalog database (`register_warehouse`), then served at once over Spark Connect (gRPC,
`sc://HOST:PORT`, for notebooks and Python/Scala clients) and over Spark's Thrift JDBC/ODBC
server (the HiveServer2 protocol, `jdbc:hive2://HOST:PORT/DATABASE`, for beeline and BI tools),
both started inside this application (`SqlEndpoints`), so every client shares its catalog,
its executors and its one hold on an embedded Derby metastore. Each client connection gets a
session of its own (its temporary views and settings are its own); permanent names are
common to all. Tables are registered by LOCATION, so each query reads the Delta log afresh
and sees what a stream writing the warehouse by path has committed. Nothing here writes
under the warehouse. Neither endpoint authenticates its clients: bind to loopback unless the
network in between is trusted.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import time
from typing import Any

from delta.tables import DeltaTable
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from pipeline.errors import UsageError
from pipeline.spark.runtime import jars
from pipeline.spark.tables import paths
from pipeline.spark.tables.catalog import quote_name, register_permanent
from schemas import METADATA_TABLES, OUTPUT_TABLES, WAREHOUSE_TABLES

log = logging.getLogger("serve")

CONNECT_PORT = 15002  # Spark Connect's own default
THRIFT_PORT = 10000  # HiveServer2's own default
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
_WILDCARDS = ("", "0.0.0.0", "::")
_THRIFT = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
# Spark's own way to run Spark Connect in an application: a plugin, started with the context
# (and stopped with it), serving on `spark.connect.grpc.binding.*`.
CONNECT_PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"


def endpoint_conf(host: str, connect_port: int, thrift_port: int,
                  class_path: str = "") -> dict[str, str]:
    """The Spark settings the endpoints read when they start (a port of 0: that one is off);
    `class_path`: the profile's own `spark.driver.extraClassPath` (a metastore's JDBC
    driver, say), kept in front.

    The Thrift server opens each JDBC session on a thread whose class loader is the JVM's
    class path, not the one `spark.jars` extends, so Delta's catalog must be on the driver's
    class path (`spark.driver.extraClassPath`; under spark-submit, `--driver-class-path`)."""
    conf: dict[str, str] = {}
    if connect_port:
        conf |= {"spark.plugins": CONNECT_PLUGIN,
                 "spark.connect.grpc.binding.address": host,
                 "spark.connect.grpc.binding.port": str(connect_port)}
    if thrift_port:
        ours = [str(p) for p in jars.jar_paths()]
        conf |= {"spark.hadoop.hive.server2.thrift.bind.host": host,
                 "spark.hadoop.hive.server2.thrift.port": str(thrift_port),
                 "spark.driver.extraClassPath": os.pathsep.join(filter(None, [class_path, *ours]))}
    return conf


def check_port_free(host: str, port: int) -> None:
    """Refuse, before a JVM starts, a port some process listens on already."""
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; another "
                         "server (a second serve.py?) has it: choose another port") from None


def _qualified(spark: SparkSession, path: str) -> str:
    """`path` as Hadoop's filesystem spells it (`file:/x`), to compare two spellings."""
    jvm: Any = spark._jvm
    jsc: Any = spark._jsc
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    return str(hpath.getFileSystem(jsc.hadoopConfiguration()).makeQualified(hpath).toString())


def _registered_location(spark: SparkSession, name: str) -> str | None:
    """Where the catalog says table `name` lives; None when the name is free ("" for a
    name that is no table with a location: a view, say)."""
    try:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    except AnalysisException as exc:
        if exc.getCondition() == "TABLE_OR_VIEW_NOT_FOUND":
            return None
        raise
    return next((str(r["data_type"]) for r in rows if r["col_name"] == "Location"), "")


def _register(spark: SparkSession, database: str, table: str, path: str) -> None:
    """Name the Delta table at `path` `database.table`, or check the name already means it:
    a metastore copied along with its warehouse still points at the original's tables."""
    name = f"{quote_name(database)}.`{table}`"
    location = _registered_location(spark, name)
    if location is None:
        quoted = "'" + path.replace("\\", "\\\\").replace("'", "\\'") + "'"
        spark.sql(f"CREATE TABLE IF NOT EXISTS {name} USING DELTA LOCATION {quoted}")
    elif not location or _qualified(spark, location) != _qualified(spark, path):
        raise UsageError(f"{database}.{table} is registered at {location or '(no location)'!r}, "
                         f"not at {path!r}: serve another --database or --metastore, or DROP TABLE it "
                         "there (the Delta table itself stays) and start again")


def register_warehouse(spark: SparkSession, warehouse: str, database: str) -> list[str]:
    """Register every table present under `warehouse` in `database` (created if missing), and
    there the permanent table functions and the group_members view (the lag functions too
    when partition_lag and group_lag exist). Creates no table; returns the names found."""
    root = paths.qualify(warehouse)
    found = [t for t in (*WAREHOUSE_TABLES, *METADATA_TABLES)
             if DeltaTable.isDeltaTable(spark, paths.join(root, t))]
    if not set(found) & set(OUTPUT_TABLES):
        raise UsageError(f"--warehouse {warehouse}: no output tables there; run "
                         "jobs/replay.py or jobs/backfill.py first")
    if not spark.catalog.databaseExists(database):  # IF NOT EXISTS logs a warning if it does
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote_name(database)}")
    for table in found:
        _register(spark, database, table, paths.join(root, table))
    made = register_permanent(spark, database, lag={"partition_lag", "group_lag"} <= set(found))
    log.info("%s: %d tables (%s), %d functions and views", database, len(found),
             ", ".join(found), len(made))
    return found


def check_thrift_class_path(spark: SparkSession) -> None:
    """Refuse to serve JDBC from a driver whose class path lacks Delta (`endpoint_conf`)."""
    jvm: Any = spark._jvm
    try:
        jvm.java.lang.ClassLoader.getSystemClassLoader().loadClass(DELTA_CATALOG)
    except Exception:  # py4j wraps ClassNotFoundException
        raise UsageError(
            "the Thrift server needs Delta on the driver's class path: spark-submit "
            '--driver-class-path "$(python -m pipeline.spark.runtime.jars --print-jars | tr , :)" '
            "... (or --thrift-port 0)") from None


def _wait_listening(host: str, port: int, seconds: float, what: str) -> None:
    """A server that binds its socket on a thread of its own (the Thrift server after `start`
    returns, Spark Connect's plugin as the context starts), listening."""
    deadline = time.monotonic() + seconds
    target = "127.0.0.1" if host in _WILDCARDS else host
    while True:
        try:
            with socket.create_connection((target, port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} is not listening on {host}:{port} after "
                                   f"{seconds:.0f} s (see the log above)") from None
            time.sleep(0.2)


def client_host(host: str) -> str:
    """The host a client names: this machine's name when bound to every interface."""
    return socket.getfqdn() if host in _WILDCARDS else host


def _java(spark: SparkSession, name: str) -> Any:
    """The JVM class `name` (a Scala object's static forwarders are its methods)."""
    return functools.reduce(getattr, name.split("."), spark._jvm)


class SqlEndpoints:
    """Spark Connect and the Thrift JDBC/ODBC server of `spark`'s application (each unless its
    port is 0); `urls` are what clients connect to. Host and ports are read from the
    session's conf (`endpoint_conf`), which is what the servers themselves read. The Thrift
    server is started on entering and stopped on leaving; Spark Connect runs as Spark's
    plugin (`CONNECT_PLUGIN`), from the session's start to its stop, and entering waits until
    it listens."""

    def __init__(self, spark: SparkSession, database: str, *, connect: bool = True,
                 thrift: bool = True) -> None:
        self.spark = spark
        self.database = database
        self.wanted = {"connect": connect, "thrift": thrift}
        self.urls: dict[str, str] = {}
        self._thrift: Any = None

    def __enter__(self) -> SqlEndpoints:
        try:
            if self.wanted["connect"]:
                self._start_connect()
            if self.wanted["thrift"]:
                self._start_thrift()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _conf(self, key: str) -> str:
        return str(self.spark.sparkContext.getConf().get(key))

    def _start_connect(self) -> None:
        if CONNECT_PLUGIN not in self._conf("spark.plugins").split(","):
            raise RuntimeError(f"Spark Connect needs the session built with spark.plugins="
                               f"{CONNECT_PLUGIN} (endpoint_conf)")
        host = self._conf("spark.connect.grpc.binding.address")
        port = int(self._conf("spark.connect.grpc.binding.port"))
        _wait_listening(host, port, 60, "Spark Connect")
        self.urls["Spark Connect"] = f"sc://{client_host(host)}:{port}"

    def _start_thrift(self) -> None:
        host = self._conf("spark.hadoop.hive.server2.thrift.bind.host")
        port = int(self._conf("spark.hadoop.hive.server2.thrift.port"))
        check_thrift_class_path(self.spark)
        # False: a failure comes back here instead of ending the JVM (System.exit), as the
        # stand-alone server does.
        self._thrift = _java(self.spark, _THRIFT).startWithSparkSession(
            self.spark._jsparkSession, False)
        _wait_listening(host, port, 60, "the Thrift server")
        self.urls["JDBC/ODBC (HiveServer2)"] = (f"jdbc:hive2://{client_host(host)}:{port}/"
                                                f"{self.database}")

    def stop(self) -> None:
        """Stop the Thrift server: new JDBC connections are refused from here on (Spark Connect
        stops with the session)."""
        if self._thrift is not None:
            self._thrift.stop()
            self._thrift = None
