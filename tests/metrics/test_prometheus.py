"""A real Prometheus server (Debian's package, installed by jobs/prometheus.sh) on loopback
scrapes the exporter: what its HTTP query API returns equals the rows and the progress
snapshot published, and the shipped alerting rules load, pass `promtool check rules`, and
fire for a group in ERR and for a group that stopped consuming (its lag growing).

The firing test loads a copy of conf/prometheus/alerts.yml whose `for:` periods are 0s,
every expression unchanged: the shipped periods are minutes, which a test cannot wait out
against a real server. The periods themselves are checked by `promtool test rules` on
simulated series (test_the_rules_hold_their_periods), where time is free.

A scrape lands a few seconds after the server starts, so every check polls the API with a
deadline rather than sleeping a guess.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pipeline.metrics import MetricsServer, advance, serve
from schemas.lag import ERR, OK, STATUS_CODES
from tests.metrics.rows import AT, GROUP_LAG, GROUP_STATE, PARTITION_LAG, row
from tests.metrics.test_exposition import samples, scrape_text

pytestmark = pytest.mark.prometheus

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".cache" / "prometheus" / "usr" / "bin"
RULES = ROOT / "conf" / "prometheus" / "alerts.yml"
DEADLINE_S = 60.0
T = TypeVar("T")


def binary(name: str) -> Path:
    path = BIN / name
    if not path.is_file():
        pytest.fail(f"{path} is missing: `bash jobs/prometheus.sh` installs it "
                    "(jobs/bootstrap.sh and tests/run.sh run it)")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Prometheus:
    url: str
    log: Path

    def get(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return body["data"]

    def query(self, promql: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        """An instant query's series: (name, labels but job and instance) -> value."""
        out = {}
        for s in self.get("/api/v1/query", query=promql)["result"]:
            labels = dict(s["metric"])
            name = labels.pop("__name__", "")
            labels.pop("job", None)
            labels.pop("instance", None)
            out[(name, frozenset(labels.items()))] = float(s["value"][1])
        return out

    def until(self, what: str, probe: Callable[[], T | None]) -> T:
        """`probe`'s first truthy answer, polled until the deadline."""
        end = time.monotonic() + DEADLINE_S
        while True:
            answer = probe()
            if answer:
                return answer
            if time.monotonic() > end:
                tail = "\n".join(self.log.read_text().splitlines()[-20:])
                pytest.fail(f"Prometheus showed no {what} in {DEADLINE_S:.0f} s; its log:\n{tail}")
            time.sleep(0.25)


@pytest.fixture(scope="module")
def exporter() -> Iterator[MetricsServer]:
    server = serve(0, per_partition=True)
    p = advance(None, batch_id=0, duration_ms=2500, input_rows=900, output_rows=310,
                rejected_rows=4, groups_failed=0, finished_at=AT,
                watermark=AT - timedelta(minutes=1), newest_event=AT)
    server.collector.publish(group_lag=GROUP_LAG, partition_lag=PARTITION_LAG,
                             group_state=GROUP_STATE, progress=p)
    yield server
    server.stop()


def quick_rules(text: str) -> str:
    """The rules with every `for:` period 0s (see the module's docstring)."""
    quick, n = re.subn(r"(?m)^(\s+for:\s*)\S+\s*$", r"\g<1>0s", text)
    assert n == len(re.findall(r"(?m)^\s+for:", text)) > 0, "a for: the pattern missed"
    return quick


@pytest.fixture(scope="module")
def prometheus(exporter: MetricsServer, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[Prometheus]:
    folder = tmp_path_factory.mktemp("prometheus")
    rules = folder / "alerts.yml"
    rules.write_text(quick_rules(RULES.read_text()))
    config = folder / "prometheus.yml"  # JSON is YAML
    config.write_text(json.dumps({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules)],
        "scrape_configs": [{"job_name": "cgr", "static_configs": [
            {"targets": [f"{exporter.host}:{exporter.port}"]}]}],
    }))
    port, log = free_port(), folder / "prometheus.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(binary("prometheus")), f"--config.file={config}",
             f"--storage.tsdb.path={folder / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=out, stderr=subprocess.STDOUT)
    try:
        server = Prometheus(f"http://127.0.0.1:{port}", log)
        server.until("readiness", lambda: ready(server, proc))
        yield server
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def ready(server: Prometheus, proc: subprocess.Popen[bytes]) -> bool:
    """Whether the server answers /-/ready; a server that exited fails the test at once."""
    if proc.poll() is not None:
        pytest.fail(f"Prometheus exited with {proc.returncode}:\n{server.log.read_text()[-2000:]}")
    try:
        with urllib.request.urlopen(f"{server.url}/-/ready", timeout=5) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, ConnectionError):  # not listening yet, or still starting
        return False


# the exporter's series: not up, scrape_*, nor ALERTS, which copies their job label
OURS = '{job="cgr",__name__=~"kafka_consumergroup_.+|cgr_.+"}'


def test_prometheus_reads_back_the_rows_and_the_progress(
        prometheus: Prometheus, exporter: MetricsServer) -> None:
    expected = samples(scrape_text(exporter.collector))
    found = prometheus.until("scrape of the exporter", lambda: prometheus.query(OURS))
    end = time.monotonic() + DEADLINE_S
    while found != expected and time.monotonic() < end:  # a test before may have left
        time.sleep(0.25)                                # series a scrape has yet to drop
        found = prometheus.query(OURS)
    assert found == expected  # every series, every label, every value
    # ... and those are the rows': a few read straight from them
    orders = GROUP_LAG[0]
    assert found[("kafka_consumergroup_group_max_lag", frozenset({("group", "orders")}))] == \
        orders["max_lag"]
    assert found[("cgr_group_status", frozenset({("group", "orders"), ("status", ERR)}))] == \
        STATUS_CODES[ERR]
    for r in PARTITION_LAG:
        labels = frozenset({("group", r["group_id"]), ("topic", r["topic"]),
                            ("partition", str(r["partition"]))})
        assert found[("kafka_consumergroup_group_lag_seconds", labels)] == r["lag_ms"] / 1000
    assert found[("cgr_replay_watermark_delay_seconds", frozenset())] == 60
    assert found[("cgr_replay_rejected_rows_total", frozenset())] == 4


def test_the_err_rule_fires_for_the_group_in_err_only(prometheus: Prometheus) -> None:
    def firing() -> list[dict[str, Any]]:
        return [a for a in prometheus.get("/api/v1/alerts")["alerts"]
                if a["labels"]["alertname"] == "ConsumerGroupStatusErr" and a["state"] == "firing"]
    alerts = prometheus.until("firing ConsumerGroupStatusErr", firing)
    assert [a["labels"]["group"] for a in alerts] == [r["group_id"] for r in GROUP_LAG
                                                      if r["status"] == ERR]
    assert alerts[0]["labels"]["severity"] == "critical"
    series = prometheus.until("ALERTS series", lambda: prometheus.query(
        'ALERTS{alertname="ConsumerGroupStatusErr",alertstate="firing"}'))
    assert {dict(labels)["group"] for _, labels in series} == {"orders"}


def test_the_growing_lag_rule_fires_for_a_group_that_stops_consuming(
        prometheus: Prometheus, exporter: MetricsServer) -> None:
    """A group whose consumers stopped: each newest sample has more lag than the last (its
    Burrow status still OK: the rule needs no verdict). Published anew at each poll, until
    ConsumerGroupLagGrowing fires for it, and for it alone."""
    samples_sent = 0

    def grown_and_firing() -> list[dict[str, Any]]:
        nonlocal samples_sent
        samples_sent += 1
        stopped = row("group_lag", sampled_at=AT + timedelta(seconds=30 * samples_sent),
                      group_id="stopped", total_lag=1000 + 250 * samples_sent,
                      max_lag=1000 + 250 * samples_sent, status=OK, partitions=1,
                      partitions_unknown=0, complete=1.0)
        exporter.collector.publish(group_lag=[*GROUP_LAG, stopped])
        return [a for a in prometheus.get("/api/v1/alerts")["alerts"]
                if a["labels"]["alertname"] == "ConsumerGroupLagGrowing" and a["state"] == "firing"]
    try:
        alerts = prometheus.until("firing ConsumerGroupLagGrowing", grown_and_firing)
    finally:
        exporter.collector.publish(group_lag=GROUP_LAG)
    assert [a["labels"]["group"] for a in alerts] == ["stopped"]
    assert samples_sent >= 2  # deriv needs two scraped samples: this was no stale leftover


def test_promtool_checks_the_shipped_rules_and_the_quick_copy(tmp_path: Path) -> None:
    quick = tmp_path / "alerts.yml"
    quick.write_text(quick_rules(RULES.read_text()))
    for rules in (RULES, quick):
        done = subprocess.run([str(binary("promtool")), "check", "rules", str(rules)],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "SUCCESS: 8 rules found" in done.stdout


def alert(name: str, at: str, labels: dict[str, str] | None = None,
          **annotations: str) -> dict[str, Any]:
    """A promtool alert test: `name` firing at `at` with `labels` and `annotations` (their
    templates rendered), or, without labels, not firing."""
    return {"eval_time": at, "alertname": name, "exp_alerts": [] if labels is None else [
        {"exp_labels": labels, "exp_annotations": annotations}]}


def test_the_rules_hold_their_periods(tmp_path: Path) -> None:
    """`promtool test rules` on simulated minutes: the shipped rules, `for:` and all, fire
    when their period has passed and not before; a flat lag is not a growing one."""
    err = {"group": "orders", "status": ERR, "severity": "critical"}
    growing = {"group": "growing", "severity": "warning"}
    spec = {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [
            {"series": 'cgr_group_status{group="orders",status="ERR"}', "values": "3x30"},
            {"series": 'kafka_consumergroup_group_sum_lag{group="growing"}',
             "values": "100+50x30"},
            {"series": 'kafka_consumergroup_group_sum_lag{group="flat"}', "values": "100x30"},
            # the last batch finished at epoch 0; promtool's clock starts there too
            {"series": "cgr_replay_last_batch_timestamp_seconds", "values": "0x30"},
        ],
        "alert_rule_test": [
            alert("ConsumerGroupStatusErr", "4m"),
            alert("ConsumerGroupStatusErr", "6m", err,
                  summary="Consumer group orders is in ERR (Burrow's status)",
                  description="A partition of orders stopped, stalled or was rewound; "
                              "partition_lag's rule column says which."),
            alert("ConsumerGroupLagGrowing", "5m"),
            alert("ConsumerGroupLagGrowing", "25m", growing,
                  summary="Consumer group growing's lag keeps growing (1350 messages)"),
            # 600 s without a batch at 10m, then 5m of it
            alert("ReplayStalled", "14m"),
            alert("ReplayStalled", "16m", {"severity": "critical"},
                  summary="The replay has finished no micro-batch for 16m 0s"),
        ],
    }]}
    tests = tmp_path / "alerts_test.yml"
    tests.write_text(json.dumps(spec))
    done = subprocess.run([str(binary("promtool")), "test", "rules", str(tests)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
