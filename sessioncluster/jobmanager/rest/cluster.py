"""Flink's bodies of the cluster's processes: the JobManager's configuration, environment, log
files and thread dump, and the TaskManagers (``/jobmanager/...``, ``/taskmanagers/...``)."""

from __future__ import annotations

import platform
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

import psutil

from ...protocol.messages import TaskManagerInfo
from .payloads import ms

#: Flink's GlobalConfiguration.SENSITIVE_KEYS: a key holding one of these shows its value hidden
SENSITIVE_KEYS = ("password", "secret", "fs.azure.account.key", "apikey", "auth-params",
                  "service-key", "token", "basic-auth", "jaas.config", "http-headers")
HIDDEN_VALUE = "******"
#: at most this much of a log file is sent
LOG_TAIL_BYTES = 1024 * 1024


def configuration_entries(config: dict[str, str]) -> list[dict[str, str]]:
    """Flink's ClusterConfigurationInfo: ``[{"key", "value"}]``, sensitive values hidden."""
    return [{"key": key, "value": HIDDEN_VALUE if any(s in key.lower() for s in SENSITIVE_KEYS)
             else str(value)} for key, value in sorted(config.items())]


def environment_info() -> dict[str, Any]:
    """Flink's EnvironmentInfo of this process: the runtime (Python here, in Flink's ``jvm``
    field) and its class path (``sys.path``)."""
    return {"jvm": {"version": f"{platform.python_implementation()} {platform.python_version()}",
                    "arch": platform.machine(), "options": list(getattr(sys, "orig_argv", sys.argv))},
            "classpath": [p for p in sys.path if p]}


def thread_dump() -> dict[str, Any]:
    """Flink's ThreadDumpInfo of this process: each thread's name and stack."""
    frames = sys._current_frames()
    infos = []
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or -1)
        stack = "".join(traceback.format_stack(frame)) if frame is not None else ""
        state = "RUNNABLE" if thread.is_alive() else "TERMINATED"
        head = f'"{thread.name}" {"daemon " if thread.daemon else ""}Id={thread.ident} {state}\n'
        infos.append({"threadName": thread.name, "stringifiedThreadInfo": head + stack})
    return {"threadInfos": infos}


def log_list(files: list[Path]) -> dict[str, Any]:
    """Flink's LogListInfo of some files: name, size and modification time (ms)."""
    logs = []
    for path in files:
        try:
            st = path.stat()
        except OSError:
            continue
        logs.append({"name": path.name, "size": st.st_size, "mtime": int(st.st_mtime * 1000)})
    return {"logs": logs}


def jobmanager_logs(directory: Path) -> list[Path]:
    """The JobManager's log files: every ``*.log`` in its session directory."""
    return sorted(p for p in directory.glob("*.log") if p.is_file())


def taskmanager_logs(tm: TaskManagerInfo) -> list[Path]:
    """The TaskManager's log files: its executor's ``stderr`` and ``stdout`` in the Spark work
    directory (the slot workers and the TaskManager agent write there too); [] once it is gone."""
    try:
        cwd = Path(psutil.Process(tm.jvm_pid).cwd())
    except (psutil.Error, ValueError):
        return []
    return [p for p in (cwd / "stderr", cwd / "stdout") if p.is_file()]


def taskmanager_log(tm: TaskManagerInfo) -> Path | None:
    """The TaskManager's log (its executor's ``stderr``); None once it is gone."""
    return next((p for p in taskmanager_logs(tm) if p.name == "stderr"), None)


def read_tail(path: Path) -> bytes:
    """The last :data:`LOG_TAIL_BYTES` of a file."""
    with open(path, "rb") as f:
        f.seek(max(0, path.stat().st_size - LOG_TAIL_BYTES))
        return f.read()


def taskmanager_info(tm: TaskManagerInfo) -> dict[str, Any]:
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
        "dataPort": -1, "jmxPort": -1, "timeSinceLastHeartbeat": ms(tm.last_heartbeat),
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


def taskmanager_details(tm: TaskManagerInfo) -> dict[str, Any]:
    """``GET /taskmanagers/:id`` (TaskManagerDetailsInfo): the info and its JVM metrics, which a
    Python TaskManager agent does not have (zeros)."""
    body = taskmanager_info(tm)
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
    return body


def cluster_configuration(settings: Any, spark: Any, rest_url: str) -> dict[str, str]:
    """The session's configuration by Flink's option names (and ``sessioncluster.*`` for ours),
    then its Spark configuration (``spark.*``): what ``/jobmanager/config`` lists."""
    parallelism = settings.parallelism or max(settings.taskmanagers, 1) * settings.slots
    config = {
        "jobmanager.rpc.address": settings.bind, "rest.address": settings.bind,
        "rest.port": rest_url.rsplit(":", 1)[-1] if rest_url else "",
        "taskmanager.numberOfTaskSlots": str(settings.slots),
        "taskmanager.memory.process.size": f"{settings.memory}m",
        "parallelism.default": str(parallelism),
        "high-availability.type": settings.ha or "NONE",
        "python.files": settings.py_files or "", "python.requirements": settings.requirements or "",
        "sessioncluster.session-name": settings.name,
        "sessioncluster.taskmanagers": str(settings.taskmanagers),
        "sessioncluster.task-attempts": str(settings.task_attempts),
        "sessioncluster.max-result-mb": str(settings.max_result_mb),
        "sessioncluster.result-store-mb": str(settings.result_store_mb)}
    if settings.zookeeper_quorum:
        config["high-availability.zookeeper.quorum"] = settings.zookeeper_quorum
    if settings.spark_master:
        config["sessioncluster.spark-master"] = settings.spark_master
    if spark is not None:
        try:
            config.update(dict(spark.sparkContext.getConf().getAll()))
        except Exception:  # noqa: BLE001 - Spark stopping: its settings are not listed
            pass
    return config
