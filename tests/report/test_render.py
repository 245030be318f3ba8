"""The picture of a group, drawn from the pure fold's tables of generated logs (no Spark)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib import image

from pipeline.fold import Event
from pipeline.generator import LogSpec, generate
from pipeline.report import Picture, render
from pipeline.report.frames import group_frames
from pipeline.report.membership import lanes
from tests.report.frames import pure_frames, truth

REMOVALS = ("MEMBER_LEFT", "STATIC_MEMBER_REMOVED", "SESSION_TIMEOUT", "NEW_MEMBER_JOIN_TIMEOUT",
            "PENDING_SYNC_TIMEOUT")
HOSTILE = "'; DROP TABLE x; -- `back` \"q\" $a$ <b>"


@pytest.fixture(scope="module")
def journal() -> tuple[list[Event], dict[str, pd.DataFrame]]:
    events = generate(LogSpec(groups=12, events=4000, seed=11, log_kind="journal", bad_rows=0.03))
    return events, pure_frames(events)


@pytest.fixture(scope="module")
def records() -> tuple[list[Event], dict[str, pd.DataFrame]]:
    events = generate(LogSpec(groups=12, events=4000, seed=11, log_kind="offsets-topic",
                              bad_rows=0.03))
    return events, pure_frames(events)


def busiest(tables: dict[str, pd.DataFrame]) -> str:
    return str(tables["rebalances"]["group_id"].value_counts().index[0])


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


def named_members(t: dict[str, pd.DataFrame]) -> set[str]:
    """Every member id some table names as a member, counted independently of the lanes."""
    tr = t["group_transitions"]["member_id"].dropna()
    named = {m for ids in tr for m in ids.split(",")}
    named |= {m["member_id"] for ms in t["group_state"]["members"] for m in ms}
    named |= set(t["rebalances"].loc[t["rebalances"]["outcome"] == "COMPLETED",
                                     "leader_id"].dropna())
    h = t["offset_history"]
    named |= set(h.loc[(h["change"] == "COMMIT") & (h["generation_id"] >= 0), "member_id"].dropna())
    return named


def test_a_busy_journal_group_gets_every_panel(journal, tmp_path: Path) -> None:
    _, tables = journal
    group = busiest(tables)
    picture = render(tables, group, path=tmp_path / "g.png")
    assert_a_real_png(picture)
    t = group_frames(tables, group)
    assert [ax.get_label() for ax in picture.figure.axes[:6]] == [
        "members", "generations", "state", "assignment", "commits", "refused"]
    assert len(set(gids(picture, "lane:"))) == len(picture.lanes) == len(named_members(t))
    assert len(gids(picture, "rebalance:")) == len(t["rebalances"]) == picture.rebalances >= 3
    parts = {f"{r.topic}-{r.partition}" for r in t["offset_history"].itertuples()}
    assert sorted(gids(picture, "partition:")) == sorted(parts) == sorted(picture.partitions)
    assert len(gids(picture, "refused:")) == t["rejected_events"]["reason"].nunique()
    assert picture.refused == len(t["rejected_events"]) > 0


def test_member_spans_never_claim_a_time_the_member_was_out(journal) -> None:
    events, tables = journal
    spans = exact_ends = 0
    for group in tables["group_state"]["group_id"]:
        t = group_frames(tables, group)
        real = truth(events, group)
        for lane in lanes(t, t["group_state"]["last_event_time"].max()):
            for s in lane.spans:
                joined, left = (pd.Timestamp(v, unit="ms") if v is not None else None
                                for v in real[s.member_id])
                assert joined <= s.start and (left is None or s.end <= left), (group, s)
                assert s.current == (left is None), (group, s)
                if s.start_exact:
                    assert s.start == joined, (group, s)
                if s.end_exact and not s.current:
                    assert s.end == left, (group, s)
                    exact_ends += 1
                if s.until is not None:
                    assert left is not None and left <= s.until, (group, s)
                spans += 1
        drawn = lanes(t, t["group_state"]["last_event_time"].max())
        assert len(real) - len({s.member_id for lane in drawn for s in lane.spans}) <= 1
        tr = t["group_transitions"]
        removed = {m for ids in tr.loc[tr["cause"].isin(REMOVALS), "member_id"].dropna()
                   for m in ids.split(",")}
        assert {s.member_id for lane in drawn for s in lane.spans
                if s.end_exact and not s.current} == removed
    assert spans > 50 and exact_ends > 3


def test_an_offsets_topic_group_draws_only_its_current_members_and_leaders(
        records, tmp_path: Path) -> None:
    events, tables = records
    group = busiest(tables)
    picture = render(tables, group, path=tmp_path / "g.png")
    assert_a_real_png(picture)
    t = group_frames(tables, group)
    current = {m["member_id"] for m in t["group_state"]["members"].iloc[-1]}
    assert current <= {s.member_id for lane in picture.lanes for s in lane.spans}
    assert len(picture.lanes) == len(named_members(t)) < len(truth(events, group))
    assert all(s.current and s.start_exact for lane in picture.lanes for s in lane.spans
               if s.member_id in current)
    heading = picture.figure.axes[0].get_title(loc="left")
    assert f"Removals named: 0 of {t['rebalances']['members_left'].sum()}" in heading
    assert all(r["cause"] == "SNAPSHOT" for _, r in t["rebalances"].iterrows())


def test_a_window_draws_only_what_happened_in_it(journal, tmp_path: Path) -> None:
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


def test_an_unknown_group_is_an_error_not_an_empty_picture(journal, tmp_path: Path) -> None:
    _, tables = journal
    with pytest.raises(LookupError, match="no-such-group"):
        render(tables, "no-such-group", path=tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_a_hostile_group_id_is_drawn_as_text(journal, tmp_path: Path) -> None:
    events, tables = journal
    group = busiest(tables)
    renamed = pure_frames([replace(e, group_id=HOSTILE) if e.group_id == group else e
                           for e in events])
    picture = render(renamed, HOSTILE, path=tmp_path / "h.html")
    page = picture.path.read_text()
    assert "&#x27;; DROP TABLE x; -- `back` &quot;q&quot; $a$ &lt;b&gt;" in page
    assert HOSTILE not in page
    assert picture.figure.texts[0].get_text().endswith(r"\$a\$ <b>")  # not math
    assert picture.rebalances == (tables["rebalances"]["group_id"] == group).sum()


def test_the_html_page_embeds_the_picture_and_lists_rebalances_and_refused_rows(
        journal, tmp_path: Path) -> None:
    _, tables = journal
    group = busiest(tables)
    picture = render(tables, group, path=tmp_path / "g.html")
    page = picture.path.read_text()
    assert page.count('src="data:image/png;base64,') == 1
    t = group_frames(tables, group)
    assert f"<h2>Rebalances ({len(t['rebalances'])})</h2>" in page
    assert f"<h2>Refused rows ({len(t['rejected_events'])})</h2>" in page
    assert page.count("<tr") == 2 + len(t["rebalances"]) + len(t["rejected_events"])
    assert np.all([c in page for c in t["rebalances"]["cause"]])
