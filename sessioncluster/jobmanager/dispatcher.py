"""The Dispatcher: the clients' endpoint. Accepts submissions, starts a runner per job (made by
the runner factory it is given: a JobMaster for a JobGraph, a SqlJob for a query), and answers
status, cancel, list, result and overview requests. Every request gets a reply; a bad one gets
an :class:`ErrorReply`, never silence.

It is given services, not the JobManager: the BlobServer, the job store, the runner factory,
and callbacks to reply, to create a temporary view, to describe the cluster and to stop it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ..background import BackgroundTasks
from ..graph.jobgraph import JobGraph, PythonDependency
from ..graph.lifecycle import JobStatus
from ..protocol.messages import (
    Ack,
    ApplicationStarted,
    ApplicationStatus,
    AwaitJobResult,
    CachedStreamInfo,
    CachedStreams,
    CancelJob,
    ClusterOverview,
    CreateTemporaryView,
    ErrorReply,
    ExecuteSql,
    FetchStreamResults,
    InvalidateCache,
    JobDetailsReply,
    JobList,
    JobSubmitted,
    JobSummary,
    ListCachedStreams,
    ListJobs,
    Message,
    RequestJobDetails,
    RequestOverview,
    RunApplication,
    SavepointCompleted,
    SqlResult,
    StopCluster,
    SubmitJob,
    TriggerSavepoint,
)
from ..spark.flinksql.outcome import StatementJob, StatementOutcome, rows_as_arrow_ipc
from .blobserver import BlobServer
from .jobstore import JobStore
from .runner import JobRunner
from .sqljob import is_job_id

log = logging.getLogger("sessioncluster.dispatcher")

#: Finished jobs kept in memory (the oldest are forgotten first; they stay in the job store).
MAX_FINISHED_JOBS = 200
#: ... and at most this many bytes of their records in memory
MAX_FINISHED_RECORDS_BYTES = 256 * 1024 * 1024
#: The longest one AwaitJobResult request is held before it is answered "not done yet".
MAX_AWAIT_SECONDS = 30.0

#: The first frame of an in-process client's identity (:meth:`Dispatcher.ask`), which no socket
#: peer can have: a ROUTER's own identities are five bytes, a peer's chosen one never starts
#: with a zero byte.
LOCAL_CLIENT = b"\x00local"

#: Makes the runner of a submission (SubmitJob, ExecuteSql): ``(job_id, submission, on_done,
#: statement)``; ``statement`` is a planned Flink SQL statement's job (None: plan it in the job).
RunnerFactory = Callable[[str, Message, Callable[[JobRunner], None], "StatementJob | None"],
                         JobRunner]


@dataclass(slots=True)
class DispatcherServices:
    """What the Dispatcher works with."""

    session_name: str
    blobs: BlobServer
    store: JobStore
    #: makes a job's runner
    new_runner: RunnerFactory
    #: answers the client ``ident``
    reply: Callable[[list[bytes], Message], None]
    #: True once the cluster can run jobs
    is_ready: Callable[[], bool]
    #: registers Arrow rows as a temporary view in a thread; ``done(rows, error)`` on the loop
    create_view: Callable[[str, bytes, Callable[[int, str | None], None]], None]
    #: the cluster's overview, given every job's summary and how many jobs are in memory
    overview: Callable[[list[JobSummary], int], ClusterOverview]
    #: stops the session (after the reply left)
    shutdown: Callable[[], None]
    #: plans one Flink SQL statement (called in a worker thread; raises FlinkSqlError)
    plan_statement: Callable[[ExecuteSql], StatementOutcome] | None = None
    #: the session's cached streams, with their sizes
    cached_streams: Callable[[], list[CachedStreamInfo]] = list
    #: release a cached stream; False when there is none of that id
    invalidate_cache: Callable[[str], bool] = lambda cache_id: False
    #: starts the application's main (application mode; None on a session cluster); raises
    #: ValueError for a program it cannot run
    run_application: Callable[[RunApplication], ApplicationStatus] | None = None
    #: the session's Python files and requirements (their blobs are in ``blobs``): every job
    #: gets them after its own
    python_dependencies: list[PythonDependency] = field(default_factory=list)
    #: False while this JobManager is a standby of an HA session (it then answers only the
    #: overview; everything else gets a ``not_leader`` error)
    is_leader: Callable[[], bool] = lambda: True
    #: HA: writes a submission to the job-graph store before its job starts (raises OSError)
    persist: Callable[[str, Message], None] = lambda job_id, submission: None
    #: HA: True if the job already reached a final state (the job result store): a job id
    #: seen again is never run again
    has_result: Callable[[str], bool] = lambda job_id: False
    #: HA: a job reached a final state and is in the job store: the job result store marks
    #: it, the job-graph store forgets it
    job_finished: Callable[[JobRunner], None] = lambda job: None


class Dispatcher:
    """Handles the clients' ROUTER socket: one handler per message type."""

    def __init__(self, services: DispatcherServices) -> None:
        self.services = services
        self.jobs: OrderedDict[str, JobRunner] = OrderedDict()
        #: HA: jobs suspended when the leadership was lost, until their cancel is through
        self.suspended: dict[str, JobRunner] = {}
        self._suspensions: dict[str, int] = {}
        self.background = BackgroundTasks("dispatcher")
        #: the replies awaited by in-process clients, by request id (:meth:`ask`)
        self._asked: dict[bytes, asyncio.Future[Message]] = {}
        self.handlers: dict[type[Message], Callable[[list[bytes], Any], None]] = {
            SubmitJob: self.on_submit,
            RequestJobDetails: self.on_details,
            CancelJob: self.on_cancel,
            ListJobs: self.on_list,
            AwaitJobResult: self.on_await,
            RequestOverview: self.on_overview,
            StopCluster: self.on_stop,
            ExecuteSql: self.on_execute_sql,
            CreateTemporaryView: self.on_create_temporary_view,
            ListCachedStreams: self.on_list_cached_streams,
            InvalidateCache: self.on_invalidate_cache,
            FetchStreamResults: self.on_fetch_stream_results,
            TriggerSavepoint: self.on_trigger_savepoint,
            RunApplication: self.on_run_application,
        }

    @property
    def store(self) -> JobStore:
        return self.services.store

    def reply(self, ident: list[bytes], msg: Message) -> None:
        if len(ident) == 2 and ident[0] == LOCAL_CLIENT:
            future = self._asked.pop(ident[1], None)
            if future is not None and not future.done():
                future.set_result(msg)
            return
        self.services.reply(ident, msg)

    def ask(self, msg: Message) -> asyncio.Future[Message]:
        """Handle ``msg`` for a client in this process (the SQL Gateway's REST endpoint), as a
        request from a socket is handled: the future gets its reply. Call it on the loop."""
        key = uuid.uuid4().bytes
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._asked[key] = future
        future.add_done_callback(lambda _: self._asked.pop(key, None))  # a caller's cancel
        self.handle([LOCAL_CLIENT, key], msg)
        return future

    def handle(self, ident: list[bytes], msg: Message) -> None:
        handler = self.handlers.get(type(msg))
        if not self.services.is_leader() and not isinstance(msg, RequestOverview):
            self.reply(ident, self._not_leader())
            return
        if handler is None:
            self.reply(ident, ErrorReply(f"the Dispatcher does not take {msg.type!r}", "bad_request"))
            return
        try:
            handler(ident, msg)
        except Exception as exc:  # noqa: BLE001 - answer, and keep serving
            log.exception("Dispatcher failed on %s", msg.type)
            self.reply(ident, ErrorReply(f"{type(exc).__name__}: {exc}", "internal"))

    def running(self, job_id: str | None) -> JobRunner | None:
        """The job in memory with this id (running or recently finished)."""
        return self.jobs.get(job_id) if job_id else None

    def _lookup(self, job_id: str) -> JobRunner | None:
        """The job with this id, in memory or in the store."""
        return self.jobs.get(job_id) or self.store.get(job_id)

    def _job(self, ident: list[bytes], job_id: str) -> JobRunner | None:
        """The job with this id, in memory or in the store; else an ``unknown_job`` reply."""
        job = self._lookup(job_id)
        if job is None:
            self.reply(ident, ErrorReply(f"no job with id {job_id!r} in session "
                                         f"'{self.services.session_name}'", "unknown_job"))
        return job

    def _not_leader(self) -> ErrorReply:
        return ErrorReply(f"this JobManager is a standby of session "
                          f"'{self.services.session_name}', not its leader", "not_leader")

    def _final(self, job: JobRunner, reply: Message) -> Message:
        """A job's end as told to a waiting client: a job that ended because this JobManager
        lost leadership was suspended, and the client must ask the new leader."""
        if job.suspended or not self.services.is_leader():
            return self._not_leader()
        return reply

    def suspend_all(self) -> None:
        """HA, the leadership lost: cancel every running job as *suspended*: it leaves the
        jobs this JobManager knows, and nothing of it is recorded (a leader runs it again)."""
        for job in list(self.jobs.values()):
            if not job.status.is_globally_terminal:
                job.suspended = True
                del self.jobs[job.job_id]
                self.suspended[job.job_id] = job
                self._suspensions[job.job_id] = job.earlier_runs + 1
                job.cancel()

    def _not_ready(self, ident: list[bytes]) -> bool:
        if self.services.is_ready():
            return False
        self.reply(ident, ErrorReply("the session cluster is still starting", "not_ready"))
        return True

    def _start(self, job_id: str, submission: Message,
               statement: StatementJob | None = None) -> JobRunner:
        job = self.services.new_runner(job_id, submission, self._job_done, statement)
        self.jobs[job_id] = job
        return job

    def _known(self, job_id: str) -> bool:
        """A job id this session has run or runs (in memory, in the store, or with a result)."""
        return self._lookup(job_id) is not None or self.services.has_result(job_id)

    def recover(self, job_id: str, submission: Message) -> JobRunner | None:
        """Start again a job that a leader before this one accepted and did not finish (HA);
        None if it is known here already."""
        if self._known(job_id):
            return None
        if isinstance(submission, SubmitJob):
            self._add_session_dependencies(submission.job_graph)
        job = self._start(job_id, submission)
        job.earlier_runs = self._suspensions.get(job_id, 0)
        old = self.suspended.get(job_id)
        if old is None or old.done.is_set():
            job.start()
            return job

        async def start_when_suspended_one_ended() -> None:
            # this JobManager leads again: its own suspended run holds the job's Spark job
            # group until its cancel is through
            await old.done.wait()
            if self.jobs.get(job_id) is job:
                job.start()

        self.background.start(start_when_suspended_one_ended())
        return job

    def _persisted(self, ident: list[bytes], job_id: str, submission: Message) -> bool:
        """HA: the submission is in the job-graph store (else the client is told why not)."""
        try:
            self.services.persist(job_id, submission)
        except OSError as exc:
            self.reply(ident, ErrorReply(f"the job could not be stored for high availability: "
                                         f"{exc}", "internal"))
            return False
        return True

    def _add_session_dependencies(self, graph: JobGraph) -> None:
        graph.python_dependencies = graph.python_dependencies + [
            d for d in self.services.python_dependencies if d not in graph.python_dependencies]

    # -- handlers ---------------------------------------------------------------------------
    def on_submit(self, ident: list[bytes], msg: SubmitJob) -> None:
        if self._not_ready(ident):
            return
        if not isinstance(msg.job_graph, JobGraph) or not msg.job_graph.vertices:
            self.reply(ident, ErrorReply("the job has no operators", "bad_request"))
            return
        blobs = self.services.blobs
        for key, data in msg.blobs.items():
            blobs.put(key, data)
        missing = blobs.missing(msg.job_graph.blob_keys)
        if missing:
            self.reply(ident, ErrorReply(f"{len(missing)} blob(s) missing", "missing_blob", missing))
            return
        job_id = msg.job_id or uuid.uuid4().hex
        if not is_job_id(job_id):
            self.reply(ident, ErrorReply(f"{job_id!r} is not a job id (32 hex digits)",
                                         "bad_request"))
            return
        if msg.job_id and self._known(job_id):  # sent again: a lost reply, or a new leader
            self.reply(ident, JobSubmitted(job_id))
            return
        self._add_session_dependencies(msg.job_graph)
        if not self._persisted(ident, job_id, SubmitJob(msg.job_graph, {}, job_id)):
            return
        job = self._start(job_id, msg)
        self.reply(ident, JobSubmitted(job_id))
        job.start()

    def on_details(self, ident: list[bytes], msg: RequestJobDetails) -> None:
        job = self._job(ident, msg.job_id)
        if job is not None:
            self.reply(ident, JobDetailsReply(job.details()))

    def on_cancel(self, ident: list[bytes], msg: CancelJob) -> None:
        job = self._job(ident, msg.job_id)
        if job is not None:
            status = job.status
            job.cancel()
            self.reply(ident, Ack(f"job {msg.job_id} is already {status}"
                                  if status.is_globally_terminal else f"cancelling job {msg.job_id}"))

    def on_fetch_stream_results(self, ident: list[bytes], msg: FetchStreamResults) -> None:
        job = self._job(ident, msg.job_id)
        if job is None:
            return
        try:
            self.reply(ident, job.fetch_results(msg.sink_id, max(0, int(msg.after)),
                                                max(1, min(int(msg.limit), 100_000)),
                                                bool(msg.peek)))
        except LookupError as exc:
            self.reply(ident, ErrorReply(str(exc), "not_streaming"))

    def on_trigger_savepoint(self, ident: list[bytes], msg: TriggerSavepoint) -> None:
        """Answered with :class:`SavepointCompleted` once the savepoint is written."""
        job = self._job(ident, msg.job_id)
        if job is None:
            return
        if not isinstance(msg.directory, str) or not msg.directory:
            self.reply(ident, ErrorReply("a savepoint needs a target directory", "bad_request"))
            return
        future = asyncio.wrap_future(job.trigger_savepoint(msg.directory, bool(msg.stop)))

        async def reply_when_written() -> None:
            try:
                location = await future
            except Exception as exc:  # noqa: BLE001 - the client gets the reason
                self.reply(ident, ErrorReply(f"{type(exc).__name__}: {exc}", "savepoint_failed"))
            else:
                self.reply(ident, SavepointCompleted(msg.job_id, location))

        self.background.start(reply_when_written())

    def on_list(self, ident: list[bytes], msg: ListJobs) -> None:
        self.reply(ident, JobList(self.all_summaries()))

    def all_summaries(self) -> list[JobSummary]:
        """Every job: the stored ones (also from before a restart), then those in memory."""
        stored = [s for s in self.store.summaries() if s.job_id not in self.jobs]
        return stored + [j.summary() for j in self.jobs.values()]

    def on_await(self, ident: list[bytes], msg: AwaitJobResult) -> None:
        job = self._job(ident, msg.job_id)
        if job is None:
            return
        if job.done.is_set():
            self.reply(ident, job.result())
            return

        async def wait(job: JobRunner) -> None:
            try:
                await asyncio.wait_for(job.done.wait(), max(0.0, min(msg.timeout, MAX_AWAIT_SECONDS)))
            except asyncio.TimeoutError:
                pass
            self.reply(ident, self._final(job, job.result()))

        self.background.start(wait(job))

    def on_execute_sql(self, ident: list[bytes], msg: ExecuteSql) -> None:
        """Start the query as a job; its final reply (the rows) is sent when it ends."""
        if self._not_ready(ident):
            return
        if not isinstance(msg.query, str) or not msg.query.strip():
            self.reply(ident, ErrorReply("the SQL query is empty", "bad_request"))
            return
        job_id = msg.job_id or uuid.uuid4().hex
        if not is_job_id(job_id):
            self.reply(ident, ErrorReply(f"{job_id!r} is not a job id (32 hex digits)",
                                         "bad_request"))
            return
        known = self._lookup(job_id)
        if known is not None:  # sent again (to a new leader): the reply is the same job's
            self.background.start(self._reply_at_end(ident, known))
        elif msg.dialect == "flink":
            self.background.start(self._flink_statement(ident, replace(msg, job_id=job_id)))
        elif msg.dialect != "spark":
            self.reply(ident, ErrorReply(f"unknown SQL dialect {msg.dialect!r}: 'flink' or "
                                         "'spark'", "bad_request"))
        else:
            self._start_sql_job(ident, replace(msg, job_id=job_id), None)

    def _start_sql_job(self, ident: list[bytes], msg: ExecuteSql,
                       statement: StatementJob | None) -> None:
        if not self._persisted(ident, msg.job_id, msg):
            return
        job = self._start(msg.job_id, msg, statement)
        job.start()
        early = job.started_reply()
        if early is not None:  # a streaming INSERT: answered once it runs, as Flink does
            self.reply(ident, early)
            return
        self.background.start(self._reply_at_end(ident, job))

    async def _reply_at_end(self, ident: list[bytes], job: JobRunner) -> None:
        await job.done.wait()
        self.reply(ident, self._final(job, job.final_reply()))

    async def _flink_statement(self, ident: list[bytes], msg: ExecuteSql) -> None:
        """Plan a Flink SQL statement (in a thread: it reads Spark's catalog); a DDL or utility
        statement is answered at once, a query or INSERT runs as a job."""
        plan = self.services.plan_statement
        if plan is None:
            self.reply(ident, ErrorReply("this JobManager cannot plan Flink SQL", "bad_request"))
            return
        if msg.dependencies or msg.blobs:
            for key, data in msg.blobs.items():
                self.services.blobs.put(key, data)
            missing = self.services.blobs.missing({d.key for d in msg.dependencies})
            if missing:
                self.reply(ident, ErrorReply(f"{len(missing)} blob(s) missing", "missing_blob",
                                             missing))
                return
            msg = dataclasses.replace(msg, blobs={})
        msg = dataclasses.replace(msg, dependencies=msg.dependencies + [
            d for d in self.services.python_dependencies if d not in msg.dependencies])
        try:
            outcome = await asyncio.to_thread(plan, msg)
        except Exception as exc:  # noqa: BLE001 - a bad statement is the client's error
            self.reply(ident, SqlResult(msg.job_id, b"", 0, JobStatus.FAILED, str(exc) or
                                        type(exc).__name__,
                                        error_code=str(getattr(exc, "code", "") or "")))
            return
        if outcome.job is not None:
            self._start_sql_job(ident, msg, outcome.job)
            return
        if outcome.stop_job is not None:
            await self._stop_job_statement(ident, *outcome.stop_job)
            return
        arrow = rows_as_arrow_ipc(outcome.columns, outcome.rows)
        self.reply(ident, SqlResult("", arrow, len(outcome.rows), JobStatus.FINISHED,
                                    result_kind=outcome.result_kind,
                                    column_types=outcome.column_types))

    async def _stop_job_statement(self, ident: list[bytes], job_id: str,
                                  directory: str | None) -> None:
        """``STOP JOB '<id>' [WITH SAVEPOINT]``: the job stopped (with a savepoint: its path in
        Flink's ``savepoint path`` column; without: cancelled, ``OK``)."""
        job = self.jobs.get(job_id)
        if job is None or job.status.is_globally_terminal:
            self.reply(ident, SqlResult("", b"", 0, JobStatus.FAILED,
                                        f"Could not stop job {job_id}: no running job of that id"))
            return
        if directory is None:
            job.cancel()
            rows, columns = [("OK",)], ["result"]
        else:
            try:
                location = await asyncio.wrap_future(job.trigger_savepoint(directory, True))
            except Exception as exc:  # noqa: BLE001 - the client gets the reason
                self.reply(ident, SqlResult("", b"", 0, JobStatus.FAILED,
                                            f"Could not stop job {job_id}: {exc}"))
                return
            rows, columns = [(location,)], ["savepoint path"]
        kind = "SUCCESS" if directory is None else "SUCCESS_WITH_CONTENT"
        self.reply(ident, SqlResult("", rows_as_arrow_ipc(columns, rows), 1, JobStatus.FINISHED,
                                    result_kind=kind, column_types=["STRING"]))

    def on_create_temporary_view(self, ident: list[bytes], msg: CreateTemporaryView) -> None:
        """Register Arrow rows as a temporary view (in a thread); :class:`Ack` when done."""
        if self._not_ready(ident):
            return
        if not isinstance(msg.name, str) or not msg.name or not isinstance(msg.arrow, bytes):
            self.reply(ident, ErrorReply("a view needs a name and Arrow data", "bad_request"))
            return

        def done(rows: int, error: str | None) -> None:
            self.reply(ident, ErrorReply(error, "sql_error") if error is not None
                       else Ack(f"temporary view {msg.name!r} with {rows} rows"))

        self.services.create_view(msg.name, msg.arrow, done)

    def on_list_cached_streams(self, ident: list[bytes], msg: ListCachedStreams) -> None:
        self.reply(ident, CachedStreams(self.services.cached_streams()))

    def on_invalidate_cache(self, ident: list[bytes], msg: InvalidateCache) -> None:
        if self.services.invalidate_cache(msg.cache_id):
            self.reply(ident, Ack(f"released cached stream {msg.cache_id}"))
        else:
            self.reply(ident, ErrorReply(f"no cached stream {msg.cache_id!r} in session "
                                         f"'{self.services.session_name}'", "unknown_cache"))

    def on_overview(self, ident: list[bytes], msg: RequestOverview) -> None:
        self.reply(ident, self.overview())

    def overview(self) -> ClusterOverview:
        return self.services.overview(self.all_summaries(), len(self.jobs))

    def on_run_application(self, ident: list[bytes], msg: RunApplication) -> None:
        run = self.services.run_application
        if run is None:
            self.reply(ident, ErrorReply(
                f"'{self.services.session_name}' is a session cluster: an application runs on a "
                "cluster of its own ('sessioncluster run --target application program.py')",
                "bad_request"))
            return
        if self._not_ready(ident):
            return
        try:
            status = run(msg)
        except ValueError as exc:
            self.reply(ident, ErrorReply(str(exc), "bad_request"))
            return
        self.reply(ident, ApplicationStarted(status))

    def on_stop(self, ident: list[bytes], msg: StopCluster) -> None:
        self.reply(ident, Ack(f"stopping session '{self.services.session_name}'"))
        self.services.shutdown()

    # -- the end of a job -------------------------------------------------------------------
    def _job_done(self, job: JobRunner) -> None:
        """Store the finished job; forget the oldest finished ones beyond the in-memory bound.
        A deposed leader's jobs were suspended, not finished: it records nothing of them."""
        if job.suspended or not self.services.is_leader():
            log.warning("job %s %s after this JobManager lost leadership: suspended, not "
                        "recorded (the leader recovers it)", job.job_id, job.status)
            if self.jobs.get(job.job_id) is job:
                del self.jobs[job.job_id]
            if self.suspended.get(job.job_id) is job:
                del self.suspended[job.job_id]
            return
        try:
            self.store.put(job.details(), job.result())
        except OSError:
            log.exception("could not store job %s", job.job_id)
        self.services.job_finished(job)
        finished = [j for j in self.jobs.values() if j.status.is_globally_terminal]
        for old in finished[: max(0, len(finished) - MAX_FINISHED_JOBS)]:
            del self.jobs[old.job_id]
        finished = finished[max(0, len(finished) - MAX_FINISHED_JOBS):]
        sizes = [_records_bytes(j) for j in finished]
        total = sum(sizes)
        for old, size in zip(finished, sizes):
            if total <= MAX_FINISHED_RECORDS_BYTES:
                break
            del self.jobs[old.job_id]  # its records are read back from the job store
            total -= size


def _records_bytes(job: JobRunner) -> int:
    """The bytes of a finished job's records held in memory."""
    reply = job.result()
    return sum(map(len, reply.batches)) + sum(map(len, reply.printed))
