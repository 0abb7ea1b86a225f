"""Where Spark's listener events and the TaskManagers' task reports go: the one place that maps
Spark stages to jobs. Task events go to their job's runner, executor events to the
ResourceManager (a lost executor) and the JobManager (a new one), not through the Dispatcher."""

from __future__ import annotations

import logging
from typing import Any, Callable

from ..protocol.messages import TaskEvent
from ..spark.events import (
    ExecutorAdded,
    ExecutorRemoved,
    SparkEvent,
    StageSubmitted,
    TaskEnded,
    TaskStarted,
)
from .runner import JobRunner

log = logging.getLogger("sessioncluster.router")


class SparkEventRouter:
    """Routes events by type; ``runner_of(job_id)`` finds a running job (None if there is none)."""

    def __init__(self, runner_of: Callable[[str], JobRunner | None],
                 executor_lost: Callable[[str, str], None],
                 executor_added: Callable[[str], None]) -> None:
        self.runner_of = runner_of
        self.executor_lost = executor_lost
        self.executor_added = executor_added
        #: Spark stage id -> the job id (= Spark job group) it runs for
        self.stage_jobs: dict[int, str] = {}
        self._handlers: dict[type, Callable[[Any], None]] = {
            StageSubmitted: self._on_stage_submitted,
            TaskStarted: self._on_task,
            TaskEnded: self._on_task,
            ExecutorRemoved: self._on_executor_removed,
            ExecutorAdded: self._on_executor_added,
        }

    def on_spark_event(self, ev: SparkEvent) -> None:
        handler = self._handlers.get(type(ev))
        if handler is not None:  # other events (stage completed, job end) are not needed here
            handler(ev)

    def on_task_events(self, events: list[TaskEvent]) -> None:
        """The TaskManagers' reports, from the ResourceManager."""
        for ev in events:
            job = self._running(ev.job_id)
            if job is not None:
                job.on_task_event(ev)

    def forget(self, job_id: str) -> None:
        """A job ended: its stages are no longer routed."""
        self.stage_jobs = {s: j for s, j in self.stage_jobs.items() if j != job_id}

    def _running(self, job_id: str) -> JobRunner | None:
        job = self.runner_of(job_id)
        if job is None or job.status.is_globally_terminal:
            return None
        return job

    def _on_stage_submitted(self, ev: StageSubmitted) -> None:
        job = self._running(ev.job_group or "")
        if job is not None:
            self.stage_jobs[ev.stage_id] = job.job_id
            job.on_stage_submitted(ev)

    def _on_task(self, ev: TaskStarted | TaskEnded) -> None:
        job = self._running(self.stage_jobs.get(ev.stage_id, ""))
        if job is not None:
            job.on_spark_event(ev)

    def _on_executor_removed(self, ev: ExecutorRemoved) -> None:
        self.executor_lost(ev.executor_id, f"Spark removed the executor: {ev.reason}")

    def _on_executor_added(self, ev: ExecutorAdded) -> None:
        self.executor_added(ev.executor_id)
