"""The JVM artifacts the pipeline needs beside pip pyspark: Delta, Spark's Kafka source, S3A.

They are resolved once with Maven (`mvn dependency:copy-dependencies` on a pom generated in
`.cache/jars/`) into `.cache/jars/<key>/`, and handed to Spark as `spark.jars`. A filled
cache is recognised by its manifest alone, so later runs touch neither Maven nor the network.

Why Maven and not Spark's Ivy (`spark.jars.packages`): the registry this project reaches does
not serve every artifact the natural coordinates name, and Ivy cannot swap one transitive
version for another:

* `io.delta:delta-spark_4.2_2.13:4.4.1` is not served (4.4.0 is). The pip `delta-spark` 4.4.1
  and 4.4.0 wheels differ only in `version.py`, so the 4.4.0 JAR is the same Delta for Python.
* `spark-sql-kafka-0-10_2.13:4.2.0` is served, but its dependency
  `spark-token-provider-kafka-0-10_2.13:4.2.0` is not (4.0.0 is). The pom excludes it and
  names 4.0.0. Every member the 4.2.0 Kafka source calls in it exists in 4.0.0; 4.0.0 itself
  references two `LogKeys` objects that Spark 4.2 no longer has, both in log lines of
  `KafkaDelegationTokenProvider.obtainDelegationTokens`, which runs only when Kafka delegation
  tokens are obtained (a Kerberos cluster). Swap in 4.2.0 once it can be fetched.

Also resolving on every session start (Ivy does) costs seconds and a network round trip; a
fixed list of files costs nothing. Jars that pip pyspark already ships (scala-library, Hadoop,
Jackson, Parquet, slf4j, lz4, snappy, ...) are left out, so Spark's own versions are the ones
loaded.

The project's own JVM classes (`OWN_SOURCES`: the end-offset sampler's per-partition work,
which through Py4J would cost a dozen calls a partition) are compiled by `javac` against that
set into `.cache/jars/own-<hash>.jar`, keyed by the sources and the set, and join the list.
On a machine without a JDK the jar is not built; the sampler says so when it starts.

`python -m pipeline.spark.runtime.jars` prefetches and prints what the cache holds;
`--print-jars` prints only the comma-separated list, for `spark-submit --jars "$(...)"`.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyspark

from pipeline.java import compile_java, javac_executable

ROOT = Path(__file__).resolve().parents[3]
# A checkout caches under its own .cache/; an installed wheel under the user's cache folder
# (or $CGR_CACHE), never inside site-packages.
CACHE = (Path(os.environ["CGR_CACHE"]) if os.environ.get("CGR_CACHE")
         else ROOT / ".cache" if (ROOT / "pyproject.toml").is_file()
         else Path.home() / ".cache" / "consumer-group-replay")
JARS_DIR = CACHE / "jars"
MAVEN_REPO = CACHE / "m2"

SCALA_BINARY = "2.13"
SPARK_VERSION = pyspark.__version__  # 4.2.0, pinned in pyproject.toml
SPARK_MINOR = ".".join(SPARK_VERSION.split(".")[:2])
# pip delta-spark is 4.4.1; its JAR is not on the registry, 4.4.0 is (see the module docstring).
DELTA_VERSION = "4.4.0"
# spark-token-provider-kafka 4.2.0 is not on the registry either; 4.0.0 is.
KAFKA_TOKEN_PROVIDER_VERSION = "4.0.0"
# S3A (`s3a://` paths): hadoop-aws matching pip pyspark's Hadoop, with the AWS SDK modules
# S3A loads instead of the SDK's 600 MB `bundle` jar (the same classes, 19 MB in all).
HADOOP_VERSION = "3.5.0"  # pyspark/jars/hadoop-client-api-3.5.0.jar
AWS_SDK_VERSION = "2.35.4"  # what hadoop-aws 3.5.0 names
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Artifact:
    group: str
    name: str
    version: str
    excludes: tuple[tuple[str, str], ...] = ()

    @property
    def coordinate(self) -> str:
        return f"{self.group}:{self.name}:{self.version}"


_TOKEN_PROVIDER = ("org.apache.spark", f"spark-token-provider-kafka-0-10_{SCALA_BINARY}")

ARTIFACTS: tuple[Artifact, ...] = (
    Artifact("io.delta", f"delta-spark_{SPARK_MINOR}_{SCALA_BINARY}", DELTA_VERSION),
    Artifact("org.apache.spark", f"spark-sql-kafka-0-10_{SCALA_BINARY}", SPARK_VERSION,
             excludes=(_TOKEN_PROVIDER,)),
    Artifact(*_TOKEN_PROVIDER, KAFKA_TOKEN_PROVIDER_VERSION),
    Artifact("org.apache.hadoop", "hadoop-aws", HADOOP_VERSION,
             excludes=(("software.amazon.awssdk", "bundle"),)),
    *(Artifact("software.amazon.awssdk", name, AWS_SDK_VERSION)
      for name in ("s3", "s3-transfer-manager", "sts")),
)


def _pom(artifacts: tuple[Artifact, ...]) -> str:
    deps = []
    for a in artifacts:
        excl = "".join(
            f"<exclusion><groupId>{g}</groupId><artifactId>{n}</artifactId></exclusion>"
            for g, n in a.excludes)
        deps.append(
            f"    <dependency><groupId>{a.group}</groupId><artifactId>{a.name}</artifactId>"
            f"<version>{a.version}</version>"
            + (f"<exclusions>{excl}</exclusions>" if excl else "") + "</dependency>")
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!-- generated by pipeline/spark/runtime/jars.py; do not edit -->\n'
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>local.pipeline</groupId><artifactId>spark-runtime-jars</artifactId>"
        "<version>0</version><packaging>pom</packaging>\n"
        "  <dependencies>\n" + "\n".join(deps) + "\n  </dependencies>\n</project>\n")


def _pyspark_jars_dir() -> Path:
    return Path(pyspark.__file__).resolve().parent / "jars"


_VERSIONED = re.compile(r"^(?P<stem>.+)-(?P<version>\d+(?:\.\d+)+(?:[-.][\w.]+)*)\.jar$")


def jar_stem(filename: str) -> str:
    """`hadoop-client-api-3.5.0.jar` -> `hadoop-client-api`."""
    m = _VERSIONED.match(filename)
    return m.group("stem") if m else filename.removesuffix(".jar")


def _key(pom: str, against_pyspark: bool) -> str:
    h = hashlib.sha256(pom.encode())
    if against_pyspark:  # the kept set depends on what this pyspark ships
        h.update(SPARK_VERSION.encode())
    return h.hexdigest()[:12]


@dataclass(frozen=True)
class JarCache:
    directory: Path
    jars: tuple[Path, ...]  # the ones handed to Spark
    skipped: tuple[str, ...]  # resolved but already shipped by pip pyspark


def _read(directory: Path) -> JarCache | None:
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    jars = tuple(directory / name for name in manifest["jars"])
    if not jars or not all(p.is_file() for p in jars):
        return None
    return JarCache(directory, jars, tuple(manifest["skipped"]))


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run_maven(pom_path: Path, out: Path, attempts: int = 3) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("mvn not found: Maven resolves the Delta and Kafka JARs "
                           "(apt-get install maven)")
    cmd = [mvn, "-B", "-q", "--no-transfer-progress", "-f", str(pom_path),
           f"-Dmaven.repo.local={MAVEN_REPO}", f"{DEPENDENCY_PLUGIN}:copy-dependencies",
           "-DincludeScope=runtime", f"-DoutputDirectory={out}"]
    for attempt in range(1, attempts + 1):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, check=False)
        if proc.returncode == 0:
            return
        if attempt == attempts:
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                               f"{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
        time.sleep(2 * attempt)


def ensure_jars(artifacts: tuple[Artifact, ...] = ARTIFACTS, *,
                against_pyspark: bool = True) -> JarCache:
    """The cached jar set, resolving it with Maven first if this pom has no cache yet.

    `against_pyspark`: leave out jars pip pyspark already ships (for Spark's class path).
    False keeps the whole runtime closure, for a JVM of its own (the test Kafka broker).
    """
    pom = _pom(artifacts)
    directory = JARS_DIR / _key(pom, against_pyspark)
    cached = _read(directory)
    if cached is not None:
        return cached
    with _locked(JARS_DIR / ".lock"):
        cached = _read(directory)  # another process may have filled it meanwhile
        if cached is not None:
            return cached
        JARS_DIR.mkdir(parents=True, exist_ok=True)
        pom_path = JARS_DIR / "pom.xml"
        pom_path.write_text(pom)
        with tempfile.TemporaryDirectory(dir=JARS_DIR, prefix=".resolve-") as tmp:
            staging = Path(tmp) / "all"
            _run_maven(pom_path, staging)
            provided = ({jar_stem(p.name) for p in _pyspark_jars_dir().glob("*.jar")}
                        if against_pyspark else set())
            # `shims` is RoaringBitmap 0.9's ArraysShim; pyspark's RoaringBitmap 1.x has it inside.
            if "RoaringBitmap" in provided:
                provided.add("shims")
            keep: list[str] = []
            skipped: list[str] = []
            for p in sorted(staging.glob("*.jar")):
                (skipped if jar_stem(p.name) in provided else keep).append(p.name)
            final = Path(tmp) / "final"
            final.mkdir()
            for name in keep:
                shutil.move(staging / name, final / name)
            (final / MANIFEST).write_text(json.dumps({
                "artifacts": [a.coordinate for a in artifacts],
                "spark": SPARK_VERSION if against_pyspark else None,
                "jars": keep, "skipped": skipped}, indent=2) + "\n")
            if directory.exists():
                shutil.rmtree(directory)
            final.rename(directory)
    cached = _read(directory)
    assert cached is not None
    return cached


# The project's own Java sources, compiled into one jar beside the resolved ones.
OWN_SOURCES = (ROOT / "pipeline" / "spark" / "ingest" / "java" / "EndOffsetsRound.java",)


def own_jar(cache: JarCache) -> Path | None:
    """`OWN_SOURCES` compiled against `cache`'s jars (Kafka's client among them), built once
    per content; None without `javac`."""
    h = hashlib.sha256()
    for source in OWN_SOURCES:
        h.update(source.read_bytes())
    h.update("\n".join(p.name for p in cache.jars).encode())
    jar = JARS_DIR / f"own-{h.hexdigest()[:12]}.jar"
    if jar.is_file():
        return jar
    if javac_executable() is None:
        return None
    with _locked(JARS_DIR / ".lock"):
        if jar.is_file():
            return jar
        with tempfile.TemporaryDirectory(dir=JARS_DIR, prefix=".own-") as tmp:
            classes = Path(tmp) / "classes"
            compile_java(OWN_SOURCES, os.pathsep.join(map(str, cache.jars)), classes,
                         "--release", "17", "-nowarn")
            staged = Path(tmp) / jar.name
            with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
                for f in sorted(classes.rglob("*.class")):
                    z.write(f, f.relative_to(classes).as_posix())
            staged.rename(jar)
    return jar


def jar_paths() -> list[str]:
    cache = ensure_jars()
    own = own_jar(cache)
    return [str(p) for p in cache.jars] + ([str(own)] if own is not None else [])


def spark_conf() -> dict[str, str]:
    """Spark conf entries that put Delta and the Kafka source on the classpath.

    They only take effect when they reach the JVM at launch: a session this process starts
    (`build_session` does that), or `spark-submit --jars` (see `--print-jars`).
    """
    return {"spark.jars": ",".join(jar_paths())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.spark.runtime.jars", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--print-jars", action="store_true",
                        help="print only the comma-separated jar list (for spark-submit --jars)")
    parser.add_argument("--quiet", action="store_true",
                        help="print nothing (a line only when the cache had to be filled)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    cache = ensure_jars()
    own = own_jar(cache)
    if args.print_jars:
        print(",".join(jar_paths()))
        return 0
    took = time.monotonic() - started
    if args.quiet:
        if took > 5:  # resolved now, not read from the cache
            print(f"fetched {len(cache.jars)} JVM artifacts into {cache.directory} in {took:.0f} s")
        return 0
    print(f"JVM artifacts for pyspark {SPARK_VERSION} in {cache.directory} ({took:.1f}s):")
    for a in ARTIFACTS:
        print(f"  requested {a.coordinate}"
              + "".join(f" (excluding {g}:{n})" for g, n in a.excludes))
    total = 0
    for p in cache.jars:
        size = p.stat().st_size
        total += size
        print(f"  {p.name:60s} {size / 1e6:7.2f} MB")
    print(f"  {own.name}: the project's own classes" if own is not None
          else "  the project's own classes not built: no javac (a JDK) on this machine")
    print(f"  {len(cache.jars)} jars, {total / 1e6:.1f} MB; left to pip pyspark's own copy: "
          + (", ".join(cache.skipped) or "none"))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
