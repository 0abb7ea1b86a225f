"""Starting, connecting to and stopping a session cluster from Python."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from typing import Any, Iterator

from ..connection import ConnectionInfo, check_name, connection_path, pid_alive, session_dir
from ..graph.jobgraph import JobGraph
from ..protocol.messages import (
    ClusterOverview,
    JobList,
    JobSubmitted,
    JobSummary,
    ListJobs,
    RequestOverview,
    StopCluster,
    SubmitJob,
    Ack,
)
from .events import EventSubscriber
from .gateway import DispatcherError, DispatcherGateway, JobManagerGoneError

START_TIMEOUT = 240.0


class SessionStartError(RuntimeError):
    """The JobManager could not start the session cluster; the message has its log's tail."""


class Session:
    """A connection to one running session cluster.

    >>> session = sessioncluster.start("demo")          # doctest: +SKIP
    >>> env = session.get_execution_environment()      # doctest: +SKIP
    """

    def __init__(self, info: ConnectionInfo) -> None:
        self.info = info
        self.name = info.name
        self.gateway = DispatcherGateway(info)
        self._uploaded: set[str] = set()
        self._events: EventSubscriber | None = None

    @property
    def events(self) -> EventSubscriber:
        """The live event stream of this session (started on first use)."""
        if self._events is None:
            self._events = EventSubscriber(self.info)
        return self._events

    def __repr__(self) -> str:
        return f"<Session '{self.name}' dispatcher={self.info.dispatcher} pid={self.info.jobmanager_pid}>"

    # -- cluster ---------------------------------------------------------------------------
    def status(self) -> ClusterOverview:
        """The JobManager's overview: TaskManagers, slots, jobs."""
        return self.gateway.request(RequestOverview(), ClusterOverview, timeout=10.0)

    def jobs(self) -> list[JobSummary]:
        return self.gateway.request(ListJobs(), JobList).jobs

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the session cluster: JobManager, Spark, every TaskManager."""
        pid = self.info.jobmanager_pid
        try:
            self.gateway.request(StopCluster(), Ack, timeout=10.0)
        except JobManagerGoneError:
            pass
        deadline = time.monotonic() + timeout
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if pid_alive(pid):
            os.kill(pid, 9)
        self.gateway.close()
        if self._events is not None:
            self._events.close()

    def get_execution_environment(self) -> "Any":
        from .environment import StreamExecutionEnvironment

        return StreamExecutionEnvironment(self)

    def job(self, job_id: str) -> "Any":
        """A :class:`JobClient` for a job of this session, by id."""
        from .jobclient import JobClient

        client = JobClient(self, job_id)
        client.get_job_status()  # an unknown id fails here, clearly
        return client

    # -- submission ------------------------------------------------------------------------
    def submit(self, job_graph: JobGraph, blobs: dict[str, bytes]) -> str:
        """Submit a JobGraph; blobs this connection uploaded before are not sent again."""
        fresh = {k: v for k, v in blobs.items() if k not in self._uploaded}
        try:
            reply = self.gateway.request(SubmitJob(job_graph, fresh), JobSubmitted)
        except DispatcherError as exc:
            if exc.kind != "missing_blob":
                raise
            # the JobManager lost blobs we thought it had (e.g. a restarted session)
            reply = self.gateway.request(SubmitJob(job_graph, dict(blobs)), JobSubmitted)
        self._uploaded.update(blobs)
        return reply.job_id


def connect(name: str = "default") -> Session:
    """Connect to the running session cluster ``name``."""
    path = connection_path(name)
    if not path.exists():
        raise LookupError(f"no session cluster named '{name}' is running (no {path})")
    info = ConnectionInfo.read(path)
    if not pid_alive(info.jobmanager_pid):
        path.unlink(missing_ok=True)
        raise LookupError(f"session cluster '{name}' is not running (its JobManager, pid "
                          f"{info.jobmanager_pid}, is gone; removed the stale connection file)")
    return Session(info)


@contextmanager
def _start_lock(name: str) -> Iterator[None]:
    d = session_dir(name)
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(d / "start.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def start(name: str = "default", taskmanagers: int = 2, slots: int = 1, memory: int = 1024,
          spark_master: str | None = None, task_attempts: int = 2, bind: str = "127.0.0.1",
          timeout: float = START_TIMEOUT, quiet: bool = False, max_result_mb: int = 256) -> Session:
    """Start a session cluster in the background and return when every TaskManager is warm.

    If a session of that name is running already, connect to it instead.
    """
    check_name(name)
    with _start_lock(name):
        try:
            session = connect(name)
        except LookupError:
            pass
        else:
            if not quiet:
                print(f"session cluster '{name}' is already running; connected to it", file=sys.stderr)
            _wait_ready(session, None, timeout)
            return session
        log_path = session_dir(name) / "jobmanager.log"
        cmd = [sys.executable, "-m", "sessioncluster.jobmanager", "--name", name,
               "--taskmanagers", str(taskmanagers), "--slots", str(slots), "--memory", str(memory),
               "--task-attempts", str(task_attempts), "--bind", bind,
               "--max-result-mb", str(max_result_mb)]
        if spark_master:
            cmd += ["--spark-master", spark_master]
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    start_new_session=True, close_fds=True)
        path = connection_path(name)
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise SessionStartError(_failure(name, proc.returncode, log_path))
            try:
                info = ConnectionInfo.read(path)
                if info.jobmanager_pid == proc.pid:
                    break
            except (OSError, ValueError, TypeError):
                pass
            if time.monotonic() > deadline:
                proc.kill()
                raise SessionStartError(_failure(name, None, log_path))
            time.sleep(0.02)
        session = Session(info)
        _wait_ready(session, proc, deadline - time.monotonic())
        return session


def _wait_ready(session: Session, proc: subprocess.Popen[bytes] | None, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            overview = session.status()
        except JobManagerGoneError:
            if proc is not None and proc.poll() is not None:
                raise SessionStartError(_failure(session.name, proc.returncode,
                                                 session_dir(session.name) / "jobmanager.log")) from None
            raise
        if overview.ready:
            return
        if overview.startup_error:
            session.stop()
            raise SessionStartError(f"session '{session.name}' failed to start: "
                                    f"{overview.startup_error}")
        if time.monotonic() > deadline:
            if proc is not None:
                session.stop()  # we started it: leave nothing half-started behind
            raise SessionStartError(f"session '{session.name}' not ready after {timeout:.0f} s "
                                    f"({len(overview.taskmanagers)} of "
                                    f"{overview.expected_taskmanagers} TaskManagers)")
        time.sleep(0.05)


def _failure(name: str, code: int | None, log_path: Any) -> str:
    try:
        tail = "".join(open(log_path, errors="replace").readlines()[-25:])
    except OSError:
        tail = ""
    how = f"exited with code {code}" if code is not None else "did not start in time"
    return f"the JobManager of session '{name}' {how}. Last lines of {log_path}:\n{tail}"
