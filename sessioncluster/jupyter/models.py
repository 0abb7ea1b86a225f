"""Client-side models of a job and of the cluster, fed by snapshots and by pushed events.

The widgets render these; they hold no widgets themselves, so they are tested without a
kernel. Snapshots (``JobDetails``, ``ClusterOverview``) and events can arrive out of order
(an event published before a snapshot may be read after it), so nothing ever moves back:
an Execution only advances, a JobStatus only advances, final accumulators stay final.

>>> view = JobView("j1", "word count")
>>> view.apply_event(JobStatusChanged("j1", "word count", JobStatus.RUNNING, 1.0))
True
>>> view.status
<JobStatus.RUNNING: 'RUNNING'>
"""

from __future__ import annotations

import linecache
import time
from dataclasses import dataclass, field, replace
from typing import Any

from ..graph.jobgraph import JobGraph
from ..graph.lifecycle import EXECUTION_PATH, ExecutionState, JobStatus, aggregate_state
from ..protocol.messages import (
    AccumulatorsUpdated,
    ClusterOverview,
    ExecutionStateChanged,
    JobDetails,
    JobStatusChanged,
    JobSummary,
    Message,
    TaskError,
    TaskManagerChanged,
    TaskManagerInfo,
)

_E = ExecutionState
_J = JobStatus

_JOB_RANK = {_J.INITIALIZING: 0, _J.CREATED: 1, _J.RUNNING: 2, _J.RESTARTING: 2, _J.FAILING: 3,
             _J.CANCELLING: 3, _J.FINISHED: 4, _J.FAILED: 4, _J.CANCELED: 4}


def _execution_rank(state: ExecutionState) -> int:
    if state.is_terminal:
        return 10
    if state is _E.CANCELING:
        return 6
    return EXECUTION_PATH.index(state)


def is_histogram(value: Any) -> bool:
    """A Histogram accumulator's plain value: ``dict[int, int]``."""
    return (isinstance(value, dict) and bool(value)
            and all(isinstance(k, int) and isinstance(v, int) for k, v in value.items()))


@dataclass(slots=True)
class ExecutionView:
    """One Execution (attempt of a subtask) as the client last heard of it."""

    vertex_id: str
    subtask: int
    attempt: int
    state: ExecutionState
    tm_id: str | None = None
    slot: int | None = None


@dataclass(slots=True)
class VertexView:
    """One JobVertex: its chain, parallelism, records and aggregate state."""

    vertex_id: str
    name: str
    operators: list[str]
    parallelism: int
    state: ExecutionState = _E.CREATED
    records_in: int = 0
    records_out: int = 0


@dataclass(slots=True)
class JobView:
    """Everything the job widget shows, merged from ``JobDetails`` and events."""

    job_id: str
    name: str
    status: JobStatus = _J.INITIALIZING
    start_time: float | None = None
    end_time: float | None = None
    job_graph: JobGraph | None = None
    vertices: dict[str, VertexView] = field(default_factory=dict)
    executions: dict[tuple[str, int, int], ExecutionView] = field(default_factory=dict)
    accumulators: dict[str, Any] = field(default_factory=dict)
    accumulators_final: bool = False
    error_text: str | None = None

    # -- feeding ------------------------------------------------------------------------------
    def apply_details(self, d: JobDetails) -> None:
        """Merge a snapshot from the JobMaster."""
        s = d.summary
        self.name = s.name or self.name
        self.start_time = s.start_time
        self._advance_status(s.status)
        if s.end_time is not None:
            self.end_time = s.end_time
        self.job_graph = d.job_graph
        for v in d.vertices:
            old = self.vertices.get(v.vertex_id)
            self.vertices[v.vertex_id] = VertexView(
                v.vertex_id, v.name, list(v.operators), v.parallelism, v.state,
                max(v.records_in, old.records_in if old else 0),
                max(v.records_out, old.records_out if old else 0))
        for ex in d.executions:
            self._advance_execution(ExecutionView(ex.vertex_id, ex.subtask, ex.attempt, ex.state,
                                                  ex.tm_id, ex.slot))
        if not self.accumulators_final:
            self.accumulators = dict(d.accumulators)
            self.accumulators_final = s.status.is_globally_terminal
        if d.error_text or d.error is not None:
            self.error_text = _error_text(d.error, d.error_text)
        self._recompute_vertex_states()

    def apply_event(self, msg: Message) -> bool:
        """Apply one event of this job's topic; True when the view changed."""
        if isinstance(msg, JobStatusChanged):
            if msg.job_id != self.job_id:
                return False
            changed = self._advance_status(msg.status)
            if changed and msg.status.is_globally_terminal:
                self.end_time = msg.time
            if changed and self.start_time is None:
                self.start_time = msg.time
            return changed
        if isinstance(msg, ExecutionStateChanged):
            if msg.job_id != self.job_id:
                return False
            changed = self._advance_execution(ExecutionView(
                msg.vertex_id, msg.subtask, msg.attempt, msg.state, msg.tm_id, msg.slot))
            if changed:
                self._recompute_vertex_states()
            return changed
        if isinstance(msg, AccumulatorsUpdated):
            if msg.job_id != self.job_id or self.accumulators_final:
                return False
            self.accumulators = dict(msg.values)
            self.accumulators_final = msg.final
            return True
        return False

    def _advance_status(self, status: JobStatus) -> bool:
        if status is self.status or _JOB_RANK[status] < _JOB_RANK[self.status]:
            return False
        if self.status.is_globally_terminal:
            return False
        self.status = status
        return True

    def _advance_execution(self, new: ExecutionView) -> bool:
        key = (new.vertex_id, new.subtask, new.attempt)
        old = self.executions.get(key)
        if old is None:
            self.executions[key] = new
            return True
        changed = False
        if _execution_rank(new.state) > _execution_rank(old.state):
            old.state = new.state
            changed = True
        if new.tm_id is not None and new.tm_id != old.tm_id:
            old.tm_id = new.tm_id
            changed = True
        if new.slot is not None and new.slot != old.slot:
            old.slot = new.slot
            changed = True
        return changed

    def _recompute_vertex_states(self) -> None:
        for vid, v in self.vertices.items():
            current = [ex.state for ex in self.current_executions() if ex.vertex_id == vid]
            if current:
                v.state = aggregate_state(current)

    # -- views --------------------------------------------------------------------------------
    def current_executions(self) -> list[ExecutionView]:
        """The latest attempt of every ExecutionVertex (subtask), sorted by vertex and subtask."""
        latest: dict[tuple[str, int], ExecutionView] = {}
        for ex in self.executions.values():
            key = (ex.vertex_id, ex.subtask)
            if key not in latest or ex.attempt > latest[key].attempt:
                latest[key] = ex
        rank = {vid: i for i, vid in enumerate(self.vertices)}
        return sorted(latest.values(), key=lambda e: (rank.get(e.vertex_id, 1 << 30), e.subtask))

    @property
    def progress(self) -> tuple[int, int]:
        """(subtasks with a FINISHED attempt, all subtasks)."""
        total = sum(v.parallelism for v in self.vertices.values())
        done = {(ex.vertex_id, ex.subtask) for ex in self.executions.values()
                if ex.state is _E.FINISHED}
        return len(done), total

    @property
    def terminal(self) -> bool:
        return self.status.is_globally_terminal

    def elapsed(self, now: float | None = None) -> float | None:
        """Seconds since the job started (until it ended), or None before it is known."""
        if self.start_time is None:
            return None
        end = self.end_time if self.end_time is not None else (time.time() if now is None else now)
        return max(0.0, end - self.start_time)

    def vertex_states(self) -> dict[str, str]:
        return {vid: v.state.value for vid, v in self.vertices.items()}


def _error_text(error: TaskError | None, text: str | None) -> str | None:
    if error is not None:
        head = f"operator '{error.operator}', subtask {error.subtask}\n" if error.operator else ""
        return head + error.format(linecache.getline)  # a notebook cell's lines live here
    return text


@dataclass(slots=True)
class ClusterView:
    """Everything the cluster widget shows, from ``ClusterOverview`` and ``cluster`` events."""

    name: str
    dispatcher: str = ""
    spark_master: str = ""
    jobmanager_pid: int = 0
    ready: bool = False
    expected_taskmanagers: int = 0
    taskmanagers: dict[str, TaskManagerInfo] = field(default_factory=dict)
    jobs: dict[str, JobSummary] = field(default_factory=dict)
    #: the client's clock when the last overview arrived (heartbeat ages are as of then)
    fetched_at: float | None = None
    stopped: bool = False

    def apply_overview(self, o: ClusterOverview, now: float | None = None) -> None:
        self.name, self.spark_master, self.jobmanager_pid = o.name, o.spark_master, o.jobmanager_pid
        self.ready, self.expected_taskmanagers = o.ready, o.expected_taskmanagers
        seen = {tm.tm_id for tm in o.taskmanagers}
        for tm_id, tm in list(self.taskmanagers.items()):
            if tm_id not in seen and tm.state == "REGISTERED":
                self.taskmanagers[tm_id] = replace(tm, state="LOST")
        for tm in o.taskmanagers:
            self.taskmanagers[tm.tm_id] = tm
        for j in o.jobs:
            old = self.jobs.get(j.job_id)
            if old is not None and _JOB_RANK[old.status] > _JOB_RANK[j.status]:
                continue
            self.jobs[j.job_id] = j
        self.fetched_at = time.time() if now is None else now

    def apply_event(self, msg: Message) -> bool:
        """Apply one event of the ``cluster`` topic; True when the view changed."""
        if isinstance(msg, TaskManagerChanged):
            info = replace(msg.info, state=msg.change) if msg.change != "REGISTERED" else msg.info
            self.taskmanagers[msg.tm_id] = info
            return True
        if isinstance(msg, JobStatusChanged):
            old = self.jobs.get(msg.job_id)
            if old is None:
                end = msg.time if msg.status.is_globally_terminal else None
                self.jobs[msg.job_id] = JobSummary(msg.job_id, msg.name, msg.status, msg.time, end)
                return True
            if _JOB_RANK[msg.status] < _JOB_RANK[old.status] or old.status.is_globally_terminal:
                return False
            end = msg.time if msg.status.is_globally_terminal else old.end_time
            self.jobs[msg.job_id] = replace(old, status=msg.status, end_time=end)
            return True
        return False

    def running_jobs(self) -> list[JobSummary]:
        return sorted((j for j in self.jobs.values() if not j.status.is_globally_terminal),
                      key=lambda j: j.start_time)

    def recent_jobs(self, limit: int = 10) -> list[JobSummary]:
        done = [j for j in self.jobs.values() if j.status.is_globally_terminal]
        return sorted(done, key=lambda j: j.end_time or j.start_time, reverse=True)[:limit]
