"""kconform.spark_reports."""
