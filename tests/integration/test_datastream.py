"""DataStream shapes beyond a straight pipeline, on the shared real session: fan-out, side
outputs, keyed state and timers (BATCH mode). Each result is checked against the same
computation in plain Python on real data (pyspark's MovieLens sample, the GPL's text)."""

from __future__ import annotations

import collections
import functools
import os
import re
import time
from typing import Any, Iterable

import pyspark
import pytest

from sessioncluster import (
    AggregateFunction,
    AggregatingStateDescriptor,
    IntCounter,
    KeyedProcessFunction,
    ListStateDescriptor,
    MapFunction,
    MapStateDescriptor,
    OutputTag,
    ProcessFunction,
    ReducingStateDescriptor,
    TimeDomain,
    ValueStateDescriptor,
)
from sessioncluster.api.async_io import AsyncFunction, AsyncRetryStrategy, exception_type_predicate
from sessioncluster.api.functions import (
    AllWindowFunction,
    CoMapFunction,
    KeyedCoProcessFunction,
    ProcessWindowFunction,
)
from sessioncluster.api.restart import RestartStrategies
from sessioncluster.api.watermark import TimestampAssigner, WatermarkStrategy
from sessioncluster.api.window import (
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from sessioncluster.client.asyncstream import AsyncDataStream
from sessioncluster.common.execution_mode import RuntimeExecutionMode
from sessioncluster.common.time import Duration, Time
from sessioncluster.common.typeinfo import Types
from sessioncluster.graph.streamgraph import OperatorKind
from sessioncluster.protocol.messages import JobStatusChanged
from tests.unit.test_async_wait import completion_times

pytestmark = pytest.mark.integration

MOVIELENS = os.path.join(os.path.dirname(pyspark.__file__), "data", "mllib", "sample_movielens_data.txt")
TEXT = "/usr/share/common-licenses/GPL-3"


def ratings() -> list[tuple[int, int, int]]:
    """(user, movie, rating) from pyspark's MovieLens sample."""
    with open(MOVIELENS) as f:
        return [tuple(int(x) for x in line.split("::")) for line in f if line.strip()]  # type: ignore[misc]


def words() -> list[str]:
    with open(TEXT) as f:
        return re.findall(r"[a-z]+", f.read().lower())


def vertex_records(client: Any) -> dict[str, tuple[int, int]]:
    return {v.name: (v.records_in, v.records_out) for v in client.details().vertices}


def test_a_stream_read_by_two_sinks_runs_once(env) -> None:
    data = ratings()
    parsed = env.from_collection(data).map(lambda r: (r[1], r[2])).name("parse")
    parsed.filter(lambda m: m[1] >= 4).map(lambda m: m[0]).print()
    parsed.key_by(lambda m: m[0]).sum(1).print()
    client = env.execute_async("two sinks")
    lines = result_lines(client)
    good = sorted(int(x) for x in lines if not x.startswith("("))
    sums = dict(eval(x) for x in lines if x.startswith("("))  # noqa: S307 - our own tuples
    assert good == sorted(m for _, m, r in data if r >= 4)
    plain: dict[int, int] = collections.Counter()
    for _, movie, rating in data:
        plain[movie] += rating
    assert sums == dict(plain)
    records = vertex_records(client)
    parse = next(v for name, v in records.items() if "parse" in name)
    assert parse == (len(data), len(data))  # the shared upstream ran once: not once per branch


def result_lines(client: Any) -> list[str]:
    reply = client.wait()
    return [line.split("> ", 1)[-1] for batch in reply.printed for line in batch.split("\n")]


def test_fan_out_into_collect_counts_the_shared_vertex_once(env) -> None:
    ws = words()
    tokens = env.from_collection(ws).map(str.upper).name("upper").disable_chaining()
    long_words = tokens.filter(lambda w: len(w) > 8)
    short_words = tokens.filter(lambda w: len(w) <= 3)
    both = long_words.union(short_words)
    client = both.execute_and_collect_async("fan out")
    got = client.collect()
    assert sorted(got) == sorted(w.upper() for w in ws if len(w) > 8 or len(w) <= 3)
    records = vertex_records(client)
    assert records["upper"] == (len(ws), len(ws))


class SplitByRating(ProcessFunction):
    """Main output: the good ratings; side outputs: the bad ones and the movie ids seen."""

    BAD = OutputTag("bad")
    SEEN = OutputTag("seen")

    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Iterable[Any]:
        user, movie, rating = value
        ctx.output(self.SEEN, movie)
        if rating >= 3:
            yield user, movie, rating
        else:
            ctx.output(self.BAD, (user, movie))


def test_side_outputs_go_to_their_own_consumers(env) -> None:
    data = ratings()
    split = env.from_collection(data).process(SplitByRating()).name("split")
    bad = split.get_side_output(SplitByRating.BAD)
    seen = split.get_side_output(SplitByRating.SEEN).key_by(lambda m: m).map(lambda m: (m, 1)) \
        .key_by(lambda t: t[0]).sum(1)
    good_client = split.execute_and_collect_async("main output")
    assert sorted(good_client.collect()) == sorted(r for r in data if r[2] >= 3)
    assert sorted(bad.execute_and_collect("bad")) == sorted((u, m) for u, m, r in data if r < 3)
    assert dict(seen.execute_and_collect("seen")) == dict(collections.Counter(m for _, m, _ in data))
    never = split.get_side_output(OutputTag("never produced"))
    assert never.execute_and_collect("empty side output") == []


def test_side_output_needs_a_process_function(env) -> None:
    with pytest.raises(ValueError, match="only the stream of a process"):
        env.from_collection([1]).map(abs).get_side_output(OutputTag("x"))
    with pytest.raises(TypeError, match="takes an OutputTag"):
        env.from_collection([1]).process(SplitByRating()).get_side_output("bad")


class RatingStats(KeyedProcessFunction):
    """Per user: a running count (ValueState), the movies rated (ListState), the ratings per
    value (MapState), the best rating (ReducingState) and the mean (AggregatingState); at the
    end of the key's input an event-time timer emits the summary."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))
        self.movies = runtime_context.get_list_state(ListStateDescriptor("movies"))
        self.by_rating = runtime_context.get_map_state(MapStateDescriptor("by rating"))
        self.best = runtime_context.get_reducing_state(ReducingStateDescriptor("best", max))
        self.mean = runtime_context.get_aggregating_state(AggregatingStateDescriptor("mean", Mean()))

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        _, movie, rating = value
        self.count.update((self.count.value() or 0) + 1)
        self.movies.add(movie)
        self.by_rating.put(rating, (self.by_rating.get(rating) or 0) + 1)
        self.best.add(rating)
        self.mean.add(rating)
        ctx.timer_service().register_event_time_timer(1000)
        ctx.timer_service().register_event_time_timer(1000)  # the same timer: fires once
        ctx.timer_service().register_processing_time_timer(5)
        return ()

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        if ctx.time_domain() is TimeDomain.EVENT_TIME:
            yield (ctx.get_current_key(), self.count.value(), sorted(self.movies.get()),
                   dict(self.by_rating.items()), self.best.get(), round(self.mean.get(), 6))
        else:
            yield ctx.get_current_key(), "processing-time timer", timestamp


class Mean(AggregateFunction):
    def create_accumulator(self) -> tuple[int, int]:
        return 0, 0

    def add(self, value: int, acc: tuple[int, int]) -> tuple[int, int]:
        return acc[0] + value, acc[1] + 1

    def get_result(self, acc: tuple[int, int]) -> float:
        return acc[0] / acc[1]

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return a[0] + b[0], a[1] + b[1]


def test_keyed_state_of_every_kind_and_timers(env) -> None:
    data = ratings()
    got = (env.from_collection(data).key_by(lambda r: r[0]).process(RatingStats())
           .execute_and_collect("keyed state"))
    summaries = {g[0]: g[1:] for g in got if g[1] != "processing-time timer"}
    timers = sorted(g for g in got if g[1] == "processing-time timer")
    by_user: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)
    for user, movie, rating in data:
        by_user[user].append((movie, rating))
    expected = {user: (len(rs), sorted(m for m, _ in rs),
                       dict(collections.Counter(r for _, r in rs)), max(r for _, r in rs),
                       round(sum(r for _, r in rs) / len(rs), 6))
                for user, rs in by_user.items()}
    assert summaries == expected
    assert timers == sorted((user, "processing-time timer", 5) for user in by_user)


class Sessionize(KeyedProcessFunction):
    """Event-time timers fire in timestamp order after the key's records; a timer registered
    while they fire is ignored, as Flink's BATCH timer service does."""

    def open(self, runtime_context: Any) -> None:
        self.fired = runtime_context.get_list_state(ListStateDescriptor("fired"))

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        ctx.timer_service().register_event_time_timer(value[1])
        assert ctx.timer_service().current_watermark() == -(2**63)
        return ()

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        self.fired.add(timestamp)
        assert ctx.timer_service().current_watermark() == 2**63 - 1
        if timestamp == 30:
            ctx.timer_service().register_event_time_timer(35)
        yield ctx.get_current_key(), list(self.fired.get())


def test_event_time_timers_fire_in_order_at_the_end_of_each_key(env) -> None:
    events = [("a", 30), ("b", 7), ("a", 10), ("a", 20), ("b", 3), ("a", 10)]
    got = (env.from_collection(events).key_by(lambda e: e[0]).process(Sessionize())
           .execute_and_collect("timers"))
    last = {}
    for key, fired in got:
        last[key] = fired
    assert last == {"a": [10, 20, 30], "b": [3, 7]}


class RunningCount(MapFunction):
    """A rich map after key_by: its ValueState belongs to the record's key."""

    def open(self, runtime_context: Any) -> None:
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen"))

    def map(self, value: str) -> tuple[str, int]:
        n = (self.seen.value() or 0) + 1
        self.seen.update(n)
        return value, n


def test_rich_map_after_key_by_has_keyed_state(env) -> None:
    ws = words()
    got = env.from_collection(ws).key_by(lambda w: w).map(RunningCount()).execute_and_collect()
    highest: dict[str, int] = {}
    for word, n in got:
        highest[word] = max(highest.get(word, 0), n)
    assert highest == dict(collections.Counter(ws))
    assert len(got) == len(ws)


def test_keyed_state_on_a_stream_that_is_not_keyed_is_a_clear_error(env) -> None:
    import sessioncluster

    with pytest.raises(sessioncluster.JobExecutionException, match="Keyed state can only be used"):
        env.from_collection([1, 2]).map(RunningCount()).execute_and_collect("not keyed")


# -- event time and windows ------------------------------------------------------------------

class RatingTime(TimestampAssigner):
    """MovieLens sample rows have no time: the row's position is its event time (ms)."""

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return value[3]


class WindowSum(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        yield key, context.window().start, context.window().end, sum(e[2] for e in elements)


def timed_ratings() -> list[tuple[int, int, int, int]]:
    """(user, movie, rating, event time): every 7th row arrives out of order (3 s late)."""
    rows = ratings()
    return [(u, m, r, i * 100 - (3000 if i % 7 == 0 else 0)) for i, (u, m, r) in enumerate(rows)]


def plain_windows(rows: list[tuple[int, int, int, int]], size: int,
                  slide: int) -> dict[tuple[int, int, int], int]:
    """(user, window start, window end) -> sum of ratings, computed directly."""
    out: dict[tuple[int, int, int], int] = collections.Counter()
    for user, _, rating, t in rows:
        last_start = t - (t % slide)
        for start in range(last_start, t - size, -slide):
            out[(user, start, start + size)] += rating
    return dict(out)


def strategy() -> WatermarkStrategy:
    return (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
            .with_timestamp_assigner(RatingTime()))


def test_tumbling_and_sliding_event_time_windows_match_plain_python(env) -> None:
    rows = timed_ratings()
    timed = env.from_collection(rows).assign_timestamps_and_watermarks(strategy())
    tumbling = (timed.key_by(lambda r: r[0]).window(TumblingEventTimeWindows.of(Time.seconds(10)))
                .process(WindowSum()).execute_and_collect("tumbling"))
    assert {(k, s, e): v for k, s, e, v in tumbling} == plain_windows(rows, 10_000, 10_000)
    sliding = (timed.key_by(lambda r: r[0])
               .window(SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(5)))
               .process(WindowSum()).execute_and_collect("sliding"))
    assert {(k, s, e): v for k, s, e, v in sliding} == plain_windows(rows, 10_000, 5_000)


def test_session_windows_and_window_timestamps(env) -> None:
    events = [("a", 1), ("a", 4), ("b", 6), ("a", 12), ("b", 3), ("a", 7)]

    class EventTime(TimestampAssigner):
        def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
            return value[1]

    class Summary(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
            yield key, context.window().start, context.window().end, sorted(e[1] for e in elements)

    timed = env.from_collection(events).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime()))
    got = (timed.key_by(lambda e: e[0]).window(EventTimeSessionWindows.with_gap(Time.milliseconds(4)))
           .process(Summary()).execute_and_collect("sessions"))
    assert sorted(got) == [("a", 1, 11, [1, 4, 7]), ("a", 12, 16, [12]), ("b", 3, 10, [3, 6])]


def test_count_windows_and_window_all(env) -> None:
    rows = ratings()
    # a key's arrival order decides its count windows: one source subtask keeps the file's order
    got = (env.from_collection(rows).set_parallelism(1).key_by(lambda r: r[0]).count_window(3)
           .reduce(lambda x, y: (x[0], 0, x[2] + y[2])).execute_and_collect("count windows"))
    expected = []
    by_user: dict[int, list[int]] = collections.defaultdict(list)
    for user, _, rating in rows:
        by_user[user].append(rating)
    for user, rs in by_user.items():
        expected += [(user, 0, sum(rs[i:i + 3])) for i in range(0, len(rs) - len(rs) % 3, 3)]
    assert sorted(got) == sorted(expected)  # an incomplete last window does not fire
    timed = env.from_collection(timed_ratings()).assign_timestamps_and_watermarks(strategy())
    totals = (timed.map(lambda r: r[2]).window_all(TumblingEventTimeWindows.of(Time.seconds(30)))
              .reduce(lambda a, b: a + b).execute_and_collect("window all"))
    plain: dict[int, int] = collections.Counter()
    for _, _, rating, t in timed_ratings():
        plain[t // 30_000] += rating
    assert sorted(totals) == sorted(plain.values())


def test_window_all_and_count_window_all_are_one_keyed_window(env) -> None:
    """window_all over 100 records of [0, 10 s) from 4 subtasks: one window with all of them, as
    plain Python; count_window_all(30): three windows of 30 records (10 left over do not fire)."""
    stamps = [i * 97 for i in range(100)]
    timed = (env.from_collection([(t, 1) for t in stamps]).set_parallelism(4)
             .assign_timestamps_and_watermarks(
                 WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(RatingTime0())))
    got = (timed.map(lambda r: r[0]).window_all(TumblingEventTimeWindows.of(Time.seconds(10)))
           .reduce(lambda a, b: a + b).execute_and_collect("window_all of 100"))
    assert got == [sum(stamps)]
    counts = (env.from_collection(list(range(100))).set_parallelism(4).count_window_all(30)
              .apply(AllLen()).execute_and_collect("count_window_all"))
    assert counts == [30, 30, 30]
    job = env.from_collection(list(range(100))).count_window_all(30).apply(AllLen())
    window = [n for n in job.env.stream_graph.nodes if n.name == "Window(All)"][0]
    assert window.parallelism == 1


class RatingTime0(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return value[0]


class AllLen(AllWindowFunction):
    def apply(self, window: Any, inputs: Iterable[Any]) -> Any:
        yield len(list(inputs))


def test_window_errors_are_clear(env) -> None:
    with pytest.raises(AttributeError, match="key_by\\(...\\).window"):
        env.from_collection([1]).window(TumblingEventTimeWindows.of(Time.seconds(1)))
    import sessioncluster

    no_time = (env.from_collection([("a", 1)]).key_by(lambda e: e[0])
               .window(TumblingEventTimeWindows.of(Time.seconds(1))).reduce(lambda a, b: a))
    with pytest.raises(sessioncluster.JobExecutionException,
                       match="assign_timestamps_and_watermarks|timestamp"):
        no_time.execute_and_collect("no timestamps")


# -- two inputs -------------------------------------------------------------------------------

class Tag(CoMapFunction):
    def map1(self, value: Any) -> Any:
        return "rating", value[2]

    def map2(self, value: Any) -> Any:
        return "word", value


def test_connect_with_a_co_map_reads_both_inputs(env) -> None:
    rows, ws = ratings(), words()[:500]
    got = env.from_collection(rows).connect(env.from_collection(ws)).map(Tag()).execute_and_collect("co-map")
    assert sorted(got) == sorted([("rating", r) for _, _, r in rows] + [("word", w) for w in ws])


class Enrich(KeyedCoProcessFunction):
    """Movie titles (second input) and ratings (first input) of the same movie meet in one
    subtask: the ratings wait in keyed state until the end of the key, when a timer joins them."""

    def open(self, runtime_context: Any) -> None:
        self.title = runtime_context.get_state(ValueStateDescriptor("title"))
        self.pending = runtime_context.get_list_state(ListStateDescriptor("pending"))

    def process_element1(self, value: Any, ctx: Any) -> Iterable[Any]:
        self.pending.add(value[2])
        ctx.timer_service().register_event_time_timer(0)
        return ()

    def process_element2(self, value: Any, ctx: Any) -> Iterable[Any]:
        self.title.update(value[1])
        return ()

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        ratings_of = list(self.pending.get())
        yield ctx.get_current_key(), self.title.value(), len(ratings_of), sum(ratings_of)


def test_keyed_connect_shares_state_between_inputs(env) -> None:
    rows = ratings()
    titles = [(m, f"movie {m}") for m in sorted({m for _, m, _ in rows})]
    got = (env.from_collection(rows).connect(env.from_collection(titles))
           .key_by(lambda r: r[1], lambda t: t[0]).process(Enrich()).execute_and_collect("join"))
    expected = collections.defaultdict(list)
    for _, movie, rating in rows:
        expected[movie].append(rating)
    assert sorted(got) == sorted((m, f"movie {m}", len(rs), sum(rs)) for m, rs in expected.items())


def test_the_job_graph_has_one_two_input_vertex(env) -> None:
    stream = env.from_collection([1]).connect(env.from_collection(["a"])).map(Tag())
    stream.execute_and_collect_async("graph only").wait()
    graph = env.job_graph("two inputs", [stream._sink(OperatorKind.SINK_COLLECT)])[0]
    (two,) = [v for v in graph.vertices if len(v.inputs) == 2]
    assert sorted(e.input_index for e in two.inputs) == [0, 1]


# -- restart strategies ------------------------------------------------------------------------

class CountingFlaky(MapFunction):
    """Fails while fewer than ``failures`` attempts have failed (a file per failure); counts
    the records it maps in an accumulator."""

    def __init__(self, marks: str, failures: int) -> None:
        self.marks, self.failures = marks, failures

    def open(self, runtime_context: Any) -> None:
        self.records = IntCounter()
        runtime_context.add_accumulator("records", self.records)

    def map(self, value: int) -> int:
        self.records.add(1)
        if value == 0:
            failed = len(os.listdir(self.marks))
            if failed < self.failures:
                open(os.path.join(self.marks, str(failed)), "w").close()
                raise ValueError(f"flaky failure {failed}")
        return value * 2


def statuses_of(session: Any, run: Any) -> tuple[Any, list[str]]:
    """Run the job ``run()`` submits; its JobStatus changes as the clients saw them."""
    seen: list[tuple[str, str]] = []

    def on_event(topic: str, message: Any) -> None:
        if isinstance(message, JobStatusChanged) and topic == message.job_id:
            seen.append((message.job_id, message.status.value))

    unsubscribe = session.events.subscribe(None, on_event)
    try:
        client = run()
        client.wait(timeout=120)
        time.sleep(0.3)  # the last status events
    finally:
        unsubscribe()
    return client, [status for job_id, status in seen if job_id == client.job_id]


def test_fixed_delay_restart_runs_the_job_again_and_counts_once(session, env, tmp_path) -> None:
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(2, 100))
    data = list(range(40))
    client, seen = statuses_of(session, lambda: env.from_collection(data).map(
        CountingFlaky(str(tmp_path), failures=2)).execute_and_collect_async("restart"))
    assert sorted(client.collect()) == [x * 2 for x in data]
    assert "RESTARTING" in seen and seen[-1] == "FINISHED", seen
    result = client.get_job_execution_result()
    assert result.get_accumulator_result("records") == len(data)  # only the successful run
    latest: dict[int, Any] = {}
    for ex in client.details().executions:
        if ex.subtask not in latest or ex.attempt > latest[ex.subtask].attempt:
            latest[ex.subtask] = ex
    # every subtask ran again: its latest attempt, of the second run, finished
    assert sorted(latest) == [0, 1]
    assert all(ex.state.value == "FINISHED" and ex.attempt >= 1 for ex in latest.values())


def test_no_restart_and_an_exhausted_strategy_fail_with_the_users_error(session, env, tmp_path) -> None:
    import sessioncluster

    env.set_restart_strategy(RestartStrategies.no_restart())
    (tmp_path / "a").mkdir()
    with pytest.raises(sessioncluster.JobExecutionException, match="flaky failure"):
        env.from_collection(range(4)).map(CountingFlaky(str(tmp_path / "a"), 99)).execute_and_collect()
    (tmp_path / "b").mkdir()
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(1, 0))
    client, seen = statuses_of(session, lambda: env.from_collection(range(4)).map(
        CountingFlaky(str(tmp_path / "b"), 99)).execute_and_collect_async("always fails"))
    assert seen.count("RESTARTING") == 1 and seen[-1] == "FAILED", seen
    with pytest.raises(sessioncluster.JobExecutionException, match="flaky failure"):
        client.get_job_execution_result()


# -- cache() -----------------------------------------------------------------------------------

class CountedParse(MapFunction):
    """Parses a rating line and counts the records it parsed (so a rerun would show)."""

    def open(self, runtime_context: Any) -> None:
        self.parsed = IntCounter()
        runtime_context.add_accumulator("parsed", self.parsed)

    def map(self, line: str) -> tuple[int, int, int]:
        self.parsed.add(1)
        user, movie, rating = line.split("::")
        return int(user), int(movie), int(rating)


def test_a_cached_stream_is_computed_once_and_read_by_later_jobs(session, env) -> None:
    import sessioncluster

    rows = ratings()
    parsed = env.read_text_file(MOVIELENS).map(CountedParse()).name("parse").cache()
    first = parsed.filter(lambda r: r[2] >= 4).execute_and_collect_async("first use")
    assert sorted(first.collect()) == sorted(r for r in rows if r[2] >= 4)
    assert first.get_job_execution_result().get_accumulator_result("parsed") == len(rows)
    (info,) = [c for c in session.cached_streams() if c.cache_id == parsed.cache_id]
    assert info.size_bytes > 0 and info.partitions == 2 and info.name == "parse"
    assert any(c.cache_id == parsed.cache_id for c in session.status().cached_streams)

    second = parsed.key_by(lambda r: r[1]).map(lambda r: (r[1], r[2])).key_by(lambda t: t[0]) \
        .sum(1).execute_and_collect_async("second use")
    plain: dict[int, int] = collections.Counter()
    for _, movie, rating in rows:
        plain[movie] += rating
    assert dict(second.collect()) == dict(plain)
    # the upstream did not run again: no source vertex, no parse accumulator
    names = [v.name for v in second.details().vertices]
    assert not any("Source" in n for n in names), names
    with pytest.raises(KeyError):
        second.get_job_execution_result().get_accumulator_result("parsed")

    parsed.invalidate()
    assert all(c.cache_id != parsed.cache_id for c in session.cached_streams())
    with pytest.raises(ValueError, match="was invalidated"):
        parsed.map(abs).execute_and_collect("after invalidate")
    assert sessioncluster.StreamExecutionEnvironment  # the session goes on
    assert sorted(env.from_collection([2, 1]).execute_and_collect()) == [1, 2]


# -- async I/O ---------------------------------------------------------------------------------

class SleepyLookup(AsyncFunction):
    """Each value after a delay of its own (PyFlink's probe: 0.04 s a step; the order is the
    same at 0.06 s), failing its first attempt when it is a multiple of 7."""

    def __init__(self, flaky: bool) -> None:
        self.flaky = flaky
        self.attempts: dict[int, int] = {}

    async def async_invoke(self, value: int) -> list[int]:
        import asyncio

        n = self.attempts[value] = self.attempts.get(value, 0) + 1
        await asyncio.sleep(((value * 37) % 11) * 0.06)
        if self.flaky and value % 7 == 0 and n == 1:
            raise TimeoutError(f"first attempt of {value}")
        return [value * 10]


def collected(stream: Any, job_name: str) -> list[Any]:
    """A stream's records; STREAMING's come from PyFlink's CloseableIterator."""
    records = stream.execute_and_collect(job_name)
    if isinstance(records, list):
        return records
    with records as iterator:
        return list(iterator)


def test_async_wait_in_batch_and_streaming_as_flink(session) -> None:
    """AsyncDataStream's unordered and ordered wait (with a retry) in BATCH and in STREAMING,
    parallelism 1, as PyFlink 2.3 emits them (/work/briefs/data/dsasync/probe_output.txt); a
    failing call without retry fails the job with PyFlink's message and the user's line."""
    retry = AsyncRetryStrategy.fixed_delay(2, 10, None, functools.partial(
        exception_type_predicate, expected_error_type=TimeoutError))
    for mode in (RuntimeExecutionMode.BATCH, RuntimeExecutionMode.STREAMING):
        env = session.get_execution_environment()
        env.set_parallelism(1)
        env.set_runtime_mode(mode)
        source = env.from_collection(list(range(20)))
        unordered = AsyncDataStream.unordered_wait(source, SleepyLookup(False), Time.seconds(10), 10)
        got = collected(unordered, f"unordered {mode}")
        flink = [0, 30, 110, 60, 90, 10, 140, 40, 120, 70, 100, 170, 20, 50, 150, 80, 130, 180,
                 160, 190]
        # in the order of completion, as Flink's (calls completing at once in either order)
        at = completion_times(10)
        assert sorted(got) == sorted(flink)
        assert [at[v // 10] for v in got] == [at[v // 10] for v in flink] == sorted(at.values())
        ordered = AsyncDataStream.ordered_wait_with_retry(
            env.from_collection(list(range(20))), SleepyLookup(True), Time.seconds(10), retry, 2,
            Types.INT())
        assert collected(ordered, f"ordered {mode}") == [v * 10 for v in range(20)]
        assert ordered.node.name == "async wait operator"
    env = session.get_execution_environment()
    failing = AsyncDataStream.ordered_wait(env.from_collection([1, 7]), SleepyLookup(True),
                                           Time.seconds(10))
    with pytest.raises(Exception) as info:
        failing.execute_and_collect("failing")
    assert ("Error happens inside the class '<class 'tests.integration.test_datastream."
            "SleepyLookup'>' during handling input '7'\", TimeoutError('first attempt of 7')"
            in str(info.value))
    assert 'raise TimeoutError(f"first attempt of {value}")' in str(info.value)


class SubtaskTag(MapFunction):
    """``value@subtask``: which subtask of the map got the record."""

    def open(self, runtime_context: Any) -> None:
        self.subtask = runtime_context.get_index_of_this_subtask()

    def map(self, value: Any) -> str:
        return f"{value}@{self.subtask}"


def test_physical_partitioning_reaches_flinks_subtasks(session) -> None:
    """broadcast(), partition_custom(), rebalance() and shuffle() into a map of 3 subtasks, as
    PyFlink 2.3 (/work/briefs/data/lead28/partitioning.out): every record at every subtask, each
    at the Partitioner's, each exactly once; STREAMING refuses broadcast() by name."""
    import sessioncluster

    env = session.get_execution_environment()
    env.set_parallelism(2)
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    source = env.from_collection(list(range(6)))
    broadcast = sorted(source.broadcast().map(SubtaskTag()).set_parallelism(3)
                       .execute_and_collect("broadcast"))
    assert broadcast == sorted(f"{v}@{s}" for v in range(6) for s in range(3))
    custom = source.partition_custom(lambda key, n: key % n, lambda x: x) \
        .map(SubtaskTag()).set_parallelism(3).execute_and_collect("custom")
    assert sorted(custom) == ["0@0", "1@1", "2@2", "3@0", "4@1", "5@2"]
    for how in ("rebalance", "shuffle"):
        tagged = getattr(source, how)().map(SubtaskTag()).set_parallelism(3) \
            .execute_and_collect(how)
        assert sorted(t.split("@")[0] for t in tagged) == [str(v) for v in range(6)]
        if how == "rebalance":  # round robin: two records each
            assert sorted(collections.Counter(t.split("@")[1] for t in tagged).values()) == [2, 2, 2]
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    with pytest.raises(sessioncluster.JobExecutionException, match="reads a BROADCAST "
                       "partitioning .* runs in BATCH mode only"):
        collected(env.from_collection([1]).broadcast().map(SubtaskTag()), "streaming broadcast")


class SharedCount(KeyedCoProcessFunction):
    """Both inputs' records of a key counted in one keyed state: ``(key, count so far)``."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element1(self, value: Any, ctx: Any) -> Iterable[Any]:
        self.count.update((self.count.value() or 0) + 1)
        yield ctx.get_current_key(), self.count.value()

    process_element2 = process_element1


class WithJobParameter(MapFunction):
    def open(self, runtime_context: Any) -> None:
        self.suffix = runtime_context.get_job_parameter("suffix", "none")

    def map(self, value: Any) -> Any:
        return f"{value}{self.suffix}"


def test_a_keyed_stream_is_a_datastream_as_pyflinks(session) -> None:
    """min_by/max_by, sum of plain numbers, union and key_by(...).connect(key_by(...)) in BATCH
    and STREAMING, parallelism 1, as PyFlink 2.3 gives them
    (/work/briefs/data/lead29/keyed_stream.out): STREAMING's running values, BATCH's last."""
    data = [("a", 3, "x"), ("a", 1, "y"), ("b", 5, "z"), ("a", 1, "w"), ("b", 7, "v")]
    flink = {
        RuntimeExecutionMode.BATCH: ([("a", 1, "y"), ("b", 5, "z")], [("a", 3, "x"), ("b", 7, "v")],
                                     [6, 9]),
        RuntimeExecutionMode.STREAMING: (
            [("a", 3, "x"), ("a", 1, "y"), ("b", 5, "z"), ("a", 1, "y"), ("b", 5, "z")],
            [("a", 3, "x"), ("a", 3, "x"), ("b", 5, "z"), ("a", 3, "x"), ("b", 7, "v")],
            [1, 2, 4, 6, 9])}
    for mode, (min_by, max_by, sums) in flink.items():
        env = session.get_execution_environment()
        env.set_parallelism(1)
        env.set_runtime_mode(mode)
        keyed = env.from_collection(data).key_by(lambda r: r[0])
        numbers = env.from_collection([1, 2, 3, 4, 5], type_info=Types.INT())
        left, right = env.from_collection([("a", 1), ("b", 2)]), env.from_collection(
            [("a", "L"), ("b", "M"), ("a", "N")])
        branches = {  # one job: each branch's records tagged with its name
            "min_by": keyed.min_by(1), "max_by": keyed.max_by(1),
            "sum": numbers.key_by(lambda x: x % 2).sum(),
            "union": keyed.union(env.from_collection(data)),
            "connect": left.key_by(lambda r: r[0]).connect(right.key_by(lambda r: r[0]))
                           .process(SharedCount()),
            "map": keyed.map(lambda r: r[1]),
            "parameter": numbers.map(WithJobParameter())}  # the environment's job parameters
        env.get_config().set_global_job_parameters({"suffix": "!"})
        tagged = [stream.map(functools.partial(tag_with, name)) for name, stream in branches.items()]
        got = collections.defaultdict(list)
        for name, value in collected(tagged[0].union(*tagged[1:]), f"keyed stream {mode}"):
            got[name].append(value)
        for name, expected in (("min_by", min_by), ("max_by", max_by)):
            for key in "ab":  # each key's values in Flink's order (the keys may interleave)
                assert [r for r in got[name] if r[0] == key] == [r for r in expected if r[0] == key]
        assert sorted(got["sum"]) == sorted(sums)
        assert sorted(got["union"]) == sorted(data * 2)
        assert sorted(got["connect"]) == [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2)]
        assert sorted(got["map"]) == [1, 1, 3, 5, 7]
        assert sorted(got["parameter"]) == ["1!", "2!", "3!", "4!", "5!"]


def tag_with(name: str, value: Any) -> tuple[str, Any]:
    return name, value
