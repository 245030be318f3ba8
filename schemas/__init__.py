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
from schemas.tables import APPEND_TABLES, METADATA_TABLES, OUTPUT_TABLES, TABLE_KEYS

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
]
