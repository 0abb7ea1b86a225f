"""Keyed state: every state kind through the RuntimeContext, scoped to the current key."""

from __future__ import annotations

from typing import Any

import pytest

from sessioncluster.common.time import Time
from sessioncluster.api.functions import AggregateFunction, FlatMapFunction, MapFunction, RuntimeContext
from sessioncluster.runtime.batch_driver import run as run_batch
from sessioncluster.runtime.operators import KeyedFunctionOperator, ProcessOperator, open_function
from sessioncluster.runtime.state_backend import KeyedStateBackend
from sessioncluster.api.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)


def ctx() -> RuntimeContext:
    return RuntimeContext("op", 0, 1, 0, {})


def run(op: Any, records: list[Any]) -> list[Any]:
    open_function(op, ctx())
    out = list(run_batch(op, iter(records)))
    op.close()
    return out


class CountWindowAverage(FlatMapFunction):
    """The state example of Flink's docs ("Working with State", Python tab)."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.sum = runtime_context.get_state(ValueStateDescriptor("average", None))

    def flat_map(self, value: Any) -> Any:
        current_sum = self.sum.value()
        if current_sum is None:
            current_sum = (0, 0)
        current_sum = (current_sum[0] + 1, current_sum[1] + value[1])
        self.sum.update(current_sum)
        if current_sum[0] >= 2:
            self.sum.clear()
            yield value[0], int(current_sum[1] / current_sum[0])


def test_the_documented_value_state_example() -> None:
    # the docs: "the printed output will be (1,4) and (1,5)"
    rows = [(1, 3), (1, 5), (1, 7), (1, 4), (1, 2)]
    out = run(KeyedFunctionOperator("flat_map", CountWindowAverage()), [(r[0], None, r) for r in rows])
    assert [v for _, _, v in out] == [(1, 4), (1, 5)]


def test_value_state_is_per_key() -> None:
    class Running(MapFunction):
        def open(self, rc: RuntimeContext) -> None:
            self.total = rc.get_state(ValueStateDescriptor("total"))

        def map(self, value: Any) -> Any:
            t = (self.total.value() or 0) + value[1]
            self.total.update(t)
            return value[0], t

    rows = [("a", 1), ("b", 10), ("a", 2), ("b", 20), ("a", 3)]
    out = run(KeyedFunctionOperator("map", Running()), [(r[0], None, r) for r in rows])
    expected: dict[str, list[int]] = {}
    acc: dict[str, int] = {}
    for k, v in rows:
        acc[k] = acc.get(k, 0) + v
        expected.setdefault(k, []).append(acc[k])
    got: dict[str, list[int]] = {}
    for _, _, (k, t) in out:
        got.setdefault(k, []).append(t)
    assert got == expected


def test_list_map_reducing_aggregating_state() -> None:
    class Avg(AggregateFunction):
        def create_accumulator(self) -> Any:
            return (0, 0)

        def add(self, value: Any, accumulator: Any) -> Any:
            return accumulator[0] + value, accumulator[1] + 1

        def get_result(self, accumulator: Any) -> Any:
            return accumulator[0] / accumulator[1]

        def merge(self, a: Any, b: Any) -> Any:
            return a[0] + b[0], a[1] + b[1]

    class All(FlatMapFunction):
        def open(self, rc: RuntimeContext) -> None:
            self.items = rc.get_list_state(ListStateDescriptor("items", None))
            self.counts = rc.get_map_state(MapStateDescriptor("counts", None, None))
            self.max = rc.get_reducing_state(ReducingStateDescriptor("max", max, None))
            self.avg = rc.get_aggregating_state(AggregatingStateDescriptor("avg", Avg(), None))

        def flat_map(self, value: Any) -> Any:
            _, v = value
            self.items.add(v)
            self.counts.put(v % 2, (self.counts.get(v % 2) or 0) + 1)
            self.max.add(v)
            self.avg.add(v)
            yield (list(self.items.get()), dict(self.counts.items()), self.max.get(), self.avg.get())

    rows = [("k", 4), ("j", 9), ("k", 1), ("k", 7)]
    out = [v for _, _, v in run(KeyedFunctionOperator("flat_map", All()), [(r[0], None, r) for r in rows])]
    assert out == [([4], {0: 1}, 4, 4.0), ([4, 1], {0: 1, 1: 1}, 4, 2.5), ([4, 1, 7], {0: 1, 1: 2}, 7, 4.0),
                   ([9], {1: 1}, 9, 9.0)]


def test_state_objects_api() -> None:
    backend = KeyedStateBackend()
    backend.set_current_key("a")
    lst = backend.get_list_state(ListStateDescriptor("l"))
    assert list(lst.get()) == []
    lst.add_all([1, 2])
    lst.update([3])
    assert list(lst) == [3]
    with pytest.raises(ValueError, match="null"):
        lst.add(None)
    m = backend.get_map_state(MapStateDescriptor("m"))
    assert m.is_empty() and m.get("x") is None
    m.put_all({"x": 1, "y": 2})
    m.remove("x")
    assert m.contains("y") and not m.contains("x") and list(m) == ["y"] and list(m.values()) == [2]
    r = backend.get_reducing_state(ReducingStateDescriptor("r", lambda a, b: a * b))
    assert r.get() is None
    r.add(3)
    r.add(4)
    backend.set_current_key("b")
    assert r.get() is None and list(lst.get()) == [] and m.is_empty()
    backend.set_current_key("a")
    assert r.get() == 12
    r.clear()
    assert r.get() is None
    backend.clear("a")
    assert list(lst.get()) == [] and m.is_empty()
    with pytest.raises(ValueError, match="already registered"):
        backend.get_list_state(ListStateDescriptor("r"))


def test_ttl_config_is_accepted() -> None:
    ttl = (StateTtlConfig.new_builder(Time.seconds(1))
           .set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)
           .set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)
           .cleanup_full_snapshot()
           .build())
    d = ValueStateDescriptor("v", None)
    d.enable_time_to_live(ttl)
    assert d.ttl_config is ttl and ttl.get_ttl() == Time.seconds(1) and ttl.is_enabled()
    with pytest.raises(TypeError):
        d.enable_time_to_live("1s")  # type: ignore[arg-type]


def test_keyed_state_on_a_non_keyed_operator_is_flinks_error() -> None:
    from sessioncluster.api.functions import ProcessFunction

    class Bad(ProcessFunction):
        def open(self, rc: RuntimeContext) -> None:
            rc.get_state(ValueStateDescriptor("v"))

    with pytest.raises(RuntimeError, match=r"Keyed state can only be used on a 'keyed stream'"):
        open_function(ProcessOperator(Bad()), ctx())
