"""Flink's REST API, served by the JobManager on its own event loop (tornado).

Paths and JSON field names are Flink's (``rest_v1_dispatcher.yml``), so that a Flink REST client
parses them. Unknown paths, and the ones a job of ours cannot answer, get 404 with Flink's
``{"errors": [...]}`` body.

Unlike Flink's, every request needs ``Authorization: Bearer <token>``. The token is derived from
the session key (:func:`rest_token`), because any local user can reach a loopback port. Without
the token the answer is 401 and nothing else. The dashboard (``/``, :mod:`.dashboard`) is
authorised once by ``/?token=...``, which leaves the token in an HttpOnly, SameSite=Strict cookie;
a request authorised by that cookie that changes something (PATCH, POST) must also carry
``X-Sessioncluster-Request: 1``, which no cross-site form can set.

Reads go through :class:`RestServices`, not through the JobManager: the jobs (in memory or in the
job store), the TaskManagers, and cancel.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import psutil
import tornado.httpserver
import tornado.netutil
import tornado.web

from ..cluster.connection import rest_token, session_dir
from ..graph.executiongraph import RECORDS_IN, RECORDS_OUT, SYSTEM_ACCUMULATORS
from ..graph.states import ExecutionState, JobStatus
from ..protocol.messages import ExecutionInfo, JobDetails, JobSummary, TaskManagerInfo, VertexInfo
from .dashboard import REQUEST_HEADER, TOKEN_COOKIE, dashboard_routes
from .runner import JobRunner

log = logging.getLogger("sessioncluster.rest")

#: the Flink REST API version whose shapes we follow
FLINK_VERSION = "1.20.0"
#: how often Flink's dashboard polls, in ms (DashboardConfiguration.refresh-interval)
REFRESH_INTERVAL_MS = 3000
#: at most this much of a TaskManager's log is sent
LOG_TAIL_BYTES = 1024 * 1024
#: Flink's ExecutionState names, in Flink's order: every count map has them all (RECONCILING,
#: a state of Flink's high availability, is never entered here)
FLINK_EXECUTION_STATES = ("CREATED", "SCHEDULED", "DEPLOYING", "RUNNING", "FINISHED", "CANCELING",
                          "CANCELED", "FAILED", "RECONCILING", "INITIALIZING")
TERMINAL_STATES = {"FINISHED", "CANCELED", "FAILED"}
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
#: Flink's JobStatus names (SUSPENDED and RECONCILING belong to high availability: never entered here)
FLINK_JOB_STATUSES = ("INITIALIZING", "CREATED", "RUNNING", "FAILING", "FAILED", "CANCELLING",
                      "CANCELED", "FINISHED", "RESTARTING", "SUSPENDED", "RECONCILING")


@dataclass(slots=True)
class RestServices:
    """What the REST API reads and does."""

    session_name: str
    #: the job with this id, in memory or in the job store; None when unknown
    job: Callable[[str], JobRunner | None]
    #: every job's summary (stored ones first)
    summaries: Callable[[], list[JobSummary]]
    taskmanagers: Callable[[], list[TaskManagerInfo]]


def _ms(t: float | None) -> int:
    return int(t * 1000) if t else -1


def _duration(start: float | None, end: float | None) -> int:
    if not start:
        return -1
    return _ms(end or time.time()) - _ms(start)


def _counts(infos: list[ExecutionInfo]) -> dict[str, int]:
    """Per ExecutionState, how many subtasks are in it (by their latest attempt)."""
    latest: dict[tuple[str, int], ExecutionInfo] = {}
    for ex in infos:
        key = (ex.vertex_id, ex.subtask)
        if key not in latest or ex.attempt >= latest[key].attempt:
            latest[key] = ex
    counts = dict.fromkeys(FLINK_EXECUTION_STATES, 0)
    for ex in latest.values():
        counts[ex.state.value] += 1
    return counts


def _latest_attempts(details: JobDetails, vertex_id: str) -> list[ExecutionInfo]:
    latest: dict[int, ExecutionInfo] = {}
    for ex in details.executions:
        if ex.vertex_id != vertex_id:
            continue
        if ex.subtask not in latest or ex.attempt >= latest[ex.subtask].attempt:
            latest[ex.subtask] = ex
    return [latest[i] for i in sorted(latest)]


def _times(ex: ExecutionInfo) -> tuple[float | None, float | None]:
    """When an attempt started (DEPLOYING, else its first state) and ended (a terminal state)."""
    st = ex.state_times
    start = st.get(ExecutionState.DEPLOYING.value) or st.get(ExecutionState.CREATED.value)
    end = next((st[s] for s in ("FINISHED", "CANCELED", "FAILED") if s in st), None)
    return start, end


def _records(ex: ExecutionInfo) -> tuple[int, int]:
    accs = ex.accumulators
    return accs.get(RECORDS_IN, ("", 0))[1], accs.get(RECORDS_OUT, ("", 0))[1]


def _user_accumulators(wire: dict[str, tuple[str, Any]]) -> list[dict[str, str]]:
    """Flink's UserAccumulator list: name, type and value as text."""
    return [{"name": name, "type": type_name, "value": str(value)}
            for name, (type_name, value) in sorted(wire.items()) if name not in SYSTEM_ACCUMULATORS]


def _status_durations(ex: ExecutionInfo) -> dict[str, int]:
    """How long the attempt spent in each state it went through, in ms (the current one: so far)."""
    steps = sorted(ex.state_times.items(), key=lambda kv: kv[1])
    out = dict.fromkeys(FLINK_EXECUTION_STATES, 0)
    for (state, t), nxt in zip(steps, steps[1:] + [("", time.time())]):
        if state in TERMINAL_STATES:
            continue
        out[state] = int((nxt[1] - t) * 1000)
    return out


def _metrics(records_in: int, records_out: int, complete: bool) -> dict[str, Any]:
    """Flink's IOMetricsInfo: we count records, not bytes."""
    return {"read-bytes": 0, "read-bytes-complete": complete, "write-bytes": 0,
            "write-bytes-complete": complete, "read-records": records_in,
            "read-records-complete": complete, "write-records": records_out,
            "write-records-complete": complete, "accumulated-backpressured-time": 0,
            "accumulated-idle-time": 0, "accumulated-busy-time": "NaN"}


def job_plan(details: JobDetails) -> dict[str, Any]:
    """Flink's JSON plan (JsonPlanGenerator): a node per JobVertex, with its inputs."""
    graph = details.job_graph
    nodes = []
    for v in graph.vertices:
        node: dict[str, Any] = {
            "id": v.vertex_id, "parallelism": v.parallelism, "operator": "",
            "operator_strategy": "", "description": " -> ".join(op.name for op in v.operators),
            "optimizer_properties": {}}
        if v.inputs:
            node["inputs"] = [{"num": i, "id": e.source, "ship_strategy": e.ship_strategy.value.upper(),
                               "exchange": "pipelined_bounded"} for i, e in enumerate(v.inputs)]
        nodes.append(node)
    return {"jid": details.summary.job_id, "name": details.summary.name,
            "type": "STREAMING" if details.streaming is not None else "BATCH", "nodes": nodes}


def job_details_info(details: JobDetails) -> dict[str, Any]:
    """``GET /jobs/:jobid`` (JobDetailsInfo)."""
    s = details.summary
    now = time.time()
    vertices = []
    by_vertex: dict[str, list[ExecutionInfo]] = {}
    for ex in details.executions:
        by_vertex.setdefault(ex.vertex_id, []).append(ex)
    for v in details.vertices:
        infos = by_vertex.get(v.vertex_id, [])
        starts = [t for t in (_times(ex)[0] for ex in infos) if t]
        ends = [_times(ex)[1] for ex in infos]
        start = min(starts) if starts else None
        end = max(e for e in ends if e) if ends and all(ends) else None
        vertices.append({
            "id": v.vertex_id, "name": v.name, "maxParallelism": v.parallelism,
            "parallelism": v.parallelism, "status": v.state.value, "start-time": _ms(start),
            "end-time": _ms(end), "duration": _duration(start, end), "tasks": _counts(infos),
            "metrics": _metrics(v.records_in, v.records_out, v.state is ExecutionState.FINISHED)})
    job_type = "STREAMING" if details.streaming is not None else "BATCH"
    status_times = getattr(details, "status_times", None) or {}
    timestamps = {st: _ms(status_times[st]) if status_times.get(st) else 0
                  for st in FLINK_JOB_STATUSES}
    if not timestamps["INITIALIZING"]:
        timestamps["INITIALIZING"] = _ms(s.start_time)
    return {
        "jid": s.job_id, "name": s.name, "isStoppable": details.streaming is not None,
        "state": s.status.value, "job-type": job_type, "start-time": _ms(s.start_time),
        "end-time": _ms(s.end_time),
        "duration": _duration(s.start_time, s.end_time), "maxParallelism": -1,
        "now": _ms(now), "timestamps": timestamps, "vertices": vertices,
        "status-counts": _counts(details.executions), "plan": job_plan(details)}


def job_overview(summary: JobSummary, details: JobDetails | None) -> dict[str, Any]:
    """One job of ``GET /jobs/overview`` (JobDetails: lower-case task counts)."""
    counts = _counts(details.executions) if details is not None else \
        dict.fromkeys(FLINK_EXECUTION_STATES, 0)
    tasks = {"total": summary.tasks_total}
    tasks.update({state.lower(): n for state, n in counts.items()})
    if details is None:
        tasks["finished"] = summary.tasks_finished
    return {"jid": summary.job_id, "name": summary.name, "start-time": _ms(summary.start_time),
            "end-time": _ms(summary.end_time),
            "duration": _duration(summary.start_time, summary.end_time),
            "state": summary.status.value,
            "last-modification": _ms(summary.end_time or summary.start_time), "tasks": tasks}


def _tm_json(tm: TaskManagerInfo) -> dict[str, Any]:
    """A TaskManagerInfo of ``GET /taskmanagers``."""
    try:
        memory = psutil.Process(tm.jvm_pid).memory_info().rss if tm.jvm_pid else 0
    except psutil.Error:
        memory = 0
    vm = psutil.virtual_memory()
    resource = {"cpuCores": float(tm.slots), "taskHeapMemory": 0, "taskOffHeapMemory": 0,
                "managedMemory": 0, "networkMemory": 0, "extendedResources": {}}
    free = dict(resource, cpuCores=float(tm.slots - tm.slots_used))
    return {
        "id": tm.tm_id, "path": f"sessioncluster://{tm.host}/taskmanager/{tm.tm_id}",
        "dataPort": -1, "jmxPort": -1, "timeSinceLastHeartbeat": _ms(tm.last_heartbeat),
        "slotsNumber": tm.slots, "freeSlots": tm.slots - tm.slots_used,
        "totalResource": resource, "freeResource": free,
        "hardware": {"cpuCores": psutil.cpu_count() or 1, "physicalMemory": vm.total,
                     "freeMemory": vm.available, "managedMemory": 0},
        "memoryConfiguration": {"frameworkHeap": 0, "taskHeap": 0, "frameworkOffHeap": 0,
                                "taskOffHeap": 0, "networkMemory": 0, "managedMemory": 0,
                                "jvmMetaspace": 0, "jvmOverhead": 0, "totalFlinkMemory": memory,
                                "totalProcessMemory": memory},
        "blocked": False,
        # ours, beside Flink's fields: the TaskManager's state and its library cache
        "state": tm.state,
        "libraryCache": {"entries": tm.library_cache.entries, "bytes": tm.library_cache.bytes,
                         "hits": tm.library_cache.hits, "misses": tm.library_cache.misses},
    }


def taskmanager_log(tm: TaskManagerInfo) -> Path | None:
    """The TaskManager's log: its executor's ``stderr`` in the Spark work directory (the slot
    workers and the TaskManager agent write there too)."""
    try:
        cwd = Path(psutil.Process(tm.jvm_pid).cwd())
    except (psutil.Error, ValueError):
        return None
    path = cwd / "stderr"
    return path if path.is_file() else None


# -------------------------------------------------------------------------------------------


class FlinkHandler(tornado.web.RequestHandler):
    """JSON answers, Flink's error body, and the bearer token on every request."""

    services: RestServices
    token: str

    def initialize(self, services: RestServices, token: str) -> None:
        self.services = services
        self.token = token

    def prepare(self) -> None:
        auth = self.request.headers.get("Authorization", "")
        scheme, _, given = auth.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), self.token):
            return
        cookie = self.get_cookie(TOKEN_COOKIE, "")
        if cookie and hmac.compare_digest(cookie, self.token):
            if (self.request.method not in SAFE_METHODS
                    and self.request.headers.get(REQUEST_HEADER) != "1"):
                self.fail(403, f"Forbidden: a {self.request.method} authorised by the dashboard's "
                               f"cookie needs the header '{REQUEST_HEADER}: 1'")
            return
        self.set_header("WWW-Authenticate", 'Bearer realm="sessioncluster"')
        self.fail(401, "Unauthorized: send 'Authorization: Bearer <token>' (the session's "
                       "REST token, from sessioncluster.Session.rest_token), or open the "
                       "dashboard link that `sessioncluster dashboard NAME` prints")

    def check_xsrf_cookie(self) -> None:
        """No cookies are used: the bearer token is the only credential."""

    def reply(self, body: dict[str, Any], status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(json.dumps(body))

    def fail(self, status: int, *errors: str) -> None:
        self.reply({"errors": list(errors)}, status)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None))[1]
        text = str(exc) if isinstance(exc, tornado.web.HTTPError) and exc.log_message else \
            self._reason
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(json.dumps({"errors": [text]}))

    def job_or_404(self, job_id: str) -> JobRunner | None:
        job = self.services.job(job_id)
        if job is None:
            self.fail(404, f"Job {job_id} not found")
        return job

    def vertex_or_404(self, job_id: str, vertex_id: str) -> tuple[JobDetails, VertexInfo] | None:
        job = self.job_or_404(job_id)
        if job is None:
            return None
        details = job.details()
        vertex = next((v for v in details.vertices if v.vertex_id == vertex_id), None)
        if vertex is None:
            self.fail(404, f"Vertex {vertex_id} of job {job_id} not found")
            return None
        return details, vertex


class ConfigHandler(FlinkHandler):
    def get(self) -> None:
        self.reply({"refresh-interval": REFRESH_INTERVAL_MS,
                    "timezone-name": time.strftime("%Z"), "timezone-offset": -time.timezone * 1000,
                    "flink-version": FLINK_VERSION,
                    "flink-revision": f"sessioncluster session '{self.services.session_name}'",
                    "features": {"web-submit": False, "web-cancel": True, "web-rescale": False,
                                 "web-history": False}})


class OverviewHandler(FlinkHandler):
    def get(self) -> None:
        tms = self.services.taskmanagers()
        live = [tm for tm in tms if tm.state != "LOST"]
        jobs = self.services.summaries()

        def count(*statuses: JobStatus) -> int:
            return sum(j.status in statuses for j in jobs)

        self.reply({"taskmanagers": len(live), "slots-total": sum(tm.slots for tm in live),
                    "slots-available": sum(tm.slots - tm.slots_used for tm in live),
                    "jobs-running": sum(not j.status.is_globally_terminal for j in jobs),
                    "jobs-finished": count(JobStatus.FINISHED),
                    "jobs-cancelled": count(JobStatus.CANCELED),
                    "jobs-failed": count(JobStatus.FAILED),
                    "flink-version": FLINK_VERSION, "flink-commit": "sessioncluster"})


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
        job = self.job_or_404(job_id)
        if job is not None:
            self.reply(job_details_info(job.details()))

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


class PlanHandler(FlinkHandler):
    def get(self, job_id: str) -> None:
        job = self.job_or_404(job_id)
        if job is not None:
            self.reply({"plan": job_plan(job.details())})


class VertexHandler(FlinkHandler):
    def get(self, job_id: str, vertex_id: str) -> None:
        found = self.vertex_or_404(job_id, vertex_id)
        if found is None:
            return
        details, vertex = found
        tms = {tm.tm_id: tm for tm in self.services.taskmanagers()}
        subtasks = []
        for ex in _latest_attempts(details, vertex_id):
            start, end = _times(ex)
            tm = tms.get(ex.tm_id or "")
            host = tm.host if tm is not None else ""
            subtasks.append({
                "subtask": ex.subtask, "status": ex.state.value, "attempt": ex.attempt,
                "endpoint": host, "host": host, "start-time": _ms(start), "start_time": _ms(start),
                "end-time": _ms(end), "duration": _duration(start, end),
                "metrics": _metrics(*_records(ex), ex.state is ExecutionState.FINISHED),
                "taskmanager-id": ex.tm_id or "(unassigned)",
                "status-duration": _status_durations(ex),
                # ours: the TaskManager slot the attempt ran in, and its Spark task
                "slot": ex.slot, "spark-task-id": ex.spark_task_id})
        self.reply({"id": vertex.vertex_id, "name": vertex.name, "parallelism": vertex.parallelism,
                    "maxParallelism": vertex.parallelism, "now": _ms(time.time()),
                    "subtasks": subtasks})


def _accumulator_list(accumulators: dict[str, Any]) -> list[dict[str, str]]:
    return [{"name": name, "type": type(value).__name__, "value": str(value)}
            for name, value in sorted(accumulators.items())]


class SubtaskAccumulatorsHandler(FlinkHandler):
    def get(self, job_id: str, vertex_id: str) -> None:
        found = self.vertex_or_404(job_id, vertex_id)
        if found is None:
            return
        details, vertex = found
        tms = {tm.tm_id: tm.host for tm in self.services.taskmanagers()}
        self.reply({"id": vertex_id, "parallelism": vertex.parallelism, "subtasks": [
            {"subtask": ex.subtask, "attempt": ex.attempt, "host": tms.get(ex.tm_id or "", ""),
             "endpoint": tms.get(ex.tm_id or "", ""),
             "user-accumulators": _user_accumulators(ex.accumulators)}
            for ex in _latest_attempts(details, vertex_id)]})


class AccumulatorsHandler(FlinkHandler):
    def get(self, job_id: str) -> None:
        job = self.job_or_404(job_id)
        if job is not None:
            self.reply({"job-accumulators": [],
                        "user-task-accumulators": _accumulator_list(job.details().accumulators),
                        "serialized-user-task-accumulators": {}})


class ExceptionsHandler(FlinkHandler):
    def get(self, job_id: str) -> None:
        job = self.job_or_404(job_id)
        if job is None:
            return
        details = job.details()
        entries: list[dict[str, Any]] = []
        failed = [ex for ex in details.executions if ex.error is not None]
        names = {v.vertex_id: v.name for v in details.vertices}
        for ex in failed:
            err = ex.error
            assert err is not None
            entries.append({
                "exceptionName": err.exc_type, "stacktrace": err.format(),
                "timestamp": _ms(ex.state_times.get(ExecutionState.FAILED.value)),
                "taskName": f"{names.get(ex.vertex_id, ex.vertex_id)} ({ex.subtask + 1})",
                "location": ex.tm_id or "", "endpoint": ex.tm_id or "",
                "taskManagerId": ex.tm_id or "", "failureLabels": {},
                "concurrentExceptions": []})
        root = details.error.format() if details.error is not None else details.error_text
        if root is None and entries:
            root = str(entries[-1]["stacktrace"])
        if root is not None and not entries:
            entries.append({"exceptionName": "JobExecutionException", "stacktrace": root,
                            "timestamp": _ms(details.summary.end_time), "taskName": None,
                            "location": None, "endpoint": None, "taskManagerId": None,
                            "failureLabels": {}, "concurrentExceptions": []})
        self.reply({"root-exception": root,
                    "timestamp": _ms(details.summary.end_time) if root else None,
                    "all-exceptions": [{"exception": e["stacktrace"], "task": e["taskName"],
                                        "location": e["location"], "timestamp": e["timestamp"],
                                        "taskManagerId": e["taskManagerId"]} for e in entries],
                    "truncated": False,
                    "exceptionHistory": {"entries": entries[::-1], "truncated": False}})


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
        application_status = {JobStatus.FINISHED: "SUCCEEDED", JobStatus.CANCELED: "CANCELED",
                              JobStatus.FAILED: "FAILED"}[job.status]
        body: dict[str, Any] = {"id": job_id, "application-status": application_status,
                                "accumulator-results": {
                                    name: str(value) for name, value in details.accumulators.items()},
                                "net-runtime": result.net_runtime_ms}
        if job.status is JobStatus.FAILED:
            text = (result.error.format() if result.error is not None
                    else result.error_text or "the job failed")
            body["failure-cause"] = {"class": "org.apache.flink.runtime.client.JobExecutionException",
                                     "stack-trace": text, "serialized-throwable": ""}
        self.reply({"status": {"id": "COMPLETED"}, "job-execution-result": body})


def _stats(values: list[int]) -> dict[str, Any]:
    """Flink's StatsSummaryDto of some values."""
    if not values:
        return {k: 0 for k in ("min", "max", "avg", "p50", "p90", "p95", "p99", "p999")}
    ordered = sorted(values)

    def q(f: float) -> float:
        return float(ordered[min(len(ordered) - 1, int(f * len(ordered)))])

    return {"min": ordered[0], "max": ordered[-1], "avg": sum(ordered) // len(ordered),
            "p50": q(0.5), "p90": q(0.9), "p95": q(0.95), "p99": q(0.99), "p999": q(0.999)}


def _checkpoint_json(c: Any, parallelism: int) -> dict[str, Any]:
    return {"className": "completed" if c.status == "COMPLETED" else "failed", "id": c.checkpoint_id,
            "status": c.status, "is_savepoint": c.is_savepoint, "savepointFormat": None,
            "trigger_timestamp": c.trigger_ms, "latest_ack_timestamp": c.ack_ms,
            "checkpointed_size": c.state_size, "state_size": c.state_size,
            "end_to_end_duration": c.duration_ms, "alignment_buffered": 0,
            "processed_data": c.processed, "persisted_data": 0, "num_subtasks": parallelism,
            "num_acknowledged_subtasks": parallelism, "checkpoint_type": "CHECKPOINT", "tasks": {},
            "external_path": c.external_path or "", "discarded": False}


def checkpoint_statistics(details: JobDetails) -> dict[str, Any]:
    """Flink's CheckpointingStatistics of a STREAMING job."""
    info = details.streaming or {}
    history = list(info.get("checkpoints", []))
    parallelism = sum(v.parallelism for v in details.vertices)
    counts = info.get("counts", {})
    restored = info.get("restored")
    completed = [c for c in history if c.status == "COMPLETED"]
    return {
        "counts": {"restored": int(restored is not None), "total": sum(counts.values()),
                   "in_progress": 0, "completed": counts.get("completed", 0),
                   "failed": counts.get("failed", 0)},
        "summary": {"checkpointed_size": _stats([c.state_size for c in completed]),
                    "state_size": _stats([c.state_size for c in completed]),
                    "end_to_end_duration": _stats([c.duration_ms for c in completed]),
                    "alignment_buffered": _stats([]),
                    "processed_data": _stats([c.processed for c in completed]),
                    "persisted_data": _stats([])},
        "latest": {"completed": _checkpoint_json(completed[-1], parallelism) if completed else None,
                   "savepoint": None, "failed": None,
                   "restored": None if restored is None else {
                       "id": restored.checkpoint_id, "restore_timestamp": restored.trigger_ms,
                       "is_savepoint": True, "external_path": restored.external_path}},
        "history": [_checkpoint_json(c, parallelism) for c in reversed(history)],
    }


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
    def get(self, job_id: str) -> None:
        job = self.streaming_job(job_id)
        if job is not None:
            self.reply(checkpoint_statistics(job.details()))


class CheckpointConfigHandler(StreamingHandler):
    def get(self, job_id: str) -> None:
        job = self.streaming_job(job_id)
        if job is None:
            return
        info = job.details().streaming or {}
        self.reply({"mode": "exactly_once", "interval": info.get("interval_ms") or 0,
                    "timeout": 600000, "min_pause": 0, "max_concurrent": 1,
                    "externalization": {"enabled": True, "delete_on_cancellation": False},
                    "state_backend": "RocksDB (Spark state store)",
                    "checkpoint_storage": f"FileSystemCheckpointStorage ({info.get('checkpoint_dir')})",
                    "unaligned_checkpoints": False, "tolerable_failed_checkpoints": 0,
                    "aligned_checkpoint_timeout": 0, "checkpoints_after_tasks_finish": True,
                    "state_changelog_enabled": False, "changelog_periodic_materialization_interval": 0,
                    "changelog_storage": "", "periodic_materialization_interval": 0})


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


class TaskManagersHandler(FlinkHandler):
    def get(self) -> None:
        self.reply({"taskmanagers": [_tm_json(tm) for tm in self.services.taskmanagers()]})


class TaskManagerHandler(FlinkHandler):
    def _tm(self, tm_id: str) -> TaskManagerInfo | None:
        tm = next((t for t in self.services.taskmanagers() if t.tm_id == tm_id), None)
        if tm is None:
            self.fail(404, f"TaskManager {tm_id} not found")
        return tm

    def get(self, tm_id: str) -> None:
        tm = self._tm(tm_id)
        if tm is not None:
            body = _tm_json(tm)
            body["metrics"] = {"heapUsed": 0, "heapCommitted": 0, "heapMax": 0,
                               "nonHeapUsed": 0, "nonHeapCommitted": 0, "nonHeapMax": 0,
                               "directCount": 0, "directUsed": 0, "directMax": 0,
                               "mappedCount": 0, "mappedUsed": 0, "mappedMax": 0,
                               "memorySegmentsAvailable": 0, "memorySegmentsTotal": 0,
                               "nettyShuffleMemorySegmentsAvailable": 0,
                               "nettyShuffleMemorySegmentsUsed": 0,
                               "nettyShuffleMemorySegmentsTotal": 0,
                               "nettyShuffleMemoryAvailable": 0, "nettyShuffleMemoryUsed": 0,
                               "nettyShuffleMemoryTotal": 0, "garbageCollectors": []}
            body["allocatedSlots"] = []
            self.reply(body)


class TaskManagerLogHandler(TaskManagerHandler):
    def get(self, tm_id: str) -> None:
        tm = self._tm(tm_id)
        if tm is None:
            return
        path = taskmanager_log(tm)
        if path is None:
            self.fail(404, f"TaskManager {tm_id} has no log file (its executor is gone)")
            return
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - LOG_TAIL_BYTES))
            data = f.read()
        self.set_header("Content-Type", "text/plain; charset=UTF-8")
        self.finish(data)


class NotFoundHandler(FlinkHandler):
    def _not_found(self, *args: Any) -> None:
        self.fail(404, f"Not found: {self.request.path}")

    get = post = patch = put = delete = _not_found


_JOB = r"(?P<job_id>[0-9a-fA-F]{32})"
_ID = r"(?P<{}>[^/]+)"


def routes(services: RestServices, token: str) -> list[tuple[str, type, dict[str, Any]]]:
    """Flink's paths, each with its handler (also under ``/v1``, as Flink serves them)."""
    args = {"services": services, "token": token}
    table: list[tuple[str, type]] = [
        (r"/config", ConfigHandler),
        (r"/overview", OverviewHandler),
        (r"/jobs", JobsHandler),
        (r"/jobs/overview", JobsOverviewHandler),
        (rf"/jobs/{_JOB}", JobHandler),
        (rf"/jobs/{_JOB}/plan", PlanHandler),
        (rf"/jobs/{_JOB}/vertices/{_ID.format('vertex_id')}", VertexHandler),
        (rf"/jobs/{_JOB}/vertices/{_ID.format('vertex_id')}/subtasks/accumulators",
         SubtaskAccumulatorsHandler),
        (rf"/jobs/{_JOB}/accumulators", AccumulatorsHandler),
        (rf"/jobs/{_JOB}/exceptions", ExceptionsHandler),
        (rf"/jobs/{_JOB}/execution-result", ExecutionResultHandler),
        (rf"/jobs/{_JOB}/checkpoints", CheckpointsHandler),
        (rf"/jobs/{_JOB}/checkpoints/config", CheckpointConfigHandler),
        (rf"/jobs/{_JOB}/savepoints", SavepointTriggerHandler),
        (rf"/jobs/{_JOB}/savepoints/{_ID.format('request_id')}", SavepointStatusHandler),
        (rf"/jobs/{_JOB}/stop", SavepointTriggerHandler),
        (r"/taskmanagers", TaskManagersHandler),
        (rf"/taskmanagers/{_ID.format('tm_id')}", TaskManagerHandler),
        (rf"/taskmanagers/{_ID.format('tm_id')}/log", TaskManagerLogHandler),
    ]
    out: list[tuple[str, type, dict[str, Any]]] = dashboard_routes(token)
    for path, handler in table:
        out.append((path, handler, args))
        out.append((f"/v1{path}", handler, args))
    out.append((r".*", NotFoundHandler, args))
    return out


class RestServer:
    """The HTTP server of the REST API, on the running asyncio loop."""

    def __init__(self, services: RestServices, key: str) -> None:
        self.token = rest_token(key)
        self.app = tornado.web.Application(routes(services, self.token), autoreload=False,
                                           default_handler_class=NotFoundHandler,
                                           default_handler_args={"services": services,
                                                                 "token": self.token})
        self.server: tornado.httpserver.HTTPServer | None = None
        self.url = ""

    def start(self, host: str) -> str:
        """Listen on a free port of ``host``; returns the base URL."""
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sockets = tornado.netutil.bind_sockets(0, host, family=family)
        self.server = tornado.httpserver.HTTPServer(self.app, xheaders=False)
        self.server.add_sockets(sockets)
        port = sockets[0].getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{port}"
        log.info("REST API at %s", self.url)
        return self.url

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
