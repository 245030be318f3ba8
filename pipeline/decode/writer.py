"""The one generic writer of the schema engine: `write_message(message, version, data, writer)`
writes a body declared in `pipeline.decode.schema` at any of its versions, from a mapping of
field name to value. Fields the version lacks are left out; missing fields take their defaults.
In flexible versions strings, bytes and arrays are compact and every struct ends with a
tagged-field section holding, in tag order, the tagged fields whose value differs from their
default (a nullable tagged struct with a varint presence marker) plus any raw `{tag: bytes}`
given under the `_unknown_tagged` key (for tests and for emitting future fields). Bad values
raise `EncodeError` naming the struct and field. Compiled once per (struct, version), cached."""

from __future__ import annotations

import struct as _struct
from collections.abc import Callable, Mapping
from typing import Any

from pipeline.decode.primitives import EncodeError, Writer
from pipeline.decode.schema import (
    ArrayOf,
    FieldType,
    Message,
    PerStruct,
    Struct,
    default_of,
    primitive_codecs,
)

UNKNOWN_TAGGED = "_unknown_tagged"  # data key: {tag: raw bytes} written after known tags

WriteFn = Callable[[Writer, Any], None]
StructWriteFn = Callable[[Writer, Mapping[str, Any]], None]

_PRIMITIVE_WRITERS: dict[tuple[str, bool, bool], WriteFn] = primitive_codecs(Writer)


def _array_writer(element: WriteFn, nullable: bool, compact: bool) -> WriteFn:
    def write(w: Writer, value: Any) -> None:
        if value is None:
            if not nullable:
                raise EncodeError("non-nullable array is None")
            w.count(-1, compact)
            return
        w.count(len(value), compact)
        for item in value:
            element(w, item)
    return write


def _nullable_struct_writer(body: StructWriteFn, tagged: bool) -> WriteFn:
    def write(w: Writer, value: Any) -> None:
        if value is None:
            if tagged:
                w.uvarint(0)
            else:
                w.int8(-1)
            return
        if tagged:
            w.uvarint(1)
        else:
            w.int8(1)
        body(w, value)
    return write


def _value_writer(t: FieldType, nullable: bool, version: int, flexible: bool,
                  tagged: bool = False) -> WriteFn:
    if isinstance(t, ArrayOf):
        return _array_writer(_value_writer(t.element, False, version, flexible),
                             nullable, flexible)
    if isinstance(t, Struct):
        body = struct_writer(t, version, flexible)
        return _nullable_struct_writer(body, tagged) if nullable else body
    return _PRIMITIVE_WRITERS[(t, nullable, flexible)]


def _write_tagged(w: Writer, fields: list[tuple[int, WriteFn, Any]],
                  unknown: Mapping[int, bytes]) -> None:
    encoded: list[tuple[int, bytes]] = []
    for tag, fn, value in fields:
        sub = Writer()
        fn(sub, value)
        encoded.append((tag, sub.getvalue()))
    encoded.extend((int(t), bytes(b)) for t, b in unknown.items())
    encoded.sort(key=lambda item: item[0])
    w.uvarint(len(encoded))
    for tag, data in encoded:
        w.uvarint(tag)
        w.uvarint(len(data))
        w.raw(data)


def _compile_writer(s: Struct, version: int, flexible: bool) -> StructWriteFn:
    inline: list[tuple[str, Any, WriteFn]] = []
    tagged: list[tuple[int, str, Any, WriteFn]] = []
    for f in s.fields:
        if version not in f.versions or (f.tag is not None and not flexible):
            continue
        nullable = version in f.nullable
        default = default_of(f, version)
        if f.tag is None:
            inline.append((f.name, default, _value_writer(f.type, nullable, version, flexible)))
        else:
            fn = _value_writer(f.type, nullable, version, flexible, True)
            tagged.append((f.tag, f.name, default, fn))
    tagged.sort(key=lambda item: item[0])

    def write(w: Writer, data: Mapping[str, Any]) -> None:
        if not isinstance(data, Mapping):
            raise EncodeError(f"{s.name}: expected a mapping, got {type(data).__name__}")
        name = ""
        try:
            for name, default, fn in inline:
                fn(w, data.get(name, default))
            name = "<tagged fields>"
            if flexible:
                present = [(tag, fn, data[n]) for tag, n, d, fn in tagged
                           if data.get(n, d) != d]
                _write_tagged(w, present, data.get(UNKNOWN_TAGGED) or {})
        except EncodeError as e:
            raise EncodeError(f"{s.name}.{name}: {e}") from None
        except (TypeError, AttributeError, ValueError, OverflowError, _struct.error) as e:
            raise EncodeError(f"{s.name}.{name}: cannot write {data.get(name)!r}: {e}") from None
    return write


# The compiled writer of a struct at a version; fields absent at that version are ignored.
struct_writer: PerStruct[StructWriteFn] = PerStruct(_compile_writer)


def write_message(m: Message, version: int, data: Mapping[str, Any], w: Writer) -> None:
    """Write the body of `m` at `version` from `data` (missing fields take their defaults)."""
    if version not in m.valid:
        raise EncodeError(f"{m.name} has no version {version}")
    struct_writer(m.struct, version, version in m.flexible)(w, data)
