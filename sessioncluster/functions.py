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


class KeySelector(Function):
    def get_key(self, value: Any) -> Any:
        raise NotImplementedError


_METHOD = {MapFunction: "map", FlatMapFunction: "flat_map", FilterFunction: "filter",
           ReduceFunction: "reduce", KeySelector: "get_key"}


def as_callable(fn: Any) -> Callable[..., Any]:
    """The plain callable behind a function or rich function object."""
    for cls, method in _METHOD.items():
        if isinstance(fn, cls):
            return getattr(fn, method)
    if callable(fn):
        return fn
    raise TypeError(f"{fn!r} is not callable nor a MapFunction/FlatMapFunction/... object")


class FieldSum:
    """``KeyedStream.sum(pos)``: a reduce that adds field ``pos`` of tuples (or a dict key)."""

    def __init__(self, position: int | str) -> None:
        self.position = position

    def __call__(self, a: Any, b: Any) -> Any:
        p = self.position
        if isinstance(a, tuple):
            return a[:p] + (a[p] + b[p],) + a[p + 1 :]  # type: ignore[operator]
        if isinstance(a, list):
            return a[:p] + [a[p] + b[p]] + a[p + 1 :]  # type: ignore[operator]
        out = dict(a)
        out[p] = a[p] + b[p]
        return out
