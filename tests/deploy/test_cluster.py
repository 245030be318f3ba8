"""The deploying recipe of docs/deploying.md, run as written on a real standalone cluster: a master
and a worker on 127.0.0.1, jobs submitted with `spark-submit --py-files <the wheel>`, and the
tables checked from a second process (`spark-sql`) through the Derby metastore.

No process here has the project but through the wheel. Driver and executors run an
interpreter made for the test (`executor_env`): a venv of the base Python whose one `.pth`
line adds the shared venv's site-packages, so pyspark, pandas and pyarrow import, while that
venv's editable install of the project (a `.pth` *import* line, which Python runs only for
`.pth` files in a site folder itself) does not; the test proves `import pipeline` fails in it.
Master, worker and spark-submit run without PYTHONPATH and with PYTHONNOUSERSITE, so the
checkout reaches no Python process: `jobs/<job>.py` holds only `from pipeline.jobs... import`.
"""

from __future__ import annotations

import subprocess
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline.generator import LogSpec, generate
from pipeline.spark.events.eventlog import write_event_log
from pipeline.spark.runtime import jars
from schemas import OUTPUT_TABLES
from tests.deploy.standalone import (
    BIN,
    ROOT,
    build_wheel,
    clean_env,
    executor_env,
    standalone,
)

pytestmark = [pytest.mark.spark, pytest.mark.cluster]


# A few hundred events on two cores: few partitions, and JVMs that live a minute (C1 only, as
# the test profile); settings given to spark-submit win over the profile's.
SMALL = [word for key, value in {
    "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m",
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m",
}.items()
    for word in ("--conf", f"{key}={value}")]


@dataclass
class Cluster:
    master: str
    python: Path
    wheel: Path
    root: Path
    logs: Path

    def submit(self, *jobs: tuple[str, list[str]]) -> list[str]:
        """spark-submit each (job, args) as docs/deploying.md's recipe does, side by side (one core
        each: two cores in all), and return their outputs once all succeeded."""
        running = []
        for job, args in jobs:
            log = (self.logs / f"{job}.log").open("w")
            running.append((job, log, subprocess.Popen(
                [*self.recipe(len(jobs)), str(ROOT / "jobs" / f"{job}.py"), *args],
                stdout=subprocess.PIPE, stderr=log, text=True, cwd=self.root,
                env=clean_env())))
        outputs = []
        for job, log, proc in running:
            # A bound for a hung job, not a speed check: two jobs on one core each took over
            # 300 s in a CI run whose whole suite took 72 minutes.
            out, _ = proc.communicate(timeout=900)
            log.close()
            errors = (self.logs / f"{job}.log").read_text()[-6000:]
            assert proc.returncode == 0, f"{job} failed:\n{out[-3000:]}{errors}"
            outputs.append(out)
        return outputs

    def recipe(self, apps: int) -> list[str]:
        return [str(BIN / "spark-submit"), "--master", self.master,
                "--jars", ",".join(str(p) for p in jars.jar_paths()),
                "--py-files", str(self.wheel),
                "--conf", f"spark.pyspark.python={self.python}",
                "--conf", f"spark.pyspark.driver.python={self.python}",
                "--conf", "spark.executor.memory=1g", "--conf", f"spark.cores.max={2 // apps}",
                *SMALL]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("cluster")
    logs = root / "logs"
    logs.mkdir()
    wheel = build_wheel(root / "dist")
    python = executor_env(root / "executor-env")
    with standalone(root, logs, workers=1, cores=2, memory="2g") as url:
        yield Cluster(url, python, wheel, root, logs)


def spark_sql(statement: str, metastore: Path, cwd: Path) -> list[list[str]]:
    """Rows `spark-sql -e` prints in a new process opening the metastore, as
    docs/deploying.md ("Tables by name") runs it."""
    words = [str(BIN / "spark-sql"), "--master", "local[1]",
             "--jars", ",".join(str(p) for p in jars.jar_paths()),
             "--conf", "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension",
             "--conf", "spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog",
             "--conf", "spark.hadoop.javax.jdo.option.ConnectionURL="
                       f"jdbc:derby:;databaseName={metastore}/metastore_db",
             "--conf", "spark.ui.enabled=false", *SMALL, "-S", "-e", statement]
    done = subprocess.run(words, capture_output=True, text=True, timeout=240, cwd=cwd,
                          env=clean_env())
    assert done.returncode == 0, done.stderr[-4000:]
    return [line.split("\t") for line in done.stdout.splitlines() if line.strip()]


def test_the_wheel_alone_carries_the_jobs_and_their_conf(cluster: Cluster) -> None:
    env = clean_env()
    probe = subprocess.run([str(cluster.python), "-c", "import pyspark, pandas, pyarrow\n"
                            "import pipeline"], capture_output=True, text=True, env=env,
                           cwd=cluster.root)
    assert "ModuleNotFoundError: No module named 'pipeline'" in probe.stderr
    # From the zip itself: the profiles, Spark defaults and coordinator settings are package
    # data, and the console scripts are declared.
    read = subprocess.run(
        [str(cluster.python), "-c",
         "from pipeline.spark.runtime.session import session_conf\n"
         "from pipeline.jobs._common import coordinator_config\n"
         "conf = session_conf('local', with_jars=False, metastore='ms')\n"
         "print(conf['spark.master'], conf['spark.sql.catalogImplementation'],"
         " coordinator_config(None).offsets_topic_num_partitions)"],
        capture_output=True, text=True, env={**env, "PYTHONPATH": str(cluster.wheel)},
        cwd=cluster.root, check=True)
    assert read.stdout.split() == ["local[*]", "hive", "50"]
    with zipfile.ZipFile(cluster.wheel) as wheel:
        names = wheel.namelist()
        (entry_points,) = (n for n in names if n.endswith(".dist-info/entry_points.txt"))
        scripts = wheel.read(entry_points).decode()
    assert {"pipeline/conf/spark-defaults.conf", "pipeline/conf/profiles/cluster.conf",
            "pipeline/conf/log4j2.properties", "pipeline/jobs/replay.py"} <= set(names)
    assert "cgr-replay = pipeline.jobs.replay:main" in scripts


def test_backfill_and_replay_on_the_cluster_agree_and_are_named_in_the_metastore(
        cluster: Cluster, spark: SparkSession) -> None:
    events, batch, stream = (cluster.root / d for d in ("events", "wh-batch", "wh-stream"))
    # The log is data, written by the suite's session; the jobs under test run on the cluster.
    write_event_log(spark, generate(LogSpec(groups=6, events=600, seed=3)), str(events))
    said, _ = cluster.submit(
        ("backfill", ["--events", str(events), "--warehouse", str(batch), "--database", "",
                      "--profile", "cluster"]),
        # catalog.schema: the three-part names a catalog such as Unity Catalog takes.
        ("replay", ["--events", str(events), "--warehouse", str(stream), "--checkpoint",
                    str(cluster.root / "checkpoint"), "--profile", "local",
                    "--database", "spark_catalog.consumer_groups"]))
    assert "backfilled 6 groups" in said
    assert (stream / "_metastore" / "metastore_db").is_dir()
    assert (stream / "_metastore" / "derby.log").is_file()
    assert not (cluster.root / "derby.log").exists()  # the jobs' working folder

    columns = "group_id, state, generation_id, rebalance_count"
    rows = spark_sql(
        f"SELECT 'named', {columns} FROM consumer_groups.group_state UNION ALL "
        f"SELECT 'batch', {columns} FROM delta.`{batch}/group_state`;"
        # The functions and view outlive the job: permanent objects of the schema.
        "SELECT 'summary', sum(rebalances) FROM consumer_groups.rebalance_summary("
        "TIMESTAMP'1970-01-01', TIMESTAMP'2100-01-01');"
        f"SELECT 'rebalances', count(*) FROM delta.`{batch}/rebalances`;"
        "SELECT 'members', count(*) FROM spark_catalog.consumer_groups.group_members;"
        f"SELECT 'member_count', sum(member_count) FROM delta.`{batch}/group_state` "
        "WHERE state <> 'Dead';"
        # Column docs of schemas/ are the tables' column comments.
        "DESCRIBE TABLE consumer_groups.group_state",
        stream / "_metastore", cluster.logs)
    named = sorted(r[1:] for r in rows if r[0] == "named")
    assert len(named) == 6
    assert named == sorted(r[1:] for r in rows if r[0] == "batch")
    answers = {r[0]: r[1] for r in rows if r[0] not in ("named", "batch")}
    assert answers["summary"] == answers["rebalances"] != "0"
    assert answers["members"] == answers["member_count"]
    described = {r[0].strip(): r[-1].strip() for r in rows if len(r) == 3}
    assert described["state"] == OUTPUT_TABLES["group_state"][1].doc != ""
