"""Share- and streams-group records as Kafka's own classes wrote them (tests/decode/
kafka_records.json), decoded and folded: each type's records replay into a group of that type
and Kafka's deletion order removes it; type 9 (ShareGroupPartitionMetadata, Kafka 4.0 only) stays
an UNSUPPORTED_RECORD row; and every decoded row reads into an Event and back unchanged, so a
rejected row keeps its columns."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.decode import decode_record
from pipeline.fold import Event, fold
from pipeline.fold.partitioning import partition_for
from schemas.events import SHARE_STREAMS_EVENT_TYPES
from tests.decode import kafka_records
from tests.fold.records import T0, Log, reasons, states

RECORDS = kafka_records.records()


def _events(group: str, names: list[str], first: int = 0) -> list[Event]:
    """The decoded fixtures `names`, in that order, placed in `group`'s log."""
    events = []
    for i, name in enumerate(names):
        row = {**decode_record(*RECORDS[name]), "group_id": group,
               "log_partition": partition_for(group), "log_offset": first + i,
               "event_time": T0 + i}
        events.append(Event.from_row(row))
    return events


SHARE_LIFE = ["share_member_no_rack", "share_metadata", "share_state_partitions",
              "share_target_member", "share_target_metadata", "share_current"]
# ShareGroup.createGroupTombstoneRecords' order.
SHARE_DELETION = ["share_current_tombstone", "share_target_member_tombstone",
                  "share_target_metadata_tombstone", "share_member_tombstone",
                  "share_state_partitions_tombstone", "share_metadata_tombstone"]


def test_kafkas_share_records_replay_into_a_share_group() -> None:
    r = fold("share-g", _events("share-g", SHARE_LIFE))
    assert r.outputs.rejected == []
    g = r.group
    assert (g.group_type, g.state, g.generation_id) == ("share", "Stable", 7)
    assert g.share is not None and g.share.assignment_epoch == 7
    (m,) = g.share.members
    assert (m.member_id, m.client_id, m.member_epoch, m.previous_member_epoch) == (
        "sm-1", "sc-1", 7, 6)
    assert g.share.state_partitions is not None
    assert [n for _, n, _ in g.share.state_partitions.initialized] == ["orders"]


def test_kafkas_share_deletion_order_removes_the_group() -> None:
    r = fold("share-g", _events("share-g", SHARE_LIFE + SHARE_DELETION))
    assert r.outputs.rejected == []
    assert states(r)[-1] == ("Empty", "Dead", "SHARE_GROUP_METADATA_TOMBSTONE")
    assert r.group.gone


def test_kafka_40_share_records_replay_too_and_type_9_stays_unsupported() -> None:
    names = ["share_partition_metadata_40", "share_metadata_40", "share_state_partitions_40"]
    r = fold("share-g", _events("share-g", names))
    assert reasons(r) == ["UNSUPPORTED_RECORD"]
    assert r.outputs.rejected[0]["event_type"] == "UNSUPPORTED_RECORD"
    assert r.group.share is not None and r.group.generation_id == 5
    assert r.group.share.metadata_hash is None  # 4.0's layout has none


STREAMS_LIFE = ["streams_topology", "streams_member_nulls", "streams_metadata_tags",
                "streams_target_member", "streams_target_metadata", "streams_current"]
# StreamsGroup.createGroupTombstoneRecords' order.
STREAMS_DELETION = ["streams_current_tombstone", "streams_target_member_tombstone",
                    "streams_target_metadata_tombstone", "streams_member_tombstone",
                    "streams_metadata_tombstone", "streams_topology_tombstone"]


def test_kafkas_streams_records_replay_into_a_streams_group_beside_its_offsets() -> None:
    log = Log(group="app")
    log.commit("words", 0, 10)
    r = fold("app", log.events + _events("app", STREAMS_LIFE, first=1))
    assert r.outputs.rejected == []
    g = r.group
    # stm-1 is at the assignment epoch (4) but still revoking (UNREVOKED_TASKS).
    assert (g.group_type, g.state, g.generation_id) == ("streams", "Reconciling", 4)
    assert g.offsets[("words", 0)].committed_offset == 10  # the simple group's, kept
    assert g.streams is not None and g.streams.validated_topology_epoch == 0
    (m,) = g.streams.members
    assert (m.process_id, m.member_epoch, [t.subtopology_id for t in m.assigned.active]) == (
        "proc-1", 4, ["0"])
    assert [t.subtopology_id for t in m.pending_revocation.active] == ["1"]


def test_kafkas_streams_deletion_order_removes_the_group() -> None:
    r = fold("app", _events("app", STREAMS_LIFE + STREAMS_DELETION))
    assert r.outputs.rejected == []
    assert states(r)[-1] == ("Empty", "Dead", "STREAMS_GROUP_METADATA_TOMBSTONE")
    assert not r.group.exists and r.group.streams is None


@pytest.mark.parametrize("name", sorted(n for n in RECORDS if n.startswith(("share", "streams"))))
def test_a_decoded_row_reads_into_an_event_and_back_unchanged(name: str) -> None:
    row: dict[str, Any] = decode_record(*RECORDS[name])
    e = Event.from_row(row)
    assert e.defect is None
    assert e.event_type in (*SHARE_STREAMS_EVENT_TYPES, "UNSUPPORTED_RECORD")
    back = e.to_row()
    assert {k: back[k] for k in row if k in back} == {k: v for k, v in row.items() if k in back}


