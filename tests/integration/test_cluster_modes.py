"""Per-job and application clusters (Flink's ``flink run -t per-job`` and ``run-application``):
``sessioncluster run --target per-job|application program.py`` in a subprocess, each starting a
real cluster of its own (JobManager, TaskManagers on local-cluster, Spark) that must be gone,
every process of it, when the program ends, fails, is interrupted or is stopped.

The programs print the pids of their cluster's processes (the JobManager and everything below
it, each TaskManager's agent, daemon and executor JVM) so that the test can check them after.
"""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from sessioncluster.cluster.appstatus import read_status
from sessioncluster.protocol.messages import ApplicationState

from ..helpers import FULL, full_only, wait_gone, wait_until

pytestmark = pytest.mark.integration

#: a wedged run fails its test instead of hanging CI (not a performance bound)
RUN_TIMEOUT = 300.0

TEXT = "to be or not to be\nthat is the question\nwhether tis nobler in the mind to suffer\n" * 3

#: prints the cluster's processes, then a word count of the file argv[1]; argv[2] = "fail"
#: raises after the count, "slow" runs a long job after it
PROGRAM = """
    import json, sys, time
    import psutil
    from pyflink.datastream import StreamExecutionEnvironment
    from sessioncluster.client.current import current

    session = current()
    pids = {session.info.jobmanager_pid}
    for tm in session.status().taskmanagers:
        pids |= {tm.pid, tm.daemon_pid, tm.jvm_pid}
    for pid in list(pids):
        pids |= {c.pid for c in psutil.Process(pid).children(recursive=True)}
    print("CLUSTER-PIDS", json.dumps(sorted(pids)), flush=True)

    def slow(x):
        time.sleep(0.2)
        return x

    env = StreamExecutionEnvironment.get_execution_environment()
    lines = open(sys.argv[1]).read().splitlines()
    counts = (env.from_collection(lines).flat_map(str.split).map(lambda w: (w, 1))
              .key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1])))
    for word, n in sorted(counts.execute_and_collect()):
        print("COUNT", word, n, flush=True)
    mode = sys.argv[2] if len(sys.argv) > 2 else ""
    if mode == "fail":
        raise ValueError("the word count failed on purpose")
    if mode == "slow":
        print("SLOW-JOB", flush=True)
        # read to the end: in STREAMING mode (``run``'s default, as Flink's) the iterator is
        # returned at once, and the job runs while it is read
        list(env.from_collection(range(10_000)).map(slow).execute_and_collect())
"""


@pytest.fixture
def program(tmp_path: Path) -> Path:
    (tmp_path / "input.txt").write_text(TEXT)
    path = tmp_path / "word_count.py"
    path.write_text(textwrap.dedent(PROGRAM))
    return path


def sessioncluster(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sessioncluster", *args], capture_output=True,
                          text=True, timeout=RUN_TIMEOUT, cwd=cwd, env=dict(os.environ))


def counts_of(stdout: str) -> dict[str, int]:
    return {m[0]: int(m[1]) for m in re.findall(r"^COUNT (\S+) (\d+)$", stdout, re.M)}


def cluster_pids(stdout: str) -> list[int]:
    m = re.search(r"^CLUSTER-PIDS (.*)$", stdout, re.M)
    assert m, f"the program printed no pids:\n{stdout}"
    return json.loads(m.group(1))


def processes_named(name: str) -> list[psutil.Process]:
    """Processes whose command line or environment names the cluster (its JobManager, the
    executors and TaskManagers, which carry its connection file's path)."""
    found = []
    for proc in psutil.process_iter():
        try:
            text = " ".join(proc.cmdline()) + " " + " ".join(
                v for k, v in proc.environ().items() if k.startswith("SESSIONCLUSTER"))
        except psutil.Error:
            continue
        if f"sessions/{name}/" in text or f"--name {name}" in text:
            found.append(proc)
    return found


def assert_cluster_gone(stdout: str, name: str) -> None:
    pids = cluster_pids(stdout)
    assert len(pids) >= 4  # JobManager, its driver JVM, a TaskManager's agent, daemon, JVM ...
    left = wait_gone(pids, timeout=60)
    assert not left, f"processes of cluster '{name}' outlived it: {left}"
    wait_until(lambda: not processes_named(name), timeout=30, what=f"no process of '{name}'")


EXPECTED = dict(collections.Counter(TEXT.split()))


# -- per-job -----------------------------------------------------------------------------------

def test_per_job_cluster_runs_the_program_and_is_gone_after(program: Path, sc_home: Path) -> None:
    done = sessioncluster("run", "--target", "per-job", "--name", "pj-wc", "--taskmanagers", "2",
                          str(program), str(program.parent / "input.txt"))
    assert done.returncode == 0, done.stderr
    assert counts_of(done.stdout) == EXPECTED
    assert "Per-job cluster 'pj-wc' ready in" in done.stderr
    assert "Per-job cluster 'pj-wc' stopped" in done.stderr
    assert_cluster_gone(done.stdout, "pj-wc")
    assert not (sc_home / "sessions" / "pj-wc").exists()  # nothing of it stays on disk either


@pytest.mark.skipif(not FULL, reason="full run only: a failing main is the application test's; "
                    "a per-job cluster's teardown is the other per-job tests'")
def test_per_job_cluster_of_a_failing_program_is_gone_too(program: Path, sc_home: Path) -> None:
    done = sessioncluster("run", "-t", "per-job", "--taskmanagers", "1", str(program),
                          str(program.parent / "input.txt"), "fail")
    assert done.returncode == 1
    assert counts_of(done.stdout) == EXPECTED
    assert "ValueError: the word count failed on purpose" in done.stderr
    name = re.search(r"Per-job cluster '(per-job-[0-9a-f]{8})' ready", done.stderr).group(1)
    assert_cluster_gone(done.stdout, name)
    assert (sc_home / "sessions" / name / "jobmanager.log").exists()  # kept to look into


@pytest.mark.parametrize("sig", [
    full_only(signal.SIGINT, "the client maps SIGTERM to the same interrupt as Ctrl-C"),
    full_only(signal.SIGTERM, "SIGTERM mid-start is test_per_job_client_interrupted_while_its_"
              "cluster_starts_leaves_nothing; the same stop path"),
    signal.SIGKILL], ids=["SIGINT", "SIGTERM", "SIGKILL"])
def test_per_job_cluster_is_stopped_when_the_client_is_interrupted(
        program: Path, sig: signal.Signals) -> None:
    """Ctrl-C or SIGTERM: the client stops its cluster on the way out; SIGKILL: the
    JobManager sees its owner gone and stops by itself."""
    name = f"pj-{sig.name.lower()}"
    proc = subprocess.Popen([sys.executable, "-m", "sessioncluster", "run", "-t", "per-job",
                             "--name", name, "--taskmanagers", "1", str(program),
                             str(program.parent / "input.txt"), "slow"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # until the long job runs
            out.append(line)
            if line.startswith("SLOW-JOB"):
                break
        time.sleep(1.0)
        proc.send_signal(sig)
        rest, err = proc.communicate(timeout=RUN_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    if sig is signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 130, err
        assert f"Per-job cluster '{name}' stopped" in err
    assert_cluster_gone("".join(out) + rest, name)


# -- application -------------------------------------------------------------------------------

def test_application_runs_main_in_the_jobmanager_and_the_cluster_ends_with_it(
        program: Path, sc_home: Path) -> None:
    # the program's input is relative to the client's working directory
    done = sessioncluster("run", "--target", "application", "--name", "app-wc",
                          "--taskmanagers", "1", program.name, "input.txt", cwd=program.parent)
    assert done.returncode == 0, done.stderr
    assert counts_of(done.stdout) == EXPECTED
    assert "Job has been submitted with JobID" in done.stdout
    status = read_status(sc_home / "sessions" / "app-wc")
    assert status is not None and status.state is ApplicationState.FINISHED
    assert status.exit_code == 0 and len(status.job_ids) == 1 and status.end_time
    pids = cluster_pids(done.stdout)
    assert status.pid in pids  # main ran below the JobManager, not in the client
    assert_cluster_gone(done.stdout, "app-wc")
    shown = sessioncluster("status", "app-wc")
    assert shown.returncode == 0 and "FINISHED" in shown.stdout and "not running" in shown.stdout
    assert "app-wc  ended: application word_count.py FINISHED" in sessioncluster("list").stdout


def test_application_whose_main_raises_is_failed_with_its_traceback(
        program: Path, sc_home: Path) -> None:
    done = sessioncluster("run", "-t", "application", "--name", "app-fail", "--taskmanagers", "1",
                          str(program), str(program.parent / "input.txt"), "fail")
    assert done.returncode == 1
    assert counts_of(done.stdout) == EXPECTED  # what main printed before it raised
    status = read_status(sc_home / "sessions" / "app-fail")
    assert status is not None and status.state is ApplicationState.FAILED
    assert status.exit_code == 1
    assert status.error.startswith("Traceback (most recent call last):")
    assert "ValueError: the word count failed on purpose" in status.error
    assert "FAILED" in done.stderr
    assert_cluster_gone(done.stdout, "app-fail")


def test_detached_application_runs_on_and_stop_cancels_it(program: Path, sc_home: Path) -> None:
    done = sessioncluster("run", "-t", "application", "-d", "--name", "app-bg",
                          "--taskmanagers", "1", str(program), str(program.parent / "input.txt"),
                          "slow")
    assert done.returncode == 0, done.stderr
    assert "Application cluster 'app-bg' ready" in done.stderr
    directory = sc_home / "sessions" / "app-bg"
    log = directory / "application.log"
    wait_until(lambda: "SLOW-JOB" in log.read_text(), timeout=120, what="the long job")
    status = sessioncluster("status", "app-bg")
    assert status.returncode == 0 and "RUNNING" in status.stdout and "TaskManagers (1 of 1)" in status.stdout
    stopped = sessioncluster("stop", "app-bg")
    assert stopped.returncode == 0, stopped.stderr
    final = read_status(directory)
    assert final is not None and final.state is ApplicationState.CANCELED
    assert_cluster_gone(log.read_text(), "app-bg")


def test_a_session_cluster_refuses_an_application(sc_home: Path) -> None:
    from sessioncluster import start
    from sessioncluster.client.gateway import DispatcherError
    from sessioncluster.protocol.messages import ApplicationStarted, RunApplication

    session = start("not-an-app", taskmanagers=0)
    try:
        with pytest.raises(DispatcherError, match="is a session cluster"):
            session.gateway.request(RunApplication("p.py", "0" * 64, b""), ApplicationStarted)
    finally:
        session.stop()


def test_per_job_client_interrupted_while_its_cluster_starts_leaves_nothing(
        program: Path, sc_home: Path) -> None:
    """SIGTERM while start() waits for the TaskManagers: the JobManager it started is stopped."""
    name = "pj-early"
    proc = subprocess.Popen([sys.executable, "-m", "sessioncluster", "run", "-t", "per-job",
                             "--name", name, "--taskmanagers", "1", str(program),
                             str(program.parent / "input.txt")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the JobManager is up (its connection file written) and Spark is starting
        wait_until(lambda: (sc_home / "sessions" / name / "connection.json").exists() or
                   proc.poll() is not None, timeout=120, what="the JobManager")
        jobmanagers = [p.pid for p in processes_named(name)]
        assert jobmanagers
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=RUN_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "COUNT" not in out and "stopped" in err
    assert not wait_gone(jobmanagers, timeout=60)
    wait_until(lambda: not processes_named(name), timeout=60, what=f"no process of '{name}'")
