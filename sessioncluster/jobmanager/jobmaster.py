"""The JobMaster: one per job. Builds the ExecutionGraph, runs the plan on Spark (job group =
job id) in its own thread, and drives every Execution from Spark listener events and the
TaskManagers' task reports. All graph changes happen on the JobManager's event loop thread.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import defaultdict
from typing import Any, Callable

from ..accumulators import Accumulator
from ..graph.executiongraph import Execution, ExecutionGraph
from ..graph.jobgraph import JobGraph
from ..graph.states import ExecutionState, JobStatus
from ..graph.streamgraph import OperatorKind, Partitioning
from ..protocol.messages import (
    AccumulatorsUpdated,
    ExecutionInfo,
    ExecutionStateChanged,
    JobDetails,
    JobResultReply,
    JobStatusChanged,
    JobSummary,
    Message,
    TaskError,
    TaskEvent,
    VertexInfo,
)
from ..spark.translate import translate
from .resourcemanager import ResourceManager

log = logging.getLogger("sessioncluster.jobmaster")

#: How long to wait, after Spark's job returned, for the tasks' final reports.
FINAL_REPORT_TIMEOUT = 10.0
LIVE_ACCUMULATOR_PERIOD = 0.1


def plain_values(accs: dict[str, Accumulator[Any]]) -> dict[str, Any]:
    return {name: acc.get_local_value() for name, acc in accs.items()}


class JobMaster:
    def __init__(self, job_id: str, job_graph: JobGraph, sc: Any, rm: ResourceManager,
                 loop: asyncio.AbstractEventLoop, publish: Callable[[str, Message], None],
                 on_done: Callable[["JobMaster"], None]) -> None:
        self.job_id = job_id
        self.job_graph = job_graph
        self.sc = sc
        self.rm = rm
        self.loop = loop
        self.publish = publish
        self.on_done = on_done
        self.graph = ExecutionGraph(job_id, job_graph, listener=self._on_execution_state)
        self.start_time = time.time()
        self.end_time: float | None = None
        self.batches: list[bytes] = []
        self.printed: list[str] = []
        self.error: TaskError | None = None
        self.error_text: str | None = None
        self.final_accumulators: dict[str, Accumulator[Any]] = {}
        self.cancel_requested = False
        self.spark_succeeded: set[int] = set()
        self.stage_vertices: dict[int, set[str]] = defaultdict(set)
        #: which (vertex, subtask) each Spark task attempt runs, from the tasks' own reports
        self.task_subtasks: dict[int, set[tuple[str, int]]] = defaultdict(set)
        #: Spark events not yet placed, by Spark task attempt id
        self.unresolved: dict[int, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
        self.done = asyncio.Event()
        self._progress = asyncio.Event()
        self._acc_publish_pending = False

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.job_graph.job_name

    def start(self) -> None:
        self._set_status(JobStatus.CREATED)
        self._set_status(JobStatus.RUNNING)
        threading.Thread(target=self._run_on_spark, name=f"JobMaster-{self.job_id[:8]}",
                         daemon=True).start()

    def _run_on_spark(self) -> None:
        """In the JobMaster's thread: one Spark action per sink, in the job's group."""
        batches: list[bytes] = []
        printed: list[str] = []
        try:
            self.sc.setJobGroup(self.job_id, self.name, interruptOnCancel=True)
            for vertex, rdd in translate(self.sc, self.job_id, self.job_graph):
                sink = vertex.operators[-1]
                if sink.kind is OperatorKind.SINK_TEXT:
                    rdd.saveAsTextFile(sink.config["path"])
                elif sink.kind is OperatorKind.SINK_VIEW:
                    _register_view(rdd, sink.config)
                elif sink.kind is OperatorKind.SINK_PRINT:
                    printed.extend(rdd.collect())
                else:
                    batches.extend(rdd.collect())
        except Exception as exc:  # noqa: BLE001 - the job fails, the JobManager goes on
            self.loop.call_soon_threadsafe(self._spark_failed, _spark_error_text(exc))
        else:
            self.loop.call_soon_threadsafe(self._spark_succeeded_job, batches, printed)

    def cancel(self) -> None:
        if self.graph.status.is_globally_terminal or self.cancel_requested:
            return
        self.cancel_requested = True
        self._set_status(JobStatus.CANCELLING)
        self.graph.start_canceling()
        threading.Thread(target=self.sc.cancelJobGroup, args=(self.job_id,), daemon=True).start()

    def _spark_succeeded_job(self, batches: list[bytes], printed: list[str]) -> None:
        self.batches, self.printed = batches, printed
        asyncio.ensure_future(self._finish_when_reported())

    async def _finish_when_reported(self) -> None:
        deadline = time.monotonic() + FINAL_REPORT_TIMEOUT
        while not self.graph.all_finished() and time.monotonic() < deadline:
            self._progress.clear()
            try:
                await asyncio.wait_for(self._progress.wait(), deadline - time.monotonic())
            except asyncio.TimeoutError:
                break
        if not self.graph.all_finished():
            log.warning("job %s: final reports missing after %.0f s; using Spark's task ends",
                        self.job_id, FINAL_REPORT_TIMEOUT)
            for ex in self.graph.all_executions():
                if ex.spark_task_id in self.spark_succeeded and not ex.state.is_terminal:
                    ex.transition_to(ExecutionState.FINISHED)
        if self.cancel_requested:
            asyncio.ensure_future(self._finish_cancel())
            return
        self.final_accumulators = self.graph.final_accumulators()
        self._finish(JobStatus.FINISHED)

    def _spark_failed(self, text: str) -> None:
        if self.graph.status.is_globally_terminal:
            return
        if self.cancel_requested:
            asyncio.ensure_future(self._finish_cancel())
            return
        self.error = self._user_error()
        self.error_text = self.error.format() if self.error else text
        self._set_status(JobStatus.FAILING)
        self.graph.fail_pending()
        self.final_accumulators = self.graph.final_accumulators()
        self._finish(JobStatus.FAILED)

    async def _finish_cancel(self) -> None:
        """CANCELED only once the deployed attempts have stopped (Spark kills their workers)."""
        deadline = time.monotonic() + FINAL_REPORT_TIMEOUT

        def deployed_running() -> bool:
            return any(ex.state in (ExecutionState.DEPLOYING, ExecutionState.INITIALIZING,
                                    ExecutionState.RUNNING, ExecutionState.CANCELING)
                       for ex in self.graph.all_executions())

        while deployed_running() and time.monotonic() < deadline:
            self._progress.clear()
            try:
                await asyncio.wait_for(self._progress.wait(), deadline - time.monotonic())
            except asyncio.TimeoutError:
                break
        self.graph.cancel_pending()
        self._finish(JobStatus.CANCELED)

    def _user_error(self) -> TaskError | None:
        """The error of the last failed attempt that reported one (the user's traceback)."""
        failed = [ex for ex in self.graph.all_executions()
                  if ex.state is ExecutionState.FAILED and ex.error is not None]
        if not failed:
            return None
        return max(failed, key=lambda ex: ex.state_times.get("FAILED", 0.0)).error

    def _finish(self, status: JobStatus) -> None:
        self._set_status(status)
        self.end_time = time.time()
        for ex in self.graph.all_executions():
            if ex.spark_task_id is not None:
                self.rm.release(ex.spark_task_id)
        self.publish(self.job_id, AccumulatorsUpdated(
            self.job_id, plain_values(self.final_accumulators), final=True))
        self.done.set()
        self.on_done(self)

    def _set_status(self, status: JobStatus) -> None:
        self.graph.transition(status)
        self.publish(self.job_id, JobStatusChanged(self.job_id, self.name, status, time.time()))
        self.publish("cluster", JobStatusChanged(self.job_id, self.name, status, time.time()))

    # -- events (loop thread) --------------------------------------------------------------
    def on_task_event(self, ev: TaskEvent) -> None:
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
            for name, fields in self.unresolved.pop(ev.spark_task_id, []):
                self.on_spark_event(name, fields)
        self._progress.set()

    def _subtasks_of(self, fields: dict[str, Any]) -> set[tuple[str, int]] | None:
        """The (vertex, subtask) pairs a Spark task runs: from its own reports, else from its
        stage when every vertex there has the stage's partitions as its subtasks (a union's
        stage numbers its inputs' partitions one after another, so there it must wait)."""
        known = self.task_subtasks.get(fields["spark_task_id"])
        if known:
            return known
        vertices = self.stage_vertices.get(fields["stage_id"])
        if not vertices:
            return None
        jvs = [self.graph.job_vertices[v].job_vertex for v in vertices]
        heads = [jv for jv in jvs if not any(e.ship_strategy is Partitioning.FORWARD
                                             and e.source in vertices for e in jv.inputs)]
        parallelisms = {jv.parallelism for jv in jvs}
        if len(heads) == 1 and len(parallelisms) == 1 and fields["subtask"] < parallelisms.pop():
            return {(v, fields["subtask"]) for v in vertices}
        return None

    def on_spark_event(self, name: str, fields: dict[str, Any]) -> None:
        if name == "task_end" and fields["reason"] == "Success":
            self.spark_succeeded.add(fields["spark_task_id"])
        subtasks = self._subtasks_of(fields)
        if subtasks is None:
            self.unresolved[fields["spark_task_id"]].append((name, fields))  # placed by a report
            return
        for vertex_id, subtask in subtasks:
            ex = self.graph.execution(vertex_id, subtask, fields["spark_task_id"])
            if ex is None:
                continue
            ex.tm_id = ex.tm_id or fields["executor_id"]
            if name == "task_start":
                if ex.slot is None:
                    ex.slot = self.rm.slot_for(ex.tm_id, fields["spark_task_id"])
                ex.transition_to(ExecutionState.DEPLOYING, fields["time"])
            elif name == "task_end":
                self._on_spark_task_end(ex, fields)
        if name == "task_end":
            self.rm.release(fields["spark_task_id"])
        self._progress.set()

    def _on_spark_task_end(self, ex: Execution, fields: dict[str, Any]) -> None:
        reason = fields["reason"]
        if reason == "Success":
            pass  # FINISHED comes with the task's own report, with its final accumulators
        elif reason == "TaskKilled" or (self.cancel_requested and reason != "ExceptionFailure"):
            ex.transition_to(ExecutionState.CANCELED, fields["time"])
        else:
            if ex.error is None and reason != "ExceptionFailure":
                ex.error = TaskError("TaskFailure", fields["text"].splitlines()[0] if fields["text"] else reason, [])
            ex.transition_to(ExecutionState.FAILED, fields["time"])

    def _on_execution_state(self, ex: Execution, previous: ExecutionState) -> None:
        self.publish(self.job_id, execution_state_changed(self.job_id, ex))

    def _schedule_accumulator_publish(self) -> None:
        if self._acc_publish_pending:
            return
        self._acc_publish_pending = True

        def publish() -> None:
            self._acc_publish_pending = False
            if not self.graph.status.is_globally_terminal:
                self.publish(self.job_id, AccumulatorsUpdated(
                    self.job_id, plain_values(self.graph.live_accumulators())))

        self.loop.call_later(LIVE_ACCUMULATOR_PERIOD, publish)

    # -- views --------------------------------------------------------------------------
    def summary(self) -> JobSummary:
        return job_summary(self.graph, self.name, self.start_time, self.end_time)

    def details(self) -> JobDetails:
        vertices = []
        for vid, ejv in self.graph.job_vertices.items():
            rin, rout = self.graph.vertex_records(vid)
            jv = ejv.job_vertex
            vertices.append(VertexInfo(vid, jv.name, [op.name for op in jv.operators],
                                       jv.parallelism, ejv.aggregate_state, rin, rout))
        executions = execution_infos(self.graph)
        accs = (self.final_accumulators if self.graph.status.is_globally_terminal
                else self.graph.live_accumulators())
        return JobDetails(self.summary(), self.job_graph, vertices, executions,
                          plain_values(accs), self.error, self.error_text)

    def result(self) -> JobResultReply:
        status = self.graph.status
        if not status.is_globally_terminal:
            return JobResultReply(self.job_id, False, status)
        runtime = int(((self.end_time or time.time()) - self.start_time) * 1000)
        return JobResultReply(
            self.job_id, True, status, self.batches, self.printed,
            {name: acc.to_wire() for name, acc in self.final_accumulators.items()},
            runtime, self.error, self.error_text)


def _register_view(rdd: Any, config: dict[str, Any]) -> None:
    """Materialize a stream's records as a cached DataFrame and name it as a temporary view.

    Without a ``schema`` Spark infers one from the first record (one more Spark task)."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    df = spark.createDataFrame(rdd, schema=config.get("schema")).cache()
    df.count()
    df.createOrReplaceTempView(config["name"])


def execution_state_changed(job_id: str, ex: Execution) -> ExecutionStateChanged:
    """The PUB event of an Execution's new state."""
    v = ex.vertex
    return ExecutionStateChanged(job_id, v.job_vertex.job_vertex.vertex_id, v.subtask_index,
                                 ex.attempt_number, ex.state, ex.tm_id, ex.slot,
                                 ex.state_times[ex.state.value])


def execution_infos(graph: ExecutionGraph) -> list[ExecutionInfo]:
    """Every Execution of ``graph`` as the clients see it."""
    return [ExecutionInfo(ex.vertex.job_vertex.job_vertex.vertex_id, ex.vertex.subtask_index,
                          ex.attempt_number, ex.state, ex.tm_id, ex.slot, ex.spark_task_id,
                          dict(ex.state_times), ex.error)
            for ex in graph.all_executions()]


def job_summary(graph: ExecutionGraph, name: str, start: float, end: float | None) -> JobSummary:
    """A job's line in the job list: status, times, subtasks finished of total."""
    tvs = [tv for ejv in graph.job_vertices.values() for tv in ejv.task_vertices]
    return JobSummary(graph.job_id, name, graph.status, start, end, len(tvs),
                      sum(tv.finished_execution is not None for tv in tvs))


def _spark_error_text(exc: BaseException) -> str:
    """The gist of a Spark failure: the Python error or the JVM exception's message, without
    the JVM stack."""
    text = str(exc)
    marker = "UserCodeError: "
    if marker in text:
        body = text.split(marker, 1)[1]
        return body.split("\n\tat ", 1)[0].strip()
    if "spark.driver.maxResultSize" in text:
        detail = next((line for line in text.splitlines() if "maxResultSize" in line), "")
        return ("the job's result is larger than the collect limit; write it with "
                f"sink_to_text() or reduce it first ({detail.split('Exception: ')[-1].strip()})")
    for line in text.splitlines():
        if "Exception:" in line or "Error:" in line:
            line = line.strip().lstrip(": ")
            cls, sep, message = line.partition(": ")
            return f"{cls.rsplit('.', 1)[-1]}: {message}" if sep else line
    return text.splitlines()[0] if text else type(exc).__name__
