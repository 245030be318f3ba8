"""A query stopped in the middle of a `foreachBatch` ends as a stop, not a crash.

`StreamingQuery.stop()` cancels the batch's Spark jobs and interrupts its thread, so the
batch function's pending Spark call raises (a `Py4JJavaError`: `SPARK_JOB_CANCELLED ... was
stopped`, or an `InterruptedException`). PySpark hands that error back to the stream's thread
as the Python traceback's text, and Spark (`StreamExecution.isInterruptionException`) tells a
stop from a failure by matching that whole text against a regular expression,
`py4j.protocol.Py4JJavaError: An error occurred while calling((.|\\r\\n|\\r|\\n)*)(<an
interruption exception's name>)`, whose repeated alternation recurses once per character:
on a traceback carrying a Java stack trace, some thousands of characters, the stream's thread
dies of a `StackOverflowError` and prints a thousand frames at every stop mid-batch.

`stoppable` hands Spark a short text instead when the batch was stopped, worded so that the
same expression recognizes it as the interruption it is; any other error passes unchanged.
Spark does not record the batch as done either way, and the next start runs it again."""

from __future__ import annotations

import logging
from collections.abc import Callable

from pyspark.sql import DataFrame

# The Java exceptions Spark counts as an interruption (`StreamExecution.IO_EXCEPTION_NAMES`).
INTERRUPTIONS = ("java.lang.InterruptedException", "java.io.InterruptedIOException",
                 "java.nio.channels.ClosedByInterruptException")
# What `SparkContext.cancelJobGroup` says of a job it cancelled because the query stopped.
CANCELLED_BY_STOP = ("SPARK_JOB_CANCELLED", "was stopped")
# The start of the text Spark's expression looks for (`StreamExecution.PROXY_ERROR`).
PROXY_ERROR_PREFIX = "py4j.protocol.Py4JJavaError: An error occurred while calling"

BatchFunction = Callable[[DataFrame, int], None]


class StoppedMidBatch(Exception):
    """The query was stopped while batch `batch_id` ran: short, and read by Spark as a stop."""

    def __init__(self, batch_id: int) -> None:
        super().__init__(
            f"batch {batch_id} was stopped before it finished and runs again at the next start "
            f"({PROXY_ERROR_PREFIX} Spark: {INTERRUPTIONS[0]})")
        self.batch_id = batch_id


def _texts(e: BaseException) -> list[str]:
    """The text of `e` and of each exception it was raised from or while handling."""
    seen: list[str] = []
    at: BaseException | None = e
    while at is not None and len(seen) < 10:
        seen.append(str(at))
        at = at.__cause__ or at.__context__
    return seen


def stopped(e: BaseException) -> bool:
    """Whether `e` is what a Spark call raises when the query is stopped under it."""
    return any(any(name in text for name in INTERRUPTIONS)
               or all(part in text for part in CANCELLED_BY_STOP) for text in _texts(e))


def stoppable(func: BatchFunction, log: logging.Logger) -> BatchFunction:
    """`func` as a `foreachBatch` function whose batch, stopped mid-way, ends the query as a
    stop (`StoppedMidBatch`, one line on the job's `log`) rather than killing Spark's stream
    thread."""

    def batch(df: DataFrame, batch_id: int) -> None:
        try:
            func(df, batch_id)
        except Exception as e:
            if not stopped(e):
                raise
            first = next((line for line in str(e).splitlines() if line.strip()), "")
            log.info("batch %d stopped mid-way: %s", batch_id, first[:300])
            raise StoppedMidBatch(batch_id) from None

    return batch
