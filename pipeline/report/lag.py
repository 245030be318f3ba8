"""The lag panels, drawn when the group has `group_lag` rows in the window (a warehouse
replayed with `--end-offsets`): lag in messages (the group's total, the partition furthest
behind, and the few partitions that fell furthest behind, from `partition_lag`) with
Burrow's WARN and ERR samples marked, and below it the time lag of the partition furthest
behind. Both share the picture's time axis and shade the group's rebalances (started_at to
completed_at, in the cause's colour, as the other panels do) and, hatched grey, the
stretches group_history shows it Empty: the two reasons a group stops consuming.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.legend_handler import HandlerTuple
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import EngFormatter

from pipeline.fold.states import EMPTY
from pipeline.report.membership import history_rows
from pipeline.report.style import STATE_COLORS, cause_color, plain, short
from schemas.lag import ERR, WARN

# Panel name -> height in inches; drawn after the assignment panel, in this order.
HEIGHTS = {"lag": 2.0, "lag_time": 1.3}
WORST_PARTITIONS = 3
STATUS_MARKS = {WARN: "#e9a03b", ERR: "#c1121f"}
PARTITION_COLORS = ("#8e6bbf", "#3f9f98", "#b5658f")
EMPTY_COLOR = STATE_COLORS[EMPTY]
# Markers on every sample while they stay apart; beyond this many they would blur the line.
MAX_MARKED_SAMPLES = 150
Period = tuple[pd.Timestamp, pd.Timestamp]
Handle = Line2D | Patch | tuple[Patch, ...]  # a tuple: swatches side by side in one entry


def _numbers(s: pd.Series) -> pd.Series:
    """A bigint column as floats, nulls as NaN (Spark may give object, Int64 or float)."""
    return pd.to_numeric(s, errors="coerce").astype("float64")


def state_periods(t: Mapping[str, pd.DataFrame], state: str, start: pd.Timestamp,
                  end: pd.Timestamp) -> list[Period]:
    """When the group was in `state`, clipped to start..end: from group_history (a warehouse
    written before it: group_transitions' to_state). A stretch still open runs to `end`."""
    history = t["group_history"]
    if len(history):
        rows = history_rows(history)
        steps = zip(rows["event_time"], rows["state"], strict=True)
    else:
        moves = t["group_transitions"].sort_values(["event_time", "seq"], kind="stable")
        steps = zip(moves["event_time"], moves["to_state"], strict=True)
    out: list[Period] = []
    since: pd.Timestamp | None = None
    for at, now in steps:
        if now == state and since is None:
            since = at
        elif now != state and since is not None:
            out.append((since, at))
            since = None
    if since is not None:
        out.append((since, max(end, since)))
    return [(max(a, start), min(b, end)) for a, b in out if b > a and a <= end and b >= start]


def rebalance_periods(rebalances: pd.DataFrame, w_frac: pd.Timedelta) -> list[tuple[Period, str]]:
    """Each rebalance as (start, completion) and its cause; an instant one gets `w_frac`
    of width, as the generations panel gives it, so it can be seen."""
    out = []
    for r in rebalances.itertuples(index=False):
        start = r.started_at if pd.notna(r.started_at) else r.completed_at
        out.append(((start, max(r.completed_at, start + w_frac)), str(r.cause)))
    return out


def shade(ax: Axes, rebalances: Sequence[tuple[Period, str]], empty: Sequence[Period]) -> None:
    """Rebalances in their cause's colour and Empty stretches hatched, behind the lines."""
    name = ax.get_label()
    for i, ((a, b), cause) in enumerate(rebalances):
        ax.axvspan(a, b, color=cause_color(cause), alpha=0.28, linewidth=0, zorder=0,
                   gid=f"{name}-rebalance:{i}")
    for i, (a, b) in enumerate(empty):
        ax.axvspan(a, b, facecolor=EMPTY_COLOR, alpha=0.22, hatch="///", edgecolor="#5c677d",
                   linewidth=0, zorder=0, gid=f"{name}-empty:{i}")


def worst_partitions(partition_lag: pd.DataFrame, n: int = WORST_PARTITIONS
                     ) -> list[tuple[str, int]]:
    """The `n` partitions with the most lag in the window; none when the group consumes a
    single partition (its line would be the group's total)."""
    lag = partition_lag.assign(lag=_numbers(partition_lag["lag"])).dropna(subset=["lag"])
    most = lag.groupby(["topic", "partition"])["lag"].max()
    if len(most) < 2:
        return []
    most = most[most > 0].sort_values(ascending=False, kind="stable")
    return [(str(topic), int(p)) for topic, p in most.index[:n]]


def _heading(ax: Axes, text: str) -> None:
    ax.set_title(text, loc="left", fontsize=9.5, color="#333333", pad=3)


def _marker(n: int) -> str:
    return "." if n <= MAX_MARKED_SAMPLES else ""


def draw_lag(ax: Axes, group_lag: pd.DataFrame, partition_lag: pd.DataFrame,
             rebalances: Sequence[tuple[Period, str]], empty: Sequence[Period]) -> list[str]:
    """Lag in messages; returns the partitions drawn on their own lines, as `topic-partition`."""
    _heading(ax, "Consumer lag in messages (group_lag, partition_lag), shaded while the group "
                 "rebalanced or was Empty;  ● Burrow's WARN / ERR samples")
    shade(ax, rebalances, empty)
    times, total = group_lag["sampled_at"], _numbers(group_lag["total_lag"])
    mark = _marker(len(group_lag))
    handles: list[Handle] = []
    names = []
    for (topic, partition), color in zip(worst_partitions(partition_lag), PARTITION_COLORS,
                                         strict=False):
        name = f"{topic}-{partition}"
        rows = partition_lag[(partition_lag["topic"] == topic)
                             & (partition_lag["partition"] == partition)]
        handles += ax.plot(rows["sampled_at"], _numbers(rows["lag"]), color=color, linewidth=0.9,
                           alpha=0.9, label=plain(short(name, 24)), gid=f"partition-lag:{name}")
        names.append(name)
    handles += ax.plot(times, _numbers(group_lag["max_lag"]), color="#457b9d", linewidth=1.2,
                       linestyle="--", label="max (worst partition)", gid="max-lag")
    handles += ax.plot(times, total, color="#1d3557", linewidth=1.8, marker=mark, markersize=4,
                       label="total (all partitions)", gid="total-lag")
    lost = _numbers(group_lag["lost_records"]) if "lost_records" in group_lag else None
    if lost is not None and (lost > 0).any():  # records deleted before the group read them
        handles += ax.plot(times, lost, color="#d62828", linewidth=1.4, linestyle=":",
                           label="lost to retention", gid="lost-records")
    handles += _status_marks(ax, group_lag, total)
    ax.set_ylim(bottom=0, top=max(1.0, float(total.max()) if total.notna().any() else 1.0) * 1.15)
    ax.yaxis.set_major_formatter(EngFormatter(sep=""))
    ax.set_ylabel("messages", fontsize=8)
    ax.tick_params(axis="y", labelsize=8)
    if total.isna().all():
        ax.text(0.5, 0.5, "no lag known: no partition of the group had a committed offset",
                transform=ax.transAxes, ha="center", va="center", color="#777777")
    _legend(ax, handles + _shade_handles(rebalances, empty), "lag (messages)")
    return names


def _status_marks(ax: Axes, group_lag: pd.DataFrame, total: pd.Series) -> list[Line2D]:
    """A dot on the total line (at 0 when no lag is known) at each WARN or ERR sample."""
    handles = []
    for status, color in STATUS_MARKS.items():
        hit = (group_lag["status"] == status).to_numpy()
        if hit.any():
            ax.scatter(group_lag["sampled_at"][hit], total[hit].fillna(0), s=30, color=color,
                       edgecolors="white", linewidths=0.6, zorder=4, gid=f"lag-status:{status}")
            handles.append(Line2D([], [], marker="o", linestyle="none", color=color,
                                  label=f"{status} ({int(hit.sum())})"))
    return handles


def _shade_handles(rebalances: Sequence[tuple[Period, str]], empty: Sequence[Period]
                   ) -> list[Handle]:
    causes = list(dict.fromkeys(cause for _, cause in rebalances))
    out: list[Handle] = []
    if causes:  # one swatch per cause, side by side: the colours the other panels use
        out.append(tuple(Patch(color=cause_color(c), alpha=0.4,
                               label="rebalancing (by cause)") for c in causes))
    if empty:
        out.append(Patch(facecolor=EMPTY_COLOR, alpha=0.35, hatch="///", edgecolor="#5c677d",
                         label="Empty (no member)"))
    return out


def _legend(ax: Axes, handles: Sequence[Handle], title: str) -> None:
    labels = [h[0].get_label() if isinstance(h, tuple) else h.get_label() for h in handles]
    ax.legend(handles=list(handles), labels=labels, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              fontsize=7.5, frameon=False, title=title, title_fontsize=8,
              handler_map={tuple: HandlerTuple(ndivide=None, pad=0)})


def time_unit(ms: float) -> tuple[float, str]:
    """The unit a time-lag axis reaching `ms` reads best in: (milliseconds per unit, name)."""
    for per, name, below in ((1000.0, "s", 180_000), (60_000.0, "min", 3 * 3_600_000),
                             (3_600_000.0, "h", 3 * 86_400_000)):
        if ms < below:
            return per, name
    return 86_400_000.0, "days"


def draw_time_lag(ax: Axes, group_lag: pd.DataFrame, rebalances: Sequence[tuple[Period, str]],
                  empty: Sequence[Period]) -> None:
    """How far behind in time the partition furthest behind was (group_lag.max_lag_ms), and
    at the window's rates how long until the group catches up (catch_up_ms), where known."""
    _heading(ax, "Time lag of the partition furthest behind (group_lag.max_lag_ms: how long "
                 "ago the log end stood where its committed offset is); time to catch up")
    shade(ax, rebalances, empty)
    ms = _numbers(group_lag["max_lag_ms"])
    eta = _numbers(group_lag["catch_up_ms"]) if "catch_up_ms" in group_lag else ms * float("nan")
    top = pd.concat([ms, eta]).max()
    per, unit = time_unit(float(top) if pd.notna(top) else 0.0)
    line = ax.plot(group_lag["sampled_at"], ms / per, color="#6a4c93", linewidth=1.5,
                   marker=_marker(len(group_lag)), markersize=3.5, label="max time lag",
                   gid="max-lag-ms")
    if eta.notna().any():
        line += ax.plot(group_lag["sampled_at"], eta / per, color="#2a9d8f", linewidth=1.2,
                        linestyle="--", label="time to catch up (at the window's rates)",
                        gid="catch-up-ms")
    ax.set_ylim(bottom=0, top=max(1.0, float(top) / per if pd.notna(top) else 1.0) * 1.15)
    ax.set_ylabel(unit, fontsize=8)
    ax.tick_params(axis="y", labelsize=8)
    _legend(ax, line, "time lag")
