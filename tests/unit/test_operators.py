"""The BATCH-mode operators: record order, timers, side outputs, co-operators, timestamps."""

from __future__ import annotations

import random
from typing import Any

import cloudpickle
import pytest

from sessioncluster.common.time import Duration
from sessioncluster.api.functions import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    RuntimeContext,
    TimeDomain,
)
from sessioncluster.runtime.batch_driver import run as run_batch
from sessioncluster.runtime.sorting import group_by_key
from sessioncluster.runtime.operators import (
    CoFlatMapOperator,
    CoMapOperator,
    CoProcessOperator,
    KeyedCoProcessOperator,
    KeyedFunctionOperator,
    KeyedProcessOperator,
    ProcessOperator,
    TimestampsAndWatermarksOperator,
    open_function,
)
from sessioncluster.api.state import ListStateDescriptor, ValueStateDescriptor
from sessioncluster.api.watermark import TimestampAssigner, WatermarkStrategy


def run(op: Any, records: list[Any]) -> list[Any]:
    op = cloudpickle.loads(cloudpickle.dumps(op))  # operators travel as user code
    open_function(op, RuntimeContext("op", 0, 1, 0, {}))
    out = list(run_batch(op, iter(records)))
    op.close()
    return out




def test_records_of_a_key_are_sorted_by_timestamp_stably() -> None:
    rng = random.Random(3)
    recs = [(rng.choice("abc"), rng.choice([None, 1, 2, 3, -5]), i) for i in range(300)]
    groups = group_by_key(iter(recs), 0, 1)
    for key, lst in groups.items():
        expected = sorted([r for r in recs if r[0] == key],
                          key=lambda r: MIN_WATERMARK if r[1] is None else r[1])  # sorted() is stable
        assert lst == expected


class CountWithTimeout(KeyedProcessFunction):
    """The CountWithTimeoutFunction of Flink's process-function docs (event-time timer 60 s after the
    key's last record; only that timer emits)."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("my_state", None))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        current = self.state.value()
        if current is None:
            current = [value[0], 0, 0]
        current[1] += 1
        current[2] = ctx.timestamp()
        self.state.update(current)
        ctx.timer_service().register_event_time_timer(current[2] + 60000)
        return ()

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Any:
        result = self.state.value()
        if timestamp == result[2] + 60000:
            yield result[0], result[1]


def test_the_documented_count_with_timeout_example() -> None:
    rows = [("a", 1000), ("b", 5000), ("a", 3000), ("a", 2000), ("b", 90000)]
    out = run(KeyedProcessOperator(CountWithTimeout()), [(k, t, (k, t)) for k, t in rows])
    # BATCH: every key's timers fire at its end; the last record of "a" is at 3000 (sorted input)
    assert sorted(out) == [(None, 63000, ("a", 3)), (None, 150000, ("b", 2))]


class Timers(KeyedProcessFunction):
    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        ts = ctx.timer_service()
        assert ts.current_watermark() == MIN_WATERMARK
        ts.register_event_time_timer(value + 10)
        ts.register_event_time_timer(value + 10)  # deduplicated
        ts.register_processing_time_timer(5)
        if value == 3:
            ts.delete_event_time_timer(13)
        yield ("elem", value, ctx.timestamp())

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Any:
        assert ctx.timer_service().current_watermark() == MAX_WATERMARK
        ctx.timer_service().register_event_time_timer(timestamp)  # quiesced: ignored, as in Flink
        if timestamp == 11:
            ctx.timer_service().delete_event_time_timer(12)  # a due timer can still be deleted
        if ctx.time_domain() is TimeDomain.PROCESSING_TIME:
            ctx.output(LATE, ("proc", ctx.get_current_key()))
        yield ("timer", ctx.get_current_key(), timestamp, ctx.time_domain(), ctx.timestamp())


LATE = OutputTag("late")


def test_timers_fire_at_the_end_of_each_key_in_order_and_dedup() -> None:
    out = run(KeyedProcessOperator(Timers()), [("k", 3, 3), ("k", 1, 1), ("k", 2, 2), ("j", 7, 7)])
    assert out == [
        (None, 1, ("elem", 1, 1)), (None, 2, ("elem", 2, 2)), (None, 3, ("elem", 3, 3)),
        (None, 11, ("timer", "k", 11, TimeDomain.EVENT_TIME, 11)),
        ("late", None, ("proc", "k")),
        (None, None, ("timer", "k", 5, TimeDomain.PROCESSING_TIME, 5)),
        (None, 7, ("elem", 7, 7)), (None, 17, ("timer", "j", 17, TimeDomain.EVENT_TIME, 17)),
        ("late", None, ("proc", "j")), (None, None, ("timer", "j", 5, TimeDomain.PROCESSING_TIME, 5))]


def test_side_outputs_by_yield_and_by_ctx_output() -> None:
    evens = OutputTag("evens")

    class Split(ProcessFunction):
        def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Any:
            if value % 2 == 0:
                yield evens, value
            else:
                ctx.output(OutputTag("odds"), value)
                yield value * 10

    out = run(ProcessOperator(Split()), [(i, i) for i in range(4)])
    assert out == [("evens", 0, 0), ("odds", 1, 1), (None, 1, 10), ("evens", 2, 2), ("odds", 3, 3),
                   (None, 3, 30)]


def test_bad_output_tag_and_timers_on_a_non_keyed_stream() -> None:
    class BadTag(ProcessFunction):
        def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Any:
            ctx.output("side", value)  # type: ignore[arg-type]
            return ()

    with pytest.raises(TypeError, match="needs an OutputTag"):
        run(ProcessOperator(BadTag()), [(None, 1)])

    class Timer(ProcessFunction):
        def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Any:
            ctx.timer_service().register_event_time_timer(1)
            return ()

    with pytest.raises(RuntimeError, match="only supported on a keyed streams"):
        run(ProcessOperator(Timer()), [(None, 1)])
    with pytest.raises(ValueError, match="non-empty"):
        OutputTag("")
    with pytest.raises(TypeError, match="ProcessFunction"):
        ProcessOperator(lambda v: v)


def test_keyed_map_filter_flat_map_keep_timestamps() -> None:
    recs = [("a", 2, 1), ("b", None, 2), ("a", 1, 3)]
    assert sorted(run(KeyedFunctionOperator("map", lambda v: v * 2), recs), key=str) == \
        sorted([(None, 1, 6), (None, 2, 2), (None, None, 4)], key=str)
    assert run(KeyedFunctionOperator("filter", lambda v: v > 1), recs) == [(None, 1, 3), (None, None, 2)]
    assert run(KeyedFunctionOperator("flat_map", lambda v: [v] * v), [("a", 5, 2)]) == [(None, 5, 2)] * 2
    with pytest.raises(ValueError):
        KeyedFunctionOperator("reduce", lambda a, b: a)


def test_timestamp_assigner() -> None:
    class FromValue(TimestampAssigner):
        def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
            assert record_timestamp == (MIN_WATERMARK if value[0] == "none" else 99)
            return value[1]

    strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
                .with_timestamp_assigner(FromValue()).with_idleness(Duration.of_seconds(1)))
    out = run(TimestampsAndWatermarksOperator(strategy), [(None, ("none", 5)), (99, ("set", -3))])
    assert out == [(None, 5, ("none", 5)), (None, -3, ("set", -3))]
    keep = WatermarkStrategy.for_monotonous_timestamps()
    assert run(TimestampsAndWatermarksOperator(keep), [(7, "x"), (None, "y")]) == \
        [(None, 7, "x"), (None, None, "y")]
    assert run(TimestampsAndWatermarksOperator(WatermarkStrategy.no_watermarks().with_timestamp_assigner(
        lambda v, ts: v)), [(None, 4)]) == [(None, 4, 4)]
    with pytest.raises(TypeError, match="WatermarkStrategy"):
        TimestampsAndWatermarksOperator(FromValue())  # type: ignore[arg-type]


def test_co_map_and_co_flat_map() -> None:
    class M(CoMapFunction):
        def map1(self, value: Any) -> Any:
            return ("one", value)

        def map2(self, value: Any) -> Any:
            return ("two", value)

    class F(CoFlatMapFunction):
        def flat_map1(self, value: Any) -> Any:
            yield value

        def flat_map2(self, value: Any) -> Any:
            yield from (value, value)

    recs = [(0, 1, "a"), (1, 2, "b")]
    assert run(CoMapOperator(M()), recs) == [(None, 1, ("one", "a")), (None, 2, ("two", "b"))]
    assert run(CoFlatMapOperator(F()), recs) == [(None, 1, "a"), (None, 2, "b"), (None, 2, "b")]
    keyed = [(1, "k", 5, "x"), (0, "k", 1, "y"), (0, "j", 3, "z")]
    assert run(CoMapOperator(M(), keyed=True), keyed) == [(None, 1, ("one", "y")), (None, 5, ("two", "x")),
                                                        (None, 3, ("one", "z"))]
    assert len(run(CoFlatMapOperator(F(), keyed=True), keyed)) == 4


def test_co_process_and_keyed_co_process_with_shared_state_and_timers() -> None:
    class Join(KeyedCoProcessFunction):
        def open(self, rc: RuntimeContext) -> None:
            self.left = rc.get_list_state(ListStateDescriptor("left"))
            self.right = rc.get_list_state(ListStateDescriptor("right"))

        def process_element1(self, value: Any, ctx: Any) -> Any:
            self.left.add(value)
            ctx.timer_service().register_event_time_timer(100)
            for r in self.right.get():
                yield (value, r)

        def process_element2(self, value: Any, ctx: Any) -> Any:
            self.right.add(value)
            for v in self.left.get():
                yield (v, value)

        def on_timer(self, timestamp: int, ctx: Any) -> Any:
            yield ("done", ctx.get_current_key(), len(list(self.left.get())), len(list(self.right.get())))

    recs = [(0, "k", 3, "l3"), (1, "k", 1, "r1"), (1, "k", 4, "r4"), (0, "k", 2, "l2"), (0, "q", 1, "lq")]
    out = run(KeyedCoProcessOperator(Join()), recs)
    k = [r for r in out if r[2][0] != "lq" and "q" not in r[2]]
    # merged by timestamp within the key: r1@1, l2@2, l3@3, r4@4
    assert k == [(None, 2, ("l2", "r1")), (None, 3, ("l3", "r1")), (None, 4, ("l2", "r4")),
                 (None, 4, ("l3", "r4")), (None, 100, ("done", "k", 2, 2))]
    assert (None, 100, ("done", "q", 1, 0)) in out

    class Tag(CoProcessFunction):
        def process_element1(self, value: Any, ctx: Any) -> Any:
            yield (1, value, ctx.timestamp())

        def process_element2(self, value: Any, ctx: Any) -> Any:
            yield (2, value, ctx.timestamp())

    assert run(CoProcessOperator(Tag()), [(1, 5, "a"), (0, None, "b")]) == [(None, 5, (2, "a", 5)),
                                                                            (None, None, (1, "b", None))]
