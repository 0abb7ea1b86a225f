"""The ResourceManager's registry without Spark: registrations, heartbeats, several agents."""

from __future__ import annotations

from pathlib import Path

from sessioncluster.jobmanager.blobserver import BlobServer
from sessioncluster.jobmanager.resourcemanager import ResourceManager
from sessioncluster.protocol.messages import (
    LibraryCacheStats,
    Message,
    RegisterTaskManager,
    TaskManagerChanged,
    TaskManagerHeartbeat,
    TaskManagerRegistered,
)


def make(tmp_path: Path) -> tuple[ResourceManager, list[Message], list[Message]]:
    sent: list[Message] = []
    published: list[Message] = []
    rm = ResourceManager(BlobServer(tmp_path / "blobs"), lambda ident, m: sent.append(m),
                         published.append, lambda events: None)
    return rm, sent, published


def test_a_second_python_daemon_of_one_executor_is_the_same_taskmanager(tmp_path: Path) -> None:
    rm, sent, published = make(tmp_path)
    rm.handle([b"a"], RegisterTaskManager("1", "h", pid=100, daemon_pid=99, jvm_pid=50, slots=2))
    rm.handle([b"b"], RegisterTaskManager("1", "h", pid=200, daemon_pid=199, jvm_pid=50, slots=2))
    assert [type(m) for m in sent] == [TaskManagerRegistered, TaskManagerRegistered]
    assert [m.change for m in published if isinstance(m, TaskManagerChanged)] == ["REGISTERED"]
    assert rm.infos()[0].pid == 100
    # each agent reports its own cache; the TaskManager shows their sum, whatever the order
    rm.handle([b"a"], TaskManagerHeartbeat("1", [], LibraryCacheStats(1, 10, 3, 1), pid=100))
    rm.handle([b"b"], TaskManagerHeartbeat("1", [], LibraryCacheStats(0, 0, 0, 0), pid=200))
    rm.handle([b"a"], TaskManagerHeartbeat("1", [], LibraryCacheStats(1, 10, 5, 1), pid=100))
    assert rm.infos()[0].library_cache == LibraryCacheStats(1, 10, 5, 1)
    rm.handle([b"b"], TaskManagerHeartbeat("1", [], LibraryCacheStats(1, 10, 0, 1), pid=200))
    assert rm.cache_totals() == LibraryCacheStats(2, 20, 5, 2)


def test_a_new_executor_with_a_known_id_replaces_the_registration(tmp_path: Path) -> None:
    rm, _, published = make(tmp_path)
    rm.handle([b"a"], RegisterTaskManager("1", "h", pid=100, daemon_pid=99, jvm_pid=50, slots=2))
    rm.handle([b"a"], TaskManagerHeartbeat("1", [], LibraryCacheStats(1, 10, 3, 1), pid=100))
    rm.handle([b"c"], RegisterTaskManager("1", "h", pid=300, daemon_pid=299, jvm_pid=60, slots=2))
    assert [m.change for m in published if isinstance(m, TaskManagerChanged)] == ["REGISTERED"] * 2
    assert rm.infos()[0].pid == 300
    assert rm.infos()[0].library_cache == LibraryCacheStats()
