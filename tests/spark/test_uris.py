"""Every path a job takes may be a Hadoop URI: `file://` URIs on the local disk, and `s3a://`
on a second Hadoop filesystem, a real S3 API (moto's server) on loopback reached through S3A.

The S3 server is moto's (`moto[server]`, a test extra), started here on a free port; S3A
and the AWS SDK modules it loads come with the project's JARs (`pipeline.spark.runtime.jars`).
Its settings are per bucket (`fs.s3a.bucket.<bucket>.*`), so the shared session's other
filesystems are left as they were.
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from pipeline.fold import Event
from pipeline.generator import LogSpec, generate
from pipeline.spark.backfill import BackfillOptions, run_backfill
from pipeline.spark.events.eventlog import write_event_log
from pipeline.spark.stream.replay import ReplayOptions, run_replay
from pipeline.spark.tables import paths
from pipeline.spark.tables.catalog import register_views
from schemas import OUTPUT_TABLES
from tests.spark.backends import CONFIG, DELAY, assert_same_tables, pure_tables
from tests.spark.test_readme_examples import load_job

# The Python that runs moto's server: the suite's own (it has the test extras) unless told.
MOTO_PYTHON = os.environ.get("MOTO_SERVER_PYTHON", sys.executable)


def test_uris_are_kept_and_plain_paths_made_absolute(tmp_path: Path) -> None:
    for uri in ("s3a://lake/wh", "abfss://c@acct.dfs.core.windows.net/wh", "gs://b/wh",
                "hdfs://nn:8020/wh", "file:/data/wh"):
        assert paths.is_uri(uri) and paths.qualify(uri) == uri == paths.qualify(uri + "/")
        assert paths.join(uri + "/", "group_state") == uri + "/group_state"
    assert paths.qualify("file:///data/wh/") == "file:/data/wh"  # as Hadoop prints it
    assert paths.qualify("s3a://lake/") == "s3a://lake" and paths.qualify("file:///") == "file:/"
    assert not paths.is_uri("wh/s3a:/x") and not paths.is_uri("consumer_groups.events")
    os.chdir(tmp_path)
    assert paths.qualify("wh") == str(tmp_path.resolve() / "wh")
    assert paths.join("/data/wh", "group_state") == "/data/wh/group_state"


def _log() -> list[Event]:
    return generate(LogSpec(groups=4, events=400, seed=11, bad_rows=0.02))


def _tables(spark: SparkSession, warehouse: str) -> dict[str, DataFrame]:
    return {t: spark.read.format("delta").load(paths.join(warehouse, t)) for t in OUTPUT_TABLES}


def _backfill_then_stream(spark: SparkSession, root: str, events: list[Event],
                          stream: bool = True) -> str:
    """Half the log backfilled, the rest streamed on from the hand-off (or the whole log
    backfilled); the warehouse."""
    log, warehouse = paths.join(root, "events"), paths.join(root, "wh")
    cut = len(events) // 2 if stream else len(events)
    write_event_log(spark, events[:cut], log)
    run_backfill(spark, BackfillOptions(events=log, warehouse=warehouse, database=None,
                                        watermark_delay=DELAY, config=CONFIG))
    if not stream:
        return warehouse
    write_event_log(spark, events[cut:], log, mode="append")
    assert paths.is_empty(spark, paths.join(root, "ckpt"))
    run_replay(spark, ReplayOptions(events=log, warehouse=warehouse, database=None,
                                    checkpoint=paths.join(root, "ckpt"),
                                    watermark_delay=DELAY, config=CONFIG))
    assert not paths.is_empty(spark, paths.join(root, "ckpt", "offsets"))
    return warehouse


def _query(spark: SparkSession, warehouse: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    load_job("query").main(["--warehouse", warehouse,
                            "SELECT count(*) AS n_groups FROM group_state"], spark)
    return capsys.readouterr().out


@pytest.mark.spark
def test_file_uris_work_for_the_log_and_the_warehouse_and_query_and_report_find_the_tables(
        spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = _log()  # the stream's part is s3a's (a stream costs seconds to start)
    warehouse = _backfill_then_stream(spark, tmp_path.resolve().as_uri(), events, stream=False)
    assert paths.is_empty(spark, tmp_path.resolve().as_uri() + "/ckpt")
    assert warehouse.startswith("file:/") and (tmp_path / "wh" / "group_state").is_dir()
    assert_same_tables(_tables(spark, warehouse), pure_tables(spark, events))
    assert "group_state" in register_views(spark, warehouse)
    groups = {e.group_id for e in events if e.group_id}
    assert re.search(rf"\|{len(groups)}\s*\|", _query(spark, warehouse, capsys))
    frames = load_job("report").load_group(spark, warehouse, sorted(groups)[0])
    assert len(frames["group_state"]) == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def s3_bucket(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A bucket on a local S3 server, with S3A pointed at it: the bucket's name."""
    probe = subprocess.run([MOTO_PYTHON, "-c", "import moto.server"], capture_output=True,
                           check=False)
    if probe.returncode and importlib.util.find_spec("moto") is None:
        pytest.skip(f"moto[server] is not installed for {MOTO_PYTHON} (pip install -e '.[test]')")
    port = _free_port()
    logfile = (tmp_path_factory.mktemp("moto") / "server.log").open("w")
    server = subprocess.Popen([MOTO_PYTHON, "-m", "moto.server", "-H", "127.0.0.1",
                               "-p", str(port)], stdout=logfile, stderr=subprocess.STDOUT)
    bucket = f"lake-{uuid.uuid4().hex[:8]}"
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{bucket}",
                                                              method="PUT"), timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.2)
        conf = spark._jsc.hadoopConfiguration()  # type: ignore[union-attr]
        for key, value in {"endpoint": endpoint, "endpoint.region": "us-east-1",
                           "path.style.access": "true", "connection.ssl.enabled": "false",
                           "access.key": "testing", "secret.key": "testing"}.items():
            conf.set(f"fs.s3a.bucket.{bucket}.{key}", value)
        yield bucket
    finally:
        server.terminate()
        server.wait(10)
        logfile.close()


@pytest.mark.spark
def test_s3a_uris_work_for_the_log_the_warehouse_and_the_checkpoint(
        spark: SparkSession, s3_bucket: str, capsys: pytest.CaptureFixture[str]) -> None:
    events = _log()
    root = f"s3a://{s3_bucket}/replay"
    assert not paths.exists(spark, root)
    warehouse = _backfill_then_stream(spark, root, events)
    assert paths.exists(spark, paths.join(warehouse, "group_state", "_delta_log"))
    assert_same_tables(_tables(spark, warehouse), pure_tables(spark, events))
    groups = {e.group_id for e in events if e.group_id}
    assert re.search(rf"\|{len(groups)}\s*\|", _query(spark, warehouse, capsys))
