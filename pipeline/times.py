"""Event times as users type them: ISO-8601, UTC unless an offset is given."""

from __future__ import annotations

from datetime import UTC, datetime


def event_time_ms(text: str) -> int:
    """An ISO-8601 time (naive means UTC) as epoch milliseconds; ValueError if it is not one."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"not an ISO-8601 time: {text!r} (e.g. 2026-11-17T03:12:00)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)
