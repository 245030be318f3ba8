"""A real single-node Kafka (KRaft, broker and controller in one JVM) on loopback, for tests and
local tries of `jobs/ingest.py`.

Kafka's own JARs (`org.apache.kafka:kafka_2.13`, `KAFKA_VERSION`, with its whole runtime
closure and a log4j2 binding, and `kafka-tools` beside it, as the distribution ships them) are
fetched from Maven Central by the same cached mechanism as Spark's (`pipeline.spark.runtime.jars`),
into `.cache/jars/` (`describe_consumer_groups` runs Kafka's own `kafka-consumer-groups` on
them). `kafka_broker()` formats a fresh log directory with a random cluster id
(`kafka.tools.StorageTool format`), starts `kafka.Kafka` on two free loopback ports, waits
until its own answer to Kafka's Metadata request lists it (polling with a deadline, failing
early if the JVM exits) and on exit stops it with SIGTERM (a controlled shutdown),
killing it only if that takes too long. Kafka 4.2 runs the new group coordinator with share
groups (KIP-932) and streams groups (KIP-1071) on by default (`share.version` and
`streams.version` 1 on a newly formatted cluster), so classic, KIP-848
(`group.protocol=consumer`), share and streams groups all work.

It needs only the package's own dependencies and Java, so users can start one too:

    python -m pipeline.kafka.broker    # start one, print its bootstrap servers, Ctrl-C stops
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pipeline.java import SHORT_LIVED_JVM, java_executable
from pipeline.spark.runtime.jars import Artifact, ensure_jars

KAFKA_VERSION = "4.2.1"  # share and streams groups on by default since 4.2 (KIP-848 since 4.0)
LOG4J_VERSION = "2.25.3"
NODE_ID = 1
CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
SHARE_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"  # kafka-share-groups
CONSOLE_SHARE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"
CONFIG_COMMAND = "kafka.admin.ConfigCommand"  # kafka-configs

BROKER_ARTIFACTS: tuple[Artifact, ...] = (
    Artifact("org.apache.kafka", "kafka_2.13", KAFKA_VERSION),
    # Kafka's command-line tools (`kafka-consumer-groups` is ConsumerGroupCommand), as its
    # tarball ships them beside the broker: tests compare the replay with what they print.
    Artifact("org.apache.kafka", "kafka-tools", KAFKA_VERSION),
    # Kafka's pom leaves logging to the distribution: SLF4J 1.x to log4j2, as its tarball does.
    Artifact("org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J_VERSION),
    Artifact("org.apache.logging.log4j", "log4j-core", LOG4J_VERSION),
)

# Small and fast for one node; every replication factor 1 so the internal topics can exist.
DEFAULT_CONFIG: dict[str, str] = {
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "3",
    "min.insync.replicas": "1",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "false",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    # A killed streams or share member's session ends in 10 s, not the default 45 s.
    "group.share.min.session.timeout.ms": "10000",
    "group.share.session.timeout.ms": "10000",
    "group.share.min.heartbeat.interval.ms": "2000",
    "group.share.heartbeat.interval.ms": "2000",
    "group.streams.min.session.timeout.ms": "10000",
    "group.streams.session.timeout.ms": "10000",
    "group.streams.min.heartbeat.interval.ms": "2000",
    "group.streams.heartbeat.interval.ms": "2000",
    # Every 5 minutes (the default) the share coordinator deletes the records of
    # __share_group_state its state no longer needs, all of a deleted group's: a test that
    # reads the topic after the fact must find them all, however long the broker has run.
    "share.coordinator.state.topic.prune.interval.ms": "86400000",
    # Retention checked every second (the default: 5 minutes, the first 30 s after the start)
    # and the cleaner back after a second (15 s): a topic's short retention.ms or its
    # compaction shows while a test runs.
    # The internal topics' segments (100 MiB) never roll in a test, so are never cleaned.
    "log.retention.check.interval.ms": "1000",
    "log.cleaner.backoff.ms": "1000",
    "log.initial.task.delay.ms": "1000",  # the first retention check: 30 s after the start
}

_LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
"""


@dataclass(frozen=True)
class Broker:
    """A running broker: where to reach it and where its files are."""

    bootstrap_servers: str
    controller_port: int
    cluster_id: str
    directory: Path
    process: subprocess.Popen[bytes]

    @property
    def server_log(self) -> Path:
        return self.directory / "server.log"

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.server_log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def broker_classpath() -> str:
    return os.pathsep.join(str(p) for p in ensure_jars(BROKER_ARTIFACTS, against_pyspark=False).jars)


def random_cluster_id() -> str:
    """Kafka's `Uuid.randomUuid().toString()`: 16 random bytes, URL-safe base64 without padding
    (Kafka redraws ids that would start with '-', as this does)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def free_ports(n: int) -> list[int]:
    """`n` distinct ports the OS reports free on loopback now (held open together, so distinct)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def server_properties(log_dir: Path, port: int, controller_port: int,
                      extra: Mapping[str, str] | None = None) -> dict[str, str]:
    props = {
        "process.roles": "broker,controller",
        "node.id": str(NODE_ID),
        "controller.quorum.voters": f"{NODE_ID}@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(log_dir),
        **DEFAULT_CONFIG,
    }
    props.update(extra or {})
    return props


def _jvm(classpath: str, directory: Path, heap: str) -> list[str]:
    return [java_executable(), f"-Xmx{heap}", "-Xms128m", *SHORT_LIVED_JVM,
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={directory / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={directory}", "-cp", classpath]


# The tools' own logging: warnings to stderr, so stdout holds only what the command prints
# (log4j2's default configuration would log errors to stdout).
_TOOLS_LOG4J2 = """\
status = warn
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = err
"""


def tool_command(broker: Broker, main_class: str, *args: str) -> list[str]:
    """The command line of one of Kafka's tools (its class) for `broker`: on the broker's
    class path, with the broker's java, `--bootstrap-server` given."""
    config = broker.directory / "tools-log4j2.properties"
    if not config.is_file():
        config.write_text(_TOOLS_LOG4J2)
    return [java_executable(), "-Xmx256m", *SHORT_LIVED_JVM, "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={config}", "-cp",
            broker_classpath(), main_class, "--bootstrap-server", broker.bootstrap_servers,
            *args]


def kafka_tool(broker: Broker, main_class: str, *args: str, timeout_s: float = 120.0) -> str:
    """What one of Kafka's command-line tools prints (its stdout) for `broker`: the tool's
    class (`CONSUMER_GROUP_COMMAND`, ...), run on the broker's class path with the broker's
    java, `--bootstrap-server` given."""
    proc = subprocess.run(tool_command(broker, main_class, *args), capture_output=True,
                          text=True, timeout=timeout_s, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{main_class.rsplit('.', 1)[-1]} {' '.join(args)} failed "
                           f"({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc.stdout


def describe_consumer_groups(broker: Broker, timeout_s: float = 120.0) -> str:
    """What `kafka-consumer-groups --describe --all-groups` prints (its stdout) for `broker`."""
    return kafka_tool(broker, CONSUMER_GROUP_COMMAND, "--describe", "--all-groups",
                      timeout_s=timeout_s)


def format_storage(classpath: str, directory: Path, config: Path, cluster_id: str) -> None:
    cmd = [*_jvm(classpath, directory, "256m"), "kafka.tools.StorageTool", "format",
           "-t", cluster_id, "-c", str(config)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"kafka-storage format failed ({proc.returncode}):\n"
                           f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


_METADATA, _METADATA_VERSION = 3, 4  # Kafka's Metadata API; v4 is the oldest Kafka 4 answers


def _metadata_request(correlation: int) -> bytes:
    """A Metadata v4 request (header v1) asking about no topic: its answer lists the brokers
    the cluster serves from, which a broker joins once it is registered and unfenced."""
    client = b"cgr-wait-ready"
    body = (struct.pack(">hhih", _METADATA, _METADATA_VERSION, correlation, len(client))
            + client + struct.pack(">ib", 0, 0))  # no topics; no auto-creation
    return struct.pack(">i", len(body)) + body


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise OSError("the broker closed the connection")
        data += chunk
    return data


def serving_brokers(bootstrap: str, timeout_s: float = 2.0) -> list[int]:
    """The node ids a broker's Metadata answer lists (raises OSError when it cannot answer)."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(_metadata_request(1))
        (size,) = struct.unpack(">i", _read_exactly(sock, 4))
        answer = _read_exactly(sock, size)
    correlation, _throttle, count = struct.unpack_from(">iii", answer, 0)
    if correlation != 1:
        raise OSError(f"a Metadata answer to another request ({correlation})")
    at, nodes = 12, []
    for _ in range(count):  # node_id, host, port, rack (nullable)
        (node,) = struct.unpack_from(">i", answer, at)
        (host_len,) = struct.unpack_from(">h", answer, at + 4)
        at += 6 + host_len + 4
        (rack_len,) = struct.unpack_from(">h", answer, at)
        at += 2 + max(rack_len, 0)
        nodes.append(node)
    return nodes


def wait_ready(broker: Broker, timeout_s: float = 120.0) -> None:
    """Wait until the broker serves: its own answer to Kafka's Metadata request lists it
    (a broker is listed once it has caught up with the metadata log and been unfenced).
    Raise with the log tail if the JVM exits first or the deadline passes."""
    deadline = time.monotonic() + timeout_s
    last = "no answer yet"
    while time.monotonic() < deadline:
        if broker.process.poll() is not None:
            raise RuntimeError(f"the Kafka broker exited with {broker.process.returncode} "
                               f"while starting:\n{broker.log_tail()}")
        try:
            nodes = serving_brokers(broker.bootstrap_servers)
            if NODE_ID in nodes:
                return
            last = f"Metadata lists brokers {nodes}, not {NODE_ID} yet"
        except (OSError, struct.error) as exc:
            last = f"Metadata not answered: {exc}"
        with contextlib.suppress(subprocess.TimeoutExpired):  # ends at once if the JVM exits
            broker.process.wait(0.25)
    raise TimeoutError(f"Kafka broker on {broker.bootstrap_servers} not ready after "
                       f"{timeout_s:.0f}s ({last}):\n{broker.log_tail()}")


def stop(broker: Broker, timeout_s: float = 60.0) -> None:
    """Controlled shutdown (SIGTERM); SIGKILL only if it does not finish within `timeout_s`."""
    if broker.process.poll() is not None:
        return
    broker.process.send_signal(signal.SIGTERM)
    try:
        broker.process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        broker.process.kill()
        broker.process.wait(30)


@contextmanager
def kafka_broker(directory: Path | None = None, *, config: Mapping[str, str] | None = None,
                 heap: str = "768m", startup_timeout_s: float = 180.0) -> Iterator[Broker]:
    """Start a fresh single-node KRaft cluster, yield it ready, stop it on exit.

    `directory` holds the log dirs, config and `server.log` (a temporary folder, removed after,
    when None). `config` adds or overrides broker settings.
    """
    java_executable()  # a missing Java said plainly, before Maven fetches the broker's JARs
    owned = directory is None
    root = Path(tempfile.mkdtemp(prefix="kafka-")) if directory is None else Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    try:
        classpath = broker_classpath()
        port, controller_port = free_ports(2)
        props = server_properties(root / "data", port, controller_port, config)
        config_path = root / "server.properties"
        config_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (root / "log4j2.properties").write_text(_LOG4J2.format(log=root / "server.log"))
        cluster_id = random_cluster_id()
        format_storage(classpath, root, config_path, cluster_id)
        with (root / "stdout.log").open("wb") as out:
            process = subprocess.Popen(
                [*_jvm(classpath, root, heap), "kafka.Kafka", str(config_path)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        broker = Broker(f"127.0.0.1:{port}", controller_port, cluster_id, root, process)
        try:
            wait_ready(broker, startup_timeout_s)
            yield broker
        finally:
            stop(broker)
    finally:
        if owned:
            shutil.rmtree(root, ignore_errors=True)


def main() -> int:  # pragma: no cover - manual use
    with kafka_broker() as broker:
        print(f"Kafka {KAFKA_VERSION} on {broker.bootstrap_servers} "
              f"(cluster {broker.cluster_id}, files in {broker.directory}); Ctrl-C stops it",
              flush=True)
        try:
            while broker.process.poll() is None:
                broker.process.wait(3600)
        except (KeyboardInterrupt, subprocess.TimeoutExpired):
            pass
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
