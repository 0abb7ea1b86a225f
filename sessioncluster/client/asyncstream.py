"""PyFlink's ``AsyncDataStream``: async I/O after a DataStream."""

from __future__ import annotations

import inspect
from typing import Any

from ..api.async_io import NO_RETRY_STRATEGY
from ..common.time import to_millis
from ..runtime.operators import AsyncWaitOperator
from .datastream import DataStream, then, typed


class AsyncDataStream:
    """Async I/O (PyFlink's ``AsyncDataStream``): an ``AsyncFunction``'s ``async_invoke`` per
    record, at most ``capacity`` records in the operator at once; ``ordered_wait`` emits in input
    order, ``unordered_wait`` as the calls complete (``runtime.operators.AsyncWaitOperator``)."""

    @staticmethod
    def unordered_wait(data_stream: DataStream, async_function: Any, timeout: Any,
                       capacity: int = 100, output_type: Any = None) -> DataStream:
        return AsyncDataStream.unordered_wait_with_retry(
            data_stream, async_function, timeout, NO_RETRY_STRATEGY, capacity, output_type)

    @staticmethod
    def unordered_wait_with_retry(data_stream: DataStream, async_function: Any, timeout: Any,
                                  async_retry_strategy: Any, capacity: int = 100,
                                  output_type: Any = None) -> DataStream:
        return _async_wait(data_stream, async_function, timeout, async_retry_strategy, capacity,
                           output_type, ordered=False)

    @staticmethod
    def ordered_wait(data_stream: DataStream, async_function: Any, timeout: Any,
                     capacity: int = 100, output_type: Any = None) -> DataStream:
        return AsyncDataStream.ordered_wait_with_retry(
            data_stream, async_function, timeout, NO_RETRY_STRATEGY, capacity, output_type)

    @staticmethod
    def ordered_wait_with_retry(data_stream: DataStream, async_function: Any, timeout: Any,
                                async_retry_strategy: Any, capacity: int = 100,
                                output_type: Any = None) -> DataStream:
        return _async_wait(data_stream, async_function, timeout, async_retry_strategy, capacity,
                           output_type, ordered=True)


def _async_wait(data_stream: DataStream, async_function: Any, timeout: Any, strategy: Any,
                capacity: int, output_type: Any, ordered: bool) -> DataStream:
    """The async wait operator after ``data_stream``, refused as PyFlink's ``_validate`` does."""
    if not inspect.iscoroutinefunction(getattr(async_function, "async_invoke", None)):
        raise Exception("Method 'async_invoke' of class '%s' should be declared as 'async def'."
                        % type(async_function))
    if strategy is None:
        raise Exception("Async retry strategy should not be None.")
    timeout_ms = to_millis(timeout)
    if strategy is not NO_RETRY_STRATEGY and timeout_ms <= 0:
        raise Exception("Timeout should be configured when do async with retry.")
    if strategy.get_retry_predicate() is None:
        raise Exception("Retry predicate of the async retry strategy '%s' is None." % type(strategy))
    operator = AsyncWaitOperator(async_function, timeout_ms, capacity, strategy, ordered)
    return typed(then(data_stream, operator, "async wait operator"),
                  output_type)
