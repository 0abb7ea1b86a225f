"""A TaskManager that stops answering heartbeats without dying (SIGSTOP of its executor JVM:
every agent of the executor then sends no heartbeat, as Flink's heartbeat sees a hung
TaskManager) is lost after ``heartbeat.timeout``; its running subtasks (BATCH or STREAMING) fail over to
the other TaskManager with a new attempt, and the job still gives its exact result.

A session of its own: the heartbeat timeout is a start option of the session (Flink's
``heartbeat.timeout`` is a cluster setting), here 3 s instead of Flink's 50 s."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import sessioncluster
from sessioncluster.api.accumulators import IntCounter
from sessioncluster.graph.lifecycle import ExecutionState, JobStatus
from sessioncluster.protocol.messages import TaskManagerChanged
from sessioncluster.pyflink.common import WatermarkStrategy
from sessioncluster.pyflink.datastream import RuntimeExecutionMode
from sessioncluster.pyflink.datastream.connectors.number_seq import NumberSequenceSource
from sessioncluster.pyflink.datastream.functions import MapFunction, RuntimeContext

from ..helpers import descendants, session_pids, wait_gone, wait_until

pytestmark = pytest.mark.integration

RECORDS = 200  # 5 s of work per subtask: the stopped one cannot end before it is lost
HEARTBEAT_TIMEOUT_MS = 3000


class SlowCount(MapFunction):
    """Counts its records (accumulator ``seen``), slowly: the job runs while a TaskManager stops."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.seen = IntCounter()
        runtime_context.add_accumulator("seen", self.seen)

    def map(self, value: int) -> int:
        time.sleep(0.05)
        self.seen.add(1)
        return value


@pytest.fixture(scope="module")
def own_session(sc_home: Path) -> Iterator[sessioncluster.Session]:
    """One session for both modes: after the first test Spark has replaced the lost executor,
    and each test waits for two TaskManagers before it starts."""
    s = sessioncluster.start("heartbeat", taskmanagers=2, slots=1,
                             heartbeat_timeout=HEARTBEAT_TIMEOUT_MS)
    pids = descendants(session_pids(s))
    yield s
    pids |= descendants(session_pids(s))
    s.stop()
    assert not wait_gone(sorted(pids)), "processes of the session outlived stop()"


@pytest.mark.parametrize("mode", [RuntimeExecutionMode.STREAMING, RuntimeExecutionMode.BATCH])
def test_a_stopped_taskmanager_is_lost_and_its_subtasks_fail_over(
        own_session: sessioncluster.Session, mode: RuntimeExecutionMode) -> None:
    session = own_session
    lost: dict[str, float] = {}

    def on_cluster(topic: str, msg: Any) -> None:
        if isinstance(msg, TaskManagerChanged) and msg.change == "LOST":
            lost.setdefault(msg.tm_id, time.monotonic())

    wait_until(lambda: len(session.status().taskmanagers) == 2, timeout=120,
               what="two TaskManagers (a replacement for one lost before)")
    unsubscribe = session.events.subscribe("cluster", on_cluster)
    env = session.get_execution_environment()
    env.set_runtime_mode(mode)
    env.set_parallelism(2)
    numbers = env.from_source(NumberSequenceSource(1, RECORDS), WatermarkStrategy.no_watermarks(),
                              "numbers")
    counted = numbers.map(SlowCount())
    got: list[int] = []
    if mode is RuntimeExecutionMode.STREAMING:  # records as they come, through the iterator
        results = counted.execute_and_collect("a TaskManager stops")
        client = results.client
        reader = threading.Thread(target=lambda: got.extend(results), daemon=True)
    else:  # a BATCH job's records when it ends
        client = counted.execute_and_collect_async("a TaskManager stops")
        reader = threading.Thread(target=lambda: got.extend(client.collect(timeout=240)), daemon=True)
    reader.start()
    stopped = None
    try:
        running = wait_until(lambda: [ex for ex in client.details().executions
                                      if ex.state is ExecutionState.RUNNING and ex.tm_id],
                             timeout=180, what="a RUNNING subtask on a TaskManager")
        victim = next(tm for tm in session.status().taskmanagers if tm.tm_id == running[0].tm_id)
        os.kill(victim.jvm_pid, signal.SIGSTOP)
        stopped, at = victim.jvm_pid, time.monotonic()
        wait_until(lambda: victim.tm_id in lost, timeout=60, what="the stopped TaskManager LOST")
        assert lost[victim.tm_id] - at >= HEARTBEAT_TIMEOUT_MS / 1000 - 1.0  # not before its timeout
        reader.join(180)
        assert not reader.is_alive(), "the job did not end"
    finally:
        unsubscribe()
        if stopped is not None:
            try:
                os.kill(stopped, signal.SIGCONT)  # if Spark has not killed it yet
            except ProcessLookupError:
                pass
    assert sorted(got) == list(range(1, RECORDS + 1))
    reply = client.wait(60)
    assert reply.status is JobStatus.FINISHED
    details = client.details()
    assert details.accumulators["seen"] == RECORDS
    on_victim = [ex for ex in details.executions if ex.tm_id == victim.tm_id
                 and ex.state is ExecutionState.FAILED]
    assert on_victim and all(ex.error is not None for ex in on_victim)
    if mode is RuntimeExecutionMode.STREAMING:  # BATCH: Spark's own report of the lost executor
        assert all(ex.error.exc_type == "TaskManagerLost" for ex in on_victim)
    for ex in on_victim:  # each ran again, a new attempt, on another TaskManager
        later = [r for r in details.executions if (r.vertex_id, r.subtask) == (ex.vertex_id, ex.subtask)
                 and r.attempt > ex.attempt]
        assert any(r.state is ExecutionState.FINISHED and r.tm_id != victim.tm_id for r in later), later
