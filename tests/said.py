"""A logging handler that keeps what was said: for a module fixture's log lines, which
pytest's caplog (per test) does not see."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


class Said(logging.Handler):
    """The messages logged to the logger it is added to, at INFO and above."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def saying(*loggers: str) -> Iterator[Said]:
    """What `loggers` say at INFO and above within the block (their levels set to INFO, and
    put back after)."""
    said = Said()
    levels = {}
    for name in loggers:
        logger = logging.getLogger(name)
        levels[name] = logger.level
        logger.addHandler(said)
        logger.setLevel(logging.INFO)
    try:
        yield said
    finally:
        for name, level in levels.items():
            logging.getLogger(name).removeHandler(said)
            logging.getLogger(name).setLevel(level)
