"""SQL jobs: one Spark SQL query on the JobManager's warm SparkSession, run as a job.

A :class:`SqlJob` is a :class:`~.runner.JobRunner` like a :class:`~.jobmaster.JobMaster`, but
its JobGraph is not sent by a client: it grows from Spark's stages as they are submitted.
Each Spark stage of the query becomes one JobVertex (name = Spark's stage name, parallelism =
its task count), a stage that reads another stage's shuffle output gets a HASH JobEdge from
it, and each Spark task attempt becomes an Execution driven by the listener's task start and
end events (no slot worker reports on a SQL task: it runs in the executor JVM).

The query runs in its own thread in the Spark job group ``job_id``; the result travels to the
client as Arrow IPC stream bytes, and is refused beyond the session's result limit
(:data:`MAX_RESULT_BYTES` unless the session was started with another).
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any, Callable

from ..graph.jobgraph import JobEdge, JobGraph, JobVertex
from ..graph.states import ExecutionState, JobStatus
from ..graph.streamgraph import Partitioning
from ..protocol.messages import (
    JobDetails,
    JobResultReply,
    Message,
    SqlResult,
    TaskError,
    VertexInfo,
)
from ..spark.events import StageSubmitted, TaskEnded, TaskStarted
from ..spark.sql import (
    MAX_RESULT_BYTES,
    ResultTooLargeError,
    cancel_job_group,
    collect_arrow_ipc,
    create_temporary_view_in_thread,
    register_temporary_view,
    spark_error_text,
    submitted_stages,
)
from ..tasks import BackgroundTasks
from .resourcemanager import ResourceManager
from .runner import FINAL_REPORT_TIMEOUT, JobRunner, JobRunnerBase, execution_infos

__all__ = ["MAX_RESULT_BYTES", "ResultTooLargeError", "SqlJob", "collect_arrow_ipc",
           "create_temporary_view_in_thread", "is_job_id", "register_temporary_view",
           "sql_error_text", "sql_job_name", "submitted_stages"]

log = logging.getLogger("sessioncluster.sqljob")

#: How much of the query a job's name shows.
NAME_CHARS = 60

_JOB_ID = re.compile(r"[0-9a-f]{32}")


def sql_job_name(query: str) -> str:
    """The job name of a query: ``SQL: `` and its first characters, whitespace collapsed."""
    return "SQL: " + " ".join(query.split())[:NAME_CHARS]


def is_job_id(job_id: str) -> bool:
    """True for a job id of the form the Dispatcher gives (32 lowercase hex digits)."""
    return isinstance(job_id, str) and _JOB_ID.fullmatch(job_id) is not None


#: The one Spark error parser, under the name the SQL API used.
sql_error_text = spark_error_text


# -- the job -------------------------------------------------------------------------------


class SqlJob(JobRunnerBase):
    """One SQL query as a job."""

    def __init__(self, job_id: str, query: str, spark: Any, rm: ResourceManager,
                 loop: asyncio.AbstractEventLoop, publish: Callable[[str, Message], None],
                 on_done: Callable[[JobRunner], None],
                 max_result_bytes: int = MAX_RESULT_BYTES, tasks: BackgroundTasks | None = None) -> None:
        super().__init__(job_id, JobGraph(sql_job_name(query), []), spark.sparkContext, rm, loop,
                         publish, on_done, tasks)
        self.query = query
        self.spark = spark
        self.max_result_bytes = max_result_bytes
        #: Spark stage id -> JobVertex id
        self.stage_vertices: dict[int, str] = {}
        #: JobVertex id -> the ids of the RDDs its stage computes
        self._vertex_rdds: dict[str, set[int]] = {}
        self._arrow: bytes | None = None
        self._rows = 0

    def final_reply(self) -> Message | None:
        return self.take_result()

    def take_result(self) -> SqlResult:
        """The reply to the client's :class:`ExecuteSql`; the rows are handed over only once."""
        arrow, self._arrow = self._arrow, None
        status = self.graph.status
        if status is JobStatus.FINISHED and arrow is not None:
            return SqlResult(self.job_id, arrow, self._rows, status)
        text = self.error_text or ("the job was cancelled" if status is JobStatus.CANCELED
                                   else f"the job is {status}")
        return SqlResult(self.job_id, b"", 0, status, text)

    # -- the query's thread ---------------------------------------------------------------
    def _run_on_spark(self) -> None:
        arrow: bytes | None = None
        rows = 0
        error: str | None = None
        sc = self.sc
        try:
            sc.setJobGroup(self.job_id, self.name, interruptOnCancel=True)
            sc._jsc.setCallSite(self.name)  # Spark names the query's stages after it
            if self.cancel_requested:
                raise InterruptedError("cancelled before it started")
            arrow, rows = collect_arrow_ipc(self.spark.sql(self.query), self.max_result_bytes,
                                            stop=lambda: cancel_job_group(sc, self.job_id))
        except Exception as exc:  # noqa: BLE001 - the job fails, the JobManager goes on
            error = spark_error_text(exc)
        finally:
            try:
                sc._jsc.setCallSite(None)
            except Exception:  # noqa: BLE001 - py4j gone: the JobManager is stopping
                pass
        stages = submitted_stages(sc, self.job_id)
        self.loop.call_soon_threadsafe(self._spark_done, arrow, rows, error, stages)

    # -- the end (loop thread) ------------------------------------------------------------
    def _spark_done(self, arrow: bytes | None, rows: int, error: str | None,
                    stages: set[int] | None) -> None:
        if self.graph.status.is_globally_terminal:
            return
        if self.cancel_requested:
            self.tasks.start(self._finish(JobStatus.CANCELED, stages))
        elif error is not None:
            self.error_text = error
            self._set_status(JobStatus.FAILING)
            self.tasks.start(self._finish(JobStatus.FAILED, stages))
        else:
            self._arrow, self._rows = arrow, rows
            self.tasks.start(self._finish(JobStatus.FINISHED, stages))

    async def _finish(self, status: JobStatus, stages: set[int] | None) -> None:
        """Wait (bounded) for the events of every submitted stage, then end in ``status``."""
        every_subtask = status is JobStatus.FINISHED
        if not await self._wait_for_progress(lambda: self._settled(stages or set(), every_subtask)):
            log.warning("job %s: task events missing after %.0f s", self.job_id, FINAL_REPORT_TIMEOUT)
        if self.cancel_requested and status is not JobStatus.CANCELED:
            status = JobStatus.CANCELED  # cancelled while waiting for the last events
            self._arrow = None
        self.graph.cancel_pending()  # attempts Spark never started or never reported
        self._end(status)

    def _settled(self, stages: set[int], every_subtask: bool) -> bool:
        """Every submitted stage is known, and its attempts ended (or, unless
        ``every_subtask``, never started)."""
        if not stages.issubset(self.stage_vertices):
            return False
        for ex in self.graph.all_executions():
            if ex.state.is_terminal or (ex.state is ExecutionState.CREATED and not every_subtask):
                continue
            return False
        return True

    # -- events (loop thread) -------------------------------------------------------------
    def on_stage_submitted(self, ev: StageSubmitted) -> None:
        """A Spark stage of the query: a new JobVertex (and its ExecutionJobVertex)."""
        if self.graph.status.is_globally_terminal or ev.stage_id in self.stage_vertices:
            return  # a later attempt of a stage keeps its vertex
        vertex_id = f"stage-{ev.stage_id}"
        vertex = JobVertex(vertex_id, ev.name or f"Stage {ev.stage_id}", [], int(ev.num_tasks))
        # inputs: the parent stages that ran in this job, and (with adaptive execution, whose
        # parents are skipped copies) the stages that computed the RDDs this one reads
        sources = [self.stage_vertices[p] for p in ev.parent_ids if p in self.stage_vertices]
        reads = set(ev.input_rdd_ids)
        sources += [vid for vid, rdds in self._vertex_rdds.items() if rdds & reads]
        self.graph.add_job_vertex(vertex, [JobEdge(source_id, vertex_id, Partitioning.HASH)
                                           for source_id in dict.fromkeys(sources)])
        self.stage_vertices[ev.stage_id] = vertex_id
        self._vertex_rdds[vertex_id] = set(ev.rdd_ids)
        self._progress.set()

    def _spark_handlers(self) -> dict[type, Callable[[Any], None]]:
        return {TaskStarted: self._on_task_started, TaskEnded: self._on_task_ended}

    def _execution(self, ev: TaskStarted | TaskEnded) -> Any:
        vertex_id = self.stage_vertices.get(ev.stage_id)
        if vertex_id is None:
            return None
        ex = self.graph.execution(vertex_id, ev.subtask, ev.spark_task_id)
        if ex is not None:
            ex.tm_id = ev.executor_id
        return ex

    def _on_task_started(self, ev: TaskStarted) -> None:
        ex = self._execution(ev)
        if ex is None:
            return
        if ex.slot is None:
            ex.slot = self.rm.slot_for(ex.tm_id, ev.spark_task_id)
        ex.transition_to(ExecutionState.RUNNING, ev.time)  # the JVM task runs at once

    def _on_task_ended(self, ev: TaskEnded) -> None:
        ex = self._execution(ev)
        if ex is None:
            return
        if ev.succeeded:
            ex.transition_to(ExecutionState.FINISHED, ev.time)
        elif ev.reason == "TaskKilled" or self.cancel_requested:
            ex.transition_to(ExecutionState.CANCELED, ev.time)
        else:
            ex.error = _task_error(ev.reason, ev.text)
            ex.transition_to(ExecutionState.FAILED, ev.time)
        self.rm.release(ev.spark_task_id)

    # -- views ----------------------------------------------------------------------------
    def details(self) -> JobDetails:
        vertices = [VertexInfo(vid, ejv.job_vertex.name, [], ejv.parallelism,
                               ejv.aggregate_state, 0, 0)
                    for vid, ejv in self.graph.job_vertices.items()]
        return JobDetails(self.summary(), self.job_graph, vertices, execution_infos(self.graph), {},
                          None, self.error_text)

    def result(self) -> JobResultReply:
        """The outcome as for any job (the rows themselves go only with :class:`SqlResult`)."""
        status = self.graph.status
        if not status.is_globally_terminal:
            return JobResultReply(self.job_id, False, status)
        return JobResultReply(self.job_id, True, status, net_runtime_ms=self.runtime_ms(),
                              error_text=self.error_text)


def _task_error(reason: str, text: str) -> TaskError:
    """A failed SQL task's error from Spark's end reason, ``ExceptionFailure(class,message,…)``."""
    m = re.match(r"ExceptionFailure\(([\w.$]+),(.*?),\[Ljava\.lang\.StackTraceElement", text, re.S)
    if m:
        return TaskError(m.group(1).rsplit(".", 1)[-1], m.group(2).strip().split("\n")[0], [])
    first = text.splitlines()[0] if text else ""
    return TaskError(reason, first[:500], [])
