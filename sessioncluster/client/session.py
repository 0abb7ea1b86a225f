"""Starting, connecting to and stopping a session cluster from Python."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..cluster.connection import (
    ConnectionInfo,
    check_name,
    connection_path,
    pid_alive,
    rest_token,
    session_dir,
)
from ..cluster.leader import HaConfig, find_leader, ha_dir, session_stopped, standby_pids
from ..common.execution_mode import RuntimeExecutionMode
from ..common.types import RowKind
from ..dependencies import PackCache, pack_configured
from ..graph.jobgraph import JobGraph, PythonDependency
from ..graph.lifecycle import JobStatus
from ..options import DEFAULT_NAME, StartOptions
from ..protocol.messages import (
    Ack,
    CachedStreamInfo,
    CachedStreams,
    CancelJob,
    ClusterOverview,
    CreateTemporaryView,
    ExecuteSql,
    InvalidateCache,
    JobList,
    JobResultReply,
    JobSubmitted,
    JobSummary,
    ListCachedStreams,
    ListJobs,
    RequestOverview,
    SqlResult,
    StopCluster,
    SubmitJob,
)
from ..protocol.wire import MAX_MESSAGE_BYTES
from . import display
from .current import clear_current, set_connect, set_current
from .events import EventSubscriber
from .gateway import DispatcherError, DispatcherGateway, JobManagerGoneError
from .jobclient import JobExecutionException
from .shipping import dumps_user_code

START_TIMEOUT = 240.0
#: How long :meth:`Session.sql` waits for a query by default (the JobManager's liveness is
#: checked all along); the query is cancelled when the wait ends.
SQL_TIMEOUT = 3600.0
#: How long :meth:`Session.create_temporary_view` waits for the view by default.
VIEW_TIMEOUT = 600.0


class SessionStartError(RuntimeError):
    """The JobManager could not start the session cluster; the message has its log's tail."""


class SqlExecutionException(JobExecutionException):
    """A SQL query's job ended FAILED or CANCELED; the message is Spark's reason. ``code``: a
    refused statement's code (``api.table.catalogobjects.NOT_FOUND``...), "" for the rest."""

    code: str = ""


@dataclass(slots=True)
class SqlStatementResult:
    """What one SQL statement gave: Flink's ResultKind, the columns with their Flink types, the
    rows (Arrow), and their RowKinds (None when every row is an insertion)."""

    #: the job that ran the statement ('' for a DDL or utility statement, which runs no job)
    job_id: str
    result_kind: str
    columns: list[str]
    column_types: list[str]
    table: "Any"
    row_kinds: "list[RowKind] | None" = None
    #: a streaming query's: its rows come from its job as it runs (``JobClient.stream()``),
    #: ``append`` (+I only) or ``update`` (a changelog); "" when ``table`` holds them all
    live: str = ""
    #: the streaming query reads an unbounded source (its job runs until cancelled)
    unbounded: bool = False
    #: a streaming INSERT into a ``print`` sink: its lines come from its job as it runs
    #: (``JobClient.stream("print", lines=True)``)
    prints: bool = False


class Session:
    """A connection to one running session cluster.

    >>> session = sessioncluster.start("demo")          # doctest: +SKIP
    >>> env = session.get_execution_environment()      # doctest: +SKIP
    """

    def __init__(self, info: ConnectionInfo) -> None:
        self.info = info
        self.name = info.name
        self.gateway = DispatcherGateway(info)
        self.gateway.on_leader_change.append(self._follow)
        self._uploaded: set[str] = set()
        #: the Python dependencies packed for earlier statements (unchanged ones not packed again)
        self._packs = PackCache()
        self._events: EventSubscriber | None = None

    def _follow(self, info: ConnectionInfo) -> None:
        """An HA session has a new leader: requests and events go there."""
        self.info = info
        if self._events is not None:
            self._events.reconnect(info)

    @property
    def rest_url(self) -> str:
        """The base URL of the session's REST API (Flink's paths, e.g. ``/jobs/overview``)."""
        return self.info.rest

    @property
    def rest_token(self) -> str:
        """The bearer token the REST API wants: ``Authorization: Bearer <token>``."""
        return rest_token(self.info.key)

    @property
    def dashboard_url(self) -> str:
        """The web dashboard's link: it signs the browser in with the REST token (kept in an
        HttpOnly cookie), then shows the cluster and its jobs, live."""
        return f"{self.info.rest}/?token={self.rest_token}"

    @property
    def events(self) -> EventSubscriber:
        """The live event stream of this session (started on first use)."""
        if self._events is None:
            self._events = EventSubscriber(self.info)
        return self._events

    def __repr__(self) -> str:
        return f"<Session '{self.name}' dispatcher={self.info.dispatcher} pid={self.info.jobmanager_pid}>"

    def _repr_html_(self) -> str | None:
        return display.hooks.html_of(self)

    # -- cluster ---------------------------------------------------------------------------
    def status(self) -> ClusterOverview:
        """The JobManager's overview: TaskManagers, slots, jobs."""
        return self.gateway.request(RequestOverview(), ClusterOverview, timeout=10.0)

    def jobs(self) -> list[JobSummary]:
        return self.gateway.request(ListJobs(), JobList).jobs

    def cached_streams(self) -> list[CachedStreamInfo]:
        """The streams cached in the session (``DataStream.cache()``), with their sizes."""
        return self.gateway.request(ListCachedStreams(), CachedStreams).streams

    def invalidate_cache(self, cache_id: str) -> None:
        """Release a cached stream (``CachedDataStream.invalidate()``)."""
        try:
            self.gateway.request(InvalidateCache(cache_id), Ack)
        except DispatcherError as exc:
            if exc.kind != "unknown_cache":  # never computed, or released already: nothing held
                raise

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
        if self.info.ha:  # its standbys see the session stopped and exit
            while standby_pids(self.name) and time.monotonic() < deadline:
                time.sleep(0.05)
            for standby in standby_pids(self.name):
                os.kill(standby, 9)
        self.gateway.close()
        if self._events is not None:
            self._events.close()
        clear_current(self)

    def get_execution_environment(self) -> "Any":
        """A StreamExecutionEnvironment on this session; its default parallelism is the
        session's (``--parallelism``, by default every slot at start)."""
        from .environment import StreamExecutionEnvironment

        env = StreamExecutionEnvironment(self)
        env.stream_graph.default_parallelism = self.info.parallelism
        return env

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
        job_id = uuid.uuid4().hex  # ours, so that a submission sent again is the same job
        try:
            reply = self.gateway.request(SubmitJob(job_graph, fresh, job_id), JobSubmitted)
        except DispatcherError as exc:
            if exc.kind != "missing_blob":
                raise
            # the JobManager lost blobs we thought it had (e.g. a restarted session)
            reply = self.gateway.request(SubmitJob(job_graph, dict(blobs), job_id), JobSubmitted)
        self._uploaded.update(blobs)
        return reply.job_id

    # -- SQL -------------------------------------------------------------------------------
    def sql(self, query: str, timeout: float = SQL_TIMEOUT, dialect: str = "flink") -> "Any":
        """Run one SQL statement on the session; its rows as a pandas DataFrame (sent as Arrow).

        ``dialect="flink"`` (the default) takes Flink SQL: DDL with Flink's connectors, window
        TVFs, ``INSERT INTO``; ``dialect="spark"`` runs Spark SQL as it is on the session's
        SparkSession. A query or ``INSERT`` runs as a job, shown in :meth:`jobs` and
        :meth:`job`. A failed (or cancelled) statement raises :class:`SqlExecutionException`
        with the reason. An interrupt, or the end of ``timeout`` seconds, cancels the job.
        """
        result = self.execute_sql(query, dialect=dialect, timeout=timeout)
        return result.table.to_pandas()

    def execute_flink_sql(self, statement: str, runtime_mode: RuntimeExecutionMode,
                          configuration: dict[str, str],
                          timeout: float = SQL_TIMEOUT, function: Any = None
                          ) -> SqlStatementResult:
        """Run one Flink SQL statement as a TableEnvironment of ``runtime_mode`` does;
        ``function``: the Python function (a udf/udtf/udaf wrapper) a ``CREATE FUNCTION``
        statement registers, shipped as user code."""
        payload = b"" if function is None else dumps_user_code(function)
        return self.execute_sql(statement, "flink", runtime_mode, configuration, timeout,
                                payload)

    def packed_dependencies(self, configuration: dict[str, str]
                            ) -> list[tuple[PythonDependency, bytes]]:
        """The Python dependencies ``configuration`` names (a TableEnvironment's
        ``python.files``...), packed (files unchanged since an earlier statement not again)."""
        return pack_configured(configuration, self._packs)

    def _dependencies(self, msg: ExecuteSql) -> ExecuteSql:
        """``msg`` with the Python dependencies its configuration names (a TableEnvironment's
        ``python.files``...), packed; the blobs not uploaded before by this connection."""
        packed = self.packed_dependencies(msg.configuration) if msg.dialect == "flink" else []
        msg.dependencies = [dep for dep, _ in packed]
        msg.blobs = {dep.key: data for dep, data in packed if dep.key not in self._uploaded}
        return msg

    def execute_sql(self, statement: str, dialect: str = "flink",
                    runtime_mode: RuntimeExecutionMode = RuntimeExecutionMode.BATCH,
                    configuration: dict[str, str] | None = None,
                    timeout: float = SQL_TIMEOUT, function: bytes = b"") -> SqlStatementResult:
        """Run one SQL statement of ``dialect`` (``flink`` or ``spark``); its result."""
        import pyarrow as pa

        if not isinstance(statement, str):
            raise TypeError(f"sql() takes the statement as a str, not {type(statement).__name__}")
        if dialect not in ("flink", "spark"):
            raise ValueError(f"unknown SQL dialect {dialect!r}: 'flink' or 'spark'")
        job_id = uuid.uuid4().hex
        msg = self._dependencies(ExecuteSql(statement, job_id, dialect, runtime_mode.name,
                                            dict(configuration or {}), function))
        reply = self._execute_sql(msg, timeout)
        if reply.status not in (JobStatus.FINISHED, JobStatus.RUNNING):  # RUNNING: a streaming
            # INSERT's job, answered once it runs
            verb = "was cancelled" if reply.status is JobStatus.CANCELED else "failed"
            what = f"SQL job {reply.job_id}" if reply.job_id else "SQL statement"
            error = SqlExecutionException(
                f"{what} {verb}: {reply.error_text}",
                JobResultReply(reply.job_id, True, reply.status, error_text=reply.error_text))
            error.code = reply.error_code
            raise error
        table = pa.ipc.open_stream(reply.arrow).read_all()
        kinds = [RowKind(b) for b in reply.row_kinds] if reply.row_kinds else None
        # a print sink's lines, printed here as an attached DataStream job's print() lines are
        for line in reply.printed:
            print(line)
        for line in reply.printed_err:
            print(line, file=sys.stderr)
        return SqlStatementResult(reply.job_id, reply.result_kind, list(table.column_names),
                                  list(reply.column_types), table, kinds, reply.live_result,
                                  reply.unbounded, reply.prints)

    def _execute_sql(self, msg: ExecuteSql, timeout: float) -> SqlResult:
        # The reply comes when the statement ends: wait on a socket of its own, so that this
        # session's other requests (from other threads, widgets) go on meanwhile, and so that
        # an abandoned wait leaves no late reply behind.
        gateway = DispatcherGateway(self.info)
        try:
            try:
                reply = gateway.request(msg, SqlResult, timeout=timeout)
            except DispatcherError as exc:
                if exc.kind != "missing_blob":
                    raise
                # the JobManager lost blobs we thought it had (e.g. a restarted session)
                self._uploaded.clear()
                reply = gateway.request(self._dependencies(msg), SqlResult, timeout=timeout)
            self._uploaded.update(dep.key for dep in msg.dependencies)
            return reply
        except JobManagerGoneError as exc:
            if not gateway.jobmanager_alive():
                raise
            self._cancel_quietly(msg.job_id)  # our wait ended, not the JobManager
            raise TimeoutError(f"SQL job {msg.job_id} did not end within {timeout:g} s; "
                               "it was cancelled") from exc
        except KeyboardInterrupt:
            self._cancel_quietly(msg.job_id)
            raise
        finally:
            gateway.close()

    def _cancel_quietly(self, job_id: str) -> None:
        """Cancel a query whose result we stopped waiting for (if it is still known)."""
        try:
            self.gateway.request(CancelJob(job_id), Ack, timeout=5.0)
        except (DispatcherError, JobManagerGoneError):
            pass

    def create_temporary_view(self, name: str, df: "Any", timeout: float = VIEW_TIMEOUT) -> None:
        """Register a pandas DataFrame as the temporary view ``name`` of the session's
        SparkSession (replacing one of that name), for :meth:`sql`. The index is not sent,
        as with Spark's ``createDataFrame``.
        """
        import pandas as pd
        import pyarrow as pa

        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"create_temporary_view() takes a pandas DataFrame, not "
                            f"{type(df).__module__}.{type(df).__name__}")
        if not isinstance(name, str) or not name:
            raise ValueError("create_temporary_view() needs a view name")
        table = pa.Table.from_pandas(df, preserve_index=False)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        arrow = sink.getvalue().to_pybytes()
        if len(arrow) > MAX_MESSAGE_BYTES - (1 << 20):
            raise ValueError(f"the DataFrame is {len(arrow) / (1 << 20):.0f} MiB as Arrow, more "
                             f"than a message to the JobManager can carry "
                             f"({MAX_MESSAGE_BYTES >> 20} MiB)")
        self.gateway.request(CreateTemporaryView(name, arrow), Ack, timeout=timeout)


def connect(name: str = "default") -> Session:
    """Connect to the running session cluster ``name`` (in an HA session, its leader)."""
    info = find_leader(name)
    session = Session(info)
    set_current(session)  # get_execution_environment() binds to it
    return session


set_connect(connect)  # get_execution_environment() connects to SESSIONCLUSTER_SESSION with it


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


def start(name: str = DEFAULT_NAME, *, timeout: float = START_TIMEOUT, quiet: bool = False,
          application: bool = False, owner: int | None = None, **options: Any) -> Session:
    """Start a session cluster in the background and return when every TaskManager is warm.

    ``options`` are the start options of :class:`~sessioncluster.options.StartOptions`
    (``taskmanagers``, ``slots``, ``memory``, ``spark_master``, ``parallelism``,
    ``task_attempts``, ``bind``, ``max_result_mb``), as on ``sessioncluster start``. If a
    session of that name is running already, connect to it instead. ``application=True``
    starts an application cluster (:func:`sessioncluster.client.run.run_application`), which
    runs one uploaded program and then stops. If the wait is interrupted (Ctrl-C), the
    JobManager started here is stopped: nothing is left half-started. ``owner``: a pid whose
    end stops the cluster (a per-job cluster's client, even if it is killed -9).

    >>> session = sessioncluster.start("dev", taskmanagers=2, slots=1)   # doctest: +SKIP
    """
    settings = StartOptions.from_kwargs(name=check_name(name), **options)
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
        args = settings.argv()
        if application:
            args.append("--application")
        if owner is not None:
            args += ["--owner", str(owner)]
        proc = _spawn_jobmanager(args, log_path)
        try:
            session = _await_start(name, proc, log_path, timeout)
        except BaseException:
            _stop_started(name, proc)
            raise
        set_current(session)  # get_execution_environment() binds to it
        return session


def _spawn_jobmanager(args: list[str], log_path: Path,
                      key: str | None = None) -> subprocess.Popen[bytes]:
    """A JobManager process in the background, its output in ``log_path``; ``key``: the
    session key it is to use (else it makes one)."""
    # A Spark Connect client in this process leaves these behind; the JobManager's classic
    # SparkSession must not see them.
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")}
    if key is not None:
        env["SESSIONCLUSTER_KEY"] = key
    with open(log_path, "ab") as log:
        return subprocess.Popen([sys.executable, "-m", "sessioncluster.jobmanager", *args],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True, close_fds=True, env=env)


def _await_start(name: str, proc: subprocess.Popen[bytes], log_path: Any,
                 timeout: float) -> Session:
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
            raise SessionStartError(_failure(name, None, log_path))
        time.sleep(0.02)
    session = Session(info)
    _wait_ready(session, proc, deadline - time.monotonic())
    return session


def _stop_started(name: str, proc: subprocess.Popen[bytes], grace: float = 60.0) -> None:
    """Stop a JobManager whose start did not complete (failed, timed out or interrupted): it
    stops Spark and its TaskManagers on SIGTERM; SIGKILL if it does not end in time."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


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


def start_standby(name: str = DEFAULT_NAME, *, timeout: float = START_TIMEOUT) -> int:
    """Start a standby JobManager for the HA session ``name`` (started with ``ha="file"`` or
    ``ha="zookeeper"``): it starts its own Spark driver and TaskManagers now (a warm standby)
    and takes over when the leader dies. Returns its pid once it is warm.

    >>> sessioncluster.start("prod", ha="file")           # doctest: +SKIP
    >>> sessioncluster.start_standby("prod")              # doctest: +SKIP
    """
    config = HaConfig.read(check_name(name))  # NotHaSessionError for a session without HA
    if session_stopped(name):
        raise LookupError(f"HA session '{name}' was stopped; start it again first")
    log_dir = ha_dir(name)
    log_path = log_dir / f"standby-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}.log"
    proc = _spawn_jobmanager([*config.argv, "--standby"], log_path, key=config.key)
    own = log_dir / f"jobmanager-{proc.pid}.json"
    deadline = time.monotonic() + timeout
    try:
        while True:
            if proc.poll() is not None:
                raise SessionStartError(_failure(name, proc.returncode, log_path))
            if own.exists():
                gateway = DispatcherGateway(ConnectionInfo.read(own))
                try:
                    overview = gateway.request(RequestOverview(), ClusterOverview, timeout=10.0)
                finally:
                    gateway.close()
                if overview.startup_error:
                    raise SessionStartError(f"standby of '{name}' failed to start: "
                                            f"{overview.startup_error}")
                if overview.ready:
                    return proc.pid
            if time.monotonic() > deadline:
                raise SessionStartError(_failure(name, None, log_path))
            time.sleep(0.1)
    except BaseException:
        _stop_started(name, proc)
        raise
