"""Event times as users type them (ISO-8601, UTC unless an offset is given), and the range
of times the replay can hold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

# The stream hands rows to the fold as pandas frames, whose timestamps are int64 nanoseconds:
# epoch milliseconds outside this range (the years 1677-2262) cannot reach the fold.
PANDAS_MS_RANGE = (-(2**63) // 1_000_000 + 1, (2**63 - 1) // 1_000_000)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def event_time_ms(text: str) -> int:
    """An ISO-8601 time (naive means UTC) as epoch milliseconds; ValueError if it is not one."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"not an ISO-8601 time: {text!r} (e.g. 2026-11-17T03:12:00)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - EPOCH) // _MS  # exact: a float of seconds loses milliseconds far out


def utc_datetime(ms: int) -> datetime:
    """Epoch milliseconds as an aware UTC datetime, exactly, for any year 1-9999."""
    return EPOCH + ms * _MS


def clamp_ms(ms: int) -> int:
    """`ms` moved into the times the replay can hold (`PANDAS_MS_RANGE`): no row lies outside
    it, so a bound beyond it selects the same rows as the range's end."""
    return min(max(ms, PANDAS_MS_RANGE[0]), PANDAS_MS_RANGE[1])


def ms_text(ms: int | None) -> str:
    """Epoch milliseconds as an ISO-8601 UTC time for a log line ('-' for none)."""
    if ms is None:
        return "-"
    return utc_datetime(ms).isoformat(timespec="milliseconds").replace("+00:00", "Z")
