"""Helpers shared by the integration, reliability and Jupyter tests."""

from __future__ import annotations

import os
import time
from typing import Any, Callable

import psutil
import pytest

from sessioncluster.cluster.connection import pid_alive

#: ``SESSIONCLUSTER_FULL_RELIABILITY=1``: the full versions of the slow loops and the variants
#: that CI leaves out (each is named where it is left out)
FULL = os.environ.get("SESSIONCLUSTER_FULL_RELIABILITY") == "1"


def full_only(value: Any, why: str) -> Any:
    """A ``pytest.param`` run only with ``SESSIONCLUSTER_FULL_RELIABILITY=1``."""
    return pytest.param(value, marks=pytest.mark.skipif(not FULL, reason=f"full run only: {why}"))


def wait_until(condition: Callable[[], Any], timeout: float = 60.0, what: str = "condition") -> Any:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def csv_rows(directory: Any) -> list[tuple[str, ...]]:
    """The rows of the CSV part files under ``directory`` (hidden and ``_`` files skipped)."""
    import csv

    rows: list[tuple[str, ...]] = []
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not path.name.startswith((".", "_")):
            with open(path, newline="") as f:
                rows += [tuple(r) for r in csv.reader(f) if r]
    return rows


def wait_gone(pids: list[int], timeout: float = 60.0) -> list[int]:
    """The pids still alive after waiting up to ``timeout`` seconds for them to end."""
    deadline = time.monotonic() + timeout
    alive = [p for p in pids if pid_alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if pid_alive(p)]
    return alive


def rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 2**20


def session_pids(session: Any) -> list[int]:
    """The JobManager and every TaskManager's agent, daemon and executor JVM."""
    pids = [session.info.jobmanager_pid]
    for tm in session.status().taskmanagers:
        pids += [tm.pid, tm.daemon_pid, tm.jvm_pid]
    return pids


def descendants(pids: list[int]) -> set[int]:
    """``pids`` and every process below them (the Spark driver JVM is the JobManager's child)."""
    found: set[int] = set()
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            found |= {pid, *(child.pid for child in proc.children(recursive=True))}
        except psutil.NoSuchProcess:
            continue
    return found

