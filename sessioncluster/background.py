"""Background asyncio tasks held in one place: the loop keeps only weak references to tasks,
so a task nothing holds may vanish mid-flight; and on stop every one is cancelled."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Coroutine

log = logging.getLogger("sessioncluster.background")


class BackgroundTasks:
    """Starts coroutines as tasks, keeps them until they end, logs their failures (and hands
    them to ``on_failure``: a job whose own task failed must still end)."""

    def __init__(self, name: str = "",
                 on_failure: Callable[[BaseException], None] | None = None) -> None:
        self.name = name
        self.on_failure = on_failure
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
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("%s background task failed", self.name or "a", exc_info=exc)
            if self.on_failure is not None:
                self.on_failure(exc)

    def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()
