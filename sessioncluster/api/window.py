"""Windows with PyFlink's names and Flink's semantics (PyFlink's ``pyflink.datastream.window``):
the window assigners here, the windows (``.windows``), triggers and evictors (``.triggers``)
under the same names."""

from __future__ import annotations

import time
from typing import Any, Callable

from ..common.time import Duration, Time, to_millis
from .functions import MIN_WATERMARK
from .triggers import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountEvictor,
    CountTrigger,
    EventTimeTrigger,
    Evictor,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
    TriggerResult,
)
from .windows import CountWindow, GlobalWindow, TimeWindow, Window

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
