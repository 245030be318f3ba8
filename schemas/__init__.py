"""The product contract as code: the event log's columns and every output table's columns.

Each column is a name, a Spark DDL type and a nullability. This package imports only the
standard library, so the pure fold and the Spark adapter read the same definitions; the
adapter turns them into StructTypes. Names here are the contract: add, never rename or drop.
"""

from __future__ import annotations

from schemas.columns import Column, ddl
from schemas.events import (
    EVENT_COLUMNS,
    EVENT_TYPES,
    KIP848_EVENT_TYPES,
    SHARE_STREAMS_EVENT_TYPES,
)
from schemas.lag import LAG_TABLES
from schemas.share_state import SHARE_TABLES
from schemas.tables import APPEND_TABLES, METADATA_TABLES, OUTPUT_TABLES, TABLE_KEYS, TIME_COLUMNS

# Every table a replay writes under its warehouse, by the contract: the output tables, then
# (with end offsets) the lag tables, then (with a share-state log) the share-state tables.
WAREHOUSE_TABLES: dict[str, tuple[Column, ...]] = OUTPUT_TABLES | LAG_TABLES | SHARE_TABLES

__all__ = [
    "APPEND_TABLES",
    "Column",
    "ddl",
    "EVENT_COLUMNS",
    "EVENT_TYPES",
    "KIP848_EVENT_TYPES",
    "METADATA_TABLES",
    "OUTPUT_TABLES",
    "SHARE_STREAMS_EVENT_TYPES",
    "TABLE_KEYS",
    "TIME_COLUMNS",
    "WAREHOUSE_TABLES",
]
