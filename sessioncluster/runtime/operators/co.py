"""Two-input operators: ``ConnectedStreams.map / flat_map / process``."""

from __future__ import annotations

from typing import Any

from ..timers import InternalTimer
from .base import KeyedContext, OperatorContext, ProcessContext, TwoInputStreamOperator, method


class CoMapOperator(TwoInputStreamOperator):
    """``ConnectedStreams.map(CoMapFunction)``; keyed=True on keyed connected streams (keyed state)."""

    def __init__(self, function: Any, keyed: bool = False) -> None:
        self.function = function
        self.keyed = keyed
        self.user_functions = [function]
        self._calls = (method(function, "map1", "CoMapFunction"), method(function, "map2", "CoMapFunction"))

    def process_element1(self, value: Any, timestamp: int | None) -> None:
        self.output.records.append((None, timestamp, self._calls[0](value)))

    def process_element2(self, value: Any, timestamp: int | None) -> None:
        self.output.records.append((None, timestamp, self._calls[1](value)))


class CoFlatMapOperator(TwoInputStreamOperator):
    """``ConnectedStreams.flat_map(CoFlatMapFunction)``; keyed=True on keyed connected streams."""

    def __init__(self, function: Any, keyed: bool = False) -> None:
        self.function = function
        self.keyed = keyed
        self.user_functions = [function]
        self._calls = (method(function, "flat_map1", "CoFlatMapFunction"),
                       method(function, "flat_map2", "CoFlatMapFunction"))

    def _flat(self, out: Any, timestamp: int | None) -> None:
        append = self.output.records.append
        for item in out or ():
            append((None, timestamp, item))

    def process_element1(self, value: Any, timestamp: int | None) -> None:
        self._flat(self._calls[0](value), timestamp)

    def process_element2(self, value: Any, timestamp: int | None) -> None:
        self._flat(self._calls[1](value), timestamp)


class CoProcessOperator(TwoInputStreamOperator):
    """A CoProcessFunction on non-keyed connected streams (no timers, no keyed state)."""

    keyed = False

    def __init__(self, function: Any) -> None:
        self.function = function
        self.user_functions = [function]
        self._calls = (method(function, "process_element1", "CoProcessFunction"),
                       method(function, "process_element2", "CoProcessFunction"))

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        self._ctx: ProcessContext = ProcessContext()

    def _process(self, index: int, value: Any, timestamp: int | None) -> None:
        ctx = self._ctx
        ctx.current_timestamp = timestamp
        self.output.collect_all(self._calls[index](value, ctx), timestamp, ctx.side)

    def process_element1(self, value: Any, timestamp: int | None) -> None:
        self._process(0, value, timestamp)

    def process_element2(self, value: Any, timestamp: int | None) -> None:
        self._process(1, value, timestamp)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("_ctx", None)
        return state


class KeyedCoProcessOperator(CoProcessOperator):
    """A KeyedCoProcessFunction: state shared by both inputs, timers, ``on_timer``."""

    keyed = True

    def __init__(self, function: Any) -> None:
        self.function = function
        self.user_functions = [function]
        self._calls = (method(function, "process_element1", "KeyedCoProcessFunction"),
                       method(function, "process_element2", "KeyedCoProcessFunction"))

    def open(self, ctx: OperatorContext) -> None:
        TwoInputStreamOperator.open(self, ctx)
        self._ctx = self._keyed_ctx = KeyedContext(self.backend, self.timers)
        self._on_timer = getattr(self.function, "on_timer", None)

    def on_event_time(self, timer: InternalTimer) -> None:
        self._keyed_ctx.on_timer(self._on_timer, self.output, timer)

    def on_processing_time(self, timer: InternalTimer) -> None:
        self._keyed_ctx.on_timer(self._on_timer, self.output, timer)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("_on_timer", None)
        state.pop("_keyed_ctx", None)
        return state
