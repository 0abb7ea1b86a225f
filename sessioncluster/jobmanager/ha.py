"""High availability: leader election, the job-graph store and the job result store (Flink's
``HighAvailabilityServices``), with two backends.

* ``file`` (the embedded default, one machine): the leader holds ``fcntl.flock`` on
  ``<session dir>/ha/leader.lock`` for its whole life; the OS releases it when the process dies,
  which is what bounds the failover. The new leader increments ``ha/epoch`` under the lock (the
  fencing token) and rewrites the connection file (0600) with its endpoints and epoch. Job
  graphs are ``ha/jobgraphs/<job id>``, the job result store ``ha/jobresults/<job id>``.
* ``zookeeper`` (Flink's choice): kazoo's Lock recipe under ``/sessioncluster/<session>/latch``;
  the epoch is a counter znode incremented with a version check; the leader's endpoints (never
  the key) are an ephemeral znode ``leader``; job graphs and results are znodes beside them,
  their data in the session directory as with Flink's ``high-availability.storageDir``. When the
  ZooKeeper session is SUSPENDED or LOST the leader steps down.

The catalog store keeps the session's Flink SQL catalog as the signed ``ExecuteSql`` messages
that changed it (CREATE, DROP, SET, RESET; a Python function's code in its message), one entry
each, named so that they sort in the order they ran: a new leader plans them again, in order,
before it recovers the jobs (a streaming INSERT among them reads the catalog's tables).

A submission in the job-graph store is the signed :class:`~..protocol.messages.SubmitJob` (or
``ExecuteSql``) message, so what a new leader recovers was written by a holder of the session
key. Blobs stay in the session directory's BlobServer, which the JobManagers share.

This is the write side; finding the leader (what clients and standbys read) is
:mod:`sessioncluster.cluster.leader`.
"""

from __future__ import annotations

import abc
import fcntl
import json
import logging
import os
import struct
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from ..cluster.connection import ConnectionInfo, connection_path
from ..cluster.files import write_private
from ..cluster.leader import BACKENDS, ZK_ROOT, ha_dir, session_stopped, zk_client
from ..protocol.messages import Message
from ..protocol.wire import MessageSigner

log = logging.getLogger("sessioncluster.ha")

#: how often a file-backend standby tries the leader lock, and the leader checks it still has it
LOCK_POLL_SECONDS = 0.1


class LeaderContender(Protocol):
    """What leader election calls (from its own thread)."""

    def grant_leadership(self, epoch: int) -> None: ...

    def revoke_leadership(self, reason: str) -> None: ...


# -- the submissions, signed --------------------------------------------------------------------
def _signer(key: str) -> MessageSigner:
    # a stored submission is recovered long after it was signed: no age limit
    return MessageSigner(key, sender="jobgraph-store", max_age=10 * 365 * 86400.0)


def pack_submission(key: str, msg: Message) -> bytes:
    """The signed frames of a submission, length-prefixed."""
    return b"".join(struct.pack(">I", len(f)) + f for f in _signer(key).serialize(msg))


def unpack_submission(key: str, data: bytes) -> Message:
    """A stored submission, checked against the key (raises ProtocolError if it does not pass)."""
    frames, i = [], 0
    while i < len(data):
        (n,) = struct.unpack_from(">I", data, i)
        frames.append(data[i + 4:i + 4 + n])
        i += 4 + n
    return _signer(key).deserialize(frames)


def catalog_entry_id() -> str:
    """A new catalog store entry's name: entries sort by name in the order they were made."""
    return f"{time.time_ns():020d}-{os.getpid()}-{threading.get_ident() % 10**6:06d}"


# -- stores -------------------------------------------------------------------------------------
class JobGraphStore(abc.ABC):
    """The submissions of the jobs that have not reached a final state."""

    @abc.abstractmethod
    def put(self, job_id: str, data: bytes) -> None: ...

    @abc.abstractmethod
    def get(self, job_id: str) -> bytes | None: ...

    @abc.abstractmethod
    def remove(self, job_id: str) -> None: ...

    @abc.abstractmethod
    def job_ids(self) -> list[str]: ...


class JobResultStore(abc.ABC):
    """Jobs that reached a final state (Flink's JobResultStore): never recovered, never re-run."""

    @abc.abstractmethod
    def mark(self, job_id: str, status: str, epoch: int) -> None:
        """Record the final state; a job that has one already raises FileExistsError."""

    @abc.abstractmethod
    def get(self, job_id: str) -> dict[str, Any] | None: ...


class FileJobGraphStore(JobGraphStore):
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    def put(self, job_id: str, data: bytes) -> None:
        write_private(self.directory / job_id, data)

    def get(self, job_id: str) -> bytes | None:
        try:
            return (self.directory / job_id).read_bytes()
        except FileNotFoundError:
            return None

    def remove(self, job_id: str) -> None:
        (self.directory / job_id).unlink(missing_ok=True)

    def job_ids(self) -> list[str]:
        paths = [p for p in self.directory.iterdir() if not p.name.startswith(".")]
        return [p.name for p in sorted(paths, key=lambda p: p.stat().st_mtime)]


class FileJobResultStore(JobResultStore):
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    def mark(self, job_id: str, status: str, epoch: int) -> None:
        data = json.dumps({"status": status, "epoch": epoch, "pid": os.getpid(),
                           "time": time.time()}).encode()
        fd = os.open(self.directory / job_id, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)

    def get(self, job_id: str) -> dict[str, Any] | None:
        try:
            return json.loads((self.directory / job_id).read_bytes())
        except FileNotFoundError:
            return None


# -- the services -------------------------------------------------------------------------------
class HighAvailabilityServices(abc.ABC):
    """Leader election, the leader's endpoints, and the two stores of one session."""

    backend: str
    job_graph_store: JobGraphStore
    job_result_store: JobResultStore
    #: the statements that made the session's Flink SQL catalog, by :func:`catalog_entry_id`
    catalog_store: JobGraphStore

    def __init__(self, name: str) -> None:
        self.name = name
        self.dir = ha_dir(name)
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._stop = threading.Event()
        self._epoch = 0  # 0: not the leader
        self._lock = threading.Lock()
        self._contender: LeaderContender | None = None

    def start_leader_election(self, contender: LeaderContender) -> None:
        """Contend for leadership in a thread: ``grant_leadership(epoch)`` once won (the epoch
        is strictly greater than every earlier leader's), ``revoke_leadership(reason)`` if it
        is lost later."""
        self._contender = contender
        threading.Thread(target=self._elect, args=(contender,), name="ha-leader-election",
                         daemon=True).start()

    @abc.abstractmethod
    def _elect(self, contender: LeaderContender) -> None:
        """The election thread: wait for the leadership, grant it, watch it if need be."""

    def has_leadership(self, epoch: int) -> bool:
        """True while this process is the leader of ``epoch`` (the fencing check)."""
        with self._lock:
            return epoch > 0 and self._epoch == epoch

    def publish_leader(self, info: ConnectionInfo) -> None:
        """Write the leader's endpoints where clients look: the connection file (0600)."""
        info.write(connection_path(self.name))

    def mark_stopped(self) -> None:
        """The session is stopped on purpose: standbys exit instead of taking over."""
        write_private(self.dir / "stopped", b"")

    def clear_stopped(self) -> None:
        (self.dir / "stopped").unlink(missing_ok=True)

    def stopped(self) -> bool:
        return session_stopped(self.name)

    def close(self) -> None:
        self._stop.set()

    def _revoke(self, contender: LeaderContender, reason: str) -> None:
        with self._lock:
            if self._epoch == 0:
                return
            self._epoch = 0
        contender.revoke_leadership(reason)


class FileHaServices(HighAvailabilityServices):
    """The embedded backend: a file lock in the session directory."""

    backend = "file"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.lock_path = self.dir / "leader.lock"
        self.epoch_path = self.dir / "epoch"
        self.job_graph_store = FileJobGraphStore(self.dir / "jobgraphs")
        self.catalog_store = FileJobGraphStore(self.dir / "catalog")
        self.job_result_store = FileJobResultStore(self.dir / "jobresults")
        self._lock_file: Any = None

    def _try_lock(self) -> Any:
        # opened afresh each time: a lock file removed (a leader deposed by hand) is made anew
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        f = os.fdopen(fd, "r+")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            return None
        if os.fstat(f.fileno()).st_ino != _inode(self.lock_path):
            f.close()  # removed between open and flock
            return None
        return f

    def _elect(self, contender: LeaderContender) -> None:
        while not self._stop.is_set():
            f = self._try_lock()
            if f is not None:
                break
            self._stop.wait(LOCK_POLL_SECONDS)
        else:
            return
        self._lock_file = f
        inode = os.fstat(f.fileno()).st_ino  # before the grant: a revoke may close f at once
        epoch = self.read_epoch() + 1
        write_private(self.epoch_path, str(epoch))
        with self._lock:
            self._epoch = epoch
        log.info("leadership of session '%s' won, epoch %d", self.name, epoch)
        contender.grant_leadership(epoch)
        while not self._stop.wait(LOCK_POLL_SECONDS):
            reason = None
            if _inode(self.lock_path) != inode:
                reason = f"the leader lock {self.lock_path} was removed or replaced"
            elif self.read_epoch() != epoch:
                reason = f"another JobManager is the leader (epoch {self.read_epoch()} > {epoch})"
            if reason is not None:
                log.error("leadership of session '%s' lost: %s", self.name, reason)
                self._release()
                self._revoke(contender, reason)
                return
        self._release()

    def _release(self) -> None:
        f, self._lock_file = self._lock_file, None
        if f is not None:
            f.close()  # closing the descriptor releases the flock

    def has_leadership(self, epoch: int) -> bool:
        # the epoch file too: a leader deposed a moment ago is fenced before its watcher sees it
        return super().has_leadership(epoch) and self.read_epoch() == epoch

    def read_epoch(self) -> int:
        try:
            return int(self.epoch_path.read_text().strip() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    def close(self) -> None:
        super().close()
        self._release()


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None


class ZooKeeperHaServices(HighAvailabilityServices):
    """ZooKeeper, through kazoo: leader latch, epoch counter, ephemeral leader znode."""

    backend = "zookeeper"

    def __init__(self, name: str, quorum: str) -> None:
        super().__init__(name)
        self.quorum = quorum
        self.zk = zk_client(quorum, retry_forever=True)
        self.root = f"{ZK_ROOT}/{name}"
        self.zk.ensure_path(f"{self.root}/jobgraphs")
        self.zk.ensure_path(f"{self.root}/jobresults")
        self.zk.ensure_path(f"{self.root}/catalog")
        self.catalog_store = ZooKeeperJobGraphStore(self.zk, f"{self.root}/catalog",
                                                    self.dir / "catalog")
        self.job_graph_store = ZooKeeperJobGraphStore(self.zk, f"{self.root}/jobgraphs",
                                                      self.dir / "jobgraphs")
        self.job_result_store = ZooKeeperJobResultStore(self.zk, f"{self.root}/jobresults")
        self._zk_lock: Any = None
        self.zk.add_listener(self._on_state)

    def _elect(self, contender: LeaderContender) -> None:
        from kazoo.exceptions import KazooException

        while not self._stop.is_set():
            try:
                epoch = self._acquire()
            except KazooException as exc:  # not connected (yet): try again
                log.info("leader election of session '%s' waits for ZooKeeper: %s",
                         self.name, type(exc).__name__)
                self._stop.wait(0.5)
                continue
            if epoch:
                break
        else:
            return
        with self._lock:
            self._epoch = epoch
        log.info("leadership of session '%s' won in ZooKeeper, epoch %d", self.name, epoch)
        contender.grant_leadership(epoch)

    def _acquire(self) -> int:
        """The lock and a new epoch, or 0 after a second without the lock."""
        from kazoo.exceptions import BadVersionError, LockTimeout, NoNodeError

        if self._zk_lock is not None:  # ours from before a lost connection
            try:
                self._zk_lock.release()
            except Exception:  # noqa: BLE001 - its session expired: the node is gone anyway
                pass
        if self.zk.state != "CONNECTED":
            self._stop.wait(0.5)
            return 0
        lock = self._zk_lock = self.zk.Lock(f"{self.root}/latch", f"pid {os.getpid()}")
        try:
            if not lock.acquire(timeout=1.0):
                return 0
        except LockTimeout:
            return 0
        counter = f"{self.root}/epoch"
        self.zk.ensure_path(counter)
        while True:  # compare-and-set: two leaders can never get the same epoch
            data, stat = self.zk.get(counter)
            epoch = int(data or b"0") + 1
            try:
                self.zk.set(counter, str(epoch).encode(), version=stat.version)
                return epoch
            except (BadVersionError, NoNodeError):
                continue

    def _on_state(self, state: str) -> None:
        # kazoo's thread; SUSPENDED: the connection is lost and may come back, but a leader that
        # cannot see ZooKeeper cannot know it is still the leader (Flink steps down too)
        if state in ("SUSPENDED", "LOST") and self._contender is not None:
            self._revoke(self._contender, f"the ZooKeeper connection to {self.quorum} is {state}")

    def has_leadership(self, epoch: int) -> bool:
        return super().has_leadership(epoch) and self.zk.state == "CONNECTED"

    def publish_leader(self, info: ConnectionInfo) -> None:
        public = {k: v for k, v in asdict(info).items() if k != "key"}
        path = f"{self.root}/leader"
        data = json.dumps(public).encode()
        if self.zk.exists(path):
            self.zk.delete(path)  # a dead leader's ephemeral node not yet expired
        self.zk.create(path, data, ephemeral=True, makepath=True)
        super().publish_leader(info)  # a convenience for clients on this machine

    def mark_stopped(self) -> None:
        super().mark_stopped()
        self.zk.ensure_path(f"{self.root}/stopped")

    def clear_stopped(self) -> None:
        super().clear_stopped()
        self.zk.delete(f"{self.root}/stopped", recursive=True)

    def stopped(self) -> bool:
        return bool(self.zk.exists(f"{self.root}/stopped")) or super().stopped()

    def close(self) -> None:
        super().close()
        self._contender = None
        try:
            self.zk.stop()
            self.zk.close()
        except Exception:  # noqa: BLE001 - closing a client whose server is gone
            pass


class ZooKeeperJobGraphStore(JobGraphStore):
    """A znode per job (the authority), its submission in the storage directory."""

    def __init__(self, zk: Any, root: str, directory: Path) -> None:
        self.zk, self.root = zk, root
        self.files = FileJobGraphStore(directory)

    def put(self, job_id: str, data: bytes) -> None:
        self.files.put(job_id, data)
        path = f"{self.root}/{job_id}"
        pointer = str(self.files.directory / job_id).encode()
        if self.zk.exists(path):
            self.zk.set(path, pointer)
        else:
            self.zk.create(path, pointer)

    def get(self, job_id: str) -> bytes | None:
        from kazoo.exceptions import NoNodeError

        try:
            pointer, _ = self.zk.get(f"{self.root}/{job_id}")
        except NoNodeError:
            return None
        try:
            return Path(pointer.decode()).read_bytes()
        except FileNotFoundError:
            return None

    def remove(self, job_id: str) -> None:
        self.zk.delete(f"{self.root}/{job_id}", recursive=True)
        self.files.remove(job_id)

    def job_ids(self) -> list[str]:
        return sorted(self.zk.get_children(self.root),
                      key=lambda c: self.zk.exists(f"{self.root}/{c}").ctime)


class ZooKeeperJobResultStore(JobResultStore):
    def __init__(self, zk: Any, root: str) -> None:
        self.zk, self.root = zk, root

    def mark(self, job_id: str, status: str, epoch: int) -> None:
        from kazoo.exceptions import NodeExistsError

        data = json.dumps({"status": status, "epoch": epoch, "pid": os.getpid(),
                           "time": time.time()}).encode()
        try:
            self.zk.create(f"{self.root}/{job_id}", data)
        except NodeExistsError:
            raise FileExistsError(f"job {job_id} has a result in ZooKeeper already") from None

    def get(self, job_id: str) -> dict[str, Any] | None:
        from kazoo.exceptions import NoNodeError

        try:
            data, _ = self.zk.get(f"{self.root}/{job_id}")
        except NoNodeError:
            return None
        return json.loads(data)


def ha_services(name: str, backend: str, quorum: str | None = None) -> HighAvailabilityServices:
    """The HA services of session ``name`` on ``backend``."""
    if backend == "file":
        return FileHaServices(name)
    if backend == "zookeeper":
        if not quorum:
            raise ValueError("--ha zookeeper needs --zookeeper-quorum HOST:PORT[,HOST:PORT...]")
        return ZooKeeperHaServices(name, quorum)
    raise ValueError(f"unknown HA backend {backend!r}; use one of {', '.join(BACKENDS)}")


