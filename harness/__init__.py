"""kconform.harness."""
