"""High availability's pure parts: leader election on the file backend (two contenders in one
process), fencing, the signed job-graph store, the job result store, and how a client finds
the leader. No Spark, no JobManager."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from sessioncluster.cluster.connection import ConnectionInfo, connection_path
from sessioncluster.cluster.leader import (
    HaConfig,
    NoLeaderError,
    NotHaSessionError,
    find_leader,
    retrieve_leader,
    running_jobmanager,
    standby_pids,
)
from sessioncluster.graph.jobgraph import JobGraph
from sessioncluster.jobmanager.ha import (
    FileHaServices,
    catalog_entry_id,
    pack_submission,
    unpack_submission,
)
from sessioncluster.options import StartOptions
from sessioncluster.protocol.messages import ExecuteSql, SubmitJob
from sessioncluster.protocol.wire import ProtocolError, new_key


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SESSIONCLUSTER_HOME", str(tmp_path))
    return tmp_path


class Contender:
    def __init__(self) -> None:
        self.granted: list[int] = []
        self.revoked: list[str] = []
        self.changed = threading.Event()

    def grant_leadership(self, epoch: int) -> None:
        self.granted.append(epoch)
        self.changed.set()

    def revoke_leadership(self, reason: str) -> None:
        self.revoked.append(reason)
        self.changed.set()

    def wait(self, timeout: float = 5.0) -> None:
        assert self.changed.wait(timeout), "no leadership change"
        self.changed.clear()


def test_one_leader_at_a_time_and_the_next_gets_a_higher_epoch(home: Path) -> None:
    first, second = FileHaServices("s"), FileHaServices("s")
    a, b = Contender(), Contender()
    first.start_leader_election(a)
    a.wait()
    second.start_leader_election(b)
    time.sleep(0.5)
    assert a.granted == [1] and b.granted == []  # the lock is held: b waits
    assert first.has_leadership(1) and not second.has_leadership(1)
    first.close()  # the leader goes (as its process dying releases the flock)
    b.wait()
    assert b.granted == [2] and second.has_leadership(2)
    assert not first.has_leadership(1)  # fenced: the epoch moved on
    second.close()


def test_a_leader_whose_lock_is_taken_from_it_is_revoked(home: Path) -> None:
    first = FileHaServices("s")
    a = Contender()
    first.start_leader_election(a)
    a.wait()
    first.lock_path.unlink()  # as if another contender took a new lock
    second, b = FileHaServices("s"), Contender()
    second.start_leader_election(b)
    b.wait()
    a.wait()
    assert "removed or replaced" in a.revoked[0] or "another JobManager" in a.revoked[0]
    assert b.granted == [2] and not first.has_leadership(1)
    first.close()
    second.close()


def test_stored_submissions_are_signed_and_checked(home: Path) -> None:
    key = new_key()
    services = FileHaServices("s")
    graph = JobGraph("job", [])
    services.job_graph_store.put("a" * 32, pack_submission(key, SubmitJob(graph, {}, "a" * 32)))
    services.job_graph_store.put("b" * 32, pack_submission(key, ExecuteSql("SELECT 1", "b" * 32)))
    assert services.job_graph_store.job_ids() == ["a" * 32, "b" * 32]
    back = unpack_submission(key, services.job_graph_store.get("a" * 32) or b"")
    assert isinstance(back, SubmitJob) and back.job_id == "a" * 32 and back.job_graph.job_name == "job"
    # the same stored frames read twice (a leader recovering again) pass: no replay check
    assert unpack_submission(key, services.job_graph_store.get("b" * 32) or b"").query == "SELECT 1"
    assert unpack_submission(key, services.job_graph_store.get("b" * 32) or b"").query == "SELECT 1"
    with pytest.raises(ProtocolError):
        unpack_submission(new_key(), services.job_graph_store.get("a" * 32) or b"")
    tampered = bytearray(services.job_graph_store.get("a" * 32) or b"")
    tampered[-3] ^= 1
    with pytest.raises(ProtocolError):
        unpack_submission(key, bytes(tampered))
    services.job_graph_store.remove("a" * 32)
    assert services.job_graph_store.job_ids() == ["b" * 32]
    assert oct((home / "sessions" / "s" / "ha" / "jobgraphs" / ("b" * 32)).stat().st_mode)[-3:] == "600"


def test_catalog_statements_are_kept_signed_in_the_order_they_ran(home: Path) -> None:
    key = new_key()
    store = FileHaServices("s").catalog_store
    statements = [f"CREATE TABLE t{i} (a INT) WITH ('connector' = 'blackhole')" for i in range(5)]
    for text in statements:
        store.put(catalog_entry_id(), pack_submission(key, ExecuteSql(text, "")))
    read = [unpack_submission(key, store.get(e) or b"") for e in sorted(store.job_ids())]
    assert [m.query for m in read if isinstance(m, ExecuteSql)] == statements
    assert oct((home / "sessions" / "s" / "ha" / "catalog").stat().st_mode)[-3:] == "700"


def test_a_job_result_is_recorded_once(home: Path) -> None:
    store = FileHaServices("s").job_result_store
    store.mark("c" * 32, "FINISHED", 3)
    with pytest.raises(FileExistsError):
        store.mark("c" * 32, "FINISHED", 4)
    assert store.get("c" * 32)["epoch"] == 3
    assert store.get("d" * 32) is None


def _info(epoch: int, pid: int) -> ConnectionInfo:
    return ConnectionInfo("s", "k" * 40, "tcp://127.0.0.1:1", "tcp://127.0.0.1:2",
                          "tcp://127.0.0.1:3", pid, ha="file", epoch=epoch)


def test_a_client_follows_only_a_newer_living_leader(home: Path) -> None:
    old = _info(1, 999_999_999)
    _info(1, os.getpid()).write(connection_path("s"))
    with pytest.raises(NoLeaderError, match="no new leader.*start-standby s"):
        retrieve_leader(old, timeout=0.3)  # the same epoch is not a new leader
    threading.Timer(0.3, lambda: _info(2, os.getpid()).write(connection_path("s"))).start()
    t0 = time.monotonic()
    new = retrieve_leader(old, timeout=5.0)
    assert new.epoch == 2 and new.jobmanager_pid == os.getpid() and new.key == old.key
    assert time.monotonic() - t0 < 5.0
    FileHaServices("s").mark_stopped()
    with pytest.raises(NoLeaderError, match="was stopped"):
        retrieve_leader(new, timeout=5.0)


def test_a_session_is_found_by_name_and_its_dead_leader_replaced(home: Path) -> None:
    with pytest.raises(LookupError, match="no session cluster named 's'"):
        find_leader("s")
    assert running_jobmanager("s") is None
    _info(1, os.getpid()).write(connection_path("s"))
    running = running_jobmanager("s")
    assert running is not None and running.jobmanager_pid == os.getpid()
    assert find_leader("s").jobmanager_pid == os.getpid()
    plain = ConnectionInfo("p", "k" * 40, "tcp://127.0.0.1:1", "tcp://127.0.0.1:2",
                           "tcp://127.0.0.1:3", 999_999_999)
    plain.write(connection_path("p"))
    assert running_jobmanager("p") is None
    with pytest.raises(LookupError, match="is not running"):
        find_leader("p")
    assert not connection_path("p").exists()  # a stale file without HA is removed
    _info(1, 999_999_999).write(connection_path("s"))  # the leader died: a standby takes over
    threading.Timer(0.3, lambda: _info(2, os.getpid()).write(connection_path("s"))).start()
    assert find_leader("s", timeout=5.0).epoch == 2
    _info(3, 999_999_999).write(connection_path("s"))  # and this time none does
    with pytest.raises(LookupError, match="has no leader: no new leader"):
        find_leader("s", timeout=0.3)


def test_standby_needs_an_ha_session(home: Path) -> None:
    with pytest.raises(NotHaSessionError, match="no session cluster named 'x'"):
        HaConfig.read("x")
    _info(1, os.getpid()).write(connection_path("plain"))
    with pytest.raises(NotHaSessionError, match="was not started with --ha"):
        HaConfig.read("plain")
    HaConfig("file", "", "k" * 40, ["--name", "s"]).write("s")
    assert HaConfig.read("s").argv == ["--name", "s"]


def test_standby_pids_forget_dead_jobmanagers(home: Path) -> None:
    d = home / "sessions" / "s" / "ha"
    d.mkdir(parents=True)
    (d / f"jobmanager-{os.getpid()}.json").write_text("{}")
    (d / "jobmanager-999999999.json").write_text("{}")
    assert standby_pids("s") == [os.getpid()]
    assert not (d / "jobmanager-999999999.json").exists()


def test_ha_options_are_checked() -> None:
    assert StartOptions(ha="file").ha == "file"
    assert StartOptions(ha="none").ha is None
    with pytest.raises(ValueError, match="'file' or 'zookeeper'"):
        StartOptions(ha="etcd")
    with pytest.raises(ValueError, match="needs --zookeeper-quorum"):
        StartOptions(ha="zookeeper")
    with pytest.raises(ValueError, match="is for --ha zookeeper"):
        StartOptions(zookeeper_quorum="127.0.0.1:2181")
    argv = StartOptions(ha="zookeeper", zookeeper_quorum="127.0.0.1:2181").argv()
    assert argv[argv.index("--ha") + 1] == "zookeeper"
