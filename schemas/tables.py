"""The output tables (docs/contract.md §3), each a tuple of columns, plus the key of each table.

Times are `timestamp` columns here; inside the pure fold they are integer milliseconds
since the epoch and the Spark adapter converts at the edge.
"""

from __future__ import annotations

from schemas.columns import TP, Column, struct
from schemas.events import (
    EVENT_COLUMNS,
    KEY_VALUES,
    SHARE_TOPICS,
    SUBTOPOLOGIES,
    TASKS,
    TOPIC_ID_PARTITIONS,
    TOPIC_NAMES,
    USER_ENDPOINT,
)

GROUP_TYPE_DOC = "classic, consumer (KIP-848), share (KIP-932) or streams (KIP-1071)"
_SHAPE_TYPE_DOC = (GROUP_TYPE_DOC + "; a group Kafka removed (Dead) keeps the type it was "
                   "removed as")

# Share groups (KIP-932) and streams groups (KIP-1071): what their group_state and
# group_history rows add, declared once as nested types.
STREAMS_TASKS = struct((
    Column("active", TASKS, doc="tasks the member processes: (subtopology id, partitions)"),
    Column("standby", TASKS, doc="standby replicas of other members' tasks' state"),
    Column("warmup", TASKS, doc="tasks whose state the member restores before taking them"),
))
SHARE_STATE_PARTITIONS = struct((
    Column("initializing", SHARE_TOPICS, doc="share partitions whose state is being initialized"),
    Column("initialized", SHARE_TOPICS, doc="share partitions with state: only these are assigned"),
    Column("deleting", TOPIC_NAMES, doc="topics whose share state is being deleted"),
))
TOPOLOGY = struct((
    Column("epoch", "int", doc="the topology's epoch"),
    Column("subtopologies", SUBTOPOLOGIES,
           doc="as the STREAMS_GROUP_TOPOLOGY record lists them: source topics and regexes, "
               "changelog and repartition topics, copartition groups"),
))

# A member of group_state and group_history. The fields after joined_at are a KIP-848, share or
# streams member's (null for classic members); as stored, `assignment` lists only partitions
# whose topic id the log names (a KIP-848 group's subscription metadata, Kafka 4.0 only; a share
# group's state partitions), and, for a streams member, the partitions its active tasks read
# by the group's topology. The SQL views and the report add the rest through TOPICS.
STATE_MEMBER_FIELDS: tuple[Column, ...] = (
    Column("member_id", "string"),
    Column("group_instance_id", "string", doc="static membership id (classic, KIP-848, streams)"),
    Column("client_id", "string"),
    Column("client_host", "string"),
    Column("session_timeout_ms", "int", doc="classic members"),
    Column("rebalance_timeout_ms", "int", doc="classic, KIP-848 and streams members"),
    Column("subscription", "array<string>", doc="subscribed topics (streams: empty)"),
    Column("assignment", f"array<{TP}>",
           doc="assigned partitions by topic name (streams: those its active tasks read)"),
    Column("last_heartbeat", "timestamp",
           doc="classic: the last heartbeat; others: the member's last record"),
    Column("joined_at", "timestamp"),
    Column("member_epoch", "int"),
    Column("previous_member_epoch", "int"),
    Column("member_state", "string",
           doc="Kafka's MemberState name (streams: STABLE, UNREVOKED_TASKS, UNRELEASED_TASKS)"),
    Column("rack_id", "string"),
    Column("server_assignor", "string", doc="KIP-848 members"),
    Column("subscribed_topic_regex", "string", doc="KIP-848 members"),
    Column("assigned_partitions", TOPIC_ID_PARTITIONS, doc="KIP-848 and share: current, by topic id"),
    Column("partitions_pending_revocation", TOPIC_ID_PARTITIONS, doc="KIP-848 members"),
    Column("target_partitions", TOPIC_ID_PARTITIONS,
           doc="KIP-848 and share: the target assignment, by topic id"),
    Column("process_id", "string", doc="streams: the Kafka Streams process (PROCESS)"),
    Column("user_endpoint", USER_ENDPOINT, doc="streams: the interactive-query endpoint, if any"),
    Column("client_tags", KEY_VALUES, doc="streams: the client's rack-aware assignment tags"),
    Column("topology_epoch", "int", doc="streams: the topology epoch the member runs"),
    Column("assigned_tasks", STREAMS_TASKS, doc="streams: current tasks (ASSIGNMENTS)"),
    Column("tasks_pending_revocation", STREAMS_TASKS,
           doc="streams: tasks the member still has to give up before taking its target"),
    Column("target_tasks", STREAMS_TASKS,
           doc="streams: the target assignment (TARGET-ASSIGNMENT); null when none"),
)
STATE_MEMBER = struct(STATE_MEMBER_FIELDS)

# The group columns of group_state and group_history that only share or streams groups fill.
SHARE_STREAMS_GROUP: tuple[Column, ...] = (
    Column("share_state_partitions", SHARE_STATE_PARTITIONS,
           doc="share groups: the share partitions the share coordinator initializes, holds "
               "and deletes state for (SHARE_GROUP_STATE_PARTITION_METADATA); null before its "
               "first record and after its tombstone"),
    Column("topology", TOPOLOGY,
           doc="streams groups: the topology (STREAMS_GROUP_TOPOLOGY); null while there is none"),
    Column("validated_topology_epoch", "int",
           doc="streams groups: the topology epoch the coordinator validated (-1: none); the "
               "group is NotReady while it is not topology.epoch"),
    Column("assignment_configs", KEY_VALUES,
           doc="streams groups: the assignment configs the last assignment used "
               "(num.standby.replicas, ...; Kafka 4.2+)"),
)

GROUP_STATE: tuple[Column, ...] = (
    Column("group_id", "string", False),
    Column("state", "string", False, "Kafka's state name, as DescribeGroups prints it"),
    Column("generation_id", "int", False),
    Column("protocol_type", "string"),
    Column("protocol", "string"),
    Column("leader_id", "string"),
    Column("members", f"array<{STATE_MEMBER}>", False),
    Column("member_count", "int", False),
    Column("state_since", "timestamp"),
    Column("last_event_time", "timestamp"),
    Column("last_log_offset", "bigint"),
    Column("rebalance_count", "bigint", False),
    Column("log_partition", "int"),
    Column("log_kind", "string", False, "journal (protocol events seen) or records"),
    Column("rejected_count", "bigint", False),
    Column("duplicate_count", "bigint", False),
    Column("out_of_order_count", "bigint", False),
    Column("snapshot_mismatch_count", "bigint", False),
    Column("late_count", "bigint", False, "rows that arrived behind the watermark"),
    Column("pending_transactions", "int", False),
    Column("next_deadline", "timestamp", doc="when the group next changes by itself"),
    Column("group_type", "string", False, _SHAPE_TYPE_DOC),
    Column("group_epoch", "int",
           doc="consumer, share and streams groups: the group epoch (also generation_id)"),
    Column("assignment_epoch", "int",
           doc="consumer, share and streams groups: the target assignment epoch"),
    *SHARE_STREAMS_GROUP,
)

_OFFSET_BASE: tuple[Column, ...] = (
    Column("group_id", "string", False),
    Column("topic", "string", False),
    Column("partition", "int", False),
    Column("committed_offset", "bigint"),
    Column("leader_epoch", "int"),
    Column("commit_metadata", "string"),
    Column("commit_timestamp", "timestamp"),
    Column("expire_timestamp", "timestamp"),
    Column("member_id", "string"),
    Column("generation_id", "int"),
    Column("log_partition", "int"),
    Column("log_offset", "bigint"),
)

# Streams groups commit offsets as consumer groups do; share groups commit none (their progress
# is in __share_group_state, which the share coordinator keeps).
_OFFSET_TYPE_DOC = "classic, consumer or streams (an offset committed to no group creates a "\
                   "classic group, as in Kafka)"

COMMITTED_OFFSETS: tuple[Column, ...] = _OFFSET_BASE + (
    Column("group_type", "string", False, "the group's type now, as its group_state row says: "
           + _OFFSET_TYPE_DOC + "; a converted group's rows are written again"),
)

OFFSET_HISTORY: tuple[Column, ...] = _OFFSET_BASE + (
    Column("event_time", "timestamp", False),
    Column("change", "string", False, "COMMIT, TOMBSTONE, EXPIRED or TXN_ABORTED"),
    Column("producer_id", "bigint"),
    Column("group_type", "string", False, "the group's type when the row was written: "
           + _OFFSET_TYPE_DOC),
)

GROUP_TRANSITIONS: tuple[Column, ...] = (
    Column("group_id", "string", False),
    Column("event_time", "timestamp", False),
    Column("log_partition", "int"),
    Column("log_offset", "bigint"),
    Column("from_state", "string"),
    Column("to_state", "string", False),
    Column("generation_id", "int", False),
    Column("cause", "string", False),
    Column("member_id", "string"),
    Column("member_count", "int", False),
    Column("detail", "string"),
    Column("seq", "int", False, "order of rows caused by the same log position"),
    Column("group_type", "string", False,
           "the group's type after the change (a group created by a share or streams record "
           "is of that type from its GROUP_CREATED row; the Dead row of a deleted group is of "
           "the type that died): " + GROUP_TYPE_DOC),
)

REBALANCES: tuple[Column, ...] = (
    Column("group_id", "string", False),
    Column("generation_id", "int"),
    Column("started_at", "timestamp"),
    Column("completed_at", "timestamp", False),
    Column("duration_ms", "bigint"),
    Column("cause", "string", False),
    Column("protocol", "string"),
    Column("leader_id", "string"),
    Column("member_count", "int", False),
    Column("members_joined", "int", False),
    Column("members_left", "int", False),
    Column("partitions_moved", "int",
           doc="partitions whose owner changed (classic, consumer groups; null for streams "
               "groups, whose members own tasks: active_tasks_moved)"),
    Column("partitions_total", "int",
           doc="partitions assigned after it (null for streams groups: active_tasks_total)"),
    Column("outcome", "string", False, "COMPLETED, EMPTIED (no member left) or ABANDONED"),
    Column("log_partition", "int"),
    Column("log_offset", "bigint"),
    Column("group_type", "string", False, "classic, consumer or streams (share groups have no "
           "rebalances)"),
    Column("active_tasks_moved", "int",
           doc="streams groups: active tasks (subtopology, partition) whose owner changed; "
               "null for other groups"),
    Column("active_tasks_total", "int",
           doc="streams groups: active tasks assigned after it; null for other groups"),
)

REBALANCE_COST: tuple[Column, ...] = (
    Column("group_id", "string", False),
    Column("generation_id", "int"),
    Column("completed_at", "timestamp", False, "as in rebalances: the two tables join on "
           "(group_id, log_partition, log_offset, completed_at)"),
    Column("log_partition", "int"),
    Column("log_offset", "bigint"),
    Column("group_type", "string", False, "classic, consumer or streams"),
    Column("rebalance_protocol", "string", False,
           "EAGER (a classic group under range, roundrobin, sticky or any assignor not known "
           "to be cooperative: every member revokes everything when the rebalance starts), "
           "COOPERATIVE (a classic group under cooperative-sticky or Kafka Streams' classic "
           "assignor: only the partitions that move are revoked, in a first round, and "
           "handed out in a second) or INCREMENTAL (KIP-848 consumer and streams groups: "
           "each member reconciles on its own, no group-wide barrier)"),
    Column("cause", "string", False, "as in rebalances: what started it"),
    Column("duration_ms", "bigint", doc="start to completion; null where the log does not "
           "show the start (a records-only log's classic rebalance)"),
    Column("partitions_total", "int", doc="partitions (a streams group: active tasks) owned "
           "before or after it"),
    Column("partitions_revoked", "int", False,
           "partitions (tasks) taken from a member: EAGER every partition owned before; "
           "otherwise those whose owner changed or that lost their owner"),
    Column("partitions_moved", "int", False, "partitions (tasks) whose owner changed"),
    Column("partitions_unowned", "int", False,
           "partitions (tasks) without an owner while it ran: EAGER every partition owned "
           "before or after; COOPERATIVE those it hands out that no member still in the "
           "group owned before (a second round hands out what the first revoked; a leaver's "
           "partitions); INCREMENTAL every partition that changes owner or had none (each "
           "passes through no owner between its revocation and its new owner's heartbeat: an "
           "upper bound)"),
    Column("unowned_partition_ms", "bigint",
           doc="partitions_unowned x duration_ms: the partition-milliseconds nobody consumed "
               "because of it (null when the duration is unknown)"),
    Column("outcome", "string", False, "as in rebalances"),
)

GROUP_HISTORY: tuple[Column, ...] = (
    Column("group_id", "string", False),
    Column("event_time", "timestamp", False, "when the group took this shape"),
    Column("log_partition", "int"),
    Column("log_offset", "bigint", doc="the record that changed it (a timer: the last one)"),
    Column("seq", "int", False, "order of rows at the same log position and time"),
    Column("state", "string", False),
    Column("generation_id", "int", False),
    Column("protocol_type", "string"),
    Column("protocol", "string"),
    Column("leader_id", "string"),
    Column("members", f"array<{STATE_MEMBER}>", False,
           "as in group_state, last_heartbeat null: heartbeats do not change the shape"),
    Column("member_count", "int", False),
    Column("state_since", "timestamp"),
    Column("rebalance_count", "bigint", False),
    Column("group_type", "string", False, _SHAPE_TYPE_DOC),
    Column("group_epoch", "int"),
    Column("assignment_epoch", "int"),
    Column("departures", "array<struct<member_id:string,cause:string>>", False,
           "members this step removed and why (SESSION_TIMEOUT, MEMBER_LEFT, REBALANCE_TIMEOUT "
           "for a member that did not rejoin, ...); empty when none left"),
    *SHARE_STREAMS_GROUP,
)


def _group_then(when: str, type_note: str) -> tuple[Column, ...]:
    """The group as it stood `when`: its state, generation and type (`type_note` adds to the
    type's doc)."""
    return (Column("group_state", "string", doc=f"the group's state {when}"),
            Column("group_generation_id", "int"),
            Column("group_type", "string", doc=f"the group's type {when}{type_note}"))


REJECTED_EVENTS: tuple[Column, ...] = EVENT_COLUMNS + (
    Column("reason", "string", False, "Kafka's error name, MALFORMED: <what>, DUPLICATE, ..."),
    *_group_then("when the row was refused", "; null when there was no group"),
    Column("log_topic", "string",
           doc="null: a record of the event log (__consumer_offsets); __share_group_state: a "
               "record of the share-state log (--share-state), its key and value in raw_key "
               "and raw_value"),
)

ERROR_RESPONSES: tuple[Column, ...] = EVENT_COLUMNS + (
    Column("response", "string", False,
           "the error Kafka answered a request it applied with: MEMBER_ID_REQUIRED (a new "
           "member's first JoinGroup: its id is now pending) or REBALANCE_IN_PROGRESS (a "
           "heartbeat during PreparingRebalance: the session is kept alive)"),
    *_group_then("after the request", " (classic: only classic requests are answered so)"),
)

# Not written by the fold (it cannot know names: Kafka 4.1+ writes no subscription metadata
# record, so the log names topics of KIP-848 groups by id only). `jobs/ingest.py` records it
# from the cluster's metadata, or from a map file beside a raw dump, with the log (and with
# --warehouse straight into the warehouse); replay and backfill copy the log's into the
# warehouse when they start (`copy_log_topics`). The SQL views and the report name KIP-848
# members' partitions through it at query time.
TOPICS: tuple[Column, ...] = (
    Column("topic_id", "string", False, "Kafka's topic id (Uuid.toString(), URL-safe base64)"),
    Column("topic_name", "string", False),
    Column("seen_at", "timestamp", False,
           "when the ingest first saw this id with this name (wall clock); ids are never "
           "reused, a deleted and recreated topic gets a new id and a new row"),
    Column("source", "string", False,
           "cluster (the live ingest's admin call), offset-commit (the ids Kafka 4.3+'s commits "
           "carry, from a raw dump) or the map file"),
)

OUTPUT_TABLES: dict[str, tuple[Column, ...]] = {
    "group_state": GROUP_STATE,
    "committed_offsets": COMMITTED_OFFSETS,
    "offset_history": OFFSET_HISTORY,
    "group_transitions": GROUP_TRANSITIONS,
    "rebalances": REBALANCES,
    "rebalance_cost": REBALANCE_COST,
    "rejected_events": REJECTED_EVENTS,
    "error_responses": ERROR_RESPONSES,
    "group_history": GROUP_HISTORY,
}

# Tables under the warehouse that the replay does not write.
METADATA_TABLES: dict[str, tuple[Column, ...]] = {"topics": TOPICS}

TABLE_KEYS: dict[str, tuple[str, ...]] = {
    "group_state": ("group_id",),
    "committed_offsets": ("group_id", "topic", "partition"),
}
# The tables without a key are history: appended to, never updated.
APPEND_TABLES: tuple[str, ...] = tuple(t for t in OUTPUT_TABLES if t not in TABLE_KEYS)
# The time that places a history table's row (as of T, a retention's cut): event_time but
# for the tables named here.
TIME_COLUMNS: dict[str, str] = {"rebalances": "completed_at", "rebalance_cost": "completed_at"}
