"""Spark's checkpoint layout, as the JobManager, the FileSink and the notebook read it: a job's
checkpoint directory holds one directory per query, whose ``commits/<batch>`` files name the
micro-batches Spark has committed (it deletes the old ones)."""

from __future__ import annotations

from pathlib import Path


def latest_committed_batch(query_dir: Path) -> int | None:
    """The latest micro-batch committed under a query's checkpoint directory; None if none."""
    commits = query_dir / "commits"
    if not commits.is_dir():
        return None
    return max((int(p.name) for p in commits.iterdir() if p.name.isdigit()), default=None)


def is_retained_checkpoint(job_dir: Path) -> bool:
    """True for a job's checkpoint directory that kept a checkpoint (a committed micro-batch of
    one of its queries): Flink restores a retained checkpoint as it restores a savepoint."""
    return job_dir.is_dir() and any(
        latest_committed_batch(q) is not None for q in job_dir.iterdir() if q.is_dir())
