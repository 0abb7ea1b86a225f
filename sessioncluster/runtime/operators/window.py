"""Windows (Flink's WindowOperator / EvictingWindowOperator), per element in both modes.

Each element is assigned to windows (session windows merge in ``MergingWindowSet``); a window's
contents are keyed state in the window's namespace (reducing, aggregating, or a list; with an
evictor a list of (value, timestamp)); the trigger sees every element and its timers and answers
FIRE and/or PURGE; a window is cleaned up at ``max_timestamp + allowed_lateness`` (event time) or
its max timestamp (processing time); an element late for all of its windows goes to the late
data side output, or is dropped. Results carry the window's max timestamp.

The BATCH driver may run a key's sorted records through ``process_key_batch`` instead: the same
result without a timer per record where the assigner's own trigger decides (the default
event/processing time trigger without evictor, and count windows).

Pre-aggregation (``WindowPreAggregator``, ``process_partials``): a reduce or aggregate over
tumbling or sliding windows with the assigner's own trigger and no evictor is combined per
(key, window) by the subtasks before the shuffle; in BATCH the window operator after it combines
the partials and runs the window function once per window; in STREAMING (event time, no allowed
lateness, no late data side output) it adds them to the windows' keyed state, which fire at the
watermark.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from ...api.functions import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    AggregateFunction,
    Function,
    TimeDomain,
    check_output_tag,
)
from ...api.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from ...api.window import (
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
    TriggerResult,
    TumblingEventTimeWindows,
    WindowAssigner,
)
from ...common.time import to_millis
from ..timers import InternalTimer
from .base import OneInputStreamOperator, OperatorContext
from .windowcontext import (
    MergingWindowSet,
    NamespaceScope,
    TriggerContext,
    WindowFunctionContext,
    window_function,
)
from .windowpreagg import EMPTY, PRE_AGGREGATING_ASSIGNERS, content_adder, reduce_of

FUNCTION_KINDS = ("reduce", "aggregate", "apply", "process")
_CONTENTS = "window-contents"
_MERGING_WINDOWS = ValueStateDescriptor("merging-window-set")

MERGE_LATE_ERROR = ("The end timestamp of an event-time window cannot become earlier than the current "
                    "watermark by merging. Current watermark: {watermark} window: {window}")


_CONTINUE = TriggerResult.CONTINUE


class WindowOperator(OneInputStreamOperator):
    """Windows of a keyed stream (see the module's docstring)."""

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
        self.event_time = assigner.is_event_time()
        # count_window with its own trigger (and evictor): a BATCH shortcut
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
            if not (isinstance(fn, AggregateFunction) or all(
                    callable(getattr(fn, m, None)) for m in ("create_accumulator", "add", "get_result"))):
                raise TypeError(f"aggregate() needs an AggregateFunction, got {fn!r} ({type(fn).__name__})")
        else:
            window_function(fn, self.all_windows, f"{kind}()")
        if self.window_function is not None:
            if kind not in ("reduce", "aggregate"):
                raise ValueError("a second window function goes with reduce() or aggregate() only")
            window_function(self.window_function, self.all_windows, f"{kind}()'s window function")

    @property
    def pre_aggregates_in_batch(self) -> bool:
        """Whether a BATCH job combines this window's records per (key, window) before the
        shuffle (``WindowPreAggregator``) and this operator combines the partials
        (``process_partials``): a reduce, or an aggregate with a ``merge``, over tumbling or
        sliding windows (event or processing time) with the assigner's own trigger, no evictor,
        and no ``open``/``close`` of the user's function (it runs unopened before the shuffle).

        Flink's ReduceFunction and AggregateFunction may be combined in any order: a reduce is
        applied in arrival order in STREAMING, which no program can rely on across parallel
        inputs, and ``AggregateFunction.merge`` exists for this (Flink's own combiners use it);
        in BATCH no record is late, and with the assigner's own trigger a window fires once, at
        the end, over all of its contents."""
        if type(self.assigner) not in PRE_AGGREGATING_ASSIGNERS or self.evictor is not None:
            return False
        if type(self.trigger) is not type(self.assigner.get_default_trigger()):
            return False
        fn = self.function
        if self.function_kind == "reduce":
            combine = fn.reduce if callable(getattr(fn, "reduce", None)) else fn
        elif self.function_kind == "aggregate":
            combine = getattr(fn, "merge", None)
            if isinstance(fn, AggregateFunction) and type(fn).merge is AggregateFunction.merge:
                return False  # merge not implemented
        else:
            return False
        if not callable(combine):
            return False
        if isinstance(fn, Function):
            return all(getattr(type(fn), m) is getattr(Function, m) for m in ("open", "close"))
        return not any(callable(getattr(fn, m, None)) for m in ("open", "close"))

    @property
    def pre_aggregates_in_streaming(self) -> bool:
        """Whether a STREAMING job pre-aggregates as BATCH does (``pre_aggregates_in_batch``):
        only for event-time windows with allowed lateness 0 and no late data side output.

        There Flink's lateness test is per window (``isWindowLate``: its max timestamp at or
        before the watermark), so a micro-batch's records of one (key, window), which meet the
        same watermark, are late or not together; a window that is not late fires exactly once,
        at the watermark, and is gone. Combined into one partial before the shuffle they give
        Flink's result. A late record that goes to a side output must go one by one; allowed
        lateness fires a window again per late record; a processing-time window is assigned by
        the clock of the operator that sees the record."""
        return (self.pre_aggregates_in_batch and self.event_time and self.allowed_lateness == 0
                and self.late_data_tag is None)

    # -- open ------------------------------------------------------------------------------------
    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        kind, fn = self.function_kind, self.function
        self._reduce: Callable[[Any, Any], Any] | None = None
        if kind == "reduce":
            self._reduce = reduce_of(fn)
        self._main: tuple[str, Callable[..., Any]] | None
        if kind in ("apply", "process"):
            self._main = window_function(fn, self.all_windows, f"{kind}()")
        else:
            self._main = (window_function(self.window_function, self.all_windows, "")
                          if self.window_function is not None else None)
        self._tctx = TriggerContext(self.backend, self.timers)
        self._wctx = WindowFunctionContext(self.backend, self.timers, ctx.runtime_context)
        self._scope = NamespaceScope(self.backend)
        descriptor: Any
        if self.evictor is not None or kind in ("apply", "process"):
            descriptor = ListStateDescriptor(_CONTENTS)
        elif kind == "reduce":
            descriptor = ReducingStateDescriptor(_CONTENTS, self._reduce)
        else:
            descriptor = AggregatingStateDescriptor(_CONTENTS, fn)
        self._descriptor = descriptor
        self._contents: Any = self._scope.state(descriptor)
        self._merging_state = self.backend.get_state(_MERGING_WINDOWS)
        # the default trigger's timer of a window that is not late is its cleanup timer (same
        # domain, time and window): registering that again is a no-op, so it is skipped
        trigger = type(self.trigger)
        self._trigger_registers_cleanup = (
            (trigger is EventTimeTrigger and self.event_time and self.allowed_lateness == 0)
            or (trigger is ProcessingTimeTrigger and not self.event_time))

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        for name in ("_reduce", "_main", "_tctx", "_wctx", "_scope", "_descriptor", "_contents",
                     "_merging_state", "_trigger_registers_cleanup"):
            state.pop(name, None)
        return state

    # -- time ------------------------------------------------------------------------------------
    def cleanup_time(self, window: Any) -> int:
        """When a window's state goes: its max timestamp (+ allowed lateness in event time)."""
        if self.event_time:
            return min(window.max_timestamp() + self.allowed_lateness, MAX_WATERMARK)
        return window.max_timestamp()

    def _is_window_late(self, window: Any) -> bool:
        return self.event_time and self.cleanup_time(window) <= self.timers.watermark

    def _register_cleanup_timer(self, window: Any) -> None:
        t = self.cleanup_time(window)
        if t != MAX_WATERMARK:
            self.timers.register(TimeDomain.EVENT_TIME if self.event_time else TimeDomain.PROCESSING_TIME,
                                 t, window)

    def _delete_cleanup_timer(self, window: Any) -> None:
        t = self.cleanup_time(window)
        if t != MAX_WATERMARK:
            self.timers.delete(TimeDomain.EVENT_TIME if self.event_time else TimeDomain.PROCESSING_TIME,
                               t, window)

    # -- per element -----------------------------------------------------------------------------
    def process_element(self, value: Any, timestamp: int | None) -> None:
        t = MIN_WATERMARK if timestamp is None else timestamp
        windows = self.assigner.assign_windows(value, t, self._tctx)
        item = (value, t) if self.evictor is not None else value
        skipped = True
        if self.merging:
            merging = MergingWindowSet(self._merging_state)
            for window in windows:
                actual = merging.add_window(window, self._merge)
                if self._is_window_late(actual):
                    merging.retire_window(actual)
                    continue
                skipped = False
                self._scope.namespace = merging.get_state_window(actual)
                self._contents.add(item)
                self._on_element(value, t, actual)
            merging.persist()
        else:
            scope, add, on_element = self._scope, self._contents.add, self._on_element
            for window in windows:
                if self.event_time and self.cleanup_time(window) <= self.timers.watermark:
                    continue  # late (_is_window_late)
                skipped = False
                scope.namespace = window
                add(item)
                on_element(value, t, window)
        if skipped and self.event_time and t + self.allowed_lateness <= self.timers.watermark \
                and self.late_data_tag is not None:
            self.output.collect_side(self.late_data_tag, value, timestamp)

    def _on_element(self, value: Any, t: int, window: Any) -> None:
        tctx = self._tctx
        tctx.window = window
        result = self.trigger.on_element(value, t, window, tctx)
        if result is not _CONTINUE:
            self._apply(result, window)
        if not self._trigger_registers_cleanup:
            self._register_cleanup_timer(window)

    def _apply(self, result: TriggerResult, window: Any) -> None:
        """FIRE: the window's function over its contents; PURGE: drop them."""
        if result is _CONTINUE:
            return
        if result.value[0]:
            contents = self._contents.get()
            listed = isinstance(self._descriptor, ListStateDescriptor)
            if (contents if listed else contents is not None):
                self._emit_contents(window, contents)
        if result.value[1]:
            self._contents.clear()

    def _merge(self, result: Any, merged: list[Any], state_window: Any, merged_state: list[Any]) -> None:
        """Session windows merged: the trigger merges its state and timers, the merged windows'
        trigger state and cleanup timers go, their contents join the state window's."""
        if self.event_time and result.max_timestamp() + self.allowed_lateness <= self.timers.watermark:
            raise RuntimeError(MERGE_LATE_ERROR.format(watermark=self.timers.watermark, window=result))
        tctx = self._tctx
        tctx.window = result
        tctx.merged_windows = merged
        self.trigger.on_merge(result, tctx)
        tctx.merged_windows = []
        for window in merged:
            if window == result:
                continue
            tctx.window = window
            self.trigger.clear(window, tctx)
            self._delete_cleanup_timer(window)
        self.backend.merge_namespaces(self._descriptor, state_window, merged_state)

    # -- timers ----------------------------------------------------------------------------------
    def on_event_time(self, timer: InternalTimer) -> None:
        self._on_timer(timer, True)

    def on_processing_time(self, timer: InternalTimer) -> None:
        self._on_timer(timer, False)

    def _on_timer(self, timer: InternalTimer, event: bool) -> None:
        window = timer.namespace
        merging = None
        if self.merging:
            merging = MergingWindowSet(self._merging_state)
            state_window = merging.get_state_window(window)
            if state_window is None:
                return  # a merged window's timer the trigger did not delete: nothing left
            self._scope.namespace = state_window
        else:
            self._scope.namespace = window
        tctx = self._tctx
        tctx.window = window
        result = (self.trigger.on_event_time(timer.timestamp, window, tctx) if event
                  else self.trigger.on_processing_time(timer.timestamp, window, tctx))
        self._apply(result, window)
        if self.event_time == event and timer.timestamp == self.cleanup_time(window):
            self._clear_all_state(window, merging)
        if merging is not None:
            merging.persist()

    def _clear_all_state(self, window: Any, merging: MergingWindowSet | None) -> None:
        self._contents.clear()
        self._tctx.window = window
        self.trigger.clear(window, self._tctx)
        main = self._main
        if main is not None and main[0] == "process":
            fn = self.function if self.function_kind == "process" else self.window_function
            clear = getattr(fn, "clear", None)
            if callable(clear):
                self._wctx.set_window(window)
                clear(self._wctx)
        if merging is not None:
            merging.retire_window(window)

    # -- results ---------------------------------------------------------------------------------
    def _emit_contents(self, window: Any, contents: Any) -> None:
        """The window's function over ``contents`` (the state's value); with an evictor, the
        elements left after it are the window's contents again."""
        if self.evictor is None:
            self._emit(window, contents if self.function_kind in ("reduce", "aggregate")
                       else list(contents))
            return
        evictor = self.evictor
        kept = evictor.evict_before(contents, len(contents), window, self._tctx)
        values = [v for v, _ in kept]
        if values:
            self._emit(window, self._fold(values))
        remaining = evictor.evict_after(kept, len(kept), window, self._tctx)
        self._contents.update(remaining)

    def _fold(self, values: list[Any]) -> Any:
        kind = self.function_kind
        if kind == "reduce":
            reduce = self._reduce
            acc = values[0]
            for v in values[1:]:
                acc = reduce(acc, v)  # type: ignore[misc]
            return acc
        if kind == "aggregate":
            agg = self.function
            a = agg.create_accumulator()
            for v in values:
                a = agg.add(v, a)
            return agg.get_result(a)
        return values

    def _emit(self, window: Any, result: Any) -> None:
        ts = window.max_timestamp()
        main = self._main
        if main is None:
            self.output.records.append((None, ts, result))
            return
        elements = result if self.function_kind in ("apply", "process") else [result]
        how, call = main
        key = self.backend.get_current_key()
        wctx = self._wctx
        if how == "apply":
            out = call(window, elements) if self.all_windows else call(key, window, elements)
        else:
            wctx.set_window(window)
            out = call(wctx, elements) if self.all_windows else call(key, wctx, elements)
        self.output.collect_all(out, ts, wctx.side)

    # -- BATCH: a key's sorted records at once -------------------------------------------------
    def process_key_batch(self, records: list[tuple[int | None, Any]]) -> bool:
        """Run the current key's records, sorted by timestamp, with the watermark at
        Long.MIN_VALUE until their end, as the per-element path would, without a timer per record:
        for count windows and the assigner's default time trigger without evictor. False: it
        does not apply (the driver goes element by element)."""
        if self._count_shortcut:
            self._batch_count(records)
            return True
        if self.merging or self.evictor is not None or \
                type(self.trigger) not in (EventTimeTrigger, ProcessingTimeTrigger):
            return False
        self._batch_fire(self._batch_assign(records))
        return True

    def process_partials(self, records: Iterable[tuple[int | None, Any]]) -> bool:
        """The current key's partials (``(window, reduced value or accumulator)`` from
        ``WindowPreAggregator``), combined per window (the reduce again, or the aggregate's
        ``merge``). BATCH: then each window fires once, as ``process_key_batch`` fires them.
        STREAMING (``pre_aggregates_in_streaming``): a window late by the current watermark is
        dropped, as each of its records would be; the others join the window's contents in the
        keyed state, and the trigger registers its timer as for a record."""
        if self.function_kind == "reduce":
            combine = self._reduce
        else:
            combine = self.function.merge
        contents: dict[Any, Any] = {}
        get = contents.get
        for _, (window, partial) in records:
            acc = get(window, EMPTY)
            contents[window] = partial if acc is EMPTY else combine(acc, partial)  # type: ignore[misc]
        if self.batch:
            self._batch_fire(contents)
            return True
        scope, state = self._scope, self._contents
        add = state.add if self.function_kind == "reduce" else state.add_accumulator
        for window, partial in contents.items():
            if self._is_window_late(window):
                continue
            scope.namespace = window
            add(partial)
            self._on_element(partial, window.max_timestamp(), window)
        return True

    def _batch_fire(self, contents: dict[Any, Any]) -> None:
        """At the end of the key (the watermark at Long.MAX_VALUE meanwhile): each window fires
        at its max timestamp and is cleaned up at its cleanup time, in that order, as their
        timers would."""
        self.timers.watermark = MAX_WATERMARK
        try:
            self._fire_in_order(contents)
        finally:
            self.timers.watermark = MIN_WATERMARK

    def _fire_in_order(self, contents: dict[Any, Any]) -> None:
        fires = sorted(contents, key=_fire_order) if len(contents) > 1 else list(contents)
        clears = self._main is not None and self._main[0] == "process"
        if self.allowed_lateness == 0 or not self.event_time:
            for w in fires:
                self._emit_batch(w, contents[w])
                if clears:
                    self._clear_batch(w)
            return
        events = [(w.max_timestamp(), w[0], 0, w) for w in fires] + \
                 [(self.cleanup_time(w), w[0], 1, w) for w in fires]
        for _, _, cleanup, w in sorted(events, key=lambda e: e[:3]):  # a window fires, then goes
            if cleanup:
                self._clear_batch(w)
            else:
                self._emit_batch(w, contents[w])

    def _batch_assign(self, records: list[tuple[int | None, Any]]) -> dict[Any, Any]:
        add = content_adder(self.function_kind, self.function)
        contents: dict[Any, Any] = {}
        get = contents.get
        assigner = self.assigner
        if type(assigner) is TumblingEventTimeWindows:
            # the hot case, inlined: Python's floor % gives getWindowStartWithOffset's start
            size, offset = assigner.size, assigner.offset
            by_start: dict[int, Any] = {}
            get_start = by_start.get
            for t, value in records:
                if t is None:
                    raise RuntimeError(NO_TIMESTAMP_ERROR)
                start = t - (t - offset) % size
                by_start[start] = add(get_start(start, EMPTY), value)
            return {TimeWindow(start, start + size): c for start, c in by_start.items()}
        assign = assigner.assign_windows
        tctx = self._tctx
        for ts, value in records:
            for w in assign(value, MIN_WATERMARK if ts is None else ts, tctx):
                contents[w] = add(get(w, EMPTY), value)
        return contents

    def _batch_count(self, records: list[tuple[int | None, Any]]) -> None:
        """count_window with its own trigger (and evictor): tumbling fires (and purges) every
        ``size`` elements; sliding fires every ``slide`` elements with the last ``size``."""
        assigner = self.assigner
        w = GlobalWindow.get()
        n = len(records)
        if isinstance(assigner, CountSlidingWindowAssigner):
            size, slide = assigner.size, assigner.slide
            for i in range(slide, n + 1, slide):
                self._emit(w, self._fold([v for _, v in records[max(0, i - size):i]]))
            return
        size = assigner.size  # type: ignore[attr-defined]
        add = content_adder(self.function_kind, self.function)
        for i in range(size, n + 1, size):
            acc: Any = EMPTY
            for _, v in records[i - size:i]:
                acc = add(acc, v)
            self._emit_batch(w, acc)

    def _emit_batch(self, window: Any, content: Any) -> None:
        self._emit(window, self.function.get_result(content) if self.function_kind == "aggregate"
                   else content)

    def _clear_batch(self, window: Any) -> None:
        self._tctx.window = window
        self._clear_all_state(window, None)


def _fire_order(w: Any) -> tuple[int, int]:
    """Timer order: by max timestamp (then start, where Flink's timer heap leaves ties open)."""
    return (w.max_timestamp(), getattr(w, "start", 0))


class AllWindowOperator(WindowOperator):
    """``window_all``: a keyed window over the one constant key of ``NullByteKeySelector``, in one
    subtask (Flink's windowAll); the functions are the all-window ones (no key argument)."""

    all_windows = True

