"""The per-process side of a slot worker: its connection to the TaskManager agent over
``ipc://``, the user code it has loaded (pyspark reuses the worker process across tasks), and
the user's part of a failure's traceback."""

from __future__ import annotations

import gc
import os
import sys
import time
import traceback
from typing import Any

import cloudpickle
import zmq

from ..cluster.connection import ConnectionInfo
from ..lru import Lru
from ..protocol.messages import BlobReply, FetchBlob, TaskError, TaskEvent
from ..protocol.wire import MessageSigner
from .daemon import CONNECTION_ENV, IPC_ENV

#: unpickled user functions and collections a slot worker keeps (the agent's library cache
#: keeps their bytes, bounded by size)
LOADED_USER_CODE = 32
_INTERNAL_PATHS = tuple(
    os.path.dirname(m.__file__) + os.sep for m in (sys.modules["sessioncluster"], cloudpickle)  # type: ignore[arg-type]
)


class TaskManagerUnavailable(RuntimeError):
    """The slot worker cannot reach its TaskManager agent."""


class SlotWorker:
    """The per-process side of a slot worker: its connection to the TaskManager agent and
    the user code it has already loaded (pyspark reuses the worker process across tasks)."""

    _current: "SlotWorker | None" = None

    def __init__(self) -> None:
        ipc = os.environ.get(IPC_ENV)
        conn = os.environ.get(CONNECTION_ENV)
        if not ipc or not conn:
            raise TaskManagerUnavailable(
                "no sessioncluster TaskManager on this executor: spark.python.daemon.module must "
                "be sessioncluster.taskmanager.daemon (is pyspark 4.3.x installed?)")
        from pathlib import Path

        info = ConnectionInfo.read(Path(conn))
        self.signer = MessageSigner(info.key, sender=f"worker-{os.getpid()}")
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 2000)
        self.sock.connect(ipc)
        #: user code already unpickled in this process (bounded: pyspark reuses the worker for
        #: every job of the session)
        self.loaded: Lru[str, Any] = Lru(LOADED_USER_CODE)
        self.pid = os.getpid()
        self.modules = len(sys.modules)

    @classmethod
    def current(cls) -> "SlotWorker":
        """This process's SlotWorker (a forked child makes its own)."""
        if cls._current is None or cls._current.pid != os.getpid():
            cls._current = cls()
        return cls._current

    def report(self, event: TaskEvent) -> None:
        self.signer.send(self.sock, event)

    def freeze_new_modules(self) -> None:
        """After a task that imported modules (pyarrow, pandas, the user's), freeze them out of
        the cycle collector, as the daemon froze what it imported before the fork: pyspark
        collects after every task, and would walk them each time."""
        if len(sys.modules) > self.modules:
            gc.collect()
            gc.freeze()
            self.modules = len(sys.modules)

    def fetch(self, key: str, timeout: float = 60.0, scope: str = "") -> bytes | None:
        """A blob's bytes from the TaskManager's library cache; ``None`` when this process has
        the code loaded already (the TaskManager still hears of the use, for its statistics).
        ``scope`` names the Python dependencies the code was loaded with."""
        have = scope + key in self.loaded
        if have:  # only the use is registered: nothing to wait for
            self.signer.send(self.sock, FetchBlob(key, need_data=False, reply=False))
            return None
        self.signer.send(self.sock, FetchBlob(key))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self.sock.poll(int(left * 1000)):
                raise TaskManagerUnavailable(f"the TaskManager did not answer for blob {key[:12]}")
            got = self.signer.recv(self.sock)
            if got is None:
                continue
            reply = got[1]
            if isinstance(reply, BlobReply) and reply.key == key:
                break
        if reply.error:
            raise RuntimeError(f"cannot load user code {key[:12]}: {reply.error}")
        if reply.data is None:
            raise RuntimeError(f"the BlobServer has no blob {key[:12]}")
        return reply.data

    def load(self, key: str, data: bytes | None, scope: str = "") -> Any:
        """User code by key: this process's unpickled copy (loaded with the same Python
        dependencies), else ``data`` unpickled."""
        loaded = self.loaded.get(scope + key)
        if loaded is None:
            if data is None:
                raise RuntimeError(f"user code {key[:12]} was evicted between fetch and load")
            loaded = cloudpickle.loads(data)
            self.loaded.put(scope + key, loaded)
        return loaded


def user_task_error(exc: BaseException, operator: str, subtask: str) -> TaskError:
    """The user's part of a traceback: frames of this package, pyspark and cloudpickle dropped;
    those of the exception's explicit cause first (an operator's own error raised from the
    user's, as the async wait operator's)."""
    frames = []
    chain = [exc]
    while chain[0].__cause__ is not None and len(chain) < 8:
        chain.insert(0, chain[0].__cause__)
    for part in chain:
        for fs in traceback.extract_tb(part.__traceback__):
            if fs.filename.startswith(_INTERNAL_PATHS) or "/pyspark/" in fs.filename:
                continue
            frames.append((fs.filename, fs.lineno or 0, fs.name, fs.line or ""))
    return TaskError(type(exc).__name__, str(exc), frames, operator, subtask)
