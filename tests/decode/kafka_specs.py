"""Kafka's own record schemas, the JSON its message generator compiles (shipped in the
coordinator JARs under `common/message/`), set beside this package's declarations
(`pipeline.decode.messages`, `pipeline.decode.share_state`) version by version.

At each version Kafka declares, a message is its flexibility and its fields: the untagged ones
in order, the tagged ones by tag, each with its name (snake case), its type (a primitive, an
array of a type, or a struct's fields at that version), whether it is nullable, and, where a
reader fills it in (a tagged field, or one some versions lack), its default. Two declarations
agree when those are equal at every version Kafka declares; a difference is a line naming the
message, the version and the field path.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from functools import cache
from typing import Any

from pipeline.decode.primitives import ZERO_UUID
from pipeline.decode.schema import (
    _UNSET,
    NONE,
    PRIMITIVES,
    ArrayOf,
    Field,
    FieldType,
    Message,
    Struct,
    Versions,
    default_of,
)

# The releases whose specs are read: the newest the decoder declares, and 4.0.0 for the
# layouts only Kafka 4.0 wrote (`RecordType.legacy`) and its type 9.
NEWEST, KAFKA_40 = "4.4.0", "4.0.0"
ARTIFACTS = ("kafka-group-coordinator", "kafka-share-coordinator")
_INTEGERS = {"int8", "int16", "uint16", "int32", "int64"}


def strip_comments(text: str) -> str:
    """Kafka's JSON with its `//` comments removed (not inside strings)."""
    out, in_string, i = [], False, 0
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


@cache
def specs(version: str) -> dict[str, dict[str, Any]]:
    """Every record schema the coordinator JARs of Kafka `version` ship, by name."""
    from pipeline.spark.runtime.jars import Artifact, ensure_jars  # Maven's, when first asked

    found: dict[str, dict[str, Any]] = {}
    for artifact in ARTIFACTS:
        jars = ensure_jars((Artifact("org.apache.kafka", artifact, version),),
                           against_pyspark=False).jars
        (jar,) = [j for j in jars if j.name == f"{artifact}-{version}.jar"]
        with zipfile.ZipFile(jar) as z:
            for name in z.namelist():
                if name.startswith("common/message/") and name.endswith(".json"):
                    doc = json.loads(strip_comments(z.read(name).decode()))
                    found[doc["name"]] = {**doc, "artifact": artifact}
    return found


def snake(name: str) -> str:
    """Kafka's field name in this package's spelling: `SubscribedTopicRegex` ->
    `subscribed_topic_regex`."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _kafka_default(f: dict[str, Any], type_: str) -> Any:
    declared = f.get("default")  # JSON null is no default (Kafka's FieldSpec reads it as "")
    if declared == "null":
        return None
    if type_ in _INTEGERS:
        return int(declared) if declared is not None else 0
    if type_ == "uuid":
        return ZERO_UUID if declared is None else declared
    if type_ == "string":
        return "" if declared is None else declared
    if type_ == "bytes":
        return b""
    if type_.startswith("[]"):
        return []
    return "struct"


def _our_default(f: Field, version: int) -> Any:
    default = default_of(f, version)
    if isinstance(f.type, Struct) and default is not None:
        return "struct" if default == default_of(replace(f, default=_UNSET, nullable=NONE),
                                                  version) else default
    return default


def _kafka_view(fields: list[dict[str, Any]], structs: dict[str, Any], version: int,
                every: Versions) -> tuple[Any, ...]:
    untagged, tagged = [], {}
    for f in fields:
        versions = Versions.parse(f.get("versions") or f["taggedVersions"])
        if version not in versions:
            continue
        type_ = f["type"]
        item = (snake(f["name"]), _kafka_type(type_, f, structs, version, every),
                version in Versions.parse(f.get("nullableVersions", "none")))
        if "tag" in f or not _covers(versions, every):
            item += (_kafka_default(f, type_),)
        if "tag" in f:
            assert Versions.parse(f["taggedVersions"]) == versions, f  # as this package models tags
            tagged[int(f["tag"])] = item
        else:
            untagged.append(item)
    return tuple(untagged), tuple(sorted(tagged.items()))


def _covers(versions: Versions, every: Versions) -> bool:
    return versions.low <= every.low and versions.high >= every.high


def _kafka_type(type_: str, f: dict[str, Any], structs: dict[str, Any], version: int,
                every: Versions) -> Any:
    if type_.startswith("[]"):
        return ("[]", _kafka_type(type_[2:], f, structs, version, every))
    if type_ in PRIMITIVES:
        return type_
    body = f.get("fields") or structs[type_]["fields"]
    return _kafka_view(body, structs, version, every)


def _our_view(fields: tuple[Field, ...], version: int, every: Versions) -> tuple[Any, ...]:
    untagged, tagged = [], {}
    for f in fields:
        if version not in f.versions:
            continue
        item = (f.name, _our_type(f.type, version, every), version in f.nullable)
        if f.tag is not None or not _covers(f.versions, every):
            item += (_our_default(f, max(every.low, f.versions.low - 1)),)
        if f.tag is not None:
            tagged[f.tag] = item
        else:
            untagged.append(item)
    return tuple(untagged), tuple(sorted(tagged.items()))


def _our_type(t: FieldType, version: int, every: Versions) -> Any:
    if isinstance(t, ArrayOf):
        return ("[]", _our_type(t.element, version, every))
    if isinstance(t, Struct):
        return _our_view(t.fields, version, every)
    return t


def differences(ours: Message, spec: dict[str, Any]) -> Iterator[str]:
    """Where `ours` reads a record otherwise than Kafka's `spec` declares, at each version
    the spec has (ours may read more versions: a lenient reader of older logs)."""
    valid = Versions.parse(spec["validVersions"])
    flexible = Versions.parse(spec["flexibleVersions"])
    structs = {s["name"]: s for s in spec.get("commonStructs", [])}
    for version in range(valid.low, valid.high + 1):
        if version not in ours.valid:
            yield f"{spec['name']} v{version}: Kafka has this version, the decoder does not"
            continue
        if (version in flexible) != (version in ours.flexible):
            yield f"{spec['name']} v{version}: flexible in one and not the other"
        theirs = _kafka_view(spec["fields"], structs, version, valid)
        mine = _our_view(ours.fields, version, valid)
        if theirs != mine:
            yield f"{spec['name']} v{version}: Kafka {theirs}\n  decoder {mine}"
