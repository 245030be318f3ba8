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

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_sampler.py --write-only 200000 [--by-spark]

Without a broker: `--rounds` rounds of that many partitions' rows (one topic a thousand
partitions), each written as a round is, into one samples table; the table grows a round's
rows at a time, as it does over a run.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from pipeline.kafka.broker import kafka_broker
from pipeline.spark.ingest.sampler import EndOffsetSampler
from pipeline.spark.lag.samples import write_samples
from pipeline.spark.runtime.session import build_session
from pipeline.spark.tables.writes import SMALL_CONF

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


def write_only(partitions: int, rounds: int, by_spark: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-sampler-") as tmp:
        spark = build_session("bench-sampler", "local")
        spark.sparkContext.setLogLevel("ERROR")
        spark.conf.set(SMALL_CONF, str(not by_spark).lower())
        target = str(Path(tmp) / "samples")
        start_ms = int(time.time() * 1000)
        try:
            for i in range(rounds):
                at = start_ms + 30_000 * i
                rows = [{"topic": f"t-{p // 1000:04d}", "partition": p % 1000,
                         "log_end_offset": 1_000 * i + p, "sampled_at": at,
                         "source": "bench"} for p in range(partitions)]
                began = time.perf_counter()
                written = write_samples(spark, rows, target)
                print(f"round {i + 1}: {written:,} rows written in "
                      f"{time.perf_counter() - began:.2f} s", flush=True)
        finally:
            spark.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--topics", type=int, default=100, help="topics to create")
    p.add_argument("--per-topic", type=int, default=100, help="partitions a topic")
    p.add_argument("--rounds", type=int, default=3, help="rounds to time")
    p.add_argument("--write-only", type=int, metavar="PARTITIONS",
                   help="no broker: time the writes of rounds of this many partitions' rows")
    p.add_argument("--by-spark", action="store_true",
                   help="with --write-only: every write by Spark's writer (small writes off)")
    args = p.parse_args()
    if args.write_only:
        write_only(args.write_only, args.rounds, args.by_spark)
        return
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
