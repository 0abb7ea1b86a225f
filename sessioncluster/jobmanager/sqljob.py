"""SQL jobs: one Spark SQL query on the JobManager's warm SparkSession, run as a job.

A :class:`SqlJob` offers the Dispatcher the interface of a :class:`~.jobmaster.JobMaster`
(``summary``, ``details``, ``result``, ``cancel``, ``done``, ``graph``, ``on_task_event``,
``on_spark_event``), but its JobGraph is not sent by a client: it grows from Spark's stages as
they are submitted. Each Spark stage of the query becomes one JobVertex (name = Spark's stage
name, parallelism = its task count), a stage that reads another stage's shuffle output gets a
HASH JobEdge from it, and each Spark task attempt becomes an Execution driven by the listener's
task start and end events (no slot worker reports on a SQL task: it runs in the executor JVM).

The query runs in its own thread in the Spark job group ``job_id``; the result travels to the
client as Arrow IPC stream bytes, and is refused beyond the session's result limit
(:data:`MAX_RESULT_BYTES` unless the session was started with another).
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from typing import Any, Callable

from ..graph.executiongraph import (
    Execution,
    ExecutionGraph,
    ExecutionJobVertex,
    ExecutionVertex,
    IntermediateResult,
    IntermediateResultPartition,
)
from ..graph.jobgraph import JobEdge, JobGraph, JobVertex
from ..graph.states import ExecutionState, JobStatus
from ..graph.streamgraph import Partitioning
from ..protocol.messages import (
    JobDetails,
    JobResultReply,
    JobStatusChanged,
    JobSummary,
    Message,
    SqlResult,
    TaskError,
    TaskEvent,
    VertexInfo,
)
from .jobmaster import FINAL_REPORT_TIMEOUT, execution_infos, execution_state_changed, job_summary
from .resourcemanager import ResourceManager

log = logging.getLogger("sessioncluster.sqljob")

#: Query results larger than this (as Arrow IPC bytes) fail the job instead of filling memory.
MAX_RESULT_BYTES = 256 * 1024 * 1024
#: How much of the query a job's name shows.
NAME_CHARS = 60
#: How long the query's thread waits for Spark's listener bus to deliver the query's events.
LISTENER_FLUSH_TIMEOUT_MS = 10_000

_JOB_ID = re.compile(r"[0-9a-f]{32}")


class ResultTooLargeError(RuntimeError):
    """A query's result exceeds the JobManager's result limit."""


def sql_job_name(query: str) -> str:
    """The job name of a query: ``SQL: `` and its first characters, whitespace collapsed."""
    return "SQL: " + " ".join(query.split())[:NAME_CHARS]


def is_job_id(job_id: str) -> bool:
    """True for a job id of the form the Dispatcher gives (32 lowercase hex digits)."""
    return isinstance(job_id, str) and _JOB_ID.fullmatch(job_id) is not None


# -- Spark side (called in worker threads, never on the event loop) -----------------------


def sql_error_text(exc: BaseException) -> str:
    """Spark's reason for a failed query, ``Class: message``, without plan or JVM stack."""
    if isinstance(exc, ResultTooLargeError):
        return f"{type(exc).__name__}: {exc}"
    text = str(exc)
    if "spark.driver.maxResultSize" in text:
        return (f"{ResultTooLargeError.__name__}: the query's result is larger than Spark's "
                "result limit (spark.driver.maxResultSize); aggregate it or add a LIMIT")
    try:
        from pyspark.errors.exceptions.captured import (
            AnalysisException,
            CapturedException,
            ParseException,
        )
    except ImportError:  # pragma: no cover - pyspark is a dependency
        CapturedException = AnalysisException = ParseException = ()  # type: ignore[assignment,misc]
    if isinstance(exc, CapturedException):
        name = type(exc).__name__
        message = text.strip()
        if isinstance(exc, AnalysisException) and not isinstance(exc, ParseException):
            message = message.split(";\n", 1)[0]  # the analyzed plan follows
    else:
        name, message = _jvm_reason(text, type(exc).__name__)
    lines = [line for line in message.splitlines() if not line.startswith("\tat ")]
    return f"{name}: " + "\n".join(lines[:40]).strip()


def _jvm_reason(text: str, default_name: str) -> tuple[str, str]:
    """The root cause of a Py4J error text: its exception's short class name and message."""
    lines = text.splitlines()
    causes = [i for i, line in enumerate(lines) if line.startswith("Caused by: ")]
    if causes:
        start = causes[-1]
        head = lines[start][len("Caused by: "):]
    else:
        start = next((i for i, line in enumerate(lines)
                      if "Exception: " in line or "Error: " in line), -1)
        if start < 0:
            return default_name, lines[0] if lines else ""
        head = lines[start].strip().lstrip(": ")
    cls, sep, message = head.partition(": ")
    if not sep or " " in cls:
        return default_name, head
    rest = []
    for line in lines[start + 1:]:
        if line.startswith("\tat ") or line.startswith("Caused by: "):
            break
        rest.append(line)
    return cls.rsplit(".", 1)[-1], "\n".join([message, *rest])


def _too_large(limit: int) -> ResultTooLargeError:
    return ResultTooLargeError(
        f"the query's result is larger than the JobManager's limit of "
        f"{limit / (1024 * 1024):.4g} MiB of Arrow data; aggregate it or add a LIMIT")


class _CountingReader:
    """A read-only stream that fails once more than ``limit`` bytes were read through it."""

    def __init__(self, raw: Any, limit: int) -> None:
        self.raw = raw
        self.limit = limit
        self.count = 0
        self.exceeded = False
        self.closed = False

    def _counted(self, n: int) -> int:
        self.count += n
        if self.count > self.limit:
            self.exceeded = True
            raise _too_large(self.limit)
        return n

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self._counted(len(data))
        return data

    def readinto(self, buffer: Any) -> int:
        return self._counted(self.raw.readinto(buffer))

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True


def collect_arrow_ipc(df: Any, limit: int = MAX_RESULT_BYTES,
                      stop: Callable[[], None] | None = None) -> tuple[bytes, int]:
    """Run ``df`` and return its rows as Arrow IPC stream bytes, and their count.

    Reads the batches as Spark streams them to the driver and raises
    :class:`ResultTooLargeError` as soon as more than ``limit`` bytes arrived (pyspark's own
    ``toArrow`` would first hold the whole result), after calling ``stop()`` to cancel the
    query's Spark jobs. Timestamps come in UTC, as ``toArrow`` gives them.
    """
    import pyarrow as pa
    from pyspark.errors.exceptions.captured import unwrap_spark_exception
    from pyspark.sql.pandas.serializers import ArrowCollectSerializer
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.util import _create_local_socket

    large = str(df.sparkSession.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false"))
    schema = to_arrow_schema(df.schema, error_on_duplicated_field_names_in_struct=True,
                             timezone="UTC", prefers_large_types=large.lower() == "true")
    port, secret, server = df._jdf.collectAsArrowToPython()
    sockfile, sock = _create_local_socket((port, secret))
    reader = _CountingReader(sockfile, limit)
    try:
        batches = list(ArrowCollectSerializer().load_stream(reader))
    except Exception:
        if not reader.exceeded:
            raise
        batches = []
    finally:
        sockfile.close()
        sock.close()
        if reader.exceeded and stop is not None:
            stop()
        try:
            with unwrap_spark_exception():
                server.getResult()  # joins Spark's serving thread; raises the query's error
        except Exception:
            if not reader.exceeded:
                raise
    if reader.exceeded:
        raise _too_large(limit)
    table = pa.Table.from_batches(batches).cast(schema) if batches else schema.empty_table()
    del batches
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    rows = table.num_rows
    del table
    buffer = sink.getvalue()
    if buffer.size > limit:
        raise _too_large(limit)
    return buffer.to_pybytes(), rows


def submitted_stages(sc: Any, group: str) -> set[int] | None:
    """The Spark stages of job group ``group`` that were submitted (not skipped).

    First waits until Spark's listener bus delivered every event posted so far, so that the
    status store is complete and every event of the group is on its way to the JobManager's
    loop. ``None`` when Spark could not tell.
    """
    try:
        sc._jsc.sc().listenerBus().waitUntilEmpty(LISTENER_FLUSH_TIMEOUT_MS)
        tracker = sc._jsc.statusTracker()
        stages: set[int] = set()
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            if info is None:
                continue
            for stage_id in info.stageIds():
                stage = tracker.getStageInfo(stage_id)
                if stage is not None and stage.submissionTime() > 0:
                    stages.add(int(stage_id))
        log.debug("job group %s ran stages %s", group, sorted(stages))
        return stages
    except Exception as exc:  # noqa: BLE001 - only the graph's completeness depends on it
        log.warning("could not read the stages of job group %s: %s", group, exc)
        return None


def register_temporary_view(spark: Any, name: str, arrow: bytes) -> int:
    """Register Arrow IPC stream bytes as the temporary view ``name``; the row count."""
    import pyarrow as pa

    table = pa.ipc.open_stream(arrow).read_all()
    spark.createDataFrame(table).createOrReplaceTempView(name)
    return table.num_rows


def create_temporary_view_in_thread(spark: Any, name: str, arrow: bytes,
                                    loop: asyncio.AbstractEventLoop,
                                    done: Callable[[int, str | None], None]) -> None:
    """:func:`register_temporary_view` in a thread of its own; ``done(rows, error)`` on ``loop``."""

    def run() -> None:
        try:
            rows = register_temporary_view(spark, name, arrow)
        except Exception as exc:  # noqa: BLE001 - reported to the client
            loop.call_soon_threadsafe(done, 0, sql_error_text(exc))
        else:
            loop.call_soon_threadsafe(done, rows, None)

    threading.Thread(target=run, name=f"TemporaryView-{name[:20]}", daemon=True).start()


# -- the job -------------------------------------------------------------------------------


class SqlJob:
    """One SQL query as a job, with a JobMaster's interface for the Dispatcher."""

    def __init__(self, job_id: str, query: str, spark: Any, rm: ResourceManager,
                 loop: asyncio.AbstractEventLoop, publish: Callable[[str, Message], None],
                 on_done: Callable[["SqlJob"], None],
                 max_result_bytes: int = MAX_RESULT_BYTES) -> None:
        self.job_id = job_id
        self.query = query
        self.name = sql_job_name(query)
        self.spark = spark
        self.sc = spark.sparkContext
        self.rm = rm
        self.loop = loop
        self.publish = publish
        self.on_done = on_done
        self.max_result_bytes = max_result_bytes
        self.job_graph = JobGraph(self.name, [])
        self.graph = ExecutionGraph(job_id, self.job_graph, listener=self._on_execution_state)
        self.start_time = time.time()
        self.end_time: float | None = None
        self.error_text: str | None = None
        self.cancel_requested = False
        self.done = asyncio.Event()
        #: Spark stage id -> JobVertex id
        self.stage_vertices: dict[int, str] = {}
        #: JobVertex id -> the ids of the RDDs its stage computes
        self._vertex_rdds: dict[str, set[int]] = {}
        self._arrow: bytes | None = None
        self._rows = 0
        self._progress = asyncio.Event()

    # -- lifecycle (loop thread) ----------------------------------------------------------
    def start(self) -> None:
        self._set_status(JobStatus.CREATED)
        self._set_status(JobStatus.RUNNING)
        threading.Thread(target=self._run_on_spark, name=f"SqlJob-{self.job_id[:8]}",
                         daemon=True).start()

    def cancel(self) -> None:
        """Cancel the query: its running Spark jobs and any it would still start."""
        if self.graph.status.is_globally_terminal or self.cancel_requested:
            return
        self.cancel_requested = True
        self._set_status(JobStatus.CANCELLING)
        self.graph.start_canceling()
        jsc = self.sc._jsc.sc()
        threading.Thread(target=jsc.cancelJobGroupAndFutureJobs, args=(self.job_id,),
                         daemon=True).start()

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
                                            stop=lambda: sc.cancelJobGroup(self.job_id))
        except Exception as exc:  # noqa: BLE001 - the job fails, the JobManager goes on
            error = sql_error_text(exc)
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
            asyncio.ensure_future(self._end(JobStatus.CANCELED, stages))
        elif error is not None:
            self.error_text = error
            self._set_status(JobStatus.FAILING)
            asyncio.ensure_future(self._end(JobStatus.FAILED, stages))
        else:
            self._arrow, self._rows = arrow, rows
            asyncio.ensure_future(self._end(JobStatus.FINISHED, stages))

    async def _end(self, status: JobStatus, stages: set[int] | None) -> None:
        """Wait (bounded) for the events of every submitted stage, then end in ``status``."""
        every_subtask = status is JobStatus.FINISHED
        deadline = time.monotonic() + FINAL_REPORT_TIMEOUT
        while not self._settled(stages or set(), every_subtask):
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning("job %s: task events missing after %.0f s", self.job_id,
                            FINAL_REPORT_TIMEOUT)
                break
            self._progress.clear()
            try:
                await asyncio.wait_for(self._progress.wait(), left)
            except asyncio.TimeoutError:
                pass
        if self.cancel_requested and status is not JobStatus.CANCELED:
            status = JobStatus.CANCELED  # cancelled while waiting for the last events
            self._arrow = None
        self.graph.cancel_pending()  # attempts Spark never started or never reported
        self._set_status(status)
        self.end_time = time.time()
        for ex in self.graph.all_executions():
            if ex.spark_task_id is not None:
                self.rm.release(ex.spark_task_id)
        self.done.set()
        self.on_done(self)

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

    def _set_status(self, status: JobStatus) -> None:
        self.graph.transition(status)
        now = time.time()
        self.publish(self.job_id, JobStatusChanged(self.job_id, self.name, status, now))
        self.publish("cluster", JobStatusChanged(self.job_id, self.name, status, now))

    # -- events (loop thread) -------------------------------------------------------------
    def on_stage_submitted(self, fields: dict[str, Any]) -> None:
        """A Spark stage of the query: a new JobVertex (and its ExecutionJobVertex)."""
        stage_id = fields["stage_id"]
        if self.graph.status.is_globally_terminal or stage_id in self.stage_vertices:
            return  # a later attempt of a stage keeps its vertex
        vertex_id = f"stage-{stage_id}"
        vertex = JobVertex(vertex_id, fields.get("name") or f"Stage {stage_id}", [],
                           int(fields.get("num_tasks", 0)))
        # inputs: the parent stages that ran in this job, and (with adaptive execution, whose
        # parents are skipped copies) the stages that computed the RDDs this one reads
        sources = [self.stage_vertices[p] for p in fields.get("parent_ids", [])
                   if p in self.stage_vertices]
        reads = set(fields.get("input_rdd_ids", []))
        sources += [vid for vid, rdds in self._vertex_rdds.items() if rdds & reads]
        self.job_graph.vertices.append(vertex)
        ejv = ExecutionJobVertex(self.graph, vertex)
        ejv.task_vertices = [ExecutionVertex(ejv, i) for i in range(vertex.parallelism)]
        for tv in ejv.task_vertices:
            tv.executions.append(Execution(tv, 0))  # attempt 0 exists, CREATED, from the start
        self.graph.job_vertices[vertex_id] = ejv
        for source_id in dict.fromkeys(sources):
            edge = JobEdge(source_id, vertex_id, Partitioning.HASH)
            vertex.inputs.append(edge)
            source = self.graph.job_vertices[source_id]
            source.job_vertex.outputs.append(edge)
            source.produced.append(IntermediateResult(
                edge.intermediate_dataset_id,
                [IntermediateResultPartition(tv) for tv in source.task_vertices]))
        self.stage_vertices[stage_id] = vertex_id
        self._vertex_rdds[vertex_id] = set(fields.get("rdd_ids", []))
        self._progress.set()

    def on_task_event(self, ev: TaskEvent) -> None:
        """Slot workers do not run SQL tasks (they run in the executor JVM): nothing to do."""

    def on_spark_event(self, name: str, fields: dict[str, Any]) -> None:
        """A task of one of the query's stages started or ended."""
        vertex_id = self.stage_vertices.get(fields["stage_id"])
        if vertex_id is None:
            return
        task_id = fields["spark_task_id"]
        ex = self.graph.execution(vertex_id, fields["subtask"], task_id)
        if ex is None:
            return
        ex.tm_id = fields["executor_id"]
        if name == "task_start":
            if ex.slot is None:
                ex.slot = self.rm.slot_for(ex.tm_id, task_id)
            ex.transition_to(ExecutionState.RUNNING, fields["time"])  # the JVM task runs at once
        elif name == "task_end":
            reason = fields["reason"]
            if reason == "Success":
                ex.transition_to(ExecutionState.FINISHED, fields["time"])
            elif reason == "TaskKilled" or self.cancel_requested:
                ex.transition_to(ExecutionState.CANCELED, fields["time"])
            else:
                ex.error = _task_error(reason, fields.get("text", ""))
                ex.transition_to(ExecutionState.FAILED, fields["time"])
            self.rm.release(task_id)
        self._progress.set()

    def _on_execution_state(self, ex: Execution, previous: ExecutionState) -> None:
        self.publish(self.job_id, execution_state_changed(self.job_id, ex))

    # -- views ----------------------------------------------------------------------------
    def summary(self) -> JobSummary:
        return job_summary(self.graph, self.name, self.start_time, self.end_time)

    def details(self) -> JobDetails:
        vertices = [VertexInfo(vid, ejv.job_vertex.name, [], ejv.parallelism,
                               ejv.aggregate_state, 0, 0)
                    for vid, ejv in self.graph.job_vertices.items()]
        executions = execution_infos(self.graph)
        return JobDetails(self.summary(), self.job_graph, vertices, executions, {}, None,
                          self.error_text)

    def result(self) -> JobResultReply:
        """The outcome as for any job (the rows themselves go only with :class:`SqlResult`)."""
        status = self.graph.status
        if not status.is_globally_terminal:
            return JobResultReply(self.job_id, False, status)
        runtime = int(((self.end_time or time.time()) - self.start_time) * 1000)
        return JobResultReply(self.job_id, True, status, net_runtime_ms=runtime,
                              error_text=self.error_text)


def _task_error(reason: str, text: str) -> TaskError:
    """A failed SQL task's error from Spark's end reason, ``ExceptionFailure(class,message,…)``."""
    m = re.match(r"ExceptionFailure\(([\w.$]+),(.*?),\[Ljava\.lang\.StackTraceElement", text, re.S)
    if m:
        return TaskError(m.group(1).rsplit(".", 1)[-1], m.group(2).strip().split("\n")[0], [])
    first = text.splitlines()[0] if text else ""
    return TaskError(reason, first[:500], [])
