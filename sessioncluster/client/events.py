"""Live events from the JobManager's PUB socket, delivered to callbacks on one client thread.

Widgets and progress views subscribe here; nothing polls. Topics are a job id or ``cluster``.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

import zmq

from ..cluster.connection import ConnectionInfo
from ..protocol.messages import Message
from ..protocol.wire import MessageSigner

log = logging.getLogger("sessioncluster.events")

EventCallback = Callable[[str, Message], None]


class EventSubscriber:
    """A SUB socket on its own daemon thread; ``subscribe(topic, callback)`` registers a
    callback (``topic=None``: every topic). Callbacks run on the subscriber's thread and must
    be quick; an exception in one is logged and does not stop the others."""

    def __init__(self, info: ConnectionInfo) -> None:
        self.signer = MessageSigner(info.key, sender="client-events")
        self._callbacks: dict[str | None, list[EventCallback]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._connected = threading.Event()
        #: HA: the new leader's events endpoint, for the thread to move to
        self._move_to: str | None = None
        self._thread = threading.Thread(target=self._run, args=(info.events,),
                                        name="sessioncluster-events", daemon=True)
        self._thread.start()
        self._connected.wait(5.0)

    def subscribe(self, topic: str | None, callback: EventCallback) -> Callable[[], None]:
        """Register ``callback``; returns a function that unregisters it."""
        with self._lock:
            self._callbacks.setdefault(topic, []).append(callback)

        def unsubscribe() -> None:
            with self._lock:
                callbacks = self._callbacks.get(topic, [])
                if callback in callbacks:
                    callbacks.remove(callback)

        return unsubscribe

    def reconnect(self, info: ConnectionInfo) -> None:
        """Receive from ``info``'s JobManager from now on (an HA session's new leader)."""
        self._move_to = info.events

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)

    def _run(self, endpoint: str) -> None:
        ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
        sock = ctx.socket(zmq.SUB)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SUBSCRIBE, b"")
        sock.connect(endpoint)
        self._connected.set()
        try:
            while not self._stop.is_set():
                if self._move_to is not None:
                    sock.disconnect(endpoint)
                    endpoint, self._move_to = self._move_to, None
                    sock.connect(endpoint)
                if not sock.poll(200):
                    continue
                frames = sock.recv_multipart()
                if len(frames) < 2:
                    continue
                got = self.signer.unpack(frames[1:])
                if got is None:
                    continue
                topic = frames[0].decode(errors="replace")
                with self._lock:
                    callbacks = [*self._callbacks.get(topic, ()), *self._callbacks.get(None, ())]
                for callback in callbacks:
                    try:
                        callback(topic, got[1])
                    except Exception:  # noqa: BLE001 - one bad view must not stop the others
                        log.exception("event callback failed")
        finally:
            sock.close(0)
