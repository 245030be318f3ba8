"""The lag tables computed the slow, obvious way, in plain Python, from the same inputs as the
Spark lag step: for every sample, every (group, partition) pair, look everything up by
scanning lists. The rules themselves are `pipeline.lag.rules`; this oracle holds the Spark
step's as-of joins, windows and filters to them, row for row."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pipeline.lag import LagConfig, rules

Row = dict[str, Any]


def _key(*values: Any) -> tuple[Any, ...]:
    """Spark's ascending order with nulls first."""
    return tuple((v is not None, v if v is not None else 0) for v in values)


def _last(rows: Iterable[Row], t: int, order: Sequence[str], time: str = "t") -> Row | None:
    """The last row at or before `t` by (time, *order)."""
    found = [r for r in rows if r[time] is not None and r[time] <= t]
    return max(found, key=lambda r: _key(r[time], *(r.get(c) for c in order)), default=None)


def lag_tables(samples: Sequence[Row], changes: Sequence[Row], shapes: Sequence[Row],
               transitions: Sequence[Row], rebalances: Sequence[Row],
               cfg: LagConfig) -> tuple[list[Row], list[Row]]:
    """(partition_lag rows, group_lag rows), times in ms, for every sample in `samples`."""
    by_tp: dict[tuple[str, int], dict[int, tuple[int, int | None]]] = defaultdict(dict)
    for s in samples:
        old = by_tp[(s["topic"], s["partition"])].get(s["t"])
        end, start = s["log_end_offset"], s["log_start_offset"]
        if old is not None:
            end = max(end, old[0])
            start = max((x for x in (start, old[1]) if x is not None), default=None)
        by_tp[(s["topic"], s["partition"])][s["t"]] = (end, start)
    moved = [c for c in changes if c["change"] != "TXN_ABORTED"]
    pairs = _pairs(moved, shapes)
    out: list[Row] = []
    for tp, points in by_tp.items():
        times = sorted(points)
        for i, t in enumerate(times):
            for (group, topic, partition), since in pairs.items():
                if (topic, partition) == tp and since <= t:
                    row = _partition_row(group, tp, t, times[:i + 1], since, points, moved,
                                         shapes, transitions, rebalances, cfg)
                    if row is not None:
                        out.append(row)
    return out, _group_rows(out, cfg)


def _pairs(moved: Sequence[Row], shapes: Sequence[Row]) -> dict[tuple[str, str, int], int]:
    pairs: dict[tuple[str, str, int], int] = {}
    for c in moved:
        k = (c["group_id"], c["topic"], c["partition"])
        pairs[k] = min(pairs.get(k, c["t"]), c["t"])
    for s in shapes:
        for m in s["members"] or ():
            for a in m["assignment"] or ():
                k = (s["group_id"], a["topic"], a["partition"])
                pairs[k] = min(pairs.get(k, s["t"]), s["t"])
    return pairs


def _partition_row(group: str, tp: tuple[str, int], t: int, times: Sequence[int], since: int,
                   points: Mapping[int, tuple[int, int | None]], moved: Sequence[Row],
                   shapes: Sequence[Row], transitions: Sequence[Row],
                   rebalances: Sequence[Row], cfg: LagConfig) -> Row | None:
    mine = [c for c in moved if (c["group_id"], c["topic"], c["partition"]) == (group, *tp)]
    last_change, committed = _committed(mine, t)
    status = ("NO_COMMIT" if last_change is None else
              {"COMMIT": "COMMITTED", "TOMBSTONE": "DELETED"}.get(last_change["change"],
                                                                  last_change["change"]))
    moment, members = _moment(group, t, shapes, transitions, rebalances)
    owner = next((m for m in members if any((a["topic"], a["partition"]) == tp
                                            for a in m["assignment"] or ())), None)
    alive = moment.state is not None and moment.state != "Dead"
    if not (status == "COMMITTED" or (status in ("DELETED", "EXPIRED") and alive)
            or (status == "NO_COMMIT" and owner is not None)):
        return None
    end, start = points[t]
    current = None if committed is None else rules.lag(end, committed)
    # the pair's samples: every one since the group had the partition; the window, the last
    # `intervals` of the partition's
    held = [s for s in times if s >= since]
    marks = [rules.Mark(s, *points[s], _committed(mine, s)[1]) for s in held
             if s in times[-cfg.intervals:]]
    rates = rules.pace(marks)
    lost = rules.lost_records(committed, start)
    run = []  # the samples of the current run of lost records, newest first
    for s in reversed(held):
        if not rules.lost_records(_committed(mine, s)[1], points[s][1]):
            break
        run.append(s)
    row: Row = {
        "t": t, "group_id": group, "topic": tp[0], "partition": tp[1], "log_end_offset": end,
        "log_start_offset": start, "committed_offset": committed, "offset_status": status,
        "committed_at": None if last_change is None else last_change["t"],
        "lag": current, "lost_records": lost, "lost_since": run[-1] if run else None,
        "loss_eta_ms": rules.loss_eta_ms(committed, start, current, rates, cfg),
        "produce_rate": rates.produce_rate, "consume_rate": rates.consume_rate,
        "retention_rate": rates.retention_rate,
        "catch_up_ms": rules.catch_up_ms(current, rates, cfg),
        "member_id": owner and owner["member_id"], "client_id": owner and owner["client_id"],
        "client_host": owner and owner["client_host"], "state": moment.state,
        "generation_id": moment.generation_id, "group_type": moment.group_type,
        "moment": moment,
        "prev_t": times[-2] if len(times) > 1 else None,
    }
    row.update(_timed(committed, [rules.Sample(s, points[s][0]) for s in times], t, cfg))
    row.update(_verdict(committed, mine, times, points, t, current, lost, cfg))
    return row


def _committed(mine: Sequence[Row], t: int) -> tuple[Row | None, int | None]:
    """The pair's last offset change at or before `t`, and its committed offset then (None
    unless that change is a commit)."""
    last = _last(mine, t, ("log_partition", "log_offset"))
    return last, last["committed_offset"] if last is not None and last["change"] == "COMMIT" \
        else None


def _timed(committed: int | None, samples: Sequence[rules.Sample], t: int,
           cfg: LagConfig) -> Row:
    if committed is None:
        return {"lag_ms": None, "lag_ms_basis": None}
    ms, basis = rules.time_lag(samples, committed, t, cfg.allowed_lag)
    return {"lag_ms": ms, "lag_ms_basis": basis}


def _verdict(committed: int | None, mine: Sequence[Row], times: Sequence[int],
             points: Mapping[int, tuple[int, int | None]], t: int, current: int | None,
             lost: int | None, cfg: LagConfig) -> Row:
    if committed is None or current is None:
        return {"status": None, "rule": None, "window_commits": None, "window_span_ms": None,
                "idle_ms": None, "window_min_lag": None, "window_max_lag": None, "verdict": None}
    commits = sorted((c for c in mine if c["change"] == "COMMIT" and c["t"] <= t),
                     key=lambda c: _key(c["t"], c["log_partition"], c["log_offset"]))
    ring = []
    for c in commits:
        before = [s for s in times if s <= c["t"]]
        end = points[before[-1]][0] if before else None
        ring.append(rules.Commit(c["committed_offset"], c["t"],
                                 None if end is None else rules.lag(end, c["committed_offset"])))
    w = rules.window(ring, t, cfg)
    v = rules.partition_status(w, [points[s][0] for s in times[-cfg.intervals:]], current, t,
                               cfg, lost)
    lags = [c.lag for c in w if c.lag is not None]
    return {"status": v.status, "rule": v.rule, "window_commits": len(w),
            "window_span_ms": w[-1].time_ms - w[0].time_ms if w else None,
            "idle_ms": t - w[-1].time_ms if w else None,
            "window_min_lag": min(lags) if lags else None,
            "window_max_lag": max(lags) if lags else None, "verdict": v}


def _moment(group: str, t: int, shapes: Sequence[Row], transitions: Sequence[Row],
            rebalances: Sequence[Row]) -> tuple[rules.Moment, Sequence[Row]]:
    order = ("log_partition", "log_offset", "seq")
    shape = _last([s for s in shapes if s["group_id"] == group], t, order)
    mine = [r for r in transitions if r["group_id"] == group]
    last = _last(mine, t, order)
    entered = _last([r for r in mine if r["to_state"] in rules.REBALANCING
                     and r["from_state"] not in rules.REBALANCING], t, order)
    into = _last([r for r in mine if r["to_state"] == "Empty"], t, order)
    out = _last([r for r in mine if r["from_state"] == "Empty"], t, order)
    done = _last([r for r in rebalances if r["group_id"] == group], t,
                 ("log_partition", "log_offset"), time="completed_at")
    moment = rules.Moment(
        state=shape and shape["state"], generation_id=shape and shape["generation_id"],
        group_type=shape and shape.get("group_type"),
        state_since_ms=shape and shape["state_since"], last_cause=last and last["cause"],
        rebalance_started=entered and (entered["t"], entered["cause"]),
        empty_entered_ms=into and into["t"], empty_left_ms=out and out["t"],
        last_rebalance=done and (done["generation_id"], done["cause"], done["started_at"],
                                 done["completed_at"]))
    return moment, (shape["members"] or ()) if shape else ()


def _group_rows(rows: Sequence[Row], cfg: LagConfig) -> list[Row]:
    by_group: dict[tuple[str, int], list[Row]] = defaultdict(list)
    for r in rows:
        by_group[(r["group_id"], r["t"])].append(r)
    return [_group_row(group, t, parts, cfg) for (group, t), parts in by_group.items()]


def _group_row(group: str, t: int, parts: Sequence[Row], cfg: LagConfig) -> Row:
    moment: rules.Moment = parts[0]["moment"]
    return rules.group_row(group, t, parts, moment, cfg)


def verdicts_of(rows: Iterable[Row]) -> dict[str, rules.Verdict]:
    return {r["group_id"]: r["verdict"] for r in rows}
