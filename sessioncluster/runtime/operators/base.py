"""The operator interface (Flink's StreamOperator) and what the operators share.

A driver opens an operator with an ``OperatorContext`` (the user's RuntimeContext, the ``Output``,
and for a keyed operator its ``KeyedStateBackend`` and ``InternalTimerService``), then calls
``process_element(value, timestamp)`` (two inputs: ``process_element1/2``) per record,
``process_watermark`` / ``on_event_time`` / ``on_processing_time`` for time, and ``close()``.
The driver (BATCH or STREAMING) decides the current key and when timers fire; the operators are
the same in both modes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ...api.functions import (
    Function,
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    RuntimeContext,
    TimeDomain,
    TimerService,
    check_output_tag,
)
from ..output import Output
from ..state_backend import KeyedStateBackend
from ..timers import InternalTimer, InternalTimerService, KeyedTimerService


@dataclass
class OperatorContext:
    """What an operator gets in ``open``."""

    runtime_context: RuntimeContext
    output: Output = field(default_factory=Output)
    state_backend: KeyedStateBackend = field(default_factory=KeyedStateBackend)
    timer_service: InternalTimerService = field(default_factory=InternalTimerService)
    #: True in BATCH execution (an operator may differ there as Flink's batch operators do)
    batch: bool = True


class StreamOperator:
    """A picklable operator holding the user's function(s)."""

    keyed: bool = False
    user_functions: list[Any]
    output: Output
    backend: KeyedStateBackend
    timers: InternalTimerService

    def open(self, ctx: OperatorContext) -> None:
        """Keep the output, state and timers; give the user's rich functions their RuntimeContext
        (with keyed state when keyed)."""
        self.output = ctx.output
        self.backend = ctx.state_backend
        self.timers = ctx.timer_service
        self.batch = ctx.batch
        runtime_context = (ctx.runtime_context.with_keyed_state(self.backend) if self.keyed
                           else ctx.runtime_context)
        for fn in self.user_functions:
            open_ = getattr(fn, "open", None)
            if callable(open_) and not isinstance(fn, type):
                open_(runtime_context)

    def process_watermark(self, watermark: int) -> None:
        """The watermark advanced: the current key's event-time timers up to it fire."""
        self.timers.watermark = watermark
        if self.keyed:
            self.timers.fire(TimeDomain.EVENT_TIME, watermark, self.on_event_time)

    def advance_processing_time(self, now: int) -> None:
        """Processing time advanced: the current key's processing-time timers up to it fire."""
        self.timers.processing_time = now
        if self.keyed:
            self.timers.fire(TimeDomain.PROCESSING_TIME, now, self.on_processing_time)

    def on_event_time(self, timer: InternalTimer) -> None:
        pass

    def on_processing_time(self, timer: InternalTimer) -> None:
        pass

    def finish(self) -> None:
        """The end of the input (Flink's ``finish``): what the operator holds back goes out."""

    def close(self) -> None:
        for fn in self.user_functions:
            close = getattr(fn, "close", None)
            if callable(close) and not isinstance(fn, type):
                close()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in ("output", "backend", "timers", "batch"):
            state.pop(name, None)
        return state


class OneInputStreamOperator(StreamOperator):
    def process_element(self, value: Any, timestamp: int | None) -> None:
        raise NotImplementedError

    def process_elements(self, records: Iterable[tuple[int | None, Any]]) -> None:
        """``process_element`` of each ``(timestamp, value)`` in order (one key's, when keyed):
        what the drivers call; an operator may override it with a faster loop that does the
        same."""
        process = self.process_element
        for ts, value in records:
            process(value, ts)


class TwoInputStreamOperator(StreamOperator):
    def process_element1(self, value: Any, timestamp: int | None) -> None:
        raise NotImplementedError

    def process_element2(self, value: Any, timestamp: int | None) -> None:
        raise NotImplementedError


class ProcessContext(ProcessFunction.Context):
    """The context of a process function: the current record's timestamp (``timestamp``), and
    the side outputs given to ``output`` until the operator collects them (``side``)."""

    def __init__(self) -> None:
        super().__init__()
        self.current_timestamp: int | None = None
        self.side: list[tuple[OutputTag, Any]] = []

    def timestamp(self) -> int | None:
        return self.current_timestamp

    def output(self, output_tag: OutputTag, value: Any) -> None:
        self.side.append((check_output_tag(output_tag), value))


class KeyedContext(KeyedProcessFunction.OnTimerContext, ProcessContext):
    """The one context object of a keyed process operator (for records and timers)."""

    def __init__(self, backend: KeyedStateBackend, timers: InternalTimerService) -> None:
        super().__init__()
        self._backend = backend
        self._timers = KeyedTimerService(timers)
        self._domain: TimeDomain | None = None

    def on_timer(self, on_timer: Callable[..., Any] | None, output: Output, timer: InternalTimer) -> None:
        """A process function's ``on_timer``: an event-time timer's output has the timer's
        timestamp, a processing-time one's none (as in Flink)."""
        if on_timer is None:
            return
        self.current_timestamp = timer.timestamp
        self._domain = timer.domain
        try:
            ts = timer.timestamp if timer.domain is TimeDomain.EVENT_TIME else None
            output.collect_all(on_timer(timer.timestamp, self), ts, self.side)
        finally:
            self._domain = None

    def get_current_key(self) -> Any:
        return self._backend.get_current_key()

    def timer_service(self) -> TimerService:
        return self._timers

    def time_domain(self) -> TimeDomain:
        if self._domain is None:
            raise RuntimeError("time_domain() is only available in on_timer")
        return self._domain


def method(function: Any, name: str, expected: str) -> Callable[..., Any]:
    """``function.name``, or a clear TypeError."""
    bound = getattr(function, name, None)
    if not callable(bound):
        raise TypeError(f"expected a {expected} with a {name}() method, got {function!r} "
                        f"({type(function).__name__})")
    return bound


def open_function(fn: Any, runtime_context: RuntimeContext, batch: bool = True) -> None:
    """Open one element of a chain: an operator with its own OperatorContext, a rich function
    with the RuntimeContext (plain callables have nothing to open)."""
    if isinstance(fn, StreamOperator):
        fn.open(OperatorContext(runtime_context, batch=batch))
    elif isinstance(fn, Function):
        fn.open(runtime_context)
