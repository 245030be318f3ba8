"""The warehouse's working tables: what a stream or a backfill keeps to continue, not the
contract's output. Their names (each a leading underscore, so SQL users see them apart) and
the keys the MERGEs into them match on, stated once here."""

from __future__ import annotations

from schemas.share_state import SHARE_KEY

LAG_STATE = "_lag_state"  # the lag engine's state: each partition's and group's (kind, key)
LAG_PENDING = "_lag_pending"  # samples delivered whose rows wait for the watermark
SHARE_CURRENT = "_share_state"  # each share partition's last share_partition_state row
SHARE_LAG = "_share_lag"  # the share lag step's state
BACKFILL_STATE = "_backfill_state"  # a group's final state for a stream to start from
LOG_TOPICS = "_topics"  # beside an event log: the topic ids its ingest saw

INTERNAL_KEYS: dict[str, tuple[str, ...]] = {
    LAG_STATE: ("kind", "key"),
    SHARE_CURRENT: SHARE_KEY,
}
