"""The one SparkSession builder for jobs and tests.

Configuration comes from files packaged with `pipeline` (`pipeline/conf/`, `conf/` in a checkout
is a link to it; read through `importlib.resources`, so a zipped wheel on `--py-files` works
too), later ones winning:

1. `conf/spark-defaults.conf`: shared by every profile (Delta, RocksDB state store, UTC, ...).
2. what this module adds: the Delta/Kafka jars (`pipeline.spark.runtime.jars`) and the project's own
   interpreter for Python workers (`spark.pyspark.python`, `PYSPARK_PYTHON`).
3. `conf/profiles/<profile>.conf`: `local`, `test` or `cluster` (or a path to such a file).
4. `extra_conf` given by the caller.

Files use Spark's properties format: `key value` (or `key=value`), `#` comments.
`SPARK_CONF_DIR` defaults to the packaged `conf/`, so the JVM Spark launches reads its
`log4j2.properties`.

Catalog: a profile with `spark.sql.catalogImplementation hive` (`local`) and no metastore of its
own (`spark.hadoop.javax.jdo.option.ConnectionURL`) gets Spark's embedded Derby metastore in
the `metastore` folder the job names (`metastore_conf`; replay and backfill do), so other
processes (spark-sql, a notebook) see the tables by name after the job ends; embedded Derby
admits one process at a time. Other profiles and jobs keep the in-memory catalog, where tables
live as long as the session. The
Delta log on disk is the source of truth either way and tables are registered by path::

    spark.sql("CREATE DATABASE IF NOT EXISTS consumer_groups")
    spark.sql("CREATE TABLE IF NOT EXISTS consumer_groups.group_state "
              "USING DELTA LOCATION '/data/wh/group_state'")

(`CREATE TABLE ... USING DELTA LOCATION` takes schema, partitioning and properties from the
Delta log.) `spark.sql.warehouse.dir` only matters for managed tables, which the pipeline avoids.

Under `spark-submit` (a JVM exists before Python runs), the session is `getOrCreate`d: master
and every setting spark-submit was given are left alone (values it read from
`conf/spark-defaults.conf` via `SPARK_CONF_DIR=conf` still yield to the profile). Without
`--jars`, in client mode, the cached jars are added to spark-submit's driver class loader and
shipped to executors through `spark.jars`; in cluster deploy mode pass them explicitly::

    spark-submit --jars "$(.venv/bin/python -m pipeline.spark.runtime.jars --print-jars)" jobs/x.py

A second `build_session` in the same process returns the running session; settings it already
has are kept.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from pipeline.java import java_executable
from pipeline.properties import read_properties
from pipeline.spark.runtime import jars
from pipeline.spark.runtime.logs import launch_quietly, log_everything

# The folder holding the `pipeline` package: a checkout, site-packages, or a zipped wheel.
PACKAGE_HOME = Path(__file__).resolve().parents[3]
CONF_DIR: Traversable = resources.files("pipeline") / "conf"
DEFAULTS_FILE = CONF_DIR / "spark-defaults.conf"
PROFILES_DIR = CONF_DIR / "profiles"
METASTORE_URL = "spark.hadoop.javax.jdo.option.ConnectionURL"
METASTORE_URIS = "spark.hadoop.hive.metastore.uris"  # a Hive metastore service

_DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
_MUTABLE_LOADER = "org.apache.spark.util.MutableURLClassLoader"



def profile_path(profile: str) -> Traversable:
    candidate = Path(profile)
    if candidate.suffix == ".conf" and candidate.is_file():
        return candidate
    path = PROFILES_DIR / f"{profile}.conf"
    if not path.is_file():
        known = sorted(p.name.removesuffix(".conf") for p in PROFILES_DIR.iterdir()
                       if p.name.endswith(".conf"))
        raise ValueError(f"unknown Spark profile {profile!r}; known: {', '.join(known)}")
    return path


def metastore_conf(directory: str | os.PathLike[str]) -> dict[str, str]:
    """An embedded Derby metastore in `directory` (created on first use), and the warehouse
    of managed tables beside it (the pipeline's own tables are external, at their paths)."""
    home = Path(directory).resolve()
    return {METASTORE_URL: f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true",
            "spark.sql.warehouse.dir": (home / "managed").as_uri()}


def session_conf(profile: str = "local", extra_conf: Mapping[str, str] | None = None,
                 *, with_jars: bool = True,
                 metastore: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Everything `build_session` would hand to Spark for this profile, in order of precedence;
    `metastore` is the Derby folder of a profile with a Hive catalog and no metastore set."""
    conf = read_properties(DEFAULTS_FILE)
    if with_jars:
        conf.update(jars.spark_conf())
    conf["spark.pyspark.python"] = sys.executable
    conf.update(read_properties(profile_path(profile)))
    shared = (METASTORE_URL, METASTORE_URIS)  # a metastore of the profile's (or caller's) own
    if (conf.get("spark.sql.catalogImplementation") == "hive"
            and not any(k in conf or k in (extra_conf or {}) for k in shared)):
        # Only a job that registers tables names a folder; the others (query, report) read by
        # path and must not take Derby's one-process lock from a running replay.
        conf.update(metastore_conf(metastore) if metastore is not None
                    else {"spark.sql.catalogImplementation": "in-memory"})
    conf.update(extra_conf or {})
    return conf


def _launched_conf() -> dict[str, str] | None:
    """The conf of a JVM that exists already (spark-submit, or an earlier session), else None."""
    active = SparkContext._active_spark_context
    if active is not None:
        return dict(active.getConf().getAll())
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # spark-submit started the JVM and then us
        SparkContext._ensure_initialized()
        return dict(SparkConf().getAll())  # loadDefaults: spark-submit's spark.* properties
    return None


def _add_to_driver_class_path(paths: list[str]) -> None:
    """spark-submit without --jars (client mode): add our jars to its driver class loader.

    spark-submit runs the driver with a `MutableURLClassLoader` as context class loader, which
    the Py4J threads inherit; executors get the same jars from `spark.jars` as usual.
    """
    jvm: Any = SparkContext._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    if loader is None or loader.getClass().getName() != _MUTABLE_LOADER:
        return
    for path in paths:
        loader.addURL(jvm.java.io.File(path).toURI().toURL())


def _class_loadable(jvm: Any, name: str) -> bool:
    try:
        jvm.org.apache.spark.util.Utils.classForName(name, True, False)
    except Exception:  # py4j wraps ClassNotFoundException
        return False
    return True


def _derby_log_beside(spark: SparkSession, metastore: Path) -> None:
    """Derby writes `derby.log` into the working folder unless told otherwise; it boots at the
    catalog's first use, which comes after this."""
    metastore.mkdir(parents=True, exist_ok=True)
    jvm: Any = spark._jvm
    jvm.java.lang.System.setProperty("derby.stream.error.file",
                                     str(metastore.resolve() / "derby.log"))


def stop_session(spark: SparkSession) -> None:
    """Stops `spark`'s streams, the state stores' maintenance, then `spark`. `spark.stop()`
    alone leaves the driver's StateStore maintenance task scheduled (local mode runs it in
    the driver): firing after the stop, it logs "Error running maintenance thread ... SparkEnv
    not active" on a job that ended well."""
    for query in spark.streams.active:
        query.stop()
    jvm: Any = spark._jvm
    jvm.org.apache.spark.sql.execution.streaming.state.StateStore.stop()
    spark.stop()


def build_session(app_name: str, profile: str = "local",
                  extra_conf: Mapping[str, str] | None = None, *,
                  metastore: str | os.PathLike[str] | None = None,
                  log_level: str | None = None) -> SparkSession:
    """A Delta-enabled SparkSession configured from `conf/` (see the module docstring);
    `metastore`: the Derby folder of a Hive-catalog profile without a metastore of its own
    (without one, such a profile's session keeps the in-memory catalog). `log_level`: the
    JVM logs everything at that level; without it, only what a user can act on
    (`pipeline.spark.runtime.logs`)."""
    if isinstance(CONF_DIR, Path):  # not when the package runs from a zip
        os.environ.setdefault("SPARK_CONF_DIR", str(CONF_DIR))
    launched = _launched_conf()
    if launched is None:
        # A missing Java said plainly, before the JARs' resolution (Maven) or Spark's
        # launcher fails on it.
        java_executable()
    # Resolve our jars only if they can still matter (not when spark-submit was given --jars).
    conf = session_conf(profile, extra_conf, metastore=metastore,
                        with_jars=launched is None or "spark.jars" not in launched)
    if launched is None:
        # We start the JVM: master comes from the profile, workers run this interpreter and
        # can import the project's modules (functions pickled by reference, e.g. in tests).
        os.environ["PYSPARK_PYTHON"] = conf["spark.pyspark.python"]
        paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if str(PACKAGE_HOME) not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_HOME), *filter(None, paths)])
    else:
        # spark-submit (or an earlier session) decided master, jars and its own settings.
        os.environ.setdefault("PYSPARK_PYTHON", conf["spark.pyspark.python"])
        # spark-submit with SPARK_CONF_DIR=conf has loaded conf/spark-defaults.conf itself:
        # those values are ours to override with the profile, its other settings are not.
        shared = read_properties(DEFAULTS_FILE)
        conf = {k: v for k, v in conf.items() if k != "spark.master"
                and (k not in launched or launched[k] == shared.get(k))}
        if "spark.jars" in conf and SparkContext._active_spark_context is None:
            _add_to_driver_class_path(conf["spark.jars"].split(","))
    if launched is None and log_level is None:
        launch_quietly({"spark.app.name": app_name, **conf})
    builder = SparkSession.builder.appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if log_level is not None:
        log_everything(spark, log_level, CONF_DIR / "log4j2-verbose.properties")
    if metastore is not None and conf.get(METASTORE_URL, "").startswith("jdbc:derby:"):
        _derby_log_beside(spark, Path(metastore))
    if launched is not None and not _class_loadable(spark._jvm, _DELTA_EXTENSION):
        raise RuntimeError(
            "Delta is not on the driver's class path. Under spark-submit pass the jars: "
            'spark-submit --jars "$(.venv/bin/python -m pipeline.spark.runtime.jars --print-jars)" ...')
    return spark


# Delta writes this setting into each commit's userMetadata (the stream's batch marks, the
# maintenance's mark).
COMMIT_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
# Delta's own idempotent-write pair: a write under them is skipped if the table holds this
# app id's version already (`stream.sinks`, a table not yet marked).
TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"


@contextmanager
def temporary_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """`settings` in the session's SQL conf while the block runs, then each as it was."""
    before: dict[str, str | None] = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)
