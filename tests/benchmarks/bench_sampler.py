"""Benchmark (not a test): one end-offset sampler round against a real broker with many
partitions, as the live ingest takes it.

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_sampler.py --topics 100 --per-topic 100

Starts a single-node Kafka (the tests' broker, `pipeline.kafka.broker`), creates `--topics`
topics of `--per-topic` partitions each, and runs `--rounds` rounds of `EndOffsetSampler`
(`pipeline/spark/ingest/sampler.py`) over all of them: each round's describeTopics and
listOffsets seconds (what the round asks the cluster, and reads back), then its write into a
Delta samples table. Prints each round's seconds, the time a partition, and what a round of
200,000 partitions would take at that rate. One broker holds 10,000 partitions on this
machine (each partition maps two index files; the default `vm.max_map_count` is 65,530).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from confluent_kafka import NewTopic
from confluent_kafka.admin import AdminClient

from pipeline.kafka.broker import kafka_broker
from pipeline.spark.ingest.sampler import EndOffsetSampler
from pipeline.spark.lag.samples import write_samples
from pipeline.spark.runtime.session import build_session

ROUND = 200_000


def create(bootstrap: str, topics: int, per_topic: int) -> list[str]:
    client = AdminClient({"bootstrap.servers": bootstrap})
    names = [f"bench-{i:05d}" for i in range(topics)]
    for start in range(0, topics, 50):  # the controller takes a batch at a time
        futures = client.create_topics([NewTopic(n, per_topic, 1) for n in names[start:start + 50]],
                                       operation_timeout=120)
        for f in futures.values():
            f.result(180)
    while True:  # created is not yet described: wait until the metadata names every one
        known = client.list_topics(timeout=60).topics
        if all(n in known and len(known[n].partitions) == per_topic for n in names):
            return names
        time.sleep(1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--topics", type=int, default=100, help="topics to create")
    p.add_argument("--per-topic", type=int, default=100, help="partitions a topic")
    p.add_argument("--rounds", type=int, default=3, help="rounds to time")
    args = p.parse_args()
    n = args.topics * args.per_topic
    with tempfile.TemporaryDirectory(prefix="bench-sampler-") as tmp, \
            kafka_broker(Path(tmp) / "kafka", heap="2g") as broker:
        started = time.perf_counter()
        names = create(broker.bootstrap_servers, args.topics, args.per_topic)
        print(f"{n:,} partitions ({args.topics} topics) created in "
              f"{time.perf_counter() - started:.0f} s", flush=True)
        spark = build_session("bench-sampler", "local")
        spark.sparkContext.setLogLevel("ERROR")
        target = str(Path(tmp) / "samples")
        sampler = EndOffsetSampler(spark, broker.bootstrap_servers, {}, target,
                                   timeout_ms=120_000)
        sampler.add_topics(names)
        try:
            for i in range(args.rounds):
                began = time.perf_counter()
                result = sampler.take_round(int(time.time() * 1000))
                asked = time.perf_counter()
                written = write_samples(spark, result.rows, target)
                done = time.perf_counter()
                each = (asked - began) / n
                print(f"round {i + 1}: {len(result.rows):,} rows, {len(result.left_out)} left out "
                      f"({result.error or 'no error'}); asked and read {asked - began:.2f} s "
                      f"({each * 1e6:,.0f} us a partition -> a {ROUND:,}-partition round "
                      f"~{each * ROUND:,.0f} s), written {done - asked:.2f} s ({written:,} rows)",
                      flush=True)
        finally:
            sampler.close()
            spark.stop()


if __name__ == "__main__":
    main()
