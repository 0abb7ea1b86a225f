"""Windows with PyFlink's names and Flink's semantics: windows, assigners, triggers, evictors.

``TimeWindow.get_window_start_with_offset`` follows Flink's Java code (``%`` truncates toward zero),
so negative timestamps and offsets land in the same windows as in Flink. Session windows merge with
``TimeWindow.intersects``, which (as in Flink) counts touching windows as intersecting.
"""

from __future__ import annotations

import enum
import operator as _op
import time
from typing import Any, Callable

from ..common.time import Duration, Time, to_millis
from .functions import MAX_WATERMARK, MIN_WATERMARK
from .state import ReducingStateDescriptor

__all__ = [
    "Window", "TimeWindow", "CountWindow", "GlobalWindow", "Time", "WindowAssigner", "MergingWindowAssigner",
    "TumblingEventTimeWindows", "SlidingEventTimeWindows", "EventTimeSessionWindows",
    "DynamicEventTimeSessionWindows", "TumblingProcessingTimeWindows", "SlidingProcessingTimeWindows",
    "ProcessingTimeSessionWindows", "DynamicProcessingTimeSessionWindows", "GlobalWindows",
    "CountTumblingWindowAssigner", "CountSlidingWindowAssigner", "SessionWindowTimeGapExtractor",
    "TriggerResult", "Trigger", "EventTimeTrigger", "ProcessingTimeTrigger", "CountTrigger",
    "PurgingTrigger", "ContinuousEventTimeTrigger", "ContinuousProcessingTimeTrigger", "NeverTrigger",
    "Evictor", "CountEvictor", "count_window_assigner",
]

NO_TIMESTAMP_ERROR = ("Record has Long.MIN_VALUE timestamp (= no timestamp marker). Is the time "
                      "characteristic set to 'ProcessingTime', or did you forget to call "
                      "'DataStream.assignTimestampsAndWatermarks(...)'?")


def _java_rem(a: int, b: int) -> int:
    """Java's ``a % b`` for longs: the remainder has the sign of ``a``."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


class Window:
    """A window of elements (Flink's Window)."""

    __slots__ = ()

    def max_timestamp(self) -> int:
        raise NotImplementedError


class TimeWindow(tuple, Window):
    """The window [start, end) in milliseconds (a tuple underneath: hashing and equality in C)."""

    __slots__ = ()

    def __new__(cls, start: int, end: int) -> "TimeWindow":
        return tuple.__new__(cls, (start, end))

    start = property(_op.itemgetter(0), doc="the first millisecond of the window")
    end = property(_op.itemgetter(1), doc="the first millisecond after the window")

    def max_timestamp(self) -> int:
        return self[1] - 1

    def intersects(self, other: "TimeWindow") -> bool:
        """Flink's ``TimeWindow.intersects``: touching windows intersect."""
        return self[0] <= other[1] and self[1] >= other[0]

    def cover(self, other: "TimeWindow") -> "TimeWindow":
        return TimeWindow(min(self[0], other[0]), max(self[1], other[1]))

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """Flink's ``TimeWindow.getWindowStartWithOffset`` (Java ``%`` semantics)."""
        remainder = _java_rem(timestamp - offset, window_size)
        if remainder < 0:
            return timestamp - (remainder + window_size)
        return timestamp - remainder

    def __repr__(self) -> str:
        return f"TimeWindow(start={self[0]}, end={self[1]})"

    def __getnewargs__(self) -> tuple[int, int]:
        return (self[0], self[1])


class CountWindow(Window):
    __slots__ = ("id",)

    def __init__(self, id: int) -> None:
        self.id = id

    def max_timestamp(self) -> int:
        return MAX_WATERMARK

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CountWindow) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"CountWindow(id={self.id})"


class GlobalWindow(Window):
    """The one window of GlobalWindows; its max timestamp is Long.MAX_VALUE."""

    _instance: "GlobalWindow | None" = None

    @staticmethod
    def get() -> "GlobalWindow":
        if GlobalWindow._instance is None:
            GlobalWindow._instance = GlobalWindow()
        return GlobalWindow._instance

    def max_timestamp(self) -> int:
        return MAX_WATERMARK

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GlobalWindow)

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "GlobalWindow"


# ---------------------------------------------------------------------------------------------
# triggers and evictors


class TriggerResult(enum.Enum):
    CONTINUE = (False, False)
    FIRE_AND_PURGE = (True, True)
    FIRE = (True, False)
    PURGE = (False, True)

    def is_fire(self) -> bool:
        return self.value[0]

    def is_purge(self) -> bool:
        return self.value[1]


class Trigger:
    """When a window fires (Flink's Trigger); ``ctx`` is the operator's TriggerContext."""

    __class_getitem__ = classmethod(lambda cls, params: cls)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return False

    def on_merge(self, window: Window, ctx: Any) -> None:
        raise RuntimeError("This trigger does not support merging.")

    def clear(self, window: Window, ctx: Any) -> None:
        pass


class EventTimeTrigger(Trigger):
    """Fires when the watermark passes the window's max timestamp."""

    @staticmethod
    def create() -> "EventTimeTrigger":
        return EventTimeTrigger()

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: Any) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: Any) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: Any) -> None:
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Window, ctx: Any) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())


class ProcessingTimeTrigger(Trigger):
    """Fires when processing time reaches the window's max timestamp (BATCH: at the end of the key)."""

    @staticmethod
    def create() -> "ProcessingTimeTrigger":
        return ProcessingTimeTrigger()

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: Any) -> TriggerResult:
        ctx.register_processing_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: Any) -> TriggerResult:
        return TriggerResult.FIRE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: Any) -> None:
        ctx.register_processing_time_timer(window.max_timestamp())

    def clear(self, window: Window, ctx: Any) -> None:
        ctx.delete_processing_time_timer(window.max_timestamp())


def _add(a: int, b: int) -> int:
    return a + b


class CountTrigger(Trigger):
    """Fires every ``count`` elements of a window."""

    def __init__(self, count: int) -> None:
        if count <= 0:
            raise ValueError("count must be positive")
        self.count = count
        self._descriptor = ReducingStateDescriptor("count", _add)

    @staticmethod
    def of(count: int) -> "CountTrigger":
        return CountTrigger(count)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: Any) -> TriggerResult:
        count = ctx.get_partitioned_state(self._descriptor)
        count.add(1)
        if count.get() >= self.count:
            count.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: Any) -> None:
        ctx.merge_partitioned_state(self._descriptor)

    def clear(self, window: Window, ctx: Any) -> None:
        ctx.get_partitioned_state(self._descriptor).clear()


def _min(a: int, b: int) -> int:
    return min(a, b)


class _ContinuousTrigger(Trigger):
    """Fires every ``interval`` of its time domain while the window is open, and at the window's
    end; the next fire time is window-scoped state (Flink's Continuous*TimeTrigger)."""

    def __init__(self, interval: int) -> None:
        if interval <= 0:
            raise ValueError("the interval must be positive")
        self.interval = interval
        self._descriptor = ReducingStateDescriptor("fire-time", _min)

    def _register(self, ctx: Any, time: int) -> None:
        raise NotImplementedError

    def _delete(self, ctx: Any, time: int) -> None:
        raise NotImplementedError

    def _start(self, time: int, window: Window, ctx: Any) -> None:
        """The first element of the window: its first early firing."""
        fire_time = ctx.get_partitioned_state(self._descriptor)
        if fire_time.get() is None:
            self._register_next(time - time % self.interval, window, ctx, fire_time)

    def _on_timer(self, time: int, window: Window, ctx: Any) -> TriggerResult:
        """A timer at the next fire time: fire, and set the one after it."""
        fire_time = ctx.get_partitioned_state(self._descriptor)
        if fire_time.get() == time:
            fire_time.clear()
            self._register_next(time, window, ctx, fire_time)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def _register_next(self, time: int, window: Window, ctx: Any, fire_time: Any) -> None:
        next_time = min(time + self.interval, window.max_timestamp())
        fire_time.add(next_time)
        self._register(ctx, next_time)

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: Any) -> None:
        ctx.merge_partitioned_state(self._descriptor)
        next_time = ctx.get_partitioned_state(self._descriptor).get()
        if next_time is not None:
            self._register(ctx, next_time)

    def clear(self, window: Window, ctx: Any) -> None:
        fire_time = ctx.get_partitioned_state(self._descriptor)
        if fire_time.get() is not None:
            self._delete(ctx, fire_time.get())
            fire_time.clear()


class ContinuousEventTimeTrigger(_ContinuousTrigger):
    """Fires every ``interval`` of event time (by the watermark) while the window is open, and
    when the watermark passes its end (Flink's ContinuousEventTimeTrigger)."""

    @staticmethod
    def of(interval: Time | Duration | int) -> "ContinuousEventTimeTrigger":
        return ContinuousEventTimeTrigger(to_millis(interval))

    def _register(self, ctx: Any, time: int) -> None:
        ctx.register_event_time_timer(time)

    def _delete(self, ctx: Any, time: int) -> None:
        ctx.delete_event_time_timer(time)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: Any) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE  # the watermark is past the window already
        ctx.register_event_time_timer(window.max_timestamp())
        self._start(timestamp, window, ctx)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: Any) -> TriggerResult:
        if time == window.max_timestamp():  # the window's end (its own timer, set per element)
            return TriggerResult.FIRE
        return self._on_timer(time, window, ctx)


class ContinuousProcessingTimeTrigger(_ContinuousTrigger):
    """Fires every ``interval`` of processing time while the window is open, and at its end
    (Flink's ContinuousProcessingTimeTrigger)."""

    @staticmethod
    def of(interval: Time | Duration | int) -> "ContinuousProcessingTimeTrigger":
        return ContinuousProcessingTimeTrigger(to_millis(interval))

    def _register(self, ctx: Any, time: int) -> None:
        ctx.register_processing_time_timer(time)

    def _delete(self, ctx: Any, time: int) -> None:
        ctx.delete_processing_time_timer(time)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: Any) -> TriggerResult:
        self._start(ctx.get_current_processing_time(), window, ctx)
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: Any) -> TriggerResult:
        return self._on_timer(time, window, ctx)


class PurgingTrigger(Trigger):
    """Turns every FIRE of ``nested`` into FIRE_AND_PURGE."""

    def __init__(self, nested: Trigger) -> None:
        self.nested = nested

    @staticmethod
    def of(nested: Trigger) -> "PurgingTrigger":
        return PurgingTrigger(nested)

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if result.is_fire() else result

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: Any) -> TriggerResult:
        return self._purging(self.nested.on_element(element, timestamp, window, ctx))

    def on_event_time(self, time: int, window: Window, ctx: Any) -> TriggerResult:
        return self._purging(self.nested.on_event_time(time, window, ctx))

    def on_processing_time(self, time: int, window: Window, ctx: Any) -> TriggerResult:
        return self._purging(self.nested.on_processing_time(time, window, ctx))

    def can_merge(self) -> bool:
        return self.nested.can_merge()

    def on_merge(self, window: Window, ctx: Any) -> None:
        self.nested.on_merge(window, ctx)

    def clear(self, window: Window, ctx: Any) -> None:
        self.nested.clear(window, ctx)


class NeverTrigger(Trigger):
    """GlobalWindows' default trigger: never fires."""

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: Any) -> None:
        pass


class Evictor:
    """Removes elements from a window before and/or after its function runs. ``elements`` is a list
    of (value, timestamp) pairs; the methods return the pairs to keep."""

    __class_getitem__ = classmethod(lambda cls, params: cls)

    def evict_before(self, elements: list[tuple[Any, int]], size: int, window: Window,
                     ctx: Any) -> list[tuple[Any, int]]:
        return elements

    def evict_after(self, elements: list[tuple[Any, int]], size: int, window: Window,
                    ctx: Any) -> list[tuple[Any, int]]:
        return elements


class CountEvictor(Evictor):
    """Keeps the last ``max_count`` elements (before the function, unless ``do_evict_after``)."""

    def __init__(self, max_count: int, do_evict_after: bool = False) -> None:
        self.max_count = max_count
        self.do_evict_after = do_evict_after

    @staticmethod
    def of(max_count: int, do_evict_after: bool = False) -> "CountEvictor":
        return CountEvictor(max_count, do_evict_after)

    def _evict(self, elements: list[tuple[Any, int]], size: int) -> list[tuple[Any, int]]:
        return elements[size - self.max_count:] if size > self.max_count else elements

    def evict_before(self, elements: list[tuple[Any, int]], size: int, window: Window,
                     ctx: Any) -> list[tuple[Any, int]]:
        return elements if self.do_evict_after else self._evict(elements, size)

    def evict_after(self, elements: list[tuple[Any, int]], size: int, window: Window,
                    ctx: Any) -> list[tuple[Any, int]]:
        return self._evict(elements, size) if self.do_evict_after else elements


# ---------------------------------------------------------------------------------------------
# assigners


class WindowAssigner:
    """Assigns each element to windows (Flink's WindowAssigner). ``context`` offers
    ``get_current_processing_time()``."""

    __class_getitem__ = classmethod(lambda cls, params: cls)

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[Window]:
        raise NotImplementedError

    def get_default_trigger(self) -> Trigger:
        raise NotImplementedError

    def get_default_evictor(self) -> Evictor | None:
        return None

    def is_event_time(self) -> bool:
        raise NotImplementedError


class MergingWindowAssigner(WindowAssigner):
    """An assigner of windows that merge when they intersect (sessions): the window operator
    merges them as Flink's TimeWindow.mergeWindows does (``runtime.operators.MergingWindowSet``)."""


def _positive(name: str, value: int) -> int:
    if value <= 0:
        raise ValueError(f"{name} parameters must satisfy 0 < size")
    return value


class TumblingEventTimeWindows(WindowAssigner):
    def __init__(self, size: int, offset: int = 0) -> None:
        if abs(offset) >= size:
            raise ValueError("TumblingEventTimeWindows parameters must satisfy abs(offset) < size")
        self.size = size
        self.offset = offset

    @staticmethod
    def of(size: Time | Duration | int,
           offset: Time | Duration | int | None = None) -> "TumblingEventTimeWindows":
        return TumblingEventTimeWindows(to_millis(size), 0 if offset is None else to_millis(offset))

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[Window]:
        if timestamp > MIN_WATERMARK:
            start = TimeWindow.get_window_start_with_offset(timestamp, self.offset, self.size)
            return [TimeWindow(start, start + self.size)]
        raise RuntimeError(NO_TIMESTAMP_ERROR)

    def get_default_trigger(self) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"TumblingEventTimeWindows({self.size})"


def _sliding(timestamp: int, size: int, slide: int, offset: int) -> list[Window]:
    windows: list[Window] = []
    last_start = TimeWindow.get_window_start_with_offset(timestamp, offset, slide)
    start = last_start
    while start > timestamp - size:
        windows.append(TimeWindow(start, start + size))
        start -= slide
    return windows


class SlidingEventTimeWindows(WindowAssigner):
    def __init__(self, size: int, slide: int, offset: int = 0) -> None:
        if abs(offset) >= slide or size <= 0:
            raise ValueError("SlidingEventTimeWindows parameters must satisfy abs(offset) < slide and "
                             "size > 0")
        self.size = size
        self.slide = slide
        self.offset = offset

    @staticmethod
    def of(size: Time | Duration | int, slide: Time | Duration | int,
           offset: Time | Duration | int | None = None) -> "SlidingEventTimeWindows":
        return SlidingEventTimeWindows(to_millis(size), to_millis(slide),
                                       0 if offset is None else to_millis(offset))

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[Window]:
        if timestamp > MIN_WATERMARK:
            return _sliding(timestamp, self.size, self.slide, self.offset)
        raise RuntimeError(NO_TIMESTAMP_ERROR)

    def get_default_trigger(self) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"SlidingEventTimeWindows({self.size}, {self.slide})"


class SessionWindowTimeGapExtractor:
    """``extract(element)``: the session gap of an element, in milliseconds."""

    __class_getitem__ = classmethod(lambda cls, params: cls)

    def extract(self, element: Any) -> int:
        raise NotImplementedError


def _gap_function(extractor: Any) -> Callable[[Any], Any]:
    extract = getattr(extractor, "extract", None)
    if callable(extract):
        return extract
    if callable(extractor):
        return extractor
    raise TypeError(f"expected a SessionWindowTimeGapExtractor, got {extractor!r}")


class EventTimeSessionWindows(MergingWindowAssigner):
    def __init__(self, gap: int) -> None:
        if gap <= 0:
            raise ValueError("EventTimeSessionWindows parameters must satisfy 0 < size")
        self.gap = gap

    @staticmethod
    def with_gap(size: Time | Duration | int) -> "EventTimeSessionWindows":
        return EventTimeSessionWindows(to_millis(size))

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> "DynamicEventTimeSessionWindows":
        return DynamicEventTimeSessionWindows(extractor)

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[Window]:
        if timestamp > MIN_WATERMARK:
            return [TimeWindow(timestamp, timestamp + self.gap)]
        raise RuntimeError(NO_TIMESTAMP_ERROR)

    def get_default_trigger(self) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


class DynamicEventTimeSessionWindows(MergingWindowAssigner):
    def __init__(self, extractor: Any) -> None:
        self.extractor = extractor
        self._gap = _gap_function(extractor)

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[Window]:
        gap = to_millis(self._gap(element))
        if gap <= 0:
            raise ValueError("Dynamic session time gap must satisfy 0 < gap")
        if timestamp > MIN_WATERMARK:
            return [TimeWindow(timestamp, timestamp + gap)]
        raise RuntimeError(NO_TIMESTAMP_ERROR)

    def get_default_trigger(self) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


def _now(context: Any) -> int:
    if context is not None:
        return context.get_current_processing_time()
    return int(time.time() * 1000)


class TumblingProcessingTimeWindows(WindowAssigner):
    """Windows of processing time (BATCH: the wall clock when the record is processed; they fire at
    the end of the key's input)."""

    def __init__(self, size: int, offset: int = 0) -> None:
        if abs(offset) >= size:
            raise ValueError("TumblingProcessingTimeWindows parameters must satisfy abs(offset) < size")
        self.size = size
        self.offset = offset

    @staticmethod
    def of(size: Time | Duration | int,
           offset: Time | Duration | int | None = None) -> "TumblingProcessingTimeWindows":
        return TumblingProcessingTimeWindows(to_millis(size), 0 if offset is None else to_millis(offset))

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[Window]:
        now = _now(context)
        start = TimeWindow.get_window_start_with_offset(now, self.offset, self.size)
        return [TimeWindow(start, start + self.size)]

    def get_default_trigger(self) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False


class SlidingProcessingTimeWindows(WindowAssigner):
    def __init__(self, size: int, slide: int, offset: int = 0) -> None:
        if abs(offset) >= slide or size <= 0:
            raise ValueError("SlidingProcessingTimeWindows parameters must satisfy abs(offset) < slide and "
                             "size > 0")
        self.size = size
        self.slide = slide
        self.offset = offset

    @staticmethod
    def of(size: Time | Duration | int, slide: Time | Duration | int,
           offset: Time | Duration | int | None = None) -> "SlidingProcessingTimeWindows":
        return SlidingProcessingTimeWindows(to_millis(size), to_millis(slide),
                                            0 if offset is None else to_millis(offset))

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[Window]:
        return _sliding(_now(context), self.size, self.slide, self.offset)

    def get_default_trigger(self) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False


class ProcessingTimeSessionWindows(MergingWindowAssigner):
    def __init__(self, gap: int) -> None:
        if gap <= 0:
            raise ValueError("ProcessingTimeSessionWindows parameters must satisfy 0 < size")
        self.gap = gap

    @staticmethod
    def with_gap(size: Time | Duration | int) -> "ProcessingTimeSessionWindows":
        return ProcessingTimeSessionWindows(to_millis(size))

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> "DynamicProcessingTimeSessionWindows":
        return DynamicProcessingTimeSessionWindows(extractor)

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[Window]:
        now = _now(context)
        return [TimeWindow(now, now + self.gap)]

    def get_default_trigger(self) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False


class DynamicProcessingTimeSessionWindows(MergingWindowAssigner):
    def __init__(self, extractor: Any) -> None:
        self.extractor = extractor
        self._gap = _gap_function(extractor)

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[Window]:
        gap = to_millis(self._gap(element))
        if gap <= 0:
            raise ValueError("Dynamic session time gap must satisfy 0 < gap")
        now = _now(context)
        return [TimeWindow(now, now + gap)]

    def get_default_trigger(self) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False


class GlobalWindows(WindowAssigner):
    """Every element in the one GlobalWindow; the default trigger never fires."""

    @staticmethod
    def create() -> "GlobalWindows":
        return GlobalWindows()

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[Window]:
        return [GlobalWindow.get()]

    def get_default_trigger(self) -> Trigger:
        return NeverTrigger()

    def is_event_time(self) -> bool:
        return False


class CountTumblingWindowAssigner(GlobalWindows):
    """``count_window(size)``: GlobalWindows + PurgingTrigger(CountTrigger(size)) as in Flink's
    ``KeyedStream.countWindow(size)`` (an incomplete last window never fires)."""

    def __init__(self, size: int) -> None:
        if size <= 0:
            raise ValueError("count window size must be positive")
        self.size = size

    @staticmethod
    def of(window_size: int) -> "CountTumblingWindowAssigner":
        return CountTumblingWindowAssigner(window_size)

    def get_default_trigger(self) -> Trigger:
        return PurgingTrigger(CountTrigger(self.size))


class CountSlidingWindowAssigner(GlobalWindows):
    """``count_window(size, slide)``: GlobalWindows + CountEvictor(size) + CountTrigger(slide) as in
    Flink's ``KeyedStream.countWindow(size, slide)``: every ``slide`` elements, the last ``size``
    (fewer in the first firings)."""

    def __init__(self, size: int, slide: int) -> None:
        if size <= 0 or slide <= 0:
            raise ValueError("count window size and slide must be positive")
        self.size = size
        self.slide = slide

    @staticmethod
    def of(window_size: int, window_slide: int) -> "CountSlidingWindowAssigner":
        return CountSlidingWindowAssigner(window_size, window_slide)

    def get_default_trigger(self) -> Trigger:
        return CountTrigger(self.slide)

    def get_default_evictor(self) -> Evictor | None:
        return CountEvictor(self.size)


def count_window_assigner(size: int, slide: int = 0) -> WindowAssigner:
    """The assigner behind ``count_window(size[, slide])``."""
    return CountTumblingWindowAssigner(size) if slide == 0 else CountSlidingWindowAssigner(size, slide)
