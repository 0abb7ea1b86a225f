"""Flink's JSON bodies of a job, its vertices and subtasks, built from a :class:`JobDetails`.

Every function here is pure: it reads the JobMaster's view of a job and gives the body Flink's
handler of the same path gives (the field names of Flink's ``*Info`` classes), with no I/O.
"""

from __future__ import annotations

import time
from typing import Any

from ...api.functions import MAX_WATERMARK, MIN_WATERMARK
from ...graph.executiongraph import RECORDS_IN, RECORDS_OUT, SYSTEM_ACCUMULATORS
from ...graph.lifecycle import ExecutionState, JobStatus
from ...protocol.messages import ExecutionInfo, JobDetails, JobSummary, VertexInfo

#: Flink's ExecutionState names, in Flink's order: every count map has them all (RECONCILING,
#: a state of Flink's high availability, is never entered here)
FLINK_EXECUTION_STATES = ("CREATED", "SCHEDULED", "DEPLOYING", "RUNNING", "FINISHED", "CANCELING",
                          "CANCELED", "FAILED", "RECONCILING", "INITIALIZING")
TERMINAL_STATES = {"FINISHED", "CANCELED", "FAILED"}
#: Flink's JobStatus names (SUSPENDED and RECONCILING belong to high availability: never entered here)
FLINK_JOB_STATUSES = ("INITIALIZING", "CREATED", "RUNNING", "FAILING", "FAILED", "CANCELLING",
                      "CANCELED", "FINISHED", "RESTARTING", "SUSPENDED", "RECONCILING")


def ms(t: float | None) -> int:
    """Epoch seconds as Flink's epoch milliseconds; -1 for none."""
    return int(t * 1000) if t else -1


def duration(start: float | None, end: float | None) -> int:
    """Milliseconds from ``start`` to ``end`` (or now); -1 when it never started."""
    if not start:
        return -1
    return ms(end or time.time()) - ms(start)


def is_streaming(details: JobDetails) -> bool:
    return details.streaming is not None


def counts(infos: list[ExecutionInfo]) -> dict[str, int]:
    """Per ExecutionState, how many subtasks are in it (by their latest attempt)."""
    latest: dict[tuple[str, int], ExecutionInfo] = {}
    for ex in infos:
        key = (ex.vertex_id, ex.subtask)
        if key not in latest or ex.attempt >= latest[key].attempt:
            latest[key] = ex
    out = dict.fromkeys(FLINK_EXECUTION_STATES, 0)
    for ex in latest.values():
        out[ex.state.value] += 1
    return out


def latest_attempts(details: JobDetails, vertex_id: str) -> list[ExecutionInfo]:
    """The latest attempt of each subtask of a vertex, by subtask index."""
    latest: dict[int, ExecutionInfo] = {}
    for ex in details.executions:
        if ex.vertex_id != vertex_id:
            continue
        if ex.subtask not in latest or ex.attempt >= latest[ex.subtask].attempt:
            latest[ex.subtask] = ex
    return [latest[i] for i in sorted(latest)]


def attempts_of(details: JobDetails, vertex_id: str, subtask: int) -> list[ExecutionInfo]:
    """Every attempt of one subtask, oldest first."""
    return sorted((ex for ex in details.executions
                   if ex.vertex_id == vertex_id and ex.subtask == subtask), key=lambda e: e.attempt)


def times(ex: ExecutionInfo) -> tuple[float | None, float | None]:
    """When an attempt started (DEPLOYING, else its first state) and ended (a terminal state)."""
    st = ex.state_times
    start = st.get(ExecutionState.DEPLOYING.value) or st.get(ExecutionState.CREATED.value)
    end = next((st[s] for s in ("FINISHED", "CANCELED", "FAILED") if s in st), None)
    return start, end


def records(ex: ExecutionInfo) -> tuple[int, int]:
    """An attempt's records in and out."""
    accs = ex.accumulators
    return accs.get(RECORDS_IN, ("", 0))[1], accs.get(RECORDS_OUT, ("", 0))[1]


def user_accumulators(wire: dict[str, tuple[str, Any]]) -> list[dict[str, str]]:
    """Flink's UserAccumulator list of one attempt: name, type and value as text."""
    return [{"name": name, "type": type_name, "value": str(value)}
            for name, (type_name, value) in sorted(wire.items()) if name not in SYSTEM_ACCUMULATORS]


def accumulator_list(accumulators: dict[str, Any]) -> list[dict[str, str]]:
    """Flink's UserAccumulator list of values merged over subtasks."""
    return [{"name": name, "type": type(value).__name__, "value": str(value)}
            for name, value in sorted(accumulators.items())]


def vertex_accumulators(details: JobDetails, vertex_id: str) -> list[dict[str, str]]:
    """A vertex's user accumulators, added up over its subtasks' latest attempts (a number is
    summed; any other value is listed per subtask, as Flink cannot merge what it does not know)."""
    merged: dict[str, tuple[str, Any]] = {}
    for ex in latest_attempts(details, vertex_id):
        for name, (type_name, value) in ex.accumulators.items():
            if name in SYSTEM_ACCUMULATORS:
                continue
            if name in merged and isinstance(value, (int, float)) \
                    and isinstance(merged[name][1], (int, float)):
                merged[name] = (type_name, merged[name][1] + value)
            elif name in merged:
                merged[f"{name} ({ex.subtask})"] = (type_name, value)
            else:
                merged[name] = (type_name, value)
    return user_accumulators(merged)


def status_durations(ex: ExecutionInfo) -> dict[str, int]:
    """How long the attempt spent in each state it went through, in ms (the current one: so far)."""
    steps = sorted(ex.state_times.items(), key=lambda kv: kv[1])
    out = dict.fromkeys(FLINK_EXECUTION_STATES, 0)
    for (state, t), nxt in zip(steps, steps[1:] + [("", time.time())]):
        if state in TERMINAL_STATES:
            continue
        out[state] = int((nxt[1] - t) * 1000)
    return out


def io_metrics(records_in: int, records_out: int, complete: bool) -> dict[str, Any]:
    """Flink's IOMetricsInfo: we count records, not bytes."""
    return {"read-bytes": 0, "read-bytes-complete": complete, "write-bytes": 0,
            "write-bytes-complete": complete, "read-records": records_in,
            "read-records-complete": complete, "write-records": records_out,
            "write-records-complete": complete, "accumulated-backpressured-time": 0,
            "accumulated-idle-time": 0, "accumulated-busy-time": "NaN"}


def job_plan(details: JobDetails) -> dict[str, Any]:
    """Flink's JSON plan (JsonPlanGenerator): a node per JobVertex, with its inputs."""
    graph = details.job_graph
    nodes = []
    for v in graph.vertices:
        node: dict[str, Any] = {
            "id": v.vertex_id, "parallelism": v.parallelism, "operator": "",
            "operator_strategy": "", "description": " -> ".join(op.name for op in v.operators),
            "optimizer_properties": {}}
        if v.inputs:
            node["inputs"] = [{"num": i, "id": e.source, "ship_strategy": e.ship_strategy.value.upper(),
                               "exchange": "pipelined_bounded"} for i, e in enumerate(v.inputs)]
        nodes.append(node)
    return {"jid": details.summary.job_id, "name": details.summary.name,
            "type": "STREAMING" if is_streaming(details) else "BATCH", "nodes": nodes}


def _vertex_overview(v: VertexInfo, infos: list[ExecutionInfo]) -> dict[str, Any]:
    starts = [t for t in (times(ex)[0] for ex in infos) if t]
    ends = [times(ex)[1] for ex in infos]
    start = min(starts) if starts else None
    end = max(e for e in ends if e) if ends and all(ends) else None
    return {"id": v.vertex_id, "name": v.name, "maxParallelism": v.parallelism,
            "parallelism": v.parallelism, "status": v.state.value, "start-time": ms(start),
            "end-time": ms(end), "duration": duration(start, end), "tasks": counts(infos),
            "metrics": io_metrics(v.records_in, v.records_out, v.state is ExecutionState.FINISHED)}


def job_details_info(details: JobDetails) -> dict[str, Any]:
    """``GET /jobs/:jobid`` (JobDetailsInfo)."""
    s = details.summary
    by_vertex: dict[str, list[ExecutionInfo]] = {}
    for ex in details.executions:
        by_vertex.setdefault(ex.vertex_id, []).append(ex)
    vertices = [_vertex_overview(v, by_vertex.get(v.vertex_id, [])) for v in details.vertices]
    status_times = details.status_times or {}
    timestamps = {st: ms(status_times[st]) if status_times.get(st) else 0
                  for st in FLINK_JOB_STATUSES}
    if not timestamps["INITIALIZING"]:
        timestamps["INITIALIZING"] = ms(s.start_time)
    return {
        "jid": s.job_id, "name": s.name, "isStoppable": is_streaming(details),
        "state": s.status.value, "job-type": "STREAMING" if is_streaming(details) else "BATCH",
        "start-time": ms(s.start_time), "end-time": ms(s.end_time),
        "duration": duration(s.start_time, s.end_time), "maxParallelism": -1,
        "now": ms(time.time()), "timestamps": timestamps, "vertices": vertices,
        "status-counts": counts(details.executions), "plan": job_plan(details)}


def job_overview(summary: JobSummary, details: JobDetails | None) -> dict[str, Any]:
    """One job of ``GET /jobs/overview`` (JobDetails: lower-case task counts)."""
    by_state = counts(details.executions) if details is not None else \
        dict.fromkeys(FLINK_EXECUTION_STATES, 0)
    tasks = {"total": summary.tasks_total}
    tasks.update({state.lower(): n for state, n in by_state.items()})
    if details is None:
        tasks["finished"] = summary.tasks_finished
    # Flink 2's JobDetails: its CLI (`flink list`) refuses an entry without pending-operators
    # (operators of an adaptive graph not made yet: none here, as in a JobGraph made up front)
    mode = None if details is None else "STREAMING" if is_streaming(details) else "BATCH"
    return {"jid": summary.job_id, "name": summary.name, "jobType": mode,
            "schedulerType": {"STREAMING": "Default", "BATCH": "AdaptiveBatch"}.get(mode or ""),
            "start-time": ms(summary.start_time), "end-time": ms(summary.end_time),
            "duration": duration(summary.start_time, summary.end_time),
            "state": summary.status.value,
            "last-modification": ms(summary.end_time or summary.start_time), "tasks": tasks,
            "pending-operators": 0}


def job_config(details: JobDetails) -> dict[str, Any]:
    """``GET /jobs/:jobid/config`` (JobConfigInfo): the job's ExecutionConfig."""
    graph = details.job_graph
    restart = graph.restart_strategy
    return {"jid": details.summary.job_id, "name": details.summary.name,
            "execution-config": {
                "execution-mode": "PIPELINED",
                "restart-strategy": str(restart) if restart is not None
                else "Cluster level default restart strategy",
                "job-parallelism": max((v.parallelism for v in graph.vertices), default=1),
                "object-reuse-mode": False,
                "user-config": {str(k): str(v) for k, v in sorted(graph.configuration.items())}}}


def resource_requirements(details: JobDetails) -> dict[str, Any]:
    """``GET /jobs/:jobid/resource-requirements`` (JobResourceRequirementsBody): each vertex's
    parallelism, fixed here (there is no adaptive scheduler to rescale it)."""
    return {v.vertex_id: {"parallelism": {"lowerBound": v.parallelism, "upperBound": v.parallelism}}
            for v in details.vertices}


def subtask_attempt(ex: ExecutionInfo, host: str, others: list[dict[str, Any]] | None = None
                    ) -> dict[str, Any]:
    """Flink's SubtaskExecutionAttemptDetailsInfo of one attempt."""
    start, end = times(ex)
    body: dict[str, Any] = {
        "subtask": ex.subtask, "status": ex.state.value, "attempt": ex.attempt,
        "endpoint": host, "host": host, "start-time": ms(start), "start_time": ms(start),
        "end-time": ms(end), "duration": duration(start, end),
        "metrics": io_metrics(*records(ex), ex.state is ExecutionState.FINISHED),
        "taskmanager-id": ex.tm_id or "(unassigned)", "status-duration": status_durations(ex),
        # ours: the TaskManager slot the attempt ran in, and its Spark task
        "slot": ex.slot, "spark-task-id": ex.spark_task_id}
    if others is not None:
        body["other-concurrent-attempts"] = others
    return body


def subtask_times(details: JobDetails, vertex: VertexInfo, hosts: dict[str, str]) -> dict[str, Any]:
    """``GET .../vertices/:vid/subtasktimes`` (SubtasksTimesInfo)."""
    subtasks = []
    for ex in latest_attempts(details, vertex.vertex_id):
        start, end = times(ex)
        host = hosts.get(ex.tm_id or "", "")
        subtasks.append({"subtask": ex.subtask, "host": host, "endpoint": host,
                         "duration": duration(start, end),
                         "timestamps": {state: ms(t) for state, t in ex.state_times.items()}})
    return {"id": vertex.vertex_id, "name": vertex.name, "now": ms(time.time()),
            "subtasks": subtasks}


def vertex_taskmanagers(details: JobDetails, vertex: VertexInfo, hosts: dict[str, str]
                        ) -> dict[str, Any]:
    """``GET .../vertices/:vid/taskmanagers`` (JobVertexTaskManagersInfo): the vertex's subtasks
    (latest attempts) grouped by the TaskManager that ran them."""
    by_tm: dict[str, list[ExecutionInfo]] = {}
    for ex in latest_attempts(details, vertex.vertex_id):
        by_tm.setdefault(ex.tm_id or "(unassigned)", []).append(ex)
    out = []
    for tm_id, infos in sorted(by_tm.items()):
        starts = [t for t in (times(ex)[0] for ex in infos) if t]
        ends = [times(ex)[1] for ex in infos]
        start = min(starts) if starts else None
        end = max(e for e in ends if e) if all(ends) else None
        by_state = counts(infos)
        status = next((s for s in ("FAILED", "CANCELED", "RUNNING", "INITIALIZING", "DEPLOYING",
                                   "SCHEDULED", "CREATED", "CANCELING") if by_state[s]), "FINISHED")
        host = hosts.get(tm_id, "")
        complete = all(ex.state is ExecutionState.FINISHED for ex in infos)
        out.append({"endpoint": host, "host": host, "taskmanager-id": tm_id, "status": status,
                    "start-time": ms(start), "end-time": ms(end), "duration": duration(start, end),
                    "metrics": io_metrics(sum(records(ex)[0] for ex in infos),
                                          sum(records(ex)[1] for ex in infos), complete),
                    "status-counts": by_state})
    return {"id": vertex.vertex_id, "name": vertex.name, "now": ms(time.time()),
            "taskmanagers": out}


def current_input_watermark(details: JobDetails, ex: ExecutionInfo) -> int:
    """A subtask's current input watermark (ms): in STREAMING the job's watermark, which Spark
    keeps one of per query; a finished subtask has seen the end of its input (Flink's
    MAX_WATERMARK, which BATCH emits at the end of input too); before any, Long.MIN_VALUE."""
    if ex.state is ExecutionState.FINISHED:
        return MAX_WATERMARK
    if is_streaming(details) and ex.state is ExecutionState.RUNNING:
        mark = (details.streaming or {}).get("watermark")
        return int(mark) if mark is not None else MIN_WATERMARK
    return MIN_WATERMARK


def watermarks(details: JobDetails, vertex_id: str) -> list[dict[str, str]]:
    """``GET .../vertices/:vid/watermarks`` (MetricCollectionResponseBody): per subtask."""
    return [{"id": f"{ex.subtask}.currentInputWatermark",
             "value": str(current_input_watermark(details, ex))}
            for ex in latest_attempts(details, vertex_id)]


def backpressure(details: JobDetails, vertex_id: str) -> dict[str, Any]:
    """``GET .../vertices/:vid/backpressure`` (JobVertexBackPressureInfo). A subtask here never
    waits on a full output buffer (Spark writes shuffle output to disk; a micro-batch's stages
    run one after the other), so the ratio is 0 and the level "ok". The body is "ok" while the
    vertex has running subtasks, else "deprecated" (Flink's answer when no current sample is)."""
    latest = latest_attempts(details, vertex_id)
    live = any(ex.state is ExecutionState.RUNNING for ex in latest)
    return {"status": "ok" if live else "deprecated", "backpressure-level": "ok",
            "end-timestamp": ms(time.time()),
            "subtasks": [{"subtask": ex.subtask, "attempt-number": ex.attempt,
                          "backpressure-level": "ok", "ratio": 0.0, "idleRatio": 0.0,
                          "busyRatio": 0.0, "other-concurrent-attempts": []} for ex in latest]}


def exceptions_body(details: JobDetails) -> dict[str, Any]:
    """``GET /jobs/:jobid/exceptions`` (JobExceptionsInfoWithHistory)."""
    entries: list[dict[str, Any]] = []
    names = {v.vertex_id: v.name for v in details.vertices}
    for ex in details.executions:
        err = ex.error
        if err is None:
            continue
        entries.append({
            "exceptionName": err.exc_type, "stacktrace": err.format(),
            "timestamp": ms(ex.state_times.get(ExecutionState.FAILED.value)),
            "taskName": f"{names.get(ex.vertex_id, ex.vertex_id)} ({ex.subtask + 1})",
            "location": ex.tm_id or "", "endpoint": ex.tm_id or "",
            "taskManagerId": ex.tm_id or "", "failureLabels": {}, "concurrentExceptions": []})
    root = details.error.format() if details.error is not None else details.error_text
    if root is None and entries:
        root = str(entries[-1]["stacktrace"])
    if root is not None and not entries:
        entries.append({"exceptionName": "JobExecutionException", "stacktrace": root,
                        "timestamp": ms(details.summary.end_time), "taskName": None,
                        "location": None, "endpoint": None, "taskManagerId": None,
                        "failureLabels": {}, "concurrentExceptions": []})
    return {"root-exception": root,
            "timestamp": ms(details.summary.end_time) if root else None,
            "all-exceptions": [{"exception": e["stacktrace"], "task": e["taskName"],
                                "location": e["location"], "timestamp": e["timestamp"],
                                "taskManagerId": e["taskManagerId"]} for e in entries],
            "truncated": False,
            "exceptionHistory": {"entries": entries[::-1], "truncated": False}}


def application_status(status: JobStatus) -> str:
    """Flink's ApplicationStatus of a globally terminal JobStatus."""
    return {JobStatus.FINISHED: "SUCCEEDED", JobStatus.CANCELED: "CANCELED",
            JobStatus.FAILED: "FAILED"}[status]
