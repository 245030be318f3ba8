"""The consumer protocol's bytes, as data for the schema engine: the subscription (v0–v3) and
assignment (v0–v3) that GroupMetadataValue members and KIP-848 classic member metadata carry,
and the assignors' user data ("sticky" v0/v1, "cooperative-sticky"). Both protocol structures
are an int16 version and a non-flexible body; like Kafka's `ConsumerProtocol`, a version higher
than known is read with the newest known layout and trailing bytes are ignored. User data is
decoded the way the assignors do and never fails the record: sticky tries v1, then v0, then
gives up with an empty previous assignment; cooperative-sticky reads one int32 generation.
Partition lists are flattened to `[{"topic", "partition"}]` in wire order and grouped back by
topic (first appearance order) when encoding."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.decode.primitives import DecodeError, Reader, Writer
from pipeline.decode.reader import read_message
from pipeline.decode.schema import (
    BYTES,
    INT32,
    STRING,
    ArrayOf,
    Message,
    Struct,
    field,
    message,
)
from pipeline.decode.writer import write_message

TOPIC_PARTITION = Struct("TopicPartition", (
    field("topic", STRING),
    field("partitions", ArrayOf(INT32)),
))

SUBSCRIPTION = message(
    "ConsumerProtocolSubscription", "0-3", "none",
    field("topics", ArrayOf(STRING)),
    field("user_data", BYTES, nullable="0+", default=None),
    field("owned_partitions", ArrayOf(TOPIC_PARTITION), "1+"),
    field("generation_id", INT32, "2+", default=-1),
    field("rack_id", STRING, "3+", nullable="3+", default=None),
)

ASSIGNMENT = message(
    "ConsumerProtocolAssignment", "0-3", "none",
    field("assigned_partitions", ArrayOf(TOPIC_PARTITION)),
    field("user_data", BYTES, nullable="0+", default=None),
)

# No version prefix: the StickyAssignor tells v1 from v0 by trying v1 first.
STICKY_USER_DATA = message(
    "StickyAssignorUserData", "0-1", "none",
    field("previous_assignment", ArrayOf(TOPIC_PARTITION)),
    field("generation", INT32, "1+", default=None),
)

COOPERATIVE_STICKY_USER_DATA = message(
    "CooperativeStickyAssignorUserData", "0", "none",
    field("generation", INT32),
)

CURRENT_VERSION = 3  # what current Java clients write


def flatten(groups: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`[{"topic", "partitions": [..]}]` as `[{"topic", "partition"}]`, in order."""
    return [{"topic": g["topic"], "partition": p} for g in groups for p in g["partitions"]]


def group(partitions: Iterable[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """`[{"topic", "partition"}]` grouped by topic, topics in first-appearance order."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions or ():
        by_topic.setdefault(tp["topic"], []).append(tp["partition"])
    return [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]


def _read_versioned(m: Message, data: bytes, what: str) -> tuple[int, dict[str, Any]]:
    r = Reader(data)
    try:
        version = r.int16()
        if version < m.valid.low:
            raise DecodeError(f"unsupported version {version}", 0)
        return version, read_message(m, min(version, m.valid.high), r)
    except DecodeError as e:
        raise e.inside(f"the {what} bytes") from None


def decode_subscription(data: bytes) -> dict[str, Any]:
    """The subscription's fields: version, topics, user_data, owned_partitions (None before v1),
    generation_id (None when -1 or before v2), rack_id (None before v3)."""
    version, s = _read_versioned(SUBSCRIPTION, data, "subscription")
    return {
        "version": version,
        "topics": s["topics"],
        "user_data": s["user_data"],
        "owned_partitions": flatten(s["owned_partitions"]) if version >= 1 else None,
        "generation_id": None if s["generation_id"] == -1 else s["generation_id"],
        "rack_id": s["rack_id"],
    }


def decode_assignment(data: bytes) -> dict[str, Any]:
    """The assignment's fields: version, partitions (flattened), user_data. Zero bytes (a member
    the leader left out at SyncGroup) decode as an empty assignment with version None."""
    if not data:
        return {"version": None, "partitions": [], "user_data": None}
    version, a = _read_versioned(ASSIGNMENT, data, "assignment")
    return {"version": version, "partitions": flatten(a["assigned_partitions"]),
            "user_data": a["user_data"]}


def decode_user_data(protocol: str | None, data: bytes | None) -> dict[str, Any]:
    """What an assignor's subscription user data says: `user_data_generation` and, for
    "sticky", `user_data_partitions` (its previous assignment). Never raises."""
    out: dict[str, Any] = {"user_data_generation": None, "user_data_partitions": None}
    if data is None:
        return out
    if protocol == "sticky":
        out["user_data_partitions"] = []
        for version in (1, 0):
            try:
                u = read_message(STICKY_USER_DATA, version, Reader(data))
            except DecodeError:
                continue
            out["user_data_partitions"] = flatten(u["previous_assignment"])
            out["user_data_generation"] = u["generation"]
            break
    elif protocol == "cooperative-sticky":
        try:
            generation = read_message(COOPERATIVE_STICKY_USER_DATA, 0, Reader(data))["generation"]
        except DecodeError:
            generation = -1
        out["user_data_generation"] = None if generation == -1 else generation
    return out


def _versioned(m: Message, version: int, data: Mapping[str, Any]) -> bytes:
    w = Writer()
    w.int16(version)
    write_message(m, min(version, m.valid.high), data, w)
    return w.getvalue()


def encode_subscription(topics: Iterable[str], *, version: int = CURRENT_VERSION,
                        user_data: bytes | None = None,
                        owned_partitions: Iterable[Mapping[str, Any]] | None = None,
                        generation_id: int | None = None, rack_id: str | None = None) -> bytes:
    """Subscription bytes at `version`; fields the version lacks are left out."""
    return _versioned(SUBSCRIPTION, version, {
        "topics": list(topics), "user_data": user_data,
        "owned_partitions": group(owned_partitions),
        "generation_id": -1 if generation_id is None else generation_id,
        "rack_id": rack_id,
    })


def encode_assignment(partitions: Iterable[Mapping[str, Any]], *, version: int = CURRENT_VERSION,
                      user_data: bytes | None = None) -> bytes:
    """Assignment bytes at `version` for `[{"topic", "partition"}]`."""
    return _versioned(ASSIGNMENT, version, {
        "assigned_partitions": group(partitions), "user_data": user_data,
    })


def encode_user_data(protocol: str | None, *, generation: int | None = None,
                     partitions: Iterable[Mapping[str, Any]] | None = None) -> bytes | None:
    """An assignor's user data: "sticky" v1 (v0 when `generation` is None), "cooperative-sticky"
    (one int32, None when `generation` is None); None for every other assignor."""
    w = Writer()
    if protocol == "sticky":
        if partitions is None and generation is None:
            return None
        version = 0 if generation is None else 1
        write_message(STICKY_USER_DATA, version,
                      {"previous_assignment": group(partitions), "generation": generation}, w)
    elif protocol == "cooperative-sticky" and generation is not None:
        write_message(COOPERATIVE_STICKY_USER_DATA, 0, {"generation": generation}, w)
    else:
        return None
    return w.getvalue()
