"""A session on a real Spark standalone cluster: pyspark's own Master and two Workers
(``bin/spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``) on
127.0.0.1, the session's driver on ``spark://127.0.0.1:PORT``, and the core checks against it:
both TaskManagers register, a word count, a TaskManager killed mid-job, cancel.

The Workers start the executors with an environment of their own (not the JobManager's), so
this also checks what the TaskManager hook needs on a real cluster (see
``sessioncluster.spark.driver.cluster_conf``). ``SESSIONCLUSTER_SKIP_STANDALONE=1`` skips it.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import psutil
import pytest

import sessioncluster
from sessioncluster.cluster.connection import free_port
from sessioncluster.graph.lifecycle import ExecutionState, JobStatus
from sessioncluster.protocol.messages import TaskManagerChanged

from ..helpers import descendants, session_pids, wait_gone, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.environ.get("SESSIONCLUSTER_SKIP_STANDALONE") == "1",
                       reason="SESSIONCLUSTER_SKIP_STANDALONE=1"),
]

WORKERS = 2


def _master_state(webui_port: int) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{webui_port}/json/", timeout=5) as r:
            return json.load(r)
    except OSError:
        return None


def _alive_workers(webui_port: int) -> int:
    state = _master_state(webui_port)
    return sum(w["state"] == "ALIVE" for w in state["workers"]) if state else 0


class StandaloneCluster:
    """A Spark standalone Master and Workers from pyspark's own distribution."""

    def __init__(self, work: Path) -> None:
        import pyspark

        self.spark_home = os.path.dirname(pyspark.__file__)
        self.work = work
        self.port, self.webui_port = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        # as on a real cluster, the Master and Workers do not share the client's PYTHONPATH
        self.env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
                    "SPARK_HOME": self.spark_home, "SPARK_LOCAL_IP": "127.0.0.1",
                    "SPARK_LOG_DIR": str(work), "SPARK_WORKER_DIR": str(work)}
        self.procs: list[subprocess.Popen[bytes]] = []

    def _spark_class(self, name: str, *args: str) -> None:
        log = open(self.work / f"{name}-{len(self.procs)}.log", "wb")
        self.procs.append(subprocess.Popen(
            [os.path.join(self.spark_home, "bin", "spark-class"), name, *args],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=self.env,
            start_new_session=True))
        log.close()

    def start(self) -> None:
        self._spark_class("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                          "--port", str(self.port), "--webui-port", str(self.webui_port))
        wait_until(lambda: _master_state(self.webui_port), timeout=120, what="the Master")
        for i in range(WORKERS):
            work_dir = self.work / f"worker-{i}"
            work_dir.mkdir()
            self._spark_class("org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                              "--cores", "1", "--memory", "1g", "--webui-port", "0",
                              "--work-dir", str(work_dir), self.url)
        wait_until(lambda: _alive_workers(self.webui_port) == WORKERS, timeout=120,
                   what="both Workers to register with the Master")

    def pids(self) -> set[int]:
        """The Master, the Workers and everything below them (the executors)."""
        return descendants([p.pid for p in self.procs])

    def stop(self) -> list[int]:
        """Stop every process of the cluster; the pids that outlived it."""
        pids = self.pids()
        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        left = wait_gone(sorted(pids), timeout=30)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for proc in self.procs:
            proc.wait(timeout=30)
        return wait_gone(sorted(pids), timeout=30)


@pytest.fixture(scope="module")
def standalone(sc_home: Path,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"))
    try:
        t0 = time.monotonic()
        cluster.start()
        print(f"\nstandalone Master and {WORKERS} Workers up in {time.monotonic() - t0:.1f} s")
        yield cluster
    finally:
        left = cluster.stop()
        assert not left, f"processes of the standalone cluster outlived its stop: {left}"


@pytest.fixture(scope="module")
def sa_session(standalone: StandaloneCluster) -> Iterator[sessioncluster.Session]:
    t0 = time.monotonic()
    s = sessioncluster.start("standalone", taskmanagers=2, slots=1, spark_master=standalone.url)
    print(f"\nsession on {standalone.url} ready in {time.monotonic() - t0:.1f} s")
    pids = descendants(session_pids(s))
    yield s
    pids |= descendants(session_pids(s))
    s.stop()
    left = wait_gone(sorted(pids))
    assert not left, f"processes of the session outlived stop(): {left}"
    # the application is gone from the Master: its executors were released
    wait_until(lambda: not (_master_state(standalone.webui_port) or {}).get("activeapps"),
               timeout=60, what="the Master to see the application end")


def slow_identity(x: int) -> int:
    time.sleep(0.05)
    return x


def test_taskmanagers_are_the_standalone_executors(sa_session, standalone) -> None:
    overview = sa_session.status()
    assert overview.spark_master == standalone.url
    tms = overview.taskmanagers
    assert len(tms) == 2 and all(tm.slots == 1 for tm in tms)
    # each TaskManager's JVM is an executor launched by one of the Workers
    workers = {p.pid for p in standalone.procs[1:]}
    for tm in tms:
        jvm = psutil.Process(tm.jvm_pid)
        assert "CoarseGrainedExecutorBackend" in " ".join(jvm.cmdline())
        assert {a.pid for a in jvm.parents()} & workers
    apps = _master_state(standalone.webui_port)["activeapps"]
    assert len(apps) == 1 and apps[0]["name"] == "sessioncluster" and apps[0]["cores"] == 2
    # both run subtasks of one job
    env = sa_session.get_execution_environment()
    env.set_parallelism(2)
    client = env.from_collection(range(20)).map(slow_identity).execute_and_collect_async("spread")
    assert sorted(client.collect()) == list(range(20))
    finished = [ex for ex in client.details().executions if ex.state is ExecutionState.FINISHED]
    assert {ex.tm_id for ex in finished} == {tm.tm_id for tm in tms}
    # the Workers' executors do not inherit the JobManager's environment, yet their slot
    # workers run the JobManager's sessioncluster (spark.executorEnv.PYTHONPATH)
    where = env.from_collection(range(4)).map(
        lambda _: __import__("sessioncluster").__file__).execute_and_collect()
    assert set(where) == {sessioncluster.__file__}


def test_word_count(sa_session) -> None:
    lines = ["to be or not to be", "that is the question", "whether tis nobler in the mind"] * 5
    env = sa_session.get_execution_environment()
    counts = (env.from_collection(lines).flat_map(str.split).map(lambda w: (w, 1))
              .key_by(lambda t: t[0]).sum(1).execute_and_collect())
    expected = collections.Counter(w for line in lines for w in line.split())
    assert dict(counts) == dict(expected) and len(counts) == len(expected)


def test_taskmanager_killed_mid_job(sa_session) -> None:
    """SIGKILL one executor JVM during a job: the right result, the victim LOST, and the Worker
    launches a replacement executor that registers as a new TaskManager."""
    changes: list[tuple[str, str]] = []

    def on_cluster(topic: str, msg: object) -> None:
        if isinstance(msg, TaskManagerChanged):
            changes.append((msg.tm_id, msg.change))

    unsubscribe = sa_session.events.subscribe("cluster", on_cluster)
    try:
        before = sa_session.status().taskmanagers
        victim = before[0]
        known = {tm.tm_id for tm in before}
        env = sa_session.get_execution_environment()
        env.set_parallelism(4)
        client = env.from_collection(range(120)).map(slow_identity).execute_and_collect_async("kill")
        wait_until(lambda: any(ex.state is ExecutionState.RUNNING
                               for ex in client.details().executions), what="a running subtask")
        os.kill(victim.jvm_pid, signal.SIGKILL)
        assert sorted(client.collect()) == list(range(120))
        wait_until(lambda: (victim.tm_id, "LOST") in changes, timeout=60, what="TaskManager LOST")
        wait_until(lambda: any(c == "REGISTERED" and tm not in known for tm, c in changes),
                   timeout=120, what="a replacement TaskManager")
        tms = wait_until(lambda: (lambda t: t if len(t) == 2 else None)(
            sa_session.status().taskmanagers), timeout=120, what="two TaskManagers again")
        assert victim.tm_id not in {tm.tm_id for tm in tms}
    finally:
        unsubscribe()


def test_cancel_of_a_running_job(sa_session, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()

    def slow(x: int) -> int:
        (marks / str(x)).touch()  # the executors share this machine's file system
        time.sleep(0.1)
        return x

    env = sa_session.get_execution_environment()
    env.set_parallelism(2)
    client = env.from_collection(range(400)).map(slow).execute_and_collect_async("long")
    wait_until(lambda: len(list(marks.iterdir())) >= 4, what="the job to run")
    client.cancel()
    assert client.wait(timeout=60).status is JobStatus.CANCELED
    seen = len(list(marks.iterdir()))
    time.sleep(1.0)
    assert len(list(marks.iterdir())) == seen < 400
    assert env.from_collection([5]).map(lambda x: x + 1).execute_and_collect() == [6]
