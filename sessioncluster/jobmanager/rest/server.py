"""The REST API's HTTP server and its routing table: Flink's paths, each with its handler."""

from __future__ import annotations

import logging
import socket
from typing import Any

import tornado.httpserver
import tornado.netutil
import tornado.web

from ...cluster.connection import rest_token
from ..dashboard import dashboard_routes
from .base import NotApplicableHandler, NotFoundHandler, RestServices
from .clusterhandlers import (
    ConfigHandler,
    JobManagerHandler,
    JobManagerLogHandler,
    OverviewHandler,
    TaskManagerHandler,
    TaskManagersHandler,
    TaskManagersMetricsHandler,
)
from .handlers import (
    CheckpointDetailsHandler,
    CheckpointsHandler,
    ExecutionResultHandler,
    JobHandler,
    JobPartHandler,
    JobsHandler,
    JobsMetricsHandler,
    JobsOverviewHandler,
    JobStatusHandler,
    LogUrlHandler,
    SavepointStatusHandler,
    SavepointTriggerHandler,
    SubtaskHandler,
    VertexHandler,
    VertexPartHandler,
)
from .sql import SqlGatewaySessionsHandler, SqlResultHandler, SqlTablesHandler
from .sqlgateway import gateway_routes

log = logging.getLogger("sessioncluster.rest")

_JOB = r"(?P<job_id>[0-9a-fA-F]{32})"
_VERTEX = rf"/jobs/{_JOB}/vertices/(?P<vertex_id>[^/]+)"
_SUBTASK = rf"{_VERTEX}/subtasks/(?P<index>[^/]+)"
_TM = r"/taskmanagers/(?P<tm_id>[^/]+)"


def _id(name: str) -> str:
    return rf"(?P<{name}>[^/]+)"


#: the paths of Flink's API that do not apply here, and why (404 with Flink's errors body)
NOT_APPLICABLE: list[tuple[str, str]] = [
    (r"/jars(?:/.*)?", "jobs are submitted by the Python client (web submission is off)"),
    (r"/datasets(?:/.*)?", "there are no cluster data sets (Flink's cached intermediate "
                           "results); a cached stream lives in the session's Spark cache"),
    (r"/jobmanager/profiler(?:/.*)?", "the profiler samples a JVM; the JobManager is a Python "
                                      "process"),
    (rf"{_TM}/profiler(?:/.*)?", "the profiler samples a JVM; operators run in Python workers"),
    (rf"{_TM}/thread-dump", "a TaskManager's threads are in its Spark executor and Python "
                            "workers, which the JobManager cannot dump"),
    (rf"{_VERTEX}/flamegraph", "flame graphs sample JVM threads; operators run in Python workers"),
    (rf"/jobs/{_JOB}/rescaling(?:/.*)?", "a job's parallelism is fixed (no adaptive scheduler)"),
]


def _table() -> list[tuple[str, type]]:
    return [
        (r"/config", ConfigHandler),
        (r"/overview", OverviewHandler),
        (r"/jobmanager/(?P<part>config|environment|logs|metrics|thread-dump)", JobManagerHandler),
        (r"/jobmanager/(?:log|stdout)", JobManagerLogHandler),
        (rf"/jobmanager/logs/{_id('name')}", JobManagerLogHandler),
        (r"/jobs", JobsHandler),
        (r"/jobs/overview", JobsOverviewHandler),
        (r"/jobs/metrics", JobsMetricsHandler),
        (rf"/jobs/{_JOB}", JobHandler),
        (rf"/jobs/{_JOB}/status", JobStatusHandler),
        (rf"/jobs/{_JOB}/(?P<part>plan|config|resource-requirements|exceptions|accumulators|"
         r"metrics)", JobPartHandler),
        (rf"/jobs/{_JOB}/execution-result", ExecutionResultHandler),
        (rf"/jobs/{_JOB}/jobmanager/(?P<part>config|environment)", JobManagerHandler),
        (rf"/jobs/{_JOB}/jobmanager/log-url", LogUrlHandler),
        (rf"/jobs/{_JOB}/taskmanagers/{_id('tm_id')}/log-url", LogUrlHandler),
        (_VERTEX, VertexHandler),
        (rf"{_VERTEX}/(?P<part>subtasktimes|taskmanagers|watermarks|backpressure|accumulators|"
         r"metrics|subtasks/metrics|subtasks/accumulators)", VertexPartHandler),
        (_SUBTASK, SubtaskHandler),
        (rf"{_SUBTASK}/(?P<part>accumulators|metrics)", SubtaskHandler),
        (rf"{_SUBTASK}/attempts/{_id('attempt')}", SubtaskHandler),
        (rf"{_SUBTASK}/attempts/{_id('attempt')}/(?P<part>accumulators|metrics)", SubtaskHandler),
        (rf"/jobs/{_JOB}/checkpoints", CheckpointsHandler),
        (rf"/jobs/{_JOB}/checkpoints/(?P<part>config)", CheckpointsHandler),
        (rf"/jobs/{_JOB}/checkpoints/details/{_id('checkpoint_id')}", CheckpointDetailsHandler),
        (rf"/jobs/{_JOB}/checkpoints/details/{_id('checkpoint_id')}/subtasks/{_id('vertex_id')}",
         CheckpointDetailsHandler),
        (rf"/jobs/{_JOB}/savepoints", SavepointTriggerHandler),
        (rf"/jobs/{_JOB}/savepoints/{_id('request_id')}", SavepointStatusHandler),
        (rf"/jobs/{_JOB}/stop", SavepointTriggerHandler),
        # the session's own (Flink's REST API has neither)
        (rf"/jobs/{_JOB}/sql-result", SqlResultHandler),
        (r"/sql/tables", SqlTablesHandler),
        (r"/sql/gateway", SqlGatewaySessionsHandler),
        (r"/taskmanagers", TaskManagersHandler),
        (r"/taskmanagers/metrics", TaskManagersMetricsHandler),
        (_TM, TaskManagerHandler),
        (rf"{_TM}/(?P<part>metrics|logs|log|stdout)", TaskManagerHandler),
        (rf"{_TM}/(?P<part>logs)/{_id('name')}", TaskManagerHandler),
    ]


def routes(services: RestServices, token: str) -> list[tuple[str, type, dict[str, Any]]]:
    """Flink's paths, each with its handler (also under ``/v1``, as Flink serves them), and
    the SQL Gateway's."""
    args = {"services": services, "token": token}
    out: list[tuple[str, type, dict[str, Any]]] = dashboard_routes(token)
    for path, handler in _table():
        out.append((path, handler, args))
        out.append((f"/v1{path}", handler, args))
    for path, reason in NOT_APPLICABLE:
        for prefix in ("", "/v1"):
            out.append((prefix + path, NotApplicableHandler, dict(args, reason=reason)))
    out.extend(gateway_routes(args))
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
