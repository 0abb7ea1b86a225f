"""StreamGraph -> JobGraph (chaining) -> ExecutionGraph, and Flink's state machines."""
