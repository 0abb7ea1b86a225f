"""The runtime on a real session: real JobManager, TaskManagers, Spark and ZeroMQ sockets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import zmq

import sessioncluster
from sessioncluster.client.gateway import DispatcherError
from sessioncluster.graph.lifecycle import EXECUTION_PATH, ExecutionState, JobStatus, path_to
from sessioncluster.protocol.messages import ExecutionStateChanged
from sessioncluster.protocol.wire import MessageSigner

from ..helpers import wait_until

pytestmark = pytest.mark.integration


def slow_square(x: int) -> int:
    time.sleep(0.05)
    return x * x


def test_two_taskmanagers_register_and_both_run_subtasks(session, env) -> None:
    tms = session.status().taskmanagers
    assert sorted(tm.tm_id for tm in tms) == ["0", "1"]  # the daemon hook registered both
    assert all(tm.slots == 1 and tm.jvm_pid != tm.pid for tm in tms)

    client = env.from_collection(range(20)).map(slow_square).execute_and_collect_async("spread")
    assert sorted(client.collect()) == [x * x for x in range(20)]
    details = client.details()
    finished = [ex for ex in details.executions if ex.state is ExecutionState.FINISHED]
    assert len(finished) == 2
    assert {ex.tm_id for ex in finished} == {"0", "1"}
    assert all(ex.slot == 0 for ex in finished)
    # every Execution walked Flink's states in order
    for ex in finished:
        assert list(ex.state_times) == [s.value for s in EXECUTION_PATH]


def test_key_by_reduce_matches_plain_python(env) -> None:
    lines = ["to be or not to be", "that is the question", "to be is to do"] * 7
    result = (env.from_collection(lines).flat_map(str.split).map(lambda w: (w, 1))
              .key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
              .execute_and_collect())
    expected: dict[str, int] = {}
    for line in lines:
        for w in line.split():
            expected[w] = expected.get(w, 0) + 1
    assert dict(result) == expected
    assert len(result) == len(expected)  # one final result per key


def test_filter_and_map_chain(env) -> None:
    out = env.from_collection(range(100)).filter(lambda x: x % 3 == 0).map(lambda x: -x).execute_and_collect()
    assert sorted(out) == sorted(-x for x in range(100) if x % 3 == 0)


def test_function_from_main_in_second_client_process(session, sc_home: Path, tmp_path: Path) -> None:
    script = tmp_path / "client2.py"
    script.write_text(textwrap.dedent(f"""
        import json, sessioncluster

        class Scale:                       # a class defined in __main__
            def __init__(self, k):
                self.k = k

        def scaled(x, s=Scale(3)):         # a function defined in __main__
            return (x % 4, x * s.k)

        session = sessioncluster.connect({session.name!r})
        env = session.get_execution_environment()
        env.set_parallelism(2)
        out = (env.from_collection(range(40)).map(scaled)
                  .key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
                  .execute_and_collect("from __main__"))
        print(json.dumps(sorted(out)))
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "SESSIONCLUSTER_HOME": str(sc_home)})
    assert proc.returncode == 0, proc.stderr
    expected = {k: sum(3 * x for x in range(40) if x % 4 == k) for k in range(4)}
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [[k, v] for k, v in sorted(expected.items())]
    # the first client is still connected and works
    assert any(j.name == "from __main__" for j in session.jobs())


def test_second_job_with_same_code_is_a_library_cache_hit(session, env) -> None:
    marker = f"cache-{time.time_ns()}"  # fresh code: a new blob nobody has cached yet

    def tag(x: int) -> str:
        time.sleep(0.05)
        return f"{marker}:{x}"

    def run() -> None:
        client = env.from_collection(list(range(10))).map(tag).execute_and_collect_async("cache")
        assert sorted(client.collect()) == sorted(f"{marker}:{x}" for x in range(10))
        assert {ex.tm_id for ex in client.details().executions} == {"0", "1"}

    def stats() -> dict[str, tuple[int, int]]:
        return {tm.tm_id: (tm.library_cache.hits, tm.library_cache.misses)
                for tm in session.status().taskmanagers}

    run()
    # heartbeats carry the library cache's figures; wait for the ones after the job
    before = wait_until(lambda: (lambda s: s if all(m > 0 for _, m in s.values()) else None)(stats()),
                        what="cache figures")
    time.sleep(1.2)  # two more heartbeats, so the first job's figures are complete
    before = stats()
    run()
    after = wait_until(lambda: (lambda s: s if all(s[t][0] > before[t][0] for t in s) else None)(stats()),
                       what="library cache hits on every TaskManager")
    for tm_id in before:
        assert after[tm_id][1] == before[tm_id][1], f"TaskManager {tm_id} fetched the blob again"


def raising(x: int) -> float:
    return 1 / (x - 7)  # raises ZeroDivisionError for x == 7


def test_user_error_gives_failed_with_user_traceback_and_next_job_runs(session, env) -> None:
    with pytest.raises(sessioncluster.JobExecutionException) as info:
        env.from_collection(range(10)).map(raising).name("divide").execute_and_collect("failing")
    text = str(info.value)
    assert "ZeroDivisionError" in text
    assert __file__ in text and "in raising" in text and "return 1 / (x - 7)" in text
    assert "operator 'divide'" in text
    assert "py4j" not in text and "org.apache.spark" not in text  # the user's frames only
    assert info.value.status is JobStatus.FAILED
    failed = [j for j in session.jobs() if j.name == "failing"]
    assert failed and failed[-1].status is JobStatus.FAILED
    # the attempts are in the ExecutionGraph: each failed attempt FAILED with the error
    details = session.job(info.value.job_id).details()
    failed_attempts = [ex for ex in details.executions if ex.state is ExecutionState.FAILED]
    assert failed_attempts and any(ex.error and ex.error.exc_type == "ZeroDivisionError"
                                   for ex in failed_attempts)
    # the subtask holding x == 7 failed as often as the session allows (task_attempts=2)
    user_failed = [ex for ex in failed_attempts if ex.error and ex.error.exc_type == "ZeroDivisionError"]
    per_subtask = {(ex.vertex_id, ex.subtask) for ex in user_failed}
    assert len(per_subtask) == 1 and sorted(ex.attempt for ex in user_failed) == [0, 1]
    # the session goes on
    assert sorted(env.from_collection([1, 2, 3]).map(lambda x: x * 10).execute_and_collect()) == [10, 20, 30]


def test_unpicklable_function_is_refused_at_submit(session, env) -> None:
    lock = threading.Lock()
    jobs_before = len(session.jobs())
    with pytest.raises(sessioncluster.UnpicklableFunctionError, match="'Map'.*lock"):
        env.from_collection([1]).map(lambda x: (lock, x)).execute_and_collect()
    assert len(session.jobs()) == jobs_before  # nothing was submitted


def test_unknown_job_id_is_a_clear_error(session) -> None:
    with pytest.raises(DispatcherError, match="no job with id 'no-such-job'") as info:
        session.job("no-such-job")
    assert info.value.kind == "unknown_job"


def test_cancel_stops_a_long_job(session, env, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()

    def slow(x: int) -> int:
        (marks / str(x)).touch()
        time.sleep(0.1)
        return x

    client = env.from_collection(range(400)).map(slow).execute_and_collect_async("long")
    wait_until(lambda: len(list(marks.iterdir())) >= 4, what="the job to run")
    client.cancel()
    reply = client.wait(timeout=60)
    assert reply.status is JobStatus.CANCELED
    with pytest.raises(sessioncluster.JobExecutionException, match="cancelled"):
        client.get_job_execution_result()
    seen = len(list(marks.iterdir()))
    time.sleep(1.0)  # Spark's tasks were interrupted: no record is processed any more
    assert len(list(marks.iterdir())) == seen < 400
    states = {ex.state for ex in client.details().executions}
    assert states <= {ExecutionState.CANCELED, ExecutionState.FINISHED}, states
    assert sorted(env.from_collection([5]).map(lambda x: x + 1).execute_and_collect()) == [6]


def test_execution_state_changes_are_published_in_legal_order(session, env) -> None:
    wire = MessageSigner(session.info.key, sender="test-sub")
    ctx = zmq.Context.instance()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(session.info.events)
    time.sleep(0.3)  # a SUB socket misses what is published before it has connected
    try:
        client = env.from_collection(range(10)).map(lambda x: x).execute_and_collect_async("events")
        client.collect()
        history: dict[tuple[str, int, int], list[ExecutionState]] = {}
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and sub.poll(500):
            frames = sub.recv_multipart()
            got = wire.unpack(frames[1:])
            assert got is not None
            msg = got[1]
            if isinstance(msg, ExecutionStateChanged) and msg.job_id == client.job_id:
                history.setdefault((msg.vertex_id, msg.subtask, msg.attempt), []).append(msg.state)
    finally:
        sub.close()
    assert len(history) == 2
    for states in history.values():
        assert states[-1] is ExecutionState.FINISHED
        prev = ExecutionState.CREATED
        for s in states:
            assert path_to(prev, s) == [s], f"{prev} -> {s} in {states}"
            prev = s


def test_cancel_of_a_job_with_three_sinks_starts_no_later_sink(session, env, tmp_path: Path) -> None:
    """Each sink is one Spark action; a cancel during the first must keep the others from
    starting (Spark's jobs of the job's group are counted by the JobMaster)."""
    marks = tmp_path / "marks"
    marks.mkdir()

    def slow(x: int) -> int:
        (marks / str(x)).touch()
        time.sleep(0.1)
        return x

    for i in range(3):
        env.from_collection(range(i * 1000, i * 1000 + 200)).map(slow).sink_to_text(
            str(tmp_path / f"out{i}"))
    client = env.execute_async("three sinks")
    wait_until(lambda: len(list(marks.iterdir())) >= 2, what="the first sink to run")
    client.cancel()
    assert client.wait(timeout=60).status is JobStatus.CANCELED
    time.sleep(1.0)  # a later action would have started by now
    details = client.details()
    assert details.spark_jobs == 1, f"{details.spark_jobs} Spark actions ran after the cancel"
    assert not (tmp_path / "out1").exists() and not (tmp_path / "out2").exists()
    assert all(int(m.name) < 1000 for m in marks.iterdir())
