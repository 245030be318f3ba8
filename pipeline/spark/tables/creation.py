"""Creating a Delta table the jobs own, so that a process killed inside the table's first
commit never stops the next run.

Delta makes a table's first version by writing `_delta_log/` (and, in delta-spark 4.x, an
empty `_delta_log/_staged_commits/`), then a hidden temporary file, then renaming it to
`00000000000000000000.json`. A kill before the rename leaves a folder that is no table
(`DeltaTable.isDeltaTable` says no) yet not empty, and `createIfNotExists` then refuses it
([DELTA_TABLE_NOT_FOUND]) at every restart. `forget_uncreated` recognises that folder (a
`_delta_log` holding no committed version: only hidden temporary files and empty folders,
beside nothing but the data files a Delta writer names `part-*`) and removes it, so the
table is created again; a folder with a committed version, or holding anything else, is never
touched. `create_table` is how every table the jobs create comes to exist.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from pipeline.errors import UsageError
from pipeline.spark.tables import paths
from pipeline.spark.tables.errors import at_startup, first_line

log = logging.getLogger(__name__)
LOG_DIR = "_delta_log"
# What a Delta writer puts beside _delta_log: its data files (and Hadoop's checksums of them,
# hidden) and, for a partitioned table, `column=value` folders of the same.
_DATA_FILE = re.compile(r"^(part-\d{5}-.*|deletion_vector_.*\.bin|[^=/]+=.*)$")


def _hidden(name: str) -> bool:
    return name.startswith((".", "_")) and name != LOG_DIR


def _walk(fs: Any, status: Any) -> Iterator[Any]:
    """Every file under the folder `status`, depth first."""
    for child in fs.listStatus(status.getPath()):
        if child.isDirectory():
            yield from _walk(fs, child)
        else:
            yield child


def uncreated(spark: SparkSession, path: str) -> bool:
    """True when `path` holds a `_delta_log` with no committed version (only hidden
    temporary files and empty folders in it), beside nothing but a Delta writer's own files:
    a table whose first commit never finished."""
    fs, folder = paths.hadoop_path(spark, path)
    if not fs.exists(folder) or not fs.getFileStatus(folder).isDirectory():
        return False
    entries = {s.getPath().getName(): s for s in fs.listStatus(folder)}
    found = entries.get(LOG_DIR)
    if found is None or not found.isDirectory():
        return False
    if any(not f.getPath().getName().startswith(".") for f in _walk(fs, found)):
        return False  # a version, a checkpoint, a staged commit: a table, never ours to undo
    return all(name == LOG_DIR or _hidden(name) or _DATA_FILE.match(name)
               for name in entries)


def forget_uncreated(spark: SparkSession, path: str) -> bool:
    """Remove the folder at `path` if it is a table never created (`uncreated`); whether it
    was. Its files belong to no version: no reader ever saw them."""
    if not uncreated(spark, path):
        return False
    fs, folder = paths.hadoop_path(spark, path)
    log.warning("%s: a Delta table whose first commit never finished (a process stopped "
                "inside it); creating it again", path)
    fs.delete(folder, True)
    return True


def create_table(spark: SparkSession, path: str, schema: StructType,
                 properties: Mapping[str, str] | None = None) -> bool:
    """The Delta table at `path`, created empty with `schema` and table `properties` unless it
    exists; whether it was created. A first commit left unfinished is created again
    (`forget_uncreated`). A folder Delta cannot make a table of is a one-line `UsageError`
    naming it and what to do."""
    with at_startup(f"the Delta table at {path}", "Check that folder's permissions and files, "
                    "or choose another folder."):
        if DeltaTable.isDeltaTable(spark, path):
            return False
        forget_uncreated(spark, path)
    builder = DeltaTable.createIfNotExists(spark).location(path).addColumns(schema)
    for key, value in (properties or {}).items():
        builder = builder.property(key, value)
    try:
        builder.execute()
    except Exception as exc:  # py4j's and Spark's errors alike: said as one line
        if DeltaTable.isDeltaTable(spark, path):
            return False  # made meanwhile by another writer: what we wanted
        raise UsageError(
            f"cannot create the Delta table at {path}: {first_line(exc)} It is not a Delta "
            "table and not a first commit left unfinished: move its files away, or choose "
            "another folder") from exc
    return True
