"""The picture of one group: stacked panels over event time, one shared x axis.

Top to bottom: member lanes (`membership.lanes`, from group_history) with what each
member owned, generations and rebalances as spans labelled with cause and duration, the
state as a step line (with the member count at each state change), partitions moved by
each rebalance, consumer lag when the warehouse has it (`pipeline.report.lag`), committed
offset per topic-partition (tombstones and expiry marked), and refused rows by reason.
Rebalance spans are shaded faintly across every panel so a change lines up with its cause.
Drawn on matplotlib's Agg canvas directly (no pyplot): no global figure state, nothing to
close, no display needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.dates as mdates
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from pipeline.report import lag as lag_panels
from pipeline.report.membership import Lane, Span
from pipeline.report.style import (
    CAUSE_COLORS,
    STATE_COLORS,
    STATES,
    cause_color,
    duration_text,
    plain,
    reason_label,
    short,
    tick_format,
    topic_cmaps,
)

WIDTH_IN, DPI = 16.0, 100
LANE_IN, MAX_LANES = 0.24, 60
PARTITION_IN, MAX_PARTITIONS = 0.16, 80
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


@dataclass(frozen=True)
class Window:
    start: pd.Timestamp
    end: pd.Timestamp

    @property
    def span(self) -> pd.Timedelta:
        return self.end - self.start

    def frac(self, fraction: float) -> pd.Timedelta:
        return self.span * fraction


def panel_heights(n_lanes: int, n_reasons: int, n_partitions: int = 12,
                  lag: bool = False) -> dict[str, float]:
    """Inches per panel; the member panel grows with its lanes (up to MAX_LANES), the
    offsets panel with its partitions (up to MAX_PARTITIONS). `lag`: the group has lag
    samples, drawn below the assignment panel."""
    heights = {
        "members": max(1.4, LANE_IN * min(n_lanes, MAX_LANES) + 0.5),
        "generations": 1.5,
        "state": 1.5,
        "assignment": 1.3,
        **(lag_panels.HEIGHTS if lag else {}),
        "commits": max(1.4, PARTITION_IN * min(n_partitions, MAX_PARTITIONS) + 0.5),
    }
    if n_reasons:
        heights["refused"] = 0.4 + 0.22 * n_reasons
    return heights


def new_figure(heights: dict[str, float]) -> tuple[Figure, dict[str, Axes]]:
    top_in, bottom_in, gap_in = 1.2, 0.6, 0.32
    total = top_in + bottom_in + sum(heights.values()) + gap_in * (len(heights) - 1)
    fig = Figure(figsize=(WIDTH_IN, total), dpi=DPI)
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(len(heights), 1, height_ratios=list(heights.values()),
                            left=0.16, right=0.84, top=1 - top_in / total,
                            bottom=bottom_in / total,
                            hspace=gap_in / (sum(heights.values()) / len(heights)))
    axes: dict[str, Axes] = {}
    first: Axes | None = None
    for i, name in enumerate(heights):
        ax = fig.add_subplot(grid[i], sharex=first, label=name)
        first = first or ax
        axes[name] = ax
        ax.grid(axis="x", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        if i < len(heights) - 1:
            ax.tick_params(labelbottom=False)
    return fig, axes


def _heading(ax: Axes, text: str) -> None:
    ax.set_title(text, loc="left", fontsize=9.5, color="#333333", pad=3)


def draw_members(ax: Axes, lanes: Sequence[Lane], w: Window, history: bool = True) -> None:
    """`history`: whether the group has group_history rows (an older warehouse has none)."""
    shown = list(lanes[:MAX_LANES])
    more = len(lanes) - len(shown)
    note = f" (first {MAX_LANES} of {len(lanes)} drawn)" if more else ""
    _heading(ax, f"Members{note}, from group_history: dark = owns partitions (how many), "
                 "pale = owns none;  | assignment changed;  ▶ joined;  ✕ removed "
                 "(coloured by why it left: group_history.departures)")
    for y, lane in enumerate(shown):
        color = "#2a9d8f" if lane.static else "#4872b8"
        for s in lane.spans:
            _draw_span(ax, y, s, color, lane.key, w)
    ax.set_ylim(max(len(shown), 1) - 0.5, -0.5)
    ax.set_yticks(range(len(shown)))
    size = 8 if len(shown) <= 30 else 6.5
    ax.set_yticklabels([plain(short(lane.key)) + (" ⚓" if lane.static else "")
                        for lane in shown], fontsize=size)
    if not shown:
        text = ("no member in this window" if history else
                "no group_history table: replay the log again to draw the members")
        ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center",
                color="#777777")
        ax.set_yticks([])
    ax.tick_params(axis="y", length=0)


def _draw_span(ax: Axes, y: int, s: Span, color: str, key: str, w: Window) -> None:
    """One stay: a bar per assignment it held, ticks where that changed, join and removal."""
    bounds = [t for t, _ in s.assignments[1:]] + [s.end]
    for (a, owned), b in zip(s.assignments or [(s.start, 0)], bounds, strict=True):
        ax.broken_barh([(a, max(b - a, w.frac(0.002)))], (y - 0.32, 0.64), facecolors=color,
                       alpha=1.0 if owned else 0.3, linewidth=0, gid=f"lane:{key}")
        seen_a, seen_b = max(a, w.start), min(b, w.end)  # label the part in the window
        if owned and seen_b - seen_a > w.frac(0.012) * len(str(owned)):
            ax.text(seen_a + (seen_b - seen_a) / 2, y, str(owned), ha="center", va="center",
                    fontsize=6.5, color="white", clip_on=True, gid="partitions-owned")
    for t, _ in s.assignments[1:]:
        ax.plot([t, t], [y - 0.42, y + 0.42], color="#1d3557", linewidth=1.1,
                gid="assignment-change")
    ax.plot([s.start], [y], marker=">", color="#1d3557", markersize=5, gid="join")
    if not s.current:
        ax.plot([s.end], [y], marker="x", markersize=6, markeredgewidth=1.8, gid="removal",
                color=cause_color(s.end_cause) if s.end_cause else "#555555")


def draw_generations(ax: Axes, rebalances: pd.DataFrame, transitions: pd.DataFrame,
                     w: Window) -> None:
    _heading(ax, "Generations and rebalances (span from start to completion; cause, duration)")
    ax.set_ylim(0, 1)
    ax.set_yticks([])
    ax.spines["left"].set_visible(False)
    min_width = w.frac(0.003)
    last_label: pd.Timestamp | None = None
    for i, r in enumerate(rebalances.itertuples(index=False)):
        start = r.started_at if pd.notna(r.started_at) else r.completed_at
        color = cause_color(r.cause)
        ax.axvspan(start, max(r.completed_at, start + min_width), color=color, alpha=0.85,
                   linewidth=0, gid=f"rebalance:{i}")
        outcome = "" if r.outcome == "COMPLETED" else f" {r.outcome}"
        label = f"{r.cause}{outcome}"
        if pd.notna(r.duration_ms):
            label += f" · {duration_text(r.duration_ms)}"
        if last_label is not None and start - last_label < w.frac(0.011):
            continue  # too close to the previous label to be read: its colour still says the cause
        last_label = start
        ax.text(start - w.frac(0.001), 0.96, plain(label), rotation=90, ha="right", va="top",
                fontsize=7.5, color="#222222", clip_on=True)
    bands = _generation_bands(rebalances, transitions, w)
    for gen, a, b in bands:
        if b - a > w.frac(0.045):
            ax.text(a + (b - a) / 2, 0.12, f"gen {gen}", ha="center", va="bottom",
                    fontsize=8, color="#555555")
    ax.axhline(0.05, color="#bbbbbb", linewidth=0.8)


def _generation_bands(rebalances: pd.DataFrame, transitions: pd.DataFrame,
                      w: Window) -> list[tuple[int, pd.Timestamp, pd.Timestamp]]:
    """Each generation's life: from the rebalance that made it to the next one's start."""
    done = rebalances[rebalances["outcome"] != "ABANDONED"]
    bands = []
    rows = list(done.itertuples(index=False))
    for i, r in enumerate(rows):
        nxt = w.end
        if i + 1 < len(rows):
            n = rows[i + 1]
            nxt = n.started_at if pd.notna(n.started_at) else n.completed_at
        if pd.notna(r.generation_id):
            bands.append((int(r.generation_id), r.completed_at, max(nxt, r.completed_at)))
    return bands


def draw_state(ax: Axes, transitions: pd.DataFrame, w: Window) -> None:
    _heading(ax, "State (step line) and member count at each state change (grey, right axis)")
    levels = {s: i for i, s in enumerate(STATES)}
    t = transitions[transitions["to_state"].isin(levels)]
    if not t.empty:
        xs = list(t["event_time"]) + [w.end]
        ys = [levels[s] for s in t["to_state"]] + [levels[t["to_state"].iloc[-1]]]
        ax.step(xs, ys, where="post", color="#444444", linewidth=1.3, gid="state")
        ax.scatter(t["event_time"], [levels[s] for s in t["to_state"]], s=16, zorder=3,
                   c=[STATE_COLORS[s] for s in t["to_state"]], gid="state-changes")
        count = ax.twinx()
        count.step(xs, list(t["member_count"]) + [t["member_count"].iloc[-1]], where="post",
                   color="#9a9a9a", linewidth=1, linestyle="--", gid="member-count")
        count.set_ylim(bottom=0, top=max(1, int(t["member_count"].max())) * 1.15)
        count.tick_params(labelsize=8, colors="#777777")
        count.spines["top"].set_visible(False)
        count.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(-0.5, len(STATES) - 0.5)
    ax.set_yticks(range(len(STATES)))
    ax.set_yticklabels(STATES, fontsize=8)
    for label, s in zip(ax.get_yticklabels(), STATES, strict=True):
        label.set_color(STATE_COLORS[s])


def moved_and_total(rebalances: pd.DataFrame) -> tuple[pd.Series, pd.Series, str]:
    """What each rebalance moved and what was assigned after it, as whole numbers, and what
    they count: partitions, or a streams group's active tasks (its rows' partition columns
    null, the `active_tasks_*` ones set)."""
    tasks = rebalances["partitions_total"].isna() & rebalances["active_tasks_total"].notna()

    def counted(partitions: str, active_tasks: str) -> pd.Series:
        values = rebalances[partitions].where(~tasks, rebalances[active_tasks])
        return pd.to_numeric(values, errors="coerce").fillna(0).astype(int)
    unit = ("active tasks" if len(tasks) and tasks.all() else
            "partitions / active tasks" if tasks.any() else "partitions")
    return (counted("partitions_moved", "active_tasks_moved"),
            counted("partitions_total", "active_tasks_total"), unit)


def draw_assignment(ax: Axes, rebalances: pd.DataFrame, w: Window) -> None:
    moved, total, unit = moved_and_total(rebalances)
    _heading(ax, f"Assignment: {unit} moved by each rebalance (dark) of those assigned "
                 "after it (light);  +joined −left members")
    done = rebalances
    width = w.frac(0.006)
    ax.bar(done["completed_at"], total, width=width, color="#cfd8e3",
           align="center", gid="partitions-total")
    ax.bar(done["completed_at"], moved, width=width, color="#3d5a80",
           align="center", gid="partitions-moved")
    top = max(1, int(total.max()) if len(done) else 1)
    ax.set_ylim(0, top * 1.9)
    placed: list[tuple[pd.Timestamp, float]] = []
    for r, n_moved, n_total in zip(done.itertuples(index=False), moved, total, strict=True):
        # Labels of rebalances close in time are stacked rather than drawn over each other.
        y = n_total + top * 0.04
        for x, used in placed:
            if abs(r.completed_at - x) < w.frac(0.03) and abs(used - y) < top * 0.35:
                y = used + top * 0.4
        placed.append((r.completed_at, y))
        ax.text(r.completed_at, y,
                f"{n_moved}/{n_total}\n+{r.members_joined} −{r.members_left}",
                ha="center", va="bottom", fontsize=6.5, color="#333333", linespacing=0.95,
                clip_on=True)
    ax.set_ylabel(unit, fontsize=8)
    ax.tick_params(axis="y", labelsize=8)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))


def draw_commits(ax: Axes, history: pd.DataFrame, w: Window) -> list[str]:
    """A heat strip: a row per topic-partition, shaded from light (the lowest offset it
    committed) to dark (its highest), so partitions of any size read alike; a commit below
    the partition's previous one (a reset, a rewind) is marked, as are deletions."""
    parts = list(history.groupby(["topic", "partition"], sort=True))
    shown = parts[:MAX_PARTITIONS]
    note = f" (first {MAX_PARTITIONS} of {len(parts)} drawn)" if len(parts) > MAX_PARTITIONS else ""
    _heading(ax, f"Committed offsets{note}: a row per topic-partition, light = its lowest "
                 "offset, dark = its highest (last offset at the right);  ◆ offset went back")
    cmaps = topic_cmaps(history)
    marks = {"TOMBSTONE": ("X", "#c1121f", "tombstone"), "EXPIRED": ("v", "#000000", "expired"),
             "TXN_ABORTED": ("o", "#e76f51", "transaction aborted")}
    seen: set[str] = set()
    partitions: list[str] = []
    for y, ((topic, partition), rows) in enumerate(shown):
        name = f"{topic}-{partition}"
        partitions.append(name)
        committed = rows["committed_offset"].where(rows["change"] == "COMMIT")
        lo, hi = committed.min(), committed.max()
        ends = list(rows["event_time"].iloc[1:]) + [w.end]
        spans, colors = [], []
        for t, end, offset in zip(rows["event_time"], ends, committed, strict=True):
            if pd.isna(offset):
                continue  # deleted: no offset until the next commit
            spans.append((t, max(end - t, w.frac(0.001))))
            level = 1.0 if hi == lo else (offset - lo) / (hi - lo)
            colors.append(cmaps[topic](0.15 + 0.8 * level))
        ax.broken_barh(spans, (y - 0.4, 0.8), facecolors=colors, linewidth=0,
                       gid=f"partition:{name}")
        back = _regressions(committed)
        if back.any():
            ax.scatter(rows.loc[back, "event_time"], [y] * int(back.sum()), marker="D", s=22,
                       color="#c1121f", edgecolors="white", linewidths=0.5, zorder=4,
                       gid="regression")
            seen.add("offset went back")
        for change, (marker, color, label) in marks.items():
            hit = rows["change"] == change
            if hit.any():
                ax.scatter(rows.loc[hit, "event_time"], [y] * int(hit.sum()), marker=marker,
                           s=30, zorder=4, gid=label, edgecolors=color,
                           facecolors="none" if marker == "o" else color)
                seen.add(label)
        if committed.notna().any():
            ax.text(1.005, y, f"{int(committed.dropna().iloc[-1]):,}", va="center", ha="left",
                    fontsize=6.5, color="#555555", transform=ax.get_yaxis_transform())
    ax.set_ylim(max(len(shown), 1) - 0.5, -0.5)
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([plain(short(p, 24)) for p in partitions],
                       fontsize=7 if len(shown) <= 30 else 5.5)
    ax.tick_params(axis="y", length=0)
    handles: list[Line2D | Patch] = [Patch(color=cmaps[t](0.7), label=plain(t))
                                     for t in sorted(cmaps)]
    if "offset went back" in seen:
        handles.append(Line2D([], [], marker="D", linestyle="none", color="#c1121f",
                              label="offset went back"))
    handles += [Line2D([], [], marker=m, linestyle="none", color=c, label=label)
                for m, c, label in marks.values() if label in seen]
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.05, 1.0), fontsize=7.5,
                  frameon=False, title="topics", title_fontsize=8)
    if history.empty:
        ax.text(0.5, 0.5, "no offset changes in this window", transform=ax.transAxes,
                ha="center", va="center", color="#777777")
        ax.set_yticks([])
    return partitions


def _regressions(committed: pd.Series) -> pd.Series:
    """Commits below the partition's previous committed offset (deletions in between are
    skipped: a commit after a tombstone is compared with the one before it)."""
    previous = committed.ffill().shift(1)
    return (committed < previous).fillna(False).astype(bool)


def draw_refused(ax: Axes, rejected: pd.DataFrame) -> None:
    _heading(ax, "Refused or malformed rows, by reason")
    counts = rejected["reason"].value_counts()
    reasons = list(counts.index)
    for y, reason in enumerate(reasons):
        times = rejected.loc[rejected["reason"] == reason, "event_time"]
        ax.plot(times, [y] * len(times), linestyle="none", marker="|", markersize=9,
                markeredgewidth=1.4, color="#c1121f", gid=f"refused:{reason}")
    ax.set_ylim(len(reasons) - 0.5, -0.5)
    ax.set_yticks(range(len(reasons)))
    ax.set_yticklabels([plain(reason_label(r)) + f" ({counts[r]})" for r in reasons],
                       fontsize=7.5)
    ax.tick_params(axis="y", length=0)


def shade_rebalances(axes: dict[str, Axes], rebalances: pd.DataFrame, w: Window) -> None:
    for name, ax in axes.items():
        if name == "generations" or name in lag_panels.HEIGHTS:
            continue  # these draw the rebalances themselves, more strongly
        for r in rebalances.itertuples(index=False):
            start = r.started_at if pd.notna(r.started_at) else r.completed_at
            ax.axvspan(start, max(r.completed_at, start + w.frac(0.003)),
                       color=cause_color(r.cause), alpha=0.12, linewidth=0, zorder=0)


def cause_legend(ax: Axes, rebalances: pd.DataFrame) -> None:
    causes = [c for c in CAUSE_COLORS if c in set(rebalances["cause"])]
    causes += sorted(set(rebalances["cause"]) - set(causes))
    if causes:
        ax.legend(handles=[Patch(color=cause_color(c), label=plain(c)) for c in causes],
                  loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7.5, frameon=False,
                  title="rebalance cause", title_fontsize=8)


def time_axis(ax: Axes, w: Window) -> None:
    pad = w.frac(0.01)
    ax.set_xlim(w.start - pad, w.end + pad)
    locator = mdates.AutoDateLocator(minticks=6, maxticks=14)  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_locator(locator)
    # One format for every tick (matplotlib's concise formatter mixes `40`, `22:14` and a
    # date offset); the date, when the window lies in one day, goes in the axis label.
    ax.xaxis.set_major_formatter(
        mdates.DateFormatter(tick_format(w.span)))  # type: ignore[no-untyped-call]
    ax.tick_params(axis="x", labelsize=8)


def bottom_label(ax: Axes, w: Window) -> None:
    day = f", {w.start:%Y-%m-%d}" if w.start.date() == w.end.date() else ""
    ax.set_xlabel(f"event time (UTC{day})", fontsize=8.5)
