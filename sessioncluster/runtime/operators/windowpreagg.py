"""A window's contents as they grow (one adder for the window operator's BATCH path and for
the pre-aggregation before the shuffle), and that pre-aggregation's map side."""

from __future__ import annotations

import gc
import itertools
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Protocol

from ...api.functions import MIN_WATERMARK
from ...api.window import (
    NO_TIMESTAMP_ERROR,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
)


class _Empty:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<empty>"


#: a window without contents yet (``None`` is a value a reduce may give)
EMPTY = _Empty()

#: the assigners whose windows may be pre-aggregated before the shuffle
PRE_AGGREGATING_ASSIGNERS = (TumblingEventTimeWindows, SlidingEventTimeWindows,
                             TumblingProcessingTimeWindows, SlidingProcessingTimeWindows)


def reduce_of(function: Any) -> Callable[[Any, Any], Any]:
    """A ReduceFunction's ``reduce``, or the callable itself."""
    return function.reduce if callable(getattr(function, "reduce", None)) else function


def content_adder(function_kind: str, function: Any) -> Callable[[Any, Any], Any]:
    """How an element joins a window's contents (``EMPTY`` at first): reduced, added to an
    aggregate's accumulator, or appended to a list (``apply``/``process``)."""
    if function_kind == "reduce":
        reduce = reduce_of(function)
        return lambda acc, value: value if acc is EMPTY else reduce(acc, value)
    if function_kind == "aggregate":
        create, add = function.create_accumulator, function.add
        return lambda acc, value: add(value, create() if acc is EMPTY else acc)

    def add_listed(acc: Any, value: Any) -> Any:
        if acc is EMPTY:
            return [value]
        acc.append(value)
        return acc
    return add_listed


class PreAggregatedWindow(Protocol):
    """What the pre-aggregation needs of its window operator."""

    assigner: WindowAssigner
    function_kind: str
    function: Any


class WindowPreAggregator:
    """The map-side half of a window's BATCH pre-aggregation (``WindowOperator.
    pre_aggregates_in_batch`` says when, and why it gives Flink's result): a subtask's records
    before the shuffle, combined per (key, window) with the user's reduce or aggregate function.
    Each partial goes on as ``(window, reduced value or accumulator)`` with the window's max
    timestamp; the window operator combines them (``process_partials``)."""

    def __init__(self, operator: PreAggregatedWindow) -> None:
        self.assigner = operator.assigner
        self.add = content_adder(operator.function_kind, operator.function)

    def combine(self, records: Iterator[Any], key_selector: Callable[[Any], Any],
                timestamped: bool) -> tuple[dict[tuple[Any, Any], Any], int]:
        """(key, window) -> the partial of this subtask's records, and how many came in.
        ``records`` are ``(timestamp, value)`` pairs when ``timestamped``, else values."""
        with _cyclic_gc_paused():
            return self._combine(records if timestamped else zip(itertools.repeat(None), records),
                                 key_selector)

    def _combine(self, pairs: Iterator[tuple[Any, Any]], key_selector: Callable[[Any], Any]
                 ) -> tuple[dict[tuple[Any, Any], Any], int]:
        assigner, add = self.assigner, self.add
        n = 0
        if type(assigner) is TumblingEventTimeWindows:
            # the hot case, inlined as in process_key_batch: one partial per (key, window start)
            size, offset = assigner.size, assigner.offset
            by_start: dict[tuple[Any, int], Any] = {}
            get_start = by_start.get
            for n, (t, value) in enumerate(pairs, 1):  # noqa: B007 (n is the count after the loop)
                if t is None:
                    raise RuntimeError(NO_TIMESTAMP_ERROR)
                k = (key_selector(value), t - (t - offset) % size)
                by_start[k] = add(get_start(k, EMPTY), value)
            return {(key, TimeWindow(start, start + size)): acc
                    for (key, start), acc in by_start.items()}, n
        combined: dict[tuple[Any, Any], Any] = {}
        get = combined.get
        assign = assigner.assign_windows
        for n, (t, value) in enumerate(pairs, 1):  # noqa: B007
            key = key_selector(value)
            for w in assign(value, MIN_WATERMARK if t is None else t, None):
                k = (key, w)
                combined[k] = add(get(k, EMPTY), value)
        return combined, n


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a subtask's records are combined: each
    reduce replaces a partial that has lived through younger collections, so the full
    collections that walk the whole dict come the more often the larger it grows (0.47 µs a
    record at 24,000 partials, 0.62 at 234,000; 0.44 and 0.48 without; docs/benchmarks.md 9.5).
    The dict is freed or kept as it is either way; a cycle made meanwhile is collected after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
