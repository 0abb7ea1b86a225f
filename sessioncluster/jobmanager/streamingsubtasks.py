"""A STREAMING job's subtasks: the reports of the Spark tasks that run them, one per
micro-batch (``streaming/report.py``), merged into the job's ExecutionGraph.

An Execution lasts over the micro-batches: its TaskManager and slot are those of its latest
micro-batch, its attempt is new when a task of it failed or was cancelled (Spark retries it, or
the job restarts). Its accumulators (records in and out included) are the sum over the
micro-batches, each (micro-batch, partition) counted once, from its successful attempt: a
failed attempt's updates never count, and a micro-batch Spark runs again (after a restart from
the last checkpoint) counts as it did the first time.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from ..api.accumulators import Accumulator, WireAccumulators, merge_snapshots, snapshot
from ..graph.executiongraph import SYSTEM_ACCUMULATORS, Execution, ExecutionGraph
from ..graph.lifecycle import ExecutionState
from ..protocol.messages import TaskError, TaskEvent
from .resourcemanager import ResourceManager

log = logging.getLogger("sessioncluster.streaming")


class StreamingSubtasks:
    """Merges a STREAMING job's task reports into ``graph`` (on the JobManager's loop)."""

    def __init__(self, graph: ExecutionGraph, rm: ResourceManager,
                 cancelling: Callable[[], bool]) -> None:
        self.graph = graph
        self.rm = rm
        self.cancelling = cancelling
        #: per (vertex, subtask): its accumulators over the micro-batches counted so far
        self.totals: dict[tuple[str, int], WireAccumulators] = {}
        #: per (vertex, query, partition): the latest micro-batch counted
        self.counted: dict[tuple[str, str, int], int] = {}
        #: Spark task id -> the vertices it runs that have not ended yet
        self.in_flight: dict[int, set[str]] = {}

    def on_report(self, ev: TaskEvent) -> bool:
        """Merge one report; True when the job's accumulators changed."""
        ex = self.graph.streaming_execution(ev.vertex_id, ev.subtask, ev.spark_task_id)
        if ex is None:
            return False
        if not ex.accumulators:  # a new attempt: the subtask's counted micro-batches stay
            ex.accumulators = dict(self.totals.get((ev.vertex_id, ev.subtask), {}))
        if ex.spark_task_id != ev.spark_task_id and not ev.state.is_terminal:
            ex.spark_task_id = ev.spark_task_id  # the subtask's latest micro-batch
            ex.tm_id = ev.tm_id
            ex.slot = self.rm.slot_for(ev.tm_id, ev.spark_task_id)
        if not ev.state.is_terminal:
            self.in_flight.setdefault(ev.spark_task_id, set()).add(ev.vertex_id)
            ex.transition_to(ev.state, ev.time)
            return False
        self._task_ended(ev)
        if ev.state is ExecutionState.FINISHED:
            changed = self._count(ev, ex)
            ex.transition_to(ExecutionState.RUNNING, ev.time)  # on to the next micro-batch
            return changed
        if ev.error is not None:
            ex.error = ev.error
        cancelled = ev.state is ExecutionState.CANCELED or self.cancelling()
        ex.transition_to(ExecutionState.CANCELED if cancelled else ExecutionState.FAILED, ev.time)
        return False

    def _task_ended(self, ev: TaskEvent) -> None:
        running = self.in_flight.get(ev.spark_task_id)
        if running is not None:
            running.discard(ev.vertex_id)
            if not running:
                del self.in_flight[ev.spark_task_id]
                self.rm.release(ev.spark_task_id)

    def _count(self, ev: TaskEvent, ex: Execution) -> bool:
        """Add the micro-batch's accumulators to the subtask's, once per (batch, partition)."""
        if ev.batch is None or not ev.accumulators:
            return False
        query, batch_id, partition = ev.batch
        key = (ev.vertex_id, query, partition)
        if batch_id <= self.counted.get(key, -1):
            return False  # counted already: a micro-batch run again, or a vertex computed twice
        self.counted[key] = batch_id
        sub = (ev.vertex_id, ev.subtask)
        try:
            merged = merge_snapshots([self.totals.get(sub, {}), ev.accumulators])
        except TypeError as exc:  # two kinds under one name: the first one stays
            log.warning("job %s: %s", self.graph.job_id, exc)
            return False
        self.totals[sub] = snapshot(merged)
        ex.accumulators = dict(self.totals[sub])
        return True

    def taskmanager_lost(self, tm_id: str) -> None:
        """The subtasks running on a lost TaskManager FAIL; Spark runs their tasks again on
        another one, whose reports start new attempts."""
        lost = [ex for ex in self.graph.all_executions()
                if ex.tm_id == tm_id and not ex.state.is_terminal]
        for ex in lost:
            if ex.spark_task_id is not None:
                self.in_flight.pop(ex.spark_task_id, None)
            ex.error = TaskError("TaskManagerLost", f"TaskManager {tm_id} was lost: no heartbeat "
                                 "(its subtasks run again on another TaskManager)", [],
                                 ex.vertex.job_vertex.job_vertex.name,
                                 f"{ex.subtask + 1}/{ex.vertex.job_vertex.parallelism}")
            ex.transition_to(ExecutionState.CANCELED if self.cancelling() else ExecutionState.FAILED)

    def carry_over(self) -> None:
        """After new attempts (a restart): each subtask's counted accumulators stay its own."""
        for (vertex_id, subtask), totals in self.totals.items():
            tv = self.graph.job_vertices[vertex_id].task_vertices[subtask]
            tv.current_execution.accumulators = dict(totals)

    def accumulators(self) -> dict[str, Accumulator[Any]]:
        """The job's accumulators: the user's, over every micro-batch counted (whichever attempt
        of its subtask is current, a failed one included)."""
        return merge_snapshots([{k: v for k, v in totals.items() if k not in SYSTEM_ACCUMULATORS}
                                for totals in self.totals.values()])

    def settled(self) -> bool:
        """No Spark task has begun a subtask whose end was not reported yet."""
        return not self.in_flight
