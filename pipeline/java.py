"""Which `java` runs a JVM the project starts (Spark's driver, the Kafka broker the tests and
tools start): `$JAVA_HOME/bin/java` when JAVA_HOME is set, else `java` on PATH, the rule of
Spark's own launcher (bin/spark-class). Asked before a JVM is started, so a machine without
Java gets one line naming what is missing instead of Spark's bare JAVA_GATEWAY_EXITED (its
launcher's stderr is not shown when a job starts the JVM quietly).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from pipeline.errors import UsageError

NEEDED = "Spark 4.2 and Kafka need Java 17 or 21"
# The options of a JVM that lives a minute or two (the demo, Kafka's tools, the test broker,
# a test's Java program): C1 alone compiles, and the cores go to the work rather than to C2
# compiling code that will not run long (docs/performance.md, "Where the demo's time goes").
# C1 alone shrinks the code cache to 48 MB, which Spark and Delta fill in about a minute and
# then run interpreted: the tiered default's room. conf/profiles/test.conf gives the `test`
# profile's jobs the same two.
SHORT_LIVED_JVM = ("-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m")
# The same for `javac` (a JVM too), whose own options take `-J` (tests/java_programs.py).
JAVAC_OPTIONS = tuple(f"-J{option}" for option in SHORT_LIVED_JVM)


def javac_executable() -> str | None:
    """`javac` by the same rule as `java_executable`; None on a machine with only a JRE."""
    home = os.environ.get("JAVA_HOME")
    if home:
        javac = Path(home) / "bin" / "javac"
        return str(javac) if javac.is_file() and os.access(javac, os.X_OK) else None
    return shutil.which("javac")


def compile_java(sources: Sequence[Path | str], classpath: str, out: Path | str,
                 *options: str) -> None:
    """`sources` compiled by `javac` (a short-lived JVM's options, then `options`) against
    `classpath` into the folder `out`; javac's errors raised."""
    javac = javac_executable()
    if javac is None:
        raise UsageError(f"no javac: a JDK is needed to compile {', '.join(map(str, sources))}")
    proc = subprocess.run([javac, *JAVAC_OPTIONS, *options, "-d", str(out), "-cp", classpath,
                           *map(str, sources)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"javac failed on {', '.join(map(str, sources))}:\n"
                           f"{proc.stderr[-4000:]}")


def java_executable() -> str:
    home = os.environ.get("JAVA_HOME")
    if home:
        java = Path(home) / "bin" / "java"
        if java.is_file() and os.access(java, os.X_OK):
            return str(java)
        raise UsageError(f"JAVA_HOME={home} has no bin/java: {NEEDED}; set JAVA_HOME to a "
                         "JDK's folder, or unset it to take java from PATH")
    found = shutil.which("java")
    if found is None:
        raise UsageError(f"no java: JAVA_HOME is unset and PATH has none; {NEEDED} (set "
                         "JAVA_HOME to a JDK's folder)")
    return found
