"""The service definitions docs/runbook.md ships (conf/deploy/): each systemd unit's and each
Kubernetes container's command line is one its job's own parser takes, with the environment
and the properties file they name, and no secret is on any of those command lines."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.properties import read_properties
from tests.jobs.jobs import ROOT, load_job

DEPLOY = ROOT / "conf" / "deploy"
UNITS = sorted((DEPLOY / "systemd").glob("*.service"))
SECRET_FILE = "/etc/cgr/client.properties"
SHIPPED_SECRET_FILE = DEPLOY / "systemd" / "client.properties"
# What a secret looks like on a command line: a password or a JAAS line's value.
SECRET = re.compile(r"password|jaas\.config=\S*LoginModule", re.IGNORECASE)


def _env_file() -> dict[str, str]:
    return dict(line.split("=", 1) for line in (DEPLOY / "systemd" / "cgr.env").read_text()
                .splitlines() if line and not line.startswith("#"))


def exec_start(unit: Path) -> list[str]:
    """The unit's ExecStart as systemd splits it: continued lines joined, ${VAR} from its
    EnvironmentFile (here, the shipped example)."""
    text = unit.read_text().replace("\\\n", " ")
    (line,) = [x for x in text.splitlines() if x.startswith("ExecStart=")]
    env = _env_file()
    line = re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], line.removeprefix("ExecStart="))
    return shlex.split(line)


def parsed(argv: list[str], monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> Any:
    """The job named in `argv` (`.../python jobs/<job>.py ...`) parsing the rest, the
    environment set and the secret file where the unit names it."""
    script = next(i for i, a in enumerate(argv) if a.startswith("jobs/") and a.endswith(".py"))
    assert (ROOT / argv[script]).is_file(), argv[script]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    rest = [str(SHIPPED_SECRET_FILE) if a == SECRET_FILE else a for a in argv[script + 1:]]
    return load_job(Path(argv[script]).stem).parse(rest)


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.name)
def test_a_systemd_unit_runs_its_job_with_flags_the_job_takes(
        unit: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = exec_start(unit)
    assert not [a for a in argv if SECRET.search(a)], argv
    args = parsed(argv, monkeypatch, _env_file())
    assert "processing" in str(args.trigger)  # a stream that keeps running
    if unit.name == "consumer-group-ingest.service":
        assert args.kafka_options == {**read_properties(SHIPPED_SECRET_FILE),
                                      "sasl.jaas.config": _env_file()["CGR_KAFKA_JAAS"]}
        assert args.end_offsets and args.checkpoint


def deployments() -> list[dict[str, Any]]:
    return list(yaml.safe_load_all((DEPLOY / "kubernetes" / "cgr.yaml").read_text()))


@pytest.mark.parametrize("deployment", deployments(), ids=lambda d: d["metadata"]["name"])
def test_a_kubernetes_deployment_is_one_writer_running_its_job_with_flags_it_takes(
        deployment: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    spec = deployment["spec"]
    # one stream per checkpoint: never two pods at once, not even while rolling out
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    (container,) = spec["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value", "a secret from the cluster")
           for e in container.get("env", [])}
    argv = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a)
            for a in container["command"] + container["args"]]
    assert not [a for a in argv if SECRET.search(a)], argv
    args = parsed(argv, monkeypatch, env)
    assert args.checkpoint.startswith("/data/")
