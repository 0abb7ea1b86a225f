"""Windows in BATCH mode, each checked against plain Python computing the expected result."""

from __future__ import annotations

import random
from typing import Any, Iterable

import cloudpickle
import pytest

from sessioncluster.common.time import Time
from sessioncluster.api.functions import (
    MAX_WATERMARK,
    AggregateFunction,
    AllWindowFunction,
    OutputTag,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
    WindowFunction,
)
from sessioncluster.runtime.batch_driver import run as run_batch
from sessioncluster.runtime.operators import AllWindowOperator, WindowOperator, open_function
from sessioncluster.api.state import ValueStateDescriptor
from sessioncluster.api.window import (
    CountEvictor,
    CountSlidingWindowAssigner,
    CountTrigger,
    CountTumblingWindowAssigner,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindows,
    PurgingTrigger,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    count_window_assigner,
)


def run(op: Any, records: list[Any]) -> list[Any]:
    if isinstance(op, AllWindowOperator):  # one constant key (NullByteKeySelector)
        records = [(0, ts, v) for ts, v in records]
    op = cloudpickle.loads(cloudpickle.dumps(op))
    open_function(op, RuntimeContext("window", 0, 1, 0, {}))
    out = list(run_batch(op, iter(records)))
    op.close()
    return out


def java_rem(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    q = -q if (a < 0) != (b < 0) else q
    return a - q * b


def java_window_start(ts: int, offset: int, size: int) -> int:
    """TimeWindow.getWindowStartWithOffset, transcribed from Flink's Java."""
    rem = java_rem(ts - offset, size)
    return ts - (rem + size) if rem < 0 else ts - rem


class Sum(ReduceFunction):
    def reduce(self, a: Any, b: Any) -> Any:
        return (a[0], a[1] + b[1])


class Avg(AggregateFunction):
    def create_accumulator(self) -> Any:
        return [0, 0]

    def add(self, value: Any, accumulator: Any) -> Any:
        return [accumulator[0] + value[1], accumulator[1] + 1]

    def get_result(self, accumulator: Any) -> Any:
        return accumulator[0] / accumulator[1]

    def merge(self, a: Any, b: Any) -> Any:
        return [a[0] + b[0], a[1] + b[1]]


class Collect(WindowFunction):
    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Any:
        return [(key, window.start, window.end, [v[1] for v in inputs])]


class KeyedResult(WindowFunction):
    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Any:
        (result,) = inputs
        yield (key, result)


class Describe(ProcessWindowFunction):
    def process(self, key: Any, context: ProcessWindowFunction.Context, elements: Iterable[Any]) -> Any:
        w = context.window()
        values = [e if not isinstance(e, tuple) else e[1] for e in elements]
        yield (key, getattr(w, "start", None), getattr(w, "end", None), w.max_timestamp(), values)


def random_records(seed: int, n: int = 400) -> list[tuple[str, int, tuple[str, int]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.choice("abcd")
        ts = rng.randint(-60, 60)  # negative timestamps too; input out of order
        out.append((k, ts, (k, rng.randint(1, 9))))
    return out


def expected_windows(records: list[Any], windows_of: Any) -> dict[str, list[tuple[int, int, list[Any]]]]:
    """key -> [(start, end, values in timestamp order)] by window end: computed without the operator."""
    per_key: dict[str, list[Any]] = {}
    for k, ts, v in records:
        per_key.setdefault(k, []).append((ts, v))
    out = {}
    for k, items in per_key.items():
        items.sort(key=lambda x: x[0])
        wins: dict[tuple[int, int], list[Any]] = {}
        for ts, v in items:
            for s, e in windows_of(ts):
                wins.setdefault((s, e), []).append(v[1])
        out[k] = [(s, e, vals) for (s, e), vals in sorted(wins.items(), key=lambda x: x[0][1])]
    return out


def by_key(out: list[Any]) -> dict[str, list[Any]]:
    got: dict[str, list[Any]] = {}
    for tag, ts, v in out:
        assert tag is None
        got.setdefault(v[0], []).append((ts, v))
    return got


@pytest.mark.parametrize("ts,offset,size", [(7, 0, 5), (-1, 0, 5), (-5, 0, 5), (-6, 2, 5), (3, -2, 5),
                                            (-7, -3, 4), (0, 0, 1), (10**12 + 3, 7, 1000)])
def test_window_start_with_offset_is_javas(ts: int, offset: int, size: int) -> None:
    start = TimeWindow.get_window_start_with_offset(ts, offset, size)
    assert start == java_window_start(ts, offset, size)
    assert start <= ts < start + size


@pytest.mark.parametrize("offset", [0, 3, -4])
@pytest.mark.parametrize("kind", ["reduce", "aggregate", "apply", "process"])
def test_tumbling_event_time_windows(kind: str, offset: int) -> None:
    recs = random_records(11 + offset)
    size = 10
    fn = {"reduce": Sum(), "aggregate": Avg(), "apply": Collect(), "process": Describe()}[kind]
    assigner = TumblingEventTimeWindows.of(Time.milliseconds(size),
                                           Time.milliseconds(offset) if offset else None)
    wf = KeyedResult() if kind == "aggregate" else None
    got = by_key(run(WindowOperator(assigner, kind, fn, window_function=wf), recs))

    def windows_of(ts: int) -> list[tuple[int, int]]:
        s = java_window_start(ts, offset, size)
        return [(s, s + size)]

    expected = expected_windows(recs, windows_of)
    assert set(got) == set(expected)
    for k, wins in expected.items():
        if kind == "reduce":
            want = [(e - 1, (k, sum(vals))) for s, e, vals in wins]
        elif kind == "aggregate":
            want = [(e - 1, (k, sum(vals) / len(vals))) for s, e, vals in wins]
        elif kind == "apply":
            want = [(e - 1, (k, s, e, vals)) for s, e, vals in wins]
        else:
            want = [(e - 1, (k, s, e, e - 1, vals)) for s, e, vals in wins]
        assert got[k] == want


def test_aggregate_per_window_in_window_end_order() -> None:
    recs = [("a", 12, ("a", 3)), ("a", 1, ("a", 1)), ("a", 4, ("a", 2)), ("a", -1, ("a", 7))]
    out = run(WindowOperator(TumblingEventTimeWindows.of(Time.milliseconds(10)), "aggregate", Avg()), recs)
    assert out == [(None, -1, 7.0), (None, 9, 1.5), (None, 19, 3.0)]


@pytest.mark.parametrize("offset", [0, 2])
def test_sliding_event_time_windows(offset: int) -> None:
    recs = random_records(5)
    size, slide = 15, 5
    assigner = SlidingEventTimeWindows.of(Time.milliseconds(size), Time.milliseconds(slide),
                                          Time.milliseconds(offset))
    got = by_key(run(WindowOperator(assigner, "apply", Collect()), recs))

    def windows_of(ts: int) -> list[tuple[int, int]]:
        return [(s, s + size) for s in range(ts - size - slide, ts + 1)
                if java_rem(s - offset, slide) == 0 and s <= ts < s + size]

    expected = expected_windows(recs, windows_of)
    for k, wins in expected.items():
        assert got[k] == [(e - 1, (k, s, e, vals)) for s, e, vals in wins]


def sessions(items: list[tuple[int, Any]], gap_of: Any) -> list[tuple[int, int, list[Any]]]:
    """Sessions of one key from sorted (ts, value) pairs: windows [ts, ts+gap) merge when they touch."""
    out: list[list[Any]] = []
    for ts, v in sorted(items, key=lambda x: x[0]):
        end = ts + gap_of(v)
        if out and ts <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
            out[-1][2].append(v)
        else:
            out.append([ts, end, [v]])
    return [(s, e, vals) for s, e, vals in out]


def test_event_time_session_windows_with_a_fixed_gap() -> None:
    recs = random_records(8, 200)
    recs = [(k, ts * 3, v) for k, ts, v in recs]
    got = by_key(run(WindowOperator(EventTimeSessionWindows.with_gap(Time.milliseconds(4)), "process",
                                    Describe()), recs))
    for k in "abcd":
        items = [(ts, v) for kk, ts, v in recs if kk == k]
        want = [(e - 1, (k, s, e, e - 1, [v[1] for v in vals]))
                for s, e, vals in sessions(items, lambda v: 4)]
        assert got[k] == want


class GapFromValue(SessionWindowTimeGapExtractor):
    def extract(self, element: Any) -> int:
        return element[1]


class CountWindowProcessFunction(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Any:
        return [(key, context.window().start, context.window().end, len([e for e in elements]))]


def test_the_dynamic_gap_session_example_of_pyflink() -> None:
    # flink-python/pyflink/examples/datastream/windowing/session_with_dynamic_gap_window.py
    data = [('hi', 1), ('hi', 2), ('hi', 3), ('hi', 4), ('hi', 9), ('hi', 9), ('hi', 15)]
    out = run(WindowOperator(EventTimeSessionWindows.with_dynamic_gap(GapFromValue()), "process",
                             CountWindowProcessFunction()), [(v[0], v[1], v) for v in data])
    assert [v for _, _, v in out] == [("hi", 1, 8, 4), ("hi", 9, 30, 3)]
    want = sessions([(v[1], v) for v in data], lambda v: v[1])
    assert [(s, e, len(vals)) for s, e, vals in want] == [(1, 8, 4), (9, 30, 3)]


def test_random_dynamic_gap_sessions_out_of_order() -> None:
    recs = random_records(21, 150)
    got = by_key(run(WindowOperator(EventTimeSessionWindows.with_dynamic_gap(lambda v: v[1]), "reduce", Sum(),
                                    window_function=Describe()), recs))
    for k in "abcd":
        items = [(ts, v) for kk, ts, v in recs if kk == k]
        want = [(e - 1, (k, s, e, e - 1, [sum(v[1] for v in vals)]))
                for s, e, vals in sessions(items, lambda v: v[1])]
        assert got[k] == want


class SumCount(WindowFunction):
    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Any:
        return [(key, sum(i[0] for i in inputs))]


def test_the_tumbling_count_window_example_of_pyflink() -> None:
    # flink-python/pyflink/examples/datastream/windowing/tumbling_count_window.py: the incomplete
    # last window of "hello" does not fire
    data = [(1, 'hi'), (2, 'hello'), (3, 'hi'), (4, 'hello'), (5, 'hi'), (6, 'hello'), (6, 'hello')]
    out = run(WindowOperator(count_window_assigner(3), "apply", SumCount()), [(v[1], None, v) for v in data])
    assert out == [(None, MAX_WATERMARK, ("hi", 9)), (None, MAX_WATERMARK, ("hello", 12))]


@pytest.mark.parametrize("size,slide", [(3, 2), (2, 3), (4, 1), (3, 3)])
def test_sliding_count_windows_as_flinks_evictor_and_trigger(size: int, slide: int) -> None:
    values = list(range(11))
    out = run(WindowOperator(CountSlidingWindowAssigner.of(size, slide), "apply",
                             type("C", (WindowFunction,), {"apply": lambda s, k, w, i: [list(i)]})()),
              [("k", None, v) for v in values])
    # Flink: CountTrigger(slide) fires every slide elements; CountEvictor(size) keeps the last size
    want = [values[max(0, n - size):n] for n in range(1, len(values) + 1) if n % slide == 0]
    assert [v for _, _, v in out] == want
    assert [v for _, _, v in run(WindowOperator(CountSlidingWindowAssigner.of(size, slide), "reduce",
                                                lambda a, b: a + b), [("k", None, v) for v in values])] == \
        [sum(w) for w in want]


def test_count_windows_follow_timestamp_order_within_a_key() -> None:
    recs = [("k", 5, "c"), ("k", 1, "a"), ("k", 3, "b"), ("k", 9, "d")]
    out = run(WindowOperator(CountTumblingWindowAssigner.of(2), "reduce", lambda a, b: a + b), recs)
    assert [v for _, _, v in out] == ["ab", "cd"]


class AllSum(AllWindowFunction):
    def apply(self, window: Any, inputs: Iterable[Any]) -> Any:
        yield (window.start, sum(inputs))


class AllDescribe(ProcessAllWindowFunction):
    def process(self, context: Any, elements: Iterable[Any]) -> Any:
        yield (context.window().end, sorted(elements))


def test_window_all() -> None:
    rng = random.Random(4)
    recs = [(rng.randint(0, 50), rng.randint(1, 9)) for _ in range(200)]
    out = run(AllWindowOperator(TumblingEventTimeWindows.of(Time.milliseconds(10)), "apply", AllSum()), recs)
    want: dict[int, int] = {}
    for ts, v in recs:
        want[ts - ts % 10] = want.get(ts - ts % 10, 0) + v
    assert out == [(None, s + 9, (s, want[s])) for s in sorted(want)]
    out = run(AllWindowOperator(TumblingEventTimeWindows.of(Time.milliseconds(10)), "process", AllDescribe()),
              recs)
    assert [v[0] - 10 for _, _, v in out] == sorted(want)
    counted = run(AllWindowOperator(count_window_assigner(50), "reduce", lambda a, b: a + b), recs)
    ordered = [v for _, v in sorted(recs, key=lambda r: r[0])]
    assert [v for _, _, v in counted] == [sum(ordered[i:i + 50]) for i in range(0, 200, 50)]


def test_process_window_function_state_and_clear() -> None:
    class Stateful(ProcessWindowFunction):
        cleared: list[Any] = []

        def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Any:
            seen = context.global_state().get_state(ValueStateDescriptor("seen"))
            per_window = context.window_state().get_state(ValueStateDescriptor("w"))
            seen.update((seen.value() or 0) + 1)
            per_window.update("set")
            yield (key, context.window().start, seen.value(), context.current_watermark() == MAX_WATERMARK)

        def clear(self, context: Any) -> None:
            assert context.window_state().get_state(ValueStateDescriptor("w")).value() == "set"

    recs = [("a", 1, 1), ("a", 15, 2), ("b", 3, 3)]
    out = run(WindowOperator(TumblingEventTimeWindows.of(Time.milliseconds(10)), "process", Stateful()), recs)
    assert [v for _, _, v in out] == [("a", 0, 1, True), ("a", 10, 2, True), ("b", 0, 1, True)]


def test_side_outputs_from_window_functions() -> None:
    tag = OutputTag("small")

    class Split(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Any:
            n = len(list(elements))
            if n < 2:
                yield tag, (key, n)
            else:
                yield (key, n)

    out = run(WindowOperator(TumblingEventTimeWindows.of(Time.milliseconds(10)), "process", Split(),
                             allowed_lateness=Time.milliseconds(5), late_data_tag=OutputTag("late")),
              [("a", 1, 1), ("a", 2, 2), ("a", 11, 3)])
    assert out == [(None, 9, ("a", 2)), ("small", 19, ("a", 1))]


def test_processing_time_windows_fire_at_the_end_of_the_key() -> None:
    recs = [("a", None, ("a", i)) for i in range(5)] + [("b", None, ("b", 1))]
    out = run(WindowOperator(TumblingProcessingTimeWindows.of(Time.hours(1)), "reduce", Sum()), recs)
    totals: dict[str, int] = {}
    for _, ts, (k, v) in out:
        assert ts % 3_600_000 == 3_600_000 - 1  # window.max_timestamp()
        totals[k] = totals.get(k, 0) + v
    assert totals == {"a": 10, "b": 1}


def test_global_windows_with_a_count_trigger() -> None:
    out = run(WindowOperator(GlobalWindows.create(), "reduce", lambda a, b: a + b,
                             trigger=CountTrigger.of(2)),
              [("k", None, v) for v in [1, 2, 3, 4, 5]])
    # CountTrigger fires without purging: the window keeps growing
    assert [v for _, _, v in out] == [3, 10]
    assert run(WindowOperator(GlobalWindows.create(), "reduce", lambda a, b: a + b), [("k", None, 1)]) == []


def test_bad_input_errors() -> None:
    tumbling = TumblingEventTimeWindows.of(Time.seconds(1))
    with pytest.raises(RuntimeError, match="forget to call 'DataStream.assignTimestampsAndWatermarks"):
        run(WindowOperator(tumbling, "reduce", Sum()), [("a", None, ("a", 1))])
    with pytest.raises(TypeError, match=r"apply\(\) needs a WindowFunction, got a Describe"):
        WindowOperator(tumbling, "apply", Describe())
    with pytest.raises(TypeError, match=r"process\(\) needs a ProcessWindowFunction, got a Collect"):
        WindowOperator(tumbling, "process", Collect())
    with pytest.raises(TypeError, match="WindowFunction or a ProcessWindowFunction, got a AllSum"):
        WindowOperator(tumbling, "apply", AllSum())
    with pytest.raises(TypeError, match="AllWindowFunction or a ProcessAllWindowFunction, got a Collect"):
        AllWindowOperator(tumbling, "apply", Collect())
    with pytest.raises(TypeError, match="AggregateFunction"):
        WindowOperator(tumbling, "aggregate", Sum())
    with pytest.raises(TypeError, match="ReduceFunction"):
        WindowOperator(tumbling, "reduce", 42)
    with pytest.raises(TypeError, match="needs an OutputTag"):
        WindowOperator(tumbling, "reduce", Sum(), late_data_tag="late")
    with pytest.raises(ValueError, match="lateness cannot be negative"):
        WindowOperator(tumbling, "reduce", Sum(), allowed_lateness=-1)
    with pytest.raises(ValueError, match="abs\\(offset\\) < size"):
        TumblingEventTimeWindows.of(Time.seconds(1), Time.seconds(1))
    with pytest.raises(ValueError, match="0 < size"):
        EventTimeSessionWindows.with_gap(Time.milliseconds(0))
    with pytest.raises(ValueError, match="does not support merging"):
        WindowOperator(EventTimeSessionWindows.with_gap(1), "reduce", Sum(),
                       trigger=type("T", (CountTrigger,), {"can_merge": lambda self: False})(2))


class SameAsEventTimeTrigger(EventTimeTrigger):
    """Not the default trigger class: runs the operator's general trigger-and-timers path."""


@pytest.mark.parametrize("assigner", [TumblingEventTimeWindows.of(Time.milliseconds(7), Time.milliseconds(2)),
                                      SlidingEventTimeWindows.of(Time.milliseconds(9), Time.milliseconds(4)),
                                      EventTimeSessionWindows.with_gap(Time.milliseconds(3)),
                                      EventTimeSessionWindows.with_dynamic_gap(lambda v: v[1])],
                         ids=["tumbling", "sliding", "session", "dynamic-session"])
@pytest.mark.parametrize("lateness", [0, 5])
def test_the_trigger_path_and_the_fast_path_agree(assigner: Any, lateness: int) -> None:
    recs = random_records(17, 300)
    fast = run(WindowOperator(assigner, "process", Describe(), allowed_lateness=lateness), recs)
    general = run(WindowOperator(assigner, "process", Describe(), allowed_lateness=lateness,
                                 trigger=SameAsEventTimeTrigger()), recs)
    assert fast == general
    assert len(fast) > 10


@pytest.mark.parametrize("kind", ["reduce", "aggregate", "process"])
@pytest.mark.parametrize("size,slide", [(3, 0), (4, 0), (3, 2), (2, 5), (5, 1)])
def test_count_windows_equal_global_windows_with_flinks_trigger_and_evictor(kind: str, size: int,
                                                                            slide: int) -> None:
    recs = random_records(9, 200)
    fn = {"reduce": Sum(), "aggregate": Avg(), "process": Describe()}[kind]
    if slide == 0:
        general = WindowOperator(GlobalWindows.create(), kind, fn,
                                 trigger=PurgingTrigger.of(CountTrigger.of(size)))
    else:
        general = WindowOperator(GlobalWindows.create(), kind, fn, trigger=CountTrigger.of(slide),
                                 evictor=CountEvictor.of(size))
    direct = run(WindowOperator(count_window_assigner(size, slide), kind, fn), recs)
    assert direct == run(general, recs) and len(direct) > 10


def test_pyflink_style_generic_subscripts() -> None:
    class Count(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):  # type: ignore[misc]
        def process(self, key: str, context: ProcessWindowFunction.Context[TimeWindow],  # type: ignore[misc]
                    elements: Iterable[tuple]) -> Iterable[tuple]:
            return [(key, len(list(elements)))]

    out = run(WindowOperator(TumblingEventTimeWindows.of(Time.milliseconds(5)), "process", Count()),
              [("a", 1, 1), ("a", 2, 2)])
    assert out == [(None, 4, ("a", 2))]


def test_sliding_and_session_processing_time_windows() -> None:
    from sessioncluster.api.window import ProcessingTimeSessionWindows, SlidingProcessingTimeWindows

    recs = [("a", None, ("a", i)) for i in range(1, 5)] + [("b", 9, ("b", 5))]
    out = run(WindowOperator(SlidingProcessingTimeWindows.of(Time.hours(2), Time.hours(1)), "reduce", Sum()),
              recs)
    totals: dict[str, int] = {}
    for _, ts, (k, v) in out:
        assert ts % 3_600_000 == 3_600_000 - 1
        totals[k] = totals.get(k, 0) + v
    assert totals == {"a": 2 * 10, "b": 2 * 5}  # every element is in two sliding windows
    out = run(WindowOperator(ProcessingTimeSessionWindows.with_gap(Time.hours(1)), "process", Describe()),
              recs)
    # the records of a key are processed within far less than the gap: one session per key
    assert [(v[0], v[4]) for _, _, v in out] == [("a", [1, 2, 3, 4]), ("b", [5])]
    assert all(v[2] - v[1] >= 3_600_000 for _, _, v in out)


def test_window_all_sessions() -> None:
    recs = [(t, t) for t in [30, 1, 2, 20, 5, 21]]
    out = run(AllWindowOperator(EventTimeSessionWindows.with_gap(Time.milliseconds(3)), "process",
                                AllDescribe()), recs)
    assert [v for _, _, v in out] == [(8, [1, 2, 5]), (24, [20, 21]), (33, [30])]


def test_an_operator_reopened_starts_from_fresh_state() -> None:
    class Seen(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Any:
            seen = context.global_state().get_state(ValueStateDescriptor("seen"))
            seen.update((seen.value() or 0) + 1)
            yield seen.value()

    op = WindowOperator(TumblingEventTimeWindows.of(Time.milliseconds(10)), "process", Seen())
    for _ in range(2):
        open_function(op, RuntimeContext("window", 0, 1, 0, {}))
        assert [v for _, _, v in run_batch(op, iter([("a", 1, 1), ("a", 11, 1)]))] == [1, 2]
        op.close()
