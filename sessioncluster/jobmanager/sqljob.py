"""SQL jobs: one Spark SQL query on the JobManager's warm SparkSession, run as a job.

A :class:`SqlJob` is a :class:`~.runner.JobRunner` like a :class:`~.jobmaster.JobMaster`, but
its JobGraph is not sent by a client: it grows from Spark's stages as they are submitted. Each
Spark stage of the query becomes one JobVertex (name = Spark's stage name, parallelism = its task
count), a stage that reads another stage's shuffle output gets a HASH JobEdge from it, and each
Spark task attempt becomes an Execution driven by the listener's task start and end events (no
slot worker reports on a SQL task: it runs in the executor JVM).

The query runs in its own thread in the Spark job group ``job_id``; the result travels to the
client as Arrow IPC stream bytes, and is refused beyond the session's result limit.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any, Callable

from ..graph.jobgraph import JobGraph, JobVertex
from ..graph.lifecycle import ExecutionState, JobStatus
from ..graph.streamgraph import Partitioning
from ..protocol.messages import JobDetails, SqlResult, TaskError, VertexInfo
from ..spark.events import StageSubmitted, TaskEnded, TaskStarted
from ..spark.flinksql.outcome import StatementJob
from ..spark.sql import MAX_RESULT_BYTES, collect_arrow_ipc, spark_error_text, submitted_stages
from .resourcemanager import ResourceManager
from .runner import JobRunner, Publish, SparkJobRunner, cancel_job_group, execution_infos

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


class SqlJob(SparkJobRunner):
    """One SQL query as a job; its JobVertices are the Spark stages the query ran."""

    def __init__(self, job_id: str, query: str, spark: Any, rm: ResourceManager,
                 loop: asyncio.AbstractEventLoop, publish: Publish,
                 on_done: Callable[[JobRunner], None],
                 max_result_bytes: int = MAX_RESULT_BYTES,
                 statement: StatementJob | None = None) -> None:
        name = sql_job_name(query) if statement is None else statement.name
        super().__init__(job_id, name, JobGraph(name, []), spark.sparkContext, rm, loop, publish,
                         on_done)
        self.query = query
        self.spark = spark
        #: a planned Flink SQL statement's work; None for a Spark SQL query
        self.statement = statement
        self.max_result_bytes = max_result_bytes
        #: Spark stage id -> JobVertex id
        self.stage_vertices: dict[int, str] = {}
        #: JobVertex id -> the ids of the RDDs its stage computes
        self._vertex_rdds: dict[str, set[int]] = {}
        self._arrow: bytes | None = None
        self._rows = 0

    def final_reply(self) -> SqlResult:
        """The reply to the client's :class:`ExecuteSql`; the rows are handed over only once."""
        arrow, self._arrow = self._arrow, None
        status = self.status
        types = self.statement.column_types if self.statement is not None else []
        if status is JobStatus.FINISHED and arrow is not None:
            printed = self.statement.printed if self.statement is not None else None
            return SqlResult(self.job_id, arrow, self._rows, status, column_types=types,
                             printed=printed.out if printed else [],
                             printed_err=printed.err if printed else [])
        text = self.error_text or ("the job was cancelled" if status is JobStatus.CANCELED
                                   else f"the job is {status}")
        return SqlResult(self.job_id, b"", 0, status, text, column_types=types)

    # -- the query's thread ---------------------------------------------------------------
    def run_on_spark(self) -> None:
        arrow: bytes | None = None
        rows = 0
        error: str | None = None
        sc = self.sc
        try:
            sc._jsc.setCallSite(self.name)  # Spark names the query's stages after it
            if self.cancel_requested:
                raise InterruptedError("cancelled before it started")
            frame = self.spark.sql(self.query) if self.statement is None else self.statement.run()
            arrow, rows = collect_arrow_ipc(frame, self.max_result_bytes,
                                            stop=lambda: cancel_job_group(sc, self.spark_group))
        except Exception as exc:  # noqa: BLE001 - the job fails, the JobManager goes on
            error = spark_error_text(exc)
        finally:
            try:
                sc._jsc.setCallSite(None)
            except Exception:  # noqa: BLE001 - py4j gone: the JobManager is stopping
                pass
        stages = submitted_stages(sc, self.spark_group)
        self.loop.call_soon_threadsafe(self._spark_done, arrow, rows, error, stages)

    # -- the end (loop thread) ------------------------------------------------------------
    def _spark_done(self, arrow: bytes | None, rows: int, error: str | None,
                    stages: set[int] | None) -> None:
        if self.status.is_globally_terminal:
            return
        if self.cancel_requested:
            status = JobStatus.CANCELED
        elif error is not None:
            self.error_text = error
            self._set_status(JobStatus.FAILING)
            status = JobStatus.FAILED
        else:
            self._arrow, self._rows = arrow, rows
            status = JobStatus.FINISHED
        self.background.start(self._end_when_settled(status, stages or set()))

    async def _end_when_settled(self, status: JobStatus, stages: set[int]) -> None:
        """Wait (bounded) for the events of every submitted stage, then end in ``status``."""
        every_subtask = status is JobStatus.FINISHED
        if not await self.wait_for_progress(lambda: self._settled(stages, every_subtask)):
            log.warning("job %s: task events missing", self.job_id)
        if self.cancel_requested and status is not JobStatus.CANCELED:
            status = JobStatus.CANCELED  # cancelled while waiting for the last events
            self._arrow = None
        self.graph.cancel_pending()  # attempts Spark never started or never reported
        self.end(status)

    def _settled(self, stages: set[int], every_subtask: bool) -> bool:
        """Every submitted stage is known, and its attempts ended (or, unless
        ``every_subtask``, never started)."""
        if not stages.issubset(self.stage_vertices):
            return False
        return all(ex.state.is_terminal or (ex.state is ExecutionState.CREATED and not every_subtask)
                   for ex in self.graph.all_executions())

    # -- events (loop thread) -------------------------------------------------------------
    def on_stage_submitted(self, ev: StageSubmitted) -> None:
        """A Spark stage of the query: a new JobVertex (and its ExecutionJobVertex)."""
        if self.status.is_globally_terminal or ev.stage_id in self.stage_vertices:
            return  # a later attempt of a stage keeps its vertex
        vertex_id = f"stage-{ev.stage_id}"
        # inputs: the parent stages that ran in this job, and (with adaptive execution, whose
        # parents are skipped copies) the stages that computed the RDDs this one reads
        sources = [self.stage_vertices[p] for p in ev.parent_ids if p in self.stage_vertices]
        reads = set(ev.input_rdd_ids)
        sources += [vid for vid, rdds in self._vertex_rdds.items() if rdds & reads]
        vertex = JobVertex(vertex_id, ev.name or f"Stage {ev.stage_id}", [], ev.num_tasks)
        self.graph.add_job_vertex(vertex, {source: Partitioning.HASH for source in sources})
        self.stage_vertices[ev.stage_id] = vertex_id
        self._vertex_rdds[vertex_id] = set(ev.rdd_ids)
        self.progressed()

    def on_spark_task_event(self, ev: TaskStarted | TaskEnded) -> None:
        """A task of one of the query's stages started or ended (it runs in the executor JVM:
        no slot worker reports on it)."""
        vertex_id = self.stage_vertices.get(ev.stage_id)
        if vertex_id is None:
            return
        ex = self.graph.execution(vertex_id, ev.subtask, ev.spark_task_id)
        if ex is None:
            return
        ex.tm_id = ev.executor_id
        if isinstance(ev, TaskStarted):
            if ex.slot is None:
                ex.slot = self.rm.slot_for(ex.tm_id, ev.spark_task_id)
            ex.transition_to(ExecutionState.RUNNING, ev.time)  # the JVM task runs at once
        else:
            if ev.succeeded:
                ex.transition_to(ExecutionState.FINISHED, ev.time)
            elif ev.reason == "TaskKilled" or self.cancel_requested:
                ex.transition_to(ExecutionState.CANCELED, ev.time)
            else:
                ex.error = task_failure(ev)
                ex.transition_to(ExecutionState.FAILED, ev.time)
            self.rm.release(ev.spark_task_id)
        self.progressed()

    # -- views ----------------------------------------------------------------------------
    def details(self) -> JobDetails:
        vertices = [VertexInfo(vid, ejv.job_vertex.name, [], ejv.parallelism,
                               ejv.aggregate_state, 0, 0)
                    for vid, ejv in self.graph.job_vertices.items()]
        return JobDetails(self.summary(), self.job_graph, vertices, execution_infos(self.graph), {},
                          None, self.error_text, self.spark_jobs, dict(self.graph.status_times))


def task_failure(ev: TaskEnded) -> TaskError:
    """A failed Spark task's error from its end reason: ``ExceptionFailure(class,message,…)``
    gives the exception's class and message, any other reason its first line."""
    m = re.match(r"ExceptionFailure\(([\w.$]+),(.*?),\[Ljava\.lang\.StackTraceElement", ev.text, re.S)
    if m:
        return TaskError(m.group(1).rsplit(".", 1)[-1], m.group(2).strip().split("\n")[0], [])
    first = ev.text.splitlines()[0] if ev.text else ""
    return TaskError(ev.reason, first[:500], [])
