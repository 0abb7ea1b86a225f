"""The BATCH driver (Flink's batch execution of a DataStream program).

A keyed operator's input is grouped by key and each key's records sorted by timestamp (stable;
no timestamp sorts first, as Flink's Long.MIN_VALUE; Flink's SortingDataInput). Per key: the
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
from typing import Any, Callable, Iterable, Iterator

from ..api.functions import MAX_WATERMARK, MIN_WATERMARK, TimeDomain
from .operators.base import StreamOperator, TwoInputStreamOperator
from .operators.window import WindowOperator
from .output import Record

#: records a non-keyed operator takes between handing on its output
CHUNK = 256
_pair = _op.itemgetter(1, 2)


def group_by_key(records: Iterable[Any], key_at: int, ts_at: int) -> dict[Any, list[Any]]:
    """The records of each key, each key's list sorted by timestamp (stable, None first)."""
    groups: dict[Any, list[Any]] = {}
    get = groups.get
    timed = untimed = False
    for rec in records:
        lst = get(rec[key_at])
        if lst is None:
            groups[rec[key_at]] = [rec]
        else:
            lst.append(rec)
        if rec[ts_at] is None:
            untimed = True
        else:
            timed = True
    if timed:
        sort_key: Callable[[Any], Any]
        if untimed:
            def sort_key(r: Any) -> Any:
                t = r[ts_at]
                return MIN_WATERMARK if t is None else t
        else:
            sort_key = _op.itemgetter(ts_at)
        for lst in groups.values():
            if len(lst) > 1:
                lst.sort(key=sort_key)
    return groups


def run(operator: StreamOperator, records: Iterator[Any], partials: bool = False) -> Iterator[Record]:
    """The operator's output records over ``records`` (it is open). With ``partials`` the
    operator is a window whose input was pre-aggregated before the shuffle: its records are
    partials (``WindowOperator.process_partials``)."""
    two = isinstance(operator, TwoInputStreamOperator)
    if partials:
        if not isinstance(operator, WindowOperator):
            raise TypeError(f"only a window takes pre-aggregated partials, not {operator!r}")
        return _run_keyed_one(operator, records, operator.process_partials)
    if operator.keyed:
        return _run_keyed(operator, records, two)
    return _run_elements(operator, records, two)


def _run_elements(operator: Any, records: Iterator[Any], two: bool) -> Iterator[Record]:
    out = operator.output
    records = iter(records)
    while True:
        # the output is handed on every CHUNK records: lazily, without a test per record
        chunk = list(itertools.islice(records, CHUNK))
        if not chunk:
            return
        if two:
            calls = (operator.process_element1, operator.process_element2)
            for index, ts, value in chunk:
                calls[index](value, ts)
        else:
            operator.process_elements(chunk)
        if out.records:
            yield from out.drain()


def _run_keyed(operator: Any, records: Iterator[Any], two: bool) -> Iterator[Record]:
    if two:
        return _run_keyed_two(operator, records)
    return _run_keyed_one(operator, records)


def _run_keyed_one(operator: Any, records: Iterator[Any],
                   key_batch: Callable[[list[Any]], bool] | None = None) -> Iterator[Record]:
    out = operator.output
    backend, timers = operator.backend, operator.timers
    set_key, set_timer_key = backend.set_current_key, timers.set_current_key
    process = operator.process_elements
    if key_batch is None and isinstance(operator, WindowOperator):
        key_batch = operator.process_key_batch
    for key, recs in group_by_key(records, 0, 1).items():
        set_key(key)
        set_timer_key(key)
        # (timestamp, value) pairs made as they are taken: short-lived, where a list of them
        # for the whole input would cost the garbage collector's passes
        if key_batch is None or not key_batch(list(map(_pair, recs))):
            if len(recs) <= CHUNK:
                process(map(_pair, recs))
            else:
                for i in range(0, len(recs), CHUNK):
                    process(map(_pair, recs[i:i + CHUNK]))
                    if out.records:
                        yield from out.drain()
        yield from _finish_key(operator, key)
    set_key(None)
    set_timer_key(None)


def _run_keyed_two(operator: Any, records: Iterator[Any]) -> Iterator[Record]:
    out = operator.output
    backend, timers = operator.backend, operator.timers
    calls = (operator.process_element1, operator.process_element2)
    for key, recs in group_by_key(records, 1, 2).items():
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
