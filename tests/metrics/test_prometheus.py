"""A real Prometheus server (Debian's package, installed by jobs/prometheus.sh) on loopback
scrapes the exporter: what its HTTP query API returns equals the rows and the progress
snapshot published, and the shipped alerting rules load, pass `promtool check rules`, and
fire for a group in ERR and for a group that stopped consuming (its lag growing).

The firing test loads a copy of conf/prometheus/alerts.yml whose `for:` periods are 0s,
every expression unchanged: the shipped periods are minutes, which a test cannot wait out
against a real server. The periods themselves are checked by `promtool test rules` on
simulated series (test_the_rules_hold_their_periods), where time is free.

The server and its API: tests/metrics/prometheus.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from pipeline.metrics import MetricsServer, advance, serve
from schemas.lag import ERR, OK, STATUS_CODES
from tests.metrics.prometheus import DEADLINE_S, OURS, Prometheus, binary, prometheus_server
from tests.metrics.rows import AT, GROUP_LAG, GROUP_STATE, PARTITION_LAG, row
from tests.metrics.test_exposition import samples, scrape_text

pytestmark = pytest.mark.prometheus

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "conf" / "prometheus" / "alerts.yml"


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
    with prometheus_server(folder, [f"{exporter.host}:{exporter.port}"], rules) as server:
        yield server


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
        assert f"SUCCESS: {RULES.read_text().count('- alert:')} rules found" in done.stdout


def series(values: dict[str, str]) -> list[dict[str, str]]:
    """promtool's input series: each series with its values in promtool's notation."""
    return [{"series": name, "values": v} for name, v in values.items()]


def silent(name: str, at: str) -> dict[str, Any]:
    """A promtool alert test: `name` not firing at `at`."""
    return {"eval_time": at, "alertname": name, "exp_alerts": []}


def fires(name: str, before: str, at: str, labels: dict[str, str],
          **annotations: str) -> list[dict[str, Any]]:
    """`name` not firing at `before`, then firing at `at` with `labels` and `annotations`
    (their templates rendered): the rule's period, `for:` and all, seen from both sides."""
    return [silent(name, before), {"eval_time": at, "alertname": name, "exp_alerts": [
        {"exp_labels": labels, "exp_annotations": annotations}]}]


TRAILS = ("the replay's watermark delay (10 minutes by default) and trigger.")


def test_the_rules_hold_their_periods(tmp_path: Path) -> None:
    """`promtool test rules` on simulated minutes: every shipped rule, `for:` and all, fires
    when its period has passed and not before, with its labels and annotations; a flat lag
    is not a growing one, a safe loss estimate is no risk; and the absent() rules fire when
    their series are gone (a second simulation, with none of them)."""
    err = {"group": "orders", "status": ERR, "severity": "critical"}
    growing = {"group": "growing", "severity": "warning"}
    spec = {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": series({
            'cgr_group_status{group="orders",status="ERR"}': "3x60",
            'cgr_group_status{group="slow",status="WARN"}': "2x60",
            'kafka_consumergroup_group_max_lag_seconds{group="late"}': "700x60",
            'kafka_consumergroup_group_sum_lag{group="growing"}': "100+50x60",
            'kafka_consumergroup_group_sum_lag{group="flat"}': "100x60",
            'cgr_group_lost_records{group="lossy"}': "0 0 0 5x57",
            'cgr_group_loss_eta_seconds{group="risky"}': "3000-40x60",
            'cgr_group_loss_eta_seconds{group="safe"}': "7200x60",
            # sampled at epoch 0, and never again; promtool's clock starts there too
            'cgr_group_lag_sampled_timestamp_seconds{group="quiet"}': "0x60",
            # the last batch finished at epoch 0, and the newest event read is as old
            "cgr_replay_last_batch_timestamp_seconds": "0x60",
            "cgr_replay_newest_event_timestamp_seconds": "0x60",
            "cgr_replay_rejected_rows_total": "0 0 0 0 5x56",
            "cgr_replay_groups_failed_total": "0 0 1x58",
        }),
        "alert_rule_test": [
            *fires("ConsumerGroupStatusErr", "4m", "6m", err,
                   summary="Consumer group orders is in ERR (Burrow's status)",
                   description="A partition of orders stopped, stalled, was rewound or lost "
                               "records; partition_lag's rule column says which."),
            *fires("ConsumerGroupStatusWarn", "14m", "16m",
                   {"group": "slow", "status": "WARN", "severity": "warning"},
                   summary="Consumer group slow is in WARN: its lag has not decreased over "
                           "Burrow's window"),
            *fires("ConsumerGroupLagSecondsHigh", "4m", "6m",
                   {"group": "late", "severity": "warning"},
                   summary="Consumer group late is 11m 40s behind its log",
                   description="As of its newest lag sample, which trails real time by " + TRAILS),
            *fires("ConsumerGroupRecordsLost", "2m", "3m",
                   {"group": "lossy", "severity": "critical"},
                   summary="Consumer group lossy lost 5 records to retention before reading "
                           "them",
                   description="A partition's log start passed the group's committed offset; "
                               "partition_lag.lost_since says since when."),
            # safe never; risky after 10m
            *fires("ConsumerGroupRecordsAtRisk", "9m", "10m",
                   {"group": "risky", "severity": "warning"},
                   summary="Consumer group risky will lose records to retention in 43m 20s at "
                           "its current rates"),
            *fires("ConsumerGroupLagGrowing", "5m", "25m", growing,
                   summary="Consumer group growing's lag keeps growing (1350 messages)",
                   description="Over its lag samples, which trail real time by " + TRAILS),
            # older than 1800 s from 31m, then 10m of it
            *fires("ConsumerGroupLagSamplesStale", "40m", "42m",
                   {"group": "quiet", "severity": "warning"},
                   summary="Consumer group quiet's newest lag sample is 42m 0s old",
                   description="The end-offset sampler, the ingest, or the replay behind it "
                               "has stopped for this group: its lag gauges show old values. "
                               "See the ingest's log ('end-offset round ... wrote nothing') "
                               "and the replay's."),
            silent("ConsumerGroupLagAbsent", "45m"),  # a group has samples: not absent
            # 600 s without a batch at 10m, then 5m of it
            *fires("ReplayStalled", "14m", "16m", {"severity": "critical"},
                   summary="The replay has finished no micro-batch for 16m 0s"),
            # 900 s old at 15m, then 10m of it
            *fires("ReplayFallingBehind", "25m", "27m", {"severity": "warning"},
                   summary="The newest event the replay has read is 27m 0s old",
                   description="The replay trails the log (or the log has been quiet); its "
                               "tables and lag are as old."),
            *fires("ReplayRejectingRows", "3m", "5m", {"severity": "warning"},
                   summary="The replay refused 5 rows in 15 minutes: see rejected_events"),
            *fires("ReplayGroupsFailed", "1m", "3m", {"severity": "critical"},
                   summary="A group's fold raised: its rows went to rejected_events as "
                           "INTERNAL; see the driver's log"),
            silent("ReplayMetricsAbsent", "20m"),  # served: not absent
        ],
    }, {
        "interval": "1m",  # nothing served at all: the replay is down, lag never sampled
        "input_series": series({'up{job="replay"}': "0x60"}),
        "alert_rule_test": [
            *fires("ReplayMetricsAbsent", "9m", "11m", {"severity": "critical"},
                   summary="No replay serves its progress: the replay is down or not scraped",
                   description="Point Prometheus at jobs/replay.py --metrics-port "
                               "(jobs/serve.py serves no cgr_replay_* series)."),
            *fires("ConsumerGroupLagAbsent", "29m", "31m", {"severity": "warning"},
                   summary="No consumer group has a lag sample: lag is not being measured"),
        ],
    }]}
    fired = {t["alertname"] for case in spec["tests"] for t in case["alert_rule_test"]
             if t["exp_alerts"]}
    assert fired == set(re.findall(r"(?m)^\s+- alert: (\w+)$", RULES.read_text())), (
        "every shipped rule has a test that fires it")
    tests = tmp_path / "alerts_test.yml"
    tests.write_text(json.dumps(spec))
    done = subprocess.run([str(binary("promtool")), "test", "rules", str(tests)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
