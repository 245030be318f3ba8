"""Colours, names and text helpers shared by the panels."""

from __future__ import annotations

import pandas as pd
from matplotlib import colormaps
from matplotlib.colors import Colormap

from pipeline.fold.states import COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE

STATES = (EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD)
STATE_COLORS = {
    EMPTY: "#8d99ae", PREPARING_REBALANCE: "#e9a03b", COMPLETING_REBALANCE: "#d17a22",
    STABLE: "#2a9d8f", DEAD: "#2b2d42",
}
# Causes a rebalance can have, grouped by hue: joins blue, rejoins purple, departures red,
# timers orange, snapshots grey.
CAUSE_COLORS = {
    "MEMBER_JOINED": "#4c78a8", "STATIC_MEMBER_REJOINED": "#72b7b2",
    "METADATA_CHANGED": "#9d7cc1", "LEADER_REJOINED": "#6a4c93",
    "MEMBER_LEFT": "#e45756", "STATIC_MEMBER_REMOVED": "#b8393a",
    "SESSION_TIMEOUT": "#f28e2b", "NEW_MEMBER_JOIN_TIMEOUT": "#d4a017",
    "PENDING_SYNC_TIMEOUT": "#c26a00", "SNAPSHOT": "#9a9a9a", "SNAPSHOT_MISMATCH": "#5f5f5f",
}
OTHER_CAUSE = "#b07aa1"
Color = tuple[float, float, float, float]
TOPIC_MAPS = ("Blues", "Oranges", "Greens", "Purples", "Reds", "Greys", "YlOrBr", "PuRd")


def cause_color(cause: str) -> str:
    return CAUSE_COLORS.get(cause, OTHER_CAUSE)


def plain(text: str) -> str:
    """Text shown as given: matplotlib would read `$...$` in a label as math."""
    return str(text).replace("$", r"\$")


def short(text: str, limit: int = 28) -> str:
    """At most `limit` characters, the middle elided: ids differ at both ends."""
    text = str(text)
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return text[:head] + "…" + text[-(limit - 1 - head):]


NULL = "—"  # how a missing value reads, in the picture and in the page's tables


def is_null(value: object) -> bool:
    """None, NaN, NaT and pd.NA; a list or array is a value, even empty."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and value != value


def reason_label(text: str, limit: int = 34) -> str:
    """A refusal reason in at most `limit` characters, cut after a whole word (the reason's
    head names the rule, its tail the values): `MALFORMED: partition must not be…`."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    head = text[:limit - 1]
    cut = max(head.rfind(" "), head.rfind(","), head.rfind(":"))
    return (head[:cut] if cut > 0 else head).rstrip(" ,:") + "…"


def tick_format(span: pd.Timedelta) -> str:
    """One strftime format for every tick of an axis spanning `span`: clock time within a
    day (seconds only when the span is short), the date as well beyond it."""
    if span <= pd.Timedelta(hours=1):
        return "%H:%M:%S"
    if span <= pd.Timedelta(days=1):
        return "%H:%M"
    return "%m-%d %H:%M"


def duration_text(ms: object) -> str:
    if ms is None or pd.isna(ms):
        return "duration unknown"
    seconds = float(ms) / 1000  # type: ignore[arg-type]
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"


def span_text(delta: pd.Timedelta) -> str:
    return duration_text(delta.total_seconds() * 1000)


def topic_cmaps(history: pd.DataFrame) -> dict[str, Colormap]:
    """A colour family per topic (its partitions are shades of it)."""
    topics = sorted({str(t) for t in history["topic"]})
    return {t: colormaps[TOPIC_MAPS[i % len(TOPIC_MAPS)]] for i, t in enumerate(topics)}
