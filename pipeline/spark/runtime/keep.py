"""A DataFrame computed once for the several Spark jobs that read it, then released.

Every job that reads one result more than once keeps it here: the stream's batch after the
fold (the stateful operator must run once a batch), the lag step's rows, the backfill's
samples, the ingest's decoded records, the rows a MERGE or an append inserts.

Not with `DataFrame.persist` on a local master. Spark 4.2's cache (`CachedRDDBuilder`)
gives each of its tasks a `PartitionKeyedAccumulator` whose map is null between the
accumulator's registration and the end of the task's deserialization; a heartbeat caught in
that window reports it, and the driver's heartbeat receiver throws a NullPointerException
reading it ("Uncaught exception in thread heartbeat-receiver-event-loop-thread", then the
executor's "Issue communicating with driver in heartbeater" and their stack traces: seen in
the demo's first batch). A local checkpoint keeps the same rows in the same storage without
that accumulator. Its lineage is cut, so a lost block cannot be computed again: on a local
master a lost block means a lost driver anyway. On a cluster, where an executor can be lost
and its partitions must be computed again (the fold's from the state store), the cache stays;
so may the race, which there costs log lines, never a batch
(`spark.executor.heartbeat.dropZeroAccumulatorUpdates`, conf/spark-defaults.conf).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark import StorageLevel
from pyspark.sql import DataFrame

LEVEL = StorageLevel.MEMORY_AND_DISK


def _local(df: DataFrame) -> bool:
    return str(df.sparkSession.sparkContext.master).startswith("local")


def keep(df: DataFrame) -> DataFrame:
    """`df`, each partition computed by the first job that needs it and read from storage by
    the next ones, until `release`."""
    if _local(df):
        return df.localCheckpoint(eager=False, storageLevel=LEVEL)
    return df.persist(LEVEL)


def release(kept: DataFrame) -> None:
    """Free what `keep` stored for `kept`."""
    plan = kept._jdf.queryExecution().analyzed()
    if plan.getClass().getSimpleName() == "LogicalRDD":  # a local checkpoint's rows
        plan.rdd().unpersist(False)
    else:
        kept.unpersist()


@contextmanager
def kept(df: DataFrame) -> Iterator[DataFrame]:
    """`keep(df)` for the block's jobs, released after it."""
    held = keep(df)
    try:
        yield held
    finally:
        release(held)
