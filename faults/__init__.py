"""kconform.faults."""
