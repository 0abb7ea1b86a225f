"""One-input operators: process functions, a keyed stream's map/filter/flat_map, running reduce."""

from __future__ import annotations

from typing import Any, Iterable

from ...api.functions import MAX_WATERMARK, TimeDomain, as_callable
from ...api.state import ValueStateDescriptor
from ..timers import InternalTimer
from .base import KeyedContext, OneInputStreamOperator, OperatorContext, ProcessContext, method


class _ProcessFunctionOperator(OneInputStreamOperator):
    """A process function's per-element call (its timestamp and side outputs), shared by the
    non-keyed and the keyed operator, which differ in their context."""

    _ctx: ProcessContext
    _expected = "ProcessFunction"

    def __init__(self, function: Any) -> None:
        self.function = function
        self.user_functions = [function]
        self._process_element = method(function, "process_element", self._expected)

    def process_element(self, value: Any, timestamp: int | None) -> None:
        ctx = self._ctx
        ctx.current_timestamp = timestamp
        self.output.collect_all(self._process_element(value, ctx), timestamp, ctx.side)

    def process_elements(self, records: Iterable[tuple[int | None, Any]]) -> None:
        ctx, process, collect = self._ctx, self._process_element, self.output.collect_all
        side = ctx.side
        for ts, value in records:
            ctx.current_timestamp = ts
            collect(process(value, ctx), ts, side)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("_ctx", None)
        state.pop("_on_timer", None)
        return state


class ProcessOperator(_ProcessFunctionOperator):
    """A ProcessFunction on a non-keyed stream: ``ctx.timestamp()``, side outputs; no timers."""

    keyed = False

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        self._ctx = ProcessContext()


class KeyedProcessOperator(_ProcessFunctionOperator):
    """A KeyedProcessFunction: keyed state, event- and processing-time timers, side outputs."""

    keyed = True
    _expected = "KeyedProcessFunction"
    _ctx: KeyedContext

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        self._ctx = KeyedContext(self.backend, self.timers)
        self._on_timer = getattr(self.function, "on_timer", None)

    def on_event_time(self, timer: InternalTimer) -> None:
        self._ctx.on_timer(self._on_timer, self.output, timer)

    def on_processing_time(self, timer: InternalTimer) -> None:
        self._ctx.on_timer(self._on_timer, self.output, timer)


class KeyedFunctionOperator(OneInputStreamOperator):
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

    def process_element(self, value: Any, timestamp: int | None) -> None:
        kind = self.kind
        if kind == "map":
            self.output.records.append((None, timestamp, self._call(value)))
        elif kind == "filter":
            if self._call(value):
                self.output.records.append((None, timestamp, value))
        else:
            append = self.output.records.append
            for item in self._call(value) or ():
                append((None, timestamp, item))

    def process_elements(self, records: Iterable[tuple[int | None, Any]]) -> None:
        call, kind, out = self._call, self.kind, self.output.records
        if kind == "map":
            out += [(None, ts, call(value)) for ts, value in records]
        elif kind == "filter":
            out += [(None, ts, value) for ts, value in records if call(value)]
        else:
            append = out.append
            for ts, value in records:
                for item in call(value) or ():
                    append((None, ts, item))


_REDUCED = ValueStateDescriptor("reduced")


class ReduceOperator(OneInputStreamOperator):
    """A running reduce of a KeyedStream (Flink's StreamGroupedReduceOperator): each record is
    folded into the key's value. STREAMING emits every update; BATCH (Flink's
    BatchGroupedReduceOperator) emits the key's final value when its input ends, by an event-time
    timer at the end of time, with the latest input's timestamp."""

    keyed = True

    def __init__(self, function: Any) -> None:
        self.function = function
        self.user_functions = [function]
        self._reduce = as_callable(function)

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        self._state = self.backend.get_state(_REDUCED)

    def process_element(self, value: Any, timestamp: int | None) -> None:
        state = self._state
        held = state.value()
        if not self.batch:
            acc = value if held is None else self._reduce(held, value)
            state.update(acc)
            self.output.records.append((None, timestamp, acc))
            return
        if held is None:
            acc, ts = value, timestamp
            self.timers.register(TimeDomain.EVENT_TIME, MAX_WATERMARK)
        else:
            acc = self._reduce(held[0], value)
            ts = timestamp if held[1] is None or (timestamp is not None and timestamp > held[1]) else held[1]
        state.update((acc, ts))

    def process_elements(self, records: Iterable[tuple[int | None, Any]]) -> None:
        """The key's value read and written once for all of ``records``."""
        state, reduce = self._state, self._reduce
        if self.batch:
            it = iter(records)
            held = state.value()
            if held is None:
                first = next(it, None)
                if first is None:
                    return
                ts, value = first
                held = (value, ts)
                self.timers.register(TimeDomain.EVENT_TIME, MAX_WATERMARK)
            value, latest = held
            for ts, v in it:
                value = reduce(value, v)
                if latest is None or (ts is not None and ts > latest):
                    latest = ts
            state.update((value, latest))
            return
        acc = state.value()
        append = self.output.records.append
        for ts, value in records:
            acc = value if acc is None else reduce(acc, value)
            append((None, ts, acc))
        state.update(acc)

    def on_event_time(self, timer: InternalTimer) -> None:
        held = self._state.value()  # BATCH: (the key's value, its latest timestamp)
        if held is not None:
            self.output.records.append((None, held[1], held[0]))
            self._state.clear()

    @staticmethod
    def reduce_all(call: Any, pairs: Any, timestamped: bool) -> Any:
        """BATCH's shortcut: each key's final value, from all its ``(key, record)`` pairs."""
        return _reduce_all(call, pairs, timestamped)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("_state", None)
        return state


def _reduce_all(call: Any, pairs: Any, timestamped: bool) -> Any:
    """BATCH's shortcut of a keyed REDUCE: the final value of each key from ``(key, record)``
    pairs in one dict (the records come combined per sending subtask already); with timestamps
    the latest one stays."""
    if timestamped:
        acc: dict[Any, tuple[Any, Any]] = {}
        for key, (t, v) in pairs:
            if key in acc:
                t0, v0 = acc[key]
                acc[key] = (t if t0 is None or (t is not None and t > t0) else t0, call(v0, v))
            else:
                acc[key] = (t, v)
        return iter(acc.values())
    plain: dict[Any, Any] = {}
    for key, rec in pairs:
        if key in plain:
            plain[key] = call(plain[key], rec)
        else:
            plain[key] = rec
    return iter(plain.values())
