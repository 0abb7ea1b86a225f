"""The Spark driver inside the JobManager: one warm SparkSession and the listener bridge."""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

from ..taskmanager.daemon import CONNECTION_ENV, SLOTS_ENV

log = logging.getLogger("sessioncluster.spark")


@dataclass(slots=True)
class SparkSettings:
    taskmanagers: int = 2
    slots: int = 1
    memory_mb: int = 1024
    master: str | None = None
    #: attempts per task before the job fails (Flink's restart strategy, on Spark's retries)
    task_attempts: int = 2
    bind: str = "127.0.0.1"

    @property
    def spark_master(self) -> str:
        if self.master:
            return self.master
        if self.taskmanagers == 0:
            return f"local[{self.slots},{self.task_attempts}]"
        return f"local-cluster[{self.taskmanagers},{self.slots},{self.memory_mb}]"

    @property
    def expected_taskmanagers(self) -> int:
        return self.taskmanagers if self.taskmanagers > 0 or self.master else 1


def start_spark(settings: SparkSettings, connection_file: str) -> Any:
    """A SparkSession whose executors' Python side is our TaskManager daemon."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ["SPARK_LOCAL_IP"] = settings.bind
    # In local mode the executor is the driver JVM, which inherits this environment.
    os.environ[CONNECTION_ENV] = connection_file
    os.environ[SLOTS_ENV] = str(settings.slots)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(settings.spark_master)
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
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # Detect a lost executor in seconds, not minutes.
        .config("spark.executor.heartbeatInterval", "1s")
        .config("spark.network.timeout", "10s")
        .config("spark.network.timeoutInterval", "5s")
        .config("spark.storage.blockManagerHeartbeatTimeoutMs", "10000")
        .config("spark.locality.wait", "0")
        # A cancelled task's Python worker is killed this soon if it does not stop by itself.
        .config("spark.python.task.killTimeout", "200ms")
    )
    if settings.taskmanagers > 0 and not settings.master:
        builder = builder.config("spark.executor.memory", f"{settings.memory_mb}m")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


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
    """A py4j SparkListener: forwards the events the JobMasters need as plain values.

    ``on_event(name, **fields)`` is called on a py4j callback thread; it must hand the event
    over to the JobManager's loop and return quickly.
    """

    def __init__(self, on_event: Callable[..., None]) -> None:
        self.on_event = on_event

    def onStageSubmitted(self, ev: Any) -> None:  # noqa: N802 - Java interface names
        try:
            info = ev.stageInfo()
            props = ev.properties()
            group = props.getProperty("spark.jobGroup.id") if props is not None else None
            self.on_event("stage_submitted", stage_id=info.stageId(), job_group=group)
        except Exception:  # noqa: BLE001 - never throw into Spark's listener bus
            log.exception("listener bridge: stage submitted")

    def onTaskStart(self, ev: Any) -> None:  # noqa: N802
        try:
            ti = ev.taskInfo()
            self.on_event("task_start", stage_id=ev.stageId(), spark_task_id=ti.taskId(),
                          subtask=ti.index(), spark_attempt=ti.attemptNumber(),
                          executor_id=ti.executorId(), time=ti.launchTime() / 1000.0)
        except Exception:  # noqa: BLE001
            log.exception("listener bridge: task start")

    def onTaskEnd(self, ev: Any) -> None:  # noqa: N802
        try:
            ti = ev.taskInfo()
            reason = ev.reason()
            reason_name = reason.getClass().getSimpleName()
            text = "" if reason_name.startswith("Success") else str(reason.toString())
            self.on_event("task_end", stage_id=ev.stageId(), spark_task_id=ti.taskId(),
                          subtask=ti.index(), spark_attempt=ti.attemptNumber(),
                          executor_id=ti.executorId(), reason=reason_name, text=text,
                          time=ti.finishTime() / 1000.0)
        except Exception:  # noqa: BLE001
            log.exception("listener bridge: task end")

    def onExecutorRemoved(self, ev: Any) -> None:  # noqa: N802
        try:
            self.on_event("executor_removed", executor_id=ev.executorId(), reason=ev.reason())
        except Exception:  # noqa: BLE001
            log.exception("listener bridge: executor removed")

    def onExecutorAdded(self, ev: Any) -> None:  # noqa: N802
        try:
            self.on_event("executor_added", executor_id=ev.executorId())
        except Exception:  # noqa: BLE001
            log.exception("listener bridge: executor added")

    # The rest of SparkListenerInterface: not needed, but py4j must find every method.
    def _ignore(self, ev: Any) -> None:
        pass

    onApplicationEnd = onApplicationStart = onBlockManagerAdded = onBlockManagerRemoved = _ignore
    onBlockUpdated = onEnvironmentUpdate = onExecutorBlacklisted = _ignore
    onExecutorBlacklistedForStage = onExecutorExcluded = onExecutorExcludedForStage = _ignore
    onExecutorMetricsUpdate = onExecutorUnblacklisted = onExecutorUnexcluded = _ignore
    onJobEnd = onJobStart = onNodeBlacklisted = onNodeBlacklistedForStage = _ignore
    onNodeExcluded = onNodeExcludedForStage = onNodeUnblacklisted = onNodeUnexcluded = _ignore
    onOtherEvent = onResourceProfileAdded = onSpeculativeTaskSubmitted = _ignore
    onStageCompleted = onStageExecutorMetrics = onTaskGettingResult = onUnpersistRDD = _ignore
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
