"""Kafka's error names the fold refuses requests with, and the engine's own rejection reasons."""

from __future__ import annotations

# Kafka's protocol errors (org.apache.kafka.common.protocol.Errors), by name.
OFFSET_METADATA_TOO_LARGE = "OFFSET_METADATA_TOO_LARGE"
COORDINATOR_NOT_AVAILABLE = "COORDINATOR_NOT_AVAILABLE"
ILLEGAL_GENERATION = "ILLEGAL_GENERATION"
INCONSISTENT_GROUP_PROTOCOL = "INCONSISTENT_GROUP_PROTOCOL"
UNKNOWN_MEMBER_ID = "UNKNOWN_MEMBER_ID"
INVALID_SESSION_TIMEOUT = "INVALID_SESSION_TIMEOUT"
REBALANCE_IN_PROGRESS = "REBALANCE_IN_PROGRESS"
GROUP_ID_NOT_FOUND = "GROUP_ID_NOT_FOUND"
GROUP_MAX_SIZE_REACHED = "GROUP_MAX_SIZE_REACHED"
FENCED_INSTANCE_ID = "FENCED_INSTANCE_ID"
STALE_MEMBER_EPOCH = "STALE_MEMBER_EPOCH"
MEMBER_ID_REQUIRED = "MEMBER_ID_REQUIRED"
UNSUPPORTED_VERSION = "UNSUPPORTED_VERSION"

# The engine's own reasons.
DUPLICATE = "DUPLICATE"
OUT_OF_ORDER = "OUT_OF_ORDER"
UNSUPPORTED_RECORD = "UNSUPPORTED_RECORD"


def malformed(what: str) -> str:
    return f"MALFORMED: {what}"


class Refused(Exception):
    """A request Kafka refuses: carries the error name; the group is left as it was."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
