"""Flink's async wait operator (``AsyncDataStream.ordered_wait`` / ``unordered_wait`` and their
``_with_retry`` forms), as PyFlink 2.3's Python worker runs it
(``pyflink/fn_execution/datastream/process/async_function/operation.py``).

Each record's ``async_invoke`` coroutine runs on the worker's one event loop
(``common.asyncwork.worker_loop``); at most ``capacity`` records are in the operator's queue (taken
and not yet emitted): a record waits for a place. ORDERED emits each record's outputs in input
order, UNORDERED as the calls complete; the outputs keep the input's timestamp. A call not done
``timeout`` after its record came in is given up and ``timeout(value)`` gives the outputs (its
default raises: the job fails); the retry strategy's predicates decide whether a result or an
exception is attempted again after the strategy's backoff, while ``can_retry(attempt)`` holds and
the timeout has not passed. A failed call fails the job with PyFlink's error ("Error happens
inside the class ..."), the user's exception as its cause. The driver runs the loop whenever the
queue is full, at the end of each chunk of input (what is done goes on) and in ``finish``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Iterable

from ...api.async_io import NO_RETRY_STRATEGY, AsyncRetryStrategy
from ...common.asyncwork import with_retries, worker_loop
from .base import OneInputStreamOperator, OperatorContext, method


class _Entry:
    """One record in the queue: its timestamp, and once its call is done its outputs or error."""

    __slots__ = ("timestamp", "value", "task", "outputs", "error")

    def __init__(self, timestamp: int | None, value: Any) -> None:
        self.timestamp = timestamp
        self.value = value
        self.task: asyncio.Task[None] | None = None
        self.outputs: list[Any] = []
        self.error: BaseException | None = None


class AsyncWaitOperator(OneInputStreamOperator):
    """An ``AsyncFunction`` over a non-keyed stream, ordered or unordered (one operator for both
    execution modes)."""

    keyed = False

    def __init__(self, function: Any, timeout_ms: int, capacity: int = 100,
                 retry_strategy: AsyncRetryStrategy = NO_RETRY_STRATEGY,
                 ordered: bool = True) -> None:
        if capacity < 1:
            raise ValueError(f"The capacity must be positive, not {capacity}")
        method(function, "async_invoke", "AsyncFunction")
        self.function = function
        self.user_functions = [function]
        self.timeout = timeout_ms / 1000
        self.capacity = capacity
        self.retry_strategy = retry_strategy
        self.ordered = ordered

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        self._loop = worker_loop()
        predicate = self.retry_strategy.get_retry_predicate()
        self._retry_result = predicate.result_predicate()
        self._retry_exception = predicate.exception_predicate()
        #: the records taken and not yet emitted, in input order
        self._queue: deque[_Entry] = deque()
        #: UNORDERED: the records whose call is done, in the order they completed
        self._completed: deque[_Entry] = deque()
        self._failure: BaseException | None = None

    # -- the driver's calls ---------------------------------------------------------------------
    def process_element(self, value: Any, timestamp: int | None) -> None:
        self.process_elements(((timestamp, value),))

    def process_elements(self, records: Iterable[tuple[int | None, Any]]) -> None:
        for ts, value in records:
            while len(self._queue) >= self.capacity:
                self._wait()
            self._put(_Entry(ts, value))
        if self._queue:
            self._run(asyncio.sleep(0))  # the calls go on; what is done goes out
            self._emit()

    def finish(self) -> None:
        """The input ended: every record's call completes and its outputs go out."""
        while self._queue:
            self._wait()
        self._run(asyncio.sleep(0))  # the calls given up at their timeout end

    def close(self) -> None:
        """Calls still running (the job failed) are cancelled and end on the loop."""
        tasks = [e.task for e in getattr(self, "_queue", ()) if e.task is not None and not e.task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self._loop.run_until_complete(asyncio.sleep(0))  # and the user's calls they awaited
        super().close()

    # -- the queue ------------------------------------------------------------------------------
    def _put(self, entry: _Entry) -> None:
        entry.task = self._loop.create_task(self._call(entry, self._loop.time()))
        self._queue.append(entry)

    def _wait(self) -> None:
        """Run the loop until a place in the queue is free (or the job fails)."""
        queue = self._queue
        if self.ordered:
            head = queue[0].task
            if head is not None and not head.done():
                self._run(asyncio.wait((head,)))
        elif not self._completed:
            tasks = [e.task for e in queue if e.task is not None]
            self._run(asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED))
        self._emit()

    def _run(self, awaitable: Any) -> None:
        self._loop.run_until_complete(awaitable)
        if self._failure is not None:
            raise self._failure

    def _emit(self) -> None:
        queue, collect = self._queue, self.output.records.append
        if self.ordered:
            while queue and queue[0].task is not None and queue[0].task.done():
                entry = queue.popleft()
                for item in entry.outputs:
                    collect((None, entry.timestamp, item))
            return
        completed = self._completed
        while completed:
            entry = completed.popleft()
            queue.remove(entry)
            for item in entry.outputs:
                collect((None, entry.timestamp, item))

    # -- one record's call ----------------------------------------------------------------------
    async def _call(self, entry: _Entry, taken: float) -> None:
        failure: Exception | None
        try:
            entry.outputs, failure = self._checked(await self._outputs(entry.value, taken))
        except Exception as error:  # noqa: BLE001 - the job fails with it (PyFlink's message)
            failure = self._failed(entry.value, error)
        if failure is not None and self._failure is None:
            self._failure = failure
        if not self.ordered:
            self._completed.append(entry)

    async def _outputs(self, value: Any, taken: float) -> Any:
        invoke = self.function.async_invoke
        retried = self._retry_result is not None or self._retry_exception is not None
        coro = with_retries(lambda: invoke(value), self._backoff) if retried else invoke(value)
        if self.timeout <= 0:
            return await coro
        task = asyncio.ensure_future(coro)
        try:
            # a TimeoutError the user's code raises is an error, not this timeout
            done, _ = await asyncio.wait((task,), timeout=max(taken + self.timeout - self._loop.time(), 0))
        finally:
            task.cancel()  # timed out, or this call cancelled (close): the user's call ends too
        if done:
            return task.result()
        return self.function.timeout(value)

    def _backoff(self, attempt: int, result: Any, error: Exception | None) -> float | None:
        on_result, on_error = self._retry_result, self._retry_exception
        satisfied = ((result is not None and on_result is not None and on_result(result))
                     or (error is not None and on_error is not None and on_error(error)))
        if satisfied and self.retry_strategy.can_retry(attempt):
            return self.retry_strategy.get_backoff_time_millis(attempt) / 1000
        return None

    def _checked(self, result: Any) -> tuple[Any, RuntimeError | None]:
        """PyFlink's check of a call's (or ``timeout``'s) result: any iterable; else no outputs
        and the job fails."""
        if isinstance(result, Iterable):
            return result, None
        what = "cannot be none" if result is None else "should be of list type"
        return [], RuntimeError(f"The result of AsyncFunction {what}, please check the methods "
                                f"'async_invoke' and 'timeout' of class '{type(self.function)}'.")

    def _failed(self, value: Any, error: Exception) -> Exception:
        failure = Exception(f"Error happens inside the class '{type(self.function)}' during "
                            f"handling input '{value}'", error)
        failure.__cause__ = error
        return failure

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        for name in ("_loop", "_queue", "_completed", "_failure", "_retry_result",
                     "_retry_exception"):
            state.pop(name, None)
        return state

