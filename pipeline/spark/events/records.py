"""Raw `__consumer_offsets` records (Arrow batches of key, value, partition, offset, timestamp, as
Spark's Kafka source or an archived dump gives them) to event-log rows, for `mapInArrow`;
`__share_group_state` records to the share-state log's rows the same way.

Each record goes through `pipeline.decode.decode_record` (the share coordinator's records:
`pipeline.decode.share_state.decode_share_state`, into their log's schema). The row's
position and event time come from the Kafka record itself; `raw_key`/`raw_value` are the
record's bytes. The decoded fragment is projected onto whatever event schema the driver
passes in, so columns added to `schemas/events.py` later are filled by name with no change
here: a column the decoder does not emit is null, a decoder key the schema lacks is dropped
(nested structs included), and a timestamp column `x` takes the decoder's integer-millisecond
`x_ms` (`MS_TO_TIMESTAMP`).

A record that cannot be decoded never fails the batch: it becomes a `MALFORMED_RECORD` row with
its position, raw bytes, the group id when the key alone still decodes, and the decoder's
message in the event log's `decode_error` column. The fold rejects such a row as
`MALFORMED: <decode_error>`, so the record ends in `rejected_events` with the decoder's reason.
The same happens to a decoded row whose values do not fit the schema's types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pyarrow as pa

from pipeline.decode import decode_record
from pipeline.decode.columns import MS_TO_TIMESTAMP
from pipeline.times import PANDAS_MS_RANGE
from schemas.events import MALFORMED_RECORD

DECODE_ERROR = "decode_error"
RAW_COLUMNS = ("key", "value", "partition", "offset", "timestamp")
# event-log column <- Kafka record column; these never come from the decoder.
FROM_RECORD = {"log_partition": "partition", "log_offset": "offset", "event_time": "timestamp",
               "raw_key": "key", "raw_value": "value"}
_TIMESTAMP_SOURCES = {ts: ms for ms, ts in MS_TO_TIMESTAMP.items()}


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 1000 else text[:997] + "..."


Decoder = Callable[[bytes | None, bytes | None], dict[str, Any]]


def decode_one(key: bytes | None, value: bytes | None,
               decode: Decoder = decode_record) -> dict[str, Any]:
    """The decoder's row, or a MALFORMED_RECORD row naming why it could not be decoded."""
    try:
        return decode(key, value)
    except Exception as exc:  # DecodeError, or a decoder bug met by odd bytes: never fatal
        error = _short(exc) if type(exc).__name__ == "DecodeError" else (
            f"decoder failed: {type(exc).__name__}: {_short(exc)}")
    group_id = None
    if key is not None:
        try:  # the key alone, read as a tombstone, still names the group
            group_id = decode(key, None).get("group_id")
        except Exception:
            group_id = None
    return {"event_type": MALFORMED_RECORD, "group_id": group_id, DECODE_ERROR: error}


def _source_key(field: pa.Field) -> str:
    if pa.types.is_timestamp(field.type):
        return str(_TIMESTAMP_SOURCES.get(field.name, f"{field.name}_ms"))
    return str(field.name)


def _value(row: dict[str, Any], field: pa.Field, key: str) -> Any:
    value = row.get(key, row.get(field.name) if key != field.name else None)
    if value is not None and pa.types.is_timestamp(field.type) and isinstance(value, int):
        low, high = PANDAS_MS_RANGE
        if not low <= value <= high:
            raise ValueError(f"{value} ms is outside the years 1677-2262 a pandas timestamp holds")
        return value * 1000  # ms -> the schema's microseconds
    return value


def _column(rows: list[dict[str, Any]], field: pa.Field) -> pa.Array:
    key = _source_key(field)
    return pa.array([_value(r, field, key) for r in rows], type=field.type)


def _fit(rows: list[dict[str, Any]], fields: list[pa.Field]) -> list[pa.Array]:
    """Columns for `fields`; a row a column cannot hold is turned into a MALFORMED_RECORD row."""
    try:
        return [_column(rows, f) for f in fields]
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        pass
    for i, row in enumerate(rows):  # rare: find the rows at fault, one at a time
        for f in fields:
            try:
                _column([row], f)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError,
                    OverflowError) as exc:
                rows[i] = {"event_type": MALFORMED_RECORD, "group_id": row.get("group_id"),
                           DECODE_ERROR: f"{f.name} does not fit {f.type}: {_short(exc)}"}
                break
    return [_column(rows, f) for f in fields]


def decode_batch(batch: pa.RecordBatch, schema: pa.Schema,
                 decode: Decoder = decode_record) -> pa.RecordBatch:
    """One Arrow batch of raw records to one batch of `schema` (the log's, as Arrow)."""
    keys = batch.column("key").to_pylist()
    values = batch.column("value").to_pylist()
    rows = [decode_one(k, v, decode) for k, v in zip(keys, values, strict=True)]
    decoded = [f for f in schema if f.name not in FROM_RECORD]
    fitted = dict(zip([f.name for f in decoded], _fit(rows, decoded), strict=True))
    columns = []
    for f in schema:
        if f.name in FROM_RECORD:
            columns.append(batch.column(FROM_RECORD[f.name]).cast(f.type))
        else:
            columns.append(fitted[f.name])
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def decode_batches(schema: pa.Schema, decode: Decoder = decode_record) -> Any:
    """The `mapInArrow` function: every raw batch decoded into `schema` by `decode`."""

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield decode_batch(batch, schema, decode)

    return run
