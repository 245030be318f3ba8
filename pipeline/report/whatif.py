"""A what-if's page: the group as recorded above, as the what-if played it below, on one time
axis (each drawn by `render`: member lanes with what each member owned, generations and
rebalances, state, assignment changes), and the runs' summary table on top."""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline.report.frames import TIME_COLUMNS
from pipeline.report.render import render, table_html

Row = Mapping[str, Any]
MEMBERSHIP = ("group_state", "group_history", "group_transitions", "rebalances")


def played_frames(rows: Mapping[str, Sequence[Row]]) -> dict[str, pd.DataFrame]:
    """A simulated run's rows (times in epoch ms, as the fold writes them) as the frames
    `render` reads (times as naive UTC timestamps, members' too)."""
    frames = {}
    for table, found in rows.items():
        df = pd.DataFrame(list(found))
        for c in TIME_COLUMNS[table]:
            if c in df.columns:
                df[c] = pd.to_datetime(df[c], unit="ms")
        if "members" in df.columns:
            df["members"] = [[{**m, **{k: _ms(m.get(k)) for k in ("joined_at", "last_heartbeat")}}
                              for m in members] for members in df["members"]]
        frames[table] = df
    return frames


def _ms(value: Any) -> Any:
    return None if value is None else pd.Timestamp(value, unit="ms")


def whatif_page(group_id: str, change: str, recorded: Mapping[str, pd.DataFrame],
                played: Mapping[str, Sequence[Row]], summary: Sequence[Row], start_ms: int,
                end_ms: int, *, path: str | Path) -> Path:
    """Write the page to `path` (an .html file) and its two pictures beside it
    (`<name>-recorded.png`, `<name>-what-if.png`); returns the page."""
    out = Path(path)
    start, end = (pd.Timestamp(t, unit="ms") for t in (start_ms, end_ms))
    pictures = {}
    # The played run lasts to the window's end: its lanes are drawn until then.
    last = (played.get("group_history") or [{}])[-1]
    what_if = played_frames({**played, "group_state": [
        {"group_id": group_id, "last_event_time": end_ms, "members": [],
         "state": last.get("state"), "generation_id": last.get("generation_id"),
         "log_kind": "simulated"}]})
    # The same panels for both: membership, generations, state, assignment (the simulated
    # consumers commit nothing, and have no lag).
    membership = {t: recorded[t] for t in MEMBERSHIP if t in recorded}
    for run, tables in (("recorded", membership), ("what-if", what_if)):
        png = out.with_name(f"{out.stem}-{run}.png")
        render(tables, group_id, start, end, path=png)
        pictures[run] = base64.b64encode(png.read_bytes()).decode("ascii")
    gid, said = html.escape(group_id), html.escape(change)
    images = "\n".join(
        f'<h2>{html.escape(caption)}</h2>\n<img alt="{gid} {run}" '
        f'src="data:image/png;base64,{pictures[run]}">'
        for run, caption in (("recorded", "As recorded"), ("what-if", f"What-if: {change}")))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>What-if for {gid}: {said}</title>
<style>body{{font-family:sans-serif;margin:1.5em}} table.rows{{border-collapse:collapse;
font-size:12px}} table.rows td,table.rows th{{padding:2px 8px;border-bottom:1px solid #ddd;
text-align:left}} img{{max-width:100%}}</style></head><body>
<h1>What-if for consumer group {gid}: {said}</h1>
<p>{start} → {end} UTC. <i>simulated</i> is the recorded consumers played again under the
recorded configuration: the baseline to read the what-if against.</p>
{table_html(pd.DataFrame(list(summary)).drop(columns=["group_id"]))}
{images}
</body></html>
""", encoding="utf-8")
    return out
