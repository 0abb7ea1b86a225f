"""The JobManager killed: a clear error at the client, nothing left running, and a restarted
session that still knows the earlier jobs (the job store)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

import sessioncluster
from sessioncluster import IntCounter, MapFunction

from ..helpers import descendants, session_pids, wait_gone

pytestmark = pytest.mark.integration


class Counting(MapFunction):
    def open(self, ctx) -> None:  # noqa: ANN001
        self.seen = IntCounter()
        ctx.add_accumulator("seen", self.seen)

    def map(self, value: int) -> int:
        self.seen.add(1)
        return value


def test_jobmanager_killed_then_restarted_keeps_the_job_history(sc_home: Path, figures) -> None:
    name = "jm-kill"
    # one TaskManager on local-cluster: a separate executor JVM, daemon and agent to outlive it
    session = sessioncluster.start(name, taskmanagers=1, slots=2, quiet=True)
    env = session.get_execution_environment()
    env.set_parallelism(2)
    done = env.from_collection(range(30)).map(Counting()).execute_and_collect_async("before the kill")
    assert done.get_job_execution_result().get_accumulator_result("seen") == 30
    pids = sorted(descendants(session_pids(session)))  # the Spark driver JVM too

    def slow(x: int) -> int:
        time.sleep(0.5)
        return x

    running = env.from_collection(range(100)).map(slow).execute_and_collect_async("killed")
    errors: list[BaseException] = []
    errors_at: list[float] = []
    waiter = threading.Thread(target=lambda: _collect(running, errors, errors_at))
    waiter.start()
    time.sleep(1.0)
    os.kill(session.info.jobmanager_pid, signal.SIGKILL)
    killed = time.monotonic()
    waiter.join(timeout=30)
    assert not waiter.is_alive(), "the client hung after the JobManager died"
    error_after = errors_at[0] - killed if errors_at else None
    assert errors and isinstance(errors[0], sessioncluster.JobManagerGoneError)
    assert "is gone" in str(errors[0])
    assert wait_gone(pids, timeout=30) == []  # no JVM, daemon or agent outlives it
    gone_after = time.monotonic() - killed

    t0 = time.monotonic()
    again = sessioncluster.start(name, taskmanagers=0, slots=2, quiet=True)
    figures["jobmanager_kill"] = {"client_error_after_s": round(error_after or -1, 3),
                                  "all_pids_gone_after_s": round(gone_after, 2),
                                  "pids_checked": len(pids),
                                  "restart_to_ready_s": round(time.monotonic() - t0, 1)}
    try:
        assert again.info.jobmanager_pid != session.info.jobmanager_pid
        jobs = {j.name: j for j in again.jobs()}
        assert jobs["before the kill"].status is sessioncluster.JobStatus.FINISHED
        details = again.job(done.job_id).details()
        assert details.accumulators == {"seen": 30}
        assert all(ex.state is sessioncluster.ExecutionState.FINISHED for ex in details.executions)
        # and the restarted session works
        assert env_job(again) == [2, 4, 6]
    finally:
        again.stop()


def _collect(client: sessioncluster.JobClient, errors: list[BaseException],
             errors_at: list[float]) -> None:
    try:
        client.collect()
    except BaseException as exc:  # noqa: BLE001 - handed to the test
        errors_at.append(time.monotonic())
        errors.append(exc)


def env_job(session: sessioncluster.Session) -> list[int]:
    env = session.get_execution_environment()
    return sorted(env.from_collection([1, 2, 3]).map(lambda x: x * 2).execute_and_collect())
