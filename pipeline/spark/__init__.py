"""The Spark side: the jobs' library (replay, backfill, ingest, lag, queries), the pipes
between Spark and the pure fold (`packing` in, `wire` out), and the session (`session`,
`jars`, `logs`)."""
