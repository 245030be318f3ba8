"""Paths the jobs take: Hadoop URIs (`s3a://`, `abfss://`, `gs://`, `hdfs://`, `file://`) or
plain local paths, joined as strings and checked through Hadoop's filesystem, never `pathlib`.

`pathlib` knows only the local disk: `Path("s3a://lake/wh").resolve()` is
`<cwd>/s3a:/lake/wh`. So a URI is kept exactly as given; a plain path is made absolute on
the driver (Delta reads a relative LOCATION against the warehouse, not the working folder),
which keeps every local path meaning what it always meant. Existence is asked of the
filesystem that serves the path (`org.apache.hadoop.fs.Path.getFileSystem`), with the
session's Hadoop configuration, so credentials and endpoints set there apply.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")
_URI = re.compile(r"^(?P<scheme>[^:]+):(?://(?P<authority>[^/]*))?(?P<path>/.*)?$")


def is_uri(path: str) -> bool:
    """`s3a://b/k`, `file:///x`, `file:/x`, `hdfs://nn:8020/x`: a scheme and a path."""
    return bool(_SCHEME.match(path))


def qualify(path: str) -> str:
    """A URI in the form Hadoop prints it (`file:///x/` is `file:/x`: Delta refuses a table
    whose two spellings of one folder differ); a plain path made absolute on this machine."""
    if not path:
        raise ValueError("empty path")
    if not is_uri(path):
        return str(Path(path).resolve())
    m = _URI.match(path)
    if m is None:
        raise ValueError(f"not a Hadoop URI: {path!r}")
    rest = (m["path"] or "").rstrip("/") or ("/" if not m["authority"] else "")
    return f"{m['scheme']}://{m['authority']}{rest}" if m["authority"] else f"{m['scheme']}:{rest}"


def join(base: str, *names: str) -> str:
    """`base/name/...`, for URIs and local paths alike."""
    return "/".join([base.rstrip("/"), *(n.strip("/") for n in names)])


def is_path(name: str) -> bool:
    """A path or URI (it has a slash, or starts with a dot), else a catalog table name."""
    return "/" in name or name.startswith(".")


def hadoop_path(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """(the Hadoop FileSystem serving `path`, its Hadoop Path), with the session's settings."""
    jvm: Any = spark._jvm
    jsc: Any = spark._jsc
    conf = jsc.hadoopConfiguration()
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    return hpath.getFileSystem(conf), hpath


def exists(spark: SparkSession, path: str) -> bool:
    fs, hpath = hadoop_path(spark, path)
    return bool(fs.exists(hpath))


def is_empty(spark: SparkSession, path: str) -> bool:
    """True when `path` is missing, or a folder holding nothing."""
    fs, hpath = hadoop_path(spark, path)
    if not fs.exists(hpath):
        return True
    return not fs.getFileStatus(hpath).isDirectory() or len(fs.listStatus(hpath)) == 0


def read_bytes(spark: SparkSession, path: str) -> bytes | None:
    """A small file's bytes, through the filesystem that serves it; None if missing."""
    fs, hpath = hadoop_path(spark, path)
    if not fs.exists(hpath):
        return None
    jvm: Any = spark._jvm
    stream = fs.open(hpath)
    try:
        data = jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
    finally:
        stream.close()
    return bytes(data)


def read_text(spark: SparkSession, path: str) -> str | None:
    """A small file's text (UTF-8), through the filesystem that serves it; None if missing."""
    data = read_bytes(spark, path)
    return None if data is None else data.decode("utf-8")


def write_text(spark: SparkSession, path: str, text: str) -> None:
    """A small file written whole (UTF-8), through the filesystem that serves it."""
    fs, hpath = hadoop_path(spark, path)
    stream = fs.create(hpath, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()
