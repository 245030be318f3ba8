"""The tombstones Kafka's loader refuses, alike for share (KIP-932) and streams (KIP-1071)
groups (`modern.handlers`): each is MALFORMED with Kafka's reason, and a refused record
changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.fold.records import reasons
from tests.fold.share_records import ShareLog
from tests.fold.streams_records import StreamsLog

KINDS = [(ShareLog, "SHARE", "a-1", "share"), (StreamsLog, "STREAMS", "m-1", "streams")]
# (what the log gets after a stable one-member group, Kafka's reason with {P} the records'
# prefix and {M} the member, whether the bad record is the only one added)
CASES: list[tuple[Callable[[Any, str], object], str, bool]] = [
    (lambda log, m: log.tombstone("MEMBER_METADATA", m),
     "MALFORMED: {P}_GROUP_MEMBER_METADATA_TOMBSTONE for '{M}' before its "
     "{P}_GROUP_CURRENT_MEMBER_ASSIGNMENT tombstone (member epoch 1, not -1)", True),
    (lambda log, m: (log.tombstone("CURRENT_MEMBER_ASSIGNMENT", m),
                     log.tombstone("MEMBER_METADATA", m)),
     "MALFORMED: {P}_GROUP_MEMBER_METADATA_TOMBSTONE for '{M}' before its "
     "{P}_GROUP_TARGET_ASSIGNMENT_MEMBER tombstone", False),
    (lambda log, m: log.tombstone("TARGET_ASSIGNMENT_METADATA"),
     "MALFORMED: {P}_GROUP_TARGET_ASSIGNMENT_METADATA_TOMBSTONE while the target assignment "
     "still has 1 members", True),
    (lambda log, m: log.tombstone("METADATA"),
     "MALFORMED: {P}_GROUP_METADATA_TOMBSTONE while the group still has 1 members", True),
    (lambda log, m: (log.leaves(m), log.tombstone("METADATA")),
     "MALFORMED: {P}_GROUP_METADATA_TOMBSTONE before the "
     "{P}_GROUP_TARGET_ASSIGNMENT_METADATA tombstone", False),
]


@pytest.mark.parametrize(("log_type", "prefix", "member", "part"), KINDS)
@pytest.mark.parametrize(("bad", "reason", "alone"), CASES)
def test_tombstones_kafkas_loader_refuses_are_malformed_and_change_nothing(
        log_type: type, prefix: str, member: str, part: str,
        bad: Callable[[Any, str], object], reason: str, alone: bool) -> None:
    log = log_type()
    log.stable_with(member)
    before = getattr(log.replay().group, part)
    bad(log, member)
    r = log.replay()
    assert reasons(r) == [reason.replace("{P}", prefix).replace("{M}", member)]
    assert r.group.exists and getattr(r.group, part) is not None
    if alone:
        assert getattr(r.group, part) == before
