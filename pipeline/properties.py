"""`.properties` text as Java reads it (`java.util.Properties.load`): the one parser for
the coordinator's settings (conf/coordinator.properties, a broker's server.properties) and
Spark's (spark-defaults.conf and the profiles), which Kafka and Spark themselves read with
Java's.

Java's rules: a logical line is natural lines joined where one ends in an odd number of
backslashes (the next one's leading white space dropped); a line whose first non-blank
character is `#` or `!` is a comment; the key runs to the first unescaped `=`, `:` or white
space, after which white space, one `=` or `:`, and white space again are skipped; the rest
is the value. `\\t`, `\\n`, `\\r`, `\\f` and `\\uXXXX` are escapes, a backslash before any other
character is that character. So `group.max.size 10=x` is the key `group.max.size` with the
value `10=x`. One difference, as Spark's reader and Kafka's typed settings have it: a
value's trailing white space is dropped.
"""

from __future__ import annotations

import os
from importlib.resources.abc import Traversable
from pathlib import Path

_BLANK = " \t\f"
_SEPARATORS = "=:"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first natural line's number, the logical line), comments and blank lines left out."""
    out: list[tuple[int, str]] = []
    natural = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    i = 0
    while i < len(natural):
        number, line = i + 1, natural[i].lstrip(_BLANK)
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(natural):
            line = line[:-1] + natural[i].lstrip(_BLANK)
            i += 1
        if _continues(line):  # the file ends in a continuation: Java drops the backslash
            line = line[:-1]
        out.append((number, line))
    return out


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _unescape(text: str, where: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 == len(text):
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError(f"{where}: malformed \\uxxxx escape {text[i:i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """A logical line's raw key and raw value (escapes still in)."""
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in _SEPARATORS or c in _BLANK:
            break
        i += 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(_BLANK)
    if rest[:1] and rest[0] in _SEPARATORS:
        rest = rest[1:].lstrip(_BLANK)
    return key, rest


def parse_properties(text: str, source: str = "<text>") -> dict[str, str]:
    """`text` as Java's `Properties.load` reads it (a later key wins), values' trailing white
    space dropped."""
    props: dict[str, str] = {}
    for number, line in _logical_lines(text):
        raw_key, raw_value = _split(line)
        where = f"{source}:{number}"
        props[_unescape(raw_key, where)] = _unescape(raw_value, where).rstrip(_BLANK)
    return props


def read_properties(path: str | os.PathLike[str] | Traversable) -> dict[str, str]:
    """A `.properties` file (UTF-8, as Spark reads spark-defaults.conf) by `parse_properties`."""
    file = Path(path) if isinstance(path, str | os.PathLike) else path
    return parse_properties(file.read_text(encoding="utf-8"), str(path))
