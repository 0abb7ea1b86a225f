"""Flink's metric queries: the metrics of the JobManager, a TaskManager, a job, a vertex and a
subtask, by Flink's metric names, and the two query forms of Flink's REST API.

- a collection (``/jobmanager/metrics``, ``/taskmanagers/:id/metrics``, ``/jobs/:id/metrics``,
  ``.../vertices/:vid/metrics``, ``.../subtasks/:idx/metrics``): without ``get`` the list of
  available metrics ``[{"id": name}]``; with ``?get=a,b`` their values ``[{"id", "value"}]``,
  values as text, unknown names left out (MetricCollectionResponseBody);
- an aggregate over several sources (``/taskmanagers/metrics``, ``/jobs/metrics``,
  ``.../subtasks/metrics``): with ``?get=a&agg=min,max`` ``[{"id", "min", "max", ...}]``
  (AggregatedMetricsResponseBody), every aggregation when ``agg`` is not given.

The processes here are Python processes and the executors' JVMs: ``Status.JVM.CPU.*`` and
``Status.JVM.Threads.Count`` are measured on the process (psutil); its resident memory is our
``Status.Process.Memory.RSS`` (a JVM's heap figures are not known to us).
"""

from __future__ import annotations

import time
from typing import Any, Iterable

import psutil

from ...protocol.messages import ExecutionInfo, JobDetails, TaskManagerInfo
from .payloads import current_input_watermark, latest_attempts, records

#: metric values by name: a count or a watermark stays an int (2**63 - 1 is no float)
Metrics = dict[str, int | float]
AGGREGATIONS = ("min", "max", "avg", "sum", "skew")

#: one psutil.Process per pid, so that cpu_percent measures since the last query
_PROCESSES: dict[int, psutil.Process] = {}


def process_metrics(pid: int) -> Metrics:
    """Flink's process metrics of one process; {} when it is gone."""
    proc = _PROCESSES.get(pid)
    try:
        if proc is None:
            proc = _PROCESSES[pid] = psutil.Process(pid)
        with proc.oneshot():
            cpu = proc.cpu_times()
            return {"Status.JVM.CPU.Load": proc.cpu_percent(None) / 100.0,
                    "Status.JVM.CPU.Time": int((cpu.user + cpu.system) * 1e9),
                    "Status.JVM.Threads.Count": proc.num_threads(),
                    "Status.Process.Memory.RSS": proc.memory_info().rss}
    except (psutil.Error, ValueError):
        _PROCESSES.pop(pid, None)
        return {}


def jobmanager_metrics(pid: int, taskmanagers: list[TaskManagerInfo], running_jobs: int) -> Metrics:
    """The JobManager's metrics: its process and Flink's cluster metrics."""
    live = [tm for tm in taskmanagers if tm.state != "LOST"]
    out = process_metrics(pid)
    out.update({"numRegisteredTaskManagers": len(live),
                "numRunningJobs": running_jobs,
                "taskSlotsTotal": sum(tm.slots for tm in live),
                "taskSlotsAvailable": sum(tm.slots - tm.slots_used for tm in live)})
    return out


def taskmanager_metrics(tm: TaskManagerInfo) -> Metrics:
    """A TaskManager's metrics: its executor's JVM process and its slots."""
    out = process_metrics(tm.jvm_pid) if tm.jvm_pid else {}
    out.update({"Status.Slots.Total": tm.slots,
                "Status.Slots.Free": tm.slots - tm.slots_used})
    return out


def job_metrics(details: JobDetails) -> Metrics:
    """A job's metrics (Flink's job-level names: uptime, restarts, checkpoints)."""
    s = details.summary
    running_since = (details.status_times or {}).get("RUNNING")
    uptime = 0.0
    if running_since and not s.status.is_globally_terminal:
        uptime = (time.time() - running_since) * 1000
    info = details.streaming or {}
    attempts = [ex.attempt for ex in details.executions]
    out: Metrics = {"uptime": int(uptime), "downtime": 0,
                    "numRestarts": int(info.get("restarts", max(attempts, default=0)))}
    if details.streaming is not None:
        history = [c for c in info.get("checkpoints", []) if c.status == "COMPLETED"]
        by_status = info.get("counts", {})
        out.update({"numberOfCompletedCheckpoints": int(by_status.get("completed", 0)),
                    "numberOfFailedCheckpoints": int(by_status.get("failed", 0)),
                    "numberOfInProgressCheckpoints": 0,
                    "totalNumberOfCheckpoints": sum(by_status.values()),
                    "lastCheckpointDuration": int(history[-1].duration_ms if history else -1),
                    "lastCheckpointSize": int(history[-1].state_size if history else -1)})
    return out


def subtask_metrics(details: JobDetails, ex: ExecutionInfo) -> Metrics:
    """A subtask's metrics (its latest attempt): records, watermark, back pressure."""
    records_in, records_out = records(ex)
    return {"numRecordsIn": records_in, "numRecordsOut": records_out,
            "currentInputWatermark": current_input_watermark(details, ex),
            "isBackPressured": 0, "backPressuredTimeMsPerSecond": 0}


def vertex_subtask_metrics(details: JobDetails, vertex_id: str) -> list[Metrics]:
    """Each subtask's metrics of one vertex, by subtask index."""
    return [subtask_metrics(details, ex) for ex in latest_attempts(details, vertex_id)]


def vertex_metrics(details: JobDetails, vertex_id: str) -> Metrics:
    """A vertex's metrics as Flink names them: ``<subtask>.<metric>`` for each subtask."""
    out: Metrics = {}
    for ex in latest_attempts(details, vertex_id):
        for name, value in subtask_metrics(details, ex).items():
            out[f"{ex.subtask}.{name}"] = value
    return out


def _text(value: int | float) -> str:
    return str(int(value)) if isinstance(value, int) or value.is_integer() else str(value)


def _names(query: str | None) -> list[str] | None:
    if query is None:
        return None
    return [n.strip() for n in query.split(",") if n.strip()]


def collection(metrics: Metrics, get: str | None) -> list[dict[str, str]]:
    """Flink's MetricCollectionResponseBody of one source's metrics for ``?get=``."""
    names = _names(get)
    if names is None:
        return [{"id": name} for name in sorted(metrics)]
    return [{"id": name, "value": _text(metrics[name])} for name in names if name in metrics]


def aggregate(sources: Iterable[Metrics], get: str | None, agg: str | None
              ) -> list[dict[str, Any]]:
    """Flink's AggregatedMetricsResponseBody over several sources for ``?get=&agg=``; a ValueError
    names an aggregation Flink does not have."""
    sources = list(sources)
    names = _names(get)
    if names is None:
        return [{"id": name} for name in sorted({n for m in sources for n in m})]
    modes = [m.lower() for m in (_names(agg) or AGGREGATIONS)]
    unknown = [m for m in modes if m not in AGGREGATIONS]
    if unknown:
        raise ValueError(f"Invalid aggregation: {', '.join(unknown)} (one of "
                         f"{', '.join(a.upper() for a in AGGREGATIONS)})")
    out = []
    for name in names:
        values = [m[name] for m in sources if name in m]
        if not values:
            continue
        avg = sum(values) / len(values)
        top = max(values)
        figures = {"min": float(min(values)), "max": float(top), "avg": float(avg),
                   "sum": float(sum(values)), "skew": float((top - avg) / top * 100) if top else 0.0}
        out.append({"id": name, **{mode: figures[mode] for mode in modes}})
    return out
