"""Every metric the exporter serves, with the contract column it reads: one list, which the
collector follows and docs/metrics.md documents (a test holds the page to it).

Names follow kafka-lag-exporter where it has one, so its dashboards and alerts work
unchanged (`kafka_consumergroup_group_lag` and `_lag_seconds` per partition,
`kafka_consumergroup_group_max_lag`, `_max_lag_seconds` and `_sum_lag` per group, labels
`group`, `topic`, `partition`); the rest take our prefix `cgr_`. A column named here is
checked against `schemas/` when this module loads: a renamed column fails the import, not
a scrape.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas.columns import Column
from schemas.lag import GROUP_LAG, LAG_KEYS, PARTITION_LAG
from schemas.tables import GROUP_STATE, TABLE_KEYS

PREFIX = "cgr_"
PROGRESS = "progress"  # the replay's own snapshot (`ReplayProgress`), not a table
TABLES: dict[str, tuple[Column, ...]] = {
    "partition_lag": PARTITION_LAG, "group_lag": GROUP_LAG, "group_state": GROUP_STATE}
LAG = ("group_lag", "partition_lag")  # the lag readings: a scrape's new rows add to those shown
# What makes a row one series: the table's key without its time (the newest row per key wins).
KEYS: dict[str, tuple[str, ...]] = {
    t: tuple(c for c in {**LAG_KEYS, **TABLE_KEYS}[t] if c != "sampled_at") for t in TABLES}
# Label <- column of every table's key; kafka-lag-exporter says `group` where we say group_id.
KEY_LABELS: dict[str, str] = {"group_id": "group", "topic": "topic", "partition": "partition"}


@dataclass(frozen=True)
class Metric:
    """One metric: `column` of `table` is its value, or (with `label`) its label, the value
    then being what `value` says: `code` Burrow's status code, `one` 1."""

    name: str
    kind: str  # "gauge" or "counter"
    help: str
    table: str
    column: str
    ms: bool = False  # a milliseconds column, served in seconds
    label: str | None = None  # the column's value goes to this label
    value: str = "column"  # "column", "code" or "one"
    timestamp: bool = False  # a datetime column, served as epoch seconds

    def __post_init__(self) -> None:
        if self.table != PROGRESS and self.column not in {c.name for c in TABLES[self.table]}:
            raise ValueError(f"{self.name}: {self.table} has no column {self.column!r}")

    @property
    def labels(self) -> tuple[str, ...]:
        keys = () if self.table == PROGRESS else tuple(KEY_LABELS[k] for k in KEYS[self.table])
        return keys + ((self.label,) if self.label else ())


PARTITION_METRICS: tuple[Metric, ...] = (
    Metric("kafka_consumergroup_group_lag", "gauge",
           "Newest sample's lag in messages of a group's partition", "partition_lag", "lag"),
    Metric("kafka_consumergroup_group_lag_seconds", "gauge",
           "Newest sample's time lag of a group's partition, seconds", "partition_lag", "lag_ms",
           ms=True),
    Metric("kafka_consumergroup_group_offset", "gauge",
           "A group's committed offset of the partition at the newest sample", "partition_lag",
           "committed_offset"),
    Metric(PREFIX + "partition_status", "gauge",
           "Burrow's partition status code (0 NOTFOUND, 1 OK, 2 WARN, 3 ERR, 4 STOP, 5 STALL, "
           "6 REWIND; ours: 7 LOST); its name in the label", "partition_lag", "status",
           label="status", value="code"),
    Metric(PREFIX + "partition_lost_records", "gauge",
           "Records of a group's partition deleted before the group read them (log start past "
           "its committed offset)", "partition_lag", "lost_records"),
)
GROUP_METRICS: tuple[Metric, ...] = (
    Metric("kafka_consumergroup_group_max_lag", "gauge",
           "Newest sample's greatest partition lag of a group, messages", "group_lag", "max_lag"),
    Metric("kafka_consumergroup_group_max_lag_seconds", "gauge",
           "Newest sample's greatest partition time lag of a group, seconds", "group_lag",
           "max_lag_ms", ms=True),
    Metric("kafka_consumergroup_group_sum_lag", "gauge",
           "Newest sample's total lag of a group, messages", "group_lag", "total_lag"),
    Metric(PREFIX + "group_status", "gauge",
           "Burrow's group status code (0 NOTFOUND, 1 OK, 2 WARN, 3 ERR); its name in the label",
           "group_lag", "status", label="status", value="code"),
    Metric(PREFIX + "group_lag_cause", "gauge",
           "1 for what the coordinator was doing while the group's lag built up (no series: "
           "no lag)", "group_lag", "cause", label="cause", value="one"),
    Metric(PREFIX + "group_lost_records", "gauge",
           "Records the group's partitions lost to retention before it read them",
           "group_lag", "lost_records"),
    Metric(PREFIX + "group_loss_eta_seconds", "gauge",
           "At the window's rates, seconds until the group's first partition loses records "
           "(0: losing now; no series: not at risk)", "group_lag", "loss_eta_ms", ms=True),
    Metric(PREFIX + "group_catch_up_seconds", "gauge",
           "At the window's rates, seconds until the group's lag is gone (no series: not "
           "converging)", "group_lag", "catch_up_ms", ms=True),
    Metric(PREFIX + "group_produce_rate", "gauge",
           "Records per second produced to the group's partitions over the window",
           "group_lag", "produce_rate"),
    Metric(PREFIX + "group_consume_rate", "gauge",
           "Records per second the group's committed offsets advanced over the window",
           "group_lag", "consume_rate"),
    Metric(PREFIX + "group_lag_sampled_timestamp_seconds", "gauge",
           "When the group's newest lag sample was taken, epoch seconds", "group_lag",
           "sampled_at", timestamp=True),
    Metric(PREFIX + "group_state", "gauge", "1 for the group's state, as Kafka names it",
           "group_state", "state", label="state", value="one"),
    Metric(PREFIX + "group_members", "gauge", "Members of the group", "group_state",
           "member_count"),
    Metric(PREFIX + "group_generation", "gauge", "The group's generation", "group_state",
           "generation_id"),
    Metric(PREFIX + "group_rebalances", "counter", "Rebalances the group has completed",
           "group_state", "rebalance_count"),
)
PROGRESS_METRICS: tuple[Metric, ...] = (
    Metric(PREFIX + "replay_batch_id", "gauge", "The last micro-batch's id", PROGRESS,
           "batch_id"),
    Metric(PREFIX + "replay_last_batch_duration_seconds", "gauge",
           "How long the last micro-batch took", PROGRESS, "duration_ms", ms=True),
    Metric(PREFIX + "replay_last_batch_input_rows", "gauge", "Event-log rows the last batch read",
           PROGRESS, "input_rows"),
    Metric(PREFIX + "replay_last_batch_output_rows", "gauge",
           "Rows the last batch wrote, all tables", PROGRESS, "output_rows"),
    Metric(PREFIX + "replay_last_batch_timestamp_seconds", "gauge",
           "When the last micro-batch finished, epoch seconds (wall clock)", PROGRESS,
           "finished_at", timestamp=True),
    Metric(PREFIX + "replay_input_rows", "counter", "Event-log rows read since the replay started",
           PROGRESS, "input_rows_total"),
    Metric(PREFIX + "replay_output_rows", "counter", "Rows written since the replay started",
           PROGRESS, "output_rows_total"),
    Metric(PREFIX + "replay_rejected_rows", "counter",
           "Rows refused (rejected_events) since the replay started", PROGRESS,
           "rejected_rows_total"),
    Metric(PREFIX + "replay_groups_failed", "counter",
           "Group folds that raised since the replay started", PROGRESS, "groups_failed_total"),
    Metric(PREFIX + "replay_watermark_timestamp_seconds", "gauge",
           "The stream's event-time watermark, epoch seconds", PROGRESS, "watermark",
           timestamp=True),
    Metric(PREFIX + "replay_newest_event_timestamp_seconds", "gauge",
           "The newest event time the replay has read, epoch seconds", PROGRESS, "newest_event",
           timestamp=True),
    Metric(PREFIX + "replay_watermark_delay_seconds", "gauge",
           "How far the watermark trails the newest event read", PROGRESS, "watermark_delay_ms",
           ms=True),
)
METRICS: tuple[Metric, ...] = PARTITION_METRICS + GROUP_METRICS + PROGRESS_METRICS
