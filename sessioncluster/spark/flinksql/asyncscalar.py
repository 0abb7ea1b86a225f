"""The evaluation of an async scalar function (``AsyncScalarFunction``, ``udf`` of an
``async def``) over one batch of rows, as PyFlink 2.3's ``AsyncScalarFunctionOperation``
(``pyflink/fn_execution/table/async_function/operations.py``) evaluates a stream of them.

The rows' ``eval`` coroutines run on the Python worker's one asyncio event loop (shared with the
DataStream's async wait operator: ``common.asyncwork``), at most
``table.exec.async-scalar.max-concurrent-operations`` of them in flight; the results come
back in the input's order. A row not done within
``table.exec.async-scalar.timeout`` (counted from when it went in flight, retries included)
fails with PyFlink's ``TimeoutError``; with ``retry-strategy`` FIXED_DELAY a raising row is
tried again after ``retry-delay`` while its attempt number is at most ``max-attempts``
(PyFlink's ``FixedDelayRetryStrategy.can_retry``: ``current_attempts <= max_attempts``, on every
exception). Pure asyncio: no Spark here.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Sequence

from ...api.checkpoint_config import parse_duration_ms
from ...common.asyncwork import with_retries, worker_loop

#: Flink's options of async scalar functions (``ExecutionConfigOptions``) and their defaults
MAX_CONCURRENT = "table.exec.async-scalar.max-concurrent-operations"
BUFFER_CAPACITY = "table.exec.async-scalar.buffer-capacity"  # the older name (a fallback key)
TIMEOUT = "table.exec.async-scalar.timeout"
RETRY_STRATEGY = "table.exec.async-scalar.retry-strategy"
RETRY_DELAY = "table.exec.async-scalar.retry-delay"
MAX_ATTEMPTS = "table.exec.async-scalar.max-attempts"


@dataclass(frozen=True, slots=True)
class AsyncOptions:
    """How an async scalar function is evaluated (Flink 2.3's defaults)."""

    max_concurrent_operations: int = 10
    #: seconds (3 min)
    timeout: float = 180.0
    #: FIXED_DELAY (True) or NO_RETRY
    retry: bool = True
    #: seconds (100 ms)
    retry_delay: float = 0.1
    max_attempts: int = 3

    @classmethod
    def of(cls, options: dict[str, str]) -> "AsyncOptions":
        """The options as set in a job's configuration (Flink's keys and value syntax)."""
        default = cls()
        capacity = options.get(MAX_CONCURRENT, options.get(BUFFER_CAPACITY))
        strategy = options.get(RETRY_STRATEGY, "FIXED_DELAY").strip().upper()
        if strategy not in ("FIXED_DELAY", "NO_RETRY"):
            raise ValueError(f"{RETRY_STRATEGY} is FIXED_DELAY or NO_RETRY, not {strategy!r}")
        made = cls(
            max_concurrent_operations=int(capacity) if capacity is not None
            else default.max_concurrent_operations,
            timeout=parse_duration_ms(options[TIMEOUT]) / 1000 if TIMEOUT in options
            else default.timeout,
            retry=strategy == "FIXED_DELAY",
            retry_delay=parse_duration_ms(options[RETRY_DELAY]) / 1000 if RETRY_DELAY in options
            else default.retry_delay,
            max_attempts=int(options.get(MAX_ATTEMPTS, default.max_attempts)))
        if made.max_concurrent_operations < 1:
            raise ValueError(f"{MAX_CONCURRENT} must be positive, not "
                             f"{made.max_concurrent_operations}")
        return made


def evaluate(call: Callable[..., Awaitable[Any]], rows: Sequence[tuple[Any, ...]],
             options: AsyncOptions, describe: Callable[[tuple[Any, ...]], str] = str,
             loop: asyncio.AbstractEventLoop | None = None) -> list[Any]:
    """``call(*row)`` of every row, concurrently as ``options`` allow, in the rows' order; the
    first failing row's error raised (the others cancelled). ``describe`` gives a row as the
    timeout's message shows it."""
    return (loop or worker_loop()).run_until_complete(_all(call, rows, options, describe))


async def _all(call: Callable[..., Awaitable[Any]], rows: Sequence[tuple[Any, ...]],
               options: AsyncOptions, describe: Callable[[tuple[Any, ...]], str]) -> list[Any]:
    in_flight = asyncio.Semaphore(options.max_concurrent_operations)

    async def one(row: tuple[Any, ...]) -> Any:
        async with in_flight:
            try:
                return await asyncio.wait_for(_attempts(call, row, options), options.timeout)
            except asyncio.TimeoutError:
                raise TimeoutError("Async function call has timed out for input: "
                                   + describe(row)) from None

    tasks = [asyncio.ensure_future(one(row)) for row in rows]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _attempts(call: Callable[..., Awaitable[Any]], row: tuple[Any, ...],
                    options: AsyncOptions) -> Any:
    def backoff(attempt: int, _: Any, error: Exception | None) -> float | None:
        retry = error is not None and options.retry and attempt <= options.max_attempts
        return options.retry_delay if retry else None

    return await with_retries(lambda: call(*row), backoff)
