"""A STREAMING subtask's reports to its TaskManager, from inside Spark's Python worker.

Subtask *i* of a vertex is Spark partition *i* (modulo its parallelism) of each micro-batch's
stage. Each Spark task that runs it reports like a BATCH task (:mod:`..taskmanager.task`):
DEPLOYING, INITIALIZING, RUNNING once its functions are open, then at the end of the task
FINISHED (the micro-batch's part of this subtask is done: its accumulators count), FAILED with
the user's traceback, or CANCELED. The JobMaster keeps the subtask's Execution RUNNING across
micro-batches (``jobmanager/streamingsubtasks.py``) and counts each (micro-batch, partition)'s
accumulators once, from its successful attempt.

Where no TaskManager is (transformWithState's driver-side worker runs ``init`` for the state
schema beside the JobManager), a report is silent: its accumulators exist, nothing is sent.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import time
from typing import Any, Callable, Iterator

from ..api.accumulators import Accumulator, IntCounter, snapshot
from ..api.functions import RuntimeContext
from ..graph.executiongraph import RECORDS_IN, RECORDS_OUT
from ..graph.jobgraph import JobVertex
from ..graph.lifecycle import ExecutionState
from ..protocol.messages import TaskError, TaskEvent
from ..taskmanager.slotworker import SlotWorker, TaskManagerUnavailable, user_task_error

#: Spark's local properties of a micro-batch's tasks
BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"


class SubtaskReport:
    """One Spark task's run of one subtask of a vertex in a micro-batch: its accumulators
    (the user's and the records in and out, for this task only) and its reports."""

    def __init__(self, job_id: str, vertex: JobVertex, partition: int, task: Any,
                 worker: SlotWorker | None, job_parameters: dict[str, str] | None = None) -> None:
        self.job_id = job_id
        self.vertex = vertex
        self.subtask = partition % max(vertex.parallelism, 1)
        #: the job's global job parameters, for the runtime context
        self.job_parameters = dict(job_parameters or {})
        self.worker = worker
        self.records_in, self.records_out = IntCounter(), IntCounter()
        self.accumulators: dict[str, Accumulator[Any]] = {RECORDS_IN: self.records_in,
                                                          RECORDS_OUT: self.records_out}
        self.stage_id = task.stageId() if task is not None else -1
        self.spark_task_id = task.taskAttemptId() if task is not None else -1
        self.attempt = task.attemptNumber() if task is not None else 0
        query = (task.getLocalProperty(QUERY_ID_PROPERTY) or "") if task is not None else ""
        batch = (task.getLocalProperty(BATCH_ID_PROPERTY) or "-1") if task is not None else "-1"
        #: which micro-batch's partition this is: (query id, batch id, partition)
        self.batch = (query, int(batch), partition)
        self.ended = False

    def context(self) -> RuntimeContext:
        """The rich functions' runtime context, with this task's accumulators."""
        return RuntimeContext(self.vertex.name, self.subtask, self.vertex.parallelism,
                              self.attempt, self.accumulators,
                              job_parameters=self.job_parameters)

    def count(self, records_in: int, records_out: int) -> None:
        self.records_in.value += records_in
        self.records_out.value += records_out

    def report(self, state: ExecutionState, error: TaskError | None = None) -> None:
        if self.worker is None or self.ended:
            return
        self.ended = state.is_terminal
        self.worker.report(TaskEvent(self.job_id, self.vertex.vertex_id, self.subtask,
                                     self.stage_id, self.spark_task_id, self.attempt, state,
                                     time.time(), snapshot(self.accumulators), error,
                                     batch=self.batch))

    def running(self) -> None:
        """The functions are open: RUNNING."""
        self.report(ExecutionState.RUNNING)

    def finished(self) -> None:
        self.report(ExecutionState.FINISHED)

    def failed(self, exc: BaseException) -> None:
        """FAILED, with the user's part of the traceback."""
        self.report(ExecutionState.FAILED, user_task_error(
            exc, self.vertex.name, f"{self.subtask + 1}/{self.vertex.parallelism}"))


#: the reports begun inside the current :func:`reporting` block of this worker
_group: list[SubtaskReport] | None = None
#: the report whose vertex runs now in that block (a failure is its)
_active: SubtaskReport | None = None


def begin(job_id: str, vertex: JobVertex,
          job_parameters: dict[str, str] | None = None) -> SubtaskReport:
    """Start the report of this Spark task's subtask of ``vertex``: DEPLOYING, INITIALIZING;
    ``job_parameters``, its functions' global job parameters."""
    global _active
    from pyspark import TaskContext

    task = TaskContext.get()
    worker: SlotWorker | None = None
    if task is not None:
        try:
            worker = SlotWorker.current()
        except TaskManagerUnavailable:
            worker = None
    report = SubtaskReport(job_id, vertex, task.partitionId() if task is not None else 0, task,
                           worker, job_parameters)
    report.report(ExecutionState.DEPLOYING)
    report.report(ExecutionState.INITIALIZING)
    if _group is not None:
        _group.append(report)
    _active = report
    return report


def activate(report: SubtaskReport) -> None:
    """``report``'s vertex runs now: a failure from here on is its."""
    global _active
    _active = report


@contextlib.contextmanager
def reporting() -> Iterator[list[SubtaskReport]]:
    """One Spark task of stateless vertices: the reports begun inside end FINISHED when it
    returns; when it raises, the vertex running then FAILS and the others are CANCELED (its
    Spark task fails for all of them)."""
    global _group, _active
    _group, _active = [], None
    reports = _group
    try:
        yield reports
    except GeneratorExit:
        for r in reports:
            r.report(ExecutionState.CANCELED)
        raise
    except BaseException as exc:
        failing = _active if _active in reports else (reports[-1] if reports else None)
        if failing is not None:
            failing.failed(exc)
        for r in reports:
            r.report(ExecutionState.CANCELED)
        raise
    else:
        for r in reports:
            r.finished()
    finally:
        _group, _active = None, None


def guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    """A method of a keyed vertex's StatefulProcessor that reports FAILED (via ``self.report``)
    when the user's code raises in it; a generator method stays a generator."""
    if inspect.isgeneratorfunction(method):
        @functools.wraps(method)
        def generator(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
            try:
                yield from method(self, *args, **kwargs)
            except GeneratorExit:
                raise
            except BaseException as exc:
                _fail(self, exc)
                raise
        return generator

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except BaseException as exc:
            _fail(self, exc)
            raise
    return call


def _fail(owner: Any, exc: BaseException) -> None:
    report = getattr(owner, "report", None)
    if isinstance(report, SubtaskReport):
        report.failed(exc)


def context_of(vertex: JobVertex) -> RuntimeContext:
    """The runtime context of ``vertex``'s subtask in this Spark task: that of its current
    report, else one without a TaskManager."""
    if _active is not None and _active.vertex.vertex_id == vertex.vertex_id:
        return _active.context()
    return RuntimeContext(vertex.name, 0, vertex.parallelism, 0, {})
