"""The Dispatcher: the clients' endpoint. Accepts JobGraphs, starts a JobMaster per job (a
SqlJob per SQL query), and answers status, cancel, list, result and overview requests. Every
request gets a reply; a bad one gets an :class:`ErrorReply`, never silence."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable

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
    JobSubmitted,
    JobSummary,
    ListJobs,
    Message,
    RequestJobDetails,
    RequestOverview,
    StopCluster,
    SubmitJob,
    TaskEvent,
)
from .jobmaster import JobMaster
from .jobstore import JobStore, StoredJob
from .sqljob import SqlJob, create_temporary_view_in_thread, is_job_id

if TYPE_CHECKING:
    from .process import JobManager

log = logging.getLogger("sessioncluster.dispatcher")

#: Finished jobs kept in memory (the oldest are forgotten first).
MAX_FINISHED_JOBS = 200


class Dispatcher:
    def __init__(self, jm: "JobManager") -> None:
        self.jm = jm
        self.jobs: OrderedDict[str, JobMaster | SqlJob] = OrderedDict()
        #: finished jobs on disk: history, final states and accumulators survive a restart
        self.store = JobStore(jm.dir / "jobs")
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
        }

    def handle(self, ident: list[bytes], msg: Message) -> None:
        handler = self.handlers.get(type(msg))
        if handler is None:
            self.jm.reply(ident, ErrorReply(f"the Dispatcher does not take {msg.type!r}", "bad_request"))
            return
        try:
            handler(ident, msg)
        except Exception as exc:  # noqa: BLE001 - answer, and keep serving
            log.exception("Dispatcher failed on %s", msg.type)
            self.jm.reply(ident, ErrorReply(f"{type(exc).__name__}: {exc}", "internal"))

    def _job(self, ident: list[bytes], job_id: str) -> JobMaster | SqlJob | StoredJob | None:
        jm = self.jobs.get(job_id) or self.store.get(job_id)
        if jm is None:
            self.jm.reply(ident, ErrorReply(f"no job with id {job_id!r} in session "
                                            f"'{self.jm.name}'", "unknown_job"))
        return jm

    # -- handlers ---------------------------------------------------------------------------
    def on_submit(self, ident: list[bytes], msg: SubmitJob) -> None:
        if not self.jm.ready:
            self.jm.reply(ident, ErrorReply("the session cluster is still starting", "not_ready"))
            return
        if not isinstance(msg.job_graph, JobGraph) or not msg.job_graph.vertices:
            self.jm.reply(ident, ErrorReply("the job has no operators", "bad_request"))
            return
        for key, data in msg.blobs.items():
            self.jm.blobs.put(key, data)
        missing = self.jm.blobs.missing(msg.job_graph.blob_keys)
        if missing:
            self.jm.reply(ident, ErrorReply(f"{len(missing)} blob(s) missing", "missing_blob", missing))
            return
        job_id = uuid.uuid4().hex
        master = JobMaster(job_id, msg.job_graph, self.jm.spark.sparkContext, self.jm.rm,
                           self.jm.loop, self.jm.publish, self._job_done)
        self.jobs[job_id] = master
        self.jm.reply(ident, JobSubmitted(job_id))
        master.start()

    def on_details(self, ident: list[bytes], msg: RequestJobDetails) -> None:
        job = self._job(ident, msg.job_id)
        if job is not None:
            self.jm.reply(ident, JobDetailsReply(job.details()))

    def on_cancel(self, ident: list[bytes], msg: CancelJob) -> None:
        job = self._job(ident, msg.job_id)
        if job is not None:
            status = job.summary().status
            job.cancel()
            self.jm.reply(ident, Ack(f"job {msg.job_id} is already {status}"
                                     if status.is_globally_terminal
                                     else f"cancelling job {msg.job_id}"))

    def on_list(self, ident: list[bytes], msg: ListJobs) -> None:
        self.jm.reply(ident, JobList(self.all_summaries()))

    def all_summaries(self) -> list[JobSummary]:
        """Every job: the stored ones (also from before a restart), then those in memory."""
        stored = [s for s in self.store.summaries() if s.job_id not in self.jobs]
        return stored + [j.summary() for j in self.jobs.values()]

    def on_await(self, ident: list[bytes], msg: AwaitJobResult) -> None:
        job = self._job(ident, msg.job_id)
        if job is None:
            return
        if job.done.is_set():
            self.jm.reply(ident, job.result())
            return

        async def wait() -> None:
            try:
                await asyncio.wait_for(job.done.wait(), max(0.0, min(msg.timeout, 30.0)))
            except asyncio.TimeoutError:
                pass
            self.jm.reply(ident, job.result())

        asyncio.ensure_future(wait())

    def on_execute_sql(self, ident: list[bytes], msg: ExecuteSql) -> None:
        """Start the query as a :class:`SqlJob`; the :class:`SqlResult` is sent when it ends."""
        if not self.jm.ready:
            self.jm.reply(ident, ErrorReply("the session cluster is still starting", "not_ready"))
            return
        if not isinstance(msg.query, str) or not msg.query.strip():
            self.jm.reply(ident, ErrorReply("the SQL query is empty", "bad_request"))
            return
        job_id = msg.job_id or uuid.uuid4().hex
        if not is_job_id(job_id) or job_id in self.jobs:
            self.jm.reply(ident, ErrorReply(f"{job_id!r} is not a new job id (32 hex digits)",
                                            "bad_request"))
            return
        job = SqlJob(job_id, msg.query, self.jm.spark, self.jm.rm, self.jm.loop,
                     self.jm.publish, self._job_done,
                     max_result_bytes=self.jm.settings.max_result_mb * 1024 * 1024)
        self.jobs[job_id] = job
        job.start()

        async def reply_at_end() -> None:
            await job.done.wait()
            self.jm.reply(ident, job.take_result())

        asyncio.ensure_future(reply_at_end())

    def on_create_temporary_view(self, ident: list[bytes], msg: CreateTemporaryView) -> None:
        """Register Arrow rows as a temporary view (in a thread); :class:`Ack` when done."""
        if not self.jm.ready:
            self.jm.reply(ident, ErrorReply("the session cluster is still starting", "not_ready"))
            return
        if not isinstance(msg.name, str) or not msg.name or not isinstance(msg.arrow, bytes):
            self.jm.reply(ident, ErrorReply("a view needs a name and Arrow data", "bad_request"))
            return

        def done(rows: int, error: str | None) -> None:
            self.jm.reply(ident, ErrorReply(error, "sql_error") if error is not None
                          else Ack(f"temporary view {msg.name!r} with {rows} rows"))

        create_temporary_view_in_thread(self.jm.spark, msg.name, msg.arrow, self.jm.loop, done)

    def on_overview(self, ident: list[bytes], msg: RequestOverview) -> None:
        self.jm.reply(ident, self.overview())

    def overview(self) -> ClusterOverview:
        jm = self.jm
        return ClusterOverview(jm.name, jm.ready, jm.settings.spark_master, jm.pid,
                               jm.rm.infos(), self.all_summaries(),
                               jm.settings.expected_taskmanagers, jm.startup_error,
                               len(self.jobs))

    def on_stop(self, ident: list[bytes], msg: StopCluster) -> None:
        self.jm.reply(ident, Ack(f"stopping session '{self.jm.name}'"))
        asyncio.ensure_future(self.jm.shutdown())

    # -- from the ResourceManager and Spark ----------------------------------------------
    def on_task_events(self, events: list[TaskEvent]) -> None:
        for ev in events:
            job = self.jobs.get(ev.job_id)
            if job is not None and not job.graph.status.is_globally_terminal:
                job.on_task_event(ev)

    def on_spark_event(self, name: str, fields: dict[str, Any]) -> None:
        if name == "stage_submitted":
            stage_job = self.jobs.get(fields["job_group"] or "")
            if stage_job is not None:
                self.jm.stage_jobs[fields["stage_id"]] = stage_job.job_id
                if isinstance(stage_job, SqlJob):
                    stage_job.on_stage_submitted(fields)  # its JobGraph grows by the stage
            return
        if name == "executor_removed":
            self.jm.rm.mark_lost(fields["executor_id"], f"Spark removed the executor: {fields['reason']}")
            return
        if name == "executor_added":
            self.jm.on_executor_added(fields["executor_id"])
            return
        job = self.jobs.get(self.jm.stage_jobs.get(fields["stage_id"], ""))
        if job is not None and not job.graph.status.is_globally_terminal:
            job.on_spark_event(name, fields)

    def _job_done(self, job: JobMaster | SqlJob) -> None:
        try:
            self.store.put(job.details(), job.result())
        except OSError:
            log.exception("could not store job %s", job.job_id)
        finished = [j for j in self.jobs.values() if j.graph.status.is_globally_terminal]
        for old in finished[: max(0, len(finished) - MAX_FINISHED_JOBS)]:
            del self.jobs[old.job_id]
        self.jm.stage_jobs = {s: j for s, j in self.jm.stage_jobs.items() if j != job.job_id}
