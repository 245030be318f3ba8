"""One real Kafka broker for the whole run (KRaft, loopback), the real client workload on it,
and that broker's `__consumer_offsets` ingested and replayed by the real jobs' code."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.kafka.broker import Broker, kafka_broker
from tests.kafka.clients import Scenarios, run_scenarios
from tests.spark.conftest import spark  # noqa: F401  (the one shared session fixture)


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    with kafka_broker(tmp_path_factory.mktemp("kafka")) as b:
        yield b


@pytest.fixture(scope="session")
def workload(broker: Broker) -> Iterator[Scenarios]:
    """Every client scenario, run once; consumers kept in their groups stay open until the end."""
    with run_scenarios(broker.bootstrap_servers) as s:
        yield s


@pytest.fixture(scope="session")
def session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ingest")
