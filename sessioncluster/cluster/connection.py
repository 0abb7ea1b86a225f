"""Session directories and connection files, as a Jupyter kernel's connection file.

``$SESSIONCLUSTER_HOME/sessions/<name>/connection.json`` (mode 0600) holds the endpoints, the
key and the JobManager's pid. Whoever can read it can run code on the cluster.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import socket
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from .files import write_private

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def home() -> Path:
    return Path(os.environ.get("SESSIONCLUSTER_HOME", Path.home() / ".sessioncluster"))


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(f"invalid session name {name!r}: use letters, digits, '_', '.', '-'")
    return name


def session_dir(name: str) -> Path:
    return home() / "sessions" / check_name(name)


def connection_path(name: str) -> Path:
    return session_dir(name) / "connection.json"


def runtime_dir() -> Path:
    """A private directory for ``ipc://`` sockets (short paths: ipc paths are limited to ~100 bytes)."""
    path = Path(tempfile.gettempdir()) / f"sessioncluster-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    os.chmod(path, 0o700)
    return path


@dataclass(slots=True)
class ConnectionInfo:
    """What a client or TaskManager needs to reach a session's JobManager."""

    name: str
    key: str
    dispatcher: str
    events: str
    resourcemanager: str
    jobmanager_pid: int
    host: str = "127.0.0.1"
    spark_master: str = ""
    #: the default parallelism of the session's jobs (Flink's parallelism.default)
    parallelism: int = 1
    #: the base URL of the JobManager's REST API (Flink's paths; a bearer token from the key)
    rest: str = ""
    #: the HA backend ("file" or "zookeeper"), "" for a session without HA
    ha: str = ""
    zookeeper_quorum: str = ""
    #: the leader's epoch (fencing token) in an HA session: a client follows a newer one
    epoch: int = 0

    def __repr__(self) -> str:  # the key never goes into logs or output
        return (f"ConnectionInfo(name={self.name!r}, dispatcher={self.dispatcher!r}, "
                f"jobmanager_pid={self.jobmanager_pid})")

    def public(self) -> dict[str, object]:
        """Everything but the key, for status output."""
        d = asdict(self)
        d.pop("key")
        return d

    def write(self, path: Path) -> None:
        write_private(path, json.dumps(asdict(self), indent=1))

    @classmethod
    def read(cls, path: Path) -> "ConnectionInfo":
        with open(path) as f:
            return cls(**json.load(f))


def rest_token(key: str) -> str:
    """The bearer token of a session's REST API, derived from its key (the key itself never
    travels over HTTP)."""
    return hmac.new(key.encode(), b"sessioncluster REST API", hashlib.sha256).hexdigest()


def pid_alive(pid: int) -> bool:
    """True while process ``pid`` runs (a zombie counts as dead)."""
    if pid <= 0:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]
