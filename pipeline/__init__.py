"""Consumer-group replay engine: Kafka's group coordinator folded over a Delta event log."""
