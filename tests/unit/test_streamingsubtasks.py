"""A STREAMING job's subtask reports merged into its ExecutionGraph: one Execution over the
micro-batches, a new attempt after a failed task, accumulators counted once per (micro-batch,
partition), a lost TaskManager's subtasks failed over; and the heartbeat timeout that finds a
TaskManager lost."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from sessioncluster.graph.executiongraph import ExecutionGraph
from sessioncluster.graph.jobgraph import JobGraph, build_job_graph
from sessioncluster.graph.lifecycle import ExecutionState as E
from sessioncluster.graph.streamgraph import ChainingStrategy, StreamGraph
from sessioncluster.graph.streamgraph import OperatorKind as K
from sessioncluster.jobmanager.blobserver import BlobServer
from sessioncluster.jobmanager.resourcemanager import ResourceManager
from sessioncluster.jobmanager.streamingsubtasks import StreamingSubtasks
from sessioncluster.protocol.messages import RegisterTaskManager, TaskError, TaskEvent


def job_graph() -> JobGraph:
    """[source -> map -> sink], parallelism 2."""
    g = StreamGraph()
    src = g.add_node(K.SOURCE_COLLECTION, [1, 2], parallelism=2, chaining=ChainingStrategy.HEAD)
    m = g.add_node(K.MAP, abs, parallelism=2)
    sink = g.add_node(K.SINK_COLLECT, parallelism=2)
    g.add_edge(src, m)
    g.add_edge(m, sink)
    return build_job_graph(g, [sink], "job", lambda obj, what: hashlib.sha256(repr(obj).encode()).hexdigest())


def make(tmp_path: Path) -> tuple[StreamingSubtasks, ExecutionGraph, ResourceManager, list[tuple[str, bool]]]:
    lost: list[tuple[str, bool]] = []
    rm = ResourceManager(BlobServer(tmp_path / "blobs"), lambda ident, m: None, lambda m: None,
                         lambda events: None, heartbeat_timeout=0.05,
                         on_lost=lambda tm, unresponsive: lost.append((tm, unresponsive)))
    for tm in ("0", "1"):
        rm.handle([tm.encode()], RegisterTaskManager(tm, "h", pid=10 + int(tm), daemon_pid=1,
                                                     jvm_pid=20 + int(tm), slots=2))
    graph = ExecutionGraph("job-1", job_graph())
    return StreamingSubtasks(graph, rm, lambda: False), graph, rm, lost


def report(vertex: str, state: E, task: int, batch: int, n: int = 0, tm: str = "0",
           partition: int = 0, error: TaskError | None = None) -> TaskEvent:
    accs = {"numRecordsIn": ("IntCounter", n), "numRecordsOut": ("IntCounter", n), "seen": ("IntCounter", n)}
    return TaskEvent("job-1", vertex, partition, 1, task, 0, state, time.time(), accs, error, tm,
                     batch=("q", batch, partition))


def micro_batch(subtasks: StreamingSubtasks, vertex: str, task: int, batch: int, n: int,
                tm: str = "0") -> None:
    for state in (E.DEPLOYING, E.INITIALIZING, E.RUNNING, E.FINISHED):
        subtasks.on_report(report(vertex, state, task, batch, n, tm))


def test_one_execution_over_micro_batches_with_the_latest_taskmanager(tmp_path: Path) -> None:
    subtasks, graph, rm, _ = make(tmp_path)
    vertex = graph.job_graph.vertices[0].vertex_id
    micro_batch(subtasks, vertex, task=1, batch=0, n=5, tm="0")
    micro_batch(subtasks, vertex, task=7, batch=1, n=3, tm="1")
    tv = graph.job_vertices[vertex].task_vertices[0]
    assert len(tv.executions) == 1
    ex = tv.current_execution
    assert ex.state is E.RUNNING and ex.tm_id == "1" and ex.spark_task_id == 7 and ex.slot is not None
    assert ex.accumulators["seen"] == ("IntCounter", 8)
    assert graph.vertex_records(vertex) == (8, 8)
    assert subtasks.settled() and not rm.slot_of_task  # each micro-batch's slot given back


def test_a_failed_attempt_counts_nothing_and_its_retry_is_a_new_attempt(tmp_path: Path) -> None:
    subtasks, graph, _, _ = make(tmp_path)
    vertex = graph.job_graph.vertices[0].vertex_id
    micro_batch(subtasks, vertex, task=1, batch=0, n=5)
    subtasks.on_report(report(vertex, E.RUNNING, 2, batch=1, n=0))
    boom = TaskError("ValueError", "boom", [("job.py", 3, "f", "raise")])
    subtasks.on_report(report(vertex, E.FAILED, 2, batch=1, n=4, error=boom))
    micro_batch(subtasks, vertex, task=3, batch=1, n=4)   # Spark's retry of batch 1
    micro_batch(subtasks, vertex, task=4, batch=1, n=4)   # batch 1 run again (after a restart)
    tv = graph.job_vertices[vertex].task_vertices[0]
    assert [ex.state for ex in tv.executions] == [E.FAILED, E.RUNNING]
    assert tv.executions[0].error == boom
    assert graph.live_accumulators()["seen"].get_local_value() == 9
    graph.new_attempts()  # a restart of the job: the counted micro-batches stay
    subtasks.carry_over()
    tv.current_execution.transition_to(E.FINISHED)
    assert graph.final_accumulators()["seen"].get_local_value() == 9


def test_an_unresponsive_taskmanager_is_lost_and_its_subtasks_fail_over(tmp_path: Path) -> None:
    subtasks, graph, rm, lost = make(tmp_path)
    vertex = graph.job_graph.vertices[0].vertex_id
    micro_batch(subtasks, vertex, task=1, batch=0, n=3, tm="1")
    subtasks.on_report(report(vertex, E.RUNNING, 5, batch=1, tm="1"))
    rm.taskmanagers["0"].info.last_heartbeat = time.time()
    rm.taskmanagers["1"].info.last_heartbeat = time.time() - 1.0
    rm.check_heartbeats()
    assert lost == [("1", True)] and "1" not in rm.taskmanagers and "0" in rm.taskmanagers
    # another agent of the stopped executor (one per Python daemon) does not bring it back
    rm.handle([b"x"], RegisterTaskManager("1", "h", pid=99, daemon_pid=2, jvm_pid=21, slots=2))
    assert "1" not in rm.taskmanagers
    subtasks.taskmanager_lost("1")
    tv = graph.job_vertices[vertex].task_vertices[0]
    assert tv.current_execution.state is E.FAILED
    assert tv.current_execution.error.exc_type == "TaskManagerLost"
    assert subtasks.accumulators()["seen"].get_local_value() == 3  # counted batches stay
    micro_batch(subtasks, vertex, task=6, batch=1, n=2, tm="0")  # Spark's retry elsewhere
    assert [ex.tm_id for ex in tv.executions] == ["1", "0"] and tv.current_execution.state is E.RUNNING
    assert subtasks.accumulators()["seen"].get_local_value() == 5 and subtasks.settled()
