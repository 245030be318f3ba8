"""Kafka `__consumer_offsets` records to event-log rows and back, standard library only: a
table-driven schema engine (`schema`), the record and consumer-protocol schemas as data
(`messages`, `consumer_protocol`), `decode_record` (`records`), the encoders (`encode`) and the
extra event-log columns the decoder emits (`columns`)."""

from __future__ import annotations

from pipeline.decode.encode import encode_key, encode_record, encode_value
from pipeline.decode.primitives import DecodeError, EncodeError
from pipeline.decode.records import decode_record

__all__ = [
    "DecodeError", "EncodeError", "decode_record", "encode_key", "encode_record", "encode_value",
]
