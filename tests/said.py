"""A logging handler that keeps what was said: for a module fixture's log lines, which
pytest's caplog (per test) does not see."""

from __future__ import annotations

import logging


class Said(logging.Handler):
    """The messages logged to the logger it is added to, at INFO and above."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
