"""A Spark standalone cluster on 127.0.0.1 for tests and benchmarks: a master and workers
started with Spark's own launcher (`spark-class`), and the pieces docs/deploying.md's recipe
submits with: the project's wheel and a Python without the project (`executor_env`)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyspark

ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(pyspark.__file__).parent  # pip pyspark is a Spark distribution
BIN = SPARK_HOME / "bin"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """The environment with nothing that points a Python at the project."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_CONF_DIR")
           and not k.startswith("PYSPARK_GATEWAY")}
    return {**env, "PYTHONNOUSERSITE": "1", "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_HOME": str(SPARK_HOME), **extra}


def build_wheel(out: Path) -> Path:
    """`pip wheel` as docs/deploying.md's recipe runs it, and the wheel under a `.zip` name: Spark
    puts only `.zip`, `.egg` and `.jar` files of `--py-files` on executors' `sys.path`, and a
    pure-Python wheel is a zip Python imports from. (setuptools' build/ and egg-info stay in
    the checkout, ignored by git.)"""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "-w", str(out), str(ROOT)],
                   check=True, timeout=300, cwd=ROOT)
    (wheel,) = out.glob("consumer_group_replay-*.whl")
    return Path(shutil.copy(wheel, out / "consumer_group_replay.zip"))


def executor_env(home: Path) -> Path:
    """A Python with the project's dependencies and without the project (see the docstring)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(home)], check=True,
                   timeout=120)
    python = home / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], check=True, capture_output=True, text=True).stdout
    shared = Path(sysconfig.get_paths()["purelib"]).resolve()
    (Path(site.strip()) / "shared-deps.pth").write_text(f"{shared}\n")
    return python


def _start(cls: str, args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen([str(BIN / "spark-class"), cls, *args], stdout=out,
                                stderr=subprocess.STDOUT, env=clean_env())


def _wait_for(log: Path, text: str, proc: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while text not in log.read_text(errors="replace"):
        assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
        assert time.monotonic() < deadline, f"no {text!r} in {log}"
        time.sleep(0.2)


@contextmanager
def standalone(root: Path, logs: Path, workers: int, cores: int, memory: str) -> Iterator[str]:
    """A master and `workers` workers of `cores` cores and `memory` each, running until the
    block ends; yields the master's URL."""
    port = free_port()
    master = _start("org.apache.spark.deploy.master.Master",
                    ["--host", "127.0.0.1", "--port", str(port), "--webui-port", "0"],
                    logs / "master.log")
    started: list[subprocess.Popen[bytes]] = []
    try:
        _wait_for(logs / "master.log", "I have been elected leader", master, 60)
        url = f"spark://127.0.0.1:{port}"
        for n in range(workers):
            log = logs / f"worker-{n}.log"
            started.append(_start("org.apache.spark.deploy.worker.Worker",
                                  [url, "--host", "127.0.0.1", "--cores", str(cores),
                                   "--memory", memory, "--webui-port", "0",
                                   "--work-dir", str(root / f"work-{n}")], log))
            _wait_for(log, "Successfully registered with master", started[-1], 60)
        yield url
    finally:
        for proc in (*started, master):
            proc.terminate()
            proc.wait(timeout=30)
