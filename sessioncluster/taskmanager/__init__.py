"""The TaskManager: Spark daemon hook (daemon), ZeroMQ agent (agent), the Task (task)."""
