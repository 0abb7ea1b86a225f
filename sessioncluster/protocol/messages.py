"""Every message on the wire: one small typed dataclass per message type.

Gateways (who sends what to whom):

* Client -> Dispatcher (DEALER -> ROUTER): :class:`SubmitJob`, :class:`RequestJobDetails`,
  :class:`CancelJob`, :class:`ListJobs`, :class:`AwaitJobResult`, :class:`RequestOverview`,
  :class:`StopCluster`, :class:`ExecuteSql`, :class:`CreateTemporaryView`,
  :class:`RunApplication`; answered by
  :class:`JobSubmitted`, :class:`JobDetailsReply`, :class:`JobList`, :class:`JobResultReply`,
  :class:`ClusterOverview`, :class:`SqlResult` (when the SQL job ends),
  :class:`ApplicationStarted`, :class:`Ack`, or
  :class:`ErrorReply`.
* TaskManager -> ResourceManager (DEALER -> ROUTER): :class:`RegisterTaskManager`,
  :class:`TaskManagerHeartbeat`, :class:`RequestBlob`; answered by
  :class:`TaskManagerRegistered`, :class:`BlobReply`, :class:`UnknownTaskManager`.
* Slot worker -> TaskManager (DEALER -> ROUTER over ``ipc://``): :class:`TaskEvent`,
  :class:`FetchBlob`; answered by :class:`BlobReply`.
* JobManager -> clients (PUB, topic = job id or ``cluster``): :class:`JobStatusChanged`,
  :class:`ExecutionStateChanged`, :class:`AccumulatorsUpdated`, :class:`TaskManagerChanged`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar

from ..graph.jobgraph import JobGraph, PythonDependency
from ..graph.lifecycle import ExecutionState, JobStatus

WireAccumulators = dict[str, tuple[str, Any]]


class Message:
    """Base of all messages; ``type`` is the name on the wire."""

    __slots__ = ()
    type: ClassVar[str] = ""


# -- values carried inside messages ---------------------------------------------------------


@dataclass(slots=True)
class TaskError:
    """A failure inside a task: the user's own frames, ready to show in a notebook."""

    exc_type: str
    message: str
    #: (filename, line number, function name, source line or "")
    frames: list[tuple[str, int, str, str]]
    operator: str = ""
    subtask: str = ""

    def format(self, source_lines: Any = None) -> str:
        """Python's traceback text; ``source_lines(filename, lineno)`` fills missing lines."""
        out = ["Traceback (most recent call last):"]
        for filename, lineno, name, line in self.frames:
            out.append(f'  File "{filename}", line {lineno}, in {name}')
            if not line and source_lines is not None:
                line = source_lines(filename, lineno) or ""
            if line:
                out.append(f"    {line.strip()}")
        out.append(f"{self.exc_type}: {self.message}" if self.message else self.exc_type)
        return "\n".join(out)


@dataclass(slots=True)
class LibraryCacheStats:
    entries: int = 0
    bytes: int = 0
    hits: int = 0
    misses: int = 0

    @classmethod
    def total(cls, parts: Iterable[LibraryCacheStats]) -> LibraryCacheStats:
        """The figures of several caches added up."""
        out = cls()
        for c in parts:
            out.entries += c.entries
            out.bytes += c.bytes
            out.hits += c.hits
            out.misses += c.misses
        return out


@dataclass(slots=True)
class TaskManagerInfo:
    tm_id: str
    host: str
    pid: int
    daemon_pid: int
    jvm_pid: int
    slots: int
    slots_used: int = 0
    state: str = "REGISTERED"
    last_heartbeat: float = 0.0
    registered_at: float = 0.0
    library_cache: LibraryCacheStats = field(default_factory=LibraryCacheStats)


@dataclass(slots=True)
class ExecutionInfo:
    """One Execution (attempt) of a subtask, as the JobMaster knows it."""

    vertex_id: str
    subtask: int
    attempt: int
    state: ExecutionState
    tm_id: str | None
    slot: int | None
    spark_task_id: int | None
    state_times: dict[str, float]
    error: TaskError | None = None
    #: the attempt's accumulators (numRecordsIn/Out and the user's), as last reported
    accumulators: WireAccumulators = field(default_factory=dict)


@dataclass(slots=True)
class VertexInfo:
    vertex_id: str
    name: str
    operators: list[str]
    parallelism: int
    state: ExecutionState
    records_in: int
    records_out: int


@dataclass(slots=True)
class JobSummary:
    job_id: str
    name: str
    status: JobStatus
    start_time: float
    end_time: float | None
    tasks_total: int = 0
    tasks_finished: int = 0


@dataclass(slots=True)
class CheckpointInfo:
    """One checkpoint of a STREAMING job (a committed micro-batch), or a restored savepoint."""

    checkpoint_id: int
    #: Flink's CheckpointStatsStatus name: COMPLETED or FAILED
    status: str
    trigger_ms: int
    ack_ms: int
    duration_ms: int
    state_size: int
    #: records the micro-batch read from its sources
    processed: int
    is_savepoint: bool = False
    external_path: str | None = None
    batch_id: int | None = None
    #: the query (sink) the micro-batch belongs to
    query: str | None = None
    #: where the micro-batch's time went, in ms: Spark's progress report's ``durationMs``
    #: (``latestOffset``, ``queryPlanning``, ``addBatch``, ``walCommit``, ``commitOffsets``, ...)
    stages: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class JobDetails:
    summary: JobSummary
    job_graph: JobGraph
    vertices: list[VertexInfo]
    executions: list[ExecutionInfo]
    accumulators: dict[str, Any]
    error: TaskError | None = None
    error_text: str | None = None
    #: how many Spark jobs (actions) ran in the job's Spark job group
    spark_jobs: int = 0
    #: when the job entered each JobStatus it went through (its value -> epoch seconds)
    status_times: dict[str, float] = field(default_factory=dict)
    #: a STREAMING job's checkpoints ("checkpoints", "counts", "restored"), savepoints, rate and
    #: watermark; None for a BATCH job
    streaming: dict[str, Any] | None = None


# -- Client -> Dispatcher -------------------------------------------------------------------


@dataclass(slots=True)
class SubmitJob(Message):
    type: ClassVar[str] = "submit_job"
    job_graph: JobGraph
    #: user code and data not uploaded before by this client, by SHA-256 hex key
    blobs: dict[str, bytes]
    #: the job's id, chosen by the client as Flink's client chooses a JobID (32 hex digits):
    #: a submission sent again (to a new leader, after a lost reply) is the same job; ""
    #: lets the Dispatcher choose
    job_id: str = ""


@dataclass(slots=True)
class RequestJobDetails(Message):
    type: ClassVar[str] = "request_job_details"
    job_id: str


@dataclass(slots=True)
class CancelJob(Message):
    type: ClassVar[str] = "cancel_job"
    job_id: str


@dataclass(slots=True)
class ListJobs(Message):
    type: ClassVar[str] = "list_jobs"


@dataclass(slots=True)
class AwaitJobResult(Message):
    """Answered when the job reaches a terminal status, or after ``timeout`` seconds."""

    type: ClassVar[str] = "await_job_result"
    job_id: str
    timeout: float = 1.0


@dataclass(slots=True)
class RequestOverview(Message):
    type: ClassVar[str] = "request_overview"


@dataclass(slots=True)
class CachedStreamInfo:
    """A stream cached in the session (``DataStream.cache()``): kept in Spark's storage."""

    cache_id: str
    name: str
    job_id: str
    partitions: int
    #: bytes in Spark's storage (memory and disk)
    size_bytes: int
    #: the records carry event-time timestamps
    timestamped: bool = False


@dataclass(slots=True)
class ListCachedStreams(Message):
    type: ClassVar[str] = "list_cached_streams"


@dataclass(slots=True)
class CachedStreams(Message):
    type: ClassVar[str] = "cached_streams"
    streams: list[CachedStreamInfo]


@dataclass(slots=True)
class InvalidateCache(Message):
    """Release a cached stream (``CachedDataStream.invalidate()``)."""

    type: ClassVar[str] = "invalidate_cache"
    cache_id: str


@dataclass(slots=True)
class FetchStreamResults(Message):
    """A STREAMING job's collected records (or printed lines) from sequence number ``after``
    on; what came before ``after`` is acknowledged and dropped by the JobManager."""

    type: ClassVar[str] = "fetch_stream_results"
    job_id: str
    #: the sink's vertex id; None: the job's only collect or print sink
    sink_id: str | None = None
    after: int = 0
    limit: int = 100_000
    #: the latest ``limit`` values, acknowledging nothing (the job widget's live table)
    peek: bool = False


@dataclass(slots=True)
class TriggerSavepoint(Message):
    """Take a savepoint of a STREAMING job into ``directory`` (``stop``: then end the job)."""

    type: ClassVar[str] = "trigger_savepoint"
    job_id: str
    directory: str
    stop: bool = False


@dataclass(slots=True)
class StopCluster(Message):
    type: ClassVar[str] = "stop_cluster"


# -- Dispatcher -> Client -------------------------------------------------------------------


@dataclass(slots=True)
class JobSubmitted(Message):
    type: ClassVar[str] = "job_submitted"
    job_id: str


@dataclass(slots=True)
class JobDetailsReply(Message):
    type: ClassVar[str] = "job_details"
    details: JobDetails


@dataclass(slots=True)
class JobList(Message):
    type: ClassVar[str] = "job_list"
    jobs: list[JobSummary]


@dataclass(slots=True)
class JobResultReply(Message):
    """The outcome of a job; ``done`` is False when an :class:`AwaitJobResult` timed out."""

    type: ClassVar[str] = "job_result"
    job_id: str
    done: bool
    status: JobStatus
    #: cloudpickled batches of collected records (opaque to the JobManager)
    batches: list[bytes] = field(default_factory=list)
    printed: list[str] = field(default_factory=list)
    accumulators: WireAccumulators = field(default_factory=dict)
    net_runtime_ms: int = 0
    error: TaskError | None = None
    error_text: str | None = None
    #: why the job's records cannot be given back (evicted, over the store's bound, ...); None
    #: when ``batches`` and ``printed`` are the job's records
    records_missing: str | None = None


@dataclass(slots=True)
class StreamResults(Message):
    type: ClassVar[str] = "stream_results"
    job_id: str
    sink_id: str
    #: cloudpickled records (collect) or UTF-8 lines (print), opaque to the JobManager
    values: list[bytes]
    #: the sequence number to ask for next
    next_seq: int
    #: the job ended and every value was fetched
    done: bool
    status: JobStatus
    error_text: str | None = None
    #: rows a result materialised on the JobManager evicted (Flink SQL client's table mode:
    #: ``values`` is then the whole table and ``next_seq`` its version)
    dropped: int = 0


@dataclass(slots=True)
class SavepointCompleted(Message):
    type: ClassVar[str] = "savepoint_completed"
    job_id: str
    #: the savepoint's directory
    location: str


@dataclass(slots=True)
class ClusterOverview(Message):
    type: ClassVar[str] = "cluster_overview"
    name: str
    ready: bool
    spark_master: str
    jobmanager_pid: int
    taskmanagers: list[TaskManagerInfo]
    jobs: list[JobSummary]
    expected_taskmanagers: int
    startup_error: str | None = None
    #: jobs the Dispatcher keeps in memory (older finished ones are only in the job store)
    jobs_in_memory: int = 0
    #: streams cached in the session (``DataStream.cache()``)
    cached_streams: list[CachedStreamInfo] = field(default_factory=list)
    #: the session's STREAMING warm-up is running (it ends a few seconds after ready)
    warming_up: bool = False


@dataclass(slots=True)
class Ack(Message):
    type: ClassVar[str] = "ack"
    text: str = ""


@dataclass(slots=True)
class ErrorReply(Message):
    type: ClassVar[str] = "error"
    error: str
    #: a short class of error, e.g. "unknown_job", "missing_blob", "bad_request"
    kind: str = "error"
    missing_blobs: list[str] = field(default_factory=list)


# -- TaskManager <-> ResourceManager --------------------------------------------------------


@dataclass(slots=True)
class RegisterTaskManager(Message):
    type: ClassVar[str] = "register_taskmanager"
    tm_id: str
    host: str
    pid: int
    daemon_pid: int
    jvm_pid: int
    slots: int


@dataclass(slots=True)
class TaskManagerRegistered(Message):
    type: ClassVar[str] = "taskmanager_registered"
    tm_id: str
    heartbeat_interval: float


@dataclass(slots=True)
class UnknownTaskManager(Message):
    """The ResourceManager does not know the sender (e.g. after it declared it LOST)."""

    type: ClassVar[str] = "unknown_taskmanager"
    tm_id: str


@dataclass(slots=True)
class TaskEvent(Message):
    """A state change (and accumulator snapshot) of one subtask attempt, from its slot worker."""

    type: ClassVar[str] = "task_event"
    job_id: str
    vertex_id: str
    subtask: int
    stage_id: int
    spark_task_id: int
    spark_attempt: int
    state: ExecutionState
    time: float
    accumulators: WireAccumulators | None = None
    error: TaskError | None = None
    tm_id: str = ""
    #: STREAMING: the micro-batch's part this report is of, (query id, batch id, Spark partition)
    batch: tuple[str, int, int] | None = None


@dataclass(slots=True)
class TaskManagerHeartbeat(Message):
    type: ClassVar[str] = "taskmanager_heartbeat"
    tm_id: str
    events: list[TaskEvent]
    library_cache: LibraryCacheStats
    #: the agent's pid: an executor may run several Python daemons (Spark keeps one per
    #: worker environment), each with an agent and a library cache of its own
    pid: int = 0


@dataclass(slots=True)
class RequestBlob(Message):
    type: ClassVar[str] = "request_blob"
    key: str


@dataclass(slots=True)
class FetchBlob(Message):
    """A slot worker asks its TaskManager's library cache for a blob.

    ``need_data`` is False when the worker already holds the loaded code and only registers
    its use (counted as a cache hit, as Flink's library cache counts a registered job); such a
    use asks for no reply (``reply`` False), so that a warm task does not wait for its
    TaskManager once per blob.
    """

    type: ClassVar[str] = "fetch_blob"
    key: str
    need_data: bool = True
    reply: bool = True


@dataclass(slots=True)
class BlobReply(Message):
    type: ClassVar[str] = "blob_reply"
    key: str
    data: bytes | None
    error: str | None = None


# -- JobManager -> clients (PUB) ------------------------------------------------------------


@dataclass(slots=True)
class JobStatusChanged(Message):
    type: ClassVar[str] = "job_status_changed"
    job_id: str
    name: str
    status: JobStatus
    time: float


@dataclass(slots=True)
class ExecutionStateChanged(Message):
    type: ClassVar[str] = "execution_state_changed"
    job_id: str
    vertex_id: str
    subtask: int
    attempt: int
    state: ExecutionState
    tm_id: str | None
    slot: int | None
    time: float


@dataclass(slots=True)
class AccumulatorsUpdated(Message):
    type: ClassVar[str] = "accumulators_updated"
    job_id: str
    #: merged live values by name (plain values, not accumulator objects)
    values: dict[str, Any]
    final: bool = False


@dataclass(slots=True)
class TaskManagerChanged(Message):
    type: ClassVar[str] = "taskmanager_changed"
    tm_id: str
    change: str  # REGISTERED, LOST, UNREGISTERED
    info: TaskManagerInfo


# -- SQL: Client -> Dispatcher and back -----------------------------------------------------


@dataclass(slots=True)
class ExecuteSql(Message):
    """Run one SQL statement; answered by :class:`SqlResult` when it ends. A Spark SQL query and a
    Flink SQL query or ``INSERT`` run as a job; a Flink DDL or utility statement (``CREATE
    TABLE``, ``SHOW``, ``SET``, ...) is answered at once, as Flink's TableEnvironment does."""

    type: ClassVar[str] = "execute_sql"
    query: str
    #: the job's id, chosen by the client as Flink's client chooses a JobID (32 hex digits),
    #: so that an interrupted client can still cancel it; "" lets the Dispatcher choose
    job_id: str = ""
    #: ``flink`` (Flink SQL, planned on Spark) or ``spark`` (Spark SQL as it is)
    dialect: str = "spark"
    #: the TableEnvironment's ``execution.runtime-mode``: BATCH or STREAMING
    runtime_mode: str = "BATCH"
    #: the TableEnvironment's configuration (``TableConfig``), sent with each statement
    configuration: dict[str, str] = field(default_factory=dict)
    #: with a Flink ``CREATE TEMPORARY [SYSTEM] FUNCTION <name> AS '<module.fn>' LANGUAGE
    #: PYTHON`` (what ``create_temporary_system_function`` sends): the Python function, a
    #: ``udf``/``udtf``/``udaf`` wrapper cloudpickled by the client's UserCodePickler (the user's
    #: code by value), registered instead of importing ``module.fn``; empty otherwise
    function: bytes = b""
    #: the TableEnvironment's Python files, archives and requirements (``python.files``,
    #: ``python.archives``, ``python.requirements``): its Python functions load and run with
    #: them, as a DataStream job's (``JobGraph.python_dependencies``)
    dependencies: list[PythonDependency] = field(default_factory=list)
    #: their packed bytes not uploaded before by this client, by SHA-256 hex key (the
    #: Dispatcher puts them in the BlobServer and plans the statement without them)
    blobs: dict[str, bytes] = field(default_factory=dict)


#: the result sinks of a streaming SQL INSERT's ``print`` lines (``SqlResult.prints``): those
#: for standard out, and those of ``'standard-error' = 'true'`` tables
PRINT_SINK = "print"
PRINT_SINK_ERR = "print-err"


@dataclass(slots=True)
class SqlResult(Message):
    """The end of an SQL job: its rows as an Arrow IPC stream if it FINISHED, else the reason."""

    type: ClassVar[str] = "sql_result"
    job_id: str
    #: the result as Arrow IPC stream bytes (empty unless ``status`` is FINISHED)
    arrow: bytes
    rows: int
    status: JobStatus = JobStatus.FINISHED
    #: Spark's reason for a FAILED job (no JVM stack), or why it was CANCELED
    error_text: str | None = None
    #: a refused statement's code, the client's way to tell that failure (the planner's
    #: ``FlinkSqlError.code``: ``api.table.catalogobjects.NOT_FOUND``...); "" for the rest
    error_code: str = ""
    #: Flink's ResultKind: SUCCESS (a DDL statement) or SUCCESS_WITH_CONTENT (rows)
    result_kind: str = "SUCCESS_WITH_CONTENT"
    #: the columns' Flink SQL types (``BIGINT``, ``TIMESTAMP(3)``); empty for Spark SQL
    column_types: list[str] = field(default_factory=list)
    #: one RowKind byte per row (0 +I, 1 -U, 2 +U, 3 -D); empty when every row is +I
    row_kinds: bytes = b""
    #: a streaming query's job, answered as it starts: its rows come as it runs (fetch them
    #: with :class:`FetchStreamResults`); ``append`` (+I only) or ``update`` (a changelog), or
    #: ``table``: an updating query's result materialised on the JobManager, bounded in rows
    #: (``sql-client.execution.result-mode`` = ``table``), fetched as snapshots;
    #: "" for a result that is all here
    live_result: str = ""
    #: a streaming query that reads an unbounded source: its job runs until it is cancelled
    unbounded: bool = False
    #: the lines the statement's ``print`` sinks printed to standard out and to standard error
    #: (BATCH), for the client to print as an attached DataStream job's ``print()`` lines
    printed: list[str] = field(default_factory=list)
    printed_err: list[str] = field(default_factory=list)
    #: a streaming INSERT into a ``print`` sink: its lines come as it runs, from its result
    #: sink ``print`` (:class:`FetchStreamResults`)
    prints: bool = False


@dataclass(slots=True)
class CreateTemporaryView(Message):
    """Register rows (an Arrow IPC stream) as a temporary view of the SparkSession; :class:`Ack`."""

    type: ClassVar[str] = "create_temporary_view"
    name: str
    arrow: bytes


# -- application mode: Client -> Dispatcher and back ------------------------------------------


class ApplicationState(str, Enum):
    """The state of an application cluster's program (Flink's application mode): RUNNING while
    its ``main`` runs in the JobManager, then FINISHED (it returned), FAILED (it raised or
    exited non-zero) or CANCELED (the cluster was stopped under it)."""

    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"

    @property
    def is_terminal(self) -> bool:
        return self is not ApplicationState.RUNNING


@dataclass(slots=True)
class RunApplication(Message):
    """Run a program's ``main`` in the JobManager (application mode): the program's source is
    uploaded as a blob (``blob_key`` = its SHA-256); answered by :class:`ApplicationStarted`."""

    type: ClassVar[str] = "run_application"
    #: the program's file name (no directory), e.g. ``word_count.py``
    file_name: str
    blob_key: str
    program: bytes
    args: list[str] = field(default_factory=list)
    #: the client's working directory, used by the program if it exists on the JobManager's host
    cwd: str = ""


@dataclass(slots=True)
class ApplicationStatus:
    """An application cluster's program and how it went; kept in ``application.json`` of the
    session directory after the cluster has gone."""

    program: str
    args: list[str]
    state: ApplicationState
    #: the process running ``main`` (a child of the JobManager)
    pid: int
    #: the program's stdout and stderr
    log: str
    start_time: float
    end_time: float | None = None
    exit_code: int | None = None
    #: the program's traceback (or why it was cancelled), if it did not finish
    error: str = ""
    job_ids: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ApplicationStarted(Message):
    type: ClassVar[str] = "application_started"
    status: ApplicationStatus
