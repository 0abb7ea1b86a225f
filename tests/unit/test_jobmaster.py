"""A JobMaster fed TaskEvents and typed Spark events in the orders that happen in practice,
with no Spark: its ExecutionGraph must end in Flink's states."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import pytest

from sessioncluster.graph.jobgraph import build_job_graph
from sessioncluster.graph.lifecycle import ExecutionState as E
from sessioncluster.graph.lifecycle import JobStatus as J
from sessioncluster.graph.streamgraph import ChainingStrategy, Partitioning, StreamGraph
from sessioncluster.graph.streamgraph import OperatorKind as K
from sessioncluster.jobmanager.blobserver import BlobServer
from sessioncluster.jobmanager.jobmaster import JobMaster
from sessioncluster.jobmanager.resourcemanager import ResourceManager
from sessioncluster.protocol.messages import RegisterTaskManager, TaskError, TaskEvent
from sessioncluster.spark.events import StageSubmitted, TaskEnded, TaskStarted

JOB = "f" * 32


def put_blob(obj: Any, what: str) -> str:
    return hashlib.sha256(repr(obj).encode()).hexdigest()


def first(t: Any) -> Any:
    return t[0]


class FakeSparkContext:
    """Records the cancels a JobMaster sends to Spark; nothing else is called on these paths."""

    def __init__(self) -> None:
        self.cancelled: list[str] = []
        outer = self

        class _Sc:
            def cancelJobGroupAndFutureJobs(self, group: str) -> None:  # noqa: N802 - Spark's name
                outer.cancelled.append(group)

        class _Jsc:
            def sc(self) -> _Sc:
                return _Sc()

        self._jsc = _Jsc()


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    loop.close()
    asyncio.set_event_loop(None)


@pytest.fixture
def job(loop, tmp_path: Path) -> JobMaster:
    """[source -> map] (parallelism 2) -HASH-> [reduce -> collect] (parallelism 1), RUNNING."""
    g = StreamGraph()
    src = g.add_node(K.SOURCE_COLLECTION, [1, 2], parallelism=2, chaining=ChainingStrategy.HEAD)
    m = g.add_node(K.MAP, abs, parallelism=2)
    r = g.add_node(K.REDUCE, max, parallelism=1)
    sink = g.add_node(K.SINK_COLLECT, parallelism=1)
    g.add_edge(src, m)
    g.add_edge(m, r, Partitioning.HASH, key_selector=first)
    g.add_edge(r, sink)
    graph = build_job_graph(g, [sink], "job", put_blob)
    rm = ResourceManager(BlobServer(tmp_path / "blobs"), lambda ident, msg: None, lambda msg: None,
                         lambda events: None)
    for tm in ("0", "1"):
        rm.on_register([tm.encode()], RegisterTaskManager(tm, "127.0.0.1", 1, 2, 3, 1))
    published: list[Any] = []
    done: list[JobMaster] = []
    master = JobMaster(JOB, graph, FakeSparkContext(), rm, loop,
                       lambda topic, msg: published.append(msg), done.append)
    master._set_status(J.CREATED)
    master._set_status(J.RUNNING)
    master.published, master.ended = published, done  # type: ignore[attr-defined]
    return master


def vertex_ids(job: JobMaster) -> tuple[str, str]:
    up, down = (v.vertex_id for v in job.job_graph.vertices)
    return up, down


def report(job: JobMaster, vertex: str, subtask: int, task: int, state: E, tm: str = "0",
           stage: int = 0, accumulators: dict | None = None, error: TaskError | None = None) -> None:
    job.on_task_event(TaskEvent(JOB, vertex, subtask, stage, task, 0, state, 1.0, accumulators,
                                error, tm))


def started(stage: int, task: int, subtask: int, tm: str = "0", attempt: int = 0) -> TaskStarted:
    return TaskStarted(stage, task, subtask, attempt, tm, 1.0)


def ended(stage: int, task: int, subtask: int, reason: str = "Success", text: str = "",
          tm: str = "0", attempt: int = 0) -> TaskEnded:
    return TaskEnded(stage, task, subtask, attempt, tm, reason, text, 2.0)


def test_a_workers_running_report_before_sparks_task_start(job: JobMaster) -> None:
    up, _ = vertex_ids(job)
    report(job, up, 0, 1, E.RUNNING)          # the worker is faster than the listener bus
    ex = job.graph.job_vertices[up].task_vertices[0].current_execution
    assert ex.state is E.RUNNING and list(ex.state_times)[:5] == [
        "CREATED", "SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING"]
    job.on_spark_task_event(started(0, 1, 0))  # the late task start is stale, not illegal
    assert ex.state is E.RUNNING and ex.slot == 0
    report(job, up, 0, 1, E.FINISHED, accumulators={"numRecordsOut": ("IntCounter", 1)})
    job.on_spark_task_event(ended(0, 1, 0))
    assert ex.state is E.FINISHED
    assert job.rm.slot_of_task == {}  # the slot is free again


def test_spark_events_before_any_report_wait_for_it(job: JobMaster) -> None:
    up, _ = vertex_ids(job)
    job.on_spark_task_event(started(0, 7, 1))  # which vertex is unknown until a task reports
    assert job.unresolved[7]
    ex = job.graph.job_vertices[up].task_vertices[1].current_execution
    assert ex.state is E.CREATED
    report(job, up, 1, 7, E.DEPLOYING, tm="1")
    assert not job.unresolved and ex.state is E.DEPLOYING and ex.tm_id == "1"


def test_lost_executor_then_retry_on_the_other_taskmanager(job: JobMaster) -> None:
    up, _ = vertex_ids(job)
    report(job, up, 0, 1, E.RUNNING, tm="0", accumulators={"n": ("IntCounter", 5)})
    job.on_spark_task_event(ended(0, 1, 0, "ExecutorLostFailure",
                                  "ExecutorLostFailure(0,true,Some(Executor heartbeat timed out))"))
    tv = job.graph.job_vertices[up].task_vertices[0]
    lost = tv.executions[0]
    assert lost.state is E.FAILED and lost.error.exc_type == "TaskFailure"
    assert "ExecutorLostFailure" in lost.error.message
    # Spark retries the task as a new task attempt on the other executor: attempt #1
    job.on_spark_task_event(started(0, 2, 0, tm="1", attempt=1))
    report(job, up, 0, 2, E.RUNNING, tm="1")
    report(job, up, 0, 2, E.FINISHED, tm="1", accumulators={"n": ("IntCounter", 2)})
    assert [ex.attempt_number for ex in tv.executions] == [0, 1]
    assert [ex.state for ex in tv.executions] == [E.FAILED, E.FINISHED]
    assert tv.executions[1].tm_id == "1"
    assert job.graph.final_accumulators()["n"].get_local_value() == 2  # the lost attempt's 5 does not count


def test_user_error_fails_the_job_with_the_users_traceback(job: JobMaster, loop) -> None:
    up, _ = vertex_ids(job)
    error = TaskError("ZeroDivisionError", "division by zero", [("cell.py", 3, "f", "1 / 0")],
                      "Map", "1/2")
    report(job, up, 0, 1, E.RUNNING)
    report(job, up, 0, 1, E.FAILED, error=error)
    job.on_spark_task_event(ended(0, 1, 0, "ExceptionFailure", "ExceptionFailure(...)"))
    job._spark_failed("UserCodeError: ...")
    assert job.status is J.FAILED and job.done.is_set() and job.ended == [job]
    assert job.error == error and "division by zero" in job.error_text
    assert job.result().status is J.FAILED
    states = {ex.state for ex in job.graph.all_executions()}
    assert states == {E.FAILED}  # the subtasks never started fail with the job (fail_pending)


def test_cancel_cancels_the_job_group_and_ends_canceled(job: JobMaster, loop) -> None:
    up, _ = vertex_ids(job)
    report(job, up, 0, 1, E.RUNNING)
    report(job, up, 1, 2, E.RUNNING, tm="1")
    job.cancel()
    assert job.status is J.CANCELLING
    running = [ex for ex in job.graph.all_executions() if ex.spark_task_id is not None]
    assert {ex.state for ex in running} == {E.CANCELING}
    # the worker's interruption is a failure report; during a cancel it is the cancel
    report(job, up, 0, 1, E.FAILED, error=TaskError("KeyboardInterrupt", "", []))
    job.on_spark_task_event(ended(0, 2, 1, "TaskKilled", "TaskKilled(...)", tm="1"))
    job._spark_failed("Job 3 cancelled part of cancelled job group")
    loop.run_until_complete(asyncio.wait_for(job.done.wait(), 5))
    assert job.status is J.CANCELED
    assert {ex.state for ex in job.graph.all_executions()} == {E.CANCELED}
    for _ in range(50):  # the cancel went to Spark from a thread of its own
        if job.sc.cancelled:
            break
        loop.run_until_complete(asyncio.sleep(0.02))
    assert job.sc.cancelled == [JOB]


def test_success_waits_for_the_final_reports(job: JobMaster, loop) -> None:
    up, down = vertex_ids(job)
    for subtask, task in ((0, 1), (1, 2)):
        report(job, up, subtask, task, E.FINISHED, accumulators={"n": ("IntCounter", 1)})
    job._spark_succeeded_job([b"batch"], [])
    loop.run_until_complete(asyncio.sleep(0.05))
    assert not job.done.is_set()  # the reduce has not reported yet
    report(job, down, 0, 3, E.FINISHED, stage=1, accumulators={"n": ("IntCounter", 1)})
    loop.run_until_complete(asyncio.wait_for(job.done.wait(), 5))
    assert job.status is J.FINISHED
    assert job.result().batches == [b"batch"]
    assert job.final_accumulators["n"].get_local_value() == 3


def test_stage_submitted_is_ignored_by_a_datastream_job(job: JobMaster) -> None:
    job.on_stage_submitted(StageSubmitted(0, JOB, "collect", 2))
    assert len(job.job_graph.vertices) == 2  # its JobGraph came from the client
