"""`render`: one group's output tables in, a PNG (or an HTML page around it) out."""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pipeline.fold.states import EMPTY
from pipeline.report import draw
from pipeline.report import lag as lag_panels
from pipeline.report.frames import group_frames, parse_time, time_range
from pipeline.report.membership import Lane, lanes
from pipeline.report.style import NULL, is_null, plain, span_text

REFUSED_COLUMNS = ("event_time", "log_partition", "log_offset", "event_type", "member_id",
                   "group_instance_id", "generation_id", "topic", "partition", "reason",
                   "group_state")


@dataclass(frozen=True)
class Picture:
    """What was drawn, for callers and tests: the file, its size and what each panel holds."""

    path: Path
    size_px: tuple[int, int]  # width, height
    start: pd.Timestamp
    end: pd.Timestamp
    lanes: list[Lane]
    partitions: list[str]
    rebalances: int
    refused: int
    figure: Figure
    lag_samples: int = 0  # group_lag rows drawn: 0 means no lag panel (no --end-offsets)
    lag_partitions: list[str] = field(default_factory=list)  # partitions given their own line


def render(tables: Mapping[str, pd.DataFrame], group_id: str,
           start: str | pd.Timestamp | None = None, end: str | pd.Timestamp | None = None,
           *, path: str | Path) -> Picture:
    """Draw `group_id`'s history between `start` and `end` (default: all of it) to `path`.

    `tables` maps output table names (and the lag tables' `partition_lag`, `group_lag`) to
    frames (other groups' rows are ignored). A group with group_lag rows in the window gets
    the lag panels. `path` ending in `.html` gets a page with the picture embedded and tables
    of the members and committed offsets now, the rebalances, the refused rows and the
    newest lag samples; anything else gets a PNG.
    """
    out = Path(path)
    t = group_frames(tables, group_id)
    full = time_range(t)
    if full is None:
        raise LookupError(f"group {group_id!r} has no rows in the tables")
    w = _window(full, parse_time(start, "start"), parse_time(end, "end"))
    shown = _windowed(t, w)
    member_lanes = [lane for lane in lanes(t, full[1]) if _overlaps(lane, w)]
    reasons = shown["rejected_events"]["reason"].nunique()
    n_parts = len(shown["offset_history"].groupby(["topic", "partition"]))
    n_lag = len(shown["group_lag"])
    fig, axes = draw.new_figure(draw.panel_heights(len(member_lanes), reasons, n_parts,
                                                   lag=n_lag > 0))
    draw.draw_members(axes["members"], member_lanes, w, history=not t["group_history"].empty)
    draw.draw_generations(axes["generations"], shown["rebalances"], shown["group_transitions"], w)
    draw.cause_legend(axes["generations"], shown["rebalances"])
    draw.draw_state(axes["state"], t["group_transitions"], w)
    draw.draw_assignment(axes["assignment"], shown["rebalances"], w)
    partitions = draw.draw_commits(axes["commits"], shown["offset_history"], w)
    lag_partitions = _draw_lag(axes, t, shown, w) if n_lag else []
    if reasons:
        draw.draw_refused(axes["refused"], shown["rejected_events"])
    draw.shade_rebalances(axes, shown["rebalances"], w)
    draw.time_axis(axes["members"], w)
    draw.bottom_label(list(axes.values())[-1], w)
    _title(fig, group_id, t, shown, w, len(member_lanes), len(partitions))
    _write(out, fig, group_id, t, shown, w)
    width, height = (round(v * draw.DPI) for v in fig.get_size_inches())
    return Picture(out, (width, height), w.start, w.end, member_lanes, partitions,
                   len(shown["rebalances"]), len(shown["rejected_events"]), fig, n_lag,
                   lag_partitions)


def _write(out: Path, fig: Figure, group_id: str, t: dict[str, pd.DataFrame],
           shown: dict[str, pd.DataFrame], w: draw.Window) -> None:
    """The PNG to `out`, or the page around it when `out` ends in .html."""
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=draw.DPI)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() in (".html", ".htm"):
        out.write_text(_page(group_id, png.getvalue(), t, shown, w), encoding="utf-8")
    else:
        out.write_bytes(png.getvalue())


def _draw_lag(axes: dict[str, Axes], t: dict[str, pd.DataFrame],
              shown: dict[str, pd.DataFrame], w: draw.Window) -> list[str]:
    """The lag panels; the Empty stretches are read from all the history, so one that began
    before the window is shaded from the window's start."""
    rebalances = lag_panels.rebalance_periods(shown["rebalances"], w.frac(0.003))
    empty = lag_panels.state_periods(t, EMPTY, w.start, w.end)
    names = lag_panels.draw_lag(axes["lag"], shown["group_lag"], shown["partition_lag"],
                                rebalances, empty)
    lag_panels.draw_time_lag(axes["lag_time"], shown["group_lag"], rebalances, empty)
    return names


def _window(full: tuple[pd.Timestamp, pd.Timestamp], start: pd.Timestamp | None,
            end: pd.Timestamp | None) -> draw.Window:
    s, e = start or full[0], end or full[1]
    if e < s or (e == s and start is not None and end is not None):
        raise ValueError(f"the time range is empty: from {s} to {e}")
    if e == s:  # a group seen at one instant only
        s, e = s - pd.Timedelta(seconds=1), e + pd.Timedelta(seconds=1)
    return draw.Window(s, e)


def _windowed(t: dict[str, pd.DataFrame], w: draw.Window) -> dict[str, pd.DataFrame]:
    """The rows inside the window; for offsets, also each partition's last change before it."""
    def inside(df: pd.DataFrame, column: str) -> pd.DataFrame:
        return df[(df[column] >= w.start) & (df[column] <= w.end)]

    history = t["offset_history"]
    before = history[history["event_time"] < w.start].groupby(["topic", "partition"]).tail(1)
    reb = t["rebalances"]
    started = reb["started_at"].fillna(reb["completed_at"])
    return {
        **t,
        "group_transitions": inside(t["group_transitions"], "event_time"),
        "rebalances": reb[(reb["completed_at"] >= w.start) & (started <= w.end)],
        "offset_history": pd.concat([before, inside(history, "event_time")]),
        "rejected_events": inside(t["rejected_events"], "event_time"),
        "partition_lag": inside(t["partition_lag"], "sampled_at"),
        "group_lag": inside(t["group_lag"], "sampled_at"),
    }


def _overlaps(lane: Lane, w: draw.Window) -> bool:
    return any(s.start <= w.end and s.end >= w.start for s in lane.spans)


def _title(fig: Figure, group_id: str, t: dict[str, pd.DataFrame],
           shown: dict[str, pd.DataFrame], w: draw.Window, n_lanes: int, n_parts: int) -> None:
    fmt = draw.TIME_FORMAT
    commits = int((shown["offset_history"]["event_time"] >= w.start).sum())
    facts = [f"{n_lanes} member lanes", f"{len(shown['rebalances'])} rebalances",
             f"{commits} offset changes on {n_parts} partitions",
             f"{len(shown['rejected_events'])} refused rows"]
    samples = shown["group_lag"]
    if len(samples):
        last = samples.iloc[-1]  # kept short: the facts line is nearly full
        facts.append(f"{len(samples)} lag samples (last {last['status']})")
    state = t["group_state"]
    if len(state):
        now = state.iloc[-1]
        facts.append(f"last state {now['state']}, generation {now['generation_id']} "
                     f"({now['log_kind']} log)")
    fig.suptitle(f"Consumer group {plain(group_id)}", x=0.16, y=1 - 0.12 / fig.get_figheight(),
                 ha="left", va="top", fontsize=15, fontweight="bold")
    fig.text(0.16, 1 - 0.5 / fig.get_figheight(),
             f"{w.start:{fmt}} → {w.end:{fmt}} UTC  ({span_text(w.span)})\n"
             + "   ·   ".join(facts), ha="left", va="top", fontsize=10, color="#333333",
             linespacing=1.5)


MEMBER_COLUMNS = ("member_id", "group_instance_id", "client_id", "client_host",
                  "session_timeout_ms", "rebalance_timeout_ms", "subscription", "assignment",
                  "joined_at", "last_heartbeat")
LAG_COLUMNS = ("sampled_at", "state", "generation_id", "total_lag", "max_lag", "max_lag_ms",
               "catch_up_ms", "lost_records", "loss_eta_ms", "partitions", "partitions_unknown",
               "status", "worst_topic", "worst_partition",
               "worst_status", "cause", "cause_detail", "cause_since")
LAG_ROWS = 50  # the page lists the newest samples: a long window has thousands
OFFSET_COLUMNS = ("topic", "partition", "committed_offset", "leader_epoch", "commit_metadata",
                  "commit_timestamp", "expire_timestamp", "member_id", "generation_id")


def cell(value: object) -> str:
    """A value as the page shows it: a null is always NULL, times to the millisecond, a
    partition list as `topic:0,1`, lists comma-separated."""
    if isinstance(value, list | tuple):
        if value and all(isinstance(v, dict) and "partition" in v for v in value):
            return _partitions(value)
        return ", ".join(cell(v) for v in value)
    tolist = getattr(value, "tolist", None)  # a numpy array, as Spark's toPandas gives
    if tolist is not None and not isinstance(value, str | pd.Timestamp):
        return cell(tolist())
    if is_null(value):
        return NULL
    if isinstance(value, pd.Timestamp):
        return str(value.strftime("%Y-%m-%d %H:%M:%S.%f"))[:-3]
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # an int column pandas made float to hold a null
    return str(value)


def _partitions(tps: list | tuple) -> str:  # type: ignore[type-arg]
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(str(tp["topic"]), []).append(int(tp["partition"]))
    return "; ".join(f"{t}:{','.join(map(str, sorted(ps)))}" for t, ps in sorted(by_topic.items()))


def table_html(df: pd.DataFrame) -> str:
    if df.empty:
        return "<p>none</p>"
    shown = df.astype(object).map(cell)
    return str(shown.to_html(index=False, escape=True, border=0, classes="rows"))


def members_now(t: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The members of the group's current state (group_state), one row each."""
    state = t["group_state"]
    members = state["members"].iloc[-1] if len(state) else []
    return pd.DataFrame([{c: m.get(c) for c in MEMBER_COLUMNS} for m in members],
                        columns=list(MEMBER_COLUMNS))


def offsets_now(t: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The group's committed offsets now: the committed_offsets table, or where it was not
    read, each partition's last offset_history change, if that was a commit."""
    current = t["committed_offsets"]
    if current.empty and not t["offset_history"].empty:
        last = t["offset_history"].groupby(["topic", "partition"], sort=False).tail(1)
        current = last[last["change"] == "COMMIT"]
    return current.sort_values(["topic", "partition"])[list(OFFSET_COLUMNS)]


def lag_section(shown: dict[str, pd.DataFrame]) -> str:
    """The page's table of the newest lag samples, newest first; nothing for a group without
    lag samples (a warehouse replayed without --end-offsets)."""
    samples = shown["group_lag"]
    if samples.empty:
        return ""
    # a warehouse no job of this release has opened yet lacks the newer columns
    newest = samples.iloc[::-1].head(LAG_ROWS)[[c for c in LAG_COLUMNS if c in samples]]
    count = (f"the newest {len(newest)} of {len(samples)}" if len(samples) > len(newest)
             else f"{len(samples)}")
    return f"<h2>Lag samples ({count}, newest first)</h2>\n{table_html(newest)}\n"


def _page(group_id: str, png: bytes, t: dict[str, pd.DataFrame],
          shown: dict[str, pd.DataFrame], w: draw.Window) -> str:
    gid = html.escape(group_id)
    members, offsets = members_now(t), offsets_now(t)
    fmt = draw.TIME_FORMAT
    rebalances = shown["rebalances"].drop(columns=["group_id"])
    refused = shown["rejected_events"][list(REFUSED_COLUMNS)]
    data = base64.b64encode(png).decode("ascii")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Consumer group {gid}</title>
<style>body{{font-family:sans-serif;margin:1.5em}} table.rows{{border-collapse:collapse;
font-size:12px}} table.rows td,table.rows th{{padding:2px 8px;border-bottom:1px solid #ddd;
text-align:left}} img{{max-width:100%}}</style></head><body>
<h1>Consumer group {gid}</h1>
<p>{w.start:{fmt}} → {w.end:{fmt}} UTC; nulls are shown as {NULL}</p>
<img alt="history of consumer group {gid}" src="data:image/png;base64,{data}">
<h2>Members now ({len(members)})</h2>
{table_html(members)}
<h2>Committed offsets now ({len(offsets)})</h2>
{table_html(offsets)}
<h2>Rebalances ({len(rebalances)})</h2>
{table_html(rebalances)}
<h2>Refused rows ({len(refused)})</h2>
{table_html(refused)}
{lag_section(shown)}</body></html>
"""
