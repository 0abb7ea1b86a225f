"""The class-data-sharing archive of Spark's classes on real JVMs: made by the primer's JVM at
its exit, promoted, then mapped by a session's driver and executor JVMs; and the shared
session's JVMs run as its JobManager's log says. (The file's name puts it after most
integration tests, by when the primer the shared session's start launched has finished.)"""

from __future__ import annotations

import re
import time
from pathlib import Path

import psutil
import pytest

import sessioncluster
from sessioncluster.cluster.connection import session_dir
from sessioncluster.spark import cds

from ..helpers import descendants, session_pids, wait_gone

pytestmark = pytest.mark.integration

#: how long the test waits for this machine's primer (on a loaded 2-core machine: 6 min)
PRIMER_WAIT = 900.0


def jvm_archive_flags(pid: int) -> dict[str, str]:
    """The JVM's -XX:SharedArchiveFile / -XX:ArchiveClassesAtExit values."""
    with open(f"/proc/{pid}/cmdline") as f:
        args = f.read().split("\0")
    return dict(m.groups() for a in args
                if (m := re.fullmatch(r"-XX:(SharedArchiveFile|ArchiveClassesAtExit)=(\S+)", a)))


def maps(pid: int, path: str) -> bool:
    """The JVM mapped ``path`` (the archive it shares)."""
    with open(f"/proc/{pid}/maps") as f:
        return any(line.split()[-1] == path for line in f if line.strip())


def driver_pid(session: sessioncluster.Session) -> int:
    jm = psutil.Process(session.info.jobmanager_pid)
    return next(c.pid for c in jm.children() if c.name() == "java")


def test_shared_session_jvms_run_as_the_log_says(session: sessioncluster.Session) -> None:
    log = (session_dir(session.name) / "jobmanager.log").read_text()
    line = next(x for x in log.splitlines() if "class-data sharing:" in x)
    driver = jvm_archive_flags(driver_pid(session))
    executors = [tm.jvm_pid for tm in session.status().taskmanagers]
    if "start from" in line:
        archive = driver["SharedArchiveFile"]
        assert archive in line and maps(driver_pid(session), archive)
        for pid in executors:
            assert jvm_archive_flags(pid) == {"SharedArchiveFile": archive} and maps(pid, archive)
    else:
        assert "off" in line and driver == {} and all(jvm_archive_flags(p) == {} for p in executors)


def test_the_primers_archive_is_used_by_the_next_session(sc_home: Path,
                                                       session: sessioncluster.Session) -> None:
    """The archive of this machine, made by the primer that the first start without one (the
    shared session's, on a new machine) launched in the background: it is there by the time
    this file runs (its name puts it late in the run), and the next session maps it."""
    key = cds.machine_key()
    if key is None:
        pytest.skip("this JDK cannot make a dynamic CDS archive")
    deadline = time.monotonic() + PRIMER_WAIT
    while (found := cds.existing_archive()) is None and time.monotonic() < deadline:
        time.sleep(2)
    log = cds.cache_dir() / "primer.log"
    assert found is not None, (f"no archive in {cds.cache_dir()} after {PRIMER_WAIT:.0f} s; "
                               f"primer.log: {log.read_text()[-2000:] if log.exists() else '-'}")
    archive = str(found)
    # the next session's driver and executors map it
    s = sessioncluster.start("cds-reader", taskmanagers=2, slots=1)
    pids = descendants(session_pids(s))
    try:
        assert jvm_archive_flags(driver_pid(s)) == {"SharedArchiveFile": archive}
        jvms = [driver_pid(s), *(tm.jvm_pid for tm in s.status().taskmanagers)]
        assert len(jvms) == 3 and all(maps(pid, archive) for pid in jvms)
        env = s.get_execution_environment()
        assert sorted(env.from_collection([1, 2, 3]).map(lambda x: x * 2).execute_and_collect()) \
            == [2, 4, 6]
    finally:
        s.stop()
    assert not wait_gone(sorted(pids))
