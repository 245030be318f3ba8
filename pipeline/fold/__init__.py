"""Kafka's group coordinator as a pure, replayable fold: classic groups, KIP-848 consumer
groups (`consumer_groups`), KIP-932 share groups (`share_groups`) and KIP-1071 streams groups
(`streams_groups`). Standard library only.

    result = fold("my-group", events)          # or fold(previous_group, more_events)
    result.group, result.outputs.transitions   # new state and the rows it wrote
    advance(result.group, watermark_ms)        # fire timers of a silent group
"""

from __future__ import annotations

from pipeline.fold.config import CoordinatorConfig
from pipeline.fold.context import Outputs
from pipeline.fold.events import Event, Protocol, SnapshotMember
from pipeline.fold.fold import FoldResult, advance, apply, fold, reject_unkeyed
from pipeline.fold.model import Group, Member, Offset
from pipeline.fold.rows import committed_offset_rows, group_state_row
from pipeline.fold.serde import dumps, loads
from pipeline.fold.timers import next_deadline

__all__ = [
    "CoordinatorConfig", "Event", "FoldResult", "Group", "Member", "Offset", "Outputs",
    "Protocol", "SnapshotMember", "advance", "apply", "committed_offset_rows", "dumps",
    "fold", "group_state_row", "loads", "next_deadline", "reject_unkeyed",
]
