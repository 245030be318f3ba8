"""Every key `decode_record` emits is an event-log column (schemas.events) or one of the few the
decoder alone emits (pipeline.decode.columns), each type stated in one of the two; the same
holds for the keys of each snapshot member."""

from __future__ import annotations

from pipeline.decode import decode_record, encode_record
from pipeline.decode.columns import DECODER_ONLY_COLUMNS, EXTRA_MEMBER_FIELDS, MS_TO_TIMESTAMP
from schemas.events import EVENT_COLUMNS
from tests.decode import samples

CONTRACT = {c.name for c in EVENT_COLUMNS}
CONTRACT_MEMBER = {"member_id", "group_instance_id", "client_id", "client_host",
                   "session_timeout_ms", "rebalance_timeout_ms", "subscription", "assignment"}


def _decoded_rows() -> list[dict[str, object]]:
    rows = [decode_record(*encode_record(r)) for r in samples.all_valid_rows()]
    rows.append(decode_record(b"\x00\x09\x00\x01g", b"\x00\x00"))
    return rows


def test_every_emitted_column_is_in_the_contract_or_the_decoders_own() -> None:
    for row in _decoded_rows():
        unknown = set(row) - CONTRACT - set(DECODER_ONLY_COLUMNS)
        assert not unknown, f"{row['event_type']}: {sorted(unknown)}"


def test_every_member_key_is_a_contract_field_or_listed_as_extra() -> None:
    for row in _decoded_rows():
        for member in row.get("members") or []:  # type: ignore[attr-defined]
            assert set(member) == CONTRACT_MEMBER | set(EXTRA_MEMBER_FIELDS)


def test_the_decoders_own_columns_are_not_the_contracts_and_their_types_are_balanced() -> None:
    # A column the event log adopts is declared there, not here too: one type for one name.
    assert not set(DECODER_ONLY_COLUMNS) & CONTRACT
    assert not set(EXTRA_MEMBER_FIELDS) & CONTRACT_MEMBER
    for ddl in [*DECODER_ONLY_COLUMNS.values(), *EXTRA_MEMBER_FIELDS.values()]:
        assert ddl.count("<") == ddl.count(">")
    assert set(MS_TO_TIMESTAMP) <= set(DECODER_ONLY_COLUMNS)
    assert set(MS_TO_TIMESTAMP.values()) <= CONTRACT
