"""Record factories for KIP-1071 streams groups: a `StreamsLog` appends records of types 17 and
19-23 (and their tombstones) as Kafka's coordinator writes them, plus the sequences it writes
when a member joins or leaves and when the group is deleted
(`StreamsGroup.createGroupTombstoneRecords`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pipeline.fold import Event
from pipeline.fold.events import Subtopology, Task, TopicInfo
from tests.fold.records import ModernLog

STABLE, UNREVOKED, UNRELEASED = 1, 2, 3  # streams MemberState: there is no 0
Tasks = dict[str, list[int]]  # subtopology id -> partitions

# A word count: subtopology 0 reads `words` and repartitions by word, 1 counts.
WORD_COUNT = (
    Subtopology("0", source_topics=("words",), repartition_sink_topics=("app-repartition",)),
    Subtopology("1", repartition_source_topics=(TopicInfo("app-repartition", 4, 3),),
                state_changelog_topics=(TopicInfo("app-counts-changelog", 0, 0,
                                                  (("cleanup.policy", "compact"),)),)),
)


def _tasks(tasks: Tasks | None) -> tuple[Task, ...]:
    return tuple(Task(s, tuple(ps)) for s, ps in (tasks or {}).items())


@dataclass
class StreamsLog(ModernLog):
    RECORDS: ClassVar[str] = "STREAMS_GROUP"
    DELETED_LAST: ClassVar[tuple[str, ...]] = ("METADATA", "TOPOLOGY")  # 17, 23
    group: str = "app"

    # ------------------------------------------------------------- one record each

    def epoch(self, epoch: int, validated: int | None = 0) -> Event:
        return self.add("STREAMS_GROUP_METADATA", group_epoch=epoch, metadata_hash=0,
                        validated_topology_epoch=validated, assignment_configs=(
                            ("num.standby.replicas", "0"),))

    def topology(self, epoch: int = 0) -> Event:
        return self.add("STREAMS_GROUP_TOPOLOGY", topology_epoch=epoch, subtopologies=WORD_COUNT)

    def member(self, member_id: str, process: str = "p-1", topology_epoch: int = 0,
               instance: str | None = None, endpoint: tuple[str, int] | None = None,
               tags: tuple[tuple[str, str], ...] = ()) -> Event:
        return self.add("STREAMS_GROUP_MEMBER_METADATA", member_id=member_id,
                        group_instance_id=instance, rack_id=None,
                        client_id=f"{process}-StreamThread-1", client_host="/10.0.0.2",
                        rebalance_timeout_ms=300_000, topology_epoch=topology_epoch,
                        process_id=process, user_endpoint=endpoint, client_tags=tags)

    def target(self, member_id: str, active: Tasks, standby: Tasks | None = None,
               warmup: Tasks | None = None) -> Event:
        return self.add("STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER", member_id=member_id,
                        active_tasks=_tasks(active), standby_tasks=_tasks(standby),
                        warmup_tasks=_tasks(warmup))

    def current(self, member_id: str, epoch: int, active: Tasks, state: int = STABLE,
                previous: int | None = None, standby: Tasks | None = None,
                pending_active: Tasks | None = None) -> Event:
        return self.assignment(member_id, epoch, previous, state, active_tasks=_tasks(active),
                               standby_tasks=_tasks(standby), warmup_tasks=(),
                               active_tasks_pending_revocation=_tasks(pending_active),
                               standby_tasks_pending_revocation=(),
                               warmup_tasks_pending_revocation=())

    # ------------------------------------------------------------- Kafka's write sequences

    def joins(self, member_id: str, epoch: int, targets: dict[str, Tasks],
              process: str = "p-1") -> None:
        """A heartbeat from a new member: its metadata and the bumped group epoch (with the
        validated topology epoch), then the new target assignment (every member's) and its
        epoch."""
        self.member(member_id, process)
        self.assigns(epoch, targets)

    def stable_with(self, member_id: str = "m-1") -> None:
        """A new group: the first member's topology, then its join; it owns all four tasks of
        both subtopologies at epoch 1."""
        owned = {"0": [0, 1, 2, 3], "1": [0, 1, 2, 3]}
        self.topology()
        self.joins(member_id, 1, {member_id: owned})
        self.current(member_id, 1, owned, previous=0)
