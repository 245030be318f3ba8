"""Spark runtime layer: JVM artifacts (`jars`) and the one session builder (`session`)."""
