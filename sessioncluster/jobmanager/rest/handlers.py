"""The handlers of a job's paths (``/jobs/...``): the job, its vertices, subtasks and attempts,
metrics, checkpoints and savepoints. Each reads the job's :class:`JobDetails` and answers the
body :mod:`.payloads`, :mod:`.checkpoints` or :mod:`.metrics` builds."""

from __future__ import annotations

import json
import os
import time
import uuid
from typing import Any

import tornado.web

from ...cluster.connection import session_dir
from ...graph.lifecycle import JobStatus
from ..runner import JobRunner
from . import metrics
from .base import FlinkHandler
from .checkpoints import (
    checkpoint_config,
    checkpoint_json,
    checkpoint_statistics,
    checkpoint_subtasks,
    find_checkpoint,
)
from .payloads import (
    accumulator_list,
    application_status,
    backpressure,
    exceptions_body,
    job_config,
    job_details_info,
    job_overview,
    job_plan,
    latest_attempts,
    ms,
    resource_requirements,
    subtask_attempt,
    subtask_times,
    user_accumulators,
    vertex_accumulators,
    vertex_taskmanagers,
    watermarks,
)


class JobsHandler(FlinkHandler):
    def get(self) -> None:
        self.reply({"jobs": [{"id": j.job_id, "status": j.status.value}
                             for j in self.services.summaries()]})


class JobsOverviewHandler(FlinkHandler):
    def get(self) -> None:
        jobs = []
        for s in self.services.summaries():
            job = self.services.job(s.job_id)
            jobs.append(job_overview(s, job.details() if job is not None else None))
        self.reply({"jobs": jobs})


class JobHandler(FlinkHandler):
    def get(self, job_id: str) -> None:
        details = self.details_or_404(job_id)
        if details is not None:
            self.reply(job_details_info(details))

    def patch(self, job_id: str) -> None:
        mode = self.get_query_argument("mode", "cancel")
        if mode != "cancel":
            self.fail(400, f"mode={mode!r}: only mode=cancel is supported")
            return
        job = self.job_or_404(job_id)
        if job is not None:
            if job.status.is_globally_terminal:
                self.fail(409, f"Job {job_id} is already {job.status.value}")
                return
            job.cancel()
            self.reply({}, 202)


class JobStatusHandler(FlinkHandler):
    """``/jobs/:jobid/status`` (JobStatusInfo)."""

    def get(self, job_id: str) -> None:
        job = self.job_or_404(job_id)
        if job is not None:
            self.reply({"status": job.status.value})


class JobPartHandler(FlinkHandler):
    """A path whose body is one payload of the job's details."""

    payloads: dict[str, Any] = {
        "plan": lambda d: {"plan": job_plan(d)}, "config": job_config,
        "resource-requirements": resource_requirements, "exceptions": exceptions_body,
        "accumulators": lambda d: {"job-accumulators": [],
                                   "user-task-accumulators": accumulator_list(d.accumulators),
                                   "serialized-user-task-accumulators": {}}}

    def get(self, job_id: str, part: str) -> None:
        details = self.details_or_404(job_id)
        if details is None:
            return
        if part == "metrics":
            self.reply(metrics.collection(metrics.job_metrics(details),
                                          self.get_query_argument("get", None)))
        else:
            self.reply(self.payloads[part](details))


class JobsMetricsHandler(FlinkHandler):
    """``/jobs/metrics``: job metrics aggregated over jobs (``?jobs=`` selects them)."""

    def get(self) -> None:
        wanted = self.get_query_argument("jobs", None)
        ids = wanted.split(",") if wanted else [s.job_id for s in self.services.summaries()]
        jobs = [j for j in (self.services.job(i.strip()) for i in ids) if j is not None]
        try:
            self.reply(metrics.aggregate((metrics.job_metrics(j.details()) for j in jobs),
                                         self.get_query_argument("get", None),
                                         self.get_query_argument("agg", None)))
        except ValueError as exc:
            self.fail(400, str(exc))


class ExecutionResultHandler(FlinkHandler):
    def get(self, job_id: str) -> None:
        job = self.job_or_404(job_id)
        if job is None:
            return
        if not job.status.is_globally_terminal:
            self.reply({"status": {"id": "IN_PROGRESS"}})
            return
        result = job.result()
        details = job.details()
        body: dict[str, Any] = {"id": job_id, "application-status": application_status(job.status),
                                "accumulator-results": {
                                    name: str(value) for name, value in details.accumulators.items()},
                                "net-runtime": result.net_runtime_ms}
        if job.status is JobStatus.FAILED:
            text = (result.error.format() if result.error is not None
                    else result.error_text or "the job failed")
            body["failure-cause"] = {"class": "org.apache.flink.runtime.client.JobExecutionException",
                                     "stack-trace": text, "serialized-throwable": ""}
        self.reply({"status": {"id": "COMPLETED"}, "job-execution-result": body})


class LogUrlHandler(FlinkHandler):
    """``/jobs/:jobid/jobmanager/log-url`` and ``/jobs/:jobid/taskmanagers/:tmid/log-url``
    (LogUrlResponse): where the process's log is read, on this REST API."""

    def get(self, job_id: str, tm_id: str | None = None) -> None:
        if self.job_or_404(job_id) is None:
            return
        base = f"{self.request.protocol}://{self.request.host}"
        if tm_id is None:
            self.reply({"url": f"{base}/jobmanager/log"})
        elif self.taskmanager_or_404(tm_id) is not None:
            self.reply({"url": f"{base}/taskmanagers/{tm_id}/log"})


class VertexHandler(FlinkHandler):
    def get(self, job_id: str, vertex_id: str) -> None:
        found = self.vertex_or_404(job_id, vertex_id)
        if found is None:
            return
        details, vertex = found
        hosts = self.hosts()
        self.reply({"id": vertex.vertex_id, "name": vertex.name, "parallelism": vertex.parallelism,
                    "maxParallelism": vertex.parallelism, "now": ms(time.time()),
                    "subtasks": [subtask_attempt(ex, hosts.get(ex.tm_id or "", ""))
                                 for ex in latest_attempts(details, vertex_id)]})


class VertexPartHandler(FlinkHandler):
    """A vertex's paths whose body is one payload of it."""

    def get(self, job_id: str, vertex_id: str, part: str) -> None:
        found = self.vertex_or_404(job_id, vertex_id)
        if found is None:
            return
        details, vertex = found
        if part == "subtasktimes":
            self.reply(subtask_times(details, vertex, self.hosts()))
        elif part == "taskmanagers":
            self.reply(vertex_taskmanagers(details, vertex, self.hosts()))
        elif part == "watermarks":
            self.reply(watermarks(details, vertex_id))
        elif part == "backpressure":
            self.reply(backpressure(details, vertex_id))
        elif part == "accumulators":
            self.reply({"id": vertex_id, "user-accumulators": vertex_accumulators(details, vertex_id)})
        elif part == "metrics":
            self.reply(metrics.collection(metrics.vertex_metrics(details, vertex_id),
                                          self.get_query_argument("get", None)))
        elif part == "subtasks/metrics":
            self._aggregated(details, vertex_id)
        else:  # subtasks/accumulators
            hosts = self.hosts()
            self.reply({"id": vertex_id, "parallelism": vertex.parallelism, "subtasks": [
                {"subtask": ex.subtask, "attempt": ex.attempt, "host": hosts.get(ex.tm_id or "", ""),
                 "endpoint": hosts.get(ex.tm_id or "", ""),
                 "user-accumulators": user_accumulators(ex.accumulators)}
                for ex in latest_attempts(details, vertex_id)]})

    def _aggregated(self, details: Any, vertex_id: str) -> None:
        """``.../subtasks/metrics``: subtask metrics aggregated (``?subtasks=`` selects them)."""
        chosen = self.get_query_argument("subtasks", None)
        wanted = {s.strip() for s in chosen.split(",")} if chosen else None
        sources = [metrics.subtask_metrics(details, ex) for ex in latest_attempts(details, vertex_id)
                   if wanted is None or str(ex.subtask) in wanted]
        try:
            self.reply(metrics.aggregate(sources, self.get_query_argument("get", None),
                                         self.get_query_argument("agg", None)))
        except ValueError as exc:
            self.fail(400, str(exc))


class SubtaskHandler(FlinkHandler):
    """``.../subtasks/:idx`` (its latest attempt) and ``.../subtasks/:idx/attempts/:attempt``
    (SubtaskExecutionAttemptDetailsInfo), their ``/accumulators`` and ``/metrics``."""

    def get(self, job_id: str, vertex_id: str, index: str, attempt: str | None = None,
            part: str | None = None) -> None:
        found = self.attempt_or_404(job_id, vertex_id, index, attempt)
        if found is None:
            return
        details, attempts, ex = found
        if part == "accumulators":
            self.reply({"subtask": ex.subtask, "attempt": ex.attempt, "id": ex.spark_task_id,
                        "user-accumulators": user_accumulators(ex.accumulators)})
            return
        if part == "metrics":
            self.reply(metrics.collection(metrics.subtask_metrics(details, ex),
                                          self.get_query_argument("get", None)))
            return
        hosts = self.hosts()
        # attempts of a subtask run one after another here: none is concurrent with another
        self.reply(subtask_attempt(ex, hosts.get(ex.tm_id or "", ""), others=[]))


class StreamingHandler(FlinkHandler):
    """A handler of a STREAMING job's endpoints: a BATCH job has no checkpoints or savepoints."""

    def streaming_job(self, job_id: str) -> JobRunner | None:
        job = self.job_or_404(job_id)
        if job is None:
            return None
        if job.details().streaming is None:
            self.fail(404, f"Job {job_id} is a BATCH job: it has no checkpoints or savepoints")
            return None
        return job

    def body(self) -> dict[str, Any]:
        try:
            data = json.loads(self.request.body or b"{}")
        except ValueError:
            data = None
        if not isinstance(data, dict):
            self.fail(400, "the request body is not a JSON object")
            raise tornado.web.Finish()
        return data


class CheckpointsHandler(StreamingHandler):
    """``/jobs/:jobid/checkpoints`` and ``/checkpoints/config``."""

    def get(self, job_id: str, part: str | None = None) -> None:
        job = self.streaming_job(job_id)
        if job is not None:
            details = job.details()
            self.reply(checkpoint_config(details) if part == "config"
                       else checkpoint_statistics(details))


class CheckpointDetailsHandler(StreamingHandler):
    """``/jobs/:jobid/checkpoints/details/:cid`` and ``.../subtasks/:vid``."""

    def get(self, job_id: str, checkpoint_id: str, vertex_id: str | None = None) -> None:
        job = self.streaming_job(job_id)
        if job is None:
            return
        details = job.details()
        c = find_checkpoint(details, int(checkpoint_id)) if checkpoint_id.isdigit() else None
        if c is None:
            self.fail(404, f"Could not find checkpointing statistics for checkpoint {checkpoint_id}.")
            return
        if vertex_id is None:
            self.reply(checkpoint_json(c, details, with_tasks=True))
            return
        body = checkpoint_subtasks(c, details, vertex_id)
        if body is None:
            self.fail(404, f"There is no checkpoint statistics for task {vertex_id}.")
        else:
            self.reply(body)


class SavepointTriggerHandler(StreamingHandler):
    """``POST /jobs/:id/savepoints`` ({"target-directory", "cancel-job"}) and ``POST
    /jobs/:id/stop`` ({"targetDirectory"}): 202 with a request id to poll."""

    def post(self, job_id: str) -> None:
        job = self.streaming_job(job_id)
        if job is None:
            return
        body = self.body()
        stop = self.request.path.endswith("/stop") or bool(body.get("cancel-job"))
        # the session's savepoints directory plays Flink's state.savepoints.dir
        target = (body.get("targetDirectory") or body.get("target-directory")
                  or str(session_dir(self.services.session_name) / "savepoints"))
        if not isinstance(target, str):
            self.fail(400, "Property [target-directory] must be a string.")
            return
        if "://" not in target:
            target = os.path.abspath(os.path.expanduser(target))
        request_id = uuid.uuid4().hex
        SAVEPOINT_REQUESTS[(job_id, request_id)] = job.trigger_savepoint(target, stop)
        self.reply({"request-id": request_id}, status=202)


class SavepointStatusHandler(StreamingHandler):
    def get(self, job_id: str, request_id: str) -> None:
        future = SAVEPOINT_REQUESTS.get((job_id, request_id))
        if future is None:
            self.fail(404, f"There is no savepoint operation with triggerId={request_id} for job {job_id}.")
            return
        if not future.done():
            self.reply({"status": {"id": "IN_PROGRESS"}, "operation": None})
        elif future.exception() is not None:
            exc = future.exception()
            self.reply({"status": {"id": "COMPLETED"},
                        "operation": {"failure-cause": {"class": type(exc).__name__,
                                                        "stack-trace": str(exc),
                                                        "serialized-throwable": ""}}})
        else:
            self.reply({"status": {"id": "COMPLETED"}, "operation": {"location": future.result()}})


#: savepoint operations by (job id, request id), for their status
SAVEPOINT_REQUESTS: dict[tuple[str, str], Any] = {}
