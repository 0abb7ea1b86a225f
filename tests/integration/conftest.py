"""One real session cluster (JobManager, 2 TaskManagers on local-cluster, Spark) shared by
every integration test; stopped at the end, and checked to leave no process behind."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Iterator

import pytest

import sessioncluster
from sessioncluster.connection import pid_alive

SESSION_NAME = "itest"


def session_pids(session: sessioncluster.Session) -> list[int]:
    """The JobManager and every TaskManager's agent, daemon and executor JVM."""
    pids = [session.info.jobmanager_pid]
    for tm in session.status().taskmanagers:
        pids += [tm.pid, tm.daemon_pid, tm.jvm_pid]
    return pids


def wait_gone(pids: list[int], timeout: float = 60.0) -> list[int]:
    deadline = time.monotonic() + timeout
    alive = [p for p in pids if pid_alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if pid_alive(p)]
    return alive


@pytest.fixture(scope="session")
def sc_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("sc-home")
    old = os.environ.get("SESSIONCLUSTER_HOME")
    os.environ["SESSIONCLUSTER_HOME"] = str(home)
    os.environ["SESSIONCLUSTER_VALIDATE"] = "1"
    yield home
    if old is None:
        os.environ.pop("SESSIONCLUSTER_HOME", None)
    else:
        os.environ["SESSIONCLUSTER_HOME"] = old


@pytest.fixture(scope="session")
def session(sc_home: Path) -> Iterator[sessioncluster.Session]:
    s = sessioncluster.start(SESSION_NAME, taskmanagers=2, slots=1)
    pids = session_pids(s)
    yield s
    s.stop()
    left = wait_gone(pids)
    assert not left, f"processes of the session outlived stop(): {left}"


@pytest.fixture
def env(session: sessioncluster.Session) -> sessioncluster.StreamExecutionEnvironment:
    e = session.get_execution_environment()
    e.set_parallelism(2)
    return e
