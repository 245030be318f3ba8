"""Every row a share or streams group's replay writes fits its table's schema in `schemas/`
(the check the golden logs' rows pass, `tests/golden/test_row_types.py`): group_state and
group_history members in the STATE_MEMBER struct, rejected rows with their nested columns."""

from __future__ import annotations

from pipeline.fold import CoordinatorConfig
from pipeline.fold.events import Task
from pipeline.fold.group_replay import replay_group
from tests.fold.consumer_records import ORDERS_ID, PAYMENTS_ID, ConsumerLog
from tests.fold.share_records import ShareLog
from tests.fold.streams_records import UNREVOKED, StreamsLog
from tests.golden.test_row_types import row_problems

CONFIG = CoordinatorConfig()


def _share_log() -> ShareLog:
    log = ShareLog()
    log.stable_with("a-1")
    log.state_partitions(initializing={PAYMENTS_ID: [0]}, initialized={ORDERS_ID: [0, 1]},
                         deleting=(PAYMENTS_ID,))
    log.commit("orders", 0, 1, generation=None)  # refused: a rejected row
    log.tombstone("METADATA")  # refused: a rejected row
    return log


def _streams_log() -> StreamsLog:
    log = StreamsLog()
    log.stable_with("m-1")
    log.member("m-2", endpoint=("host", 65_000), tags=(("zone", "a"),), instance="i-2")
    log.current("m-2", 0, {"0": [1]}, state=UNREVOKED, previous=-1,
                pending_active={"1": [3]})
    log.tombstone("METADATA")  # refused, with nothing nested
    log.topology()
    log.commit("words", 0, 5, generation=None)
    log.add("OFFSET_COMMIT", member_id="m-1", generation_id=0, topic="words", partition=1,
            committed_offset=3)  # STALE_MEMBER_EPOCH
    log.member("m-3")
    log.tombstone("MEMBER_METADATA", "m-3")  # MALFORMED: epoch 0, not -1; nested nulls
    log.add("STREAMS_GROUP_TOPOLOGY_TOMBSTONE")
    return log


def test_share_and_streams_rows_fit_their_tables() -> None:
    for log in (_share_log(), _streams_log()):
        replay = replay_group(log.group, None, log.events, None, CONFIG)
        tables = replay.tables
        assert tables["rejected_events"], log.group
        assert {"group_state", "group_history", "group_transitions"} <= set(tables)
        problems = [p for table, rows in tables.items() for row in rows
                    for p in row_problems(table, row)]
        assert problems == [], problems[:5]


def test_a_rejected_streams_row_keeps_its_nested_columns() -> None:
    log = ConsumerLog(group="app")
    log.stable_with("a-1")
    log.add("STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT", member_id="m-9", member_epoch=1,
            previous_member_epoch=0, member_state=UNREVOKED,
            active_tasks=(Task("0", (1, 2), (1, 1)),), standby_tasks=(), warmup_tasks=(),
            active_tasks_pending_revocation=(Task("1", (3,)),),
            standby_tasks_pending_revocation=(), warmup_tasks_pending_revocation=())
    tables = replay_group(log.group, None, log.events, None, CONFIG).tables
    (row,) = tables["rejected_events"]
    assert row["reason"].startswith("MALFORMED: STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT for "
                                    "'app', a consumer group")
    assert row["active_tasks"] == [
        {"subtopology_id": "0", "partitions": [1, 2], "assignment_epochs": [1, 1]}]
    assert row["active_tasks_pending_revocation"] == [
        {"subtopology_id": "1", "partitions": [3], "assignment_epochs": None}]
    assert row_problems("rejected_events", row) == []
