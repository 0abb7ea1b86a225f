"""The Spark driver inside the JobManager: one warm SparkSession and the listener bridge."""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
import time
from typing import Any, Callable

from ..api.checkpoint_config import INCREMENTAL
from ..options import StartOptions
from ..taskmanager.daemon import CONNECTION_ENV, SLOTS_ENV
from . import cds
from .events import (
    ExecutorAdded,
    ExecutorRemoved,
    JobStarted,
    SparkEvent,
    StageSubmitted,
    TaskEnded,
    TaskStarted,
)

log = logging.getLogger("sessioncluster.spark")

#: Spark's RocksDB changelog checkpointing: a stateful micro-batch's commit writes its changes,
#: and snapshots are made in the background (Flink's incremental checkpoints, off by default as
#: Flink's: on this machine it did not shorten a micro-batch, docs/benchmarks.md section 10)
CHANGELOG_CHECKPOINTING = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"

#: Options of every JVM of the session on this machine. Without ``-XX:-UsePerfData`` each JVM's
#: sampler thread updates its hsperfdata file 20 times a second, for jps and jstat only: a
#: driver and two executors idled at 0.94-1.08 % of a core with it and 0.75-0.78 % without it
#: (docs/benchmarks.md, section 7c).
IDLE_JAVA_OPTIONS = "-XX:-UsePerfData"


def start_spark(settings: StartOptions, connection_file: str) -> Any:
    """A SparkSession whose executors' Python side is our TaskManager daemon."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ["SPARK_LOCAL_IP"] = settings.bind
    # In local mode the executor is the driver JVM, which inherits this environment.
    os.environ[CONNECTION_ENV] = connection_file
    os.environ[SLOTS_ENV] = str(settings.slots)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(settings.master_url)
        .appName("sessioncluster")
        .config("spark.python.use.daemon", "true")
        .config("spark.python.daemon.module", "sessioncluster.taskmanager.daemon")
        .config("spark.python.worker.reuse", "true")
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        .config(f"spark.executorEnv.{CONNECTION_ENV}", connection_file)
        .config(f"spark.executorEnv.{SLOTS_ENV}", str(settings.slots))
        .config("spark.driver.host", settings.bind)
        .config("spark.driver.bindAddress", settings.bind)
        .config("spark.scheduler.mode", "FAIR")
        .config("spark.task.maxFailures", str(settings.task_attempts))
        .config("spark.driver.maxResultSize", f"{settings.max_result_mb}m")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # Arrow batches into Python bounded by bytes too, not only by 10,000 records: a
        # record may be a whole Arrow table (a file copy's rows).
        .config("spark.sql.execution.arrow.maxBytesPerBatch", str(64 << 20))
        # A hung executor is lost after 30 s, not Spark's 120 s (a dead one at once: its
        # Worker or cluster manager reports the exit). Heartbeats every 10 s, Spark's default:
        # every 3 s, three JVMs idled at 1.39 % of a core against 0.87 % (benchmarks.md, 7c).
        .config("spark.executor.heartbeatInterval", "10s")
        .config("spark.network.timeout", "30s")
        .config("spark.network.timeoutInterval", "5s")
        .config("spark.storage.blockManagerHeartbeatTimeoutMs", "30000")
        .config("spark.locality.wait", "0")
        # Offers are revived on every submit, task end and failure anyway; with no locality
        # wait, the 1 s periodic revive only costs idle CPU.
        .config("spark.scheduler.revive.interval", "5s")
        # A cancelled task's Python worker is killed this soon if it does not stop by itself.
        .config("spark.python.task.killTimeout", "200ms")
    )
    if settings.taskmanagers > 0 and not settings.spark_master:
        builder = builder.config("spark.executor.memory", f"{settings.memory}m")
    for key, value in {**cluster_conf(settings), **java_options(settings)}.items():
        builder = builder.config(key, value)
    # pyspark's launcher passes these as --conf to spark-submit, whose launcher puts
    # spark.driver.extraJavaOptions on the driver JVM's command line (client mode)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def java_options(settings: StartOptions) -> dict[str, str]:
    """The extra options of the JVMs on this machine: the driver's, and the executors' on
    ``local-cluster``: :data:`IDLE_JAVA_OPTIONS`, and the class-data-sharing archive
    (:mod:`.cds`) unless it is turned off or cannot be used for this start."""
    driver = executor = IDLE_JAVA_OPTIONS
    plan = _archive_plan(settings)
    if plan.mode == "use":
        driver, executor = f"{driver} {plan.driver_options}", f"{executor} {plan.executor_options}"
    conf = {"spark.driver.extraJavaOptions": driver}
    if settings.master_url.startswith("local-cluster"):
        conf["spark.executor.extraJavaOptions"] = executor
    return conf


def _archive_plan(settings: StartOptions) -> cds.ArchivePlan:
    if not settings.class_data_sharing:
        log.info("class-data sharing: off (--no-class-data-sharing)")
        return cds.ArchivePlan("off", reason="--no-class-data-sharing")
    try:
        plan = cds.plan()
    except Exception as exc:  # noqa: BLE001 - a start never fails for want of the archive
        plan = cds.ArchivePlan("off", reason=f"{type(exc).__name__}: {exc}")
    if plan.mode == "use":
        log.info("class-data sharing: the JVMs start from %s", plan.path)
    else:
        log.info("class-data sharing: off for this start (%s)", plan.reason)
    return plan


def executor_python_path() -> str:
    """The PYTHONPATH for executors a cluster manager starts with an environment of its own:
    the directory this JobManager imported ``sessioncluster`` from first, unless that is a
    site-packages directory (so that its TaskManagers run the same code, also when it is not
    pip-installed there), then the JobManager's own PYTHONPATH. A directory missing on an
    executor's machine is skipped by Python, which then imports its installed one."""
    import site

    # the directory holding the package sessioncluster/ (this file is sessioncluster/spark/driver.py)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # installed in site-packages: every Python of that install finds it without help (and a
    # site-packages directory must not be put in front of another Python's own)
    installed = {os.path.abspath(d) for d in [*site.getsitepackages(), site.getusersitepackages()]}
    parts = [*([] if here in installed else [here]),
             *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    return os.pathsep.join(dict.fromkeys(p for p in parts if p))


def cluster_conf(settings: StartOptions) -> dict[str, str]:
    """Spark settings for a real cluster manager (``--spark-master`` spark://, yarn, k8s://):
    T executors of S cores and M MB each (one TaskManager of S slots per executor), and the
    environment the TaskManager hook needs on executors that do not inherit the JobManager's.
    ``local``/``local-cluster`` executors inherit it and need none of this."""
    if not settings.spark_master or settings.spark_master.startswith("local"):
        return {}
    conf = {
        "spark.executor.instances": str(settings.taskmanagers),  # YARN, Kubernetes
        "spark.executor.cores": str(settings.slots),
        "spark.cores.max": str(settings.taskmanagers * settings.slots),  # standalone
        "spark.executor.memory": f"{settings.memory}m",
        "spark.executorEnv.PYTHONPATH": executor_python_path(),
    }
    for name in ("SESSIONCLUSTER_LIBRARY_CACHE_BYTES", "SESSIONCLUSTER_VALIDATE"):
        if name in os.environ:
            conf[f"spark.executorEnv.{name}"] = os.environ[name]
    return conf


def executor_count(sc: Any) -> int:
    """Executors registered with the driver, the driver itself not counted (local: 1)."""
    n = sc._jsc.sc().getExecutorMemoryStatus().size()
    return max(n - 1, 1) if sc.master.startswith("local[") else n - 1


def wait_for_executors(sc: Any, expected: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while executor_count(sc) < expected:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {executor_count(sc)} of {expected} executors registered")
        time.sleep(0.05)


class SparkListenerBridge:
    """A py4j SparkListener: forwards the events the JobManager needs as typed values
    (:mod:`.events`).

    Spark calls it on py4j callback threads; it only queues the Java event. One extractor
    thread, which keeps its own JVM connection, reads the fields (each a py4j call) and hands
    ``on_event(event)`` to the caller, which must pass it to the JobManager's loop.
    """

    def __init__(self, on_event: Callable[[SparkEvent], None],
                 stage_details: Callable[[str | None], bool] = lambda group: True) -> None:
        self.on_event = on_event
        #: whether the job of a Spark job group needs its stages' names, parents and RDDs (a
        #: py4j call each); without them a StageSubmitted carries its id and group only
        self.stage_details = stage_details
        self._queue: queue.SimpleQueue[tuple[Callable[[Any], SparkEvent], Any]] = queue.SimpleQueue()
        threading.Thread(target=self._extract_forever, name="SparkListenerBridge",
                         daemon=True).start()

    def _extract_forever(self) -> None:
        while True:
            make, ev = self._queue.get()
            try:
                event = make(ev)
            except Exception:  # noqa: BLE001 - a bad event must not stop the bridge
                log.exception("listener bridge: %s", make.__name__)
                continue
            self.on_event(event)

    def stage_submitted(self, ev: Any) -> StageSubmitted:
        info, props = ev.stageInfo(), ev.properties()
        group = props.getProperty("spark.jobGroup.id") if props is not None else None
        if not self.stage_details(group):
            return StageSubmitted(int(info.stageId()), group, "", 0)
        parents = info.parentIds()  # a Scala Seq of boxed ints
        # The stage's RDDs and the RDDs they read from other stages (over a shuffle): with
        # adaptive query execution a stage's parent ids name skipped copies of the stages that
        # really ran, but the RDDs on both sides of the shuffle are the same.
        rdd_ids: list[int] = []
        read_ids: list[int] = []
        rdds = info.rddInfos()
        for i in range(rdds.size()):
            rdd = rdds.apply(i)
            rdd_ids.append(int(rdd.id()))
            rdd_parents = rdd.parentIds()
            read_ids.extend(int(rdd_parents.apply(j)) for j in range(rdd_parents.size()))
        return StageSubmitted(int(info.stageId()), group, str(info.name()), int(info.numTasks()),
                              [int(parents.apply(i)) for i in range(parents.size())], rdd_ids,
                              sorted(set(read_ids) - set(rdd_ids)))

    @staticmethod
    def task_started(ev: Any) -> TaskStarted:
        ti = ev.taskInfo()
        return TaskStarted(int(ev.stageId()), int(ti.taskId()), int(ti.index()),
                           int(ti.attemptNumber()), str(ti.executorId()), ti.launchTime() / 1000.0)

    @staticmethod
    def task_ended(ev: Any) -> TaskEnded:
        ti, reason = ev.taskInfo(), ev.reason()
        reason_name = reason.getClass().getSimpleName().rstrip("$")  # Scala objects end in $
        text = "" if reason_name == "Success" else str(reason.toString())
        return TaskEnded(int(ev.stageId()), int(ti.taskId()), int(ti.index()),
                         int(ti.attemptNumber()), str(ti.executorId()), reason_name, text,
                         ti.finishTime() / 1000.0)

    @staticmethod
    def executor_removed(ev: Any) -> ExecutorRemoved:
        return ExecutorRemoved(str(ev.executorId()), str(ev.reason()))

    @staticmethod
    def executor_added(ev: Any) -> ExecutorAdded:
        return ExecutorAdded(str(ev.executorId()))

    @staticmethod
    def job_started(ev: Any) -> JobStarted:
        props = ev.properties()
        group = props.getProperty("spark.jobGroup.id") if props is not None else None
        return JobStarted(int(ev.jobId()), group)

    # SparkListenerInterface (Java names); called on py4j's callback threads.
    def onStageSubmitted(self, ev: Any) -> None:  # noqa: N802
        self._queue.put((self.stage_submitted, ev))

    def onTaskStart(self, ev: Any) -> None:  # noqa: N802
        self._queue.put((self.task_started, ev))

    def onTaskEnd(self, ev: Any) -> None:  # noqa: N802
        self._queue.put((self.task_ended, ev))

    def onExecutorRemoved(self, ev: Any) -> None:  # noqa: N802
        self._queue.put((self.executor_removed, ev))

    def onExecutorAdded(self, ev: Any) -> None:  # noqa: N802
        self._queue.put((self.executor_added, ev))

    def onJobStart(self, ev: Any) -> None:  # noqa: N802
        self._queue.put((self.job_started, ev))

    # The rest of SparkListenerInterface: not needed, but py4j must find every method. A stage's
    # or a Spark job's end is not read either (a py4j call per field): the tasks' own reports and
    # the Spark action's return tell the JobMaster all it needs.
    def _ignore(self, ev: Any) -> None:
        pass

    onStageCompleted = onJobEnd = _ignore
    onApplicationEnd = onApplicationStart = onBlockManagerAdded = onBlockManagerRemoved = _ignore
    onBlockUpdated = onEnvironmentUpdate = onExecutorBlacklisted = _ignore
    onExecutorBlacklistedForStage = onExecutorExcluded = onExecutorExcludedForStage = _ignore
    onExecutorMetricsUpdate = onExecutorUnblacklisted = onExecutorUnexcluded = _ignore
    onNodeBlacklisted = onNodeBlacklistedForStage = _ignore
    onNodeExcluded = onNodeExcludedForStage = onNodeUnblacklisted = onNodeUnexcluded = _ignore
    onOtherEvent = onResourceProfileAdded = onSpeculativeTaskSubmitted = _ignore
    onStageExecutorMetrics = onTaskGettingResult = onUnpersistRDD = _ignore
    onUnschedulableTaskSetAdded = onUnschedulableTaskSetRemoved = _ignore

    class Java:
        implements = ["org.apache.spark.scheduler.SparkListenerInterface"]


def add_listener(sc: Any, bridge: SparkListenerBridge) -> None:
    """Register ``bridge`` with Spark's listener bus through py4j's callback server."""
    from py4j.java_gateway import JavaObject

    gw = sc._gateway
    if "_callback_server" not in gw.__dict__ or gw._callback_server is None:
        params = gw.callback_server_parameters
        params.eager_load = True
        params.daemonize = True
        params.daemonize_connections = True
        params.port = 0
        gw.start_callback_server(params)
        port = gw._callback_server.server_socket.getsockname()[1]
        gw._callback_server.port = port
        gw._python_proxy_port = port
        jgws = JavaObject("GATEWAY_SERVER", gw._gateway_client)
        jgws.resetCallbackClient(jgws.getCallbackClient().getAddress(), port)
    sc._jsc.sc().addSparkListener(bridge)


def incremental_checkpoints(session: Any, configuration: Any) -> None:
    """A job's ``execution.checkpointing.incremental`` (``true``/``false``) on its own
    SparkSession's state commits; Spark's default (snapshots) when the job does not set it."""
    text = str(configuration.get(INCREMENTAL) or "").strip().lower()
    if not text:
        return
    if text not in ("true", "false"):
        raise ValueError(f"{INCREMENTAL} must be true or false, not {text!r}")
    session.conf.set(CHANGELOG_CHECKPOINTING, text)
