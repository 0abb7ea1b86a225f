"""A real JobMaster fed TaskManager reports and typed Spark events in the orders that happen in
practice; its ExecutionGraph's states are checked, with no Spark (the fake SparkContext is only
used by cancel, which records the call)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from sessioncluster.graph.jobgraph import JobEdge, JobGraph, JobVertex, OperatorSpec
from sessioncluster.graph.states import ExecutionState as S
from sessioncluster.graph.states import JobStatus
from sessioncluster.graph.streamgraph import OperatorKind, Partitioning
from sessioncluster.jobmanager.blobserver import BlobServer
from sessioncluster.jobmanager.jobmaster import JobMaster
from sessioncluster.jobmanager.resourcemanager import ResourceManager
from sessioncluster.jobmanager.router import SparkEventRouter
from sessioncluster.protocol.messages import (
    ExecutionStateChanged,
    JobStatusChanged,
    Message,
    RegisterTaskManager,
    TaskError,
    TaskEvent,
)
from sessioncluster.spark.events import ExecutorRemoved, StageSubmitted, TaskEnded, TaskStarted

JOB = "a" * 32


class FakeJvmContext:
    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def cancelJobGroupAndFutureJobs(self, group: str) -> None:  # noqa: N802 - Spark's name
        self.calls.append(f"cancelJobGroupAndFutureJobs:{group}")


class FakeSparkContext:
    """Only cancel reaches it (through py4j's names); the events path never calls it."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._jsc = type("Jsc", (), {"sc": lambda _self: FakeJvmContext(self.calls)})()


def two_vertex_graph() -> JobGraph:
    """Source(2) -FORWARD-> Sink(2): one Spark stage runs both vertices."""
    src = JobVertex("src", "Source", [OperatorSpec(1, OperatorKind.SOURCE_COLLECTION, "Source")], 2)
    sink = JobVertex("sink", "Sink", [OperatorSpec(2, OperatorKind.SINK_COLLECT, "Collect")], 2)
    edge = JobEdge("src", "sink", Partitioning.FORWARD)
    src.outputs.append(edge)
    sink.inputs.append(edge)
    return JobGraph("job", [src, sink])


class Harness:
    def __init__(self, tmp_path: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.published: list[Message] = []
        self.rm = ResourceManager(BlobServer(tmp_path / "blobs"), lambda ident, msg: None,
                                  self.published.append, lambda events: None)
        for tm in ("0", "1"):
            self.rm.on_register([tm.encode()], RegisterTaskManager(tm, "127.0.0.1", 1, 2, 3, 1))
        self.sc = FakeSparkContext()
        self.ended: list[str] = []
        self.job = JobMaster(JOB, two_vertex_graph(), self.sc, self.rm, self.loop,
                             lambda topic, msg: self.published.append(msg),
                             lambda job: self.ended.append(job.job_id))
        self.router = SparkEventRouter(lambda job_id: self.job if job_id == JOB else None,
                                       self.rm.mark_lost, lambda executor: None)
        # started as start() does, without the thread that would run Spark actions
        self.job._set_status(JobStatus.CREATED)
        self.job._set_status(JobStatus.RUNNING)
        self.router.on_spark_event(StageSubmitted(0, JOB, "collect", 2))

    def close(self) -> None:
        self.job.tasks.cancel_all()
        self.loop.run_until_complete(asyncio.sleep(0))
        self.loop.close()

    def report(self, vertex: str, subtask: int, task: int, state: S, tm: str = "0", attempt: int = 0,
               error: TaskError | None = None, accs: dict[str, Any] | None = None) -> None:
        self.router.on_task_events([TaskEvent(JOB, vertex, subtask, 0, task, attempt, state, 1.0,
                                              accs, error, tm)])

    def started(self, subtask: int, task: int, tm: str = "0", attempt: int = 0) -> None:
        self.router.on_spark_event(TaskStarted(0, task, subtask, attempt, tm, 1.0))

    def ended_(self, subtask: int, task: int, reason: str = "Success", text: str = "",
               tm: str = "0", attempt: int = 0) -> None:
        self.router.on_spark_event(TaskEnded(0, task, subtask, attempt, tm, reason, text, 2.0))

    def states(self, vertex: str, subtask: int) -> list[tuple[int, S]]:
        tv = self.job.graph.job_vertices[vertex].task_vertices[subtask]
        return [(ex.attempt_number, ex.state) for ex in tv.executions]

    def run_subtask(self, subtask: int, task: int, tm: str = "0", attempt: int = 0) -> None:
        self.started(subtask, task, tm, attempt)
        for vertex in ("src", "sink"):
            self.report(vertex, subtask, task, S.RUNNING, tm, attempt)
        for vertex in ("src", "sink"):
            self.report(vertex, subtask, task, S.FINISHED, tm, attempt, accs={"n": ("IntCounter", 1)})
        self.ended_(subtask, task, tm=tm, attempt=attempt)

    def finish_job(self) -> None:
        self.on_loop(lambda: self.job._spark_succeeded_job([b"batch"], []))

    def on_loop(self, call: Any) -> None:
        """``call()`` on the running loop (as the JobMaster's thread hands it over), then wait
        for the job's end."""
        async def run() -> None:
            call()
            await asyncio.wait_for(self.job.done.wait(), 5)

        self.loop.run_until_complete(run())


@pytest.fixture
def h(tmp_path: Path):  # type: ignore[no-untyped-def]
    harness = Harness(tmp_path)
    yield harness
    harness.close()


def test_worker_report_before_spark_task_start(h: Harness) -> None:
    # the slot worker's RUNNING arrives first (Spark's task start is still on the listener bus)
    h.report("src", 0, 10, S.RUNNING)
    h.report("sink", 0, 10, S.RUNNING)
    h.started(0, 10)  # a stale DEPLOYING: ignored
    assert h.states("src", 0) == [(0, S.RUNNING)] and h.states("sink", 0) == [(0, S.RUNNING)]
    ex = h.job.graph.job_vertices["src"].task_vertices[0].executions[0]
    assert ex.tm_id == "0" and ex.slot == 0 and ex.spark_task_id == 10
    for vertex in ("src", "sink"):
        h.report(vertex, 0, 10, S.FINISHED, accs={"n": ("IntCounter", 2)})
    h.ended_(0, 10)
    assert h.rm.slot_of_task == {}
    h.run_subtask(1, 11, tm="1")
    h.finish_job()
    assert h.job.status is JobStatus.FINISHED and h.ended == [JOB]
    assert h.job.result().batches == [b"batch"]
    assert h.job.final_accumulators["n"].get_local_value() == 2 + 2 + 1 + 1
    states = [m for m in h.published if isinstance(m, ExecutionStateChanged)
              and m.vertex_id == "src" and m.subtask == 0]
    assert [m.state for m in states] == [S.SCHEDULED, S.DEPLOYING, S.INITIALIZING, S.RUNNING, S.FINISHED]


def test_spark_start_before_any_report_waits_for_the_stage_to_be_known(h: Harness) -> None:
    h.started(0, 10)  # no report yet: which vertices stage 0 runs is unknown
    assert h.states("src", 0) == [(0, S.CREATED)]
    h.report("src", 0, 10, S.RUNNING)  # now it is placed
    assert h.states("src", 0) == [(0, S.RUNNING)]
    # the stage's vertices are known: a later task's start is placed at once
    h.started(1, 11, tm="1")
    assert h.states("src", 1) == [(0, S.DEPLOYING)]


def test_lost_executor_mid_task_then_a_retry(h: Harness) -> None:
    h.started(0, 10, tm="1")
    h.report("src", 0, 10, S.RUNNING, tm="1")
    h.report("sink", 0, 10, S.RUNNING, tm="1")
    h.router.on_spark_event(ExecutorRemoved("1", "worker lost"))
    assert "1" not in h.rm.taskmanagers and "1" in h.rm.lost
    h.ended_(0, 10, reason="ExecutorLostFailure", text="ExecutorLostFailure(1,true,Some(lost))", tm="1")
    assert h.states("src", 0) == [(0, S.FAILED)] and h.states("sink", 0) == [(0, S.FAILED)]
    error = h.job.graph.job_vertices["src"].task_vertices[0].executions[0].error
    assert error.exc_type == "TaskFailure" and "ExecutorLostFailure" in error.message
    # Spark retries the task on the other executor: attempt 1 of the same subtask
    h.run_subtask(0, 12, tm="0", attempt=1)
    assert h.states("src", 0) == [(0, S.FAILED), (1, S.FINISHED)]
    h.run_subtask(1, 13)
    h.finish_job()
    assert h.job.status is JobStatus.FINISHED
    # accumulators count only the successful attempts
    assert h.job.final_accumulators["n"].get_local_value() == 4


def test_user_error_then_retry_attempt_1(h: Harness) -> None:
    err = TaskError("ValueError", "bad record", [("job.py", 3, "f", "raise ValueError")])
    h.started(0, 10)
    h.report("src", 0, 10, S.RUNNING)
    h.report("src", 0, 10, S.FAILED, error=err, accs={"n": ("IntCounter", 5)})
    h.ended_(0, 10, reason="ExceptionFailure", text="ExceptionFailure(...)")
    assert h.states("src", 0) == [(0, S.FAILED)]
    assert h.job.graph.job_vertices["src"].task_vertices[0].executions[0].error == err
    h.run_subtask(0, 11, attempt=1)
    assert h.states("src", 0) == [(0, S.FAILED), (1, S.FINISHED)]
    # the chained sink had not started on attempt 0: its first Execution runs in Spark's retry
    assert h.states("sink", 0) == [(0, S.FINISHED)]
    h.run_subtask(1, 12, tm="1")
    h.finish_job()
    assert h.job.final_accumulators["n"].get_local_value() == 4  # not the failed attempt's 5


def test_failure_after_retries_fails_the_job_with_the_users_error(h: Harness) -> None:
    err = TaskError("ValueError", "bad record", [])
    for attempt, task in enumerate((10, 11)):
        h.started(0, task, attempt=attempt)
        h.report("src", 0, task, S.FAILED, attempt=attempt, error=err)
        h.ended_(0, task, reason="ExceptionFailure", attempt=attempt)
    h.job._spark_failed("SparkException: Job aborted")
    assert h.job.status is JobStatus.FAILED and h.job.done.is_set()
    assert h.job.error == err and "ValueError: bad record" in (h.job.error_text or "")
    assert all(ex.state.is_terminal for ex in h.job.graph.all_executions())
    statuses = list(dict.fromkeys(m.status for m in h.published if isinstance(m, JobStatusChanged)))
    assert statuses == [JobStatus.CREATED, JobStatus.RUNNING, JobStatus.FAILING, JobStatus.FAILED]


def test_cancel(h: Harness) -> None:
    h.started(0, 10)
    h.report("src", 0, 10, S.RUNNING)
    h.job.cancel()
    assert h.job.status is JobStatus.CANCELLING
    assert h.states("src", 0) == [(0, S.CANCELING)]
    for _ in range(100):  # the cancel call runs in a thread of its own
        if h.sc.calls:
            break
        h.loop.run_until_complete(asyncio.sleep(0.01))
    assert h.sc.calls == [f"cancelJobGroupAndFutureJobs:{JOB}"]
    # the interrupted worker reports a failure: it is the cancel we asked for
    h.report("src", 0, 10, S.FAILED, error=TaskError("KeyboardInterrupt", "", []))
    h.ended_(0, 10, reason="TaskKilled", text="TaskKilled(cancelled)")
    assert h.states("src", 0) == [(0, S.CANCELED)]
    h.on_loop(lambda: h.job._spark_failed("SparkException: Job 3 cancelled part of cancelled job group"))
    assert h.job.status is JobStatus.CANCELED
    assert all(ex.state is S.CANCELED for ex in h.job.graph.all_executions())
    h.job.cancel()  # a second cancel does nothing
    assert h.sc.calls == [f"cancelJobGroupAndFutureJobs:{JOB}"]


def test_events_after_the_end_are_ignored(h: Harness) -> None:
    h.run_subtask(0, 10)
    h.run_subtask(1, 11)
    h.finish_job()
    h.report("src", 0, 99, S.RUNNING)
    h.started(0, 99)
    assert h.states("src", 0) == [(0, S.FINISHED)]
    h.router.forget(JOB)
    assert h.router.stage_jobs == {}
