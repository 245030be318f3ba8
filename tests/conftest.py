"""Suite-wide collection rules.

How the suite splits across pytest-xdist workers (`tests/run.sh` runs three): a file's tests
stay on one worker, so a module's fixture (a generated warehouse, a demo replay) is built
once; every file under tests/kafka goes with the others, so one broker and one client
workload serve them all; and files that share a session's fixture (`TOGETHER`) go together,
so it is built once. Without xdist the marks change nothing.

Every test that starts a JVM in its own process carries a marker, `spark`, `kafka` or
`cluster` (pyproject.toml): `tests/run.sh --fast` deselects those and runs the rest with no
Java reachable. A test that asks for the Spark session or the broker, directly or through
other fixtures, without one of them stops the collection with its name. A test that starts
a JVM in a subprocess (a job, `spark-submit`) is the fast run's to catch: it fails there.
"""

from __future__ import annotations

import pytest

pytest_plugins = ("pytester",)  # tests/test_markers.py runs this file on a probe suite

JVM_FIXTURES = frozenset({"spark", "broker"})  # tests/spark/conftest.py, tests/kafka/conftest.py
JVM_MARKS = ("spark", "kafka", "cluster")
# Files whose tests share a session fixture: the share-state log and its backfill
# (tests/spark/sharelog.py).
TOGETHER = {"tests/spark/test_share_state.py": "share-state",
            "tests/spark/test_golden_tables.py": "share-state"}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the marks (--dist loadgroup)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    unmarked = [item.nodeid for item in items
                if JVM_FIXTURES & set(getattr(item, "fixturenames", ()))
                and not any(item.get_closest_marker(m) for m in JVM_MARKS)]
    if unmarked:
        message = ("these tests start a JVM (they use the spark or broker fixture) but carry "
                   "no spark/kafka/cluster marker, so `tests/run.sh --fast` would run them: "
                   + ", ".join(unmarked))
        if not hasattr(config, "workerinput"):
            raise pytest.UsageError(message)
        # An xdist worker collects: an exception here reaches no one (xdist reports an
        # internal error instead); a failed session stops the run with the message.
        session.shouldfail = message
        items[:] = []
        return
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        group = "kafka" if path.startswith("tests/kafka/") else TOGETHER.get(path, path)
        item.add_marker(pytest.mark.xdist_group(group))
