"""Lag from end-offset samples and the replayed history: the samples table
(`samples`), the step that joins them in SQL (`lag`: the backfill's), the stream's step over
the incremental engine's state (`lagstate`), and the step as the stream and the backfill
run it (`lagflow`). Imports `fold` and below."""
