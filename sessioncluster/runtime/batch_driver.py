"""The BATCH driver (Flink's batch execution of a DataStream program).

A keyed operator's input comes one key at a time, each key's records sorted by timestamp (stable;
no timestamp sorts first, as Flink's Long.MIN_VALUE): grouped in memory, or sorted and spilled
to disk past a memory limit (Flink's SortingDataInput; ``sorting.KeyedInput``). Per key: the
current key is set, every record goes to ``process_element`` with the watermark at
Long.MIN_VALUE (so nothing is late), then the watermark is Long.MAX_VALUE and the key's
event-time timers fire in timestamp order, then its processing-time timers; timers registered
while they fire are ignored (Flink's BatchExecutionInternalTimeService); then the key's state
and timers are dropped. A non-keyed operator gets its records in the order they come.

Records in: ``(timestamp, value)``; keyed ``(key, timestamp, value)``; a two-input operator's have
the input index in front. Records out: ``(tag, timestamp, value)`` (``runtime.output.Record``).
"""

from __future__ import annotations

import itertools
import operator as _op
from typing import Any, Callable, Iterator

from ..api.functions import MAX_WATERMARK, MIN_WATERMARK, TimeDomain
from .operators.base import StreamOperator, TwoInputStreamOperator
from .operators.window import WindowOperator
from .output import Record
from .sorting import DEFAULT_MEMORY_MB, KeyedInput

#: records a non-keyed operator takes between handing on its output
CHUNK = 256
_pair = _op.itemgetter(1, 2)


def run(operator: StreamOperator, records: Iterator[Any], partials: bool = False,
        memory_mb: float = DEFAULT_MEMORY_MB) -> Iterator[Record]:
    """The operator's output records over ``records`` (it is open). With ``partials`` the
    operator is a window whose input was pre-aggregated before the shuffle: its records are
    partials (``WindowOperator.process_partials``). A keyed operator's input spills to disk
    past ``memory_mb`` of the worker's memory (``sorting.KeyedInput``)."""
    two = isinstance(operator, TwoInputStreamOperator)
    if partials:
        if not isinstance(operator, WindowOperator):
            raise TypeError(f"only a window takes pre-aggregated partials, not {operator!r}")
        return _run_keyed_one(operator, records, memory_mb, operator.process_partials)
    if operator.keyed:
        if two:
            return _run_keyed_two(operator, records, memory_mb)
        return _run_keyed_one(operator, records, memory_mb)
    return _run_elements(operator, records, two)


def _run_elements(operator: Any, records: Iterator[Any], two: bool) -> Iterator[Record]:
    out = operator.output
    records = iter(records)
    while True:
        # the output is handed on every CHUNK records: lazily, without a test per record
        chunk = list(itertools.islice(records, CHUNK))
        if not chunk:
            operator.finish()
            if out.records:
                yield from out.drain()
            return
        if two:
            calls = (operator.process_element1, operator.process_element2)
            for index, ts, value in chunk:
                calls[index](value, ts)
        else:
            operator.process_elements(chunk)
        if out.records:
            yield from out.drain()


def _run_keyed_one(operator: Any, records: Iterator[Any], memory_mb: float,
                   key_batch: Callable[[list[Any]], bool] | None = None) -> Iterator[Record]:
    out = operator.output
    backend, timers = operator.backend, operator.timers
    set_key, set_timer_key = backend.set_current_key, timers.set_current_key
    process = operator.process_elements
    if key_batch is None and isinstance(operator, WindowOperator):
        key_batch = operator.process_key_batch
    for key, recs in KeyedInput(0, 1, memory_mb).groups(records):
        set_key(key)
        set_timer_key(key)
        # (timestamp, value) pairs made as they are taken: short-lived, where a list of them
        # for the whole input would cost the garbage collector's passes
        pairs: Iterator[Any] = map(_pair, recs)
        if key_batch is not None:
            listed = list(pairs)  # a window's contents are the key's records anyway
            if key_batch(listed):
                yield from _finish_key(operator, key)
                continue
            pairs = iter(listed)
        while chunk := list(itertools.islice(pairs, CHUNK)):
            process(chunk)
            if out.records:
                yield from out.drain()
        yield from _finish_key(operator, key)
    set_key(None)
    set_timer_key(None)


def _run_keyed_two(operator: Any, records: Iterator[Any], memory_mb: float) -> Iterator[Record]:
    out = operator.output
    backend, timers = operator.backend, operator.timers
    calls = (operator.process_element1, operator.process_element2)
    for key, recs in KeyedInput(1, 2, memory_mb).groups(records):
        backend.set_current_key(key)
        timers.set_current_key(key)
        for i, (index, _, ts, value) in enumerate(recs, 1):
            calls[index](value, ts)
            if not i % CHUNK and out.records:
                yield from out.drain()
        yield from _finish_key(operator, key)
    backend.set_current_key(None)
    timers.set_current_key(None)


def _finish_key(operator: Any, key: Any) -> Iterator[Record]:
    """The end of a key's input: its timers fire, its output goes on, its state and timers go."""
    end_of_key(operator)
    out = operator.output
    if out.records:
        yield from out.drain()
    operator.backend.clear(key)
    operator.timers.clear(key)


def end_of_key(operator: Any) -> None:
    """The key's input ended: its event-time timers fire (watermark Long.MAX_VALUE), then its
    processing-time timers, with the timer service quiesced."""
    timers = operator.timers
    if not timers.has_timers():
        return
    timers.watermark = MAX_WATERMARK
    timers.quiesced = True
    try:
        timers.fire(TimeDomain.EVENT_TIME, MAX_WATERMARK, operator.on_event_time)
        timers.fire(TimeDomain.PROCESSING_TIME, MAX_WATERMARK, operator.on_processing_time)
    finally:
        timers.quiesced = False
        timers.watermark = MIN_WATERMARK
