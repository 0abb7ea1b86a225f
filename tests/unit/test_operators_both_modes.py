"""The operators under both drivers: BATCH (a subtask's whole input, grouped and sorted by key,
timers at the end of each key) and STREAMING (the same records in micro-batches, each key's
snapshot kept between calls in a dict standing in for Spark's ValueState, the watermark advanced
between micro-batches, Spark's timers fired after each, and a final MAX watermark).

Expected results are plain Python's or Flink's documented ones; where the modes legitimately
differ, the test says so and checks each."""

from __future__ import annotations

import collections
import pickle
import random
from typing import Any, Iterable

import cloudpickle
import pytest

from sessioncluster.common.time import Time
from sessioncluster.api.functions import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    AggregateFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    OutputTag,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    RuntimeContext,
    TimeDomain,
)
from sessioncluster.runtime import batch_driver
from sessioncluster.runtime.operators import (
    AllWindowOperator,
    KeyedCoProcessOperator,
    KeyedProcessOperator,
    ReduceOperator,
    StreamOperator,
    TwoInputStreamOperator,
    WindowOperator,
    open_function,
)
from sessioncluster.runtime.streaming_driver import KeyedStreamingDriver
from sessioncluster.api.state import ValueStateDescriptor
from sessioncluster.api.window import (
    ContinuousEventTimeTrigger,
    CountEvictor,
    CountSlidingWindowAssigner,
    CountTrigger,
    CountTumblingWindowAssigner,
    EventTimeSessionWindows,
    GlobalWindows,
    PurgingTrigger,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)

Rec = tuple[Any, int | None, Any]


@pytest.fixture(params=["batch", "streaming"])
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class SparkStandIn:
    """Spark's side of transformWithStateInPandas for one keyed operator: a ValueState per key
    (pickled snapshots in a dict), the registered timers, the watermark and processing time."""

    def __init__(self, op: StreamOperator, domain: TimeDomain | None, delay: int,
                 bounded: bool = False) -> None:
        self.driver = KeyedStreamingDriver(op, RuntimeContext("op", 0, 1, 0, {}), domain)
        self.domain = domain
        self.bounded = bounded  # a bounded job: a key's call with records ends its input
        self.delay = delay
        self.store: dict[Any, bytes] = {}
        self.timers: set[tuple[Any, int]] = set()
        self.watermark = 0  # Spark's first watermark
        self.now = 1_000_000
        self.out: list[Rec] = []

    def call(self, key: Any, records: list[tuple[int | None, Any]], fired: int | None) -> None:
        d = self.driver
        snapshot = pickle.loads(self.store[key]) if key in self.store else None
        d.open_key(key, snapshot, self.watermark, self.now)
        self.out += d.process(records) if records else []
        self.out += d.fire_timers(fired)
        if records and self.bounded:
            self.out += d.end_of_input()
        result = d.close_key()
        if result.snapshot:
            self.store[key] = pickle.dumps(result.snapshot)
        else:
            self.store.pop(key, None)
        self.timers |= {(key, t) for t in result.register}
        self.timers -= {(key, t) for t in result.delete}

    def micro_batch(self, records: list[Rec]) -> None:
        by_key: dict[Any, list[tuple[int | None, Any]]] = {}
        for key, ts, value in records:
            by_key.setdefault(key, []).append((ts, value))
        for key, recs in by_key.items():
            self.call(key, recs, None)
        self.expire()

    def expire(self) -> None:
        """Spark's expired timers of the batch, in time order (a timer set by a callback for a
        time already passed fires in the same batch)."""
        until = self.watermark if self.domain is TimeDomain.EVENT_TIME else self.now
        while True:
            due = sorted((t, k) for k, t in self.timers if t <= until)
            if not due:
                return
            t, key = due[0]
            self.timers.discard((key, t))
            self.call(key, [], t)


def run(op: StreamOperator, records: list[Rec], driver: str, *, batches: int = 3, delay: int = 0,
        domain: TimeDomain | None = TimeDomain.EVENT_TIME) -> list[Rec]:
    """The operator's output records over ``records`` (``(key, timestamp, value)``; into a
    two-input operator the value is ``(input, value)``)."""
    op = cloudpickle.loads(cloudpickle.dumps(op))  # operators travel as user code
    two = isinstance(op, TwoInputStreamOperator)
    if driver == "batch":
        open_function(op, RuntimeContext("op", 0, 1, 0, {}))
        recs = [(v[0], k, t, v[1]) for k, t, v in records] if two else records
        out = list(batch_driver.run(op, iter(recs)))
        op.close()
        return out
    spark = SparkStandIn(op, domain, delay, bounded=driver == "bounded")
    if driver == "bounded":  # a bounded job's input all comes in its first micro-batch
        batches = 1
    size = -(-len(records) // batches)
    seen = MIN_WATERMARK
    for i in range(0, len(records), size):
        chunk = records[i:i + size]
        spark.micro_batch(chunk)
        seen = max([seen] + [t for _, t, _ in chunk if t is not None])
        spark.watermark = max(spark.watermark, seen - delay)
        spark.now += 10_000
        spark.expire()  # a no-data batch after the watermark moved
    spark.watermark = MAX_WATERMARK  # the input ended
    spark.expire()
    op.close()
    return spark.out


def values(out: list[Rec], tag: str | None = None) -> list[Any]:
    return [v for t, _, v in out if t == tag]


def ordered(n: int = 120, keys: str = "abc", span: int = 50_000, seed: int = 7) -> list[Rec]:
    """Records in timestamp order (as a source reading in order would give them)."""
    rng = random.Random(seed)
    stamps = sorted(rng.randrange(span) for _ in range(n))
    return [(rng.choice(keys), t, rng.randint(1, 9)) for t in stamps]


# -- keyed process functions ------------------------------------------------------------------


class CountWithTimeout(KeyedProcessFunction):
    """Flink's CountWithTimeoutFunction: the key's count, emitted 60 s of event time after its
    last record."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value: Any, ctx: Any) -> Any:
        n, _ = self.state.value() or (0, 0)
        self.state.update((n + 1, ctx.timestamp()))
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 60_000)
        return ()

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        n, last = self.state.value()
        if timestamp == last + 60_000:
            assert ctx.time_domain() is TimeDomain.EVENT_TIME
            yield ctx.get_current_key(), n


def test_keyed_process_with_event_time_timers(driver: str) -> None:
    records = ordered()
    out = run(KeyedProcessOperator(CountWithTimeout()), records, driver)
    assert sorted(values(out)) == sorted(collections.Counter(k for k, _, _ in records).items())
    last = {k: t for k, t, _ in records}
    assert sorted(ts for _, ts, _ in out) == sorted(t + 60_000 for t in last.values())


class OnceByTheClock(KeyedProcessFunction):
    """A processing-time timer 1 s after the key's first record: the key's count then."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value: Any, ctx: Any) -> Any:
        if self.count.value() is None:
            ctx.timer_service().register_processing_time_timer(
                ctx.timer_service().current_processing_time() + 1000)
        self.count.update((self.count.value() or 0) + 1)
        return ()

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        assert ctx.time_domain() is TimeDomain.PROCESSING_TIME
        yield ctx.get_current_key(), self.count.value()


def test_keyed_process_with_processing_time_timers(driver: str) -> None:
    """BATCH fires a key's processing-time timers at its end (all of its records counted);
    STREAMING when the clock passes them: after the micro-batch that brought the key's first
    record, with the records it had by then. Either way one output, without a timestamp."""
    records = ordered()
    out = run(KeyedProcessOperator(OnceByTheClock()), records, driver,
              domain=TimeDomain.PROCESSING_TIME)
    assert all(ts is None for _, ts, _ in out)
    if driver == "batch":
        expected = collections.Counter(k for k, _, _ in records)
    else:
        first_batch = records[:40]
        expected = collections.Counter(k for k, _, _ in first_batch)
    assert sorted(values(out)) == sorted(expected.items())


def test_running_reduce(driver: str) -> None:
    """Flink's reduce on a KeyedStream: STREAMING emits every update, BATCH one final value per
    key (Flink's BatchGroupedReduceOperator)."""
    records = ordered()
    out = values(run(ReduceOperator(lambda a, b: (a[0], a[1] + b[1])),
                     [(k, t, (k, v)) for k, t, v in records], driver, domain=None))
    totals: dict[str, int] = {}
    updates = []
    for k, _, v in records:
        totals[k] = totals.get(k, 0) + v
        updates.append((k, totals[k]))
    if driver == "batch":
        assert sorted(out) == sorted(totals.items())
    else:
        assert sorted(out) == sorted(updates)
        assert [u for u in out if u[0] == "a"] == [u for u in updates if u[0] == "a"]


# -- windows -----------------------------------------------------------------------------------


def sum_reduce(a: tuple[str, int], b: tuple[str, int]) -> tuple[str, int]:
    return (a[0], a[1] + b[1])


def keyed_values(records: list[Rec]) -> list[Rec]:
    return [(k, t, (k, v)) for k, t, v in records]


class Describe(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Any:
        w = context.window()
        yield key, w.start, w.end, sum(e[1] for e in elements)


def plain_windows(records: list[Rec], windows_of: Any) -> list[tuple[Any, int, int, int]]:
    sums: dict[tuple[Any, int, int], int] = collections.Counter()
    for k, t, v in records:
        for start, end in windows_of(t):
            sums[(k, start, end)] += v
    return sorted((k, s, e, n) for (k, s, e), n in sums.items())


def test_tumbling_windows(driver: str) -> None:
    records = ordered()
    out = run(WindowOperator(TumblingEventTimeWindows.of(Time.seconds(10)), "process", Describe()),
              keyed_values(records), driver, delay=2000)
    start = lambda t: t - t % 10_000  # noqa: E731
    assert sorted(values(out)) == plain_windows(records, lambda t: [(start(t), start(t) + 10_000)])
    assert all(ts == v[2] - 1 for _, ts, v in out)  # a window's result has its max timestamp


def test_sliding_windows(driver: str) -> None:
    records = ordered()

    def windows_of(t: int) -> list[tuple[int, int]]:
        last = t - t % 5000
        return [(s, s + 10_000) for s in range(last, t - 10_000, -5000)]

    out = run(WindowOperator(SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(5)), "process",
                             Describe()), keyed_values(records), driver)
    assert sorted(values(out)) == plain_windows(records, windows_of)


def plain_sessions(records: list[Rec], gap: int) -> list[tuple[Any, int, int, int]]:
    out = []
    by_key: dict[Any, list[tuple[int, int]]] = {}
    for k, t, v in records:
        by_key.setdefault(k, []).append((t, v))
    for k, recs in by_key.items():
        recs.sort()
        start, end, total = recs[0][0], recs[0][0] + gap, 0
        for t, v in recs:
            if t > end:  # touching windows merge, as Flink's TimeWindow.intersects
                out.append((k, start, end, total))
                start, total = t, 0
            end = max(end, t + gap)
            total += v
        out.append((k, start, end, total))
    return sorted(out)


def test_session_windows_merge_across_micro_batches(driver: str) -> None:
    records = ordered(n=60, span=200_000)
    out = run(WindowOperator(EventTimeSessionWindows.with_gap(Time.seconds(8)), "process", Describe()),
              keyed_values(records), driver, batches=5, delay=2000)
    expected = plain_sessions(records, 8000)
    assert sorted(values(out)) == expected
    assert any(e - s > 8000 for _, s, e, _ in expected)  # some sessions did merge


def test_count_windows(driver: str) -> None:
    records = ordered()
    by_key: dict[str, list[int]] = {}
    for k, _, v in records:
        by_key.setdefault(k, []).append(v)
    tumbling = values(run(WindowOperator(CountTumblingWindowAssigner.of(4), "reduce", sum_reduce),
                          keyed_values(records), driver, domain=None))
    assert sorted(tumbling) == sorted((k, sum(vs[i:i + 4])) for k, vs in by_key.items()
                                      for i in range(0, len(vs) - 3, 4))
    sliding = values(run(WindowOperator(CountSlidingWindowAssigner.of(4, 2), "reduce", sum_reduce),
                         keyed_values(records), driver, domain=None))
    assert sorted(sliding) == sorted((k, sum(vs[max(0, i - 4):i])) for k, vs in by_key.items()
                                     for i in range(2, len(vs) + 1, 2))


def test_a_continuous_event_time_trigger(driver: str) -> None:
    """A 10 s window fires every 5 s of event time and at its end, in both modes the same:
    in BATCH every record is in before the key's timers fire; in STREAMING the record at 7 s
    arrives before the watermark passes 5 s."""
    records = [("x", 1000, 1), ("x", 2000, 2), ("x", 7000, 4), ("x", 12_000, 8)]
    out = run(WindowOperator(TumblingEventTimeWindows.of(Time.seconds(10)), "reduce", sum_reduce,
                             trigger=ContinuousEventTimeTrigger.of(Time.seconds(5))),
              keyed_values(records), driver, batches=3)
    assert values(out) == [("x", 7), ("x", 7), ("x", 8), ("x", 8)]


def test_a_purging_count_trigger(driver: str) -> None:
    records = ordered()
    out = values(run(WindowOperator(GlobalWindows.create(), "reduce", sum_reduce,
                                    trigger=PurgingTrigger.of(CountTrigger.of(3))),
                     keyed_values(records), driver, domain=None))
    by_key: dict[str, list[int]] = {}
    for k, _, v in records:
        by_key.setdefault(k, []).append(v)
    assert sorted(out) == sorted((k, sum(vs[i:i + 3])) for k, vs in by_key.items()
                                 for i in range(0, len(vs) - 2, 3))


def test_an_evictor_keeps_the_last_elements(driver: str) -> None:
    records = ordered()
    out = run(WindowOperator(TumblingEventTimeWindows.of(Time.seconds(10)), "process", Describe(),
                             evictor=CountEvictor.of(2)), keyed_values(records), driver)
    by_window: dict[tuple[str, int], list[int]] = {}
    for k, t, v in records:
        by_window.setdefault((k, t - t % 10_000), []).append(v)
    assert sorted(values(out)) == sorted((k, s, s + 10_000, sum(vs[-2:]))
                                         for (k, s), vs in by_window.items())


class Sum(AggregateFunction):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + value[1]

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, a: int, b: int) -> int:
        return a + b


LATE = [("x", 1000, 1), ("x", 2000, 2), ("x", 15_000, 4), ("x", 3000, 8), ("x", 30_000, 16)]


def test_allowed_lateness_fires_the_window_again(driver: str) -> None:
    """STREAMING: [0, 10 s) fires when the watermark passes it (1 + 2), then the record at 3 s
    arrives behind the watermark but within 10 s of allowed lateness: the window fires again with
    it. BATCH sorts a key's records, so nothing is late: one firing with all of them."""
    out = values(run(WindowOperator(TumblingEventTimeWindows.of(Time.seconds(10)), "aggregate", Sum(),
                                    allowed_lateness=Time.seconds(10)),
                     keyed_values(LATE), driver, batches=5))
    if driver == "batch":
        assert out == [11, 4, 16]
    else:
        assert out == [3, 11, 4, 16]


def test_late_records_go_to_the_side_output(driver: str) -> None:
    """Without allowed lateness the record at 3 s is late in STREAMING (the watermark is at 15 s):
    it goes to the late-data side output, not into the window. In BATCH nothing is late."""
    late = OutputTag("late")
    out = run(WindowOperator(TumblingEventTimeWindows.of(Time.seconds(10)), "aggregate", Sum(),
                             late_data_tag=late), keyed_values(LATE), driver, batches=5)
    if driver == "batch":
        assert values(out) == [11, 4, 16] and values(out, "late") == []
    else:
        assert values(out) == [3, 4, 16] and values(out, "late") == [("x", 8)]
        assert [ts for tag, ts, _ in out if tag == "late"] == [3000]


class AllDescribe(ProcessAllWindowFunction):
    def process(self, context: Any, elements: Iterable[Any]) -> Any:
        yield context.window().start, sum(elements)


def test_window_all_is_one_keyed_window(driver: str) -> None:
    records = ordered()
    out = run(AllWindowOperator(TumblingEventTimeWindows.of(Time.seconds(10)), "process", AllDescribe()),
              [(0, t, v) for _, t, v in records], driver, batches=4)
    sums: dict[int, int] = collections.Counter()
    for _, t, v in records:
        sums[t - t % 10_000] += v
    assert values(out) == sorted(sums.items())


class Join(KeyedCoProcessFunction):
    """Input 1 sets the key's factor; input 2's values are multiplied by it, or wait for it."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.factor = runtime_context.get_state(ValueStateDescriptor("factor"))
        self.waiting = runtime_context.get_state(ValueStateDescriptor("waiting"))

    def process_element1(self, value: Any, ctx: Any) -> Any:
        self.factor.update(value)
        for w in self.waiting.value() or []:
            yield ctx.get_current_key(), w * value
        self.waiting.clear()
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1)

    def process_element2(self, value: Any, ctx: Any) -> Any:
        if self.factor.value() is None:
            self.waiting.update((self.waiting.value() or []) + [value])
        else:
            yield ctx.get_current_key(), value * self.factor.value()

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield ctx.get_current_key(), "factor", self.factor.value()


def test_connect_into_a_keyed_co_process(driver: str) -> None:
    records: list[Rec] = [("a", 1, (1, 5)), ("b", 2, (0, 10)), ("a", 3, (0, 2)), ("b", 4, (1, 3)),
                          ("a", 5, (1, 7)), ("c", 6, (1, 1))]
    out = values(run(KeyedCoProcessOperator(Join()), records, driver))
    assert sorted(o for o in out if o[1] != "factor") == [("a", 10), ("a", 14), ("b", 30)]
    assert sorted(o for o in out if o[1] == "factor") == [("a", "factor", 2), ("b", "factor", 10)]


@pytest.mark.parametrize("operator", [
    lambda: KeyedProcessOperator(CountWithTimeout()),
    lambda: WindowOperator(TumblingEventTimeWindows.of(Time.seconds(10)), "process", Describe()),
    lambda: WindowOperator(SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(5)), "process",
                           Describe()),
    lambda: WindowOperator(EventTimeSessionWindows.with_gap(Time.seconds(8)), "process", Describe()),
    lambda: WindowOperator(TumblingEventTimeWindows.of(Time.seconds(10)), "reduce", sum_reduce,
                           trigger=ContinuousEventTimeTrigger.of(Time.seconds(5))),
    lambda: WindowOperator(TumblingEventTimeWindows.of(Time.seconds(10)), "aggregate", Sum(),
                           allowed_lateness=Time.seconds(10), late_data_tag=OutputTag("late")),
], ids=["timers", "tumbling", "sliding", "session", "continuous", "lateness"])
def test_a_bounded_job_fires_each_key_at_its_records(operator: Any) -> None:
    """A bounded job's records all come in one micro-batch, after which the watermark is
    Flink's final one: a key's timers fired at the end of its records give what the next
    micro-batch's calls gave, key by key in the same order, with no timer left for Spark."""
    records = keyed_values(ordered(n=90, span=120_000)) + [("x", 3000, ("x", 5))]
    streamed = run(operator(), records, "streaming", batches=1)
    bounded_op = cloudpickle.loads(cloudpickle.dumps(operator()))
    spark = SparkStandIn(bounded_op, TimeDomain.EVENT_TIME, 0, bounded=True)
    spark.micro_batch(records)
    fired_at_records = list(spark.out)
    spark.watermark = MAX_WATERMARK
    spark.expire()
    assert spark.out == fired_at_records and not spark.timers
    key_of = lambda r: r[2][0] if isinstance(r[2], tuple) else None  # noqa: E731
    for key in "abcx":
        assert [r for r in fired_at_records if key_of(r) == key] == \
            [r for r in streamed if key_of(r) == key]
    assert sorted(map(repr, fired_at_records)) == sorted(map(repr, streamed))
