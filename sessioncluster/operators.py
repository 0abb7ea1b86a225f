"""The stream operators around process functions, as a Task runs them in BATCH mode.

An operator wraps the user's function and travels with it as user code. The Task opens it
with the subtask's RuntimeContext and calls :meth:`StreamOperator.process` on the chain's
records: plain values, or ``(key, value)`` pairs behind a HASH exchange (a keyed operator).
It yields ``(tag, value)``: ``tag`` is None for the main output, else the ``tag_id`` of the
side output (``ctx.output(tag, value)``).

Keyed operators follow Flink's BATCH execution: the input is grouped by key (Flink sorts it),
each key's records are processed together with that key's state, and when a key's input ends
its event-time timers fire in timestamp order (the watermark jumps to +inf), then its
processing-time timers; then the key's state is dropped. Processing time does not advance in
BATCH mode (``current_processing_time()`` is ``Long.MIN_VALUE``), and the watermark is
``Long.MIN_VALUE`` while records are processed, ``Long.MAX_VALUE`` while timers fire.
"""

from __future__ import annotations

import heapq
from typing import Any, Iterable, Iterator

from .functions import (
    Function,
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    RuntimeContext,
    TimeDomain,
    TimerService,
    as_callable,
)
from .state import KeyedStateStore

#: Java's Long.MIN_VALUE / MAX_VALUE: Flink's watermark before and after a key's input
MIN_TIME, MAX_TIME = -(2**63), 2**63 - 1

Emitted = tuple[str | None, Any]


class StreamOperator:
    """Runs one user function over the records of a subtask."""

    #: True when the input is (key, value) pairs after a HASH exchange
    keyed = False

    def __init__(self, function: Any) -> None:
        self.user_function = function

    def open(self, runtime_context: RuntimeContext) -> None:
        if isinstance(self.user_function, Function):
            self.user_function.open(runtime_context)

    def close(self) -> None:
        if isinstance(self.user_function, Function):
            self.user_function.close()

    def process(self, records: Iterator[Any]) -> Iterator[Emitted]:
        raise NotImplementedError


class _Context(KeyedProcessFunction.OnTimerContext):
    """The context handed to process_element / on_timer: side outputs go to ``out``."""

    def __init__(self, out: list[Emitted], timers: "_Timers | None" = None) -> None:
        self.out = out
        self.timers = timers
        self.key: Any = None
        self.domain = TimeDomain.EVENT_TIME
        self._timestamp: int | None = None

    def timestamp(self) -> int | None:
        return self._timestamp

    def get_current_key(self) -> Any:
        if self.timers is None:
            raise RuntimeError("get_current_key() needs a keyed stream (key_by)")
        return self.key

    def timer_service(self) -> TimerService:
        if self.timers is None:
            raise RuntimeError("Timers can only be used on a keyed stream, i.e. after key_by(); "
                               "use a KeyedProcessFunction")
        return self.timers

    def output(self, output_tag: OutputTag, value: Any) -> None:
        if not isinstance(output_tag, OutputTag):
            raise TypeError(f"ctx.output() takes an OutputTag, not {output_tag!r}")
        self.out.append((output_tag.tag_id, value))

    def time_domain(self) -> TimeDomain:
        return self.domain


class _Timers(TimerService):
    """The current key's timers: heaps of timestamps, deduplicated per (timestamp, domain)."""

    def __init__(self) -> None:
        self.event: list[int] = []
        self.processing: list[int] = []
        self._event_set: set[int] = set()
        self._processing_set: set[int] = set()
        self.watermark = MIN_TIME

    def current_processing_time(self) -> int:
        return MIN_TIME  # processing time does not advance in BATCH mode

    def current_watermark(self) -> int:
        return self.watermark

    def register_event_time_timer(self, timestamp: int) -> None:
        if timestamp not in self._event_set:
            self._event_set.add(timestamp)
            heapq.heappush(self.event, timestamp)

    def register_processing_time_timer(self, timestamp: int) -> None:
        if timestamp not in self._processing_set:
            self._processing_set.add(timestamp)
            heapq.heappush(self.processing, timestamp)

    def delete_event_time_timer(self, timestamp: int) -> None:
        if timestamp in self._event_set:
            self._event_set.discard(timestamp)
            self.event.remove(timestamp)
            heapq.heapify(self.event)

    def delete_processing_time_timer(self, timestamp: int) -> None:
        if timestamp in self._processing_set:
            self._processing_set.discard(timestamp)
            self.processing.remove(timestamp)
            heapq.heapify(self.processing)

    def pop(self, domain: TimeDomain) -> int | None:
        heap, seen = ((self.event, self._event_set) if domain is TimeDomain.EVENT_TIME
                      else (self.processing, self._processing_set))
        if not heap:
            return None
        timestamp = heapq.heappop(heap)
        seen.discard(timestamp)
        return timestamp


def _results(out: Iterable[Any] | None, side: list[Emitted]) -> Iterator[Emitted]:
    """A function's yielded outputs as main output, then what it sent to side outputs."""
    if out is not None:
        for value in out:
            yield None, value
    if side:
        yield from side
        side.clear()


class ProcessOperator(StreamOperator):
    """A ProcessFunction on a stream that is not keyed: side outputs, no state, no timers."""

    def __init__(self, function: Any) -> None:
        super().__init__(function)
        self._call = (function.process_element if isinstance(function, ProcessFunction)
                      else as_callable(function))

    def process(self, records: Iterator[Any]) -> Iterator[Emitted]:
        side: list[Emitted] = []
        ctx = _Context(side)
        call = self._call
        for value in records:
            yield from _results(call(value, ctx), side)


class KeyedProcessOperator(StreamOperator):
    """A KeyedProcessFunction (or a rich map/flat_map/filter after key_by): keyed state and
    timers, one key at a time."""

    keyed = True

    def __init__(self, function: Any) -> None:
        super().__init__(function)
        self.store = KeyedStateStore()

    def open(self, runtime_context: RuntimeContext) -> None:
        runtime_context._state_store = self.store
        super().open(runtime_context)

    def process(self, records: Iterator[Any]) -> Iterator[Emitted]:
        groups: dict[Any, list[Any]] = {}
        for key, value in records:
            group = groups.get(key)
            if group is None:
                groups[key] = [value]
            else:
                group.append(value)
        fn = self.user_function
        call = fn.process_element if isinstance(fn, ProcessFunction) else as_callable(fn)
        on_timer = getattr(fn, "on_timer", None)
        side: list[Emitted] = []
        for key, values in groups.items():
            self.store.set_current_key(key)
            timers = _Timers()
            ctx = _Context(side, timers)
            ctx.key = key
            for value in values:
                yield from _results(call(value, ctx), side)
            # the key's input ended: the watermark passes every event-time timer, in order,
            # then the processing-time timers fire (Flink's BatchExecutionInternalTimeService)
            timers.watermark = MAX_TIME
            for domain in (TimeDomain.EVENT_TIME, TimeDomain.PROCESSING_TIME):
                ctx.domain = domain
                while (timestamp := timers.pop(domain)) is not None:
                    ctx._timestamp = timestamp if domain is TimeDomain.EVENT_TIME else None
                    if on_timer is not None:
                        yield from _results(on_timer(timestamp, ctx), side)
            groups[key] = []  # the key's records are done: free them as we go
        self.store.set_current_key(None)


class KeyedFunctionOperator(KeyedProcessOperator):
    """``map``, ``flat_map`` or ``filter`` on a KeyedStream: its rich function's state is
    scoped to the record's key."""

    def __init__(self, kind: str, function: Any) -> None:
        super().__init__(function)
        if kind not in ("map", "flat_map", "filter"):
            raise ValueError(f"no keyed {kind!r}")
        self.kind = kind

    def process(self, records: Iterator[Any]) -> Iterator[Emitted]:
        call = as_callable(self.user_function)
        kind = self.kind
        groups: dict[Any, list[Any]] = {}
        for key, value in records:
            groups.setdefault(key, []).append(value)
        for key, values in groups.items():
            self.store.set_current_key(key)
            for value in values:
                if kind == "map":
                    yield None, call(value)
                elif kind == "filter":
                    if call(value):
                        yield None, value
                else:
                    for out in call(value):
                        yield None, out
        self.store.set_current_key(None)
