"""The ingest's edges without a broker: raw records to event-log rows (projected onto whatever the
event schema holds), bad bytes kept as MALFORMED_RECORD rows, and the job's options."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from pipeline.decode import encode_record
from pipeline.spark.events.records import decode_batch
from pipeline.spark.ingest.ingest import IngestOptions, kafka_source_options, parse_option, redacted
from pipeline.spark.tables.contract import arrow_schema, event_schema
from schemas.events import MALFORMED_RECORD
from tests.decode.samples import T0, group_metadata, kip848_rows, offset_commit

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]


def _raw(records: list[tuple[bytes | None, bytes | None]]) -> pa.RecordBatch:
    n = len(records)
    return pa.RecordBatch.from_pydict({
        "key": pa.array([k for k, _ in records], pa.binary()),
        "value": pa.array([v for _, v in records], pa.binary()),
        "partition": pa.array([7] * n, pa.int32()),
        "offset": pa.array(range(100, 100 + n), pa.int64()),
        "timestamp": pa.array([T0 * 1000] * n, pa.timestamp("us", tz="UTC")),
    })


@pytest.fixture(scope="module")
def schema(spark: SparkSession) -> pa.Schema:
    return arrow_schema(event_schema())


def test_records_become_rows_with_the_kafka_position_and_converted_timestamps(
        schema: pa.Schema) -> None:
    commit, snapshot = encode_record(offset_commit(3)), encode_record(group_metadata(3))
    rows = decode_batch(_raw([commit, snapshot]), schema).to_pylist()
    c, g = rows
    assert (c["log_partition"], c["log_offset"], c["event_type"]) == (7, 100, "OFFSET_COMMIT")
    assert int(c["event_time"].timestamp() * 1000) == T0
    assert int(c["commit_timestamp"].timestamp() * 1000) == T0
    assert (c["raw_key"], c["raw_value"]) == commit
    assert (c["group_id"], c["topic"], c["partition"], c["committed_offset"]) == \
        ("my-group", "orders", 3, 42)
    assert c["decode_error"] is None
    assert g["event_type"] == "GROUP_METADATA" and len(g["members"]) == 2
    # the decoder's extra member keys (owned_partitions, ...) are not in the schema's struct
    assert set(g["members"][0]) == {f.name for f in schema.field("members").type.value_type}
    assert g["members"][0]["assignment"] == [{"topic": "orders", "partition": 0},
                                             {"topic": "payments", "partition": 0}]


def test_undecodable_records_are_kept_as_malformed_rows_naming_the_fault(
        schema: pa.Schema) -> None:
    key, value = encode_record(offset_commit(3))
    records = [(key, value[:9]), (None, value), (b"\x00", None), (b"\x00\x63junk", b"\x00\x00")]
    rows = decode_batch(_raw(records), schema).to_pylist()
    assert [r["event_type"] for r in rows] == [MALFORMED_RECORD] * 3 + ["UNSUPPORTED_RECORD"]
    assert rows[0]["group_id"] == "my-group"  # the key alone still names the group
    assert "value v3" in rows[0]["decode_error"] and rows[0]["raw_value"] == value[:9]
    assert "null key" in rows[1]["decode_error"]
    assert all(r["log_offset"] is not None and r["event_time"] is not None for r in rows)


def test_a_timestamp_the_fold_cannot_hold_makes_the_row_malformed(schema: pa.Schema) -> None:
    far = encode_record(offset_commit(3, commit_timestamp_ms=2**62))
    row = decode_batch(_raw([far]), schema).to_pylist()[0]
    assert row["event_type"] == MALFORMED_RECORD
    assert row["decode_error"].startswith("commit_timestamp does not fit")


def test_columns_added_to_the_event_schema_are_filled_by_name(schema: pa.Schema) -> None:
    # two decoder keys no event schema has: an int, and `_ms` millis feeding a timestamp
    assert not {"record_type", "regex_timestamp"} & set(schema.names)
    grown = schema.append(pa.field("record_type", pa.int32())).append(
        pa.field("regex_timestamp", pa.timestamp("us", tz="UTC")))
    rows = [encode_record(r) for r in kip848_rows()]
    out = decode_batch(_raw(rows), grown).to_pylist()
    by_type = {r["event_type"]: r for r in out}
    assert by_type["CONSUMER_GROUP_METADATA"]["record_type"] == 3
    regex = by_type["CONSUMER_GROUP_REGULAR_EXPRESSION"]["regex_timestamp"]
    assert int(regex.timestamp() * 1000) == T0


def test_user_options_get_the_kafka_prefix_and_secrets_never_reach_a_log_line() -> None:
    opts = kafka_source_options({"security.protocol": "SASL_SSL", "failOnDataLoss": "false",
                                 "kafka.sasl.mechanism": "PLAIN",
                                 "sasl.jaas.config": "x required password=p;",
                                 "ssl.truststore.password": "t", "ssl.key.password": "k"})
    assert opts == {"kafka.security.protocol": "SASL_SSL", "failOnDataLoss": "false",
                    "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.jaas.config": "x required password=p;",
                    "kafka.ssl.truststore.password": "t", "kafka.ssl.key.password": "k"}
    shown = redacted(opts)
    assert {k for k, v in shown.items() if v == "*****"} == {
        "kafka.sasl.jaas.config", "kafka.ssl.truststore.password", "kafka.ssl.key.password"}
    with pytest.raises(ValueError, match="set by the ingest job"):
        kafka_source_options({"bootstrap.servers": "elsewhere:9092"})
    assert parse_option("sasl.jaas.config=a=b") == ("sasl.jaas.config", "a=b")
    with pytest.raises(ValueError, match="key=value"):
        parse_option("no-value")


def test_options_name_one_source_and_a_cluster_needs_a_checkpoint() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        IngestOptions(events="/e", bootstrap_servers="h:1", raw="/r")
    with pytest.raises(ValueError, match="checkpoint"):
        IngestOptions(events="/e", bootstrap_servers="h:1")
    with pytest.raises(ValueError, match="trigger"):
        IngestOptions(events="/e", raw="/r", trigger="once")


def test_the_job_parses_repeated_kafka_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "jobs"))
    sys.modules.pop("ingest", None)
    import ingest  # jobs/ingest.py

    args = ingest.parse(["--bootstrap-servers", "h:9092", "--events", "/e", "--checkpoint", "/c",
                         "--kafka-option", "security.protocol=SSL",
                         "--kafka-option", "ssl.key.password=s=1"])
    assert args.kafka_options == {"security.protocol": "SSL", "ssl.key.password": "s=1"}
    with pytest.raises(SystemExit):
        ingest.parse(["--bootstrap-servers", "h:9092", "--events", "/e"])
