"""What PyFlink's async functions share in a Python worker: its one asyncio event loop, and an
async call tried again after a backoff while a retry strategy says so.

Used by the DataStream's async wait operator (``runtime.operators.asyncwait``) and by the SQL
async scalar functions (``spark.flinksql.asyncscalar``). Pure asyncio.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

_LOOP: asyncio.AbstractEventLoop | None = None

#: ``(attempt, result or None, error or None)`` -> seconds to wait before the next attempt, or
#: None: the attempt's outcome is final
Backoff = Callable[[int, Any, "Exception | None"], "float | None"]


def worker_loop() -> asyncio.AbstractEventLoop:
    """This Python worker's event loop (one, created on first use, reused by every function)."""
    global _LOOP
    if _LOOP is None or _LOOP.is_closed():
        _LOOP = asyncio.new_event_loop()
    return _LOOP


async def with_retries(attempt: Callable[[], Awaitable[Any]], backoff: Backoff) -> Any:
    """``attempt()``'s result, attempted again (from attempt 1 on) after the delay ``backoff``
    gives for an attempt's outcome; the final attempt's error is raised."""
    number = 1
    while True:
        result: Any = None
        error: Exception | None = None
        try:
            result = await attempt()
        except Exception as e:  # noqa: BLE001 - the strategy decides about any user error
            error = e
        delay = backoff(number, result, error)
        if delay is None:
            if error is not None:
                raise error
            return result
        await asyncio.sleep(delay)
        number += 1
