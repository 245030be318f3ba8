"""Benchmark (not a test): `decode_record` throughput on one core over a realistic record mix,
run as `PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_decode.py --records 200000`. It encodes the
records first (not timed): 94% offset commits (v3, a tenth v1 with an expire timestamp), 3% group
snapshots (v3, 1-12 consumer members with v3 subscriptions and assignments, range or
cooperative-sticky, ~1.4 kB each), 2% offset and group tombstones, 1% KIP-848 records; then
decodes them all several times and prints the best run in records/s, overall and per kind."""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from pipeline.decode import decode_record, encode_record
from pipeline.decode.primitives import uuid_to_text

T0 = 1_700_000_000_000


def _commit(rng: random.Random, group: str) -> dict[str, Any]:
    v1 = rng.random() < 0.1
    return {"event_type": "OFFSET_COMMIT", "group_id": group, "topic": f"topic-{rng.randrange(8)}",
            "partition": rng.randrange(12), "committed_offset": rng.randrange(10**9),
            "leader_epoch": None if v1 else rng.randrange(20), "commit_metadata": "",
            "commit_timestamp_ms": T0 + rng.randrange(10**8),
            "expire_timestamp_ms": T0 + 10**9 if v1 else None}


def _snapshot(rng: random.Random, group: str) -> dict[str, Any]:
    n = rng.choice((1, 2, 3, 4, 6, 12))
    protocol = rng.choice(("range", "cooperative-sticky"))
    members = []
    for i in range(n):
        tps = [{"topic": f"topic-{t}", "partition": p} for t in range(3) for p in range(i, 12, n)]
        members.append({
            "member_id": f"consumer-{group}-{i}-5f1c7d2e-9a0b-4c3d", "group_instance_id": None,
            "client_id": f"consumer-{group}-{i}", "client_host": f"/10.0.{i}.7",
            "session_timeout_ms": 45_000, "rebalance_timeout_ms": 300_000,
            "subscription": ["topic-0", "topic-1", "topic-2"], "assignment": tps,
            "owned_partitions": tps, "subscription_generation_id": 6,
            "user_data_generation": 6 if protocol == "cooperative-sticky" else None})
    return {"event_type": "GROUP_METADATA", "group_id": group, "protocol_type": "consumer",
            "generation_id": 7, "protocol": protocol, "leader_id": members[0]["member_id"],
            "current_state_timestamp_ms": T0, "members": members}


def _kip848(rng: random.Random, group: str) -> dict[str, Any]:
    topic = uuid_to_text(rng.randbytes(16))
    return {"event_type": "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT", "group_id": group,
            "member_id": f"m-{rng.randrange(100)}", "member_epoch": 5, "previous_member_epoch": 4,
            "member_state": 0, "assigned_partitions": [{"topic_id": topic, "partitions": [0, 1]}],
            "partitions_pending_revocation": []}


def records(n: int, seed: int) -> list[tuple[bytes, bytes | None]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        group = f"group-{rng.randrange(500)}"
        r = rng.random()
        if r < 0.94:
            row = _commit(rng, group)
        elif r < 0.97:
            row = _snapshot(rng, group)
        elif r < 0.99:
            row = {**_commit(rng, group), "event_type": rng.choice(
                ("OFFSET_TOMBSTONE", "GROUP_TOMBSTONE"))}
        else:
            row = _kip848(rng, group)
        out.append(encode_record(row))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    t = time.perf_counter()
    data = records(args.records, args.seed)
    size = sum(len(k) + len(v or b"") for k, v in data)
    print(f"encoded {len(data):,} records ({size / 1e6:.1f} MB) "
          f"in {time.perf_counter() - t:.2f}s")
    best = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        for key, value in data:
            decode_record(key, value)
        best = min(best, time.perf_counter() - start)
    print(f"decoded in {best:.2f}s: {len(data) / best:,.0f} records/s, "
          f"{size / best / 1e6:.1f} MB/s (best of {args.repeat}, one core)")
    for kind, subset in _by_kind(data).items():
        start = time.perf_counter()
        for key, value in subset:
            decode_record(key, value)
        print(f"  {kind:<28} {len(subset):>8,} records "
              f"{len(subset) / (time.perf_counter() - start):>12,.0f} records/s")


def _by_kind(data: list[tuple[bytes, bytes | None]]) -> dict[str, list[tuple[bytes, bytes | None]]]:
    kinds: dict[str, list[tuple[bytes, bytes | None]]] = {}
    for key, value in data:
        kind = f"type {int.from_bytes(key[:2], 'big')}" + (" tombstone" if value is None else "")
        kinds.setdefault(kind, []).append((key, value))
    return dict(sorted(kinds.items()))


if __name__ == "__main__":
    main()
