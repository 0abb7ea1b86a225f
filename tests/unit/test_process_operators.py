"""The process-function operators and keyed state without Spark: BATCH semantics of state,
timers and side outputs, checked against plain Python."""

from __future__ import annotations

import collections
from typing import Any, Iterable

import pytest

from sessioncluster.accumulators import IntCounter
from sessioncluster.functions import (
    KeyedProcessFunction,
    MapFunction,
    OutputTag,
    ProcessFunction,
    RuntimeContext,
    TimeDomain,
)
from sessioncluster.operators import (
    MAX_TIME,
    MIN_TIME,
    KeyedFunctionOperator,
    KeyedProcessOperator,
    ProcessOperator,
)
from sessioncluster.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from sessioncluster.common.time import Time


def ctx() -> RuntimeContext:
    return RuntimeContext("op", 0, 1, 0, {"n": IntCounter()})


def run(operator: Any, records: list[Any]) -> list[tuple[str | None, Any]]:
    operator.open(ctx())
    try:
        return list(operator.process(iter(records)))
    finally:
        operator.close()


class Evens(ProcessFunction):
    ODD = OutputTag("odd")

    def process_element(self, value: int, ctx: Any) -> Iterable[int]:
        if value % 2:
            ctx.output(self.ODD, value)
        else:
            yield value
            yield value * 10


def test_process_function_main_and_side_outputs_in_order() -> None:
    assert run(ProcessOperator(Evens()), [1, 2, 3]) == [("odd", 1), (None, 2), (None, 20), ("odd", 3)]


def test_timers_and_key_need_a_keyed_stream() -> None:
    class UsesTimers(ProcessFunction):
        def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
            ctx.timer_service().register_event_time_timer(1)
            return ()

    with pytest.raises(RuntimeError, match="keyed stream"):
        run(ProcessOperator(UsesTimers()), [1])


def test_output_needs_an_output_tag() -> None:
    class Bad(ProcessFunction):
        def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
            ctx.output("late", value)
            return ()

    with pytest.raises(TypeError, match="takes an OutputTag"):
        run(ProcessOperator(Bad()), [1])


class EveryState(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        desc = ValueStateDescriptor("v")
        desc.enable_time_to_live(StateTtlConfig.new_builder(Time.seconds(1))
                                 .update_ttl_on_read_and_write().never_return_expired().build())
        self.v = runtime_context.get_state(desc)
        self.l = runtime_context.get_list_state(ListStateDescriptor("l"))
        self.m = runtime_context.get_map_state(MapStateDescriptor("m"))
        self.r = runtime_context.get_reducing_state(ReducingStateDescriptor("r", lambda a, b: a + b))
        self.a = runtime_context.get_aggregating_state(AggregatingStateDescriptor("a", Longest()))

    def process_element(self, value: str, ctx: Any) -> Iterable[Any]:
        self.v.update(value)
        self.l.add(value)
        self.m.put(value, len(value))
        self.r.add(len(value))
        self.a.add(value)
        ctx.timer_service().register_event_time_timer(7)
        return ()

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        yield (ctx.get_current_key(), self.v.value(), list(self.l.get()), dict(self.m.items()),
               self.r.get(), self.a.get(), ctx.time_domain(), ctx.timestamp())


class Longest:
    def create_accumulator(self) -> str:
        return ""

    def add(self, value: str, acc: str) -> str:
        return value if len(value) > len(acc) else acc

    def get_result(self, acc: str) -> str:
        return acc

    def merge(self, a: str, b: str) -> str:
        return a if len(a) >= len(b) else b


def test_state_is_per_key_and_timers_fire_after_the_keys_records() -> None:
    words = ["to", "be", "or", "not", "to", "bee", "question"]
    out = run(KeyedProcessOperator(EveryState()), [(w[0], w) for w in words])
    got = {v[0]: v[1:] for _, v in out}
    expected = {}
    for key in dict.fromkeys(w[0] for w in words):
        ws = [w for w in words if w[0] == key]
        expected[key] = (ws[-1], ws, {w: len(w) for w in ws}, sum(map(len, ws)),
                         max(ws, key=len), TimeDomain.EVENT_TIME, 7)
    assert got == expected


def test_timers_in_timestamp_order_deduplicated_event_time_first() -> None:
    class Timers(KeyedProcessFunction):
        def process_element(self, value: int, ctx: Any) -> Iterable[Any]:
            ts = ctx.timer_service()
            assert ts.current_watermark() == MIN_TIME and ts.current_processing_time() == MIN_TIME
            ts.register_event_time_timer(value)
            ts.register_event_time_timer(value)
            ts.register_processing_time_timer(100 - value)
            if value == 5:
                ts.delete_event_time_timer(5)
            return ()

        def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
            assert ctx.timer_service().current_watermark() == MAX_TIME
            if timestamp == 9 and ctx.time_domain() is TimeDomain.EVENT_TIME:
                ctx.timer_service().register_event_time_timer(1)  # due: fires too
            yield ctx.get_current_key(), ctx.time_domain().name, timestamp

    out = [v for _, v in run(KeyedProcessOperator(Timers()), [("k", 9), ("k", 3), ("k", 5), ("j", 2)])]
    assert out == [("k", "EVENT_TIME", 3), ("k", "EVENT_TIME", 9), ("k", "EVENT_TIME", 1),
                   ("k", "PROCESSING_TIME", 91), ("k", "PROCESSING_TIME", 95),
                   ("k", "PROCESSING_TIME", 97),
                   ("j", "EVENT_TIME", 2), ("j", "PROCESSING_TIME", 98)]


def test_keyed_state_outside_a_keyed_stream_is_flinks_error() -> None:
    class Stateful(MapFunction):
        def open(self, runtime_context: RuntimeContext) -> None:
            self.s = runtime_context.get_state(ValueStateDescriptor("s"))

        def map(self, value: Any) -> Any:
            return value

    with pytest.raises(RuntimeError, match="Keyed state can only be used on a 'keyed stream'"):
        Stateful().open(ctx())


def test_wrong_descriptor_kind_is_a_type_error() -> None:
    op = KeyedProcessOperator(EveryState())
    context = ctx()
    op.open(context)
    op.store.set_current_key("k")
    with pytest.raises(TypeError, match="expected a ValueStateDescriptor"):
        context.get_state(ListStateDescriptor("x"))


def test_keyed_rich_map_counts_per_key() -> None:
    class Count(MapFunction):
        def open(self, runtime_context: RuntimeContext) -> None:
            self.n = runtime_context.get_state(ValueStateDescriptor("n"))

        def map(self, value: str) -> tuple[str, int]:
            self.n.update((self.n.value() or 0) + 1)
            return value, self.n.value()

    words = "a b a c b a".split()
    out = [v for _, v in run(KeyedFunctionOperator("map", Count()), [(w, w) for w in words])]
    final = {}
    for w, n in out:
        final[w] = n
    assert final == dict(collections.Counter(words))
