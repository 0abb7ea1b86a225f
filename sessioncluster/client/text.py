"""A session, its jobs and a job's ExecutionGraph as plain text: what the command line
prints and what a notebook shows as ``text/plain``."""

from __future__ import annotations

import datetime
import time
from typing import Any

from ..cluster.connection import ConnectionInfo
from ..protocol.messages import ClusterOverview, JobDetails, JobSummary


def format_overview(o: ClusterOverview, info: ConnectionInfo | None = None) -> str:
    lines = [f"session '{o.name}': {'ready' if o.ready else 'starting'} on {o.spark_master}, "
             f"JobManager pid {o.jobmanager_pid}"]
    if info is not None:
        lines.append(f"  dispatcher      {info.dispatcher}")
        lines.append(f"  events          {info.events}")
        lines.append(f"  resourcemanager {info.resourcemanager}")
        if info.rest:
            lines.append(f"  REST API        {info.rest}  (Authorization: Bearer <Session.rest_token>)")
            lines.append(f"  dashboard       {info.rest}/  (sign in: `sessioncluster dashboard "
                         f"{info.name}` prints the link)")
    lines.append(f"  TaskManagers ({len(o.taskmanagers)} of {o.expected_taskmanagers}):")
    now = time.time()
    for tm in o.taskmanagers:
        c = tm.library_cache
        lines.append(f"    {tm.tm_id:>6}  pid {tm.pid} (JVM {tm.jvm_pid})  slots {tm.slots_used}/"
                     f"{tm.slots}  heartbeat {now - tm.last_heartbeat:.1f} s ago  library cache "
                     f"{c.entries} blobs, {c.hits} hits, {c.misses} misses")
    running = [j for j in o.jobs if not j.status.is_globally_terminal]
    lines.append(f"  jobs: {len(o.jobs)} ({len(running)} running)")
    if o.cached_streams:
        lines.append(f"  cached streams ({len(o.cached_streams)}):")
        for cached in o.cached_streams:
            lines.append(f"    {cached.cache_id[:12]}  '{cached.name}' of job {cached.job_id[:12]}: "
                         f"{cached.partitions} partitions, {cached.size_bytes / 2**20:.2f} MiB")
    return "\n".join(lines)


def format_jobs(jobs: list[JobSummary]) -> str:
    if not jobs:
        return "no jobs"
    out = []
    for j in jobs:
        started = datetime.datetime.fromtimestamp(j.start_time).strftime("%H:%M:%S")
        took = f"{(j.end_time - j.start_time) * 1000:.0f} ms" if j.end_time else "running"
        out.append(f"{j.job_id}  {j.status.value:<10} {started}  {took:>10}  "
                   f"{j.tasks_finished}/{j.tasks_total} subtasks  {j.name}")
    return "\n".join(out)


def format_execution_graph(d: JobDetails) -> str:
    """The ExecutionGraph as text: vertices, then every Execution with its TaskManager/slot."""
    lines = [f"ExecutionGraph of '{d.summary.name}' ({d.summary.job_id}): {d.summary.status}"]
    by_vertex: dict[str, list[Any]] = {}
    for ex in d.executions:
        by_vertex.setdefault(ex.vertex_id, []).append(ex)
    for v in d.vertices:
        lines.append(f"  {v.name}  parallelism {v.parallelism}  {v.state}  "
                     f"records in {v.records_in} out {v.records_out}")
        for ex in sorted(by_vertex.get(v.vertex_id, []), key=lambda e: (e.subtask, e.attempt)):
            where = f"TaskManager {ex.tm_id} slot {ex.slot}" if ex.tm_id is not None else "not deployed"
            lines.append(f"    subtask {ex.subtask + 1}/{v.parallelism} attempt #{ex.attempt}: "
                         f"{ex.state.value:<9} on {where}")
    return "\n".join(lines)
