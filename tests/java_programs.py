"""The Java programs the tests compile and run against Kafka's own jars (fetched by
`pipeline.spark.runtime.jars`): the record fixtures' writers (tests/decode/kafka_records.py),
the share-state combinations (tests/share/combine_cases.py), Kafka Streams' WordCount
(tests/kafka/test_streams_groups.py). `javac` and each program are JVMs of seconds: they run
with a short-lived JVM's options (pipeline/java.py)."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pipeline.java import SHORT_LIVED_JVM, compile_java


def kafka_classpath(artifact: str, version: str) -> str:
    """The class path of Kafka's `artifact` at `version` with its dependencies."""
    from pipeline.spark.runtime.jars import Artifact, ensure_jars  # Maven's, when first asked

    jars = ensure_jars((Artifact("org.apache.kafka", artifact, version),),
                       against_pyspark=False).jars
    return ":".join(str(j) for j in jars)


def java_command(classpath: str, main: str, *args: str, heap: str | None = None) -> list[str]:
    return ["java", *([f"-Xmx{heap}"] if heap else []), *SHORT_LIVED_JVM, "-cp", classpath,
            main, *args]


def program_output(classpath: str, sources: Sequence[Path | str], main: str,
                   stdin: str | None = None) -> str:
    """What the program `main`, compiled from `sources` against `classpath`, prints."""
    with tempfile.TemporaryDirectory() as out:
        compile_java(sources, classpath, out)
        return subprocess.run(java_command(f"{classpath}:{out}", main), input=stdin,
                              check=True, capture_output=True, text=True).stdout
