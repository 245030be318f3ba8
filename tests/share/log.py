"""A random `__share_group_state` log, as the share coordinator writes it: for a few share
groups' topic partitions, a snapshot when a partition is initialized, updates acknowledging
and releasing records and moving the start offset, now and then a new snapshot (the
coordinator's compaction of its updates) or a tombstone (the group's offsets deleted) after
which updates start the state again; and a few records Kafka's shard would not apply (an
update tombstone, a record type it does not know, bytes it cannot read). Each key's records
go to one partition of the topic, as in Kafka. Raw records (key, value, partition, offset,
timestamp), as a dump of the topic holds them."""

from __future__ import annotations

import random
from typing import Any

from pipeline.decode.primitives import Writer
from pipeline.decode.share_state import SHARE_STATE_KEY, SHARE_STATE_TYPES
from pipeline.decode.writer import write_message

T0 = 1_700_000_000_000
TOPICS = ("AAECAwQFBgcICQoLDA0ODw", "EBESExQVFhcYGRobHB0eHw")

Raw = tuple[bytes, bytes | None, int, int, int]


def key_bytes(rtype: int, group: str, topic_id: str, partition: int) -> bytes:
    w = Writer()
    w.int16(rtype)
    write_message(SHARE_STATE_KEY, 0, {"group_id": group, "topic_id": topic_id,
                                       "partition": partition}, w)
    return w.getvalue()


def value_bytes(rtype: int, body: dict[str, Any]) -> bytes:
    w = Writer()
    w.int16(0)
    write_message(SHARE_STATE_TYPES[rtype].value, 0, body, w)
    return w.getvalue()


def _batches(rng: random.Random, start: int) -> list[dict[str, int]]:
    out = []
    first = start
    for _ in range(rng.randrange(4)):
        first += rng.randrange(0, 5)
        last = first + rng.randrange(0, 6)
        out.append({"first_offset": first, "last_offset": last,
                    "delivery_state": rng.choice((0, 2, 4)),
                    "delivery_count": rng.randrange(1, 4)})
        first = last + 1
    return out


def share_log(seed: int, groups: int = 3, records: int = 240,
              log_partitions: int = 2) -> list[Raw]:
    rng = random.Random(seed)
    keys = [(f"share-{g}", rng.choice(TOPICS), p) for g in range(groups) for p in range(2)]
    start = dict.fromkeys(keys, -1)
    offsets = [0] * log_partitions
    out: list[Raw] = []
    for n in range(records):
        key = rng.choice(keys)
        lp = keys.index(key) % log_partitions
        t = T0 + n * 1_000
        roll = rng.random()
        if (start[key] == -1 and roll < 0.7) or roll < 0.08:  # (re)initialized: a snapshot
            s = start[key] = max(0, start[key]) + rng.randrange(0, 20)
            record = (key_bytes(0, *key), value_bytes(0, {
                "snapshot_epoch": rng.randrange(5), "state_epoch": rng.randrange(3),
                "leader_epoch": rng.randrange(4), "start_offset": s,
                "delivery_complete_count": rng.choice((-1, rng.randrange(5))),
                "create_timestamp": t - 5_000, "write_timestamp": t,
                "state_batches": _batches(rng, s)}))
        elif roll < 0.12:  # the group's offsets deleted
            start[key] = -1
            record = (key_bytes(0, *key), None)
        elif roll < 0.14:  # what the shard would not apply
            record = rng.choice([(key_bytes(1, *key), None), (key_bytes(7, *key), b"\x00\x00"),
                                 (key_bytes(1, *key), b"\x00\x00\x05")])
        else:
            moved = start[key] == -1 or rng.random() < 0.4  # after a tombstone: starts anew
            if moved:
                start[key] = max(0, start[key]) + rng.randrange(1, 6)
            record = (key_bytes(1, *key), value_bytes(1, {
                "snapshot_epoch": rng.randrange(5), "leader_epoch": rng.choice((-1, 2)),
                "start_offset": start[key] if moved else -1,
                "delivery_complete_count": rng.choice((-1, rng.randrange(8))),
                "state_batches": _batches(rng, max(0, start[key]))}))
        out.append((*record, lp, offsets[lp], t))
        offsets[lp] += 1
    return out
