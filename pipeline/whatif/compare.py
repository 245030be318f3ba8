"""A what-if: a group's recorded rebalances beside those the same consumers would have caused
under another configuration, and what each cost.

Three runs, side by side (`RUNS`): `recorded`, the rebalance_cost rows the replay wrote;
`simulated`, the script played again under the recorded configuration (how close the model
comes to what happened: the baseline the what-if is read against); `what-if`, the script under
the change. Each run's summary counts, within the window, the rebalances completed, the
members the coordinator expelled, partitions revoked and moved, the partition-milliseconds
nobody consumed and the longest stop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.fold import CoordinatorConfig
from pipeline.generator.assignors import ASSIGNORS
from pipeline.whatif.consumer import SERVER_ASSIGNORS, SESSION_BOUNDS
from pipeline.whatif.script import SILENT, WhatIfError, script_of
from pipeline.whatif.simulate import HEARTBEAT_MS, Change, Played, simulate

RECORDED, SIMULATED, WHAT_IF = "recorded", "simulated", "what-if"
RUNS = (RECORDED, SIMULATED, WHAT_IF)
PROTOCOLS = ("classic", "consumer")
Row = dict[str, Any]


@dataclass
class WhatIf:
    group_id: str
    change: Change
    summary: list[Row]  # one row a run
    rebalances: list[Row]  # every rebalance_cost row of each run in the window, with its run
    notes: list[str]  # what the log could not tell, one line each
    start: int  # the window, epoch ms
    end: int
    # Per run, each client's partitions at the window's end (the recorded run: the last
    # shape the history shows), by client name (`pipeline.whatif.script`).
    owners: dict[str, dict[str, tuple[tuple[str, int], ...]]]
    # The simulated runs' own rows of the output tables (group_history, group_transitions,
    # rebalances; times in epoch ms): what a picture of each run draws.
    played: dict[str, dict[str, list[Row]]]


def check(change: Change, config: CoordinatorConfig) -> None:
    """Refuse, in one line, a change Kafka would refuse or the what-if cannot play."""
    protocol = change.protocol or "classic"
    if protocol not in PROTOCOLS:
        raise WhatIfError(f"unknown protocol {protocol!r}: classic or consumer")
    if protocol == "consumer":
        if change.assignor is not None and change.assignor not in SERVER_ASSIGNORS:
            raise WhatIfError(
                f"--protocol consumer: the broker assigns, with {' or '.join(SERVER_ASSIGNORS)}"
                f" (group.consumer.assignors), not {change.assignor!r}")
        lo, hi = SESSION_BOUNDS
        what = "group.consumer.min/max.session.timeout.ms"
        if change.initial_rebalance_delay_ms is not None:
            raise WhatIfError("--protocol consumer has no initial rebalance delay (a KIP-848 "
                              "group assigns at each member's first heartbeat)")
    else:
        if change.assignor is not None and change.assignor not in ASSIGNORS:
            known = ", ".join(sorted(ASSIGNORS))
            hint = (" (a server-side assignor of the consumer protocol: add --protocol "
                    "consumer)" if change.assignor in SERVER_ASSIGNORS else "")
            raise WhatIfError(f"unknown assignor {change.assignor!r}{hint}: the classic "
                              f"protocol's are {known}")
        lo, hi = config.min_session_timeout_ms, config.max_session_timeout_ms
        what = "group.min/max.session.timeout.ms"
    if change.session_timeout_ms is not None and not lo <= change.session_timeout_ms <= hi:
        raise WhatIfError(
            f"session timeout {change.session_timeout_ms} ms is outside the broker's bounds "
            f"[{lo}, {hi}] ({what}): Kafka refuses it with INVALID_SESSION_TIMEOUT")
    for name in ("rebalance_timeout_ms", "initial_rebalance_delay_ms"):
        value = getattr(change, name)
        if value is not None and value < 0:
            raise WhatIfError(f"{name} must not be negative, got {value}")


def what_if(group_id: str, history: Iterable[Mapping[str, Any]],
            recorded: Iterable[Mapping[str, Any]], change: Change, config: CoordinatorConfig,
            heartbeats: bool, start: int | None = None, end: int | None = None,
            heartbeat_ms: int = HEARTBEAT_MS) -> WhatIf:
    """`group_id`'s what-if from its group_history and rebalance_cost rows (times in epoch ms):
    `heartbeats`, the group's log is a journal (its departures have causes and timing);
    `heartbeat_ms`, the consumers' heartbeat.interval.ms (no log records it)."""
    check(change, config)
    history = list(history)
    types = {row.get("group_type") or "classic" for row in history} - {"classic"}
    if types:
        raise WhatIfError(f"group {group_id!r} is a {'/'.join(sorted(types))} group: the "
                          "what-if plays a classic group's consumers (a KIP-848 group's "
                          "members are assigned by the broker, not by the assignor they ran)")
    script = script_of(group_id, history, heartbeats, start, end)
    notes = []
    if not heartbeats:
        if change.session_timeout_ms is not None or change.rebalance_timeout_ms is not None:
            raise WhatIfError(
                "the group's log holds only __consumer_offsets records: no heartbeats, so when "
                "a member went silent is unknown and no timeout what-if can be answered")
        notes.append("records-only log: members come and go at the snapshots that show them, "
                     "and every departure is taken as a clean stop")
    if script.assignor is not None and script.assignor not in ASSIGNORS:
        raise WhatIfError(f"the group ran under {script.assignor!r}, an assignor the what-if "
                          "does not have: only Kafka's own consumer assignors are played")
    if not script.lives:
        raise WhatIfError(f"group {group_id!r} had no member in the window")
    played = {SIMULATED: simulate(script, Change(), config, heartbeat_ms),
              WHAT_IF: simulate(script, change, config, heartbeat_ms)}
    runs = {RECORDED: (_within(recorded, script.start, script.end), script.expelled),
            **{run: _costs(p, script.start) for run, p in played.items()}}
    if not any(rows for rows, _ in runs.values()):
        raise WhatIfError(f"group {group_id!r} had no rebalance in the window, recorded or "
                          "under the change: nothing to compare")
    summary = [summarize(group_id, run, rows, expelled) for run, (rows, expelled) in runs.items()]
    rebalances = [{"run": run, **row} for run, (rows, _) in runs.items() for row in rows]
    owners = {RECORDED: script.owners, **{run: p.owners for run, p in played.items()}}
    tables = {run: {"group_history": p.outputs.history, "group_transitions": p.outputs.transitions,
                    "rebalances": p.outputs.rebalances} for run, p in played.items()}
    return WhatIf(group_id, change, summary, rebalances, notes, script.start, script.end,
                  owners, tables)


def _costs(played: Played, start: int) -> tuple[list[Row], int]:
    out, end = played.outputs, played.until
    rows = _within(out.rebalance_cost, start, end)
    expelled = played.expelled if played.expelled is not None else sum(
        1 for h in out.history if start <= h["event_time"] <= end
        for d in h["departures"] if d["cause"] in SILENT)
    return rows, expelled


def _within(rows: Iterable[Mapping[str, Any]], start: int, end: int) -> list[Row]:
    return sorted((dict(r) for r in rows if start <= r["completed_at"] <= end),
                  key=lambda r: r["completed_at"])


def summarize(group_id: str, run: str, rows: Sequence[Mapping[str, Any]], expelled: int) -> Row:
    done = [r for r in rows if r["outcome"] != "ABANDONED"]
    stops = [r["duration_ms"] for r in rows if r["partitions_unowned"] and r["duration_ms"]]
    return {
        "group_id": group_id, "run": run,
        "rebalances": len(done),
        "members_expelled": expelled,
        "partitions_revoked": sum(r["partitions_revoked"] for r in rows),
        "partitions_moved": sum(r["partitions_moved"] for r in rows),
        "unowned_partition_ms": sum(r["unowned_partition_ms"] or 0 for r in rows),
        "longest_stop_ms": max(stops, default=0),
    }
