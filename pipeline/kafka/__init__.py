"""Kafka itself, for tests and local tries: a real single-node broker (`broker`)."""
