"""The independent Delta writes of one batch, run side by side.

A Delta commit costs the driver a fixed time that is mostly waiting (reading the table's
log, writing files and the commit), whatever the size of the write. The tables of one batch
are independent transactions, so their writes overlap on a few threads: Spark runs the jobs
of several driver threads at once and shares the cores between their tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

WRITERS = 4


def run_all(tasks: Sequence[Callable[[], None]], workers: int = WRITERS) -> None:
    """Run every task; when all have ended, raise the first failure (in task order)."""
    if len(tasks) <= 1:
        for task in tasks:
            task()
        return
    with ThreadPoolExecutor(max_workers=min(workers, len(tasks)),
                            thread_name_prefix="delta-write") as pool:
        futures = [pool.submit(task) for task in tasks]
    for future in futures:
        future.result()
