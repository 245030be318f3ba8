"""The one generic reader of the schema engine: `read_message(message, version, reader)` reads a
body declared in `pipeline.decode.schema` at any of its versions. Each (struct, version) is
compiled once into a plan, cached: consecutive fixed-width integers are read with one `struct`
layout (on a short buffer the run is re-read field by field, so the error names the exact
field), arrays of integers with one unpack, everything else with one call per field. Flexible
versions read compact strings, bytes and arrays and a tagged-field section after every struct:
unknown tags are skipped by their size; a known tag must use exactly its declared size; a
nullable tagged struct starts with a varint presence marker (0 = null), a non-tagged one with an
int8 marker (negative = null), as Kafka's generator reads them. A field absent at the version
read takes its default. Errors are `DecodeError`s carrying the field path and byte offset."""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from pipeline.decode.primitives import DecodeError, Reader
from pipeline.decode.schema import (
    FIXED_WIDTH,
    ArrayOf,
    Field,
    FieldType,
    Message,
    PerStruct,
    Struct,
    default_of,
    primitive_codecs,
)

ReadFn = Callable[[Reader], Any]
StructReadFn = Callable[[Reader], dict[str, Any]]
PlanEntry = tuple[str, ReadFn, tuple[str, ...] | None]  # (name, reader, names of a run)

_PRIMITIVE_READERS: dict[tuple[str, bool, bool], ReadFn] = primitive_codecs(Reader)


def _array_count(r: Reader, nullable: bool, compact: bool) -> int | None:
    """An array's element count, or None for a null array where one is allowed."""
    start = r.pos
    n = r.count(compact)
    if n >= 0:
        return n
    if nullable:
        return None
    raise DecodeError("non-nullable array is null", start)


def _array_reader(element: ReadFn, nullable: bool, compact: bool) -> ReadFn:
    def read(r: Reader) -> list[Any] | None:
        n = _array_count(r, nullable, compact)
        if n is None:
            return None
        out: list[Any] = []
        try:
            for _ in range(n):
                out.append(element(r))
        except DecodeError as e:
            raise e.at(f"[{len(out)}]") from None
        return out
    return read


def _int_array_reader(code: str, nullable: bool, compact: bool) -> ReadFn:
    width = struct.calcsize(f">{code}")

    def read(r: Reader) -> list[int] | None:
        n = _array_count(r, nullable, compact)
        if n is None:
            return None
        pos = r.take(n * width, f"{n} array elements")
        return list(struct.unpack_from(f">{n}{code}", r.buf, pos))
    return read


def _nullable_struct_reader(body: StructReadFn, tagged: bool) -> ReadFn:
    def read(r: Reader) -> dict[str, Any] | None:
        present = r.uvarint() > 0 if tagged else r.int8() >= 0
        return body(r) if present else None
    return read


def _value_reader(t: FieldType, nullable: bool, version: int, flexible: bool,
                  tagged: bool = False) -> ReadFn:
    if isinstance(t, ArrayOf):
        if isinstance(t.element, str) and t.element in FIXED_WIDTH:
            return _int_array_reader(FIXED_WIDTH[t.element], nullable, flexible)
        return _array_reader(_value_reader(t.element, False, version, flexible),
                             nullable, flexible)
    if isinstance(t, Struct):
        body = struct_reader(t, version, flexible)
        return _nullable_struct_reader(body, tagged) if nullable else body
    return _PRIMITIVE_READERS[(t, nullable, flexible)]


def _run_entry(run: list[Field]) -> PlanEntry:
    """One plan entry for consecutive fixed-width integer fields."""
    if len(run) == 1:
        return (run[0].name, _PRIMITIVE_READERS[(str(run[0].type), False, False)], None)
    layout = struct.Struct(">" + "".join(FIXED_WIDTH[str(f.type)] for f in run))
    singles = [(f.name, _PRIMITIVE_READERS[(str(f.type), False, False)]) for f in run]

    def read(r: Reader) -> tuple[int, ...]:
        if r.pos + layout.size <= r.end:
            return r.fixed(layout, "integers")
        for name, fn in singles:  # short: find the exact field that does not fit
            try:
                fn(r)
            except DecodeError as e:
                raise e.at(name) from None
        raise AssertionError("unreachable: the run was short")  # pragma: no cover
    return ("", read, tuple(f.name for f in run))


def _read_tagged(r: Reader, known: Mapping[int, tuple[str, ReadFn]], out: dict[str, Any]) -> None:
    for _ in range(r.uvarint()):
        start = r.pos
        tag = r.uvarint()
        size = r.uvarint()
        entry = known.get(tag)
        if entry is None:
            r.take(size, f"unknown tagged field {tag}")
            continue
        name, read = entry
        end = r.pos + size
        if end > r.end:
            raise DecodeError(f"tagged field {tag} size {size} runs past the end", start)
        sub = Reader(r.buf, r.pos, end)
        try:
            out[name] = read(sub)
            if sub.pos != end:
                raise DecodeError(f"tagged field {tag} declares {size} bytes but uses "
                                  f"{size - sub.remaining}", start)
        except DecodeError as e:
            raise e.at(name) from None
        r.pos = end


def _plan(s: Struct, version: int, flexible: bool) -> tuple[
        list[PlanEntry], dict[int, tuple[str, ReadFn]], dict[str, Any]]:
    plan: list[PlanEntry] = []
    known: dict[int, tuple[str, ReadFn]] = {}
    defaults: dict[str, Any] = {}
    run: list[Field] = []
    for f in s.fields:
        present = version in f.versions and (f.tag is None or flexible)
        if not present or f.tag is not None:
            defaults[f.name] = default_of(f, version)
        if not present:
            continue
        nullable = version in f.nullable
        if f.tag is not None:
            known[f.tag] = (f.name, _value_reader(f.type, nullable, version, flexible, True))
        elif isinstance(f.type, str) and f.type in FIXED_WIDTH:
            run.append(f)
        else:
            if run:
                plan.append(_run_entry(run))
                run = []
            plan.append((f.name, _value_reader(f.type, nullable, version, flexible), None))
    if run:
        plan.append(_run_entry(run))
    return plan, known, defaults


def _compile_reader(s: Struct, version: int, flexible: bool) -> StructReadFn:
    plan, known, defaults = _plan(s, version, flexible)
    mutable = tuple(n for n, d in defaults.items() if isinstance(d, list | dict))
    entries = tuple(plan)

    def read(r: Reader) -> dict[str, Any]:
        out = defaults.copy()
        for n in mutable:
            out[n] = out[n].copy()
        name = ""
        try:
            for name, fn, run in entries:
                if run is None:
                    out[name] = fn(r)
                else:
                    out.update(zip(run, fn(r), strict=True))
            name = ""
            if flexible:
                _read_tagged(r, known, out)
        except DecodeError as e:
            raise (e.at(name) if name else e) from None
        return out
    return read


# The compiled reader of a struct at a version: returns a dict with every declared field.
struct_reader: PerStruct[StructReadFn] = PerStruct(_compile_reader)


_message_readers: dict[tuple[int, int], tuple[Message, StructReadFn]] = {}


def message_reader(m: Message, version: int) -> StructReadFn:
    """The compiled reader of message `m` at `version` (one `m` declares), cached."""
    key = (id(m), version)
    cached = _message_readers.get(key)
    if cached is None:
        if version not in m.valid:
            raise DecodeError(f"{m.name} has no version {version}")
        reader = struct_reader(m.struct, version, version in m.flexible)
        cached = _message_readers[key] = (m, reader)
    return cached[1]


def read_message(m: Message, version: int, r: Reader) -> dict[str, Any]:
    """Read the body of `m` at `version` (the version must be one `m` declares)."""
    return message_reader(m, version)(r)
