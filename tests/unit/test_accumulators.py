"""Accumulators: local add, merge, wire form, and merging snapshots by name."""

from __future__ import annotations

import math

import pytest

from sessioncluster.api.accumulators import (
    Accumulator,
    AverageAccumulator,
    DoubleCounter,
    DoubleMaximum,
    DoubleMinimum,
    Histogram,
    IntCounter,
    IntMaximum,
    IntMinimum,
    ListAccumulator,
    LongCounter,
    merge_snapshots,
    snapshot,
)

# class, values added to a, values added to b, a's value, a's value after a.merge(b)
CASES = [
    (IntCounter, [1, 2, 3], [10], 6, 16),
    (LongCounter, [2**40, 1], [2**40], 2**40 + 1, 2**41 + 1),
    (DoubleCounter, [0.5, 1.25], [2.0], 1.75, 3.75),
    (IntMaximum, [3, -7, 5], [9, 1], 5, 9),
    (IntMinimum, [3, -7, 5], [-9, 100], -7, -9),
    (DoubleMaximum, [0.5, -1.5], [0.25], 0.5, 0.5),
    (DoubleMinimum, [0.5, -1.5], [-2.5], -1.5, -2.5),
    (AverageAccumulator, [1, 2, 3], [10], 2.0, 4.0),
    (Histogram, [1, 1, 2], [2, 3], {1: 2, 2: 1}, {1: 2, 2: 2, 3: 1}),
    (ListAccumulator, [1, "a"], [None], [1, "a"], [1, "a", None]),
]
IDS = [c[0].__name__ for c in CASES]


def filled(cls, values):
    acc = cls()
    for v in values:
        acc.add(v)
    return acc


@pytest.mark.parametrize("cls,xs,ys,local,merged", CASES, ids=IDS)
def test_add_merge_get_local_value(cls, xs, ys, local, merged):
    a, b = filled(cls, xs), filled(cls, ys)
    assert a.get_local_value() == local
    a.merge(b)
    assert a.get_local_value() == merged
    # the merged-in accumulator is unchanged
    assert b.get_local_value() == filled(cls, ys).get_local_value()


@pytest.mark.parametrize("cls,xs,ys,local,merged", CASES, ids=IDS)
def test_wire_round_trip(cls, xs, ys, local, merged):
    acc = filled(cls, xs)
    kind, value = acc.to_wire()
    assert kind == cls.kind
    back = Accumulator.from_wire(kind, value)
    assert type(back) is cls
    assert back.get_local_value() == local
    # the restored accumulator keeps merging correctly
    back.merge(filled(cls, ys))
    assert back.get_local_value() == merged


@pytest.mark.parametrize("cls,xs,ys,local,merged", CASES, ids=IDS)
def test_reset_local(cls, xs, ys, local, merged):
    acc = filled(cls, xs)
    acc.reset_local()
    assert acc.get_local_value() == cls().get_local_value()
    acc.add(ys[0])
    assert acc.get_local_value() == filled(cls, ys[:1]).get_local_value()


def test_initial_values():
    assert IntCounter().get_local_value() == 0
    assert DoubleCounter().get_local_value() == 0.0
    assert IntMaximum().get_local_value() == -(2**31)
    assert IntMinimum().get_local_value() == 2**31 - 1
    assert DoubleMaximum().get_local_value() == -math.inf
    assert DoubleMinimum().get_local_value() == math.inf
    assert AverageAccumulator().get_local_value() == 0.0
    assert Histogram().get_local_value() == {}
    assert ListAccumulator().get_local_value() == []


def test_int_counter_default_add_is_one():
    c = IntCounter()
    c.add()
    c.add()
    assert c.get_local_value() == 2


def test_unknown_kind_is_rejected():
    with pytest.raises(ValueError, match="unknown accumulator kind"):
        Accumulator.from_wire("NoSuchCounter", 1)


def test_list_value_is_a_copy():
    acc = filled(ListAccumulator, [1])
    acc.get_local_value().append(2)
    assert acc.get_local_value() == [1]


def test_merge_snapshots_across_three_subtasks():
    subtasks = [
        {"lines": filled(IntCounter, [1] * 3), "max": filled(IntMaximum, [4]),
         "avg": filled(AverageAccumulator, [1, 2, 3]), "hist": filled(Histogram, [1, 2])},
        {"lines": filled(IntCounter, [1] * 5), "max": filled(IntMaximum, [11]),
         "avg": filled(AverageAccumulator, [10]), "only_here": filled(ListAccumulator, ["x"])},
        {"lines": filled(IntCounter, [1] * 7), "max": filled(IntMaximum, [-3]),
         "hist": filled(Histogram, [2, 2, 5])},
    ]
    merged = merge_snapshots([snapshot(s) for s in subtasks])
    assert {k: v.get_local_value() for k, v in merged.items()} == {
        "lines": 15, "max": 11, "avg": 4.0,
        "hist": {1: 1, 2: 3, 5: 1}, "only_here": ["x"]}
    # merging does not alter the snapshots' source accumulators
    assert subtasks[0]["lines"].get_local_value() == 3


def test_merge_snapshots_of_nothing():
    assert merge_snapshots([]) == {}
    assert merge_snapshots([{}, {}]) == {}


@pytest.mark.parametrize("a,b", [(IntCounter, DoubleCounter), (IntCounter, LongCounter),
                                 (IntMaximum, IntMinimum), (ListAccumulator, Histogram)])
def test_two_kinds_under_one_name_raise(a, b):
    snaps = [snapshot({"n": filled(a, [1])}), snapshot({"n": filled(b, [1])})]
    with pytest.raises(TypeError, match="'n'"):
        merge_snapshots(snaps)


def test_average_merges_count_and_total_not_averages():
    a = filled(AverageAccumulator, [1, 2, 3])  # mean 2, 3 values
    b = filled(AverageAccumulator, [10])  # mean 10, 1 value
    a.merge(b)
    assert (a.count, a.total) == (4, 16.0)
    assert a.get_local_value() == 4.0
    assert a.get_local_value() != (2.0 + 10.0) / 2
    merged = merge_snapshots([snapshot({"avg": filled(AverageAccumulator, [1, 2, 3])}),
                              snapshot({"avg": filled(AverageAccumulator, [10])})])
    assert merged["avg"].get_local_value() == 4.0
    assert AverageAccumulator().to_wire() == ("AverageAccumulator", (0, 0.0))
