"""The Dispatcher: the clients' endpoint. Accepts submissions (a JobGraph, a SQL query), starts
a :class:`~.runner.JobRunner` for each through the runner factory, and answers status, cancel,
list, result and overview requests. Every request gets a reply; a bad one gets an
:class:`ErrorReply`, never silence.

It gets services, not the JobManager (as the ResourceManager gets callbacks): see
:class:`DispatcherServices`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

from ..graph.jobgraph import JobGraph
from ..protocol.messages import (
    Ack,
    AwaitJobResult,
    CancelJob,
    ClusterOverview,
    CreateTemporaryView,
    ErrorReply,
    ExecuteSql,
    JobDetailsReply,
    JobList,
    JobSummary,
    ListJobs,
    Message,
    RequestJobDetails,
    RequestOverview,
    RequestSparkJobs,
    SparkJobsReply,
    StopCluster,
    SubmitJob,
    TaskManagerInfo,
)
from ..tasks import BackgroundTasks
from .blobserver import BlobServer
from .jobstore import JobStore
from .runner import JobRunner, RunnerFactory
from .sqljob import is_job_id

log = logging.getLogger("sessioncluster.dispatcher")

#: Finished jobs kept in memory (the oldest are forgotten first).
MAX_FINISHED_JOBS = 200
#: The longest an AwaitJobResult waits before it is answered with the job's current state.
MAX_AWAIT_SECONDS = 30.0


@dataclass(slots=True)
class ClusterFacts:
    """What the overview tells about the cluster besides its jobs."""

    name: str
    ready: bool
    spark_master: str
    jobmanager_pid: int
    taskmanagers: list[TaskManagerInfo]
    expected_taskmanagers: int
    startup_error: str | None = None


@dataclass(slots=True)
class DispatcherServices:
    """Everything the Dispatcher uses of the JobManager."""

    #: the session's name (for error messages)
    session: str
    blobs: BlobServer
    store: JobStore
    runners: RunnerFactory
    #: answer a client (ROUTER identity, message)
    reply: Callable[[list[bytes], Message], None]
    #: True once the cluster can run jobs
    is_ready: Callable[[], bool]
    cluster_facts: Callable[[], ClusterFacts]
    #: stop the whole session cluster (after the reply left)
    stop_cluster: Callable[[], object]
    #: register Arrow bytes as a temporary view, ``done(rows, error)`` on the loop later
    create_temporary_view: Callable[[str, bytes, Callable[[int, str | None], None]], None]
    #: Spark's job ids of a job group (a py4j call)
    spark_job_ids: Callable[[str], list[int]]
    #: a job ended (after the Dispatcher stored it)
    job_ended: Callable[[str], None] = lambda job_id: None


class Dispatcher:
    def __init__(self, services: DispatcherServices) -> None:
        self.services = services
        self.reply = services.reply
        self.store = services.store
        self.jobs: OrderedDict[str, JobRunner] = OrderedDict()
        self.tasks = BackgroundTasks("dispatcher")
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
            RequestSparkJobs: self.on_spark_jobs,
        }

    def handle(self, ident: list[bytes], msg: Message) -> None:
        handler = self.handlers.get(type(msg))
        if handler is None:
            self.reply(ident, ErrorReply(f"the Dispatcher does not take {msg.type!r}", "bad_request"))
            return
        try:
            handler(ident, msg)
        except Exception as exc:  # noqa: BLE001 - answer, and keep serving
            log.exception("Dispatcher failed on %s", msg.type)
            self.reply(ident, ErrorReply(f"{type(exc).__name__}: {exc}", "internal"))

    def runner(self, job_id: str) -> JobRunner | None:
        """A job in memory (running or recently finished)."""
        return self.jobs.get(job_id)

    def _job(self, ident: list[bytes], job_id: str) -> JobRunner | None:
        job = self.jobs.get(job_id) or self.store.get(job_id)
        if job is None:
            self.reply(ident, ErrorReply(f"no job with id {job_id!r} in session "
                                         f"'{self.services.session}'", "unknown_job"))
        return job

    def _refuse_unless_ready(self, ident: list[bytes]) -> bool:
        if self.services.is_ready():
            return False
        self.reply(ident, ErrorReply("the session cluster is still starting", "not_ready"))
        return True

    def _launch(self, ident: list[bytes], job_id: str, submission: Message) -> None:
        """Make the submission's runner, answer as it says, start it."""
        job = self.services.runners.create(job_id, submission, self._job_done)
        self.jobs[job_id] = job
        reply = job.submitted_reply()
        if reply is not None:
            self.reply(ident, reply)
        job.start()
        if reply is None:
            async def reply_at_end() -> None:
                await job.done.wait()
                final = job.final_reply()
                self.reply(ident, final if final is not None else job.result())

            self.tasks.start(reply_at_end())

    # -- handlers ---------------------------------------------------------------------------
    def on_submit(self, ident: list[bytes], msg: SubmitJob) -> None:
        if self._refuse_unless_ready(ident):
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
        self._launch(ident, uuid.uuid4().hex, msg)

    def on_execute_sql(self, ident: list[bytes], msg: ExecuteSql) -> None:
        """Start the query as a job; its :class:`SqlResult` is sent when it ends."""
        if self._refuse_unless_ready(ident):
            return
        if not isinstance(msg.query, str) or not msg.query.strip():
            self.reply(ident, ErrorReply("the SQL query is empty", "bad_request"))
            return
        job_id = msg.job_id or uuid.uuid4().hex
        if not is_job_id(job_id) or job_id in self.jobs:
            self.reply(ident, ErrorReply(f"{job_id!r} is not a new job id (32 hex digits)",
                                         "bad_request"))
            return
        self._launch(ident, job_id, msg)

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
                                  if status.is_globally_terminal
                                  else f"cancelling job {msg.job_id}"))

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

        async def wait() -> None:
            try:
                await asyncio.wait_for(job.done.wait(), max(0.0, min(msg.timeout, MAX_AWAIT_SECONDS)))
            except asyncio.TimeoutError:
                pass
            self.reply(ident, job.result())

        self.tasks.start(wait())

    def on_create_temporary_view(self, ident: list[bytes], msg: CreateTemporaryView) -> None:
        """Register Arrow rows as a temporary view (in a thread); :class:`Ack` when done."""
        if self._refuse_unless_ready(ident):
            return
        if not isinstance(msg.name, str) or not msg.name or not isinstance(msg.arrow, bytes):
            self.reply(ident, ErrorReply("a view needs a name and Arrow data", "bad_request"))
            return

        def done(rows: int, error: str | None) -> None:
            self.reply(ident, ErrorReply(error, "sql_error") if error is not None
                       else Ack(f"temporary view {msg.name!r} with {rows} rows"))

        self.services.create_temporary_view(msg.name, msg.arrow, done)

    def on_spark_jobs(self, ident: list[bytes], msg: RequestSparkJobs) -> None:
        if self._job(ident, msg.job_id) is not None:
            self.reply(ident, SparkJobsReply(msg.job_id, self.services.spark_job_ids(msg.job_id)))

    def on_overview(self, ident: list[bytes], msg: RequestOverview) -> None:
        self.reply(ident, self.overview())

    def overview(self) -> ClusterOverview:
        f = self.services.cluster_facts()
        return ClusterOverview(f.name, f.ready, f.spark_master, f.jobmanager_pid, f.taskmanagers,
                               self.all_summaries(), f.expected_taskmanagers, f.startup_error,
                               len(self.jobs))

    def on_stop(self, ident: list[bytes], msg: StopCluster) -> None:
        self.reply(ident, Ack(f"stopping session '{self.services.session}'"))
        self.services.stop_cluster()

    def cancel_all(self) -> None:
        """Cancel every job (the session stops)."""
        for job in list(self.jobs.values()):
            job.cancel()

    def stop(self) -> None:
        self.tasks.cancel_all()

    # -- the end of a job --------------------------------------------------------------------
    def _job_done(self, job: JobRunner) -> None:
        try:
            self.store.put(job.details(), job.result())
        except OSError:
            log.exception("could not store job %s", job.job_id)
        finished = [j for j in self.jobs.values() if j.status.is_globally_terminal]
        for old in finished[: max(0, len(finished) - MAX_FINISHED_JOBS)]:
            del self.jobs[old.job_id]
        self.services.job_ended(job.job_id)
