"""The TaskManager agent: the ZeroMQ side of one Spark executor.

Sockets:

* ``rm`` (DEALER -> ResourceManager ROUTER, tcp): registration, heartbeats carrying batched
  task events and the library cache's figures, blob requests.
* ``workers`` (ROUTER, ``ipc://``): the slot workers' task events and library-cache lookups.

It exits when the pyspark daemon that forked it is gone (its parent changes).

Liveness, as Flink's heartbeat sees a TaskManager: the agent's heartbeats. A stopped agent
(SIGSTOP) sends none; nor does an agent whose executor JVM is stopped, so that the
ResourceManager finds either unresponsive after ``heartbeat.timeout`` and has Spark replace the
executor.
"""

from __future__ import annotations

import copy
import logging
import os
import socket
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable

import psutil
import zmq

from ..cluster.connection import ConnectionInfo, pid_alive
from ..lru import LruBytes
from ..protocol.messages import (
    BlobReply,
    FetchBlob,
    LibraryCacheStats,
    Message,
    RegisterTaskManager,
    RequestBlob,
    TaskEvent,
    TaskManagerHeartbeat,
    TaskManagerRegistered,
    UnknownTaskManager,
)
from ..protocol.wire import MAX_MESSAGE_BYTES, MessageSigner

log = logging.getLogger("sessioncluster.taskmanager")

#: Library cache bound; least recently used blobs go first.
CACHE_BYTES = int(os.environ.get("SESSIONCLUSTER_LIBRARY_CACHE_BYTES", 512 * 1024 * 1024))


class LibraryCache(LruBytes):
    """Blobs by SHA-256 key, bounded by size, least recently used evicted first; with the
    figures the heartbeats carry."""

    def __init__(self, capacity: int = CACHE_BYTES) -> None:
        super().__init__(capacity)
        self.stats = LibraryCacheStats()

    def put(self, key: str, data: bytes) -> None:
        super().put(key, data)
        self.stats.bytes, self.stats.entries = self.nbytes, len(self)


class TaskManagerAgent:
    def __init__(self, info: ConnectionInfo, ipc: str, daemon_pid: int, jvm_pid: int,
                 tm_id: str, slots: int) -> None:
        self.info = info
        self.daemon_pid = daemon_pid
        self.jvm_pid = jvm_pid
        self.tm_id = tm_id
        self.slots = slots
        self.signer = MessageSigner(info.key, sender=f"taskmanager-{tm_id}")
        self.ctx = zmq.Context()
        self.rm = self.ctx.socket(zmq.DEALER)
        self.rm.setsockopt(zmq.LINGER, 1000)
        self.rm.connect(info.resourcemanager)
        self.workers = self.ctx.socket(zmq.ROUTER)
        self.workers.setsockopt(zmq.LINGER, 0)
        self.workers.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        self.ipc_path = ipc.removeprefix("ipc://")
        if os.path.exists(self.ipc_path):
            os.unlink(self.ipc_path)
        self.workers.bind(ipc)
        os.chmod(self.ipc_path, 0o600)
        self.cache = LibraryCache()
        self.heartbeat_interval = 0.5  # until the ResourceManager gives its own
        self.sent_cache_stats = LibraryCacheStats()
        self.registered = False
        self.pending_events: list[TaskEvent] = []
        self.waiting_for_blob: dict[str, list[list[bytes]]] = defaultdict(list)
        self.rm_handlers: dict[type[Message], Callable[[Message], None]] = {
            TaskManagerRegistered: self.on_registered,
            BlobReply: self.on_blob_reply,
            UnknownTaskManager: self.on_unknown,
        }
        self.worker_handlers: dict[type[Message], Callable[[list[bytes], Message], None]] = {
            TaskEvent: self.on_task_event,
            FetchBlob: self.on_fetch_blob,
        }

    # -- ResourceManager side -----------------------------------------------------------
    def register(self) -> None:
        self.signer.send(self.rm, RegisterTaskManager(
            self.tm_id, socket.gethostname(), os.getpid(), self.daemon_pid, self.jvm_pid,
            self.slots))
        self.last_register = time.monotonic()

    def on_registered(self, msg: Message) -> None:
        assert isinstance(msg, TaskManagerRegistered)
        self.registered = True
        self.heartbeat_interval = msg.heartbeat_interval

    def on_unknown(self, msg: Message) -> None:
        self.registered = False
        self.register()

    def on_blob_reply(self, msg: Message) -> None:
        assert isinstance(msg, BlobReply)
        if msg.data is not None:
            self.cache.put(msg.key, msg.data)
        for ident in self.waiting_for_blob.pop(msg.key, []):
            self.signer.send(self.workers, msg, ident=ident)

    def executor_stopped(self) -> bool:
        """True while the executor JVM is stopped (SIGSTOP): it runs no task, answers nothing."""
        try:
            return psutil.Process(self.jvm_pid).status() == psutil.STATUS_STOPPED
        except psutil.Error:
            return False

    def heartbeat(self) -> None:
        if self.executor_stopped():
            self.last_heartbeat = time.monotonic()  # skipped: try again after an interval
            return
        events, self.pending_events = self.pending_events, []
        self.signer.send(self.rm, TaskManagerHeartbeat(self.tm_id, events, self.cache.stats,
                                                             os.getpid()))
        self.sent_cache_stats = copy.copy(self.cache.stats)
        self.last_heartbeat = time.monotonic()

    # -- slot worker side -------------------------------------------------------------------
    def on_task_event(self, ident: list[bytes], msg: Message) -> None:
        assert isinstance(msg, TaskEvent)
        msg.tm_id = self.tm_id
        self.pending_events.append(msg)

    def on_fetch_blob(self, ident: list[bytes], msg: Message) -> None:
        assert isinstance(msg, FetchBlob)
        data = self.cache.get(msg.key)
        if data is not None:
            self.cache.stats.hits += 1
            if msg.reply:
                self.signer.send(self.workers, BlobReply(msg.key, data if msg.need_data else None),
                                  ident=ident)
            return
        self.cache.stats.misses += 1
        first = msg.key not in self.waiting_for_blob
        waiting = self.waiting_for_blob[msg.key]
        if msg.reply:
            waiting.append(ident)
        if first:  # a use without reply still brings the blob back into the cache
            self.signer.send(self.rm, RequestBlob(msg.key))

    # -- loop -------------------------------------------------------------------------------
    def run(self) -> None:
        poller = zmq.Poller()
        poller.register(self.rm, zmq.POLLIN)
        poller.register(self.workers, zmq.POLLIN)
        self.register()
        self.last_heartbeat = time.monotonic()
        try:
            while os.getppid() == self.daemon_pid and pid_alive(self.jvm_pid):
                now = time.monotonic()
                if not self.registered and now - self.last_register > 2.0:
                    self.register()
                wait = max(0.0, self.last_heartbeat + self.heartbeat_interval - now)
                for sock, _ in poller.poll(int(wait * 1000) + 1):
                    from_rm = sock is self.rm
                    while True:
                        try:
                            got = self.signer.recv(sock, zmq.NOBLOCK)
                        except zmq.Again:
                            break
                        if got is None:
                            continue
                        ident, msg = got
                        if from_rm and type(msg) in self.rm_handlers:
                            self.rm_handlers[type(msg)](msg)
                        elif not from_rm and type(msg) in self.worker_handlers:
                            self.worker_handlers[type(msg)](ident, msg)
                        else:
                            log.warning("unexpected %s on the %s socket", msg.type,
                                        "resourcemanager" if from_rm else "worker")
                # Task events and the cache's figures go out at once when they change (batched
                # per wake-up); otherwise every interval.
                if self.registered and (self.pending_events or
                                        self.cache.stats != self.sent_cache_stats or
                                        time.monotonic() - self.last_heartbeat >= self.heartbeat_interval):
                    self.heartbeat()
        finally:
            self.workers.close(0)
            self.rm.close()
            self.ctx.term()
            if os.path.exists(self.ipc_path):
                os.unlink(self.ipc_path)


def run_agent(connection_file: str, ipc: str, daemon_pid: int, jvm_pid: int, tm_id: str,
              slots: int) -> None:
    logging.basicConfig(level=logging.WARNING,
                        format=f"%(asctime)s TaskManager {tm_id} %(levelname)s %(message)s")
    info = ConnectionInfo.read(Path(connection_file))
    TaskManagerAgent(info, ipc, daemon_pid, jvm_pid, tm_id, slots).run()
