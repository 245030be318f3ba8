"""The Spark side of the replay, in rooms that import only downward:

    runtime   the JVM and its session (session, jars, logs)
    tables    the warehouse: the contract's types, paths, flags, creation, catalog
    events    the event log into the fold: read, checked, packed, decoded
    fold      the fold as Spark runs it, and the wire back
    lag       lag from end-offset samples                newest_rows  the tables' rows Prometheus serves
    share     the share-state log replayed per key (`__share_group_state`)
    stream    the streaming replay and its upkeep        backfill   the batch backfill
    ingest    from Kafka into the event log              serve      SQL over the tables

`newest_rows`, `backfill` and `serve` are one module each; docs/architecture.md draws the rooms and
what flows between them."""
