"""What a job prints: only what a user can act on, unless asked for everything.

Two sources of lines nobody can act on reach a terminal from the JVM Spark runs: log4j2
messages (`conf/log4j2.properties` turns each known-harmless one down, with the reason), and
the JVM's own start-up notes, written to its stderr before any logging exists: Spark 4's
launcher adds the incubating Vector API module to every JVM (`--add-modules
jdk.incubator.vector`), and Java prints `WARNING: Using incubator modules` for it, which no
setting turns off. So when a job starts the JVM itself (plain `python`, not spark-submit),
`launch_quietly` starts it with its stderr piped through a thread that drops exactly those
lines (`NOISE`) and passes every other line on. `--log-level LEVEL` (or `--debug`) brings
everything back: no line dropped, and log4j2 reconfigured from
`conf/log4j2-verbose.properties` (nothing filtered) at that level.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import warnings
from collections.abc import Mapping
from importlib.resources import as_file
from importlib.resources.abc import Traversable
from subprocess import PIPE
from typing import IO, Any

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

# JVM stderr lines dropped unless a log level is asked for.
NOISE = (re.compile(r"^WARNING: Using incubator modules: jdk\.incubator\.vector$"),)
LEVELS = ("ERROR", "WARN", "INFO", "DEBUG")
LEVEL_PROPERTY = "cgr.log.level"  # read by conf/log4j2-verbose.properties


def forward(source: IO[bytes], target: int) -> None:
    """Copy `source`'s lines to the file descriptor `target` until it ends, leaving out the
    `NOISE` lines. It never stops reading before the end: a JVM whose stderr pipe filled up
    would block on its next log line."""
    for raw in iter(source.readline, b""):
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if any(p.match(line) for p in NOISE):
            continue
        with contextlib.suppress(OSError):  # stderr gone: keep draining the pipe anyway
            os.write(target, raw)


def launch_quietly(conf: Mapping[str, str]) -> None:
    """Start the Spark JVM (the py4j gateway) with `conf`, its stderr through `forward`;
    the session built next uses it. Nothing when a JVM exists already."""
    if SparkContext._gateway is not None:
        return
    from pyspark.java_gateway import launch_gateway as untyped

    launch_gateway: Any = untyped
    spark_conf = SparkConf(loadDefaults=False)
    for key, value in conf.items():
        spark_conf.set(key, value)
    gateway: Any = launch_gateway(spark_conf, popen_kwargs={"stderr": PIPE})
    # A copy of this process's stderr as it is now: the thread outlives any later swap of
    # sys.stderr (pytest's capture, say) and writes where the JVM would have.
    threading.Thread(target=forward, args=(gateway.proc.stderr, os.dup(2)), daemon=True,
                     name="jvm-stderr").start()
    SparkContext._ensure_initialized(gateway=gateway)


def log_everything(spark: SparkSession, level: str, verbose: Traversable) -> None:
    """Reconfigure the JVM's log4j2 from `verbose` (conf/log4j2-verbose.properties) at `level`."""
    if level.upper() not in LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}, got {level!r}")
    jvm: Any = spark._jvm
    jvm.java.lang.System.setProperty(LEVEL_PROPERTY, level.upper())
    with as_file(verbose) as path:
        context = jvm.org.apache.logging.log4j.LogManager.getContext(False)
        context.setConfigLocation(jvm.java.io.File(str(path)).toURI())


# PySpark's applyInPandasWithState serializer pads every group's output with a frame of Nones
# (`dict.fromkeys(names)`, object dtype) and concatenates it to the fold's frame; pandas 2.x
# warns (FutureWarning, once per group) that an all-NA or empty entry will stop being ignored
# when the result's dtype is chosen. Our timestamp columns are datetime64 and the padding
# rows are dropped by the serializer's counts, so the dtype pandas picks today is the one
# Spark reads. The filter names that one message and PySpark's module; every other warning
# still shows.
_PADDED_CONCAT = "The behavior of DataFrame concatenation with empty or all-NA entries"


def quiet_padded_concat() -> None:
    """Idempotent (`filterwarnings` replaces an identical filter): call it in the worker."""
    warnings.filterwarnings("ignore", message=_PADDED_CONCAT, category=FutureWarning,
                            module=r"pyspark\.sql\.pandas\.serializers")
