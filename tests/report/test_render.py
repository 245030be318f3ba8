"""The picture of a group, drawn from the pure fold's tables of generated logs (no Spark).
What the member lanes hold is tested in test_membership.py; here, that they are drawn."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib import image

from pipeline.fold.partitioning import partition_for
from pipeline.report import Picture, render
from pipeline.report.draw import moved_and_total
from pipeline.report.frames import group_frames
from tests.fold.records import Log as GroupLog
from tests.fold.test_streams_groups import two_member_group
from tests.report.conftest import Log
from tests.report.frames import busiest, pure_frames, truth

HOSTILE = "'; DROP TABLE x; -- `back` \"q\" $a$ <b>"


def gids(picture: Picture, prefix: str) -> list[str]:
    return [a.get_gid()[len(prefix):] for ax in picture.figure.axes
            for a in ax.get_children() if (a.get_gid() or "").startswith(prefix)]


def assert_a_real_png(picture: Picture) -> None:
    pixels = image.imread(picture.path)
    width, height = picture.size_px
    assert pixels.shape[:2] == (height, width)
    assert width == 1600 and 900 < height < 4000
    gray = pixels[..., :3].mean(axis=2)
    assert gray.var() > 0.01, "the picture is blank"
    assert (gray < 0.9).mean() > 0.05, "almost nothing is drawn"


def busiest_drawn(log: Log, tmp_path: Path) -> tuple[str, Picture, dict[str, pd.DataFrame]]:
    """The log's busiest group, drawn (checked to be a real PNG), and its frames."""
    _, tables = log
    group = busiest(tables)
    picture = render(tables, group, path=tmp_path / "g.png")
    assert_a_real_png(picture)
    return group, picture, group_frames(tables, group)


def test_a_busy_journal_group_gets_every_panel(journal: Log, tmp_path: Path) -> None:
    _, picture, t = busiest_drawn(journal, tmp_path)
    assert [ax.get_label() for ax in picture.figure.axes[:6]] == [
        "members", "generations", "state", "assignment", "commits", "refused"]
    assert len(set(gids(picture, "lane:"))) == len(picture.lanes) == len(
        {m["group_instance_id"] or m["member_id"] for ms in t["group_history"]["members"]
         for m in ms}) >= 3
    changes = sum(len(s.assignments) - 1 for lane in picture.lanes for s in lane.spans)
    assert len(gids(picture, "assignment-change")) == changes > 0
    assert len(gids(picture, "removal")) == sum(not s.current for lane in picture.lanes
                                                for s in lane.spans) > 0
    assert len(gids(picture, "rebalance:")) == len(t["rebalances"]) == picture.rebalances >= 3
    parts = {f"{r.topic}-{r.partition}" for r in t["offset_history"].itertuples()}
    assert sorted(gids(picture, "partition:")) == sorted(parts) == sorted(picture.partitions)
    assert len(gids(picture, "refused:")) == t["rejected_events"]["reason"].nunique()
    assert picture.refused == len(t["rejected_events"]) > 0


def test_an_offsets_topic_group_draws_every_member_it_had(records: Log, tmp_path: Path) -> None:
    group, picture, t = busiest_drawn(records, tmp_path)
    events, _ = records
    drawn = {s.member_id for lane in picture.lanes for s in lane.spans}
    assert drawn == set(truth(events, group))
    current = {m["member_id"] for m in t["group_state"]["members"].iloc[-1]}
    assert current == {s.member_id for lane in picture.lanes for s in lane.spans if s.current}
    assert all(r["cause"] == "SNAPSHOT" for _, r in t["rebalances"].iterrows())
    assert gids(picture, "removal")  # drawn, though no transition names who left


def test_a_warehouse_without_group_history_draws_no_lanes_and_says_why(
        journal: Log, tmp_path: Path) -> None:
    _, tables = journal
    older = {name: df for name, df in tables.items() if name != "group_history"}
    picture = render(older, busiest(tables), path=tmp_path / "old.png")
    assert picture.lanes == [] and not gids(picture, "lane:")
    assert any("no group_history table" in x.get_text() for x in picture.figure.axes[0].texts)
    assert picture.rebalances > 0


def test_a_window_draws_only_what_happened_in_it(journal: Log, tmp_path: Path) -> None:
    _, tables = journal
    group = busiest(tables)
    reb = group_frames(tables, group)["rebalances"]
    start, end = reb["completed_at"].iloc[1], reb["completed_at"].iloc[-1]
    whole = render(tables, group, path=tmp_path / "all.png")
    part = render(tables, group, start, end, path=tmp_path / "part.png")
    assert (part.start, part.end) == (start, end)
    assert part.rebalances == int(((reb["completed_at"] >= start)
                                   & (reb["started_at"] <= end)).sum()) < whole.rebalances
    ax = part.figure.axes[0]
    assert pd.Timestamp(ax.get_xlim()[0], unit="D") < start  # the axis spans the window,
    assert pd.Timestamp(ax.get_xlim()[1], unit="D") - end < (end - start) / 10  # not more
    with pytest.raises(ValueError, match="time range is empty"):
        render(tables, group, end, start, path=tmp_path / "x.png")


def test_an_unknown_group_is_an_error_not_an_empty_picture(journal: Log, tmp_path: Path) -> None:
    _, tables = journal
    with pytest.raises(LookupError, match="no-such-group"):
        render(tables, "no-such-group", path=tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_a_hostile_group_id_is_drawn_as_text(journal: Log, tmp_path: Path) -> None:
    events, tables = journal
    group = busiest(tables)
    home = partition_for(HOSTILE)  # a renamed group's records move to its own partition
    renamed = pure_frames([replace(e, group_id=HOSTILE, log_partition=home)
                           if e.group_id == group else e for e in events])
    picture = render(renamed, HOSTILE, path=tmp_path / "h.html")
    page = picture.path.read_text()
    assert "&#x27;; DROP TABLE x; -- `back` &quot;q&quot; $a$ &lt;b&gt;" in page
    assert HOSTILE not in page
    assert picture.figure.texts[0].get_text().endswith(r"\$a\$ <b>")  # not math
    assert picture.rebalances == (tables["rebalances"]["group_id"] == group).sum()


def test_the_html_page_embeds_the_picture_and_lists_rebalances_and_refused_rows(
        journal: Log, tmp_path: Path) -> None:
    _, tables = journal
    group = busiest(tables)
    picture = render(tables, group, path=tmp_path / "g.html")
    page = picture.path.read_text()
    assert page.count('src="data:image/png;base64,') == 1
    t = group_frames(tables, group)
    assert f"<h2>Rebalances ({len(t['rebalances'])})</h2>" in page
    assert f"<h2>Refused rows ({len(t['rejected_events'])})</h2>" in page
    members = t["group_state"]["members"].iloc[-1]
    offsets = t["offset_history"].groupby(["topic", "partition"]).tail(1)
    offsets = offsets[offsets["change"] == "COMMIT"]
    assert f"<h2>Members now ({len(members)})</h2>" in page
    assert f"<h2>Committed offsets now ({len(offsets)})</h2>" in page
    assert page.count("<tr") == 4 + len(members) + len(offsets) + len(t["rebalances"]) + len(
        t["rejected_events"])
    assert all(f"<td>{m['member_id']}</td>" in page for m in members)
    assert np.all([c in page for c in t["rebalances"]["cause"]])


def test_the_widest_window_the_flags_accept_draws(journal: Log, tmp_path: Path) -> None:
    """`--from 0001-01-01T00:00 --to 9999-12-31T23:59`: the job takes them as the
    ends of the times the tables can hold, and the picture is drawn, not an OutOfBounds."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "jobs"))
    from report import parse

    args = parse(["--warehouse", "w", "--group", "g", "--output", "x.png",
                  "--from", "0001-01-01T00:00", "--to", "9999-12-31T23:59"])
    start, end = (pd.Timestamp(t).tz_convert("UTC").tz_localize(None)
                  for t in (args.start, args.end))
    _, tables = journal
    picture = render(tables, busiest(tables), start, end, path=tmp_path / "wide.png")
    assert picture.path.exists()


def test_a_streams_group_draws_what_its_rebalances_moved_in_active_tasks(tmp_path: Path) -> None:
    """A streams group's rebalances move tasks, their partition columns null: the assignment
    panel counts the active tasks instead, and says so."""
    log = two_member_group()
    tables = pure_frames(log.events)
    picture = render(tables, log.group, path=tmp_path / "streams.png")
    assert_a_real_png(picture)
    moved, total, unit = moved_and_total(group_frames(tables, log.group)["rebalances"])
    assert (list(moved), list(total), unit) == ([8, 4], [8, 8], "active tasks")
    classic = pure_frames(GroupLog("classic").stable_group("a-1", "b-2").events)
    assert moved_and_total(classic["rebalances"])[2] == "partitions"
