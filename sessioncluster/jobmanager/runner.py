"""What the Dispatcher holds as a job: the :class:`JobRunner` interface, the parts every
implementation shares (:class:`JobRunnerBase`), and the :class:`RunnerFactory` that makes a
runner for a submission by its kind (a DataStream JobGraph, a SQL query, ...).

A new kind of job (e.g. a streaming job) is one more implementation registered with the
factory; the Dispatcher does not change.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any, Callable, Protocol, runtime_checkable

from ..graph.executiongraph import Execution, ExecutionGraph
from ..graph.jobgraph import JobGraph
from ..graph.states import ExecutionState, JobStatus
from ..protocol.messages import (
    ExecuteSql,
    ExecutionInfo,
    ExecutionStateChanged,
    JobDetails,
    JobResultReply,
    JobStatusChanged,
    JobSummary,
    Message,
    SubmitJob,
    TaskEvent,
)
from ..spark.events import SparkEvent, StageSubmitted
from ..spark.sql import cancel_job_group
from ..tasks import BackgroundTasks
from .resourcemanager import ResourceManager

log = logging.getLogger("sessioncluster.runner")

#: How long to wait, after Spark's job returned, for the tasks' final reports.
FINAL_REPORT_TIMEOUT = 10.0


@runtime_checkable
class JobRunner(Protocol):
    """A job as the Dispatcher sees it (Flink's ``JobManagerRunner``)."""

    job_id: str
    name: str
    #: set once the job reached a globally terminal status
    done: asyncio.Event

    @property
    def status(self) -> JobStatus: ...

    def start(self) -> None:
        """Start running the job (returns at once)."""

    def cancel(self) -> None:
        """Cancel the job; a finished job ignores it."""

    def summary(self) -> JobSummary: ...

    def details(self) -> JobDetails: ...

    def result(self) -> JobResultReply:
        """The outcome; ``done=False`` while the job runs."""

    def submitted_reply(self) -> Message | None:
        """The reply to the submission as soon as the job started (None: none yet)."""

    def final_reply(self) -> Message | None:
        """The reply to the submission once the job ended (None: it got its reply at start)."""

    def on_task_event(self, ev: TaskEvent) -> None:
        """A TaskManager's report on one of the job's subtasks."""

    def on_stage_submitted(self, ev: StageSubmitted) -> None:
        """A Spark stage of the job's group was submitted."""

    def on_spark_event(self, ev: SparkEvent) -> None:
        """A Spark task event of one of the job's stages."""


MakeRunner = Callable[[str, Any, Callable[[JobRunner], None]], JobRunner]


def submission_kind(msg: Message) -> str:
    """The kind of job a submission asks for: the key of its runner in the factory."""
    if isinstance(msg, ExecuteSql):
        return "sql"
    if isinstance(msg, SubmitJob):
        return "datastream"
    raise ValueError(f"{msg.type!r} does not submit a job")


class RunnerFactory:
    """Makes a :class:`JobRunner` for a submission, by its :func:`submission_kind`."""

    def __init__(self, makers: dict[str, MakeRunner] | None = None) -> None:
        self.makers: dict[str, MakeRunner] = dict(makers or {})

    def register(self, kind: str, make: MakeRunner) -> None:
        self.makers[kind] = make

    def create(self, job_id: str, submission: Message,
               on_done: Callable[[JobRunner], None]) -> JobRunner:
        kind = submission_kind(submission)
        make = self.makers.get(kind)
        if make is None:
            raise ValueError(f"this JobManager does not run {kind} jobs")
        return make(job_id, submission, on_done)


class JobRunnerBase:
    """The common part of a running job: its ExecutionGraph and status, the events it
    publishes, the cancel, the bounded wait for progress and the end of the job.

    Subclasses run the job in :meth:`_run_on_spark` (in a thread of its own) and hand the
    outcome back to the loop; every graph change happens on the loop thread.
    """

    def __init__(self, job_id: str, job_graph: JobGraph, sc: Any, rm: ResourceManager,
                 loop: asyncio.AbstractEventLoop, publish: Callable[[str, Message], None],
                 on_done: Callable[[JobRunner], None], tasks: BackgroundTasks | None = None) -> None:
        self.job_id = job_id
        self.job_graph = job_graph
        self.name = job_graph.job_name
        self.sc = sc
        self.rm = rm
        self.loop = loop
        self.publish = publish
        self.on_done = on_done
        self.tasks = tasks if tasks is not None else BackgroundTasks(f"job {job_id[:8]}")
        self.graph = ExecutionGraph(job_id, job_graph, listener=self._on_execution_state)
        self.start_time = time.time()
        self.end_time: float | None = None
        self.error_text: str | None = None
        self.cancel_requested = False
        self.done = asyncio.Event()
        self._progress = asyncio.Event()

    @property
    def status(self) -> JobStatus:
        return self.graph.status

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._set_status(JobStatus.CREATED)
        self._set_status(JobStatus.RUNNING)
        threading.Thread(target=self._run_on_spark, name=f"{type(self).__name__}-{self.job_id[:8]}",
                         daemon=True).start()

    def _run_on_spark(self) -> None:  # pragma: no cover - every runner has its own
        raise NotImplementedError

    def cancel(self) -> None:
        """Cancel the job's Spark jobs, running and future ones; CANCELED once they stopped."""
        if self.graph.status.is_globally_terminal or self.cancel_requested:
            return
        self.cancel_requested = True
        self._set_status(JobStatus.CANCELLING)
        self.graph.start_canceling()
        if self.sc is not None:
            threading.Thread(target=cancel_job_group, args=(self.sc, self.job_id),
                             daemon=True).start()

    def submitted_reply(self) -> Message | None:
        return None

    def final_reply(self) -> Message | None:
        return None

    async def _wait_for_progress(self, settled: Callable[[], bool],
                                 timeout: float = FINAL_REPORT_TIMEOUT) -> bool:
        """Wait until ``settled()`` (re-checked on every event), at most ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not settled():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._progress.clear()
            try:
                await asyncio.wait_for(self._progress.wait(), left)
            except asyncio.TimeoutError:
                return settled()
        return True

    def _deployed_running(self) -> bool:
        return any(ex.state in (ExecutionState.DEPLOYING, ExecutionState.INITIALIZING,
                                ExecutionState.RUNNING, ExecutionState.CANCELING)
                   for ex in self.graph.all_executions())

    def _end(self, status: JobStatus) -> None:
        """The end of the job: final status, slots given back, then ``done`` and ``on_done``."""
        self._set_status(status)
        self.end_time = time.time()
        for ex in self.graph.all_executions():
            if ex.spark_task_id is not None:
                self.rm.release(ex.spark_task_id)
        self._ended()
        self.done.set()
        self.on_done(self)

    def _ended(self) -> None:
        """A hook for what a runner publishes at its end."""

    def _set_status(self, status: JobStatus) -> None:
        self.graph.transition(status)
        now = time.time()
        self.publish(self.job_id, JobStatusChanged(self.job_id, self.name, status, now))
        self.publish("cluster", JobStatusChanged(self.job_id, self.name, status, now))

    def _on_execution_state(self, ex: Execution, previous: ExecutionState) -> None:
        self.publish(self.job_id, execution_state_changed(ex))

    # -- events (no-ops unless a runner uses them) -------------------------------------------
    def on_task_event(self, ev: TaskEvent) -> None:
        """A TaskManager's report (runners whose tasks run no slot worker ignore it)."""

    def on_stage_submitted(self, ev: StageSubmitted) -> None:
        """A stage of the job's group (runners that know their graph up front ignore it)."""

    def on_spark_event(self, ev: SparkEvent) -> None:
        handler = self._spark_handlers().get(type(ev))
        if handler is not None:
            handler(ev)
            self._progress.set()

    def _spark_handlers(self) -> dict[type, Callable[[Any], None]]:
        return {}

    # -- views -------------------------------------------------------------------------------
    def details(self) -> JobDetails:  # pragma: no cover - every runner has its own
        raise NotImplementedError

    def result(self) -> JobResultReply:  # pragma: no cover - every runner has its own
        raise NotImplementedError

    def summary(self) -> JobSummary:
        return job_summary(self.graph, self.name, self.start_time, self.end_time)

    def runtime_ms(self) -> int:
        return int(((self.end_time or time.time()) - self.start_time) * 1000)


def execution_state_changed(ex: Execution) -> ExecutionStateChanged:
    """The PUB event of an Execution's new state."""
    return ExecutionStateChanged(ex.job_id, ex.vertex_id, ex.subtask, ex.attempt_number, ex.state,
                                 ex.tm_id, ex.slot, ex.state_times[ex.state.value])


def execution_infos(graph: ExecutionGraph) -> list[ExecutionInfo]:
    """Every Execution of ``graph`` as the clients see it."""
    return [ExecutionInfo(ex.vertex_id, ex.subtask, ex.attempt_number, ex.state, ex.tm_id, ex.slot,
                          ex.spark_task_id, dict(ex.state_times), ex.error)
            for ex in graph.all_executions()]


def job_summary(graph: ExecutionGraph, name: str, start: float, end: float | None) -> JobSummary:
    """A job's line in the job list: status, times, subtasks finished of total."""
    tvs = [tv for ejv in graph.job_vertices.values() for tv in ejv.task_vertices]
    return JobSummary(graph.job_id, name, graph.status, start, end, len(tvs),
                      sum(tv.finished_execution is not None for tv in tvs))
