"""Background asyncio tasks held in one place: the loop keeps only weak references to tasks,
so a task nothing holds may vanish mid-flight; and on stop every one is cancelled."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Coroutine

log = logging.getLogger("sessioncluster.background")


class BackgroundTasks:
    """Starts coroutines as tasks, keeps them until they end, logs their failures."""

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._tasks: set[asyncio.Task[Any]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def start(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s background task failed", self.name or "a", exc_info=task.exception())

    def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()
