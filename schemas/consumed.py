"""Which columns of the two logs name the topics a cluster's groups consume: the one rule the
end-offset sampler (and anything else that must know what to sample) derives from.

Every event type of the event log, and every one of the share-state log, has an entry, an
empty one for a type that names no consumed topic (`NAMES_NO_TOPIC`, each by name): a test
holds that, so a record type (a new group type) cannot be added without saying what the
sampler should learn from it.

A path is a column, then `.field` steps into structs; `[]` after a step takes each element of
an array. Its last step is a topic's name, or with `by_id` a topic id (Kafka's base64 uuid),
which whoever reads it resolves to a name through the cluster. `group_type` and `why` say,
in a log line, which kind of group named the topic and how.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas.events import CLASSIC_EVENT_TYPES, MALFORMED_RECORD
from schemas.share_state import SHARE_STATE_EVENT_TYPES


@dataclass(frozen=True)
class TopicsNamed:
    path: str
    group_type: str  # classic, consumer, share, streams; "any" for offsets any group commits
    why: str
    by_id: bool = False

    @property
    def reason(self) -> str:
        """How the topic came to be sampled, for a log line: `share group subscription`."""
        return self.why if self.group_type == "any" else f"{self.group_type} group {self.why}"

    @property
    def steps(self) -> tuple[tuple[str, bool], ...]:
        """(name, each element) for every step of `path`."""
        return tuple((s.removesuffix("[]"), s.endswith("[]")) for s in self.path.split("."))


_COMMITTED = TopicsNamed("topic", "any", "committed offsets")
_CONSUMER_SUBSCRIPTION = TopicsNamed("subscribed_topic_names[]", "consumer", "subscription")

CONSUMED_TOPICS: dict[str, tuple[TopicsNamed, ...]] = {
    "OFFSET_COMMIT": (_COMMITTED,),
    "JOIN": (TopicsNamed("protocols[].topics[]", "classic", "subscription"),),
    "SYNC": (TopicsNamed("assignments[].partitions[].topic", "classic", "assignment"),),
    "GROUP_METADATA": (TopicsNamed("members[].subscription[]", "classic", "subscription"),
                       TopicsNamed("members[].assignment[].topic", "classic", "assignment")),
    "CONSUMER_GROUP_PARTITION_METADATA": (
        TopicsNamed("topics_metadata[].topic_name", "consumer", "subscription metadata"),),
    "CONSUMER_GROUP_MEMBER_METADATA": (_CONSUMER_SUBSCRIPTION,),
    "CONSUMER_GROUP_REGULAR_EXPRESSION": (
        TopicsNamed("regex_topics[]", "consumer", "regular expression"),),
    "SHARE_GROUP_MEMBER_METADATA": (
        TopicsNamed("subscribed_topic_names[]", "share", "subscription"),),
    "SHARE_GROUP_STATE_PARTITION_METADATA": (
        TopicsNamed("initializing_topics[].topic_name", "share", "share-partition state"),
        TopicsNamed("initialized_topics[].topic_name", "share", "share-partition state")),
    "STREAMS_GROUP_TOPOLOGY": (
        TopicsNamed("subtopologies[].source_topics[]", "streams", "source topic"),
        TopicsNamed("subtopologies[].repartition_source_topics[].name", "streams",
                    "repartition topic"),
        TopicsNamed("subtopologies[].state_changelog_topics[].name", "streams",
                    "changelog topic")),
}
# Those that name no topic a group consumes, each by name (a test holds that every event type
# is in one list or the other): requests without topics, epochs, assignments by topic id
# (the same group's subscriptions name their topics), tombstones (a deleted offset or member
# consumes nothing) and rows the fold does not read.
_KIP848_NONE = ("CONSUMER_GROUP_METADATA", "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA",
                "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER",
                "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT")
_SHARE_NONE = ("SHARE_GROUP_METADATA", "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA",
               "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER", "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT")
_STREAMS_NONE = ("STREAMS_GROUP_METADATA", "STREAMS_GROUP_MEMBER_METADATA",
                 "STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA",
                 "STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER",
                 "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT")
_RECORDS = (tuple(t for t in CONSUMED_TOPICS if t not in CLASSIC_EVENT_TYPES)
            + _KIP848_NONE + _SHARE_NONE + _STREAMS_NONE)
NAMES_NO_TOPIC: tuple[str, ...] = (
    "HEARTBEAT", "LEAVE", "TXN_MARKER", "OFFSET_TOMBSTONE", "GROUP_TOMBSTONE",
    "UNSUPPORTED_RECORD", MALFORMED_RECORD,
    *_KIP848_NONE, *_SHARE_NONE, *_STREAMS_NONE,
    *(f"{t}_TOMBSTONE" for t in _RECORDS),
)
CONSUMED_TOPICS |= {t: () for t in NAMES_NO_TOPIC}

# `__share_group_state`: each share partition's state, by topic id.
SHARE_STATE_CONSUMED_TOPICS: dict[str, tuple[TopicsNamed, ...]] = {
    t: (TopicsNamed("topic_id", "share", "share-partition state", by_id=True),)
    if t in ("SHARE_SNAPSHOT", "SHARE_UPDATE") else ()
    for t in SHARE_STATE_EVENT_TYPES
}
