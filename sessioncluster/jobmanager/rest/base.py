"""What every REST handler shares: the services it reads, the bearer token, JSON answers and
Flink's ``{"errors": [...]}`` body, and finding a job, vertex, subtask or TaskManager by id (404
with Flink's body when there is none)."""

from __future__ import annotations

import hmac
import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import tornado.web

from ...protocol.messages import ExecutionInfo, JobDetails, JobSummary, TaskManagerInfo, VertexInfo
from ..dashboard import REQUEST_HEADER, TOKEN_COOKIE
from ..runner import JobRunner
from .payloads import attempts_of

if TYPE_CHECKING:
    from ...spark.flinksql.executor import FlinkSqlPlanner
    from ..sqlgateway import SqlGatewayService

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def _no_configuration() -> dict[str, str]:
    return {}


def _no_planner() -> FlinkSqlPlanner | None:
    return None


@dataclass(slots=True)
class RestServices:
    """What the REST API reads and does."""

    session_name: str
    #: the job with this id, in memory or in the job store; None when unknown
    job: Callable[[str], JobRunner | None]
    #: every job's summary (stored ones first)
    summaries: Callable[[], list[JobSummary]]
    taskmanagers: Callable[[], list[TaskManagerInfo]]
    #: the cluster's configuration by Flink's option names (``/jobmanager/config``)
    configuration: Callable[[], dict[str, str]] = field(default=_no_configuration)
    #: the JobManager's process id (its metrics)
    pid: int = field(default_factory=os.getpid)
    #: the planner that holds the session's Flink SQL catalog (None before the SparkSession)
    sql_planner: Callable[[], FlinkSqlPlanner | None] = field(default=_no_planner)
    #: Flink's SQL Gateway endpoint (its sessions and operations); None: not served
    sql_gateway: SqlGatewayService | None = None


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

    def reply(self, body: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(json.dumps(body))

    def reply_text(self, data: bytes) -> None:
        self.set_header("Content-Type", "text/plain; charset=UTF-8")
        self.finish(data)

    def fail(self, status: int, *errors: str) -> None:
        self.reply({"errors": list(errors)}, status)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Flink's errors body for anything raised: never a stack trace."""
        exc = kwargs.get("exc_info", (None, None))[1]
        if isinstance(exc, tornado.web.HTTPError) and exc.log_message:
            text = str(exc)
        elif exc is not None and status_code == 500:
            text = f"Internal server error: {type(exc).__name__}: {exc}"
        else:
            text = self._reason
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(json.dumps({"errors": [text]}))

    def job_or_404(self, job_id: str) -> JobRunner | None:
        job = self.services.job(job_id)
        if job is None:
            self.fail(404, f"Job {job_id} not found")
        return job

    def details_or_404(self, job_id: str) -> JobDetails | None:
        job = self.job_or_404(job_id)
        return job.details() if job is not None else None

    def vertex_or_404(self, job_id: str, vertex_id: str) -> tuple[JobDetails, VertexInfo] | None:
        details = self.details_or_404(job_id)
        if details is None:
            return None
        vertex = next((v for v in details.vertices if v.vertex_id == vertex_id), None)
        if vertex is None:
            self.fail(404, f"Vertex {vertex_id} of job {job_id} not found")
            return None
        return details, vertex

    def attempt_or_404(self, job_id: str, vertex_id: str, index: str, attempt: str | None = None
                       ) -> tuple[JobDetails, list[ExecutionInfo], ExecutionInfo] | None:
        """The subtask's attempts and the one asked for (else its latest); 404 when unknown."""
        found = self.vertex_or_404(job_id, vertex_id)
        if found is None:
            return None
        details, vertex = found
        attempts = attempts_of(details, vertex_id, int(index)) if index.isdigit() else []
        if not attempts:
            self.fail(404, f"Subtask {index} of vertex {vertex_id} not found "
                           f"(parallelism {vertex.parallelism})")
            return None
        if attempt is None:
            return details, attempts, attempts[-1]
        chosen = next((ex for ex in attempts if str(ex.attempt) == attempt), None)
        if chosen is None:
            self.fail(404, f"Attempt {attempt} of subtask {index} of vertex {vertex_id} not found")
            return None
        return details, attempts, chosen

    def taskmanager_or_404(self, tm_id: str) -> TaskManagerInfo | None:
        tm = next((t for t in self.services.taskmanagers() if t.tm_id == tm_id), None)
        if tm is None:
            self.fail(404, f"TaskManager {tm_id} not found")
        return tm

    def hosts(self) -> dict[str, str]:
        """Each TaskManager's host, by id."""
        return {tm.tm_id: tm.host for tm in self.services.taskmanagers()}


class NotFoundHandler(FlinkHandler):
    def _not_found(self, *args: Any, **kwargs: Any) -> None:
        self.fail(404, f"Not found: {self.request.path}")

    get = post = patch = put = delete = _not_found


class NotApplicableHandler(FlinkHandler):
    """A path of Flink's API that does not apply to this cluster: 404 with the reason."""

    reason: str

    def initialize(self, services: RestServices, token: str, reason: str = "") -> None:
        super().initialize(services, token)
        self.reason = reason

    def _not_applicable(self, *args: Any, **kwargs: Any) -> None:
        self.fail(404, f"{self.request.path} does not apply to a sessioncluster session: "
                       f"{self.reason}")

    get = post = patch = put = delete = _not_applicable

