"""What ships beside the exporter follows its catalogue: docs/metrics.md documents every
metric with its type, labels and source column; the alerting rules and the Grafana dashboard
ask only for metrics the exporter serves."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pipeline.metrics.catalogue import METRICS, PROGRESS, Metric

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "metrics.md"
RULES = ROOT / "conf" / "prometheus" / "alerts.yml"
DASHBOARD = ROOT / "conf" / "grafana" / "consumer-group-replay.json"
NAME = re.compile(r"\b(?:kafka_consumergroup|cgr)_\w+")


def served(m: Metric) -> str:
    return m.name + ("_total" if m.kind == "counter" else "")


def test_the_page_documents_every_metric_with_its_source() -> None:
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and NAME.fullmatch(cells[0].strip("`")):
            rows[cells[0].strip("`")] = cells[1:]
    for m in METRICS:
        assert served(m) in rows, f"docs/metrics.md has no row for {served(m)}"
        kind, labels, source = rows[served(m)]
        assert kind == m.kind, served(m)
        assert re.findall(r"`(\w+)`", labels) == list(m.labels), served(m)
        table = "ReplayProgress" if m.table == PROGRESS else m.table
        assert source.startswith(f"`{table}.{m.column}`"), served(m)
    assert set(rows) == {served(m) for m in METRICS}, "rows for metrics the exporter lacks"


def test_the_rules_and_the_dashboard_ask_only_for_served_metrics() -> None:
    names = {served(m) for m in METRICS}
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [dashboard["templating"]["list"][1]["definition"]]
    asked = set(NAME.findall(RULES.read_text())) | {n for e in exprs for n in NAME.findall(e)}
    asked = {n for n in asked if not n.endswith("_")}  # `cgr_replay_*` in prose: a prefix
    assert asked - names == set()
    assert {served(m) for m in METRICS if m.table == "group_lag"} & asked  # not vacuous


def test_the_dashboard_is_one_grafana_can_import() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 36
    for p in dashboard["panels"]:
        assert p["type"] == "row" or (p["targets"] and p["datasource"]["uid"] == "${datasource}")
