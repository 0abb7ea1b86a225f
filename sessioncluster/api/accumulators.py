"""Accumulators with Flink's names, merged by name across subtasks.

An accumulator lives in one subtask attempt; its value travels to the JobMaster in TaskManager
heartbeats (live) and in the attempt's final report. The JobMaster merges the final values of
the successful attempts only, so a retried subtask is never counted twice.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, ClassVar, Generic, TypeVar

V = TypeVar("V")


class Accumulator(Generic[V]):
    """Base class: ``add`` a value locally, ``merge`` another accumulator of the same kind."""

    kind: ClassVar[str] = ""
    _registry: ClassVar[dict[str, type["Accumulator[Any]"]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.kind:
            Accumulator._registry[cls.kind] = cls

    def add(self, value: Any) -> None:
        raise NotImplementedError

    def get_local_value(self) -> V:
        raise NotImplementedError

    def merge(self, other: "Accumulator[V]") -> None:
        raise NotImplementedError

    def reset_local(self) -> None:
        raise NotImplementedError

    # -- transport: a plain (kind, state) pair, so no pickle is needed on the wire
    def to_wire(self) -> tuple[str, Any]:
        return self.kind, self.get_local_value()

    @classmethod
    def from_wire(cls, kind: str, value: Any) -> "Accumulator[Any]":
        try:
            acc_cls = Accumulator._registry[kind]
        except KeyError:
            raise ValueError(f"unknown accumulator kind {kind!r}") from None
        acc = acc_cls()
        acc._set_local_value(value)
        return acc

    def _set_local_value(self, value: Any) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.get_local_value()!r})"


class _Simple(Accumulator[V]):
    """An accumulator whose state is one number."""

    initial: ClassVar[Any] = 0

    def __init__(self, value: Any = None) -> None:
        self.value = self.initial if value is None else value

    def get_local_value(self) -> V:
        return self.value

    def _set_local_value(self, value: Any) -> None:
        self.value = value

    def reset_local(self) -> None:
        self.value = self.initial


class IntCounter(_Simple[int]):
    kind = "IntCounter"

    def add(self, value: int = 1) -> None:
        self.value += int(value)

    def merge(self, other: Accumulator[int]) -> None:
        self.value += other.get_local_value()


class LongCounter(IntCounter):
    kind = "LongCounter"


class DoubleCounter(_Simple[float]):
    kind = "DoubleCounter"
    initial = 0.0

    def add(self, value: float = 1.0) -> None:
        self.value += float(value)

    def merge(self, other: Accumulator[float]) -> None:
        self.value += other.get_local_value()


class IntMaximum(_Simple[int]):
    kind = "IntMaximum"
    initial = -(2**31)

    def add(self, value: int) -> None:
        self.value = max(self.value, int(value))

    def merge(self, other: Accumulator[int]) -> None:
        self.value = max(self.value, other.get_local_value())


class IntMinimum(_Simple[int]):
    kind = "IntMinimum"
    initial = 2**31 - 1

    def add(self, value: int) -> None:
        self.value = min(self.value, int(value))

    def merge(self, other: Accumulator[int]) -> None:
        self.value = min(self.value, other.get_local_value())


class DoubleMaximum(_Simple[float]):
    kind = "DoubleMaximum"
    initial = -math.inf

    def add(self, value: float) -> None:
        self.value = max(self.value, float(value))

    def merge(self, other: Accumulator[float]) -> None:
        self.value = max(self.value, other.get_local_value())


class DoubleMinimum(_Simple[float]):
    kind = "DoubleMinimum"
    initial = math.inf

    def add(self, value: float) -> None:
        self.value = min(self.value, float(value))

    def merge(self, other: Accumulator[float]) -> None:
        self.value = min(self.value, other.get_local_value())


class AverageAccumulator(Accumulator[float]):
    """Flink's AverageAccumulator: the mean of every value added anywhere."""

    kind = "AverageAccumulator"

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0

    def add(self, value: float) -> None:
        self.count += 1
        self.total += float(value)

    def get_local_value(self) -> float:
        return self.total / self.count if self.count else 0.0

    def to_wire(self) -> tuple[str, Any]:
        return self.kind, (self.count, self.total)

    def _set_local_value(self, value: Any) -> None:
        self.count, self.total = value

    def merge(self, other: Accumulator[float]) -> None:
        assert isinstance(other, AverageAccumulator)
        self.count += other.count
        self.total += other.total

    def reset_local(self) -> None:
        self.count, self.total = 0, 0.0


class Histogram(Accumulator[dict[int, int]]):
    """Flink's Histogram: how often each integer value was added."""

    kind = "Histogram"

    def __init__(self) -> None:
        self.counts: Counter[int] = Counter()

    def add(self, value: int) -> None:
        self.counts[int(value)] += 1

    def get_local_value(self) -> dict[int, int]:
        return dict(sorted(self.counts.items()))

    def to_wire(self) -> tuple[str, Any]:
        return self.kind, sorted(self.counts.items())

    def _set_local_value(self, value: Any) -> None:
        self.counts = Counter({int(k): int(v) for k, v in value})

    def merge(self, other: Accumulator[dict[int, int]]) -> None:
        assert isinstance(other, Histogram)
        self.counts.update(other.counts)

    def reset_local(self) -> None:
        self.counts.clear()


class ListAccumulator(Accumulator[list[Any]]):
    """Flink's ListAccumulator: every value added, in no particular order across subtasks."""

    kind = "ListAccumulator"

    def __init__(self) -> None:
        self.values: list[Any] = []

    def add(self, value: Any) -> None:
        self.values.append(value)

    def get_local_value(self) -> list[Any]:
        return list(self.values)

    def _set_local_value(self, value: Any) -> None:
        self.values = list(value)

    def merge(self, other: Accumulator[list[Any]]) -> None:
        self.values.extend(other.get_local_value())

    def reset_local(self) -> None:
        self.values.clear()


WireAccumulators = dict[str, tuple[str, Any]]


def snapshot(accumulators: dict[str, Accumulator[Any]]) -> WireAccumulators:
    """The wire form of a subtask's accumulators."""
    return {name: acc.to_wire() for name, acc in accumulators.items()}


def merge_snapshots(snapshots: list[WireAccumulators]) -> dict[str, Accumulator[Any]]:
    """Merge the wire forms of several subtasks by accumulator name."""
    merged: dict[str, Accumulator[Any]] = {}
    for snap in snapshots:
        for name, (kind, value) in snap.items():
            acc = Accumulator.from_wire(kind, value)
            if name not in merged:
                merged[name] = acc
            elif type(merged[name]) is not type(acc):
                raise TypeError(
                    f"accumulator {name!r} is a {type(merged[name]).__name__} in one subtask "
                    f"and a {type(acc).__name__} in another"
                )
            else:
                merged[name].merge(acc)
    return merged
