"""The JobManager's side of application mode, without Spark: the uploaded program's checks,
its child process, and the outcome kept in ``application.json``."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from sessioncluster.cluster.appstatus import ended_applications, read_status, write_status
from sessioncluster.jobmanager.application import ApplicationError, ApplicationRunner, _traceback_of
from sessioncluster.jobmanager.blobserver import BlobServer
from sessioncluster.protocol.messages import ApplicationState, ApplicationStatus, RunApplication


def message(name: str, source: bytes, key: str | None = None) -> RunApplication:
    return RunApplication(name, key or hashlib.sha256(source).hexdigest(), source, ["x"], "")


@pytest.fixture
def runner_and_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SESSIONCLUSTER_HOME", str(tmp_path / "home"))
    loop = asyncio.new_event_loop()
    ends: list[ApplicationStatus] = []
    runner = ApplicationRunner("app", tmp_path, BlobServer(tmp_path / "blobs"), loop,
                               lambda: ["j1"], ends.append)
    yield runner, ends, loop
    loop.close()


@pytest.mark.parametrize("name", ["../evil.py", "a/b.py", "", "bad name.py"])
def test_a_program_name_with_a_directory_or_odd_characters_is_refused(runner_and_ends, name: str) -> None:
    runner, _, _ = runner_and_ends
    with pytest.raises(ApplicationError, match="bad program file name"):
        runner.start(message(name, b"print(1)"))
    assert runner.status is None and runner.proc is None


def test_a_program_whose_key_is_not_its_hash_is_refused(runner_and_ends) -> None:
    runner, _, _ = runner_and_ends
    with pytest.raises(ValueError, match="does not match its SHA-256"):
        runner.start(message("p.py", b"print(1)", key="0" * 64))
    assert runner.proc is None


def test_main_that_cannot_reach_its_session_fails_and_the_outcome_is_kept(runner_and_ends,
                                                                          tmp_path: Path) -> None:
    """The child runs, finds no session named 'app' (none was started), exits 2: FAILED, with
    its message as the error, recorded in application.json; a second program is refused."""
    runner, ends, loop = runner_and_ends
    asyncio.set_event_loop(loop)
    status = runner.start(message("p.py", b"print('never')"))
    assert status.state is ApplicationState.RUNNING
    assert read_status(tmp_path).state is ApplicationState.RUNNING
    assert (tmp_path / "application" / "p.py").read_bytes() == b"print('never')"
    with pytest.raises(ApplicationError, match="runs an application already"):
        runner.start(message("q.py", b""))
    loop.run_until_complete(asyncio.wait_for(runner._task, 60))
    final = read_status(tmp_path)
    assert ends and final == ends[0]
    assert final.state is ApplicationState.FAILED and final.exit_code == 2
    assert "no session cluster named 'app'" in final.error
    assert final.job_ids == ["j1"] and final.end_time >= final.start_time


def test_the_error_is_the_last_traceback_of_the_log(tmp_path: Path) -> None:
    log = tmp_path / "application.log"
    log.write_text("out\nTraceback (most recent call last):\n  old\nKeyError: 1\nmore\n"
                   "Traceback (most recent call last):\n  File \"p.py\", line 3\nValueError: x\n")
    assert _traceback_of(log) == ("Traceback (most recent call last):\n  File \"p.py\", line 3\n"
                                  "ValueError: x")
    log.write_text("".join(f"line {i}\n" for i in range(50)))
    assert _traceback_of(log).splitlines() == [f"line {i}" for i in range(30, 50)]
    assert read_status(tmp_path / "nothing") is None


def test_an_application_has_ended_once_its_cluster_has_no_connection_file(tmp_path: Path) -> None:
    status = ApplicationStatus("wc.py", ["x"], ApplicationState.FINISHED, 42, "log", 1.0, 2.0)
    for name in ("ended", "running"):
        write_status(tmp_path / name, status)
    (tmp_path / "running" / "connection.json").write_text("{}")
    assert ended_applications(tmp_path) == ["ended"]
    assert read_status(tmp_path / "ended") == status
    assert ended_applications(tmp_path / "none") == []
