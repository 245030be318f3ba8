"""Schemas as data, the first half of the table-driven engine: a `Message` is a `Struct` of
`Field`s, each with a name, a type (a primitive name, `ArrayOf(T)` or a nested `Struct`), the
`Versions` it exists in, the versions in which it is nullable, an optional tag (a tagged field in
flexible versions) and a default; the message has its valid versions and its first flexible
version. Compact encodings are not declared per field: as in Kafka's generator, every string,
bytes and array field is compact in the message's flexible versions. `pipeline.decode.reader`
and `pipeline.decode.writer` interpret these declarations at any version."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, Union

from pipeline.decode.primitives import ZERO_UUID

INT8, INT16, INT32, INT64 = "int8", "int16", "int32", "int64"
UINT16 = "uint16"
UUID, STRING, BYTES = "uuid", "string", "bytes"
PRIMITIVES = frozenset({INT8, INT16, UINT16, INT32, INT64, UUID, STRING, BYTES})
MAX_VERSION = 0x7FFF
FIXED_WIDTH = {INT8: "b", INT16: "h", UINT16: "H", INT32: "i", INT64: "q"}  # `struct` codes


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; `Versions.parse("3+")`, `"1"`, `"0-4"`, `"none"`."""

    low: int
    high: int = MAX_VERSION

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high

    @classmethod
    def parse(cls, spec: str) -> Versions:
        if spec == "none":
            return cls(1, 0)
        if spec.endswith("+"):
            return cls(int(spec[:-1]))
        low, _, high = spec.partition("-")
        return cls(int(low), int(high or low))


NONE = Versions(1, 0)


@dataclass(frozen=True, slots=True)
class ArrayOf:
    element: FieldType


@dataclass(frozen=True, slots=True)
class Struct:
    name: str
    fields: tuple[Field, ...]


FieldType = Union[str, ArrayOf, Struct]  # noqa: UP007 - a runtime alias of forward references
_UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: FieldType
    versions: Versions
    nullable: Versions = NONE
    tag: int | None = None
    default: Any = _UNSET


@dataclass(frozen=True, slots=True)
class Message:
    """A top-level schema: its struct, the versions it has, and its flexible versions."""

    name: str
    valid: Versions
    flexible: Versions
    struct: Struct

    @property
    def fields(self) -> tuple[Field, ...]:
        return self.struct.fields


def field(name: str, type_: FieldType, versions: str = "0+", *, nullable: str = "none",
          tag: int | None = None, default: Any = _UNSET) -> Field:
    """A field declaration in Kafka's JSON vocabulary (`versions="3+"`, `nullable="0+"`)."""
    if isinstance(type_, str) and type_ not in PRIMITIVES:
        raise ValueError(f"unknown primitive type {type_!r}")
    return Field(name, type_, Versions.parse(versions), Versions.parse(nullable), tag, default)


def message(name: str, valid: str, flexible: str, *fields: Field) -> Message:
    return Message(name, Versions.parse(valid), Versions.parse(flexible), Struct(name, fields))


def default_of(f: Field, version: int) -> Any:
    """The value of `f` when absent: its declared default, else null or the type's zero."""
    if f.default is not _UNSET:
        return f.default
    if version in f.nullable:
        return None
    t = f.type
    if isinstance(t, ArrayOf):
        return []
    if isinstance(t, Struct):
        return {g.name: default_of(g, version) for g in t.fields}
    return {STRING: "", BYTES: b"", UUID: ZERO_UUID}.get(t, 0)


C = TypeVar("C")


class PerStruct(Generic[C]):
    """What `make` compiles of a struct at a version, made once: the readers and writers
    compile each struct when first asked and then reuse it. Keyed by id() for speed; the value
    holds the struct too, so the id is never reused while cached."""

    def __init__(self, make: Callable[[Struct, int, bool], C]) -> None:
        self._make = make
        self._cache: dict[tuple[int, int, bool], tuple[Struct, C]] = {}

    def __call__(self, s: Struct, version: int, flexible: bool) -> C:
        key = (id(s), version, flexible)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = (s, self._make(s, version, flexible))
        return cached[1]


# The codec methods of the primitive types by name, the same on Reader and Writer, for the
# variants (nullable, compact): neither, nullable, compact, both (a fixed-width type has one).
_VARIANTS = ((False, False), (True, False), (False, True), (True, True))
_PRIMITIVE_METHODS: dict[str, tuple[str, ...]] = {
    INT8: ("int8",) * 4, INT16: ("int16",) * 4, UINT16: ("uint16",) * 4, INT32: ("int32",) * 4,
    INT64: ("int64",) * 4,
    UUID: ("uuid",) * 4,
    STRING: ("string", "nullable_string", "compact_string", "compact_nullable_string"),
    BYTES: ("bytes_", "nullable_bytes", "compact_bytes", "compact_nullable_bytes"),
}


def primitive_codecs(codec: type) -> dict[tuple[str, bool, bool], Any]:
    """(type, nullable, compact) -> `codec`'s method for it (Reader's or Writer's)."""
    return {(t, n, c): getattr(codec, name) for t, names in _PRIMITIVE_METHODS.items()
            for (n, c), name in zip(_VARIANTS, names, strict=True)}
