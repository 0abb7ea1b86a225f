"""What the Dispatcher holds for each job: a :class:`JobRunner`.

:class:`JobRunner` is the interface (start, cancel, status, summary, details, result, the
events it reacts to, ``done``). :class:`SparkJobRunner` is the part every job that runs on Spark
shares: the ExecutionGraph and its published state changes, the job's thread in its own Spark
job group, cancel (the group and every job it would still start), the bounded wait for the
last events, and the end of the job (slots released, ``done`` set, ``on_done`` called).
:class:`~.jobmaster.JobMaster` (a DataStream JobGraph), :class:`~.sqljob.SqlJob` (one SQL
query) and :class:`~.jobstore.StoredJob` (a finished job read back from disk) implement it; a
streaming job is one more implementation, made by the runner factory the Dispatcher is given.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable

from ..api.accumulators import Accumulator
from ..api.restart import RestartBackoff
from ..background import BackgroundTasks
from ..graph.executiongraph import Execution, ExecutionGraph
from ..graph.jobgraph import JobGraph
from ..graph.lifecycle import ExecutionState, IllegalStateTransition, JobStatus
from ..protocol.messages import (
    AccumulatorsUpdated,
    ExecutionInfo,
    ExecutionStateChanged,
    JobDetails,
    JobResultReply,
    JobStatusChanged,
    JobSummary,
    Message,
    TaskEvent,
)
from ..spark.events import JobStarted, StageSubmitted, TaskEnded, TaskStarted
from .resourcemanager import ResourceManager

log = logging.getLogger("sessioncluster.runner")

#: How long a job waits, after Spark returned, for the last task reports and listener events.
FINAL_REPORT_TIMEOUT = 10.0
#: How often a running job publishes its live accumulators, at most (s)
LIVE_ACCUMULATOR_PERIOD = 0.1

Publish = Callable[[str, Message], None]


class NotStreamingError(LookupError):
    """Asked of a BATCH job what only a STREAMING job has (savepoints, streamed results)."""


class JobRunner(abc.ABC):
    """One job as the Dispatcher sees it. Every method runs on the JobManager's loop thread."""

    job_id: str
    name: str
    #: set when the job reached a globally terminal status
    done: asyncio.Event
    #: HA: cancelled because this JobManager lost the leadership; not an end of the job (the
    #: new leader runs it again), so never recorded nor told to a client as one
    suspended: bool = False
    #: HA: how many runs of this job this JobManager suspended before this one (Spark
    #: remembers a cancelled job group for good, so each run here needs a group of its own)
    earlier_runs: int = 0
    #: whether :meth:`on_stage_submitted` needs the stage's name, parents and RDDs (read from
    #: Spark's event with a py4j call each); without them it gets the stage's id and group
    stage_details: bool = True

    @property
    def spark_group(self) -> str:
        """The Spark job group of this run: the job id, then ``<job id>-<run>``."""
        return self.job_id if not self.earlier_runs else f"{self.job_id}-{self.earlier_runs}"

    @property
    @abc.abstractmethod
    def status(self) -> JobStatus: ...

    @abc.abstractmethod
    def start(self) -> None:
        """Begin running (the job's own thread does the Spark work)."""

    @abc.abstractmethod
    def cancel(self) -> None:
        """Cancel the job; no-op once it is globally terminal."""

    @abc.abstractmethod
    def summary(self) -> JobSummary: ...

    @abc.abstractmethod
    def details(self) -> JobDetails: ...

    @abc.abstractmethod
    def result(self) -> JobResultReply:
        """The outcome; ``done=False`` while the job runs."""

    # -- STREAMING jobs (defaults: a BATCH job has neither) -------------------------------
    def trigger_savepoint(self, path: str, stop: bool) -> "Future[str]":
        """Take a savepoint into ``path`` (then stop the job if ``stop``); the future gives its
        location."""
        future: Future[str] = Future()
        future.set_exception(NotStreamingError(
            f"job {self.job_id} is a BATCH job: only STREAMING jobs have savepoints"))
        return future

    def fetch_results(self, sink_id: str | None, after: int, limit: int,
                      peek: bool = False) -> Message:
        """A STREAMING job's results from sequence number ``after`` on (``peek``: the latest
        ``limit``, acknowledging nothing)."""
        raise NotStreamingError(f"job {self.job_id} is a BATCH job: its records come with its "
                                "result")

    def final_reply(self) -> Message:
        """What the submitting client is sent when the job ends (a SQL query: its rows)."""
        return self.result()

    def started_reply(self) -> Message | None:
        """What the submitting client is sent as soon as the job runs, instead of
        :meth:`final_reply` at its end (a streaming INSERT); None: the final reply."""
        return None

    # -- events routed to the job (defaults: not interested) ----------------------------------
    def on_task_event(self, ev: TaskEvent) -> None:
        """A slot worker's report about one of the job's subtasks."""
        return None

    def on_stage_submitted(self, ev: StageSubmitted) -> None:
        """Spark submitted a stage in the job's group."""
        return None

    def on_spark_task_event(self, ev: TaskStarted | TaskEnded) -> None:
        """A Spark task of one of the job's stages started or ended."""
        return None

    def on_spark_job_started(self, ev: JobStarted) -> None:
        """Spark started a job (an action) in the job's group."""
        return None

    def on_taskmanager_lost(self, tm_id: str) -> None:
        """A TaskManager is lost: its subtasks of this job fail over (Spark runs their tasks
        again elsewhere)."""
        return None


class SparkJobRunner(JobRunner):
    """The shared part of the jobs that run on the JobManager's SparkContext."""

    def __init__(self, job_id: str, name: str, job_graph: JobGraph, sc: Any, rm: ResourceManager,
                 loop: asyncio.AbstractEventLoop, publish: Publish,
                 on_done: Callable[["JobRunner"], None]) -> None:
        self.job_id = job_id
        self.name = name
        self.job_graph = job_graph
        self.sc = sc
        self.rm = rm
        self.publish = publish
        self.on_done = on_done
        self.loop = loop
        self.graph = ExecutionGraph(job_id, job_graph, listener=self._on_execution_state)
        self.start_time = time.time()
        self.end_time: float | None = None
        self.error_text: str | None = None
        self.cancel_requested = False
        self.done = asyncio.Event()
        self.background = BackgroundTasks(f"job {job_id[:8]}", on_failure=self._internal_failure)
        #: Spark jobs (actions) started in the job's group
        self.spark_jobs = 0
        self._progress = asyncio.Event()
        self._acc_publish_pending = False

    @property
    def status(self) -> JobStatus:
        return self.graph.status

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        self._set_status(JobStatus.CREATED)
        self._set_status(JobStatus.RUNNING)
        threading.Thread(target=self._spark_thread, name=f"{type(self).__name__}-{self.job_id[:8]}",
                         daemon=True).start()

    def on_spark_job_started(self, ev: JobStarted) -> None:
        self.spark_jobs += 1

    def _spark_thread(self) -> None:
        """In the job's own thread, in its Spark job group: run it, then hand the outcome to
        the loop with ``loop.call_soon_threadsafe``."""
        self.sc.setJobGroup(self.spark_group, self.name, interruptOnCancel=True)
        self.run_on_spark()

    @abc.abstractmethod
    def run_on_spark(self) -> None:
        """The job's Spark work, in its thread."""

    def cancel(self) -> None:
        """Cancel the job's running Spark jobs and every one it would still start."""
        if self.graph.status.is_globally_terminal or self.cancel_requested:
            return
        self.cancel_requested = True
        self._set_status(JobStatus.CANCELLING)
        self.graph.start_canceling()
        threading.Thread(target=cancel_job_group, args=(self.sc, self.spark_group),
                         name=f"cancel-{self.job_id[:8]}", daemon=True).start()

    async def wait_for_progress(self, settled: Callable[[], bool],
                                timeout: float = FINAL_REPORT_TIMEOUT) -> bool:
        """Wait until ``settled()`` holds, re-checking on every event; False after ``timeout``."""
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

    def progressed(self) -> None:
        """An event arrived: wake :meth:`wait_for_progress`."""
        self._progress.set()

    def end(self, status: JobStatus) -> None:
        """The end of the job: its final status, slots released, ``done``, ``on_done``."""
        self._set_status(status)
        self.end_time = time.time()
        for ex in self.graph.all_executions():
            if ex.spark_task_id is not None:
                self.rm.release(ex.spark_task_id)
        self.on_end()
        self.done.set()
        self.background.cancel_all()
        self.on_done(self)

    def on_end(self) -> None:
        """Hook: what a job publishes at its end, before ``done`` is set."""

    def _internal_failure(self, exc: BaseException) -> None:
        """One of the job's own tasks failed (a fault of the JobManager's, logged): the job
        ends FAILED with it (CANCELED when it was being cancelled), so that nothing waits for
        it forever."""
        if self.status.is_globally_terminal:
            return
        self.error_text = self.error_text or (
            f"the JobManager failed the job: {type(exc).__name__}: {exc}")
        middle, final = ((JobStatus.CANCELLING, JobStatus.CANCELED) if self.cancel_requested
                         else (JobStatus.FAILING, JobStatus.FAILED))
        if self.status is not middle:
            try:
                self._set_status(middle)
            except IllegalStateTransition:
                pass
        try:
            self.end(final)
        except Exception:  # noqa: BLE001 - the bookkeeping is broken: end it all the same
            log.exception("job %s: ending it after an internal failure", self.job_id)
            self.done.set()
            self.on_done(self)

    # -- restart (Flink's restart of the whole job) ------------------------------------------
    def restart(self, backoff: RestartBackoff, reason: str) -> None:
        """RESTARTING, the strategy's delay, then RUNNING again with a new attempt of every
        subtask in the same ExecutionGraph and the job's Spark work run again in a new thread.
        The caller has checked ``backoff.can_restart``."""
        backoff.restarts += 1
        log.info("job %s failed (%s); restart %d in %.1f s", self.job_id, reason,
                 backoff.restarts, backoff.delay_seconds)
        self._set_status(JobStatus.RESTARTING)
        self.background.start(self._run_again(backoff.delay_seconds))

    async def _run_again(self, delay: float) -> None:
        await asyncio.sleep(delay)
        if self.cancel_requested or self.status is not JobStatus.RESTARTING:
            return
        self.graph.new_attempts()
        self.before_run_again()
        self._set_status(JobStatus.RUNNING)
        threading.Thread(target=self._spark_thread, name=f"{type(self).__name__}-{self.job_id[:8]}-restart",
                         daemon=True).start()

    def before_run_again(self) -> None:
        """Hook: what a job forgets of its failed run before it runs again (new attempts made)."""

    def live_accumulators(self) -> dict[str, Accumulator[Any]]:
        """The job's accumulators while it runs, merged by name."""
        return self.graph.live_accumulators()

    def _schedule_accumulator_publish(self) -> None:
        """Publish the live accumulators soon (at most every ``LIVE_ACCUMULATOR_PERIOD``)."""
        if self._acc_publish_pending:
            return
        self._acc_publish_pending = True

        def publish() -> None:
            self._acc_publish_pending = False
            if not self.status.is_globally_terminal:
                self.publish(self.job_id, AccumulatorsUpdated(
                    self.job_id, plain_values(self.live_accumulators())))

        self.loop.call_later(LIVE_ACCUMULATOR_PERIOD, publish)

    def _set_status(self, status: JobStatus) -> None:
        self.graph.transition(status)
        now = time.time()
        for topic in (self.job_id, "cluster"):
            self.publish(topic, JobStatusChanged(self.job_id, self.name, status, now))

    def _on_execution_state(self, ex: Execution, previous: ExecutionState) -> None:
        self.publish(self.job_id, execution_state_changed(self.job_id, ex))

    # -- views ------------------------------------------------------------------------------
    def summary(self) -> JobSummary:
        return job_summary(self.graph, self.name, self.start_time, self.end_time)

    def runtime_ms(self) -> int:
        return int(((self.end_time or time.time()) - self.start_time) * 1000)

    def result(self) -> JobResultReply:
        if not self.status.is_globally_terminal:
            return JobResultReply(self.job_id, False, self.status)
        return JobResultReply(self.job_id, True, self.status, net_runtime_ms=self.runtime_ms(),
                              error_text=self.error_text)


def plain_values(accs: dict[str, Accumulator[Any]]) -> dict[str, Any]:
    """Accumulators by name as plain values (what the clients are shown)."""
    return {name: acc.get_local_value() for name, acc in accs.items()}


def cancel_job_group(sc: Any, group: str) -> None:
    """Cancel the Spark jobs of ``group`` and every job it starts later (a job that runs one
    Spark action per sink must not start its next action after a cancel)."""
    try:
        sc._jsc.sc().cancelJobGroupAndFutureJobs(group)
    except Exception:  # noqa: BLE001 - Spark gone: the JobManager is stopping
        log.warning("could not cancel Spark job group %s", group, exc_info=True)


def kill_executor(sc: Any, executor_id: str) -> None:
    """Have Spark kill an executor and start a replacement; its running tasks fail (as lost)
    and run again on the others. Spark's ``killAndReplaceExecutor`` (the driver's own use, for
    an executor that misses its heartbeats) keeps the number of executors the session has."""
    try:
        if not sc._jsc.sc().killAndReplaceExecutor(executor_id):
            log.warning("Spark did not kill executor %s", executor_id)
    except Exception:  # noqa: BLE001 - Spark gone, or the executor is gone already
        log.warning("could not kill executor %s", executor_id, exc_info=True)


def execution_state_changed(job_id: str, ex: Execution) -> ExecutionStateChanged:
    """The PUB event of an Execution's new state."""
    return ExecutionStateChanged(job_id, ex.vertex_id, ex.subtask, ex.attempt_number, ex.state,
                                 ex.tm_id, ex.slot, ex.state_times[ex.state.value])


def execution_infos(graph: ExecutionGraph) -> list[ExecutionInfo]:
    """Every Execution of ``graph`` as the clients see it."""
    return [ExecutionInfo(ex.vertex_id, ex.subtask, ex.attempt_number, ex.state, ex.tm_id, ex.slot,
                          ex.spark_task_id, dict(ex.state_times), ex.error, dict(ex.accumulators))
            for ex in graph.all_executions()]


def job_summary(graph: ExecutionGraph, name: str, start: float, end: float | None) -> JobSummary:
    """A job's line in the job list: status, times, subtasks finished of total."""
    tvs = [tv for ejv in graph.job_vertices.values() for tv in ejv.task_vertices]
    return JobSummary(graph.job_id, name, graph.status, start, end, len(tvs),
                      sum(tv.finished_execution is not None for tv in tvs))
