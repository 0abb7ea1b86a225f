"""The JobManager process: Dispatcher, ResourceManager, JobMasters, BlobServer, Spark driver.

Sockets (all bound to 127.0.0.1 unless told otherwise, all owned by the event loop thread):

* ``dispatcher`` ROUTER: clients' requests (:mod:`.dispatcher`).
* ``resourcemanager`` ROUTER: TaskManager registration, heartbeats, blob requests.
* ``events`` PUB: job status, execution states, accumulators, TaskManager changes;
  topic = job id or ``cluster``.

and one HTTP server, Flink's REST API (:mod:`.rest`), on the same loop and address.

Other threads (JobMasters running Spark actions, py4j listener callbacks) hand work to the
loop with ``loop.call_soon_threadsafe``; nothing else touches a socket.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import psutil
import zmq
import zmq.asyncio

from ..background import BackgroundTasks
from ..cluster.connection import ConnectionInfo, connection_path, session_dir
from ..cluster.leader import HaConfig, ha_dir
from ..dependencies import pack_python_file, pack_requirements
from ..graph.jobgraph import PythonDependency
from ..graph.lifecycle import JobStatus
from ..options import StartOptions
from ..protocol.messages import (
    CachedStreamInfo,
    ClusterOverview,
    JobSummary,
    Message,
    TaskEvent,
)
from ..protocol.wire import MAX_MESSAGE_BYTES, MIN_KEY_CHARS, MessageSigner, new_key
from ..spark.cache import CacheRegistry
from ..spark.driver import (
    SparkListenerBridge,
    add_listener,
    start_spark,
    wait_for_executors,
)
from ..spark.events import (
    ExecutorAdded,
    ExecutorRemoved,
    JobStarted,
    SparkEvent,
    StageSubmitted,
    TaskEnded,
    TaskStarted,
)
from ..spark.flinksql.executor import FlinkSqlPlanner
from ..spark.flinksql.outcome import StatementJob
from ..spark.sql import create_temporary_view_in_thread
from ..spark.warmup import warm_up as warm_up_streaming
from .application import SUBMIT_TIMEOUT, ApplicationRunner
from .blobserver import BlobServer
from .catalog_log import CatalogLog, replay
from .dispatcher import Dispatcher, DispatcherServices
from .ha import (
    HighAvailabilityServices,
    ha_services,
    pack_submission,
    unpack_submission,
)
from .jobstore import JobStore
from .resourcemanager import ResourceManager
from .rest import RestServer, RestServices, cluster_configuration
from .rest.sql import catalog_listing
from .runner import JobRunner, kill_executor
from .runnerfactory import JobRunnerFactory
from .sqlgateway import GatewayServices, SqlGatewayService

log = logging.getLogger("sessioncluster.jobmanager")

STARTUP_TIMEOUT = 180.0


class JobManager:
    """The JobManager process's parts, wired together on one asyncio loop."""

    def __init__(self, settings: StartOptions, key: str | None = None,
                 heartbeat_interval: float | None = None, heartbeat_timeout: float | None = None,
                 application: bool = False, owner: int | None = None,
                 standby: bool = False) -> None:
        name = self.name = settings.name
        self.settings = settings
        self.pid = os.getpid()
        self.dir = session_dir(name)
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.key = key or new_key()
        self.signer = MessageSigner(self.key, sender=f"jobmanager-{name}")
        self.ready = False
        self.warming_up = False  # the STREAMING warm-up runs (``_warm_streaming``)
        self.startup_error: str | None = None
        #: HA: leader election and the job-graph and job result stores (None: no HA)
        self.ha: HighAvailabilityServices | None = (
            ha_services(name, settings.ha, settings.zookeeper_quorum) if settings.ha else None)
        #: the Flink SQL catalog's statements in the HA catalog store (compacted)
        self.catalog_log = CatalogLog(self.ha.catalog_store, self.key) if self.ha else None
        self.standby = standby
        #: HA: the epoch of this JobManager's leadership, 0 while it is a standby
        self.epoch = 0
        #: HA: this leadership's endpoints are published (its unfinished jobs recovered first)
        self._published = False
        #: where this JobManager's own endpoints are (its TaskManagers read them); in an HA
        #: session the leader also publishes them where clients look
        self.own_path = (ha_dir(name) / f"jobmanager-{self.pid}.json" if self.ha is not None
                         else connection_path(name))
        self.spark: Any = None
        self.flink_sql: FlinkSqlPlanner | None = None  # the catalog, made with the SparkSession
        self.blobs = BlobServer(self.dir / "blobs")
        self.caches = CacheRegistry()
        self.loop = asyncio.get_event_loop()
        self.background = BackgroundTasks("jobmanager")
        self.ctx = zmq.asyncio.Context()
        self.dispatcher_socket = self._bind(zmq.ROUTER)
        self.rm_socket = self._bind(zmq.ROUTER)
        self.events_socket = self._bind(zmq.PUB)
        self.runners = JobRunnerFactory(self)
        self.rm = ResourceManager(
            self.blobs, self._send_rm, lambda m: self.publish("cluster", m), self._on_task_events,
            heartbeat_interval or settings.heartbeat_interval / 1000,
            heartbeat_timeout or settings.heartbeat_timeout / 1000, on_lost=self._on_taskmanager_lost)
        self.dispatcher = Dispatcher(DispatcherServices(
            session_name=name, blobs=self.blobs,
            store=JobStore(self.dir / "jobs", settings.result_store_mb * 2**20),
            new_runner=self._new_runner, reply=self.reply, is_ready=lambda: self.ready,
            create_view=lambda view, arrow, done: create_temporary_view_in_thread(
                self.spark, view, arrow, self.loop, done),
            overview=self._overview, shutdown=self._stop_session_soon,
            plan_statement=self.runners.plan_statement,
            cached_streams=self._cached_streams, invalidate_cache=self.caches.invalidate,
            python_dependencies=self._session_dependencies(settings),
            is_leader=self.is_leader, persist=self._persist, has_result=self._has_result,
            job_finished=self._job_finished))
        self.sql_gateway = self._sql_gateway()
        self.rest = self._rest_server(name, settings)
        #: Spark stage id -> the job whose group submitted it
        self.stage_jobs: dict[int, JobRunner] = {}
        #: application mode: the one program this cluster was started for (else None)
        self.application = ApplicationRunner(
            name, self.dir, self.blobs, self.loop, lambda: list(self.dispatcher.jobs),
            lambda status: self._stop_session_soon()) if application else None
        self.dispatcher.services.run_application = \
            self.application.start if self.application is not None else None
        self._stopping = False
        #: a per-job cluster's client: the cluster stops when that process is gone
        self.owner = psutil.Process(owner) if owner is not None else None
        self.spark_handlers: dict[type, Callable[[Any], None]] = {
            StageSubmitted: self._on_stage_submitted,
            TaskStarted: self._on_spark_task_event,
            TaskEnded: self._on_spark_task_event,
            ExecutorAdded: lambda ev: self.on_executor_added(ev.executor_id),
            ExecutorRemoved: lambda ev: self.rm.mark_lost(
                ev.executor_id, f"Spark removed the executor: {ev.reason}"),
            JobStarted: self._on_spark_job_started,
        }
        self.stopped = asyncio.Event()

    def _bind(self, kind: int) -> zmq.asyncio.Socket:
        sock = self.ctx.socket(kind)
        sock.setsockopt(zmq.LINGER, 500)
        if kind != zmq.PUB:
            sock.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        sock.bind_to_random_port(f"tcp://{self.settings.bind}")
        return sock

    @property
    def connection(self) -> ConnectionInfo:
        def endpoint(sock: zmq.asyncio.Socket) -> str:
            return sock.getsockopt_string(zmq.LAST_ENDPOINT)

        return ConnectionInfo(self.name, self.key, endpoint(self.dispatcher_socket),
                              endpoint(self.events_socket), endpoint(self.rm_socket),
                              self.pid, self.settings.bind, self.settings.master_url,
                              self.settings.default_parallelism, self.rest.url,
                              self.settings.ha or "", self.settings.zookeeper_quorum or "",
                              self.epoch)

    # -- high availability (Flink's leader election, job-graph store, job result store) ---------
    def is_leader(self) -> bool:
        """True without HA; in an HA session, while this JobManager holds the leadership."""
        return self.ha is None or (self.epoch > 0 and self.ha.has_leadership(self.epoch))

    def grant_leadership(self, epoch: int) -> None:
        """Leader election's thread: this JobManager won ``epoch``."""
        self.loop.call_soon_threadsafe(self._on_granted, epoch)

    def revoke_leadership(self, reason: str) -> None:
        """Leader election's thread: another JobManager leads now, or the backend is gone."""
        self.loop.call_soon_threadsafe(self._on_revoked, reason)

    def _on_granted(self, epoch: int) -> None:
        assert self.ha is not None
        self.epoch = epoch
        self._published = False
        log.info("JobManager %d leads session '%s' (epoch %d)", self.pid, self.name, epoch)
        self._take_over()

    def _take_over(self) -> None:
        """Start again every job a leader before accepted and did not finish, then tell the
        clients where the leader is (so that none asks for a job not yet recovered). Called
        on leadership and when Spark is up: jobs to recover wait for Spark."""
        assert self.ha is not None
        if self.epoch == 0 or self._published:
            return
        if not self.ready and (self.ha.job_graph_store.job_ids()
                               or self.ha.catalog_store.job_ids()):
            return
        self._restore_catalog()
        self._recover_jobs()
        self.connection.write(self.own_path)
        self.ha.publish_leader(self.connection)
        self._published = True

    def _restore_catalog(self) -> None:
        """The session's Flink SQL catalog as the leaders before made it: its statements (a
        compacted snapshot's, then those after it) planned again in order, into a new planner
        (before the jobs are recovered: they read it)."""
        assert self.catalog_log is not None
        if self.spark is None or not self.catalog_log.store.job_ids():
            return
        messages = self.catalog_log.messages()
        self.flink_sql = planner = FlinkSqlPlanner(self.spark)
        lost = replay(messages, lambda msg: planner.plan(
            msg.query, msg.runtime_mode, msg.configuration, msg.function))
        log.info("restored the Flink SQL catalog from %d statements (%d lost)", len(messages),
                 lost)

    def _recover_jobs(self) -> None:
        assert self.ha is not None
        store = self.ha.job_graph_store
        for job_id in store.job_ids():
            if self.ha.job_result_store.get(job_id) is not None:
                store.remove(job_id)  # finished; its leader died before it cleaned up
                continue
            data = store.get(job_id)
            try:
                submission = unpack_submission(self.key, data or b"")
            except Exception as exc:  # noqa: BLE001 - never run what does not pass the key
                log.error("job graph %s in the job-graph store is unreadable or not signed "
                          "with the session key (%s); left out", job_id, exc)
                continue
            if self.dispatcher.recover(job_id, submission) is not None:
                log.info("recovered job %s (%s) from the job-graph store", job_id,
                         submission.type)

    def _on_revoked(self, reason: str) -> None:
        """Fencing: a deposed leader suspends its jobs (the new leader recovers them; nothing
        of them is recorded here) and contends again as a standby."""
        if self.epoch == 0:
            return
        log.error("JobManager %d lost the leadership of session '%s' (epoch %d): %s; "
                  "suspending its jobs", self.pid, self.name, self.epoch, reason)
        assert self.ha is not None
        self.epoch = 0
        self.dispatcher.suspend_all()
        if not self._stopping:
            self.ha.start_leader_election(self)

    def _persist(self, job_id: str, submission: Message) -> None:
        if self.ha is not None:
            self.ha.job_graph_store.put(job_id, pack_submission(self.key, submission))

    def _has_result(self, job_id: str) -> bool:
        return self.ha is not None and self.ha.job_result_store.get(job_id) is not None

    def _job_finished(self, job: JobRunner) -> None:
        """Flink's order: the job result store first, then the job graph is forgotten; a
        leader that dies in between leaves a graph the next one cleans up, never re-runs."""
        if self.ha is None:
            return
        try:
            self.ha.job_result_store.mark(job.job_id, job.status.value, self.epoch)
        except FileExistsError:
            log.error("job %s already had a result in the job result store", job.job_id)
        except OSError:
            log.exception("could not record job %s in the job result store", job.job_id)
            return
        self.ha.job_graph_store.remove(job.job_id)

    # -- jobs -----------------------------------------------------------------------------------
    def _session_dependencies(self, settings: StartOptions) -> list[PythonDependency]:
        """``--py-files`` and ``--requirements``, packed into the BlobServer for every job."""
        packed = [pack_python_file(p) for p in (settings.py_files or "").split(",") if p]
        if settings.requirements:
            packed.append(pack_requirements(settings.requirements))
        for dep, data in packed:
            self.blobs.put(dep.key, data)
        return [dep for dep, _ in packed]

    def _new_runner(self, job_id: str, submission: Message, on_done: Callable[[JobRunner], None],
                    statement: StatementJob | None = None) -> JobRunner:
        def done(job: JobRunner) -> None:
            self.stage_jobs = {s: j for s, j in self.stage_jobs.items() if j is not job}
            on_done(job)

        return self.runners.create(job_id, submission, done, statement)

    def _job(self, job_id: str) -> JobRunner | None:
        """A job in memory or in the job store."""
        return self.dispatcher.jobs.get(job_id) or self.dispatcher.store.get(job_id)

    def _sql_gateway(self) -> SqlGatewayService:
        """Flink's SQL Gateway endpoint: its statements go through the Dispatcher."""
        return SqlGatewayService(GatewayServices(
            ask=self.dispatcher.ask, job_status=self._job_status,
            shared_options=lambda: dict(self.flink_sql.options) if self.flink_sql else {}),
            catalog_names=self._catalog_names)

    def _rest_server(self, name: str, settings: StartOptions) -> RestServer:
        return RestServer(RestServices(
            session_name=name, job=self._job, summaries=self.dispatcher.all_summaries,
            taskmanagers=self.rm.infos, configuration=lambda: cluster_configuration(
                settings, self.spark, self.rest.url), sql_planner=lambda: self.flink_sql,
            sql_gateway=self.sql_gateway), self.key)

    def _job_status(self, job_id: str) -> JobStatus | None:
        """The status of a job in memory (the SQL Gateway's operations watch theirs)."""
        job = self.dispatcher.running(job_id)
        return job.status if job is not None else None

    def _catalog_names(self) -> list[str]:
        """The Flink SQL catalog's tables, views and functions (a worker thread's call)."""
        planner = self.flink_sql
        return [] if planner is None else [entry["name"] for entry in catalog_listing(planner)]

    def _overview(self, jobs: list[JobSummary], jobs_in_memory: int) -> ClusterOverview:
        return ClusterOverview(self.name, self.ready, self.settings.master_url, self.pid,
                               self.rm.infos(), jobs, self.settings.expected_taskmanagers,
                               self.startup_error, jobs_in_memory, self._cached_streams(),
                               self.warming_up)

    def _cached_streams(self) -> list[CachedStreamInfo]:
        return self.caches.infos(self.spark.sparkContext if self.spark is not None else None)

    # -- sending (loop thread only) -----------------------------------------------------------
    def reply(self, ident: list[bytes], msg: Message) -> None:
        self.signer.send(self.dispatcher_socket, msg, ident=ident)

    def _send_rm(self, ident: list[bytes], msg: Message) -> None:
        self.signer.send(self.rm_socket, msg, ident=ident)

    def publish(self, topic: str, msg: Message) -> None:
        self.signer.send(self.events_socket, msg, topic=topic.encode())

    # -- events for the jobs (loop thread) ------------------------------------------------------
    def _on_taskmanager_lost(self, tm_id: str, unresponsive: bool) -> None:
        """A lost TaskManager's subtasks fail over. One that stopped answering without dying
        (Flink's heartbeat timeout) is killed through Spark, which replaces the executor and
        runs its tasks again on the others."""
        if unresponsive and self.spark is not None:
            threading.Thread(target=kill_executor, args=(self.spark.sparkContext, tm_id),
                             name=f"kill-executor-{tm_id}", daemon=True).start()
        for job in list(self.dispatcher.jobs.values()):
            if not job.status.is_globally_terminal:
                job.on_taskmanager_lost(tm_id)

    def _on_task_events(self, events: list[TaskEvent]) -> None:
        for ev in events:
            job = self.dispatcher.running(ev.job_id)
            if job is not None and not job.status.is_globally_terminal:
                job.on_task_event(ev)

    def _spark_event_from_thread(self, event: SparkEvent) -> None:
        """The listener bridge's thread hands each event to the loop."""
        self.loop.call_soon_threadsafe(self.on_spark_event, event)

    def on_spark_event(self, event: SparkEvent) -> None:
        """One of Spark's listener events, from the bridge (via the loop)."""
        self.spark_handlers[type(event)](event)

    def _on_stage_submitted(self, ev: StageSubmitted) -> None:
        job = self.dispatcher.running(job_of_group(ev.job_group))
        if job is not None:
            self.stage_jobs[ev.stage_id] = job
            job.on_stage_submitted(ev)

    def _wants_stage_details(self, group: str | None) -> bool:
        """On the listener bridge's thread: whether the job of a Spark job group reads its
        stages' RDDs (a SQL job draws its JobGraph from them; a DataStream job has its own)."""
        job = self.dispatcher.running(job_of_group(group))
        return job is None or job.stage_details

    def _on_spark_job_started(self, ev: JobStarted) -> None:
        job = self.dispatcher.running(job_of_group(ev.job_group))
        if job is not None:
            job.on_spark_job_started(ev)

    def _on_spark_task_event(self, ev: TaskStarted | TaskEnded) -> None:
        job = self.stage_jobs.get(ev.stage_id)
        if job is not None and not job.status.is_globally_terminal:
            job.on_spark_task_event(ev)

    # -- serving ------------------------------------------------------------------------------
    async def _serve(self, sock: zmq.asyncio.Socket, handle: Any) -> None:
        while True:
            frames = await sock.recv_multipart()
            got = self.signer.unpack(frames)
            if got is None:
                continue
            try:
                handle(*got)
            except Exception:  # noqa: BLE001 - a bug in one handler must not stop the socket
                log.exception("handling %s failed", got[1].type)

    async def _heartbeat_monitor(self) -> None:
        while True:
            await asyncio.sleep(min(self.rm.heartbeat_interval, 1.0))
            self.rm.check_heartbeats()

    async def _watch_owner(self, owner: psutil.Process) -> None:
        while owner.is_running() and owner.status() != psutil.STATUS_ZOMBIE:
            await asyncio.sleep(0.5)
        log.warning("the client that owns this cluster (pid %d) is gone; stopping", owner.pid)
        self._stop_session_soon()

    async def _watch_stopped(self) -> None:
        """A standby of an HA session ends when the session is stopped."""
        assert self.ha is not None
        while not self._stopping:
            await asyncio.sleep(0.5)
            if self.epoch == 0 and await self.loop.run_in_executor(None, self.ha.stopped):
                log.info("session '%s' was stopped; standby JobManager %d exits", self.name,
                         self.pid)
                self._shutdown_soon()

    async def run(self) -> None:
        path = self.own_path
        self.rest.start(self.settings.bind)
        self.connection.write(path)
        if self.ha is not None:
            if not self.standby:
                self.ha.clear_stopped()
                HaConfig(self.ha.backend, self.settings.zookeeper_quorum or "", self.key,
                         self.settings.argv()).write(self.name)
            self.ha.start_leader_election(self)
            self.background.start(self._watch_stopped())
        self.background.start(self._serve(self.dispatcher_socket, self.dispatcher.handle))
        self.background.start(self._serve(self.rm_socket, self.rm.handle))
        self.background.start(self._heartbeat_monitor())
        if self.owner is not None:
            self.background.start(self._watch_owner(self.owner))
        self.background.start(self._start_or_report(path))
        await self.stopped.wait()  # a stop during start-up does not wait for Spark
        self.dispatcher.background.cancel_all()
        self.background.cancel_all()

    async def _start_or_report(self, path: Path) -> None:
        try:
            await self._start_cluster(path)
        except Exception as exc:  # noqa: BLE001 - reported to clients through the overview
            log.exception("session cluster failed to start")
            self.startup_error = f"{type(exc).__name__}: {exc}"
            self.loop.call_later(30.0, lambda: self.background.start(self.shutdown()))

    async def _start_cluster(self, path: Path) -> None:
        t0 = time.monotonic()
        self.spark = await self.loop.run_in_executor(None, start_spark, self.settings, str(path))
        self.flink_sql = FlinkSqlPlanner(self.spark)
        sc = self.spark.sparkContext
        bridge = SparkListenerBridge(self._spark_event_from_thread, self._wants_stage_details)
        await self.loop.run_in_executor(None, add_listener, sc, bridge)
        expected = self.settings.expected_taskmanagers
        await self.loop.run_in_executor(None, wait_for_executors, sc, expected)
        log.info("Spark up with %d executors in %.1f s", expected, time.monotonic() - t0)
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while len(self.rm.taskmanagers) < expected:
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {len(self.rm.taskmanagers)} of {expected} TaskManagers "
                                   "registered: is spark.python.daemon.module honoured?")
            await self.loop.run_in_executor(None, warm_up, sc, expected * self.settings.slots)
            for _ in range(40):
                if len(self.rm.taskmanagers) >= expected:
                    break
                await asyncio.sleep(0.05)
        self.ready = True
        log.info("session '%s' ready in %.1f s with %d TaskManagers", self.name,
                 time.monotonic() - t0, len(self.rm.taskmanagers))
        if self.ha is not None:
            self._take_over()
        if self.application is not None:
            self.loop.call_later(SUBMIT_TIMEOUT, self._no_application)
        elif self.owner is None:
            # a session that lives on (not a per-job cluster): its first STREAMING job comes warm
            self.warming_up = True
            self.background.start(self._warm_streaming())

    async def _warm_streaming(self) -> None:
        try:
            seconds = await self.loop.run_in_executor(
                None, warm_up_streaming, self.spark, self.dir / "warm-up",
                lambda: self._stopping, self._has_running_job)
            log.info("STREAMING warm-up done in %.1f s", seconds)
        except Exception:  # noqa: BLE001 - the session works without it, colder
            if not self._stopping:  # else Spark stopped under it
                log.warning("the STREAMING warm-up failed", exc_info=True)
        finally:
            self.warming_up = False

    def _has_running_job(self) -> bool:
        """Whether a job of the session runs (read from the warm-up's thread: a snapshot)."""
        return any(not job.status.is_globally_terminal
                   for job in list(self.dispatcher.jobs.values()))

    def _no_application(self) -> None:
        """An application cluster whose client never sent the program: do not linger."""
        if self.application is not None and self.application.status is None:
            log.error("no application was submitted within %.0f s; stopping", SUBMIT_TIMEOUT)
            self._stop_session_soon()

    def on_executor_added(self, executor_id: str) -> None:
        """A replacement executor (after a lost one): warm it so it registers as a TaskManager."""
        if self.ready and executor_id not in self.rm.taskmanagers:
            self.background.start(self._warm_new_executor(executor_id))

    async def _warm_new_executor(self, executor_id: str) -> None:
        sc = self.spark.sparkContext
        for _ in range(5):
            await self.loop.run_in_executor(None, wait_for_executors, sc,
                                            self.settings.expected_taskmanagers, 60.0)
            if executor_id in self.rm.taskmanagers or self.stopped.is_set():
                return
            tasks = max(len(self.rm.taskmanagers) + 1, 1) * self.settings.slots
            await self.loop.run_in_executor(None, warm_up, sc, tasks)
            for _ in range(20):
                if executor_id in self.rm.taskmanagers:
                    return
                await asyncio.sleep(0.05)
        log.warning("executor %s did not register as a TaskManager", executor_id)

    def _shutdown_soon(self) -> None:
        self.background.start(self.shutdown())

    def _stop_session_soon(self) -> None:
        """The session is stopped (StopCluster, the end of an application or of a per-job
        cluster's client): in an HA session, its standbys exit rather than take over."""
        self.background.start(self.shutdown(stop_session=True))

    async def shutdown(self, stop_session: bool = False) -> None:
        """Stop this JobManager. Without HA, or with ``stop_session``, its jobs are cancelled;
        a leader of an HA session that stops alone (SIGTERM) suspends them for a standby."""
        if self._stopping:
            return
        self._stopping = True
        leader = self.epoch > 0
        log.info("stopping %s of session '%s'", "JobManager" if self.ha else "the session",
                 self.name)
        self.ready = False
        if self.ha is not None:
            if stop_session and self.epoch > 0:
                self.ha.mark_stopped()
            elif self.epoch > 0:
                log.warning("leader %d stops alone: its jobs are suspended for a standby",
                            self.pid)
                self.epoch = 0
                self.dispatcher.suspend_all()
        if self.application is not None:
            await self.application.stop()  # main first, so that it submits nothing more
        for job in list(self.dispatcher.jobs.values()):
            job.cancel()
        self.sql_gateway.close()
        await asyncio.sleep(0.1)  # let replies and events leave
        self.rest.stop()
        if self.spark is not None:
            try:
                await asyncio.wait_for(self.loop.run_in_executor(None, self.spark.stop), 30.0)
            except asyncio.TimeoutError:
                log.warning("Spark did not stop within 30 s; exiting anyway")
        try:
            path = connection_path(self.name)
            if ConnectionInfo.read(path).jobmanager_pid == self.pid:
                path.unlink()
        except (OSError, ValueError, TypeError):
            pass
        if self.ha is not None:
            if leader:  # a standby never writes the store
                self._compact_catalog_log()
            self.own_path.unlink(missing_ok=True)
            self.ha.close()
        self.stopped.set()

    def _compact_catalog_log(self) -> None:
        """A clean shutdown leaves the catalog log compacted (a leader's, of a session that
        goes on or not: a later leader replays a snapshot)."""
        if self.catalog_log is None or self.ha is None:
            return
        try:
            self.catalog_log.compact()
        except Exception:  # noqa: BLE001 - the log stays as it is, replayable
            log.warning("could not compact the catalog log", exc_info=True)


def job_of_group(group: str | None) -> str | None:
    """The job id of a Spark job group (``<job id>`` or ``<job id>-<run>``)."""
    return group.split("-", 1)[0] if group else None


def _warm_task(index: int, it: Any) -> Any:
    """Runs in a slot worker: loads the Task code and checks the TaskManager hook is there."""
    import time as _time

    from sessioncluster.taskmanager.slotworker import SlotWorker

    SlotWorker.current()
    _time.sleep(0.2)  # long enough that the tasks spread over every executor's slots
    yield os.getpid()


def warm_up(sc: Any, tasks: int) -> list[int]:
    """A warm-up job with one task per slot: starts every TaskManager and its slot workers."""
    sc.setJobGroup("warm-up", "sessioncluster warm-up")
    return sc.parallelize(range(tasks), tasks).mapPartitionsWithIndex(_warm_task).collect()


def build_parser() -> argparse.ArgumentParser:
    """The JobManager's command line: the start options."""
    p = argparse.ArgumentParser(prog="python -m sessioncluster.jobmanager")
    StartOptions.add_arguments(p)
    p.add_argument("--application", action="store_true",
                   help="application mode: run the one program a client uploads, then stop")
    p.add_argument("--owner", type=int, default=None, metavar="PID",
                   help="per-job mode: stop when this process (the client) is gone")
    p.add_argument("--standby", action="store_true",
                   help="HA: join the session as a standby JobManager (sessioncluster "
                        "start-standby)")
    return p


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    options = StartOptions.from_namespace(args)
    key = os.environ.get("SESSIONCLUSTER_KEY")
    if options.bind not in ("127.0.0.1", "localhost", "::1") and not key:
        sys.exit(f"refusing to bind {options.bind}: a non-loopback address needs an explicit key in "
                 "SESSIONCLUSTER_KEY (e.g. `export SESSIONCLUSTER_KEY=$(openssl rand -hex 32)`)")
    if key is not None and len(key) < MIN_KEY_CHARS:
        sys.exit(f"SESSIONCLUSTER_KEY must be at least {MIN_KEY_CHARS} characters "
                 "(e.g. `openssl rand -hex 32`)")
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    jobmanager = JobManager(options, key=os.environ.pop("SESSIONCLUSTER_KEY", None),
                            application=args.application, owner=args.owner,
                            standby=args.standby)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: jobmanager.background.start(jobmanager.shutdown()))
    try:
        loop.run_until_complete(jobmanager.run())
    finally:
        jobmanager.ctx.destroy(linger=500)
    # py4j and Spark leave non-daemon threads behind; the process is done.
    os._exit(0)
