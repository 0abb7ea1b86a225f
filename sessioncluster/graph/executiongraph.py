"""The ExecutionGraph: the parallel, running form of a JobGraph, kept by its JobMaster.

ExecutionJobVertex (one per JobVertex) -> ExecutionVertex (one per subtask = one Spark
partition) -> Execution (one per attempt = one Spark task attempt, with the TaskManager and
slot it ran on). IntermediateResult / IntermediateResultPartition name what each vertex
produces. Every state change goes through the transition table in ``states``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..api.accumulators import WireAccumulators, merge_snapshots
from .jobgraph import JobEdge, JobGraph, JobVertex
from .lifecycle import (
    ExecutionState,
    IllegalStateTransition,
    JobStatus,
    aggregate_state,
    check_execution_transition,
    check_job_transition,
    path_to,
)
from .streamgraph import Partitioning

#: Check the graph's invariants after every change (tests set SESSIONCLUSTER_VALIDATE=1).
VALIDATE = os.environ.get("SESSIONCLUSTER_VALIDATE", "") == "1"

#: System accumulators every subtask reports; kept per vertex, not merged into the job's.
RECORDS_IN, RECORDS_OUT = "numRecordsIn", "numRecordsOut"
SYSTEM_ACCUMULATORS = frozenset({RECORDS_IN, RECORDS_OUT})

StateListener = Callable[["Execution", ExecutionState], None]


@dataclass(eq=False, slots=True)
class Execution:
    """One attempt of one subtask."""

    vertex: "ExecutionVertex"
    attempt_number: int
    spark_task_id: int | None = None
    state: ExecutionState = ExecutionState.CREATED
    state_times: dict[str, float] = field(default_factory=dict)
    tm_id: str | None = None
    slot: int | None = None
    accumulators: WireAccumulators = field(default_factory=dict)
    error: Any = None  # a protocol TaskError

    def __post_init__(self) -> None:
        self.state_times[ExecutionState.CREATED.value] = time.time()

    @property
    def job_id(self) -> str:
        return self.vertex.job_vertex.graph.job_id

    @property
    def vertex_id(self) -> str:
        """The JobVertex this is an attempt of."""
        return self.vertex.job_vertex.job_vertex.vertex_id

    @property
    def subtask(self) -> int:
        return self.vertex.subtask_index

    @property
    def name(self) -> str:
        ejv = self.vertex.job_vertex
        return (f"{ejv.job_vertex.name} ({self.subtask + 1}/{ejv.parallelism}) "
                f"attempt #{self.attempt_number}")

    def transition_to(self, target: ExecutionState, when: float | None = None) -> bool:
        """Move to ``target`` through the legal intermediate states.

        Returns False for a stale report (``target`` already passed); raises
        :class:`IllegalStateTransition` when no legal route exists.
        """
        if target is ExecutionState.FINISHED and self.state is ExecutionState.CANCELING:
            target = ExecutionState.CANCELED  # Flink: finishing while canceling completes the cancel
        steps = path_to(self.state, target)
        if steps is None:
            raise IllegalStateTransition(f"{self.name}: {self.state} -> {target}")
        when = when or time.time()
        graph = self.vertex.job_vertex.graph
        for step in steps:
            check_execution_transition(self.state, step)
            previous, self.state = self.state, step
            self.state_times[step.value] = when
            graph._on_execution_state(self, previous)
        return bool(steps)


@dataclass(eq=False, slots=True)
class ExecutionVertex:
    job_vertex: "ExecutionJobVertex"
    subtask_index: int
    executions: list[Execution] = field(default_factory=list)

    @property
    def current_execution(self) -> Execution:
        if not self.executions:
            self.executions.append(Execution(self, 0))
        return self.executions[-1]

    @property
    def finished_execution(self) -> Execution | None:
        """The successful attempt whose accumulators count: the latest (after a restart of the
        job, the attempt of the run that succeeded)."""
        for ex in reversed(self.executions):
            if ex.state is ExecutionState.FINISHED:
                return ex
        return None

    def execution_for(self, spark_task_id: int) -> Execution:
        """The Execution of a Spark task attempt, created (as a new attempt) on first sight; the
        attempt before it ends FAILED if it had not ended yet, as in Flink."""
        for ex in self.executions:
            if ex.spark_task_id == spark_task_id:
                return ex
        current = self.current_execution
        if current.spark_task_id is None and current.state is ExecutionState.CREATED:
            current.spark_task_id = spark_task_id
            return current
        if not current.state.is_terminal:
            # Spark starts a partition's next attempt once the last one is gone (it failed, or
            # its executor was lost); that attempt's end may be reported after the new start,
            # and is stale then (its error, if any, is still recorded)
            current.transition_to(ExecutionState.FAILED)
        ex = Execution(self, len(self.executions), spark_task_id)
        self.executions.append(ex)
        return ex


@dataclass(eq=False, slots=True)
class IntermediateResultPartition:
    producer: ExecutionVertex

    @property
    def partition_number(self) -> int:
        return self.producer.subtask_index


@dataclass(eq=False, slots=True)
class IntermediateResult:
    """The data set one JobVertex produces: one partition per producing subtask."""

    dataset_id: str
    partitions: list[IntermediateResultPartition]


@dataclass(eq=False, slots=True)
class ExecutionJobVertex:
    graph: "ExecutionGraph"
    job_vertex: JobVertex
    task_vertices: list[ExecutionVertex] = field(default_factory=list)
    produced: list[IntermediateResult] = field(default_factory=list)

    @property
    def parallelism(self) -> int:
        return self.job_vertex.parallelism

    @property
    def aggregate_state(self) -> ExecutionState:
        """The vertex's state as Flink's web UI shows it, from its subtasks' current attempts."""
        return aggregate_state([tv.current_execution.state for tv in self.task_vertices])


class ExecutionGraph:
    """The JobMaster's view of one job; ``listener`` hears every execution state change."""

    def __init__(self, job_id: str, job_graph: JobGraph, listener: StateListener | None = None,
                 validate: bool = VALIDATE) -> None:
        self.job_id = job_id
        self.job_graph = job_graph
        self.listener = listener
        self.validate = validate
        self.status = JobStatus.INITIALIZING
        self.status_times: dict[str, float] = {JobStatus.INITIALIZING.value: time.time()}
        self.job_vertices: dict[str, ExecutionJobVertex] = {}
        for jv in job_graph.vertices:
            self._attach(jv)

    def _attach(self, jv: JobVertex) -> ExecutionJobVertex:
        """The ExecutionJobVertex of ``jv``: a subtask per parallel instance, each with attempt 0
        (CREATED), and the results it produces."""
        ejv = ExecutionJobVertex(self, jv)
        ejv.task_vertices = [ExecutionVertex(ejv, i) for i in range(jv.parallelism)]
        for tv in ejv.task_vertices:
            tv.executions.append(Execution(tv, 0))
        ejv.produced = [IntermediateResult(e.intermediate_dataset_id,
                                           [IntermediateResultPartition(tv) for tv in ejv.task_vertices])
                        for e in jv.outputs]
        self.job_vertices[jv.vertex_id] = ejv
        return ejv

    def add_job_vertex(self, vertex: JobVertex, inputs: dict[str, Partitioning]) -> ExecutionJobVertex:
        """Grow the graph (and its JobGraph) by ``vertex``, fed by the existing vertices named in
        ``inputs`` over edges with the given ship strategies (a SQL job's stages arrive one by one)."""
        self.job_graph.vertices.append(vertex)
        ejv = self._attach(vertex)
        for source_id, strategy in inputs.items():
            edge = JobEdge(source_id, vertex.vertex_id, strategy)
            vertex.inputs.append(edge)
            source = self.job_vertices[source_id]
            source.job_vertex.outputs.append(edge)
            source.produced.append(IntermediateResult(
                edge.intermediate_dataset_id,
                [IntermediateResultPartition(tv) for tv in source.task_vertices]))
        return ejv

    # -- job status ------------------------------------------------------------------------
    def transition(self, target: JobStatus) -> None:
        check_job_transition(self.status, target)
        self.status = target
        self.status_times[target.value] = time.time()

    # -- executions ------------------------------------------------------------------------
    def execution(self, vertex_id: str, subtask: int, spark_task_id: int) -> Execution | None:
        ejv = self.job_vertices.get(vertex_id)
        if ejv is None or not 0 <= subtask < len(ejv.task_vertices):
            return None
        return ejv.task_vertices[subtask].execution_for(spark_task_id)

    def streaming_execution(self, vertex_id: str, subtask: int, spark_task_id: int) -> Execution | None:
        """STREAMING: the attempt of a subtask that a Spark task of a micro-batch runs. One
        Execution lasts over the micro-batches; once it ended (a failed task that Spark retries,
        a peer's failure in its task) the next task's report starts a new attempt. None for a
        late report of the ended attempt's own task."""
        ejv = self.job_vertices.get(vertex_id)
        if ejv is None or not 0 <= subtask < len(ejv.task_vertices):
            return None
        tv = ejv.task_vertices[subtask]
        current = tv.current_execution
        if not current.state.is_terminal:
            return current
        if current.spark_task_id == spark_task_id:
            return None
        ex = Execution(tv, len(tv.executions))
        tv.executions.append(ex)
        return ex

    def all_executions(self) -> list[Execution]:
        return [ex for ejv in self.job_vertices.values() for tv in ejv.task_vertices
                for ex in tv.executions]

    def all_finished(self) -> bool:
        """Every subtask's current attempt succeeded."""
        return all(tv.current_execution.state is ExecutionState.FINISHED
                   for ejv in self.job_vertices.values() for tv in ejv.task_vertices)

    def start_canceling(self) -> None:
        """Move every deployed, not yet ended attempt to CANCELING (the job is CANCELLING)."""
        for ex in self.all_executions():
            if ex.state in (ExecutionState.SCHEDULED, ExecutionState.DEPLOYING,
                            ExecutionState.INITIALIZING, ExecutionState.RUNNING):
                ex.transition_to(ExecutionState.CANCELING)

    def cancel_pending(self) -> None:
        """Move every non-terminal current attempt to CANCELED (via CANCELING where Flink does)."""
        for ejv in self.job_vertices.values():
            for tv in ejv.task_vertices:
                ex = tv.current_execution
                if not ex.state.is_terminal:
                    if ex.state is not ExecutionState.CREATED:
                        ex.transition_to(ExecutionState.CANCELING)
                    ex.transition_to(ExecutionState.CANCELED)

    def new_attempts(self) -> None:
        """A restart of the whole job: every subtask gets a new Execution (the next attempt
        number, CREATED); the earlier attempts stay, ended, in its history."""
        for ejv in self.job_vertices.values():
            for tv in ejv.task_vertices:
                current = tv.current_execution
                if not current.state.is_terminal:
                    current.transition_to(ExecutionState.CANCELED)
                tv.executions.append(Execution(tv, len(tv.executions)))

    def fail_pending(self, error: Any = None) -> None:
        for ejv in self.job_vertices.values():
            for tv in ejv.task_vertices:
                ex = tv.current_execution
                if not ex.state.is_terminal:
                    ex.error = ex.error or error
                    ex.transition_to(ExecutionState.FAILED)

    def _on_execution_state(self, execution: Execution, previous: ExecutionState) -> None:
        if self.validate:
            self.check_invariants()
        if self.listener is not None:
            self.listener(execution, previous)

    def check_invariants(self) -> None:
        for ejv in self.job_vertices.values():
            for tv in ejv.task_vertices:
                for ex in tv.executions[:-1]:
                    if not ex.state.is_terminal:
                        raise AssertionError(f"{ex.name} is {ex.state} but a later attempt exists")
                ids = [ex.spark_task_id for ex in tv.executions if ex.spark_task_id is not None]
                if len(ids) != len(set(ids)):
                    raise AssertionError(f"two Executions for one Spark task in {tv}")

    # -- accumulators ----------------------------------------------------------------------
    def final_accumulators(self) -> dict[str, Any]:
        """Merged by name over the successful attempt of each subtask only."""
        snaps = []
        for ejv in self.job_vertices.values():
            for tv in ejv.task_vertices:
                ex = tv.finished_execution
                if ex is not None:
                    snaps.append(_user_only(ex.accumulators))
        return merge_snapshots(snaps)

    def live_accumulators(self) -> dict[str, Any]:
        """Merged over each subtask's most advanced attempt: successful, else the latest."""
        snaps = []
        for ejv in self.job_vertices.values():
            for tv in ejv.task_vertices:
                ex = tv.finished_execution or (tv.executions[-1] if tv.executions else None)
                if ex is not None and ex.state is not ExecutionState.FAILED:
                    snaps.append(_user_only(ex.accumulators))
        return merge_snapshots(snaps)

    def vertex_records(self, vertex_id: str) -> tuple[int, int]:
        """Records in and out of a vertex, over each subtask's most advanced attempt."""
        rin = rout = 0
        for tv in self.job_vertices[vertex_id].task_vertices:
            ex = tv.finished_execution or (tv.executions[-1] if tv.executions else None)
            if ex is not None:
                rin += ex.accumulators.get(RECORDS_IN, ("", 0))[1]
                rout += ex.accumulators.get(RECORDS_OUT, ("", 0))[1]
        return rin, rout


def _user_only(snapshot: WireAccumulators) -> WireAccumulators:
    return {k: v for k, v in snapshot.items() if k not in SYSTEM_ACCUMULATORS}
