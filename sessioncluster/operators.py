"""BATCH-mode stream operators: pure Python generators over the records of one subtask.

Records in: non-keyed ``(timestamp, value)``; keyed ``(key, timestamp, value)``; two-input adds the
input index in front. Records out: ``(tag, timestamp, value)`` with ``tag`` None for the main output
or an ``OutputTag.tag_id``. A timestamp is milliseconds or None (no timestamp).

Keyed operators follow Flink's BATCH execution (``SortingDataInput`` +
``BatchExecutionInternalTimeService``): the input is grouped by key and each key's records are
sorted by timestamp (stable; no timestamp sorts first, as Flink's Long.MIN_VALUE); while a key's
records are processed the watermark is Long.MIN_VALUE; at the end of the key the watermark is
Long.MAX_VALUE and its event-time timers fire in timestamp order, then its processing-time timers;
timers registered from those callbacks are ignored (Flink quiesces the timer service); then the
key's state is dropped.
"""

from __future__ import annotations

import logging
import operator as _op
from typing import Any, Callable, Iterable, Iterator

from .functions import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    RuntimeContext,
    TimeDomain,
    TimerService,
    as_callable,
)
from .state import KeyedStateBackend
from .watermark import TimestampAssigner, WatermarkStrategy

log = logging.getLogger(__name__)

Output = tuple[str | None, int | None, Any]


# ---------------------------------------------------------------------------------------------
# shared machinery


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
        if untimed:
            def sort_key(r: Any) -> int:
                t = r[ts_at]
                return MIN_WATERMARK if t is None else t  # type: ignore[no-any-return]
        else:
            sort_key = _op.itemgetter(ts_at)
        for lst in groups.values():
            if len(lst) > 1:
                lst.sort(key=sort_key)
    return groups


def _side_or_main(item: Any, ts: int | None) -> Output:
    if type(item) is tuple and len(item) == 2 and isinstance(item[0], OutputTag):
        return (item[0].tag_id, ts, item[1])
    return (None, ts, item)


def _outputs(out: Iterable[Any] | None, ts: int | None,
             side: list[tuple[OutputTag, Any]]) -> Iterator[Output]:
    """A process function's outputs: yielded values (``(OutputTag, v)`` pairs go to side outputs)
    and values given to ``ctx.output``, in the order they were produced."""
    if out is not None:
        for item in out:
            if side:
                yield from _flush(side, ts)
            if type(item) is tuple and len(item) == 2 and isinstance(item[0], OutputTag):
                yield (item[0].tag_id, ts, item[1])
            else:
                yield (None, ts, item)
    if side:
        yield from _flush(side, ts)


def _flush(side: list[tuple[OutputTag, Any]], ts: int | None) -> Iterator[Output]:
    items = side[:]
    side.clear()
    for tag, value in items:
        yield (tag.tag_id, ts, value)


def _open_functions(functions: list[Any], ctx: RuntimeContext) -> None:
    for fn in functions:
        open_ = getattr(fn, "open", None)
        if callable(open_) and not isinstance(fn, type):
            open_(ctx)


def _close_functions(functions: list[Any]) -> None:
    for fn in functions:
        close = getattr(fn, "close", None)
        if callable(close) and not isinstance(fn, type):
            close()


def _method(function: Any, name: str, expected: str) -> Callable[..., Any]:
    method = getattr(function, name, None)
    if not callable(method):
        raise TypeError(f"expected a {expected} with a {name}() method, got {function!r} "
                        f"({type(function).__name__})")
    return method  # type: ignore[no-any-return]


class BatchTimerService(TimerService):
    """The timers of the current key (Flink's BatchExecutionInternalTimeService): deduplicated per
    (timestamp, domain); they fire when the key's input ends, event time first, in timestamp order."""

    def __init__(self) -> None:
        self.event: set[int] = set()
        self.processing: set[int] = set()
        self.watermark = MIN_WATERMARK

    def current_watermark(self) -> int:
        return self.watermark

    def register_event_time_timer(self, timestamp: int) -> None:
        if self.watermark == MAX_WATERMARK:
            log.warning("Timer service is quiesced. Event time timer for timestamp '%s' will be ignored.",
                        timestamp)
            return
        self.event.add(int(timestamp))

    def register_processing_time_timer(self, timestamp: int) -> None:
        if self.watermark == MAX_WATERMARK:
            log.warning("Timer service is quiesced. Processing time timer for timestamp '%s' will be "
                        "ignored.", timestamp)
            return
        self.processing.add(int(timestamp))

    def delete_event_time_timer(self, timestamp: int) -> None:
        self.event.discard(timestamp)

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self.processing.discard(timestamp)

    def end_of_key(self) -> Iterator[tuple[int, TimeDomain]]:
        """The key's due timers in firing order; each is removed as it fires, so a timer deleted by
        an earlier callback does not fire."""
        if not self.event and not self.processing:
            return
        self.watermark = MAX_WATERMARK
        try:
            for timers, domain in ((self.event, TimeDomain.EVENT_TIME),
                                   (self.processing, TimeDomain.PROCESSING_TIME)):
                for ts in sorted(timers):
                    if ts in timers:
                        timers.discard(ts)
                        yield ts, domain
        finally:
            self.event.clear()
            self.processing.clear()
            self.watermark = MIN_WATERMARK


class _KeyedContext(KeyedProcessFunction.OnTimerContext):
    """The one context object of a keyed process operator (for records and timers)."""

    def __init__(self, timers: BatchTimerService) -> None:
        super().__init__()
        self._timers = timers
        self._domain: TimeDomain | None = None

    def timer_service(self) -> TimerService:
        return self._timers

    def time_domain(self) -> TimeDomain:
        if self._domain is None:
            raise RuntimeError("time_domain() is only available in on_timer")
        return self._domain


class StreamOperator:
    """A picklable operator holding the user's function(s); ``open`` before ``process``."""

    keyed: bool = False
    user_functions: list[Any]

    def open(self, ctx: RuntimeContext) -> None:
        """Give the user's rich functions their RuntimeContext (with keyed state when keyed)."""
        self._backend = KeyedStateBackend() if self.keyed else None
        _open_functions(self.user_functions, ctx.with_keyed_state(self._backend) if self._backend else ctx)

    def close(self) -> None:
        _close_functions(self.user_functions)

    def _state_backend(self) -> KeyedStateBackend:
        backend = getattr(self, "_backend", None)
        if backend is None:
            backend = self._backend = KeyedStateBackend()
        return backend

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_backend", None)
        return state


class OneInputOperator(StreamOperator):
    def process(self, records: Iterator[Any]) -> Iterator[Output]:
        raise NotImplementedError


class TwoInputOperator(StreamOperator):
    def process(self, records: Iterator[Any]) -> Iterator[Output]:
        raise NotImplementedError


# ---------------------------------------------------------------------------------------------
# one input


class ProcessOperator(OneInputOperator):
    """A ProcessFunction on a non-keyed stream: ``ctx.timestamp()``, side outputs; no timers."""

    keyed = False

    def __init__(self, function: Any) -> None:
        self.function = function
        self.user_functions = [function]
        self._process_element = _method(function, "process_element", "ProcessFunction")

    def process(self, records: Iterator[Any]) -> Iterator[Output]:
        ctx = ProcessFunction.Context()
        side = ctx._side
        pe = self._process_element
        for ts, value in records:
            ctx._timestamp = ts
            yield from _outputs(pe(value, ctx), ts, side)


class KeyedProcessOperator(OneInputOperator):
    """A KeyedProcessFunction: keyed state, event- and processing-time timers, side outputs."""

    keyed = True

    def __init__(self, function: Any) -> None:
        self.function = function
        self.user_functions = [function]
        self._process_element = _method(function, "process_element", "KeyedProcessFunction")

    def process(self, records: Iterator[Any]) -> Iterator[Output]:
        backend = self._state_backend()
        timers = BatchTimerService()
        ctx = _KeyedContext(timers)
        side = ctx._side
        pe = self._process_element
        on_timer = getattr(self.function, "on_timer", None)
        for key, recs in group_by_key(records, 0, 1).items():
            backend.current_key = key
            ctx._key = key
            for _, ts, value in recs:
                ctx._timestamp = ts
                yield from _outputs(pe(value, ctx), ts, side)
            yield from _fire_timers(timers, ctx, on_timer)
            backend.drop_key(key)
        ctx._key = backend.current_key = None


def _fire_timers(timers: BatchTimerService, ctx: _KeyedContext,
                 on_timer: Callable[..., Any] | None) -> Iterator[Output]:
    for ts, domain in timers.end_of_key():
        if on_timer is None:
            continue
        ctx._timestamp = ts
        ctx._domain = domain
        # Flink: an event-time timer's output has the timer's timestamp, a processing-time one none
        yield from _outputs(on_timer(ts, ctx), ts if domain is TimeDomain.EVENT_TIME else None, ctx._side)
    ctx._domain = None


class KeyedFunctionOperator(OneInputOperator):
    """map / flat_map / filter on a KeyedStream; the RuntimeContext gives keyed state."""

    keyed = True
    KINDS = ("map", "flat_map", "filter")

    def __init__(self, kind: str, function: Any) -> None:
        if kind not in self.KINDS:
            raise ValueError(f"kind must be one of {self.KINDS}, got {kind!r}")
        self.kind = kind
        self.function = function
        self.user_functions = [function]
        self._call = as_callable(function)

    def process(self, records: Iterator[Any]) -> Iterator[Output]:
        backend = self._state_backend()
        call = self._call
        kind = self.kind
        for key, recs in group_by_key(records, 0, 1).items():
            backend.current_key = key
            if kind == "map":
                for _, ts, value in recs:
                    yield (None, ts, call(value))
            elif kind == "filter":
                for _, ts, value in recs:
                    if call(value):
                        yield (None, ts, value)
            else:
                for _, ts, value in recs:
                    out = call(value)
                    if out is not None:
                        for item in out:
                            yield (None, ts, item)
            backend.drop_key(key)
        backend.current_key = None


class TimestampsAndWatermarksOperator(OneInputOperator):
    """``assign_timestamps_and_watermarks``: each record's timestamp becomes
    ``extract_timestamp(value, record_timestamp)`` (Long.MIN_VALUE when it had none)."""

    keyed = False

    def __init__(self, watermark_strategy: WatermarkStrategy) -> None:
        if not isinstance(watermark_strategy, WatermarkStrategy):
            raise TypeError(f"expected a WatermarkStrategy, got {watermark_strategy!r}")
        self.watermark_strategy = watermark_strategy
        assigner = watermark_strategy.timestamp_assigner
        self.user_functions = [assigner] if assigner is not None else []

    def process(self, records: Iterator[Any]) -> Iterator[Output]:
        assigner = self.watermark_strategy.timestamp_assigner
        if assigner is None:
            for ts, value in records:  # the records keep their timestamps (RecordTimestampAssigner)
                yield (None, ts, value)
            return
        extract = (assigner.extract_timestamp if isinstance(assigner, TimestampAssigner)
                   else _method(assigner, "extract_timestamp", "TimestampAssigner")
                   if hasattr(assigner, "extract_timestamp") else assigner)
        for ts, value in records:
            new = extract(value, MIN_WATERMARK if ts is None else ts)
            if type(new) is not int:
                if isinstance(new, (int, float)) and not isinstance(new, bool):
                    new = int(new)
                else:
                    raise TypeError(f"extract_timestamp must return milliseconds (an int), got {new!r} "
                                    f"for {value!r}")
            yield (None, new, value)


# ---------------------------------------------------------------------------------------------
# two inputs


class CoMapOperator(TwoInputOperator):
    """``ConnectedStreams.map(CoMapFunction)``; keyed=True on keyed connected streams (keyed state)."""

    def __init__(self, function: Any, keyed: bool = False) -> None:
        self.function = function
        self.keyed = keyed
        self.user_functions = [function]
        self._calls = (_method(function, "map1", "CoMapFunction"), _method(function, "map2", "CoMapFunction"))

    def process(self, records: Iterator[Any]) -> Iterator[Output]:
        calls = self._calls
        if not self.keyed:
            for idx, ts, value in records:
                yield (None, ts, calls[idx](value))
            return
        backend = self._state_backend()
        for key, recs in group_by_key(records, 1, 2).items():
            backend.current_key = key
            for idx, _, ts, value in recs:
                yield (None, ts, calls[idx](value))
            backend.drop_key(key)
        backend.current_key = None


class CoFlatMapOperator(TwoInputOperator):
    """``ConnectedStreams.flat_map(CoFlatMapFunction)``; keyed=True on keyed connected streams."""

    def __init__(self, function: Any, keyed: bool = False) -> None:
        self.function = function
        self.keyed = keyed
        self.user_functions = [function]
        self._calls = (_method(function, "flat_map1", "CoFlatMapFunction"),
                       _method(function, "flat_map2", "CoFlatMapFunction"))

    def process(self, records: Iterator[Any]) -> Iterator[Output]:
        calls = self._calls
        if not self.keyed:
            for idx, ts, value in records:
                out = calls[idx](value)
                if out is not None:
                    for item in out:
                        yield (None, ts, item)
            return
        backend = self._state_backend()
        for key, recs in group_by_key(records, 1, 2).items():
            backend.current_key = key
            for idx, _, ts, value in recs:
                out = calls[idx](value)
                if out is not None:
                    for item in out:
                        yield (None, ts, item)
            backend.drop_key(key)
        backend.current_key = None


class CoProcessOperator(TwoInputOperator):
    """A CoProcessFunction on non-keyed connected streams (no timers, no keyed state)."""

    keyed = False

    def __init__(self, function: Any) -> None:
        self.function = function
        self.user_functions = [function]
        self._calls = (_method(function, "process_element1", "CoProcessFunction"),
                       _method(function, "process_element2", "CoProcessFunction"))

    def process(self, records: Iterator[Any]) -> Iterator[Output]:
        ctx = ProcessFunction.Context()
        side = ctx._side
        calls = self._calls
        for idx, ts, value in records:
            ctx._timestamp = ts
            yield from _outputs(calls[idx](value, ctx), ts, side)


class KeyedCoProcessOperator(TwoInputOperator):
    """A KeyedCoProcessFunction: state shared by both inputs, timers, ``on_timer``. Within a key the
    two inputs are merged by timestamp (Flink's MultiInputSortingDataInput)."""

    keyed = True

    def __init__(self, function: Any) -> None:
        self.function = function
        self.user_functions = [function]
        self._calls = (_method(function, "process_element1", "KeyedCoProcessFunction"),
                       _method(function, "process_element2", "KeyedCoProcessFunction"))

    def process(self, records: Iterator[Any]) -> Iterator[Output]:
        backend = self._state_backend()
        timers = BatchTimerService()
        ctx = _KeyedContext(timers)
        side = ctx._side
        calls = self._calls
        on_timer = getattr(self.function, "on_timer", None)
        for key, recs in group_by_key(records, 1, 2).items():
            backend.current_key = key
            ctx._key = key
            for idx, _, ts, value in recs:
                ctx._timestamp = ts
                yield from _outputs(calls[idx](value, ctx), ts, side)
            yield from _fire_timers(timers, ctx, on_timer)
            backend.drop_key(key)
        ctx._key = backend.current_key = None
