"""kconform.reference_broker."""
