"""A real Prometheus server (Debian's package, installed by jobs/prometheus.sh) on loopback,
scraping the targets a test names, and its HTTP API: for tests/metrics/test_prometheus.py
and tests/spark/test_metrics.py (a running replay's endpoint).

A scrape lands a few seconds after the server starts, so every check polls the API with a
deadline (`Prometheus.until`) rather than sleeping a guess.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".cache" / "prometheus" / "usr" / "bin"
DEADLINE_S = 60.0
# the exporter's series: not up, scrape_*, nor ALERTS, which copies their job label
OURS = '{job="cgr",__name__=~"kafka_consumergroup_.+|cgr_.+"}'
T = TypeVar("T")
Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


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


def until(what: str, probe: Callable[[], T | None], seconds: float = DEADLINE_S,
          log: Path | None = None) -> T:
    """`probe`'s first truthy answer, polled until the deadline; then the test fails, with
    the end of `log` if given."""
    end = time.monotonic() + seconds
    while True:
        answer = probe()
        if answer:
            return answer
        if time.monotonic() > end:
            tail = "\n".join(log.read_text().splitlines()[-20:]) if log else ""
            pytest.fail(f"no {what} in {seconds:.0f} s\n{tail}")
        time.sleep(0.25)


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

    def query(self, promql: str) -> Series:
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
        """`probe`'s first truthy answer, polled until the deadline (the log's end then)."""
        return until(f"{what} from Prometheus", probe, log=self.log)


def ready(server: Prometheus, proc: subprocess.Popen[bytes]) -> bool:
    """Whether the server answers /-/ready; a server that exited fails the test at once."""
    if proc.poll() is not None:
        pytest.fail(f"Prometheus exited with {proc.returncode}:\n{server.log.read_text()[-2000:]}")
    try:
        with urllib.request.urlopen(f"{server.url}/-/ready", timeout=5) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, ConnectionError):  # not listening yet, or still starting
        return False


@contextmanager
def prometheus_server(folder: Path, targets: list[str], rules: Path | None = None
                      ) -> Iterator[Prometheus]:
    """A Prometheus scraping `targets` (host:port) every second as job `cgr`, evaluating
    `rules` if given, its data and log under `folder`; ready when given, stopped after."""
    config = folder / "prometheus.yml"  # JSON is YAML
    config.write_text(json.dumps({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules)] if rules else [],
        "scrape_configs": [{"job_name": "cgr", "static_configs": [{"targets": targets}]}],
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
