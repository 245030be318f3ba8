"""Byte-level primitives of Kafka's message format: a bounds-checked `Reader`, a `Writer`, the
errors both raise, and Kafka's text form of a UUID. Integers are big-endian two's complement;
unsigned varints are protobuf style (7 bits a byte, least significant group first, at most five
bytes as in Kafka's `ByteUtils.readUnsignedVarint`); strings are UTF-8 read with replacement of
invalid sequences, as Java's `new String(bytes, UTF_8)` does, so odd text never fails a record.
Every read checks the remaining length first, so a truncated or corrupt buffer raises
`DecodeError` naming the byte offset, never `struct.error` or `IndexError`."""

from __future__ import annotations

import base64
import struct
import uuid

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
MAX_STRING = 0x7FFF  # Kafka refuses longer compact strings ("had invalid length")


class DecodeError(ValueError):
    """Bytes that do not decode: what is wrong, in which field, and where.

    `detail` says what is wrong, `offset` is the byte offset inside the buffer being read,
    `path` the field path (`members[2].subscription`) and `context` the record (type, name,
    key or value, version). `str()` joins them into one line.
    """

    def __init__(self, detail: str, offset: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.offset = offset
        self.path: list[str] = []
        self.context = ""
        self.base = ""

    def at(self, segment: str) -> DecodeError:
        """Prefix a field-path segment (`name` or `[index]`); returns self for `raise`."""
        self.path.insert(0, segment)
        return self

    def inside(self, base: str) -> DecodeError:
        """Name the embedded buffer `offset` counts from (e.g. "the subscription bytes")."""
        self.base = self.base or base
        return self

    def within(self, context: str) -> DecodeError:
        """Prefix a description of the enclosing record or part; returns self."""
        self.context = f"{context}: {self.context}" if self.context else context
        return self

    def __str__(self) -> str:
        path = "".join(s if s.startswith("[") else f".{s}" for s in self.path).lstrip(".")
        where = "" if self.offset is None else f" at byte offset {self.offset}"
        if self.base and self.offset is not None:
            where += f" of {self.base}"
        parts = [p for p in (self.context, path) if p]
        return ": ".join([*parts, f"{self.detail}{where}"])


class EncodeError(ValueError):
    """A value that cannot be written at the requested version (wrong type, out of range)."""


def uuid_to_text(raw: bytes) -> str:
    """Kafka's `Uuid.toString()`: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def uuid_from_text(value: object) -> bytes:
    """16 bytes from Kafka's base64 text, a dashed hex UUID, a `uuid.UUID` or raw bytes."""
    if isinstance(value, bytes | bytearray) and len(value) == 16:
        return bytes(value)
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, str):
        if len(value) == 22:
            raw = base64.urlsafe_b64decode(value + "==")
            if len(raw) == 16:
                return raw
        return uuid.UUID(value).bytes
    raise EncodeError(f"not a UUID: {value!r}")


ZERO_UUID = uuid_to_text(bytes(16))


class Reader:
    """Reads primitives from `buf[pos:end]`, advancing `pos`; every read is bounds-checked."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes, pos: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def take(self, n: int, what: str) -> int:
        """Claim `n` bytes; returns their start offset."""
        pos = self.pos
        if n < 0 or pos + n > self.end:
            raise DecodeError(f"{what} needs {n} bytes but {self.end - pos} remain", pos)
        self.pos = pos + n
        return pos

    def short(self, n: int, what: str) -> DecodeError:
        """The error for `what` needing `n` bytes at the current position."""
        return DecodeError(f"{what} needs {n} bytes but {self.end - self.pos} remain", self.pos)

    # The fixed-width reads inline their bounds check: they are the hot path.
    def int8(self) -> int:
        pos = self.pos
        if pos + 1 > self.end:
            raise self.short(1, "int8")
        self.pos = pos + 1
        v: int = _I8.unpack_from(self.buf, pos)[0]
        return v

    def int16(self) -> int:
        pos = self.pos
        if pos + 2 > self.end:
            raise self.short(2, "int16")
        self.pos = pos + 2
        v: int = _I16.unpack_from(self.buf, pos)[0]
        return v

    def uint16(self) -> int:
        pos = self.pos
        if pos + 2 > self.end:
            raise self.short(2, "uint16")
        self.pos = pos + 2
        v: int = _U16.unpack_from(self.buf, pos)[0]
        return v

    def int32(self) -> int:
        pos = self.pos
        if pos + 4 > self.end:
            raise self.short(4, "int32")
        self.pos = pos + 4
        v: int = _I32.unpack_from(self.buf, pos)[0]
        return v

    def int64(self) -> int:
        pos = self.pos
        if pos + 8 > self.end:
            raise self.short(8, "int64")
        self.pos = pos + 8
        v: int = _I64.unpack_from(self.buf, pos)[0]
        return v

    def fixed(self, layout: struct.Struct, what: str) -> tuple[int, ...]:
        """Several fixed-width integers at once, as one `struct` layout."""
        pos = self.pos
        if pos + layout.size > self.end:
            raise self.short(layout.size, what)
        self.pos = pos + layout.size
        return layout.unpack_from(self.buf, pos)

    def uuid(self) -> str:
        pos = self.take(16, "uuid")
        return uuid_to_text(self.buf[pos:pos + 16])

    def uvarint(self) -> int:
        buf, pos, end = self.buf, self.pos, self.end
        if pos < end and buf[pos] < 0x80:  # the common one-byte case
            self.pos = pos + 1
            return buf[pos]
        start, result, shift = pos, 0, 0
        while True:
            if pos >= end:
                raise DecodeError("unsigned varint runs past the end", start)
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
            if shift > 28:
                raise DecodeError("unsigned varint is longer than 5 bytes", start)
        if result > 0xFFFFFFFF:
            raise DecodeError("unsigned varint overflows 32 bits", start)
        self.pos = pos
        return result

    def skip(self, n: int, what: str) -> None:
        self.take(n, what)

    def _text(self, n: int, start: int) -> str:
        if n > MAX_STRING:
            raise DecodeError(f"string length {n} exceeds {MAX_STRING}", start)
        pos = self.pos
        if pos + n > self.end:
            raise self.short(n, "string")
        self.pos = pos + n
        return self.buf[pos:pos + n].decode("utf-8", "replace")

    def _raw(self, n: int) -> bytes:
        pos = self.take(n, "bytes")
        return bytes(self.buf[pos:pos + n])

    def string(self) -> str:
        start = self.pos
        if start + 2 > self.end:
            raise self.short(2, "int16")
        n: int = _I16.unpack_from(self.buf, start)[0]
        pos = start + 2
        if n < 0:
            raise DecodeError(f"non-nullable string has length {n}", start)
        if pos + n > self.end:
            self.pos = pos
            raise self.short(n, "string")
        self.pos = pos + n
        return self.buf[pos:pos + n].decode("utf-8", "replace")

    def nullable_string(self) -> str | None:
        start = self.pos
        n = self.int16()
        if n < 0:
            if n == -1:
                return None
            raise DecodeError(f"string has invalid length {n}", start)
        return self._text(n, start)

    def compact_string(self) -> str:
        start = self.pos
        n = self.uvarint() - 1
        if n < 0:
            raise DecodeError("non-nullable compact string is null", start)
        return self._text(n, start)

    def compact_nullable_string(self) -> str | None:
        start = self.pos
        n = self.uvarint() - 1
        return None if n < 0 else self._text(n, start)

    def bytes_(self) -> bytes:
        start = self.pos
        n = self.int32()
        if n < 0:
            raise DecodeError(f"non-nullable bytes have length {n}", start)
        return self._raw(n)

    def nullable_bytes(self) -> bytes | None:
        start = self.pos
        n = self.int32()
        if n < 0:
            if n == -1:
                return None
            raise DecodeError(f"bytes have invalid length {n}", start)
        return self._raw(n)

    def compact_bytes(self) -> bytes:
        start = self.pos
        n = self.uvarint() - 1
        if n < 0:
            raise DecodeError("non-nullable compact bytes are null", start)
        return self._raw(n)

    def compact_nullable_bytes(self) -> bytes | None:
        n = self.uvarint() - 1
        return None if n < 0 else self._raw(n)

    def count(self, compact: bool) -> int:
        """An array's element count, -1 for a null array; never more than the bytes left."""
        start = self.pos
        n = self.uvarint() - 1 if compact else self.int32()
        if n < -1:
            raise DecodeError(f"array has invalid count {n}", start)
        if n > self.end - self.pos:
            left = self.end - self.pos
            raise DecodeError(f"array count {n} exceeds the {left} bytes left", start)
        return n


class Writer:
    """Appends primitives to a `bytearray`; `getvalue()` returns the bytes written."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def getvalue(self) -> bytes:
        return bytes(self.buf)

    def raw(self, data: bytes) -> None:
        self.buf += data

    def int8(self, v: int) -> None:
        self.buf += _I8.pack(v)

    def int16(self, v: int) -> None:
        self.buf += _I16.pack(v)

    def uint16(self, v: int) -> None:
        self.buf += _U16.pack(v)

    def int32(self, v: int) -> None:
        self.buf += _I32.pack(v)

    def int64(self, v: int) -> None:
        self.buf += _I64.pack(v)

    def uuid(self, v: object) -> None:
        self.buf += uuid_from_text(v)

    def uvarint(self, v: int) -> None:
        if not 0 <= v <= 0xFFFFFFFF:
            raise EncodeError(f"unsigned varint out of range: {v}")
        while v >= 0x80:
            self.buf.append((v & 0x7F) | 0x80)
            v >>= 7
        self.buf.append(v)

    def string(self, v: str) -> None:
        data = v.encode("utf-8")
        self.int16(len(data))
        self.buf += data

    def nullable_string(self, v: str | None) -> None:
        if v is None:
            self.int16(-1)
        else:
            self.string(v)

    def compact_string(self, v: str) -> None:
        data = v.encode("utf-8")
        if len(data) > MAX_STRING:
            raise EncodeError(f"string of {len(data)} bytes exceeds {MAX_STRING}")
        self.uvarint(len(data) + 1)
        self.buf += data

    def compact_nullable_string(self, v: str | None) -> None:
        if v is None:
            self.uvarint(0)
        else:
            self.compact_string(v)

    def bytes_(self, v: bytes) -> None:
        self.int32(len(v))
        self.buf += v

    def nullable_bytes(self, v: bytes | None) -> None:
        if v is None:
            self.int32(-1)
        else:
            self.bytes_(v)

    def compact_bytes(self, v: bytes) -> None:
        self.uvarint(len(v) + 1)
        self.buf += v

    def compact_nullable_bytes(self, v: bytes | None) -> None:
        if v is None:
            self.uvarint(0)
        else:
            self.compact_bytes(v)

    def count(self, n: int, compact: bool) -> None:
        """An array's element count; -1 writes a null array."""
        if compact:
            self.uvarint(n + 1)
        else:
            self.int32(n)
