"""Kafka's classic group states, each with its valid previous states, and the one checked transition.

The table is `ClassicGroupState` of Kafka's group-coordinator module (the Scala `GroupState`
has the same one). A transition that is not in it is a bug in the fold, never bad input,
so it raises instead of being recorded as a rejection.
"""

from __future__ import annotations

EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"
# KIP-848 consumer groups (Kafka's ConsumerGroupState): derived after every record, no table.
ASSIGNING = "Assigning"
RECONCILING = "Reconciling"

# A KIP-848 member's state (Kafka's MemberState), as CURRENT_MEMBER_ASSIGNMENT stores it.
MEMBER_STABLE = 0
MEMBER_STATE_NAMES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS",
                      127: "UNKNOWN"}

# Streams groups (Kafka's StreamsGroupState; share groups use Empty and Stable only).
NOT_READY = "NotReady"
# A streams member's state (Kafka's streams MemberState): there is no 0.
STREAMS_MEMBER_STABLE = 1
STREAMS_MEMBER_STATE_NAMES = {1: "STABLE", 2: "UNREVOKED_TASKS", 3: "UNRELEASED_TASKS",
                              127: "UNKNOWN"}

VALID_PREVIOUS: dict[str, frozenset[str]] = {
    EMPTY: frozenset({PREPARING_REBALANCE}),
    PREPARING_REBALANCE: frozenset({STABLE, COMPLETING_REBALANCE, EMPTY}),
    COMPLETING_REBALANCE: frozenset({PREPARING_REBALANCE}),
    STABLE: frozenset({COMPLETING_REBALANCE}),
    DEAD: frozenset({STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD}),
}

# States in which a new rebalance may start ("can rebalance" in Kafka).
CAN_REBALANCE = frozenset({STABLE, COMPLETING_REBALANCE, EMPTY})


class IllegalTransition(RuntimeError):
    """A state change Kafka's transition table does not allow."""


def check_transition(group_id: str, current: str, target: str) -> None:
    allowed = VALID_PREVIOUS.get(target)
    if allowed is None:
        raise IllegalTransition(f"group {group_id!r}: unknown target state {target!r}")
    if current not in allowed:
        raise IllegalTransition(
            f"group {group_id!r}: cannot go from {current} to {target}; "
            f"{target} may only follow {sorted(allowed)}"
        )


# Causes recorded on transitions and rebalances.
class Cause:
    GROUP_CREATED = "GROUP_CREATED"
    MEMBER_JOINED = "MEMBER_JOINED"
    LEADER_REJOINED = "LEADER_REJOINED"
    METADATA_CHANGED = "METADATA_CHANGED"
    STATIC_MEMBER_REJOINED = "STATIC_MEMBER_REJOINED"
    MEMBER_LEFT = "MEMBER_LEFT"
    STATIC_MEMBER_REMOVED = "STATIC_MEMBER_REMOVED"
    SESSION_TIMEOUT = "SESSION_TIMEOUT"
    NEW_MEMBER_JOIN_TIMEOUT = "NEW_MEMBER_JOIN_TIMEOUT"
    GROUP_MAX_SIZE_REACHED = "GROUP_MAX_SIZE_REACHED"
    PENDING_SYNC_TIMEOUT = "PENDING_SYNC_TIMEOUT"
    ALL_MEMBERS_JOINED = "ALL_MEMBERS_JOINED"
    REBALANCE_TIMEOUT = "REBALANCE_TIMEOUT"
    INITIAL_DELAY_ELAPSED = "INITIAL_DELAY_ELAPSED"
    LEADER_SYNC = "LEADER_SYNC"
    SNAPSHOT = "SNAPSHOT"
    SNAPSHOT_MISMATCH = "SNAPSHOT_MISMATCH"
    GROUP_TOMBSTONE = "GROUP_TOMBSTONE"
    OFFSETS_EXPIRED = "OFFSETS_EXPIRED"
    # KIP-848 groups: transitions name the record that caused them (its event type).
    GROUP_REPLACED = "GROUP_REPLACED"  # a GROUP_METADATA record replaces a consumer group
