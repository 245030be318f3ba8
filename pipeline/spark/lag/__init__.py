"""Lag from end-offset samples and the replayed history: the samples table
(`samples`), the lag step (`lagstate`: the incremental engine run per key on the executors,
from its state in the stream, from no state in the backfill), and how the stream and the
backfill feed it (`lagflow`). Imports `fold` and below."""
