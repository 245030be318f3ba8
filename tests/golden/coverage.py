"""What a golden case holds, read from its stored input and tables: the summary its
`case.json` shows and the features the coverage test requires of the cases together."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from pipeline.fold import Event

Rows = dict[str, list[dict[str, Any]]]

PROTOCOL_REQUESTS = {"JOIN", "SYNC", "HEARTBEAT", "LEAVE"}


def _counts(values: Iterable[Any]) -> dict[str, int]:
    return dict(sorted(Counter(str(v) for v in values).items()))


def summary(events: list[Event], tables: Rows) -> dict[str, Any]:
    state = tables["group_state"]
    return {
        "events": len(events),
        "event_types": _counts(e.event_type for e in events),
        "txn_markers": _counts(e.txn_result for e in events if e.event_type == "TXN_MARKER"),
        "static_joins": sum(1 for e in events if e.event_type == "JOIN" and e.group_instance_id),
        "groups": len(state),
        "log_kind": _counts(r["log_kind"] for r in state),
        "group_type": _counts(r["group_type"] for r in state),
        "final_state": _counts(r["state"] for r in state),
        "late_rows": sum(r["late_count"] for r in state),
        "rows": {t: len(rows) for t, rows in tables.items()},
        "rejected_reasons": _counts(_reason(r["reason"]) for r in tables["rejected_events"]),
        "transition_causes": _counts(r["cause"] for r in tables["group_transitions"]),
        "offset_changes": _counts(r["change"] for r in tables["offset_history"]),
        "rebalance_protocols": _counts(r.get("protocol") for r in tables["rebalances"]),
        "rebalance_outcomes": _counts(r["outcome"] for r in tables["rebalances"]),
        "rebalance_cost_protocols": _counts(r["rebalance_protocol"]
                                            for r in tables["rebalance_cost"]),
        "features": sorted(features(events, tables)),
    }


def _reason(reason: str) -> str:
    """Reasons naming a value (an offset, a group) are counted by their kind."""
    return reason.split(" for ", 1)[0] if reason.startswith("MALFORMED: CONSUMER_GROUP") else reason


def features(events: list[Event], tables: Rows) -> set[str]:
    state = tables["group_state"]
    reasons = [r["reason"] for r in tables["rejected_events"]]
    changes = {r["change"] for r in tables["offset_history"]}
    causes = {r["cause"] for r in tables["group_transitions"]}
    types = {e.event_type for e in events}
    found = {
        "journal log": any(r["log_kind"] == "journal" for r in state)
        and bool(types & PROTOCOL_REQUESTS),
        "offsets-topic log": len(events) >= 1000 and not types & PROTOCOL_REQUESTS
        and all(r["log_kind"] == "records" for r in state),
        "malformed rows": any(r.startswith("MALFORMED: ") for r in reasons),
        "unsupported records": any(r.startswith("UNSUPPORTED_RECORD") for r in reasons),
        "refused requests": any(r.isupper() and r.replace("_", "").isalpha() for r in reasons
                                if r not in ("DUPLICATE", "OUT_OF_ORDER", "UNSUPPORTED_RECORD")),
        "duplicate rows": "DUPLICATE" in reasons,
        "out-of-order rows": "OUT_OF_ORDER" in reasons,
        "late rows": any(r["late_count"] for r in state),
        "static members": any(e.event_type == "JOIN" and e.group_instance_id for e in events),
        "cooperative assignor": any(r.get("protocol") == "cooperative-sticky"
                                    for r in tables["rebalances"]),
        "eager assignor": any(r.get("protocol") in ("range", "roundrobin", "sticky")
                              for r in tables["rebalances"]),
        "unowned partition time": {"EAGER", "COOPERATIVE"} <= {
            r["rebalance_protocol"] for r in tables["rebalance_cost"]
            if r.get("unowned_partition_ms")},
        "transaction committed": any(e.txn_result == "COMMIT" for e in events),
        "transaction aborted": "TXN_ABORTED" in changes,
        "offset expiry": "EXPIRED" in changes,
        "offset tombstone": "TOMBSTONE" in changes,
        "session timeout": "SESSION_TIMEOUT" in causes,
        "snapshot mismatch": "SNAPSHOT_MISMATCH" in causes,
        "group dead": any(r["state"] == "Dead" for r in state) or "Dead" in {
            r["to_state"] for r in tables["group_transitions"]},
        "KIP-848 records": any(t is not None and t.startswith("CONSUMER_GROUP_") for t in types)
        and any(r["group_type"] == "consumer" for r in state),
        "share records": any(r.get("share_state_partitions") for r in tables["group_history"])
        and any(r["group_type"] == "share" for r in tables["group_transitions"]),
        "streams records": any(r.get("topology") for r in tables["group_history"])
        and any(r.get("active_tasks_moved") for r in tables["rebalances"]),
    }
    return {name for name, present in found.items() if present}


REQUIRED = frozenset({
    "journal log", "offsets-topic log", "malformed rows", "unsupported records",
    "refused requests", "duplicate rows", "out-of-order rows", "late rows", "static members",
    "cooperative assignor", "eager assignor", "unowned partition time", "transaction committed",
    "transaction aborted",
    "offset expiry", "offset tombstone", "session timeout", "snapshot mismatch", "group dead",
    "KIP-848 records", "share records", "streams records",
})
