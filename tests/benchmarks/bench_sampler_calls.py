"""Benchmark (not a test): what the live ingest's end-offset sampler pays in Py4J calls a
partition, before any broker answers.

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_sampler_calls.py --partitions 2000,20000

The sampler (`pipeline/spark/ingest/sampler.py`) asks Kafka's Java Admin client through Py4J:
per partition a `TopicPartition`, a put into each of three request maps (latest, earliest,
max timestamp) and, per answer, a lookup and a read of its fields. This makes the same calls in
a local session, with no Admin client and no broker (the maps' values stand in for the
answers), and prints their seconds and the time a partition, and what a round over 200,000
partitions would take at that rate.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from pipeline.spark.runtime.session import build_session

ROUND = 200_000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--partitions", default="2000,20000", help="partition counts, comma-separated")
    p.add_argument("--per-topic", type=int, default=100, help="partitions a topic")
    args = p.parse_args()
    spark = build_session("bench-sampler-calls", "local")
    spark.sparkContext.setLogLevel("ERROR")
    jvm: Any = spark._jvm
    kafka = jvm.org.apache.kafka
    spec = kafka.clients.admin.OffsetSpec.latest()
    for n in (int(x) for x in args.partitions.split(",")):
        start = time.perf_counter()
        tps = [kafka.common.TopicPartition(f"topic-{i // args.per_topic}", i % args.per_topic)
               for i in range(n)]
        made = time.perf_counter()
        maps = []
        for _ in range(3):
            wanted = jvm.java.util.HashMap()
            for tp in tps:
                wanted.put(tp, spec)
            maps.append(wanted)
        put = time.perf_counter()
        for wanted in maps:  # an answer: the lookup, then two of its fields
            for tp in tps:
                wanted.get(tp).hashCode()
                wanted.get(tp).hashCode()
        read = time.perf_counter()
        each = (read - start) / n
        print(f"{n:,} partitions: TopicPartition {made - start:.2f} s, three maps "
              f"{put - made:.2f} s, three answers {read - put:.2f} s; {each * 1e6:,.0f} us a "
              f"partition -> a {ROUND:,}-partition round ~{each * ROUND:,.0f} s", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
