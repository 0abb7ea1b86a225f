"""Flink SQL on Spark: Flink's dialect parsed with sqlglot, Flink's catalog tables and connectors,
and statements planned as Spark DataFrames (BATCH) or Structured Streaming queries (STREAMING)."""
