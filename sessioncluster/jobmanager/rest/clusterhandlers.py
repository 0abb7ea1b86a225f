"""The handlers of the cluster's paths: the dashboard's ``/config``, ``/overview``, the JobManager
(``/jobmanager/...``) and the TaskManagers (``/taskmanagers/...``)."""

from __future__ import annotations

import time

from ...cluster.connection import session_dir
from ...graph.lifecycle import JobStatus
from . import metrics
from .base import FlinkHandler
from .cluster import (
    configuration_entries,
    environment_info,
    jobmanager_logs,
    log_list,
    read_tail,
    taskmanager_details,
    taskmanager_info,
    taskmanager_log,
    taskmanager_logs,
    thread_dump,
)

#: the Flink REST API version whose shapes we follow
FLINK_VERSION = "1.20.0"
#: how often Flink's dashboard polls, in ms (DashboardConfiguration.refresh-interval)
REFRESH_INTERVAL_MS = 3000


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


class JobManagerHandler(FlinkHandler):
    """``/jobmanager/config``, ``/environment``, ``/logs``, ``/metrics``, ``/thread-dump``;
    also a job's ``/jobs/:jobid/jobmanager/config`` and ``/environment`` (a job runs on the
    session's JobManager: the same, with the job's own settings added to the configuration)."""

    def get(self, part: str, job_id: str | None = None) -> None:
        job_config: dict[str, str] = {}
        if job_id is not None:
            details = self.details_or_404(job_id)
            if details is None:
                return
            job_config = {str(k): str(v) for k, v in details.job_graph.configuration.items()}
        if part == "config":
            self.reply(configuration_entries({**self.services.configuration(), **job_config}))
        elif part == "environment":
            self.reply(environment_info())
        elif part == "logs":
            self.reply(log_list(jobmanager_logs(session_dir(self.services.session_name))))
        elif part == "thread-dump":
            self.reply(thread_dump())
        else:  # metrics
            running = sum(not s.status.is_globally_terminal for s in self.services.summaries())
            values = metrics.jobmanager_metrics(self.services.pid, self.services.taskmanagers(),
                                                running)
            self.reply(metrics.collection(values, self.get_query_argument("get", None)))


class JobManagerLogHandler(FlinkHandler):
    """``/jobmanager/log``, ``/jobmanager/stdout`` (both streams go to ``jobmanager.log``) and
    ``/jobmanager/logs/:name``: the file's last MB as text."""

    def get(self, name: str = "jobmanager.log") -> None:
        files = {p.name: p for p in jobmanager_logs(session_dir(self.services.session_name))}
        path = files.get(name)
        if path is None:
            self.fail(404, f"The JobManager has no log file {name!r}")
            return
        self.reply_text(read_tail(path))


class TaskManagersHandler(FlinkHandler):
    def get(self) -> None:
        self.reply({"taskmanagers": [taskmanager_info(tm) for tm in self.services.taskmanagers()]})


class TaskManagersMetricsHandler(FlinkHandler):
    """``/taskmanagers/metrics``: aggregated over TaskManagers (``?taskmanagers=`` selects)."""

    def get(self) -> None:
        chosen = self.get_query_argument("taskmanagers", None)
        wanted = {t.strip() for t in chosen.split(",")} if chosen else None
        tms = [tm for tm in self.services.taskmanagers() if wanted is None or tm.tm_id in wanted]
        try:
            self.reply(metrics.aggregate((metrics.taskmanager_metrics(tm) for tm in tms),
                                         self.get_query_argument("get", None),
                                         self.get_query_argument("agg", None)))
        except ValueError as exc:
            self.fail(400, str(exc))


class TaskManagerHandler(FlinkHandler):
    """``/taskmanagers/:id`` and its ``/metrics``, ``/logs``, ``/log``, ``/stdout`` and
    ``/logs/:name``."""

    def get(self, tm_id: str, part: str | None = None, name: str | None = None) -> None:
        tm = self.taskmanager_or_404(tm_id)
        if tm is None:
            return
        if part is None:
            self.reply(taskmanager_details(tm))
        elif part == "metrics":
            self.reply(metrics.collection(metrics.taskmanager_metrics(tm),
                                          self.get_query_argument("get", None)))
        elif part == "logs" and name is None:
            self.reply(log_list(taskmanager_logs(tm)))
        else:
            wanted = name or ("stdout" if part == "stdout" else "stderr")
            path = (taskmanager_log(tm) if wanted == "stderr"
                    else next((p for p in taskmanager_logs(tm) if p.name == wanted), None))
            if path is None:
                self.fail(404, f"TaskManager {tm_id} has no log file {wanted!r} "
                               "(its executor is gone, or no such file)")
                return
            self.reply_text(read_tail(path))
