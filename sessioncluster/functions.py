"""User function interfaces with PyFlink's names, and the RuntimeContext given to ``open``."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from .accumulators import Accumulator


class RuntimeContext:
    """What a rich function learns about the subtask it runs in (PyFlink's RuntimeContext)."""

    def __init__(self, task_name: str, subtask: int, parallelism: int, attempt: int,
                 accumulators: dict[str, Accumulator[Any]]) -> None:
        self._task_name = task_name
        self._subtask = subtask
        self._parallelism = parallelism
        self._attempt = attempt
        self._accumulators = accumulators

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


class ProcessFunction(Function):
    """``process_element(value, ctx)`` yields any number of outputs per record."""

    class Context:
        """What ``process_element`` learns about the record (PyFlink's ProcessFunction.Context)."""

        def __init__(self) -> None:
            self._key: Any = None

        def get_current_key(self) -> Any:
            return self._key

    def process_element(self, value: Any, ctx: "ProcessFunction.Context") -> Iterable[Any]:
        raise NotImplementedError


class KeyedProcessFunction(ProcessFunction):
    """A ProcessFunction on a KeyedStream: ``ctx.get_current_key()`` is the record's key.

    In BATCH mode the records of one key arrive together; timers are not supported.
    """


class KeySelector(Function):
    def get_key(self, value: Any) -> Any:
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
