"""A BATCH keyed operator's input one key at a time (``runtime.sorting.KeyedInput``): grouped in
memory or sorted and spilled to disk in runs, with the same keys, in the same order, with the
same records; checked against the dict's grouping on random inputs, with keys of equal hash, and
through the operators (one and two inputs, timers, windows, window partials)."""

from __future__ import annotations

import math
import random
from typing import Any, Iterable

import cloudpickle
import pytest

from sessioncluster.api.functions import (
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
)
from sessioncluster.api.state import ListStateDescriptor, ValueStateDescriptor
from sessioncluster.api.window import EventTimeSessionWindows, TumblingEventTimeWindows
from sessioncluster.common.time import Time
from sessioncluster.runtime.batch_driver import run as run_batch
from sessioncluster.runtime.operators import (
    KeyedCoProcessOperator,
    KeyedProcessOperator,
    WindowOperator,
    WindowPreAggregator,
    open_function,
)
from sessioncluster.runtime.sorting import KeyedInput, group_by_key

#: records per spilled run; None: all in memory (the limit is far away)
RUNS = [None, 1, 3, 64]


class Colliding:
    """A key whose hash is that of every other ``Colliding``: distinct keys, one hash."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        return 7

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Colliding) and other.name == self.name

    def __repr__(self) -> str:
        return f"Colliding({self.name!r})"


def random_records(seed: int, n: int, keys: list[Any]) -> list[tuple[Any, Any, int]]:
    """(key, timestamp or None, arrival index): timestamps repeat, so stability shows."""
    rng = random.Random(seed)
    return [(rng.choice(keys), rng.choice([None, -3, 0, 1, 2, 5, 9]), i) for i in range(n)]


def grouped(records: list[Any], run_records: int | None, key_at: int = 0,
            ts_at: int = 1) -> tuple[list[tuple[Any, list[Any]]], int]:
    keyed = KeyedInput(key_at, ts_at, memory_mb=1 << 20, run_records=run_records)
    out = [(key, list(recs)) for key, recs in keyed.groups(iter(records))]
    return out, keyed.spilled_runs


# -1 and -2 have one hash in CPython (-1 is the C API's error value); so do the Colliding ones
KEY_SETS = {"strings": ["a", "b", "c", "d", "e"],
            "mixed": ["a", 1, (1, "x"), -1, -2, None, 2.5, frozenset({3})],
            "colliding": [Colliding("p"), Colliding("q"), Colliding("r"), -1, -2, "s"]}


@pytest.mark.parametrize("keys", list(KEY_SETS))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_spilled_or_not_the_keys_and_records_are_the_dicts(keys: str, seed: int) -> None:
    records = random_records(seed, 400, KEY_SETS[keys])
    reference = group_by_key(iter(records), 0, 1)
    in_memory, spilled = grouped(records, None)
    assert in_memory == list(reference.items()) and spilled == 0
    first: list[Any] = []
    for run_records in RUNS[1:]:
        out, spilled = grouped(records, run_records)
        assert spilled == -(-len(records) // run_records) - (len(records) % run_records != 0)
        assert dict(out) == reference
        assert len(out) == len(reference)  # each key once, colliding or not
        assert out == (first or out)  # spilled: keys in one order (by hash) however many runs
        first = out


def test_a_keys_records_come_by_timestamp_none_first_then_in_arrival_order() -> None:
    records = random_records(5, 300, ["a", "b"])
    for run_records in RUNS:
        for key, recs in grouped(records, run_records)[0]:
            expected = sorted((r for r in records if r[0] == key),
                              key=lambda r: (-math.inf if r[1] is None else r[1], r[2]))
            assert recs == expected


def test_spilled_keys_come_in_hash_order() -> None:
    records = random_records(9, 200, list(range(-20, 20)))
    for run_records in RUNS[1:]:
        keys = [k for k, _ in grouped(records, run_records)[0]]
        assert [hash(k) for k in keys] == sorted(hash(k) for k in keys)


def test_values_only_cloudpickle_can_pickle_spill() -> None:
    def local(x: int) -> int:
        return x

    records = [("k", i, local) for i in range(10)]
    out, spilled = grouped(records, 3)
    assert spilled == 3
    assert [r[0] for r in out[0][1]] == ["k"] * 10
    assert [r[2](4) for r in out[0][1]] == [4] * 10


def test_spilled_records_of_a_key_are_read_as_the_operator_goes() -> None:
    """Past the limit a key's records are an iterator over the merged runs, not a list."""
    records = [("hot", i % 7, i) for i in range(50)]
    keyed = KeyedInput(0, 1, memory_mb=1 << 20, run_records=8)
    groups = keyed.groups(iter(records))
    key, recs = next(groups)
    assert key == "hot" and not isinstance(recs, list)
    assert [r[2] for r in recs] == [r[2] for r in sorted(records, key=lambda r: r[1])]
    assert next(groups, None) is None and keyed.spilled_runs == 6


# -- through the operators ----------------------------------------------------------------------

def run_both(make: Any, records: list[Any], monkeypatch: pytest.MonkeyPatch, key: Any,
             partials: bool = False) -> list[Any]:
    """The operator's output in memory, and spilling every 1 / 3 / 64 records: the same output
    records of each key (``key`` of an output record), in the same order."""
    outputs = []
    for run_records in RUNS:
        monkeypatch.setattr(KeyedInput, "run_records", run_records)
        op = cloudpickle.loads(cloudpickle.dumps(make()))
        open_function(op, RuntimeContext("op", 0, 1, 0, {}))
        outputs.append(list(run_batch(op, iter(records), partials=partials)))
        op.close()
    for out in outputs[1:]:
        assert per_key(out, key) == per_key(outputs[0], key)
        assert out == outputs[1]
    return outputs[0]


def per_key(out: list[Any], key: Any) -> dict[Any, list[Any]]:
    got: dict[Any, list[Any]] = {}
    for rec in out:
        got.setdefault(key(rec), []).append(rec)
    return got


class CountWithTimeout(KeyedProcessFunction):
    """State and an event-time timer per key: the count and last timestamp at the key's end."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("count", None))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        count, _ = self.state.value() or (0, None)
        self.state.update((count + 1, ctx.timestamp()))
        ctx.timer_service().register_event_time_timer((ctx.timestamp() or 0) + 100)
        yield ("seen", ctx.get_current_key(), value)

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Any:
        yield ("timer", ctx.get_current_key(), timestamp, self.state.value())


def test_a_keyed_process_function_spilled_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    records = random_records(11, 500, KEY_SETS["colliding"] + ["t", "u"])
    out = run_both(lambda: KeyedProcessOperator(CountWithTimeout()), records, monkeypatch,
                   lambda r: r[2][1])
    counts: dict[Any, int] = {}
    for key, _, _ in records:
        counts[key] = counts.get(key, 0) + 1
    finals = {v[1]: v[3][0] for _, _, v in out if v[0] == "timer" and v[2] == max(
        (t or 0) + 100 for k, t, _ in records if k == v[1])}
    assert finals == counts  # each key's state counted all its records, once


class Join(KeyedCoProcessFunction):
    def open(self, rc: RuntimeContext) -> None:
        self.left = rc.get_list_state(ListStateDescriptor("left"))

    def process_element1(self, value: Any, ctx: Any) -> Any:
        self.left.add(value)
        return ()

    def process_element2(self, value: Any, ctx: Any) -> Any:
        for v in self.left.get():
            yield (ctx.get_current_key(), v, value)


def test_a_two_input_operator_spilled_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(4)
    keys = KEY_SETS["colliding"]
    records = [(rng.randrange(2), rng.choice(keys), rng.choice([None, 1, 2, 3]), i)
               for i in range(300)]
    out = run_both(lambda: KeyedCoProcessOperator(Join()), records, monkeypatch,
                   lambda r: r[2][0])
    assert out  # left records before right ones of the same key joined


class Sum(ReduceFunction):
    def reduce(self, a: Any, b: Any) -> Any:
        return (a[0], a[1] + b[1])


class Describe(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        w = context.window()
        yield key, w.start, w.end, sorted(e[1] for e in elements)


def window_records(seed: int, n: int = 400) -> list[tuple[Any, int, tuple[Any, int]]]:
    rng = random.Random(seed)
    keys = KEY_SETS["colliding"]
    out = []
    for i in range(n):
        k = rng.choice(keys)
        out.append((k, rng.randint(-50, 50), (k, i)))
    return out


@pytest.mark.parametrize("make", [
    lambda: WindowOperator(TumblingEventTimeWindows.of(Time.milliseconds(10)), "reduce", Sum()),
    lambda: WindowOperator(TumblingEventTimeWindows.of(Time.milliseconds(10)), "process", Describe()),
    lambda: WindowOperator(EventTimeSessionWindows.with_gap(Time.milliseconds(3)), "process",
                           Describe()),
], ids=["reduce", "process", "session"])
def test_windows_spilled_or_not(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    out = run_both(make, window_records(6), monkeypatch, lambda r: r[2][0])
    assert out


def test_window_partials_spilled_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    make = lambda: WindowOperator(TumblingEventTimeWindows.of(Time.milliseconds(10)),  # noqa: E731
                                  "reduce", Sum())
    records = window_records(8)
    partials = []
    for share in (records[0::2], records[1::2]):
        combined, _ = WindowPreAggregator(make()).combine(iter((t, v) for _, t, v in share),
                                                          lambda v: v[0], True)
        partials += [(k, w.max_timestamp(), (w, p)) for (k, w), p in combined.items()]
    out = run_both(make, partials, monkeypatch, lambda r: r[2][0], partials=True)
    sums: dict[tuple[Any, int], int] = {}
    for k, t, (_, i) in records:
        start = t - t % 10
        sums[(k, start)] = sums.get((k, start), 0) + i
    assert sorted(((v[0].name if isinstance(v[0], Colliding) else str(v[0])), ts, v[1])
                  for _, ts, v in out) == sorted(
        ((k.name if isinstance(k, Colliding) else str(k)), s + 9, total)
        for (k, s), total in sums.items())
