"""User function interfaces with PyFlink's names, and the RuntimeContext given to ``open``."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, Callable, Iterable

from .accumulators import Accumulator

if TYPE_CHECKING:
    from .state import (
        AggregatingState,
        KeyedStateStore,
        ListState,
        MapState,
        ReducingState,
        StateDescriptor,
        ValueState,
    )


class RuntimeContext:
    """What a rich function learns about the subtask it runs in (PyFlink's RuntimeContext)."""

    def __init__(self, task_name: str, subtask: int, parallelism: int, attempt: int,
                 accumulators: dict[str, Accumulator[Any]],
                 state_store: "KeyedStateStore | None" = None) -> None:
        self._task_name = task_name
        self._subtask = subtask
        self._parallelism = parallelism
        self._attempt = attempt
        self._accumulators = accumulators
        #: the keyed state of the current key; None outside a keyed stream
        self._state_store = state_store

    # -- keyed state (after key_by) -----------------------------------------------------------
    def get_state(self, state_descriptor: "StateDescriptor") -> "ValueState":
        from .state import ValueStateDescriptor, state_for

        return state_for(self._state_store, state_descriptor, ValueStateDescriptor)  # type: ignore[return-value]

    def get_list_state(self, state_descriptor: "StateDescriptor") -> "ListState":
        from .state import ListStateDescriptor, state_for

        return state_for(self._state_store, state_descriptor, ListStateDescriptor)  # type: ignore[return-value]

    def get_map_state(self, state_descriptor: "StateDescriptor") -> "MapState":
        from .state import MapStateDescriptor, state_for

        return state_for(self._state_store, state_descriptor, MapStateDescriptor)  # type: ignore[return-value]

    def get_reducing_state(self, state_descriptor: "StateDescriptor") -> "ReducingState":
        from .state import ReducingStateDescriptor, state_for

        return state_for(self._state_store, state_descriptor, ReducingStateDescriptor)  # type: ignore[return-value]

    def get_aggregating_state(self, state_descriptor: "StateDescriptor") -> "AggregatingState":
        from .state import AggregatingStateDescriptor, state_for

        return state_for(self._state_store, state_descriptor, AggregatingStateDescriptor)  # type: ignore[return-value]

    def get_task_name(self) -> str:
        return self._task_name

    def get_index_of_this_subtask(self) -> int:
        return self._subtask

    def get_number_of_parallel_subtasks(self) -> int:
        return self._parallelism

    def get_attempt_number(self) -> int:
        return self._attempt

    def add_accumulator(self, name: str, accumulator: Accumulator[Any]) -> None:
        if name in self._accumulators:
            raise ValueError(f"an accumulator named {name!r} is already registered in this task")
        self._accumulators[name] = accumulator

    def get_accumulator(self, name: str) -> Accumulator[Any]:
        try:
            return self._accumulators[name]
        except KeyError:
            raise KeyError(f"no accumulator named {name!r} in this task") from None


class Function:
    """A rich function: ``open(ctx)`` before the first record, ``close()`` after the last."""

    def open(self, runtime_context: RuntimeContext) -> None:
        pass

    def close(self) -> None:
        pass


class MapFunction(Function):
    def map(self, value: Any) -> Any:
        raise NotImplementedError


class FlatMapFunction(Function):
    def flat_map(self, value: Any) -> Iterable[Any]:
        raise NotImplementedError


class FilterFunction(Function):
    def filter(self, value: Any) -> bool:
        raise NotImplementedError


class ReduceFunction(Function):
    def reduce(self, value1: Any, value2: Any) -> Any:
        raise NotImplementedError


class OutputTag:
    """Names a side output (PyFlink's ``OutputTag(tag_id, type_info)``)."""

    def __init__(self, tag_id: str, type_info: Any = None) -> None:
        if not isinstance(tag_id, str) or not tag_id:
            raise ValueError("an OutputTag needs a non-empty name")
        self.tag_id = tag_id
        self.type_info = type_info

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputTag) and other.tag_id == self.tag_id

    def __hash__(self) -> int:
        return hash(self.tag_id)

    def __repr__(self) -> str:
        return f"OutputTag({self.tag_id!r})"


class TimeDomain(enum.Enum):
    """Which clock a timer follows."""

    EVENT_TIME = 0
    PROCESSING_TIME = 1


class TimerService:
    """Timers of the current key (PyFlink's TimerService); made by the operator."""

    def current_processing_time(self) -> int:
        raise NotImplementedError

    def current_watermark(self) -> int:
        raise NotImplementedError

    def register_processing_time_timer(self, timestamp: int) -> None:
        raise NotImplementedError

    def register_event_time_timer(self, timestamp: int) -> None:
        raise NotImplementedError

    def delete_processing_time_timer(self, timestamp: int) -> None:
        raise NotImplementedError

    def delete_event_time_timer(self, timestamp: int) -> None:
        raise NotImplementedError


class ProcessFunction(Function):
    """``process_element(value, ctx)`` yields any number of outputs per record; ``ctx.output(tag,
    value)`` sends one to a side output."""

    class Context:
        """What ``process_element`` learns about the record (PyFlink's ProcessFunction.Context)."""

        def timestamp(self) -> int | None:
            """The record's event-time timestamp (None: no timestamp was assigned)."""
            raise NotImplementedError

        def timer_service(self) -> TimerService:
            raise NotImplementedError

        def output(self, output_tag: OutputTag, value: Any) -> None:
            """Emit ``value`` to the side output ``output_tag``."""
            raise NotImplementedError

        def get_current_key(self) -> Any:
            raise NotImplementedError

    def process_element(self, value: Any, ctx: "ProcessFunction.Context") -> Iterable[Any]:
        raise NotImplementedError


class KeyedProcessFunction(ProcessFunction):
    """A ProcessFunction on a KeyedStream: keyed state through ``open``'s runtime context,
    ``ctx.get_current_key()``, timers (``ctx.timer_service()``) and ``on_timer``.

    In BATCH mode the records of one key arrive together; event-time timers fire when the
    key's input ends, in timestamp order, then processing-time timers (as Flink does).
    """

    class OnTimerContext(ProcessFunction.Context):
        def time_domain(self) -> TimeDomain:
            raise NotImplementedError

    def on_timer(self, timestamp: int, ctx: "KeyedProcessFunction.OnTimerContext") -> Iterable[Any]:
        """Called when a timer fires; yields outputs like ``process_element``."""
        return ()


class KeySelector(Function):
    def get_key(self, value: Any) -> Any:
        raise NotImplementedError


class AggregateFunction(Function):
    """Incremental aggregation (PyFlink's names): an accumulator per key or window."""

    def create_accumulator(self) -> Any:
        raise NotImplementedError

    def add(self, value: Any, accumulator: Any) -> Any:
        raise NotImplementedError

    def get_result(self, accumulator: Any) -> Any:
        raise NotImplementedError

    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        raise NotImplementedError


_METHOD = {MapFunction: "map", FlatMapFunction: "flat_map", FilterFunction: "filter",
           ReduceFunction: "reduce", KeySelector: "get_key", ProcessFunction: "process_element"}


def as_callable(fn: Any) -> Callable[..., Any]:
    """The plain callable behind a function or rich function object."""
    for cls, method in _METHOD.items():
        if isinstance(fn, cls):
            return getattr(fn, method)
    if callable(fn):
        return fn
    raise TypeError(f"{fn!r} is not callable nor a MapFunction/FlatMapFunction/... object")


class FieldAggregation:
    """``KeyedStream.sum/min/max(pos)``: a reduce over field ``pos`` of tuples, lists or dicts
    (a plain number when ``pos`` is None); the other fields come from the first record, as in
    Flink's aggregations."""

    combine: Callable[[Any, Any], Any] = staticmethod(lambda x, y: x + y)

    def __init__(self, position: int | str | None) -> None:
        self.position = position

    def __call__(self, a: Any, b: Any) -> Any:
        p = self.position
        if p is None:
            return self.combine(a, b)
        return self._with(a, self.combine(a[p], b[p]))

    def _with(self, record: Any, value: Any) -> Any:
        """``record`` with field ``position`` replaced by ``value``."""
        p = self.position
        if p is None:
            return value
        if isinstance(record, (tuple, list)) and isinstance(p, int):
            out_seq = list(record)
            out_seq[p] = value
            return tuple(out_seq) if isinstance(record, tuple) else out_seq
        out = dict(record)
        out[p] = value
        return out

    def combine_by_key(self, records: Iterable[Any],
                       key_selector: Callable[[Any], Any]) -> tuple[dict[Any, Any], int]:
        """The map-side combine: key -> the key's aggregated record, and how many records came
        in. The same result as reducing with ``self``, without a call to it per record."""
        combine = self.combine
        values: dict[Any, Any] = {}
        n = 0
        p = self.position
        if p is None:
            for n, rec in enumerate(records, 1):
                key = key_selector(rec)
                values[key] = combine(values[key], rec) if key in values else rec
            return values, n
        firsts: dict[Any, Any] = {}
        for n, rec in enumerate(records, 1):
            key = key_selector(rec)
            if key in values:
                values[key] = combine(values[key], rec[p])
            else:
                values[key] = rec[p]
                firsts[key] = rec
        return {k: self._with(firsts[k], v) for k, v in values.items()}, n


class FieldSum(FieldAggregation):
    combine = staticmethod(lambda x, y: x + y)

    def combine_by_key(self, records: Iterable[Any],
                       key_selector: Callable[[Any], Any]) -> tuple[dict[Any, Any], int]:
        p = self.position
        if p is None:
            return super().combine_by_key(records, key_selector)
        # the hot loop of every word count: += instead of a call per record
        sums: dict[Any, Any] = {}
        firsts: dict[Any, Any] = {}
        n = 0
        for n, rec in enumerate(records, 1):
            key = key_selector(rec)
            if key in sums:
                sums[key] += rec[p]
            else:
                sums[key] = rec[p]
                firsts[key] = rec
        return {k: self._with(firsts[k], v) for k, v in sums.items()}, n


class FieldMin(FieldAggregation):
    combine = staticmethod(min)


class FieldMax(FieldAggregation):
    combine = staticmethod(max)
