"""From a Kafka cluster into the event log: `__consumer_offsets` read through Spark's
Kafka source (`ingest`) and the topics' end offsets sampled beside it (`sampler`). Imports
`lag` and below."""
