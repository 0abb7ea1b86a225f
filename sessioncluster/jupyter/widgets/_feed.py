"""What the live widgets share: one follower thread per widget, fed by pushed events.

Event callbacks run on the session's event thread and must be quick, so they only put the
message into the widget's inbox; the widget's own thread applies it to its view, renders,
and fetches a snapshot when one is due (on its own Dispatcher connection: the kernel's main
thread may hold the session's while it waits for an attached job).
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable, Protocol

from ...protocol.messages import Message

Unsubscribe = Callable[[], None]


class EventSource(Protocol):
    """``Session.events``: ``subscribe(topic, callback(topic, msg)) -> unsubscribe``."""

    def subscribe(self, topic: str | None,
                  callback: Callable[[str, Message], None]) -> Unsubscribe: ...


class _Stop:
    """Put into an inbox: the follower thread ends."""


class _Poke:
    """Put into an inbox: the follower thread wakes up (e.g. a Refresh button)."""


STOP, POKE = _Stop(), _Poke()


class Follower:
    """An inbox fed by an event subscription, drained by a daemon thread that calls
    ``step(messages)`` after every batch and at least every ``tick`` seconds; ``step`` returns
    False to end the thread. ``stopped`` is set when it has ended."""

    def __init__(self, name: str, events: EventSource, topic: str,
                 step: Callable[[list[Any]], bool], tick: float = 1.0) -> None:
        self.inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.stopped = threading.Event()
        self._step = step
        self._tick = tick
        self._unsubscribe = events.subscribe(topic, lambda _topic, msg: self.inbox.put(msg))
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.inbox.put(STOP)

    def poke(self) -> None:
        self.inbox.put(POKE)

    def join(self, timeout: float | None = None) -> bool:
        return self.stopped.wait(timeout)

    def _run(self) -> None:
        try:
            go_on = self._step([])
            while go_on:
                batch: list[Any] = []
                deadline = time.monotonic() + self._tick
                try:
                    batch.append(self.inbox.get(timeout=self._tick))
                    while time.monotonic() < deadline:  # what else is queued, without waiting
                        batch.append(self.inbox.get_nowait())
                except queue.Empty:
                    pass
                if any(m is STOP for m in batch):
                    break
                go_on = self._step(batch)
        finally:
            self._unsubscribe()
            self.stopped.set()
