"""The lag panels: drawn for a group with group_lag rows (the hand-made group of
`tests/report/frames.lag_group`, whose rebalances and Empty stretch are known to the second),
holding its rows, shading its rebalances and Empty stretches where they happened; a group
without lag rows gets the picture it got before lag existed (pure, no Spark)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.dates as mdates
import numpy as np
import pandas as pd
import pytest
from matplotlib import image
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from pipeline.report import Picture, render
from pipeline.report.frames import TIME_COLUMNS, group_frames
from pipeline.report.lag import state_periods, time_unit, worst_partitions
from pipeline.report.render import LAG_ROWS
from tests.report.conftest import Log
from tests.report.frames import REBALANCES, at, busiest, lag_group

GROUP = "orders-app"


def panel(picture: Picture, name: str) -> Axes:
    return next(ax for ax in picture.figure.axes if ax.get_label() == name)


def line(ax: Axes, gid: str) -> Line2D:
    (found,) = [x for x in ax.lines if x.get_gid() == gid]
    return found


def spans(ax: Axes, kind: str) -> list[tuple[pd.Timestamp, pd.Timestamp]]:
    """The shaded spans of `kind` (rebalance, empty) of a lag panel, as (start, end) times."""
    out = []
    for p in ax.patches:
        if (p.get_gid() or "").startswith(f"{ax.get_label()}-{kind}:"):
            assert isinstance(p, Rectangle)
            a, b = p.get_x(), p.get_x() + p.get_width()
            out.append(tuple(pd.Timestamp(mdates.num2date(x)).tz_localize(None).round("ms")
                             for x in (a, b)))
    return out


def test_a_group_with_lag_samples_gets_the_lag_panels_holding_its_rows(tmp_path: Path) -> None:
    tables = lag_group()
    picture = render(tables, GROUP, path=tmp_path / "g.png")
    rows = tables["group_lag"]
    assert picture.lag_samples == len(rows) == 56
    assert [ax.get_label() for ax in picture.figure.axes[:7]] == [
        "members", "generations", "state", "assignment", "lag", "lag_time", "commits"]
    lag, time_lag = panel(picture, "lag"), panel(picture, "lag_time")
    total = line(lag, "total-lag")
    assert list(total.get_ydata()) == list(rows["total_lag"])
    assert [pd.Timestamp(x) for x in total.get_xdata()] == list(rows["sampled_at"])
    assert list(line(lag, "max-lag").get_ydata()) == list(rows["max_lag"])
    assert time_lag.get_ylabel() == "min"  # the longest time lag is 185 s
    assert np.allclose(np.asarray(line(time_lag, "max-lag-ms").get_ydata()) * 60_000,
                       rows["max_lag_ms"])
    assert lag.get_shared_x_axes().joined(lag, panel(picture, "members"))
    for status in ("WARN", "ERR"):
        (marks,) = [c for c in lag.collections if c.get_gid() == f"lag-status:{status}"]
        hit = rows[rows["status"] == status]
        assert len(hit) > 0
        assert sorted(marks.get_offsets()[:, 1]) == sorted(hit["total_lag"])
        assert sorted(marks.get_offsets()[:, 0]) == sorted(mdates.date2num(hit["sampled_at"]))
    assert picture.lag_partitions == ["orders-0", "orders-1", "orders-2"]
    p0 = tables["partition_lag"].query("partition == 0")
    assert list(line(lag, "partition-lag:orders-0").get_ydata()) == list(p0["lag"])
    assert "56 lag samples (last OK)" in picture.figure.texts[1].get_text()


def test_the_lag_panels_shade_each_rebalance_and_the_empty_stretch_when_they_happened(
        tmp_path: Path) -> None:
    picture = render(lag_group(), GROUP, path=tmp_path / "g.png")
    instant = (at(840) - at(0)) * 0.003  # an instant rebalance is drawn this wide
    for name in ("lag", "lag_time"):
        ax = panel(picture, name)
        assert spans(ax, "rebalance") == [
            (at(0), at(4)), (at(180), at(221)), (at(360), at(365)), (at(480), at(480) + instant),
            (at(660), at(664))]
        assert spans(ax, "empty") == [(at(480), at(660))]  # the Empty rows of group_history
    labels = [t.get_text() for t in panel(picture, "lag").get_legend().get_texts()]
    assert {"rebalancing (by cause)", "Empty (no member)", "WARN (6)", "ERR (9)",
            "total (all partitions)", "max (worst partition)"} <= set(labels)
    assert len(REBALANCES) == 5


def test_a_window_draws_its_samples_and_the_part_of_an_empty_stretch_inside_it(
        tmp_path: Path) -> None:
    tables = lag_group()
    picture = render(tables, GROUP, at(540), at(720), path=tmp_path / "g.png")
    inside = tables["group_lag"][tables["group_lag"]["sampled_at"].between(at(540), at(720))]
    assert picture.lag_samples == len(inside) == 13
    lag = panel(picture, "lag")
    assert list(line(lag, "total-lag").get_ydata()) == list(inside["total_lag"])
    assert spans(lag, "empty") == [(at(540), at(660))]  # it began before the window
    assert spans(lag, "rebalance") == [(at(660), at(664))]


def test_a_group_without_lag_rows_gets_the_picture_it_got_before(
        journal: Log, tmp_path: Path) -> None:
    _, tables = journal
    group = busiest(tables)
    before = render(tables, group, path=tmp_path / "before.png")
    other = lag_group()  # lag rows, but of another group
    with_lag = {**tables, "partition_lag": other["partition_lag"], "group_lag": other["group_lag"]}
    after = render(with_lag, group, path=tmp_path / "after.png")
    assert after.lag_samples == 0 and after.lag_partitions == []
    assert len(after.figure.axes) == len(before.figure.axes)
    assert "lag" not in [ax.get_label() for ax in after.figure.axes]
    assert after.size_px == before.size_px
    assert (image.imread(after.path) == image.imread(before.path)).all()
    plain = render(lag_group(lag=False), GROUP, path=tmp_path / "plain.png")
    drawn = render(lag_group(), GROUP, path=tmp_path / "lag.png")
    assert len(drawn.figure.axes) == len(plain.figure.axes) + 2
    assert plain.lag_samples == 0 and drawn.size_px[1] > plain.size_px[1]


def test_the_page_lists_the_newest_lag_samples_with_status_and_cause(tmp_path: Path) -> None:
    tables = lag_group()
    page = render(tables, GROUP, path=tmp_path / "g.html").path.read_text()
    assert f"<h2>Lag samples (the newest {LAG_ROWS} of 56, newest first)</h2>" in page
    table = page.split("<h2>Lag samples")[1]
    assert table.count("<tr") == LAG_ROWS + 1
    cells = table.split("<td>")
    assert cells[1].startswith("2024-05-01 12:14:00.000")  # newest first
    assert "<th>status</th>" in table and "<th>cause</th>" in table
    assert "<td>ERR</td>" in table and "<td>EMPTY</td>" in table
    assert "<td>SESSION_TIMEOUT</td>" in table
    assert "12:01:45.000" in table and "12:01:30.000" not in table  # the 6 oldest are left out
    without = render(lag_group(lag=False), GROUP, path=tmp_path / "n.html").path.read_text()
    assert "Lag samples" not in without and without.rstrip().endswith("</body></html>")


def test_lag_tables_join_the_frames_with_their_times_as_naive_utc() -> None:
    assert TIME_COLUMNS["group_lag"] == ["sampled_at", "lost_since", "cause_since",
                                         "cause_window_start"]
    assert TIME_COLUMNS["partition_lag"] == ["sampled_at", "committed_at", "lost_since"]
    rows = pd.DataFrame({"group_id": ["g", "other", "g"], "total_lag": [5, 1, 7],
                         "sampled_at": pd.to_datetime(["2024-05-01T14:00:02+02:00",
                                                       "2024-05-01T16:00:00+02:00",
                                                       "2024-05-01T14:00:01+02:00"])})
    t = group_frames({"group_lag": rows, "group_history": pd.DataFrame({"group_id": []})}, "g")
    assert list(t["group_lag"]["sampled_at"]) == [pd.Timestamp("2024-05-01 12:00:01"),
                                                  pd.Timestamp("2024-05-01 12:00:02")]
    assert list(t["group_lag"]["total_lag"]) == [7, 5]  # ordered by sampled_at
    assert t["group_lag"]["cause"].isna().all()  # a column left out: nulls
    assert t["partition_lag"].empty and "lag_ms" in t["partition_lag"].columns
    with pytest.raises(ValueError, match="rejected_samples"):
        group_frames({"rejected_samples": rows}, "g")


def test_empty_stretches_are_read_from_transitions_without_group_history() -> None:
    t = group_frames(lag_group(lag=False), GROUP)
    older = {**t, "group_history": t["group_history"].iloc[0:0]}
    assert state_periods(older, "Empty", at(0), at(900)) == state_periods(
        t, "Empty", at(0), at(900)) == [(at(480), at(660))]
    assert state_periods(t, "Stable", at(600), at(900)) == [(at(664), at(900))]


def test_the_worst_partitions_are_those_furthest_behind() -> None:
    rows = pd.DataFrame({"topic": ["a", "a", "a", "b", "b", "c"], "partition": [0, 0, 1, 0, 1, 2],
                         "lag": [5, 90, 40, None, 60, 0]})
    assert worst_partitions(rows, 2) == [("a", 0), ("b", 1)]
    assert worst_partitions(rows) == [("a", 0), ("b", 1), ("a", 1)]
    assert worst_partitions(rows[rows["topic"] == "a"].iloc[:2]) == []  # one partition: no line
    assert [time_unit(ms)[1] for ms in (0, 179_000, 600_000, 4 * 3_600_000, 5 * 86_400_000)] == [
        "s", "s", "min", "h", "days"]


def test_samples_without_a_known_lag_say_so(tmp_path: Path) -> None:
    tables = lag_group()
    unknown = tables["group_lag"].assign(total_lag=None, max_lag=None, max_lag_ms=None,
                                         status="NOTFOUND")
    picture = render({**tables, "group_lag": unknown}, GROUP, path=tmp_path / "g.png")
    assert picture.lag_samples == 56
    texts = [t.get_text() for t in panel(picture, "lag").texts]
    assert any(t.startswith("no lag known") for t in texts)


def test_records_lost_and_the_time_to_catch_up_are_drawn_where_the_rows_have_them(
        tmp_path: Path) -> None:
    """A group that lost records after 600 s and whose time to catch up is known: the lost
    records on the messages panel, the time to catch up beside the time lag, in its unit;
    neither line for a group whose rows have none (the hand-made group as it is)."""
    plain = render(lag_group(), GROUP, path=tmp_path / "plain.png")
    assert not [x for ax in plain.figure.axes for x in ax.lines
                if x.get_gid() in ("lost-records", "catch-up-ms")]
    tables = lag_group()
    rows = tables["group_lag"].copy()
    late = rows["sampled_at"] >= at(600)
    rows["lost_records"] = np.where(late, 250, 0)
    rows["catch_up_ms"] = np.where(late, np.nan, 90_000.0)
    picture = render({**tables, "group_lag": rows}, GROUP, path=tmp_path / "g.png")
    lost = line(panel(picture, "lag"), "lost-records")
    assert list(lost.get_ydata()) == list(rows["lost_records"])
    eta = np.asarray(line(panel(picture, "lag_time"), "catch-up-ms").get_ydata())
    assert np.allclose(eta[~late.to_numpy()] * 60_000, 90_000) and np.isnan(eta[late]).all()
    page = render({**tables, "group_lag": rows}, GROUP, path=tmp_path / "g.html").path.read_text()
    assert "<th>lost_records</th>" in page and "<th>catch_up_ms</th>" in page
