"""Lag from end-offset samples and the replayed history: the samples table
(`samples`), the step that joins them in SQL (`lag`), the carry that keeps a stream's step
from re-reading all history (`lagcarry`), and the step as the stream and the backfill run it
(`lagflow`). Imports `fold` and below."""
