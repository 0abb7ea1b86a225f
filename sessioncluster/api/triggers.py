"""Triggers and evictors with PyFlink's names and Flink's semantics: when a window fires and
purges (``Trigger``, ``TriggerResult``) and which of its elements a window function sees
(``Evictor``)."""

from __future__ import annotations

import enum
from typing import Any

from ..common.time import Duration, Time, to_millis
from .state import ReducingStateDescriptor
from .windows import Window


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
