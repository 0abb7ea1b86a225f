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

import bisect
import logging
import operator as _op
import time
from typing import Any, Callable, Iterable, Iterator

from .common.time import to_millis
from .functions import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    AggregateFunction,
    AllWindowFunction,
    KeyedProcessFunction,
    OutputTag,
    ProcessAllWindowFunction,
    ProcessFunction,
    ProcessWindowFunction,
    RuntimeContext,
    TimeDomain,
    TimerService,
    WindowFunction,
    _WindowContext,
    as_callable,
    check_output_tag,
)
from .state import (
    AggregatingState,
    AggregatingStateDescriptor,
    KeyedStateBackend,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingState,
    ReducingStateDescriptor,
)
from .watermark import TimestampAssigner, WatermarkStrategy
from .window import (
    NO_TIMESTAMP_ERROR,
    CountSlidingWindowAssigner,
    CountTumblingWindowAssigner,
    EventTimeTrigger,
    Evictor,
    GlobalWindow,
    MergingWindowAssigner,
    ProcessingTimeTrigger,
    TimeWindow,
    Trigger,
    TumblingEventTimeWindows,
    WindowAssigner,
)

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
    return method


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
    #: the user's function for input 0 and for input 1
    _calls: tuple[Callable[..., Any], Callable[..., Any]]

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


# ---------------------------------------------------------------------------------------------
# windows

_EVENT, _PROCESSING = 0, 1
FUNCTION_KINDS = ("reduce", "aggregate", "apply", "process")


def _get_any_state(backend: KeyedStateBackend, descriptor: Any) -> Any:
    if isinstance(descriptor, ReducingStateDescriptor):
        return backend.get_reducing_state(descriptor)
    if isinstance(descriptor, AggregatingStateDescriptor):
        return backend.get_aggregating_state(descriptor)
    if isinstance(descriptor, ListStateDescriptor):
        return backend.get_list_state(descriptor)
    if isinstance(descriptor, MapStateDescriptor):
        return backend.get_map_state(descriptor)
    return backend.get_state(descriptor)


class _TriggerContext:
    """What a Trigger sees: the current key and window, the watermark, timers, window-scoped state."""

    def __init__(self, state: KeyedStateBackend) -> None:
        self.key: Any = None
        self.window: Any = None
        self.watermark = MIN_WATERMARK
        self.timers: dict[tuple[int, int, Any], int] = {}
        self.merged_windows: list[Any] = []
        self._state = state

    def get_current_watermark(self) -> int:
        return self.watermark

    def get_current_processing_time(self) -> int:
        return int(time.time() * 1000)

    def _register(self, domain: int, timestamp: int) -> None:
        if self.watermark == MAX_WATERMARK:  # quiesced at the end of the key, as in Flink
            log.warning("Timer service is quiesced. Timer for timestamp '%s' will be ignored.", timestamp)
            return
        self.timers.setdefault((domain, timestamp, self.window), len(self.timers))

    def register_event_time_timer(self, timestamp: int) -> None:
        self._register(_EVENT, timestamp)

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._register(_PROCESSING, timestamp)

    def delete_event_time_timer(self, timestamp: int) -> None:
        self.timers.pop((_EVENT, timestamp, self.window), None)

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self.timers.pop((_PROCESSING, timestamp, self.window), None)

    def get_partitioned_state(self, descriptor: Any) -> Any:
        self._state.current_key = (self.key, self.window)
        return _get_any_state(self._state, descriptor)

    def merge_partitioned_state(self, descriptor: Any) -> None:
        """Fold the merged windows' reducing/aggregating state into the current window's."""
        target = (self.key, self.window)
        kind = ReducingState if isinstance(descriptor, ReducingStateDescriptor) else AggregatingState
        table = self._state._table(descriptor, kind)
        for w in self.merged_windows:
            src = table.pop((self.key, w), None)
            if src is None:
                continue
            if target not in table:
                table[target] = src
            elif isinstance(descriptor, ReducingStateDescriptor):
                table[target] = descriptor._reduce(table[target], src)
            else:
                table[target] = descriptor.agg_function.merge(table[target], src)


class _WindowFunctionContext(_WindowContext):
    """ProcessWindowFunction.Context: the fired window, the watermark, window and global state."""

    def __init__(self, trigger_ctx: _TriggerContext, window_state: RuntimeContext,
                 global_state: RuntimeContext) -> None:
        self._tctx = trigger_ctx
        self._window: Any = None
        self._window_state = window_state
        self._global_state = global_state
        self._side: list[tuple[OutputTag, Any]] = []

    def window(self) -> Any:
        return self._window

    def current_watermark(self) -> int:
        return self._tctx.watermark

    def window_state(self) -> RuntimeContext:
        return self._window_state

    def global_state(self) -> RuntimeContext:
        return self._global_state

    def output(self, output_tag: OutputTag, value: Any) -> None:
        self._side.append((check_output_tag(output_tag), value))


def _window_function(fn: Any, all_windows: bool, role: str) -> tuple[str, Callable[..., Any]]:
    """('apply' | 'process', bound method) of a window function, or a clear TypeError."""
    keyed_classes = (WindowFunction, ProcessWindowFunction)
    all_classes = (AllWindowFunction, ProcessAllWindowFunction)
    wanted = "an AllWindowFunction or a ProcessAllWindowFunction" if all_windows else \
        "a WindowFunction or a ProcessWindowFunction"
    if isinstance(fn, all_classes if not all_windows else keyed_classes):
        raise TypeError(f"{role} needs {wanted}, got a {type(fn).__name__}")
    if role == "apply()" and isinstance(fn, (ProcessWindowFunction, ProcessAllWindowFunction)):
        raise TypeError(f"apply() needs a {'AllWindowFunction' if all_windows else 'WindowFunction'}, "
                        f"got a {type(fn).__name__} (use process())")
    if role == "process()" and isinstance(fn, (WindowFunction, AllWindowFunction)):
        name = "ProcessAllWindowFunction" if all_windows else "ProcessWindowFunction"
        raise TypeError(f"process() needs a {name}, got a {type(fn).__name__} (use apply())")
    if role != "process()" and callable(getattr(fn, "apply", None)):
        return "apply", fn.apply
    if role != "apply()" and callable(getattr(fn, "process", None)):
        return "process", fn.process
    raise TypeError(f"{role} needs {wanted}, got {fn!r} ({type(fn).__name__})")


class WindowOperator(OneInputOperator):
    """Keyed windows in BATCH mode (Flink's WindowOperator / EvictingWindowOperator): per key,
    records in timestamp order are assigned to windows and fed to the trigger; the key's timers fire
    at its end in timestamp order (so windows fire by window end); output timestamps are
    ``window.max_timestamp()``."""

    keyed = True
    all_windows = False

    def __init__(self, assigner: WindowAssigner, function_kind: str, function: Any,
                 window_function: Any = None, allowed_lateness: Any = 0, late_data_tag: Any = None,
                 trigger: Trigger | None = None, evictor: Evictor | None = None) -> None:
        if not isinstance(assigner, WindowAssigner):
            raise TypeError(f"expected a WindowAssigner, got {assigner!r}")
        if function_kind not in FUNCTION_KINDS:
            raise ValueError(f"function_kind must be one of {FUNCTION_KINDS}, got {function_kind!r}")
        lateness = to_millis(allowed_lateness)
        if lateness < 0:
            raise ValueError("The allowed lateness cannot be negative.")
        if late_data_tag is not None:
            check_output_tag(late_data_tag)
        self.assigner = assigner
        self.function_kind = function_kind
        self.function = function
        self.window_function = window_function
        self.allowed_lateness = lateness
        self.late_data_tag = late_data_tag
        self.trigger = trigger if trigger is not None else assigner.get_default_trigger()
        self.evictor = evictor if evictor is not None else assigner.get_default_evictor()
        if not isinstance(self.trigger, Trigger):
            raise TypeError(f"expected a Trigger, got {self.trigger!r}")
        if self.evictor is not None and not isinstance(self.evictor, Evictor):
            raise TypeError(f"expected an Evictor, got {self.evictor!r}")
        self.merging = isinstance(assigner, MergingWindowAssigner)
        # count_window's own trigger (and evictor) have a direct implementation
        self._count_shortcut = (
            (type(assigner) is CountTumblingWindowAssigner and trigger is None and self.evictor is None)
            or (type(assigner) is CountSlidingWindowAssigner and trigger is None and evictor is None))
        if self.merging and not self.trigger.can_merge():
            raise ValueError("A merging window assigner cannot be used with a trigger that does not "
                             "support merging.")
        self.user_functions = [function] + ([window_function] if window_function is not None else [])
        self._check_functions()

    def _check_functions(self) -> None:
        kind, fn = self.function_kind, self.function
        if kind == "reduce":
            if not (callable(getattr(fn, "reduce", None)) or (callable(fn) and not isinstance(fn, type))):
                raise TypeError(f"reduce() needs a ReduceFunction or a callable, got {fn!r}")
        elif kind == "aggregate":
            if isinstance(fn, AggregateFunction) or all(
                    callable(getattr(fn, m, None)) for m in ("create_accumulator", "add", "get_result")):
                pass
            else:
                raise TypeError(f"aggregate() needs an AggregateFunction, got {fn!r} ({type(fn).__name__})")
        else:
            _window_function(fn, self.all_windows, f"{kind}()")
        if self.window_function is not None:
            if kind not in ("reduce", "aggregate"):
                raise ValueError("a second window function goes with reduce() or aggregate() only")
            _window_function(self.window_function, self.all_windows, f"{kind}()'s window function")

    # -- running -------------------------------------------------------------------------------

    def open(self, ctx: RuntimeContext) -> None:
        super().open(ctx)
        self._ready = False  # the window contexts are rebuilt around the new state backend

    def process(self, records: Iterator[Any]) -> Iterator[Output]:
        for key, recs in group_by_key(records, 0, 1).items():
            yield from self._run_key(key, recs, 1, 2)

    def _setup(self) -> None:
        backend = self._state_backend()
        self._window_backend = KeyedStateBackend()
        self._trigger_backend = KeyedStateBackend()
        self._tctx = _TriggerContext(self._trigger_backend)
        self._wctx = _WindowFunctionContext(
            self._tctx, RuntimeContext("window", 0, 1, 0, {}, keyed_state_backend=self._window_backend),
            RuntimeContext("window", 0, 1, 0, {}, keyed_state_backend=backend))
        kind, fn = self.function_kind, self.function
        self._reduce = None
        if kind == "reduce":
            self._reduce = fn.reduce if callable(getattr(fn, "reduce", None)) else fn
        self._main: tuple[str, Callable[..., Any]] | None
        if kind in ("apply", "process"):
            self._main = _window_function(fn, self.all_windows, f"{kind}()")
        else:
            self._main = (_window_function(self.window_function, self.all_windows, "")
                          if self.window_function is not None else None)
        self._ready = True

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        for name in ("_window_backend", "_trigger_backend", "_tctx", "_wctx", "_reduce", "_main", "_ready"):
            state.pop(name, None)
        return state

    def _cleanup_time(self, window: Any) -> int:
        if self.assigner.is_event_time():
            t = window.max_timestamp() + self.allowed_lateness
            return t if t >= window.max_timestamp() and t < MAX_WATERMARK else MAX_WATERMARK
        return window.max_timestamp()

    def _register_cleanup(self, tctx: _TriggerContext, window: Any) -> None:
        t = self._cleanup_time(window)
        if t != MAX_WATERMARK:
            tctx._register(_EVENT if self.assigner.is_event_time() else _PROCESSING, t)

    def _delete_cleanup(self, tctx: _TriggerContext, window: Any) -> None:
        t = self._cleanup_time(window)
        if t != MAX_WATERMARK:
            tctx.timers.pop((_EVENT if self.assigner.is_event_time() else _PROCESSING, t, window), None)

    def _run_key(self, key: Any, recs: list[Any], ts_at: int, value_at: int) -> Iterator[Output]:
        if not getattr(self, "_ready", False):
            self._setup()
        backend = self._state_backend()
        backend.current_key = key
        tctx = self._tctx
        tctx.key = key
        tctx.watermark = MIN_WATERMARK
        tctx.timers.clear()
        contents: dict[Any, Any] = {}
        order: list[Any] = []  # merging assigners: the key's session windows, sorted by start
        active: set[Any] = set()
        try:
            if self._count_shortcut:
                yield from self._run_count(key, recs, ts_at, value_at, contents)
            elif self.evictor is None and type(self.trigger) in (EventTimeTrigger, ProcessingTimeTrigger):
                yield from self._run_time_trigger(key, recs, ts_at, value_at, contents, order, active)
            else:
                yield from self._run_any_trigger(key, recs, ts_at, value_at, contents, order, active)
        finally:
            tctx.timers.clear()
            tctx.watermark = MIN_WATERMARK
            backend.drop_key(key)
            self._window_backend._tables.clear()
            self._trigger_backend._tables.clear()

    def _run_time_trigger(self, key: Any, recs: list[Any], ts_at: int, value_at: int,
                          contents: dict[Any, Any], order: list[Any], active: set[Any]) -> Iterator[Output]:
        """The default Event/ProcessingTimeTrigger: while the key's records come in the watermark is
        Long.MIN_VALUE (processing time does not advance), so no window fires before the end of the
        key; then every window fires at its max timestamp, in that order, and is cleaned up at its
        cleanup time. The same outcome as running the trigger, without a timer per record."""
        tctx = self._tctx
        assigner = self.assigner
        add = self._adder()
        get = contents.get
        if type(assigner) is TumblingEventTimeWindows:
            # the hot case, inlined: Python's floor % gives getWindowStartWithOffset's start
            size, offset = assigner.size, assigner.offset
            by_start: dict[int, Any] = {}
            get_start = by_start.get
            for rec in recs:
                t = rec[ts_at]
                if t is None:
                    raise RuntimeError(NO_TIMESTAMP_ERROR)
                start = t - (t - offset) % size
                by_start[start] = add(get_start(start, _EMPTY), rec[value_at], t)
            for start, content in by_start.items():
                contents[TimeWindow(start, start + size)] = content
        else:
            assign = assigner.assign_windows
            merging = self.merging
            for rec in recs:
                ts = rec[ts_at]
                value = rec[value_at]
                t = MIN_WATERMARK if ts is None else ts
                for w in assign(value, t, tctx):
                    if merging:
                        w = self._merge(w, order, active, contents, None)
                    contents[w] = add(get(w, _EMPTY), value, t)
        tctx.watermark = MAX_WATERMARK
        fires = sorted(contents, key=_fire_order) if len(contents) > 1 else list(contents)
        if self.allowed_lateness == 0 or not assigner.is_event_time():
            clears = self._main is not None and self._main[0] == "process"
            for w in fires:
                yield from self._emit(key, w, contents)
                if clears:
                    self._clear_all_state(key, w, contents, tctx)
            return
        events = [(w.max_timestamp(), w[0], 0, w) for w in fires] + \
                 [(self._cleanup_time(w), w[0], 1, w) for w in fires]
        for _, _, cleanup, w in sorted(events, key=lambda e: e[:3]):
            if cleanup:
                self._clear_all_state(key, w, contents, tctx)
            elif w in contents:
                yield from self._emit(key, w, contents)

    def _run_count(self, key: Any, recs: list[Any], ts_at: int, value_at: int,
                   contents: dict[Any, Any]) -> Iterator[Output]:
        """count_window with its own trigger and evictor: tumbling fires (and purges) every ``size``
        elements; sliding fires every ``slide`` elements with the last ``size`` (CountEvictor)."""
        assigner = self.assigner
        w = GlobalWindow.get()
        n = len(recs)
        if isinstance(assigner, CountSlidingWindowAssigner):
            size, slide = assigner.size, assigner.slide
            for i in range(slide, n + 1, slide):
                contents[w] = [(r[value_at], r[ts_at]) for r in recs[max(0, i - size):i]]
                yield from self._emit(key, w, contents)
            return
        size = assigner.size  # type: ignore[attr-defined]
        add = self._adder()
        for i in range(size, n + 1, size):
            acc: Any = _EMPTY
            for r in recs[i - size:i]:
                acc = add(acc, r[value_at], r[ts_at])
            contents[w] = acc
            yield from self._emit(key, w, contents)
            del contents[w]

    def _run_any_trigger(self, key: Any, recs: list[Any], ts_at: int, value_at: int,
                         contents: dict[Any, Any], order: list[Any], active: set[Any]) -> Iterator[Output]:
        """Any trigger and evictor: the trigger sees every element; timers fire at the end of the key."""
        tctx = self._tctx
        timers = tctx.timers
        trigger = self.trigger
        assign = self.assigner.assign_windows
        add = self._adder()
        merging = self.merging
        for rec in recs:
            ts = rec[ts_at]
            value = rec[value_at]
            t = MIN_WATERMARK if ts is None else ts
            for w in assign(value, t, tctx):
                if merging:
                    w = self._merge(w, order, active, contents, tctx)
                contents[w] = add(contents.get(w, _EMPTY), value, t)
                tctx.window = w
                result = trigger.on_element(value, t, w, tctx)
                if result.value[0]:
                    yield from self._emit(key, w, contents)
                if result.value[1]:
                    contents.pop(w, None)
                self._register_cleanup(tctx, w)
        # end of the key's input: the watermark (and processing time) jump to the end of time
        tctx.watermark = MAX_WATERMARK
        is_event = self.assigner.is_event_time()
        for domain in (_EVENT, _PROCESSING):
            due = sorted((k for k in timers if k[0] == domain),
                         key=lambda k: (k[1], getattr(k[2], "start", 0), timers[k]))
            for k in due:
                if k not in timers:
                    continue  # deleted by an earlier callback
                del timers[k]
                _, ts, w = k
                if merging and w not in active:
                    continue
                tctx.window = w
                result = (trigger.on_event_time(ts, w, tctx) if domain == _EVENT
                          else trigger.on_processing_time(ts, w, tctx))
                if result.value[0] and w in contents:
                    yield from self._emit(key, w, contents)
                if result.value[1]:
                    contents.pop(w, None)
                if (domain == _EVENT) == is_event and ts == self._cleanup_time(w):
                    self._clear_all_state(key, w, contents, tctx)

    def _clear_all_state(self, key: Any, w: Any, contents: dict[Any, Any], tctx: _TriggerContext) -> None:
        contents.pop(w, None)
        tctx.window = w
        self.trigger.clear(w, tctx)
        main = self._main
        if main is not None and main[0] == "process":
            fn = self.function if self.function_kind == "process" else self.window_function
            clear = getattr(fn, "clear", None)
            if callable(clear):
                self._wctx._window = w
                self._window_backend.current_key = (key, w)
                clear(self._wctx)

    def _adder(self) -> Callable[[Any, Any, int], Any]:
        """How an element joins a window's contents."""
        if self.evictor is not None:
            def add_timestamped(acc: Any, value: Any, ts: int) -> Any:
                if acc is _EMPTY:
                    return [(value, ts)]
                acc.append((value, ts))
                return acc
            return add_timestamped
        kind = self.function_kind
        if kind == "reduce":
            reduce = self._reduce
            return lambda acc, value, ts: value if acc is _EMPTY else reduce(acc, value)  # type: ignore[misc]
        if kind == "aggregate":
            agg = self.function
            return lambda acc, value, ts: agg.add(value, agg.create_accumulator() if acc is _EMPTY else acc)

        def add_listed(acc: Any, value: Any, ts: int) -> Any:
            if acc is _EMPTY:
                return [value]
            acc.append(value)
            return acc
        return add_listed

    def _merge(self, window: Any, order: list[Any], active: set[Any], contents: dict[Any, Any],
               tctx: _TriggerContext | None) -> Any:
        """Add ``window`` to the key's session windows, merging the ones it intersects (Flink's
        MergingWindowSet.addWindow with TimeWindow.mergeWindows); gives the window the element
        belongs to. The sessions are disjoint, so the ones ``window`` intersects are a run of
        ``order``."""
        if window in active:
            return window
        start, end = window[0], window[1]
        i = bisect.bisect_right(order, end, key=_start)
        j = i
        while j > 0 and order[j - 1][1] >= start:
            j -= 1
        existing = order[j:i]
        if not existing:
            order.insert(i, window)
            active.add(window)
            return window
        result = TimeWindow(min(start, existing[0][0]), max(end, existing[-1][1]))
        if len(existing) == 1 and existing[0] == result:
            return result  # the new window lies inside an existing one: nothing to merge
        acc: Any = _EMPTY
        for c in existing:
            if c in contents:
                acc = contents.pop(c) if acc is _EMPTY else self._merge_contents(acc, contents.pop(c))
        if acc is not _EMPTY:
            contents[result] = acc
        if tctx is not None:
            merged_state = [c for c in existing if c != result]
            tctx.window = result
            tctx.merged_windows = merged_state
            self.trigger.on_merge(result, tctx)
            for c in merged_state:
                tctx.window = c
                self.trigger.clear(c, tctx)
                self._delete_cleanup(tctx, c)
            tctx.merged_windows = []
        order[j:i] = [result]
        active.difference_update(existing)
        active.add(result)
        return result

    def _merge_contents(self, a: Any, b: Any) -> Any:
        if self.evictor is not None or self.function_kind in ("apply", "process"):
            return a + b
        if self.function_kind == "reduce":
            return self._reduce(a, b)  # type: ignore[misc]
        return self.function.merge(a, b)

    def _emit(self, key: Any, w: Any, contents: dict[Any, Any]) -> Iterator[Output]:
        ts = w.max_timestamp()
        content = contents[w]
        kind = self.function_kind
        if self.evictor is not None:
            kept = self.evictor.evict_before(content, len(content), w, self._tctx)
            values = [v for v, _ in kept]
            if kind == "reduce":
                reduce = self._reduce
                acc = values[0]
                for v in values[1:]:
                    acc = reduce(acc, v)  # type: ignore[misc]
                result: Any = acc
            elif kind == "aggregate":
                agg = self.function
                a = agg.create_accumulator()
                for v in values:
                    a = agg.add(v, a)
                result = agg.get_result(a)
            else:
                result = values
            if values:
                yield from self._call(key, w, kind, result, ts)
            contents[w] = self.evictor.evict_after(kept, len(kept), w, self._tctx)
            return
        if kind == "reduce":
            result = content
        elif kind == "aggregate":
            result = self.function.get_result(content)
        else:
            result = list(content)
        yield from self._call(key, w, kind, result, ts)

    def _call(self, key: Any, w: Any, kind: str, result: Any, ts: int) -> Iterator[Output]:
        main = self._main
        if main is None:
            yield (None, ts, result)
            return
        elements = result if kind in ("apply", "process") else [result]
        how, method = main
        wctx = self._wctx
        if how == "apply":
            out = method(w, elements) if self.all_windows else method(key, w, elements)
        else:
            wctx._window = w
            self._window_backend.current_key = (key, w)
            out = method(wctx, elements) if self.all_windows else method(key, wctx, elements)
        yield from _outputs(out, ts, wctx._side)


class _Empty:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<empty>"


_EMPTY = _Empty()
_start = _op.itemgetter(0)


def _fire_order(w: Any) -> tuple[int, int]:
    """Timer order: by max timestamp (then start, where Flink's timer heap leaves ties open)."""
    return (w.max_timestamp(), getattr(w, "start", 0))


class AllWindowOperator(WindowOperator):
    """``window_all``: a keyed window over the one constant key of ``NullByteKeySelector``, in one
    subtask (Flink's windowAll); the functions are the all-window ones (no key argument)."""

    all_windows = True
