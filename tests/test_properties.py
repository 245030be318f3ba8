"""`pipeline.properties`, the one `.properties` parser, read as Java reads the same text: its
documented cases (no JVM), and each case against `java.util.Properties.load` itself."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pipeline.properties import parse_properties

# (text, what Java's Properties.load gives, trailing white space of values dropped)
CASES: list[tuple[str, dict[str, str]]] = [
    ("a=1\nb = 2\nc:3\nd 4\n", {"a": "1", "b": "2", "c": "3", "d": "4"}),
    ("group.max.size 10=x\n", {"group.max.size": "10=x"}),  # the first separator ends the key
    ("key = = value\n", {"key": "= value"}),  # one separator only is skipped
    ("spark.d\t-Dk=v -Dk2=v2  \n", {"spark.d": "-Dk=v -Dk2=v2"}),
    ("# comment\n! also\n   # indented comment\n\n   \nx=1\n", {"x": "1"}),
    ("list = one, \\\n       two, \\\n  three\n", {"list": "one, two, three"}),
    ("a=ends in a backslash\\\\\nb=2\n", {"a": "ends in a backslash\\", "b": "2"}),
    ("# not continued \\\nc=3\n", {"c": "3"}),  # a comment never continues
    ("key\\ with\\ spaces = v\n", {"key with spaces": "v"}),
    ("k\\=x=v\nk\\:y:w\n", {"k=x": "v", "k:y": "w"}),
    ("tab=a\\tb\nnl=a\\nb\nu=caf\\u00e9\nother=\\q\\#\n",
     {"tab": "a\tb", "nl": "a\nb", "u": "café", "other": "q#"}),
    ("only.key\n", {"only.key": ""}),
    ("dup=1\ndup=2\n", {"dup": "2"}),
    ("crlf=1\r\ncr=2\rlf=3\n", {"crlf": "1", "cr": "2", "lf": "3"}),
    ("a=1\\\n\nb=2\n", {"a": "1", "b": "2"}),  # continued onto a blank line
    ("  indented.key   value with   inner spaces\n",
     {"indented.key": "value with   inner spaces"}),
    ("utf8=ünïcødé\n", {"utf8": "ünïcødé"}),
    ("last=line\\", {"last": "line"}),  # the text ends in a continuation
]


@pytest.mark.parametrize(("text", "want"), CASES)
def test_properties_parse_as_java_documents_them(text: str, want: dict[str, str]) -> None:
    assert parse_properties(text) == want


def test_a_malformed_unicode_escape_names_its_line() -> None:
    with pytest.raises(ValueError, match=r"conf:2: malformed \\uxxxx escape"):
        parse_properties("a=1\nb=\\u12g4\n", "conf")


@pytest.mark.spark  # a JVM: javac and java
def test_every_case_is_what_javas_own_properties_load_gives(tmp_path: Path) -> None:
    from tests.java_programs import compile_java, java_command

    compile_java([Path(__file__).parent / "PrintProperties.java"], "", tmp_path)
    for text, _ in CASES:
        printed = subprocess.run(java_command(str(tmp_path), "PrintProperties"), input=text,
                                 check=True, capture_output=True, text=True,
                                 encoding="utf-8").stdout
        java = dict((bytes.fromhex(k).decode(), bytes.fromhex(v).decode().rstrip(" \t\f"))
                    for k, v in (line.split(" ") for line in printed.splitlines()))
        assert parse_properties(text) == java, text
