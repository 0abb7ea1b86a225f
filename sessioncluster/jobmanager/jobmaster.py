"""The JobMaster: one per DataStream job. Builds the ExecutionGraph, runs the plan on Spark
(job group = job id) in its own thread, and drives every Execution from Spark listener events
and the TaskManagers' task reports. All graph changes happen on the JobManager's loop thread.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from typing import Any, Callable

from ..api.accumulators import Accumulator
from ..api.restart import RestartBackoff
from ..graph.executiongraph import Execution
from ..graph.jobgraph import JobGraph
from ..graph.lifecycle import ExecutionState, JobStatus
from ..graph.streamgraph import OperatorKind, Partitioning
from ..protocol.messages import (
    AccumulatorsUpdated,
    JobDetails,
    JobResultReply,
    TaskError,
    TaskEvent,
    VertexInfo,
)
from ..spark.cache import CachedStream, CacheRegistry
from ..spark.events import TaskEnded, TaskStarted
from ..spark.filesink import abort_batch_sink, commit_batch_sink
from ..spark.sql import create_temporary_view, spark_error_text, submitted_stages
from ..spark.translate import translate
from .resourcemanager import ResourceManager
from .runner import JobRunner, Publish, SparkJobRunner, execution_infos, plain_values

log = logging.getLogger("sessioncluster.jobmaster")

#: what to do about a collected result over Spark's limit
_TOO_LARGE_HINT = "write it with sink_to_text() or reduce it first"


class JobCancelledBetweenActions(Exception):
    """The job was cancelled after one of its sinks' Spark actions: the next does not start."""


class JobMaster(SparkJobRunner):
    """Runs one JobGraph: one Spark action per sink, in the job's Spark job group."""

    #: the JobGraph is the job's own: Spark's stages only route task events to it
    stage_details = False

    def __init__(self, job_id: str, job_graph: JobGraph, sc: Any, rm: ResourceManager,
                 loop: asyncio.AbstractEventLoop, publish: Publish,
                 on_done: Callable[[JobRunner], None], caches: CacheRegistry | None = None) -> None:
        super().__init__(job_id, job_graph.job_name, job_graph, sc, rm, loop, publish, on_done)
        self.caches = caches
        #: the streams this job caches, kept if it finishes
        self.new_caches: list[CachedStream] = []
        self.batches: list[bytes] = []
        self.printed: list[str] = []
        self.error: TaskError | None = None
        self.final_accumulators: dict[str, Accumulator[Any]] = {}
        self.spark_succeeded: set[int] = set()
        self.stage_vertices: dict[int, set[str]] = defaultdict(set)
        #: which (vertex, subtask) each Spark task attempt runs, from the tasks' own reports
        self.task_subtasks: dict[int, set[tuple[str, int]]] = defaultdict(set)
        #: Spark events not yet placed, by Spark task attempt id
        self.unresolved: dict[int, list[TaskStarted | TaskEnded]] = defaultdict(list)
        self.backoff = RestartBackoff(job_graph.restart_strategy)
        #: Spark stages of runs before a restart: their late events are not this run's
        self.stale_stages: set[int] = set()

    # -- the job's thread ---------------------------------------------------------------------
    def run_on_spark(self) -> None:
        """One Spark action per sink; none starts once the job is cancelled."""
        batches: list[bytes] = []
        printed: list[str] = []
        plan = None
        try:
            plan = translate(self.sc, self.job_id, self.job_graph, self.caches)
            self.new_caches = plan.caches
            for vertex, rdd in plan:
                if self.cancel_requested:
                    raise JobCancelledBetweenActions(self.job_id)
                sink = vertex.operators[-1]
                if sink.kind is OperatorKind.SINK_TEXT:
                    commit_batch_sink(rdd, self.job_id, vertex)
                elif sink.kind is OperatorKind.SINK_VIEW:
                    create_temporary_view(_spark_session(), sink.config["name"], rdd,
                                          sink.config.get("schema"))
                elif sink.kind is OperatorKind.SINK_PRINT:
                    printed.extend(rdd.collect())
                else:
                    batches.extend(rdd.collect())
        except Exception as exc:  # noqa: BLE001 - the job fails, the JobManager goes on
            self._abort_file_sinks()
            # a job that may restart: which Spark stages this run had, so that their late events
            # are told apart from the next run's
            stages = submitted_stages(self.sc, self.spark_group) if self.backoff.config else None
            self.loop.call_soon_threadsafe(self._spark_failed,
                                           spark_error_text(exc, _TOO_LARGE_HINT), stages)
        else:
            self.loop.call_soon_threadsafe(self._spark_succeeded_job, batches, printed)
        finally:
            if plan is not None:
                plan.release()  # the fan-out vertices' partitions kept for this job

    def _abort_file_sinks(self) -> None:
        """A failed run leaves no in-progress part files."""
        for vertex in self.job_graph.vertices:
            if vertex.is_sink and vertex.operators[-1].kind is OperatorKind.SINK_TEXT:
                try:
                    abort_batch_sink(self.job_id, vertex)
                except OSError:
                    log.warning("job %s: in-progress files of %s not deleted", self.job_id,
                                vertex.name, exc_info=True)

    # -- the end (loop thread) ----------------------------------------------------------------
    def _spark_succeeded_job(self, batches: list[bytes], printed: list[str]) -> None:
        self.batches, self.printed = batches, printed
        self.background.start(self._finish_when_reported())

    async def _finish_when_reported(self) -> None:
        if not await self.wait_for_progress(self.graph.all_finished):
            log.warning("job %s: final reports missing; using Spark's task ends", self.job_id)
            for ex in self.graph.all_executions():
                if ex.spark_task_id in self.spark_succeeded and not ex.state.is_terminal:
                    ex.transition_to(ExecutionState.FINISHED)
        if self.cancel_requested:
            await self._finish_cancel()
            return
        self.final_accumulators = self.graph.final_accumulators()
        if self.caches is not None:
            for cached in self.new_caches:
                self.caches.add(cached)
            self.new_caches = []
        self.end(JobStatus.FINISHED)

    def _spark_failed(self, text: str, stages: set[int] | None = None) -> None:
        if self.status.is_globally_terminal:
            return
        if self.cancel_requested:
            self.background.start(self._finish_cancel())
            return
        self.error = self._user_error()
        self.error_text = self.error.format() if self.error else text
        if self.backoff.can_restart(time.time()):
            self._restart(stages or set())
            return
        self._set_status(JobStatus.FAILING)
        self.graph.fail_pending()
        self.final_accumulators = self.graph.final_accumulators()
        self.end(JobStatus.FAILED)

    def cancel(self) -> None:
        restarting = self.status is JobStatus.RESTARTING
        super().cancel()
        if restarting:  # nothing runs between two runs: the cancel ends the job now
            self.background.start(self._finish_cancel())

    def _restart(self, stages: set[int]) -> None:
        """Flink's restart of the whole job; the Spark stages of this run are stale from now."""
        self.stale_stages |= stages | set(self.stage_vertices)
        self.restart(self.backoff, "; ".join((self.error_text or "").strip().splitlines()[-1:]))

    def before_run_again(self) -> None:
        self.stage_vertices.clear()
        self.unresolved.clear()
        self.error = self.error_text = None

    async def _finish_cancel(self) -> None:
        """CANCELED only once the deployed attempts have stopped (Spark kills their workers)."""
        deployed = (ExecutionState.DEPLOYING, ExecutionState.INITIALIZING, ExecutionState.RUNNING,
                    ExecutionState.CANCELING)
        await self.wait_for_progress(
            lambda: not any(ex.state in deployed for ex in self.graph.all_executions()))
        self.graph.cancel_pending()
        self.end(JobStatus.CANCELED)

    def _user_error(self) -> TaskError | None:
        """The error of the last failed attempt that reported one (the user's traceback)."""
        failed = [ex for ex in self.graph.all_executions()
                  if ex.state is ExecutionState.FAILED and ex.error is not None]
        if not failed:
            return None
        return max(failed, key=lambda ex: ex.state_times.get("FAILED", 0.0)).error

    def _drop_new_caches(self) -> None:
        """A job that did not finish leaves no cached stream behind."""
        for cached in self.new_caches:
            try:
                cached.rdd.unpersist(blocking=False)
            except Exception:  # noqa: BLE001 - Spark stopping: nothing left to free
                pass
        self.new_caches = []

    def on_end(self) -> None:
        self._drop_new_caches()
        self.publish(self.job_id, AccumulatorsUpdated(
            self.job_id, plain_values(self.final_accumulators), final=True))

    # -- events (loop thread) -----------------------------------------------------------------
    def on_task_event(self, ev: TaskEvent) -> None:
        if self.status.is_globally_terminal or ev.stage_id in self.stale_stages:
            return
        self.stage_vertices[ev.stage_id].add(ev.vertex_id)
        task_is_new = (ev.vertex_id, ev.subtask) not in self.task_subtasks[ev.spark_task_id]
        self.task_subtasks[ev.spark_task_id].add((ev.vertex_id, ev.subtask))
        ex = self.graph.execution(ev.vertex_id, ev.subtask, ev.spark_task_id)
        if ex is None:
            log.warning("job %s: report for unknown subtask %s/%d", self.job_id, ev.vertex_id, ev.subtask)
            return
        ex.tm_id = ev.tm_id
        if ex.slot is None:
            ex.slot = self.rm.slot_for(ev.tm_id, ev.spark_task_id)
        if ev.accumulators is not None and ex.state is not ExecutionState.FINISHED:
            ex.accumulators = ev.accumulators
            self._schedule_accumulator_publish()
        if ev.error is not None:
            ex.error = ev.error
        state = ev.state
        if self.cancel_requested and state is ExecutionState.FAILED:
            state = ExecutionState.CANCELED  # the failure is the interruption we asked for
        ex.transition_to(state, ev.time)
        if task_is_new:
            for spark_ev in self.unresolved.pop(ev.spark_task_id, []):
                self.on_spark_task_event(spark_ev)
        self.progressed()

    def _subtasks_of(self, ev: TaskStarted | TaskEnded) -> set[tuple[str, int]] | None:
        """The (vertex, subtask) pairs a Spark task runs: from its own reports, else from its
        stage when every vertex there has the stage's partitions as its subtasks (a union's
        stage numbers its inputs' partitions one after another, so there it must wait)."""
        known = self.task_subtasks.get(ev.spark_task_id)
        if known:
            return known
        vertices = self.stage_vertices.get(ev.stage_id)
        if not vertices:
            return None
        jvs = [self.graph.job_vertices[v].job_vertex for v in vertices]
        heads = [jv for jv in jvs if not any(e.ship_strategy is Partitioning.FORWARD
                                             and e.source in vertices for e in jv.inputs)]
        parallelisms = {jv.parallelism for jv in jvs}
        if len(heads) == 1 and len(parallelisms) == 1 and ev.subtask < parallelisms.pop():
            return {(v, ev.subtask) for v in vertices}
        return None

    def on_spark_task_event(self, ev: TaskStarted | TaskEnded) -> None:
        if self.status.is_globally_terminal or ev.stage_id in self.stale_stages:
            return
        if isinstance(ev, TaskEnded) and ev.succeeded:
            self.spark_succeeded.add(ev.spark_task_id)
        subtasks = self._subtasks_of(ev)
        if subtasks is None:
            self.unresolved[ev.spark_task_id].append(ev)  # placed by the task's first report
            return
        for vertex_id, subtask in subtasks:
            ex = self.graph.execution(vertex_id, subtask, ev.spark_task_id)
            if ex is None:
                continue
            ex.tm_id = ex.tm_id or ev.executor_id
            if isinstance(ev, TaskStarted):
                if ex.slot is None:
                    ex.slot = self.rm.slot_for(ex.tm_id, ev.spark_task_id)
                ex.transition_to(ExecutionState.DEPLOYING, ev.time)
            else:
                self._on_spark_task_end(ex, ev)
        if isinstance(ev, TaskEnded):
            self.rm.release(ev.spark_task_id)
        self.progressed()

    def _on_spark_task_end(self, ex: Execution, ev: TaskEnded) -> None:
        if ev.succeeded:
            return  # FINISHED comes with the task's own report, with its final accumulators
        if ev.reason == "TaskKilled" or (self.cancel_requested and ev.reason != "ExceptionFailure"):
            ex.transition_to(ExecutionState.CANCELED, ev.time)
            return
        if ex.error is None and ev.reason != "ExceptionFailure":
            first = ev.text.splitlines()[0] if ev.text else ev.reason
            ex.error = TaskError("TaskFailure", first, [])
        ex.transition_to(ExecutionState.FAILED, ev.time)

    # -- views ----------------------------------------------------------------------------
    def details(self) -> JobDetails:
        vertices = []
        for vid, ejv in self.graph.job_vertices.items():
            rin, rout = self.graph.vertex_records(vid)
            jv = ejv.job_vertex
            vertices.append(VertexInfo(vid, jv.name, [op.name for op in jv.operators],
                                       jv.parallelism, ejv.aggregate_state, rin, rout))
        accs = (self.final_accumulators if self.status.is_globally_terminal
                else self.graph.live_accumulators())
        return JobDetails(self.summary(), self.job_graph, vertices, execution_infos(self.graph),
                          plain_values(accs), self.error, self.error_text, self.spark_jobs,
                          dict(self.graph.status_times))

    def result(self) -> JobResultReply:
        if not self.status.is_globally_terminal:
            return JobResultReply(self.job_id, False, self.status)
        return JobResultReply(
            self.job_id, True, self.status, self.batches, self.printed,
            {name: acc.to_wire() for name, acc in self.final_accumulators.items()},
            self.runtime_ms(), self.error, self.error_text)


def _spark_session() -> Any:
    """The JobManager's SparkSession (the one around the JobMaster's SparkContext)."""
    from pyspark.sql import SparkSession

    return SparkSession.builder.getOrCreate()
