"""Finding the leader of a session (the read side of high availability, Flink's
``LeaderRetrievalService``), shared by the client and the JobManager.

A session without HA has one JobManager, whose endpoints are the connection file. An HA
session's leader is the newest epoch published by the backend it was started with: ``file``
(the connection file, rewritten by each new leader) or ``zookeeper`` (the ephemeral znode
``/sessioncluster/<session>/leader``, never holding the key). The HA directory
``<session dir>/ha`` holds the standbys' endpoint files, the stop mark and the session's HA
configuration; the election and the job-graph store that write them are the JobManager's
(:mod:`sessioncluster.jobmanager.ha`).
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from .connection import ConnectionInfo, connection_path, pid_alive, session_dir
from .files import write_private

BACKENDS = ("file", "zookeeper")
#: how long a client waits for a new leader before it gives up with a clear error
LEADER_TIMEOUT = float(os.environ.get("SESSIONCLUSTER_LEADER_TIMEOUT", 60.0))
#: ZooKeeper session timeout: a leader cut off from ZooKeeper longer than this has lost it
ZK_SESSION_TIMEOUT = 4.0
ZK_ROOT = "/sessioncluster"


class NoLeaderError(ConnectionError):
    """No leader of an HA session could be found in time (the message says why)."""


class NotHaSessionError(LookupError):
    """A standby was asked for a session that was not started with ``--ha``."""


def ha_dir(name: str) -> Path:
    return session_dir(name) / "ha"


def session_stopped(name: str) -> bool:
    """True once the HA session was stopped on purpose (``sessioncluster stop``)."""
    return (ha_dir(name) / "stopped").exists()


def standby_pids(name: str) -> list[int]:
    """The pids of the session's JobManagers alive now (the leader's among them), from the
    endpoint files each one writes in the HA directory."""
    pids = []
    for path in ha_dir(name).glob("jobmanager-*.json"):
        try:
            pid = int(path.stem.removeprefix("jobmanager-"))
        except ValueError:
            continue
        if pid_alive(pid):
            pids.append(pid)
        else:
            path.unlink(missing_ok=True)  # a JobManager killed -9 leaves its file behind
    return sorted(pids)


@dataclass(slots=True)
class HaConfig:
    """What a standby needs to join an HA session: the backend, the session key and the
    leader's start options (``<session dir>/ha/session.json``, 0600)."""

    backend: str
    zookeeper_quorum: str
    key: str
    argv: list[str]

    def write(self, name: str) -> None:
        write_private(ha_dir(name) / "session.json", json.dumps(asdict(self)))

    @classmethod
    def read(cls, name: str) -> "HaConfig":
        path = ha_dir(name) / "session.json"
        try:
            with open(path) as f:
                return cls(**json.load(f))
        except FileNotFoundError:
            if connection_path(name).exists():
                raise NotHaSessionError(
                    f"session '{name}' was not started with --ha: a standby JobManager needs an "
                    "HA session (sessioncluster start --name NAME --ha file|zookeeper)") from None
            raise NotHaSessionError(f"no session cluster named '{name}' (no {path})") from None


def zk_client(quorum: str, timeout: float = 10.0, retry_forever: bool = False) -> Any:
    """A started kazoo client; NoLeaderError naming the quorum if it cannot connect. A
    JobManager's client reconnects for ever (``retry_forever``), a client's gives up."""
    try:
        from kazoo.client import KazooClient
        from kazoo.handlers.threading import KazooTimeoutError
    except ImportError:
        raise RuntimeError("--ha zookeeper needs the kazoo package: "
                           "pip install 'sessioncluster[ha]'") from None
    # a client's retries are ours to report (NoLeaderError), not kazoo's to print
    quiet = logging.getLogger("sessioncluster.ha.client-kazoo")
    quiet.setLevel(logging.CRITICAL)
    zk = KazooClient(hosts=quorum, timeout=ZK_SESSION_TIMEOUT,
                     logger=None if retry_forever else quiet,
                     connection_retry={"max_tries": -1 if retry_forever else 3, "delay": 0.2,
                                       "max_delay": 1.0})
    try:
        zk.start(timeout=timeout)
    except KazooTimeoutError:
        zk.close()
        raise NoLeaderError(f"ZooKeeper at {quorum} is unreachable") from None
    return zk


def retrieve_leader(info: ConnectionInfo, timeout: float | None = None,
                    should_stop: Callable[[], bool] = lambda: False) -> ConnectionInfo:
    """The current leader of ``info``'s HA session, newer than ``info.epoch`` and alive (the
    key stays ``info``'s). Waits up to ``timeout`` s (default :data:`LEADER_TIMEOUT`); then
    NoLeaderError saying why."""
    timeout = LEADER_TIMEOUT if timeout is None else timeout
    deadline = time.monotonic() + timeout
    zk = None
    try:
        while True:
            try:
                if info.ha == "zookeeper":
                    if zk is None:
                        zk = zk_client(info.zookeeper_quorum,
                                       timeout=max(1.0, min(10.0, deadline - time.monotonic())))
                    leader = _zk_leader(zk, info)
                else:
                    leader = _file_leader(info)
            except NoLeaderError:
                if time.monotonic() > deadline:
                    raise
                leader = None
            if leader is not None:
                return leader
            if session_stopped(info.name):
                raise NoLeaderError(f"HA session '{info.name}' was stopped")
            if time.monotonic() > deadline or should_stop():
                where = (f"in ZooKeeper at {info.zookeeper_quorum}" if info.ha == "zookeeper"
                         else f"in {connection_path(info.name)}")
                raise NoLeaderError(f"no new leader of HA session '{info.name}' {where} within "
                                    f"{timeout:.0f} s (is a standby running? sessioncluster "
                                    f"start-standby {info.name})")
            time.sleep(0.05)
    finally:
        if zk is not None:
            zk.stop()
            zk.close()


def _file_leader(info: ConnectionInfo) -> ConnectionInfo | None:
    try:
        new = ConnectionInfo.read(connection_path(info.name))
    except (OSError, ValueError, TypeError):
        return None
    if new.epoch > info.epoch and pid_alive(new.jobmanager_pid):
        return new
    return None


def _zk_leader(zk: Any, info: ConnectionInfo) -> ConnectionInfo | None:
    from kazoo.exceptions import NoNodeError

    try:
        data, _ = zk.get(f"{ZK_ROOT}/{info.name}/leader")
    except NoNodeError:
        return None
    public = json.loads(data)
    if int(public.get("epoch", 0)) <= info.epoch:
        return None
    return ConnectionInfo(**{**public, "key": info.key})


def find_leader(name: str, timeout: float | None = None) -> ConnectionInfo:
    """The endpoints of session ``name``'s live JobManager, by name: the connection file's, or
    in an HA session whose JobManager there died, the new leader's (waiting up to ``timeout``
    s for one). LookupError saying why if the session has none; a stale connection file (its
    JobManager gone, no HA) is removed."""
    path = connection_path(name)
    try:
        info = ConnectionInfo.read(path)
    except FileNotFoundError:
        raise LookupError(f"no session cluster named '{name}' is running (no {path})") from None
    if not pid_alive(info.jobmanager_pid) and info.ha:
        try:  # its leader died: a standby takes over
            info = retrieve_leader(info, timeout)
        except NoLeaderError as exc:
            raise LookupError(f"session cluster '{name}' has no leader: {exc}") from None
    if not pid_alive(info.jobmanager_pid):
        path.unlink(missing_ok=True)
        raise LookupError(f"session cluster '{name}' is not running (its JobManager, pid "
                          f"{info.jobmanager_pid}, is gone; removed the stale connection file)")
    return info


def running_jobmanager(name: str) -> ConnectionInfo | None:
    """The connection file of session ``name`` if the JobManager it names is alive (no
    waiting, no HA follow-up, nothing removed); None otherwise."""
    try:
        info = ConnectionInfo.read(connection_path(name))
    except (OSError, ValueError, TypeError):
        return None
    return info if pid_alive(info.jobmanager_pid) else None
