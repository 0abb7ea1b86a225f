"""The ResourceManager: the TaskManager registry, the slot table and heartbeat timeouts."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Callable

from ..protocol.messages import (
    BlobReply,
    LibraryCacheStats,
    Message,
    RegisterTaskManager,
    RequestBlob,
    TaskEvent,
    TaskManagerChanged,
    TaskManagerHeartbeat,
    TaskManagerInfo,
    TaskManagerRegistered,
    UnknownTaskManager,
)
from .blobserver import BlobServer

log = logging.getLogger("sessioncluster.resourcemanager")


@dataclass(slots=True)
class TaskManagerRegistration:
    info: TaskManagerInfo
    ident: list[bytes]
    #: slot index -> Spark task attempt id holding it (slot sharing: every Execution of one
    #: Spark task shares its slot)
    slots: list[int | None] = field(default_factory=list)
    #: agent pid -> its library cache: Spark starts one Python daemon per worker environment,
    #: so one executor (one TaskManager) may have several agents
    agents: dict[int, LibraryCacheStats] = field(default_factory=dict)


class ResourceManager:
    """Handles the TaskManagers' ROUTER socket; ``send(ident, msg)`` answers one of them,
    ``publish(msg)`` tells the clients, ``on_task_events(events)`` feeds the JobMasters, and
    ``on_lost(tm_id, unresponsive)`` hears of a TaskManager lost (``unresponsive``: it missed its
    heartbeats for ``heartbeat_timeout`` seconds, Flink's heartbeat.timeout, without dying)."""

    def __init__(self, blobs: BlobServer, send: Callable[[list[bytes], Message], None],
                 publish: Callable[[Message], None],
                 on_task_events: Callable[[list[TaskEvent]], None],
                 heartbeat_interval: float = 0.5, heartbeat_timeout: float = 50.0,
                 on_lost: Callable[[str, bool], None] | None = None) -> None:
        self.blobs = blobs
        self.send = send
        self.publish = publish
        self.on_task_events = on_task_events
        #: as Flink requires the interval below the timeout: a short timeout (a test's 3 s)
        #: still sees five heartbeats before it
        self.heartbeat_interval = min(heartbeat_interval, heartbeat_timeout / 5)
        self.heartbeat_timeout = heartbeat_timeout
        self.on_lost = on_lost
        self.taskmanagers: dict[str, TaskManagerRegistration] = {}
        self.lost: dict[str, TaskManagerInfo] = {}
        self.slot_of_task: dict[int, tuple[str, int]] = {}
        self.handlers: dict[type[Message], Callable[[list[bytes], Message], None]] = {
            RegisterTaskManager: self.on_register,
            TaskManagerHeartbeat: self.on_heartbeat,
            RequestBlob: self.on_request_blob,
        }

    def handle(self, ident: list[bytes], msg: Message) -> None:
        handler = self.handlers.get(type(msg))
        if handler is None:
            log.warning("unexpected %s from a TaskManager", msg.type)
            return
        handler(ident, msg)

    def on_register(self, ident: list[bytes], msg: Message) -> None:
        assert isinstance(msg, RegisterTaskManager)
        now = time.time()
        gone = self.lost.get(msg.tm_id)
        if gone is not None and (gone.pid == msg.pid or gone.jvm_pid == msg.jvm_pid):
            return  # an agent of a lost executor, about to exit: not a TaskManager any more
        old = self.taskmanagers.get(msg.tm_id)
        if old is not None and old.info.pid == msg.pid:
            old.ident = ident  # a repeated registration
        elif old is not None and old.info.jvm_pid == msg.jvm_pid:
            # another Python daemon of the same executor: the same TaskManager
            old.agents.setdefault(msg.pid, LibraryCacheStats())
        else:
            info = TaskManagerInfo(msg.tm_id, msg.host, msg.pid, msg.daemon_pid, msg.jvm_pid,
                                   msg.slots, last_heartbeat=now, registered_at=now)
            self.taskmanagers[msg.tm_id] = TaskManagerRegistration(
                info, ident, [None] * msg.slots, {msg.pid: LibraryCacheStats()})
            self.lost.pop(msg.tm_id, None)
            log.info("TaskManager %s registered (pid %d, %d slots)", msg.tm_id, msg.pid, msg.slots)
            self.publish(TaskManagerChanged(msg.tm_id, "REGISTERED", info))
        self.send(ident, TaskManagerRegistered(msg.tm_id, self.heartbeat_interval))

    def on_heartbeat(self, ident: list[bytes], msg: Message) -> None:
        assert isinstance(msg, TaskManagerHeartbeat)
        reg = self.taskmanagers.get(msg.tm_id)
        if reg is None:
            self.send(ident, UnknownTaskManager(msg.tm_id))
            return
        reg.info.last_heartbeat = time.time()
        reg.agents[msg.pid or reg.info.pid] = msg.library_cache
        reg.info.library_cache = LibraryCacheStats.total(reg.agents.values())
        if msg.events:
            self.on_task_events(msg.events)

    def on_request_blob(self, ident: list[bytes], msg: Message) -> None:
        assert isinstance(msg, RequestBlob)
        data = self.blobs.get(msg.key)
        self.send(ident, BlobReply(msg.key, data, None if data is not None else "no such blob"))

    # -- slots ------------------------------------------------------------------------------
    def slot_for(self, tm_id: str | None, spark_task_id: int) -> int | None:
        """The slot a Spark task attempt holds on ``tm_id``, allocated on first sight."""
        held = self.slot_of_task.get(spark_task_id)
        if held is not None:
            return held[1]
        reg = self.taskmanagers.get(tm_id or "")
        if reg is None:
            return None
        for i, owner in enumerate(reg.slots):
            if owner is None:
                reg.slots[i] = spark_task_id
                self.slot_of_task[spark_task_id] = (reg.info.tm_id, i)
                reg.info.slots_used = sum(o is not None for o in reg.slots)
                return i
        return None  # more tasks than slots: Spark's view and ours briefly disagree

    def release(self, spark_task_id: int) -> None:
        held = self.slot_of_task.pop(spark_task_id, None)
        if held is None:
            return
        reg = self.taskmanagers.get(held[0])
        if reg is not None and reg.slots[held[1]] == spark_task_id:
            reg.slots[held[1]] = None
            reg.info.slots_used = sum(o is not None for o in reg.slots)

    # -- liveness ---------------------------------------------------------------------------
    def check_heartbeats(self) -> None:
        now = time.time()
        for tm_id, reg in list(self.taskmanagers.items()):
            if now - reg.info.last_heartbeat > self.heartbeat_timeout:
                self.mark_lost(tm_id, f"no heartbeat for {now - reg.info.last_heartbeat:.1f} s",
                               unresponsive=True)

    def mark_lost(self, tm_id: str, reason: str, unresponsive: bool = False) -> None:
        reg = self.taskmanagers.pop(tm_id, None)
        if reg is None:
            return
        reg.info.state = "LOST"
        self.lost[tm_id] = reg.info
        for task_id in [t for t, (tm, _) in self.slot_of_task.items() if tm == tm_id]:
            del self.slot_of_task[task_id]
        log.warning("TaskManager %s lost: %s", tm_id, reason)
        self.publish(TaskManagerChanged(tm_id, "LOST", reg.info))
        if self.on_lost is not None:
            self.on_lost(tm_id, unresponsive)

    def infos(self) -> list[TaskManagerInfo]:
        return [r.info for r in self.taskmanagers.values()]

    def cache_totals(self) -> LibraryCacheStats:
        return LibraryCacheStats.total(r.info.library_cache for r in self.taskmanagers.values())
