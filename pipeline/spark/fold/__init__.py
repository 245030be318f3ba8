"""The fold as Spark runs it, shared by the stream and the backfill: the per-group
functions Spark calls (`folding`), the wire that brings the fold's rows back to the JVM
(`wire`), the rows the JVM builds itself for the plain commits the fold leaves (`left`), and the
backfill's hand-off of its states to a stream (`handoff`). Imports `events` and below."""
