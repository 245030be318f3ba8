"""Consumer lag (contract section 5): the end-offset samples read beside the log, and the lag
tables replay and backfill write from them when given `--end-offsets`.

A sample says where a topic partition's log ended at a moment (Kafka's ListOffsets). The
replay knows every group's committed offset at every moment, so each sample gives, for
every group that consumes the partition, its lag in messages (`log_end_offset` minus the
committed offset) and in time (how long ago the log end stood where the committed offset
is now, interpolated between samples), Burrow's verdict on the partition, and what the
group's coordinator was doing. `docs/lag.md` has the definitions and where they come from.
"""

from __future__ import annotations

from schemas.columns import Column

# Input: one row per topic partition per sample. Written by jobs/ingest.py --end-offsets (a
# live cluster's Admin ListOffsets), jobs/generate.py --end-offsets (simulated producers), or
# by the user (exported from a metrics store, say). Required: the first four columns; a row
# lacking one, or with a negative partition or offset, goes to `rejected_samples`.
LOG_END_OFFSETS: tuple[Column, ...] = (
    Column("topic", "string", doc="the consumed topic (required)"),
    Column("partition", "int", doc="the topic's partition (required)"),
    Column("log_end_offset", "bigint",
           doc="ListOffsets LATEST: the offset the partition's next record will take "
               "(required). Under READ_UNCOMMITTED (the default) the high watermark, what "
               "kafka-consumer-groups --describe prints as LOG-END-OFFSET"),
    Column("sampled_at", "timestamp",
           doc="when the sample was taken (required); lag is computed as of this time"),
    Column("log_start_offset", "bigint",
           doc="ListOffsets EARLIEST: the first offset still in the log (retention, "
               "compaction and DeleteRecords move it)"),
    Column("max_timestamp", "timestamp",
           doc="ListOffsets MAX_TIMESTAMP: the largest record timestamp in the partition"),
    Column("max_timestamp_offset", "bigint", doc="the offset of that record"),
    Column("isolation_level", "string",
           doc="READ_UNCOMMITTED (high watermark) or READ_COMMITTED (last stable offset)"),
    Column("source", "string", doc="who took the sample: cluster, generator, or the user's text"),
)
# A sample is known by its partition and moment: a second row with the same key is the same
# sample delivered again (the ingest writes each key once; the replay reads the first).
SAMPLE_KEY: tuple[str, ...] = ("topic", "partition", "sampled_at")
SAMPLE_REQUIRED: tuple[str, ...] = ("topic", "partition", "log_end_offset", "sampled_at")

# Why a partition_lag row has, or lacks, a committed offset (offset_status).
COMMITTED, NO_COMMIT, DELETED, EXPIRED = "COMMITTED", "NO_COMMIT", "DELETED", "EXPIRED"
OFFSET_STATUSES = (COMMITTED, NO_COMMIT, DELETED, EXPIRED)
# A share group's row: it commits no offsets; its lag is the share partition's (Kafka 4.2).
SHARE_STATE = "SHARE_STATE"
# Burrow's statuses, in the order of their codes (core/protocol/evaluator.go); a group takes
# its worst partition's, and its group form shows STOP, STALL and REWIND as ERR.
# LOST is ours, after Burrow's codes: the committed offset is below the log start, so records
# were deleted (retention, DeleteRecords) before the group read them; a group shows it as ERR.
NOTFOUND, OK, WARN, ERR, STOP, STALL, REWIND = "NOTFOUND", "OK", "WARN", "ERR", "STOP", "STALL", "REWIND"
LOST = "LOST"
STATUS_CODES = {s: code for code, s in enumerate((NOTFOUND, OK, WARN, ERR, STOP, STALL, REWIND,
                                                   LOST))}
PARTITION_STATUSES = (OK, WARN, STOP, STALL, REWIND, LOST)
GROUP_STATUSES = (NOTFOUND, OK, WARN, ERR)


class LagCause:
    """What the coordinator was doing while a group's lag built up (group_lag's `cause`):
    the group Dead or Empty (its state's name in capitals), rebalancing, its offsets expired
    or deleted, or none of these."""

    DEAD, EMPTY, REBALANCE = "DEAD", "EMPTY", "REBALANCE"
    OFFSETS_EXPIRED, OFFSETS_DELETED, NONE = "OFFSETS_EXPIRED", "OFFSETS_DELETED", "NONE"


CAUSES = (LagCause.DEAD, LagCause.EMPTY, LagCause.REBALANCE, LagCause.OFFSETS_EXPIRED,
          LagCause.OFFSETS_DELETED, LagCause.NONE)

PARTITION_LAG: tuple[Column, ...] = (
    Column("sampled_at", "timestamp", False, "the sample's time: everything is as of this moment"),
    Column("group_id", "string", False),
    Column("topic", "string", False),
    Column("partition", "int", False),
    Column("log_end_offset", "bigint", False, "the sample's end offset"),
    Column("log_start_offset", "bigint", doc="the sample's log start offset, when it has one"),
    Column("committed_offset", "bigint",
           doc="the group's committed offset as of sampled_at: every offset change with "
               "event_time <= sampled_at applied (committed_offsets_as_of's rule); null when "
               "offset_status is not COMMITTED"),
    Column("offset_status", "string", False,
           "COMMITTED; NO_COMMIT (assigned to a member, never committed); DELETED (an offset "
           "tombstone); EXPIRED (offsets.retention.minutes ran out); SHARE_STATE (a share "
           "group, which commits no offsets: its lag is its share partition's, from "
           "start_offset and delivery_complete_count)"),
    Column("committed_at", "timestamp",
           doc="event_time of the offset change that set (or removed) committed_offset"),
    Column("lag", "bigint",
           doc="log_end_offset - committed_offset, never negative (a commit ahead of a sample "
               "taken before it counts 0); null without a committed offset. A share group's "
               "(SHARE_STATE): Kafka 4.2's share lag, log_end_offset - start_offset - "
               "delivery_complete_count, never negative; null while either is unknown (-1), "
               "where kafka-share-groups prints -"),
    Column("lag_ms", "bigint",
           doc="time lag: sampled_at minus when the log end stood at committed_offset, "
               "interpolated between the partition's two samples (at or before sampled_at) "
               "that bracket it, as kafka-lag-exporter does; 0 when caught up; see lag_ms_basis"),
    Column("lag_ms_basis", "string",
           doc="CAUGHT_UP (lag 0: lag_ms 0); INTERPOLATED; LOWER_BOUND (no sample at or "
               "before sampled_at had the log end at or below committed_offset: lag_ms is "
               "sampled_at minus the partition's oldest sample, the least it can be; never "
               "extrapolated); null without a committed offset"),
    Column("member_id", "string", doc="the member the partition was assigned to then"),
    Column("client_id", "string", doc="that member's client id"),
    Column("client_host", "string", doc="that member's host"),
    Column("state", "string", doc="the group's state then (null: the group did not exist yet; "
                                  "null in a SHARE_STATE row, which the share-state log "
                                  "gives without the group's state)"),
    Column("generation_id", "int", doc="the group's generation then"),
    Column("group_type", "string", doc="the group's type then: classic, consumer or streams "
                                       "(null: the group did not exist yet); share for a "
                                       "SHARE_STATE row"),
    Column("status", "string",
           doc="Burrow's partition status then: OK, WARN, STOP, STALL or REWIND, by Burrow's "
               "rules in its code's order with sampled_at as 'now'; or LOST (ours, decided "
               "before Burrow's rules): lost_records > 0; null without a committed offset"),
    Column("rule", "string",
           doc="the rule that decided status: RECORDS_LOST, NO_COMMITS, INCOMPLETE, CAUGHT_UP "
               "(lag <= allowed), STOPPED, REWOUND, LAG_ZERO_IN_WINDOW, STALLED, "
               "LAG_NOT_DECREASING, PROGRESSING"),
    Column("window_commits", "int",
           doc="commits in Burrow's window: the last lag.burrow.intervals commits at or "
               "before sampled_at, none older than lag.burrow.expire.group.ms"),
    Column("window_span_ms", "bigint", doc="newest minus oldest commit time in the window"),
    Column("idle_ms", "bigint", doc="sampled_at minus the newest commit time in the window"),
    Column("window_min_lag", "bigint",
           doc="least lag of a window commit (each against the end offset sampled at or "
               "before it; null for a commit no sample precedes)"),
    Column("window_max_lag", "bigint", doc="greatest such lag"),
    Column("lost_records", "bigint",
           doc="records deleted (retention, DeleteRecords) "
               "before the group read them: log_start_offset - committed_offset when the "
               "committed offset is below the log start, else 0; null without a committed "
               "offset or a log start. lag still counts them, as kafka-consumer-groups does: "
               "lag - lost_records is what is left to read"),
    Column("lost_since", "timestamp",
           doc="the first sample of the run of samples, up to sampled_at, at which "
               "lost_records was above 0; null when it is not"),
    Column("loss_eta_ms", "bigint",
           doc="at the window's rates, how long until the log start passes the committed "
               "offset: (committed_offset - log_start_offset) / (retention_rate - "
               "consume_rate); 0 once records are lost; null when not at risk (caught up, "
               "the log start not gaining on the committed offset, or a rate unknown)"),
    Column("produce_rate", "double",
           doc="records per second the log end grew over the window: the pair's samples "
               "among the partition's last lag.burrow.intervals at or before sampled_at "
               "(Burrow's broker window), oldest to newest; null with fewer than two"),
    Column("consume_rate", "double",
           doc="records per second the committed offset advanced over the same window, from "
               "its oldest sample with a committed offset (negative after a rewind); null "
               "without one before sampled_at's"),
    Column("retention_rate", "double",
           doc="records per second the log start advanced over the same window, from its "
               "oldest sample with a log start (retention deletes whole segments, so it moves "
               "in steps)"),
    Column("catch_up_ms", "bigint",
           doc="at the window's rates, time until lag reaches 0: lag / (consume_rate - "
               "produce_rate); 0 when lag <= lag.burrow.allowed.lag; null when not "
               "converging (consuming no faster than producing) or a rate unknown"),
    Column("start_offset", "bigint",
           doc="SHARE_STATE: the share partition's start offset (SPSO) as of sampled_at, as "
               "share_partition_state has it (-1: not yet known); null for other groups"),
    Column("delivery_complete_count", "int",
           doc="SHARE_STATE: records at or after start_offset whose delivery is complete "
               "(acknowledged or archived), as of sampled_at (-1: unknown)"),
)

GROUP_LAG: tuple[Column, ...] = (
    Column("sampled_at", "timestamp", False),
    Column("group_id", "string", False),
    Column("state", "string", doc="the group's state then"),
    Column("generation_id", "int"),
    Column("group_type", "string", doc="the group's type then, as in partition_lag (share: "
                                       "the sum of its SHARE_STATE rows, state and "
                                       "generation null, status NOTFOUND: no commits)"),
    Column("total_lag", "bigint", doc="sum of the partitions' lags (null when none is known)"),
    Column("max_lag", "bigint", doc="the greatest partition lag"),
    Column("max_lag_ms", "bigint", doc="the greatest partition time lag"),
    Column("lost_records", "bigint",
           doc="sum of the partitions' lost_records (null when none is known)"),
    Column("lost_since", "timestamp", doc="the earliest of the partitions' lost_since"),
    Column("loss_eta_ms", "bigint",
           doc="the least of the partitions' loss_eta_ms: the first to lose records"),
    Column("produce_rate", "double", doc="sum of the partitions' produce_rate"),
    Column("consume_rate", "double", doc="sum of the partitions' consume_rate"),
    Column("catch_up_ms", "bigint",
           doc="the greatest of the lagging partitions' catch_up_ms (the group has caught "
               "up when its slowest partition has); 0 when none lags; null when one of them "
               "is not converging"),
    Column("partitions", "int", False, "partition_lag rows of the group at this sample"),
    Column("partitions_unknown", "int", False, "of them, those with no lag (no committed offset; "
                                                 "a share partition's start offset or "
                                                 "delivery-complete count unknown)"),
    Column("complete", "double", False,
           "Burrow's completeness: the share of partitions whose window is full"),
    Column("status", "string", False,
           "Burrow's group status: the worst partition's, STOP, STALL and REWIND shown as ERR; "
           "NOTFOUND when the group is Dead, or no partition has a commit in the window"),
    Column("worst_topic", "string", doc="the partition that decided status (ties: most lag)"),
    Column("worst_partition", "int"),
    Column("worst_status", "string", doc="its partition status"),
    Column("worst_rule", "string", doc="its rule"),
    Column("cause", "string",
           doc="what the coordinator was doing while the lag built up, examined from "
               "cause_window_start to sampled_at: DEAD, EMPTY (no member consumed), REBALANCE "
               "(in progress, or completed inside the window), OFFSETS_EXPIRED, "
               "OFFSETS_DELETED, or NONE (the coordinator was quiet: the consumers are slow); "
               "null when the group has no lag"),
    Column("cause_generation_id", "int", doc="REBALANCE: the generation it produced"),
    Column("cause_detail", "string",
           doc="REBALANCE: its cause (MEMBER_JOINED, ...); EMPTY/DEAD: the transition's cause; "
               "OFFSETS_*: the partitions affected"),
    Column("cause_since", "timestamp",
           doc="when it began (the rebalance's start, the group's entry into the state, the "
               "first deletion in the window)"),
    Column("cause_ms", "bigint", doc="how much of the window it covered"),
    Column("cause_window_start", "timestamp",
           doc="sampled_at minus the larger of max_lag_ms and the time since the group's "
               "previous sample: since when the lag has been building"),
)

REJECTED_SAMPLES: tuple[Column, ...] = LOG_END_OFFSETS + (
    Column("reason", "string", False, "MALFORMED: <what>"),
)

# Written by replay and backfill with --end-offsets; all append-only.
LAG_TABLES: dict[str, tuple[Column, ...]] = {
    "partition_lag": PARTITION_LAG,
    "group_lag": GROUP_LAG,
    "rejected_samples": REJECTED_SAMPLES,
}
LAG_KEYS: dict[str, tuple[str, ...]] = {
    "partition_lag": ("sampled_at", "group_id", "topic", "partition"),
    "group_lag": ("sampled_at", "group_id"),
    "rejected_samples": SAMPLE_KEY,
}
