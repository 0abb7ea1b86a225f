"""What a window's user code sees (Flink's WindowOperator.Context and
WindowOperator.WindowContext), and the state of merging windows (Flink's MergingWindowSet).

A window's state lives in the backend's current key under the window as namespace
(``NamespaceScope``); a trigger (``TriggerContext``) and a ``ProcessWindowFunction``
(``WindowFunctionContext``) read and write it there, and register their timers with the
window as namespace.
"""

from __future__ import annotations

import bisect
from typing import Any, Callable

from ...api.functions import (
    MAX_WATERMARK,
    AllWindowFunction,
    OutputTag,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    RuntimeContext,
    TimeDomain,
    WindowContext,
    WindowFunction,
    check_output_tag,
)
from ...api.state import KeyedStateStore, State, ValueState
from ...api.window import TimeWindow
from ..state_backend import KeyedStateBackend, namespaced
from ..timers import InternalTimerService


class NamespaceScope(KeyedStateStore):
    """State of the backend's current key in ``namespace`` (a window): what a trigger's
    ``get_partitioned_state``, a window's contents and ``window_state()`` read."""

    def __init__(self, backend: KeyedStateBackend) -> None:
        self._backend = backend
        self.namespace: Any = None
        #: id(descriptor) -> (descriptor, its state object): a trigger asks for its state per
        #: element; the object reads the current slot at every access, so one serves all
        self._states: dict[int, tuple[Any, State]] = {}

    @property
    def current_key(self) -> Any:
        return namespaced(self._backend.get_current_key(), self.namespace)

    def state(self, descriptor: Any) -> State:
        known = self._states.get(id(descriptor))
        if known is not None and known[0] is descriptor:
            return known[1]
        state = self._backend.state(descriptor, self)
        if len(self._states) >= 64:  # a trigger making a new descriptor per element
            self._states.clear()
        self._states[id(descriptor)] = (descriptor, state)
        return state

    def get_state(self, descriptor: Any) -> Any:
        return self.state(descriptor)

    get_list_state = get_map_state = get_reducing_state = get_aggregating_state = get_state


class MergingWindowSet:
    """The current key's merging (session) windows, each mapped to the window its state lives
    under (Flink's MergingWindowSet): a merge keeps one state window and folds the others into
    it. The windows are disjoint, so a new window merges with the run of them it intersects
    (touching counts, as Flink's TimeWindow.intersects)."""

    def __init__(self, state: ValueState) -> None:
        self._state = state
        self.mapping: dict[Any, Any] = dict(state.value() or {})
        self._sorted = sorted(self.mapping)
        self._changed = False

    def get_state_window(self, window: Any) -> Any:
        return self.mapping.get(window)

    def retire_window(self, window: Any) -> None:
        if self.mapping.pop(window, None) is None:
            raise RuntimeError(f"Window {window} is not in in-flight window set.")
        del self._sorted[bisect.bisect_left(self._sorted, window)]
        self._changed = True

    def persist(self) -> None:
        if self._changed:
            self._state.update(dict(self.mapping) if self.mapping else None)
            self._changed = False

    def add_window(self, new: Any, merge: Callable[[Any, list[Any], Any, list[Any]], None]) -> Any:
        """Add ``new``; merge it with the windows it intersects, calling ``merge(result, merged
        windows, state window of the result, state windows merged into it)`` first. Gives the
        window ``new`` ended up in."""
        order = self._sorted
        i = bisect.bisect_right(order, (new[1], MAX_WATERMARK))
        j = i
        while j > 0 and order[j - 1][1] >= new[0]:
            j -= 1
        run = order[j:i]
        if not run:
            order.insert(i, new)
            self.mapping[new] = new
            self._changed = True
            return new
        result = TimeWindow(min(new[0], run[0][0]), max(new[1], run[-1][1]))
        if len(run) == 1 and run[0] == result:
            return result  # inside a window already: nothing merges
        state_window = self.mapping[run[0]]
        merged_state = [self.mapping.pop(w) for w in run]
        merged_state.remove(state_window)
        self.mapping[result] = state_window
        order[j:i] = [result]
        self._changed = True
        merge(result, run, state_window, merged_state)
        return result


class TriggerContext(NamespaceScope):
    """What a Trigger sees: the current window, time, timers and state in the window's scope."""

    def __init__(self, backend: KeyedStateBackend, timers: InternalTimerService) -> None:
        super().__init__(backend)
        self._timers = timers
        self.merged_windows: list[Any] = []

    @property
    def window(self) -> Any:
        return self.namespace

    @window.setter
    def window(self, window: Any) -> None:
        self.namespace = window

    def get_current_watermark(self) -> int:
        return self._timers.watermark

    def get_current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def register_event_time_timer(self, timestamp: int) -> None:
        self._timers.register(TimeDomain.EVENT_TIME, timestamp, self.namespace)

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._timers.register(TimeDomain.PROCESSING_TIME, timestamp, self.namespace)

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._timers.delete(TimeDomain.EVENT_TIME, timestamp, self.namespace)

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self._timers.delete(TimeDomain.PROCESSING_TIME, timestamp, self.namespace)

    def get_partitioned_state(self, descriptor: Any) -> Any:
        return self.state(descriptor)

    def merge_partitioned_state(self, descriptor: Any) -> None:
        """Fold the merged windows' state of ``descriptor`` into the current window's."""
        if self.merged_windows:
            self._backend.merge_namespaces(descriptor, self.namespace, self.merged_windows)


class WindowFunctionContext(WindowContext):
    """ProcessWindowFunction.Context: the fired window, time, window and global state."""

    def __init__(self, backend: KeyedStateBackend, timers: InternalTimerService,
                 runtime_context: RuntimeContext) -> None:
        self._timers = timers
        self._scope = NamespaceScope(backend)
        self._window_state = runtime_context.with_keyed_state(self._scope)
        self._global_state = runtime_context.with_keyed_state(backend)
        self.side: list[tuple[OutputTag, Any]] = []

    def set_window(self, window: Any) -> None:
        self._scope.namespace = window

    def window(self) -> Any:
        return self._scope.namespace

    def current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def current_watermark(self) -> int:
        return self._timers.watermark

    def window_state(self) -> RuntimeContext:
        return self._window_state

    def global_state(self) -> RuntimeContext:
        return self._global_state

    def output(self, output_tag: OutputTag, value: Any) -> None:
        self.side.append((check_output_tag(output_tag), value))


def window_function(fn: Any, all_windows: bool, role: str) -> tuple[str, Callable[..., Any]]:
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
