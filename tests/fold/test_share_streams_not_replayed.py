"""Share- and streams-group records are decoded (issue 37, item 1) but not replayed yet: the fold
treats their rows as it treated the UNSUPPORTED_RECORD rows they were before, so a log holding
them replays exactly as it did. Checked on the records Kafka's classes wrote
(tests/decode/kafka_records.json), against the same records as the old UNSUPPORTED_RECORD rows."""

from __future__ import annotations

from typing import Any

from pipeline.decode import decode_record
from pipeline.fold import Event, FoldResult, fold
from pipeline.fold.partitioning import partition_for
from schemas.events import SHARE_STREAMS_EVENT_TYPES
from tests.decode import kafka_records
from tests.fold.records import T0, Log

RECORDS = kafka_records.records()


def _old_row(row: dict[str, Any]) -> dict[str, Any]:
    """The row the decoder emitted before it knew these types: kept with its key's columns."""
    keep = ("group_id", "member_id", "raw_key", "raw_value")
    return {"event_type": "UNSUPPORTED_RECORD", **{k: row[k] for k in keep if k in row}}


def _logs(group: str, prefix: str, first: int = 0) -> tuple[list[Event], list[Event]]:
    """(decoded, as before) events of the fixtures named `prefix*`, placed in `group`'s log."""
    new: list[Event] = []
    old: list[Event] = []
    names = sorted(n for n in RECORDS if n.startswith(prefix) and not n.endswith("_40")
                   and "partition_metadata_40" not in n)
    for i, name in enumerate(names):
        row = {**decode_record(*RECORDS[name]), "group_id": group}
        place = {"log_partition": partition_for(group), "log_offset": first + i,
                 "event_time": T0 + i}
        new.append(Event.from_row({**row, **place}))
        old.append(Event.from_row({**_old_row(row), **place}))
    return new, old


def _same_replay(new: FoldResult, old: FoldResult) -> None:
    assert new.group == old.group
    for name in ("transitions", "rebalances", "offset_history", "answered", "history"):
        assert getattr(new.outputs, name) == getattr(old.outputs, name), name
    assert len(new.outputs.rejected) == len(old.outputs.rejected)
    decoded = set(new.outputs.rejected[0]) - {"event_type"} if new.outputs.rejected else set()
    for n, o in zip(new.outputs.rejected, old.outputs.rejected, strict=True):
        assert n["event_type"] in SHARE_STREAMS_EVENT_TYPES
        assert n["reason"] == o["reason"] == "UNSUPPORTED_RECORD"
        same = {k for k in decoded if o.get(k) is not None}  # what the old row held
        assert {k: n[k] for k in same} == {k: o[k] for k in same}


def test_a_share_groups_records_replay_as_the_unsupported_rows_they_were() -> None:
    new, old = _logs("share-g", "share_")
    assert {e.event_type for e in new} <= set(SHARE_STREAMS_EVENT_TYPES)
    result = fold("share-g", new)
    _same_replay(result, fold("share-g", old))
    assert not result.group.exists  # no group state for them yet
    assert result.group.rejected_count == len(new)


def test_a_streams_groups_offsets_replay_exactly_as_before_beside_its_records() -> None:
    log = Log(group="app")
    log.commit("words", 0, 10)
    new, old = _logs("app", "streams_", first=1)
    after = Log(group="app", next_offset=1 + len(new), now=T0 + 100)
    after.commit("words", 0, 11)
    result = fold("app", log.events + new + after.events)
    _same_replay(result, fold("app", log.events + old + after.events))
    assert result.group.offsets == fold("app", log.events + after.events).group.offsets
