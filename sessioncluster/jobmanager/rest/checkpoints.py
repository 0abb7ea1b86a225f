"""Flink's checkpoint statistics bodies of a STREAMING job (``/jobs/:jobid/checkpoints/...``).

A checkpoint here is a committed micro-batch (:class:`CheckpointInfo`); every subtask of every
vertex takes part in it, so its task statistics are the checkpoint's, per vertex.
"""

from __future__ import annotations

from typing import Any

from ...protocol.messages import CheckpointInfo, JobDetails


def _stats(values: list[int]) -> dict[str, Any]:
    """Flink's StatsSummaryDto of some values."""
    if not values:
        return {k: 0 for k in ("min", "max", "avg", "p50", "p90", "p95", "p99", "p999")}
    ordered = sorted(values)

    def q(f: float) -> float:
        return float(ordered[min(len(ordered) - 1, int(f * len(ordered)))])

    return {"min": ordered[0], "max": ordered[-1], "avg": sum(ordered) // len(ordered),
            "p50": q(0.5), "p90": q(0.9), "p95": q(0.95), "p99": q(0.99), "p999": q(0.999)}


def _task_statistics(c: CheckpointInfo, vertex_id: str, parallelism: int) -> dict[str, Any]:
    """Flink's TaskCheckpointStatistics of one vertex in one checkpoint."""
    return {"id": c.checkpoint_id, "status": c.status, "latest_ack_timestamp": c.ack_ms,
            "checkpointed_size": c.state_size, "state_size": c.state_size,
            "end_to_end_duration": c.duration_ms, "alignment_buffered": 0, "processed_data": 0,
            "persisted_data": 0, "num_subtasks": parallelism,
            "num_acknowledged_subtasks": parallelism if c.status == "COMPLETED" else 0,
            # ours: the vertex the statistics are of
            "vertex_id": vertex_id}


def checkpoint_json(c: CheckpointInfo, details: JobDetails, with_tasks: bool = False
                    ) -> dict[str, Any]:
    """Flink's CheckpointStatistics (Completed/FailedCheckpointStatistics) of one checkpoint;
    ``tasks`` holds each vertex's TaskCheckpointStatistics when ``with_tasks``."""
    parallelism = sum(v.parallelism for v in details.vertices)
    tasks = {v.vertex_id: _task_statistics(c, v.vertex_id, v.parallelism)
             for v in details.vertices} if with_tasks else {}
    return {"className": "completed" if c.status == "COMPLETED" else "failed", "id": c.checkpoint_id,
            "status": c.status, "is_savepoint": c.is_savepoint, "savepointFormat": None,
            "trigger_timestamp": c.trigger_ms, "latest_ack_timestamp": c.ack_ms,
            "checkpointed_size": c.state_size, "state_size": c.state_size,
            "end_to_end_duration": c.duration_ms, "alignment_buffered": 0,
            "processed_data": c.processed, "persisted_data": 0, "num_subtasks": parallelism,
            "num_acknowledged_subtasks": parallelism if c.status == "COMPLETED" else 0,
            "checkpoint_type": "SAVEPOINT" if c.is_savepoint else "CHECKPOINT", "tasks": tasks,
            "external_path": c.external_path or "", "discarded": False}


def checkpoint_statistics(details: JobDetails) -> dict[str, Any]:
    """Flink's CheckpointingStatistics of a STREAMING job."""
    info = details.streaming or {}
    history = list(info.get("checkpoints", []))
    by_status = info.get("counts", {})
    restored = info.get("restored")
    completed = [c for c in history if c.status == "COMPLETED"]
    failed = [c for c in history if c.status == "FAILED"]
    return {
        "counts": {"restored": int(restored is not None), "total": sum(by_status.values()),
                   "in_progress": 0, "completed": by_status.get("completed", 0),
                   "failed": by_status.get("failed", 0)},
        "summary": {"checkpointed_size": _stats([c.state_size for c in completed]),
                    "state_size": _stats([c.state_size for c in completed]),
                    "end_to_end_duration": _stats([c.duration_ms for c in completed]),
                    "alignment_buffered": _stats([]),
                    "processed_data": _stats([c.processed for c in completed]),
                    "persisted_data": _stats([])},
        "latest": {"completed": checkpoint_json(completed[-1], details) if completed else None,
                   "savepoint": None,
                   "failed": checkpoint_json(failed[-1], details) if failed else None,
                   "restored": None if restored is None else {
                       "id": restored.checkpoint_id, "restore_timestamp": restored.trigger_ms,
                       "is_savepoint": True, "external_path": restored.external_path}},
        "history": [checkpoint_json(c, details) for c in reversed(history)],
    }


def find_checkpoint(details: JobDetails, checkpoint_id: int) -> CheckpointInfo | None:
    """The checkpoint of that id among those the job still lists; None when it is not."""
    history = (details.streaming or {}).get("checkpoints", [])
    return next((c for c in history if c.checkpoint_id == checkpoint_id), None)


def checkpoint_subtasks(c: CheckpointInfo, details: JobDetails, vertex_id: str
                        ) -> dict[str, Any] | None:
    """``.../checkpoints/details/:cid/subtasks/:vid`` (TaskCheckpointStatisticsWithSubtaskDetails);
    None when the job has no such vertex."""
    vertex = next((v for v in details.vertices if v.vertex_id == vertex_id), None)
    if vertex is None:
        return None
    body = _task_statistics(c, vertex_id, vertex.parallelism)
    done = c.status == "COMPLETED"
    body["summary"] = {"checkpointed_size": _stats([c.state_size] if done else []),
                       "state_size": _stats([c.state_size] if done else []),
                       "end_to_end_duration": _stats([c.duration_ms] if done else []),
                       "checkpoint_duration": {"sync": _stats([]), "async": _stats([])},
                       "alignment": {"buffered": _stats([]), "processed": _stats([]),
                                     "persisted": _stats([]), "duration": _stats([])},
                       "start_delay": _stats([])}
    body["subtasks"] = [
        {"index": i, "status": "completed" if done else "pending_or_failed",
         "ack_timestamp": c.ack_ms, "end_to_end_duration": c.duration_ms,
         "state_size": c.state_size, "checkpointed_size": c.state_size,
         "checkpoint": {"sync": 0, "async": 0},
         "alignment": {"buffered": 0, "processed": 0, "persisted": 0, "duration": 0},
         "start_delay": 0, "unaligned_checkpoint": False, "aborted": not done}
        for i in range(vertex.parallelism)]
    return body


def checkpoint_config(details: JobDetails) -> dict[str, Any]:
    """``GET /jobs/:jobid/checkpoints/config`` (CheckpointConfigInfo)."""
    info = details.streaming or {}
    return {"mode": "exactly_once", "interval": info.get("interval_ms") or 0,
            "timeout": 600000, "min_pause": 0, "max_concurrent": 1,
            "externalization": {"enabled": True, "delete_on_cancellation": False},
            "state_backend": "RocksDB (Spark state store)",
            "checkpoint_storage": f"FileSystemCheckpointStorage ({info.get('checkpoint_dir')})",
            "unaligned_checkpoints": False, "tolerable_failed_checkpoints": 0,
            "aligned_checkpoint_timeout": 0, "checkpoints_after_tasks_finish": True,
            "state_changelog_enabled": False, "changelog_periodic_materialization_interval": 0,
            "changelog_storage": "", "periodic_materialization_interval": 0}
