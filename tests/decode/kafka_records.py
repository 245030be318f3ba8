"""Records Kafka's own classes wrote, as fixtures: tests/decode/java/WriteRecords.java (share and
streams records, kafka-group-coordinator 4.2.1) and WriteRecords40.java (Kafka 4.0's layouts of
ShareGroupMetadataValue and ShareGroupStatePartitionMetadataValue, and 4.0's type 9, with
kafka-group-coordinator 4.0.0) and WriteRecords44.java (the tagged fields 4.3 and 4.4 added,
with 4.4.0); WriteShareState.java and WriteShareState40.java (the share coordinator's
`__share_group_state` records, kafka-share-coordinator 4.2.1 and 4.0.0); each compiled with
Print.java, their shared output, print them; `kafka_records.json` holds that output, per
fixture set (`PROGRAMS`), as {name, key, value} with hex bytes (value null for a tombstone).
WriteEveryVersion.java (`EVERY_VERSION`) writes the classic and consumer-group types (0-8, 16)
at every version Kafka 4.4.0 declares, each entry with `json` too: the value as Kafka's own
generated JsonConverter renders it (tests/decode/test_every_version.py).

`python -m tests.decode.kafka_records` fetches the artifacts into the project's cache (Maven,
`pipeline.spark.runtime.jars.ensure_jars`, as the test broker's jars are), compiles and runs
the programs and rewrites the JSON; `test_kafka_records.py::test_fixtures_are_what_kafka_writes`
(marked kafka) checks that the committed JSON is still exactly their output."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "kafka_records.json"
# Fixture set -> (the Kafka artifact and version whose classes write its records, the program).
PROGRAMS = {"4.2.1": ("kafka-group-coordinator", "4.2.1", "WriteRecords"),
            "4.0.0": ("kafka-group-coordinator", "4.0.0", "WriteRecords40"),
            "4.4.0": ("kafka-group-coordinator", "4.4.0", "WriteRecords44"),
            "share-state 4.2.1": ("kafka-share-coordinator", "4.2.1", "WriteShareState"),
            "share-state 4.0.0": ("kafka-share-coordinator", "4.0.0", "WriteShareState40")}
EVERY_VERSION = "every version 4.4.0"
PROGRAMS[EVERY_VERSION] = ("kafka-group-coordinator", "4.4.0", "WriteEveryVersion")
# The sources every program is compiled with, and those only Kafka 4.0's classes compile.
HELPERS = ("Print",)
HELPERS_40 = ("Print", "Print40")


def load() -> dict[str, list[dict[str, Any]]]:
    data: dict[str, list[dict[str, Any]]] = json.loads(FIXTURES.read_text())
    return data


def records(share_state: bool = False) -> dict[str, tuple[bytes, bytes | None]]:
    """Every fixture by name: (key, value) bytes; of `__consumer_offsets`, or with
    `share_state` of `__share_group_state`."""
    return {r["name"]: (bytes.fromhex(r["key"]),
                        None if r["value"] is None else bytes.fromhex(r["value"]))
            for fixture, written in load().items()
            if fixture != EVERY_VERSION and fixture.startswith("share-state") == share_state
            for r in written}


def every_version() -> list[dict[str, Any]]:
    """WriteEveryVersion's records: {name, key, value, json}, bytes as hex."""
    return load()[EVERY_VERSION]


def run_java(fixture: str) -> list[dict[str, Any]]:
    """Compile and run the program of `fixture`; its records as fixture entries."""
    from tests.java_programs import kafka_classpath, program_output

    artifact, version, program = PROGRAMS[fixture]
    helpers = HELPERS_40 if version.startswith("4.0.") else HELPERS
    printed = program_output(kafka_classpath(artifact, version),
                             [HERE / "java" / f"{name}.java" for name in (program, *helpers)],
                             program)
    entries = []
    for line in printed.splitlines():
        name, key, value, *json_value = line.split(" ")
        entries.append({"name": name, "key": key, "value": None if value == "null" else value,
                        **({"json": json.loads(json_value[0])} if json_value else {})})
    return entries


def main() -> int:
    data = {fixture: run_java(fixture) for fixture in PROGRAMS}
    FIXTURES.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {sum(map(len, data.values()))} records to {FIXTURES}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
