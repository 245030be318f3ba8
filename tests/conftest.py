"""How the suite splits across pytest-xdist workers (`tests/run.sh` runs two): a file's tests
stay on one worker, so a module's fixture (a generated warehouse, a demo replay) is built
once; every file under tests/kafka goes with the others, so one broker and one client
workload serve them all. Without xdist the marks change nothing."""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)  # before xdist reads the marks (--dist loadgroup)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        group = "kafka" if path.startswith("tests/kafka/") else path
        item.add_marker(pytest.mark.xdist_group(group))
