"""The picture read as a person reads it: ticks in one format, every partition its own row
with its regressions marked, whole words in reason labels, and a page whose nulls all look
alike (no Spark: the pure fold's tables of a generated log)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from pipeline.report import render
from pipeline.report.frames import group_frames
from pipeline.report.render import cell
from pipeline.report.style import NULL, reason_label, tick_format
from tests.report.conftest import Log
from tests.report.frames import busiest
from tests.report.test_render import gids


def test_every_time_tick_has_one_format(journal: Log, tmp_path: Path) -> None:
    _, tables = journal
    picture = render(tables, busiest(tables), path=tmp_path / "g.png")
    ax = next(a for a in picture.figure.axes if a.get_label() == "refused")  # the bottom one
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert len(labels) >= 5
    assert all(re.fullmatch(r"\d\d:\d\d:\d\d", label) for label in labels), labels
    assert ax.xaxis.get_offset_text().get_text() == ""
    assert [tick_format(pd.Timedelta(x)) for x in ("5min", "6h", "3D")] == [
        "%H:%M:%S", "%H:%M", "%m-%d %H:%M"]


def test_each_partition_gets_a_row_and_each_offset_regression_a_mark(
        journal: Log, tmp_path: Path) -> None:
    _, tables = journal

    def regressions(group: str) -> int:
        history = group_frames(tables, group)["offset_history"]
        found = 0
        for _, part in history.groupby(["topic", "partition"]):
            committed = part["committed_offset"].where(part["change"] == "COMMIT")
            found += int((committed < committed.ffill().shift(1)).sum())
        return found

    # The generator's groups that seek backwards are the ones whose offsets regress.
    group = max(sorted(set(tables["offset_history"]["group_id"])), key=lambda g: (regressions(g) > 0, len(
        group_frames(tables, g)["offset_history"])))
    expected = regressions(group)
    picture = render(tables, group, path=tmp_path / "g.png")
    commits = next(ax for ax in picture.figure.axes if ax.get_label() == "commits")
    rows = [t.get_text() for t in commits.get_yticklabels()]
    assert rows == picture.partitions and len(rows) >= 4
    marks = [c for c in commits.collections if c.get_gid() == "regression"]
    assert expected > 0
    assert sum(len(c.get_offsets()) for c in marks) == expected


def test_a_long_reason_is_cut_after_a_whole_word() -> None:
    reason = "MALFORMED: partition must not be negative, got -3"
    label = reason_label(reason)
    assert label == "MALFORMED: partition must not be…"
    assert reason.startswith(label[:-1]) and reason[len(label) - 1] == " "
    assert reason_label("DUPLICATE") == "DUPLICATE"
    assert reason_label("X" * 50).endswith("…") and len(reason_label("X" * 50)) == 34


def test_the_refused_panel_shows_whole_words(journal: Log, tmp_path: Path) -> None:
    _, tables = journal
    picture = render(tables, busiest(tables), path=tmp_path / "g.png")
    refused = next(ax for ax in picture.figure.axes if ax.get_label() == "refused")
    reasons = set(group_frames(tables, busiest(tables))["rejected_events"]["reason"])
    for text in (t.get_text() for t in refused.get_yticklabels()):
        label = re.sub(r" \(\d+\)$", "", text)
        assert label in reasons or any(
            r.startswith(label[:-1]) and r[len(label) - 1] in " ,:" for r in reasons), label
    assert gids(picture, "refused:")


def test_the_page_shows_every_null_one_way(journal: Log, tmp_path: Path) -> None:
    _, tables = journal
    page = render(tables, busiest(tables), path=tmp_path / "g.html").path.read_text()
    cells = re.findall(r"<td>(.*?)</td>", page)
    assert NULL in cells
    assert not {"None", "nan", "NaN", "NaT", "&lt;NA&gt;"} & set(cells)
    assert [cell(v) for v in (None, float("nan"), pd.NaT, pd.NA, 3.0, [],
                              [{"topic": "t", "partition": 1}, {"topic": "t", "partition": 0}])
            ] == [NULL, NULL, NULL, NULL, "3", "", "t:0,1"]
