"""User function interfaces with PyFlink's names, and the RuntimeContext given to ``open``."""

from __future__ import annotations

import copy
import enum
import itertools
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from .accumulators import Accumulator

if TYPE_CHECKING:
    from .state import (
        AggregatingState,
        AggregatingStateDescriptor,
        KeyedStateStore,
        ListState,
        ListStateDescriptor,
        MapState,
        MapStateDescriptor,
        ReducingState,
        ReducingStateDescriptor,
        ValueState,
        ValueStateDescriptor,
    )

#: Java's Long.MIN_VALUE / Long.MAX_VALUE: the watermark while a key's records are processed in BATCH
#: mode, and while its timers fire (and a GlobalWindow's max timestamp).
MIN_WATERMARK = -(2**63)
MAX_WATERMARK = 2**63 - 1

KEYED_STATE_ERROR = ("Keyed state can only be used on a 'keyed stream', i.e., after a 'keyBy()' "
                     "operation.")
TIMERS_ERROR = "Setting timers is only supported on a keyed streams."


#: Flink's default max parallelism of an operator
MAX_PARALLELISM = 128


class RuntimeContext:
    """What a rich function learns about the subtask it runs in (PyFlink's RuntimeContext).

    On a keyed operator it also gives keyed state (``get_state`` ...), scoped to the current key.
    """

    def __init__(self, task_name: str, subtask: int, parallelism: int, attempt: int,
                 accumulators: dict[str, Accumulator[Any]], *,
                 keyed_state_backend: "KeyedStateStore | None" = None,
                 job_parameters: dict[str, str] | None = None) -> None:
        self._task_name = task_name
        self._subtask = subtask
        self._parallelism = parallelism
        self._attempt = attempt
        self._accumulators = accumulators
        self._keyed_state_backend = keyed_state_backend
        self._job_parameters = job_parameters or {}

    def with_keyed_state(self, backend: "KeyedStateStore") -> "RuntimeContext":
        """The same subtask's context, with keyed state from ``backend`` (for keyed operators)."""
        return RuntimeContext(self._task_name, self._subtask, self._parallelism, self._attempt,
                              self._accumulators, keyed_state_backend=backend,
                              job_parameters=self._job_parameters)

    def _backend(self) -> "KeyedStateStore":
        if self._keyed_state_backend is None:
            raise RuntimeError(KEYED_STATE_ERROR)
        return self._keyed_state_backend

    def get_state(self, state_descriptor: "ValueStateDescriptor") -> "ValueState":
        return self._backend().get_state(state_descriptor)

    def get_list_state(self, state_descriptor: "ListStateDescriptor") -> "ListState":
        return self._backend().get_list_state(state_descriptor)

    def get_map_state(self, state_descriptor: "MapStateDescriptor") -> "MapState":
        return self._backend().get_map_state(state_descriptor)

    def get_reducing_state(self, state_descriptor: "ReducingStateDescriptor") -> "ReducingState":
        return self._backend().get_reducing_state(state_descriptor)

    def get_aggregating_state(self, state_descriptor: "AggregatingStateDescriptor") -> "AggregatingState":
        return self._backend().get_aggregating_state(state_descriptor)

    def get_task_name(self) -> str:
        return self._task_name

    def get_index_of_this_subtask(self) -> int:
        return self._subtask

    def get_number_of_parallel_subtasks(self) -> int:
        return self._parallelism

    def get_job_parameter(self, key: str, default_value: str) -> str:
        """A global job parameter (``env.get_config().set_global_job_parameters``)."""
        return self._job_parameters.get(key, default_value)

    def get_max_number_of_parallel_subtasks(self) -> int:
        """Flink's default max parallelism of an operator (128 up to a parallelism of 85)."""
        return MAX_PARALLELISM

    def get_task_name_with_subtasks(self) -> str:
        """Flink's ``Map (1/2)#0``: the task's name, its subtask of all, its attempt."""
        return (f"{self._task_name} ({self._subtask + 1}/{self._parallelism})"
                f"#{self._attempt}")

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
    """A rich function: ``open(ctx)`` before the first record, ``close()`` after the last.

    Subscripting works as in PyFlink (``WindowFunction[tuple, tuple, str, TimeWindow]``)."""

    def __class_getitem__(cls, params: Any) -> type:
        """``WindowFunction[IN, OUT, KEY, W]`` as PyFlink's generic classes allow: the class."""
        return cls

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


class TimeDomain(enum.Enum):
    """Whether a timer fired on event time or processing time (PyFlink's TimeDomain)."""

    EVENT_TIME = 0
    PROCESSING_TIME = 1


class OutputTag:
    """A side output (PyFlink's OutputTag): ``OutputTag("late", Types.STRING())``."""

    def __init__(self, tag_id: str, type_info: Any = None) -> None:
        if not isinstance(tag_id, str) or not tag_id:
            raise ValueError(f"an OutputTag's tag_id must be a non-empty string, got {tag_id!r}")
        self.tag_id = tag_id
        self.type_info = type_info

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputTag) and other.tag_id == self.tag_id

    def __hash__(self) -> int:
        return hash(self.tag_id)

    def __repr__(self) -> str:
        return f"OutputTag({self.tag_id!r})"


def check_output_tag(tag: Any) -> OutputTag:
    """``tag`` if it is an OutputTag, else a clear TypeError."""
    if not isinstance(tag, OutputTag):
        raise TypeError(f"a side output needs an OutputTag, got {tag!r} ({type(tag).__name__})")
    return tag


class TimerService:
    """Time and timers of the current key (PyFlink's TimerService)."""

    def current_processing_time(self) -> int:
        return int(time.time() * 1000)

    def current_watermark(self) -> int:
        return MIN_WATERMARK

    def register_processing_time_timer(self, timestamp: int) -> None:
        raise RuntimeError(TIMERS_ERROR)

    def register_event_time_timer(self, timestamp: int) -> None:
        raise RuntimeError(TIMERS_ERROR)

    def delete_processing_time_timer(self, timestamp: int) -> None:
        raise RuntimeError(TIMERS_ERROR)

    def delete_event_time_timer(self, timestamp: int) -> None:
        raise RuntimeError(TIMERS_ERROR)


class ProcessFunction(Function):
    """``process_element(value, ctx)`` yields any number of outputs per record; yielding
    ``(output_tag, value)`` (or calling ``ctx.output(output_tag, value)``) emits to a side output."""

    class Context:
        """What ``process_element`` learns about the record (PyFlink's ProcessFunction.Context)."""

        _no_timers = TimerService()

        def __init__(self) -> None:
            self._key: Any = None
            self._timestamp: int | None = None
            self._side: list[tuple[OutputTag, Any]] = []

        def get_current_key(self) -> Any:
            return self._key

        def timestamp(self) -> int | None:
            """The current record's timestamp (None when it has none)."""
            return self._timestamp

        def timer_service(self) -> TimerService:
            return self._no_timers

        def output(self, output_tag: OutputTag, value: Any) -> None:
            """Emit ``value`` to the side output ``output_tag``."""
            self._side.append((check_output_tag(output_tag), value))

    def process_element(self, value: Any, ctx: "ProcessFunction.Context") -> Iterable[Any]:
        raise NotImplementedError


class KeyedProcessFunction(ProcessFunction):
    """A ProcessFunction on a KeyedStream: keyed state, ``ctx.get_current_key()``, timers and
    ``on_timer(timestamp, ctx)``."""

    class Context(ProcessFunction.Context):
        pass

    class OnTimerContext(Context):
        def time_domain(self) -> TimeDomain:
            raise NotImplementedError

    def on_timer(self, timestamp: int, ctx: "KeyedProcessFunction.OnTimerContext") -> Iterable[Any]:
        return ()


class CoMapFunction(Function):
    """A map over two connected streams: ``map1`` for the first, ``map2`` for the second."""

    def map1(self, value: Any) -> Any:
        raise NotImplementedError

    def map2(self, value: Any) -> Any:
        raise NotImplementedError


class CoFlatMapFunction(Function):
    def flat_map1(self, value: Any) -> Iterable[Any]:
        raise NotImplementedError

    def flat_map2(self, value: Any) -> Iterable[Any]:
        raise NotImplementedError


class CoProcessFunction(Function):
    """``process_element1/2(value, ctx)`` for the two inputs of a ConnectedStreams."""

    Context = ProcessFunction.Context

    def process_element1(self, value: Any, ctx: ProcessFunction.Context) -> Iterable[Any]:
        raise NotImplementedError

    def process_element2(self, value: Any, ctx: ProcessFunction.Context) -> Iterable[Any]:
        raise NotImplementedError


class KeyedCoProcessFunction(Function):
    """CoProcessFunction on keyed connected streams: shared keyed state and timers."""

    Context = KeyedProcessFunction.Context
    OnTimerContext = KeyedProcessFunction.OnTimerContext

    def process_element1(self, value: Any, ctx: KeyedProcessFunction.Context) -> Iterable[Any]:
        raise NotImplementedError

    def process_element2(self, value: Any, ctx: KeyedProcessFunction.Context) -> Iterable[Any]:
        raise NotImplementedError

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Iterable[Any]:
        return ()


class AggregateFunction(Function):
    """Incremental aggregation (PyFlink's AggregateFunction)."""

    def create_accumulator(self) -> Any:
        raise NotImplementedError

    def add(self, value: Any, accumulator: Any) -> Any:
        raise NotImplementedError

    def get_result(self, accumulator: Any) -> Any:
        raise NotImplementedError

    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        raise NotImplementedError


class WindowFunction(Function):
    """``apply(key, window, inputs)`` yields the outputs of one window of one key."""

    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        raise NotImplementedError


class AllWindowFunction(Function):
    """``apply(window, inputs)`` for ``window_all``."""

    def apply(self, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        raise NotImplementedError


class WindowContext:
    """What a ProcessWindowFunction learns about the window being fired (PyFlink's
    ProcessWindowFunction.Context)."""

    def __class_getitem__(cls, params: Any) -> type:
        """``WindowFunction[IN, OUT, KEY, W]`` as PyFlink's generic classes allow: the class."""
        return cls

    def window(self) -> Any:
        raise NotImplementedError

    def current_processing_time(self) -> int:
        return int(time.time() * 1000)

    def current_watermark(self) -> int:
        raise NotImplementedError

    def window_state(self) -> RuntimeContext:
        """Keyed state scoped to the key and this window."""
        raise NotImplementedError

    def global_state(self) -> RuntimeContext:
        """Keyed state scoped to the key, across windows."""
        raise NotImplementedError

    def output(self, output_tag: OutputTag, value: Any) -> None:
        raise NotImplementedError


class ProcessWindowFunction(Function):
    """``process(key, context, elements)`` yields the outputs of one window of one key."""

    Context = WindowContext

    def process(self, key: Any, context: WindowContext, elements: Iterable[Any]) -> Iterable[Any]:
        raise NotImplementedError

    def clear(self, context: WindowContext) -> None:
        pass


class ProcessAllWindowFunction(Function):
    """``process(context, elements)`` for ``window_all``."""

    Context = WindowContext

    def process(self, context: WindowContext, elements: Iterable[Any]) -> Iterable[Any]:
        raise NotImplementedError

    def clear(self, context: WindowContext) -> None:
        pass


class KeySelector(Function):
    def get_key(self, value: Any) -> Any:
        raise NotImplementedError


class Partitioner(Function):
    """The subtask a record goes to by its key (``DataStream.partition_custom``)."""

    def partition(self, key: Any, num_partitions: int) -> int:
        raise NotImplementedError


class CustomPartitioning:
    """A ``partition_custom`` edge's channel: the partitioner (a Partitioner or a function of
    ``(key, num_partitions)``) applied to the key the key selector gives."""

    def __init__(self, partitioner: Any, key_selector: Any) -> None:
        self.partition = partitioner.partition if isinstance(partitioner, Partitioner) \
            else partitioner
        self.key_of = as_callable(key_selector)

    def __call__(self, record: Any) -> Any:
        """The record's key."""
        return self.key_of(record)

    def channel(self, record: Any, num_partitions: int) -> int:
        """The subtask ``record`` goes to, checked to be one of ``num_partitions``."""
        key = self.key_of(record)
        target = self.partition(key, num_partitions)
        if not isinstance(target, int) or not 0 <= target < num_partitions:
            raise ValueError(f"partition_custom: the partitioner returned {target!r} for the key "
                             f"{key!r}; a partition is an int in [0, {num_partitions})")
        return target


class NullByteKeySelector(KeySelector):
    """The one key of every record (Flink's NullByteKeySelector): a non-keyed window
    (``window_all``) is a keyed window over this constant key, in one subtask."""

    def get_key(self, value: Any) -> Any:
        return 0


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
    """``KeyedStream.sum/min/max(pos)``: a reduce over field ``pos`` (an index, or a name of a
    Row or dict) of tuples, lists, Rows or dicts; of a plain value (``pos`` 0 or None, PyFlink's
    "basic type") the value itself. The other fields come from the first record, as in Flink's
    aggregations."""

    combine: Callable[[Any, Any], Any] = staticmethod(lambda x, y: x + y)

    def __init__(self, position: int | str | None) -> None:
        if position is not None and not isinstance(position, (int, str)):
            raise TypeError("The field position must be of int or str type to locate the value "
                            "to calculate for min, max, min_by, max_by and sum.The given type "
                            f"is: {type(position)}")
        self.position = position

    def __call__(self, a: Any, b: Any) -> Any:
        if self._whole(a):
            return self.combine(a, b)
        p = self.position
        return self._with(a, self.combine(a[p], b[p]))

    def _whole(self, record: Any) -> bool:
        """Whether the aggregation is of the record itself (a plain value)."""
        if self.position is None:
            return True
        if isinstance(record, (tuple, list, dict)) or hasattr(record, "get_row_kind"):
            return False
        if self.position != 0:  # PyFlink's message
            raise TypeError(f"The {self.position} field selected on a basic type. A field "
                            "expression on a basic type can only select the 0th field (which "
                            "means selecting the entire basic type).")
        return True

    def _with(self, record: Any, value: Any) -> Any:
        """``record`` with field ``position`` replaced by ``value``."""
        p = self.position
        if p is None:
            return value
        if isinstance(record, tuple):
            return record[:p] + (value,) + record[p + 1 :]  # type: ignore[operator,index]
        if isinstance(record, list):
            return record[:p] + [value] + record[p + 1 :]  # type: ignore[operator,index]
        if isinstance(record, dict):
            out = dict(record)
            out[p] = value
            return out
        row = copy.copy(record)  # a Row: its values copied, its names and kind kept
        row[p] = value
        return row

    def combine_by_key(self, records: Iterable[Any],
                       key_selector: Callable[[Any], Any]) -> tuple[dict[Any, Any], int]:
        """The map-side combine: key -> the key's aggregated record, and how many records came
        in. The same result as reducing with ``self``, without a call to it per record."""
        first, records = _peeked(records)
        if first is None:
            return {}, 0
        combine = self.combine
        if self._whole(first):
            return reduce_by_key(records, key_selector, combine)
        values: dict[Any, Any] = {}
        n = 0
        p = self.position
        firsts: dict[Any, Any] = {}
        for n, rec in enumerate(records, 1):  # noqa: B007 (n is the count after the loop)
            key = key_selector(rec)
            if key in values:
                values[key] = combine(values[key], rec[p])
            else:
                values[key] = rec[p]
                firsts[key] = rec
        return {k: self._with(firsts[k], v) for k, v in values.items()}, n


def reduce_by_key(records: Iterable[Any], key_selector: Callable[[Any], Any],
                  reduce: Callable[[Any, Any], Any]) -> tuple[dict[Any, Any], int]:
    """Each key's records reduced pairwise in arrival order, and how many records came in."""
    values: dict[Any, Any] = {}
    n = 0
    for n, rec in enumerate(records, 1):  # noqa: B007 (n is the count after the loop)
        key = key_selector(rec)
        values[key] = reduce(values[key], rec) if key in values else rec
    return values, n


def _peeked(records: Iterable[Any]) -> tuple[Any, Iterator[Any]]:
    """The first record (None: there is none) and all of them, the first included."""
    records = iter(records)
    first = next(records, None)
    return first, itertools.chain((first,), records) if first is not None else records


class FieldSum(FieldAggregation):
    combine = staticmethod(lambda x, y: x + y)

    def combine_by_key(self, records: Iterable[Any],
                       key_selector: Callable[[Any], Any]) -> tuple[dict[Any, Any], int]:
        p = self.position
        first, records = _peeked(records)
        if first is None:
            return {}, 0
        if self._whole(first):
            return super().combine_by_key(records, key_selector)
        # the hot loop of every word count: += instead of a call per record
        sums: dict[Any, Any] = {}
        firsts: dict[Any, Any] = {}
        n = 0
        for n, rec in enumerate(records, 1):  # noqa: B007 (n is the count after the loop)
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


class FieldMinBy(FieldAggregation):
    """``KeyedStream.min_by(pos)``: the record with the smallest field ``pos``, the first one
    of equal ones (PyFlink's ``AccumulateType.MIN_BY``)."""

    def __call__(self, a: Any, b: Any) -> Any:
        if self._whole(a):
            return b if b < a else a
        p = self.position
        return b if b[p] < a[p] else a

    def combine_by_key(self, records: Iterable[Any],
                       key_selector: Callable[[Any], Any]) -> tuple[dict[Any, Any], int]:
        return reduce_by_key(records, key_selector, self)


class FieldMaxBy(FieldMinBy):
    """``KeyedStream.max_by(pos)``: the record with the largest field ``pos``, the first one
    of equal ones."""

    def __call__(self, a: Any, b: Any) -> Any:
        if self._whole(a):
            return b if b > a else a
        p = self.position
        return b if b[p] > a[p] else a
