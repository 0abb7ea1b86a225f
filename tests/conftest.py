"""One real session cluster (JobManager, 2 TaskManagers on local-cluster, Spark) shared by
every integration and reliability test; stopped at the end, and checked to leave no process
behind."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

import sessioncluster

from .helpers import descendants, session_pids, wait_gone

SESSION_NAME = "itest"
#: a small library cache on the shared session's TaskManagers, so that the soak fills it and
#: its LRU bound is checked on real TaskManagers
LIBRARY_CACHE_BYTES = 1 << 20


@pytest.fixture(scope="session")
def sc_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("sc-home")
    old = os.environ.get("SESSIONCLUSTER_HOME")
    os.environ["SESSIONCLUSTER_HOME"] = str(home)
    os.environ["SESSIONCLUSTER_VALIDATE"] = "1"
    os.environ["SESSIONCLUSTER_LIBRARY_CACHE_BYTES"] = str(LIBRARY_CACHE_BYTES)
    yield home
    if old is None:
        os.environ.pop("SESSIONCLUSTER_HOME", None)
    else:
        os.environ["SESSIONCLUSTER_HOME"] = old


@pytest.fixture(scope="session")
def session(sc_home: Path) -> Iterator[sessioncluster.Session]:
    s = sessioncluster.start(SESSION_NAME, taskmanagers=2, slots=1)
    pids = descendants(session_pids(s))  # the Spark driver JVM and slot workers too
    yield s
    pids |= descendants(session_pids(s))  # replacements after a lost TaskManager
    s.stop()
    left = wait_gone(sorted(pids))
    assert not left, f"processes of the session outlived stop(): {left}"


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Two xdist groups (pyproject's ``-n 2 --dist loadgroup``): the unit tests, and every test
    of a real cluster, which then share one session cluster on one worker."""
    for item in items:
        unit = item.nodeid.startswith("tests/unit/")
        item.add_marker(pytest.mark.xdist_group("unit" if unit else "cluster"))


def table_names(session: sessioncluster.Session) -> set[str]:
    """The tables and views of the session's catalog."""
    return set(session.execute_sql("SHOW TABLES").table.column(0).to_pylist())


@pytest.fixture
def drop_new_tables(session: sessioncluster.Session) -> Iterator[None]:
    """The catalog is the shared session's: drop what a test made (a table left behind would
    shadow a later test's view of the same name)."""
    before = table_names(session)
    yield
    for name in table_names(session) - before:  # temporary ones first, as Flink requires
        for kind in ("TEMPORARY VIEW", "TEMPORARY TABLE", "VIEW", "TABLE"):
            session.execute_sql(f"DROP {kind} IF EXISTS `{name}`")


@pytest.fixture
def env(session: sessioncluster.Session) -> sessioncluster.StreamExecutionEnvironment:
    e = session.get_execution_environment()
    e.set_parallelism(2)
    return e
