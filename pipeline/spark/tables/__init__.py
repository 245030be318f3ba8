"""The warehouse every job reads and writes: the contract's Spark types (`contract`),
paths and flags as the jobs take them (`paths`, `options`), Spark's errors as one line
(`errors`), creating a table so a kill cannot wedge it (`creation`), the tables and their
catalog names (`warehouse`, `topics`, `catalog`), one batch's writes side by side
(`parallel`), and every write of rows to a table, from the driver by delta-rs or by Spark (`writes`).
Imports only `runtime`."""
