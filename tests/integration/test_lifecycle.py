"""The command line: start, a second start that connects, status, list, stop, stale files."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import sessioncluster
from sessioncluster.cluster.connection import ConnectionInfo, connection_path

from ..helpers import session_pids, wait_gone

pytestmark = pytest.mark.integration


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sessioncluster", *args], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ))


def test_cli_start_status_list_stop_leaves_no_process(sc_home: Path) -> None:
    name = "lifecycle"
    started = cli("start", "--name", name, "--taskmanagers", "1")
    assert started.returncode == 0, started.stderr
    assert f"session '{name}': ready" in started.stdout and "TaskManagers (1 of 1)" in started.stdout
    path = connection_path(name)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    info = ConnectionInfo.read(path)
    assert info.dispatcher.startswith("tcp://127.0.0.1:")
    session = sessioncluster.connect(name)
    pids = session_pids(session)
    try:
        again = cli("start", "--name", name, "--taskmanagers", "1")
        assert again.returncode == 0
        assert "already running" in again.stderr
        assert ConnectionInfo.read(path).jobmanager_pid == info.jobmanager_pid

        status = cli("status", name)
        assert status.returncode == 0 and "TaskManagers (1 of 1)" in status.stdout
        assert info.key not in status.stdout + status.stderr  # the key never shows
        log = (sc_home / "sessions" / name / "jobmanager.log").read_text()
        assert info.key not in log
        assert name in cli("list").stdout
        assert env_job_works(session)
    finally:
        stopped = cli("stop", name)
    assert stopped.returncode == 0, stopped.stderr
    assert wait_gone(pids) == []
    assert not path.exists()
    assert "no session cluster" in cli("status", name).stderr


def env_job_works(session: sessioncluster.Session) -> bool:
    env = session.get_execution_environment()
    return sorted(env.from_collection([3, 1, 2]).map(lambda x: x * 2).execute_and_collect()) == [2, 4, 6]


def test_stale_connection_file_is_cleaned_up(sc_home: Path) -> None:
    path = connection_path("stale")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    ConnectionInfo("stale", "k" * 64, "tcp://127.0.0.1:1", "tcp://127.0.0.1:2",
                   "tcp://127.0.0.1:3", dead.pid).write(path)
    with pytest.raises(LookupError, match="not running"):
        sessioncluster.connect("stale")
    assert not path.exists()
