"""The JVM and its session, below every other room: `session` builds the Delta-enabled
SparkSession from `conf/` (profiles, spark-submit or not), `jars` caches the Delta and Kafka
JARs it adds, `logs` starts the JVM quietly and keeps to what a user can act on. Imports
nothing else of `pipeline.spark`."""
