"""Robustness: random bytes and mutated valid records (bit flips, truncations, extensions,
overwrites, insertions) either decode to a row or raise DecodeError, never anything else."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.decode import DecodeError, decode_record, encode_record
from tests.decode import samples

VALID = [encode_record(row) for row in samples.all_valid_rows()]
TYPES = [*range(0, 25), 99, -1]


def _decodes_or_decode_error(key: bytes | None, value: bytes | None) -> None:
    try:
        row = decode_record(key, value)
    except DecodeError as e:
        assert str(e)
        return
    assert isinstance(row, dict)
    assert isinstance(row["event_type"], str)


def _mutate(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    kind = rng.randrange(6)
    if kind == 0 and buf:
        i = rng.randrange(len(buf))
        buf[i] ^= 1 << rng.randrange(8)
    elif kind == 1:
        del buf[rng.randrange(len(buf) + 1):]
    elif kind == 2:
        buf += rng.randbytes(rng.randrange(1, 9))
    elif kind == 3 and buf:
        i = rng.randrange(len(buf))
        buf[i] = rng.choice((0x00, 0x7F, 0x80, 0xFF, rng.randrange(256)))
    elif kind == 4:
        i = rng.randrange(len(buf) + 1)
        buf[i:i] = rng.randbytes(rng.randrange(1, 5))
    elif buf:
        i = rng.randrange(len(buf))
        del buf[i:i + rng.randrange(1, 5)]
    return bytes(buf)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TYPES), st.binary(max_size=64), st.none() | st.binary(max_size=256))
def test_random_bytes_decode_or_raise_decode_error(
        record_type: int, key_body: bytes, value: bytes | None) -> None:
    _decodes_or_decode_error(record_type.to_bytes(2, "big", signed=True) + key_body, value)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(VALID), st.randoms(use_true_random=False), st.integers(1, 4),
       st.booleans())
def test_mutated_valid_records_decode_or_raise_decode_error(
        record: tuple[bytes, bytes | None], rng: random.Random, rounds: int,
        mutate_key: bool) -> None:
    key, value = record
    for _ in range(rounds):
        if mutate_key or value is None:
            key = _mutate(key, rng)
        else:
            value = _mutate(value, rng)
    _decodes_or_decode_error(key, value)


def test_twenty_thousand_seeded_mutations_decode_or_raise_decode_error() -> None:
    rng = random.Random(20_240_611)
    outcomes = {"row": 0, "error": 0}
    for _ in range(24_000):
        key, value = rng.choice(VALID)
        for _ in range(rng.randrange(1, 4)):
            if value is not None and rng.random() < 0.8:
                value = _mutate(value, rng)
            else:
                key = _mutate(key, rng)
        try:
            decode_record(key, value)
            outcomes["row"] += 1
        except DecodeError:
            outcomes["error"] += 1
    assert outcomes["row"] > 1000 and outcomes["error"] > 1000
