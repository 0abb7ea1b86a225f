"""BATCH pre-aggregation of window contents: the subtasks before the shuffle combine their records
per (key, window) (``WindowPreAggregator``), the window operator after it combines the partials
(``process_partials``) and runs the window function once per window. Checked against plain Python
and against the one-record path; and which windows must not pre-aggregate."""

from __future__ import annotations

import random
from typing import Any, Iterable

import cloudpickle
import pytest

from sessioncluster.api.functions import (
    AggregateFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
)
from sessioncluster.api.window import (
    CountEvictor,
    CountTrigger,
    CountTumblingWindowAssigner,
    EventTimeSessionWindows,
    EventTimeTrigger,
    ProcessingTimeTrigger,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from sessioncluster.client.environment import StreamExecutionEnvironment
from sessioncluster.common.time import Time
from sessioncluster.graph.streamgraph import OperatorKind, Partitioning
from sessioncluster.runtime.batch_driver import run as run_batch
from sessioncluster.runtime.operators import WindowOperator, WindowPreAggregator, open_function


class Sum(ReduceFunction):
    def reduce(self, a: Any, b: Any) -> Any:
        return (a[0], a[1] + b[1])


class SumAndCount(AggregateFunction):
    def create_accumulator(self) -> Any:
        return (0, 0)

    def add(self, value: Any, accumulator: Any) -> Any:
        return (accumulator[0] + value[1], accumulator[1] + 1)

    def get_result(self, accumulator: Any) -> Any:
        return accumulator

    def merge(self, a: Any, b: Any) -> Any:
        return (a[0] + b[0], a[1] + b[1])


class NoMerge(SumAndCount):
    merge = AggregateFunction.merge


class OpenedSum(Sum):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.offset = 0


class WithWindow(ProcessWindowFunction):
    """(key, window start, window end, the one pre-aggregated element, calls so far)."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        (element,) = list(elements)
        w = context.window()
        yield key, w.start, w.end, element


def records(seed: int, n: int = 500) -> list[tuple[str, int, tuple[str, int]]]:
    """(key, timestamp, (key, value)), out of order, negative timestamps too."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.choice("abcde")
        out.append((k, rng.randint(-80, 80), (k, rng.randint(1, 9))))
    return out


def opened(op: WindowOperator) -> WindowOperator:
    op = cloudpickle.loads(cloudpickle.dumps(op))
    open_function(op, RuntimeContext("window", 0, 1, 0, {}))
    return op


def per_element(op: WindowOperator, recs: list[Any]) -> list[Any]:
    op = opened(op)
    out = list(run_batch(op, iter(recs)))
    op.close()
    return out


def pre_aggregated(op: WindowOperator, recs: list[Any], subtasks: int = 3) -> tuple[list[Any], int]:
    """The records split over ``subtasks`` producers, each pre-aggregating its share, the partials
    shuffled (keys' partials in the order the producers send them) into the window operator.
    Returns its output and the number of partials."""
    shares: list[list[tuple[int, Any]]] = [[] for _ in range(subtasks)]
    for i, (_, ts, value) in enumerate(recs):
        shares[i % subtasks].append((ts, value))
    partials = []
    for share in shares:
        combiner = WindowPreAggregator(cloudpickle.loads(cloudpickle.dumps(op)))
        combined, n = combiner.combine(iter(share), lambda v: v[0], True)
        assert n == len(share)
        partials += [(key, w.max_timestamp(), (w, p)) for (key, w), p in combined.items()]
    window = opened(op)
    out = list(run_batch(window, iter(partials), partials=True))
    window.close()
    return out, len(partials)


def by_key(out: list[Any]) -> dict[str, list[Any]]:
    got: dict[str, list[Any]] = {}
    for tag, ts, v in out:
        assert tag is None
        got.setdefault(v[0], []).append((ts, v))
    return got


def plain_windows(recs: list[Any], size: int, slide: int) -> dict[str, list[Any]]:
    """key -> [(window's max timestamp, (key, start, end, sum, count))] by window end, in plain
    Python (a record at ts is in every [s, s + size) with s a multiple of slide)."""
    sums: dict[tuple[str, int], list[int]] = {}
    for k, ts, (_, v) in recs:
        first = ts - ts % slide - size + slide
        for s in range(first, ts + 1, slide):
            if s <= ts < s + size:
                acc = sums.setdefault((k, s), [0, 0])
                acc[0] += v
                acc[1] += 1
    out: dict[str, list[Any]] = {}
    for (k, s), (total, count) in sorted(sums.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        out.setdefault(k, []).append((s + size - 1, (k, s, s + size, total, count)))
    return out


ASSIGNERS = {"tumbling": (TumblingEventTimeWindows.of(Time.milliseconds(10)), 10, 10),
             "sliding": (SlidingEventTimeWindows.of(Time.milliseconds(15), Time.milliseconds(5)), 15, 5)}


@pytest.mark.parametrize("assigner", list(ASSIGNERS))
@pytest.mark.parametrize("kind", ["reduce", "aggregate"])
def test_pre_aggregated_windows_give_plain_pythons_result(kind: str, assigner: str) -> None:
    recs = records(7)
    windows, size, slide = ASSIGNERS[assigner]
    fn = Sum() if kind == "reduce" else SumAndCount()
    op = WindowOperator(windows, kind, fn, window_function=WithWindow())
    assert op.pre_aggregates_in_batch
    out, n_partials = pre_aggregated(op, recs)
    expected = plain_windows(recs, size, slide)
    got = {k: [(ts, (key, s, e, el[1] if kind == "reduce" else el[0],
                     el[1] if kind == "aggregate" else None))
               for ts, (key, s, e, el) in wins] for k, wins in by_key(out).items()}
    if kind == "reduce":  # a reduce keeps no count: compare the sums
        expected = {k: [(ts, (key, s, e, total, None)) for ts, (key, s, e, total, _) in wins]
                    for k, wins in expected.items()}
    assert got == expected
    assert n_partials < len(recs)
    # the same as the one-record path, window by window (keys may come in another order)
    assert by_key(out) == by_key(per_element(op, recs))


@pytest.mark.parametrize("assigner", [TumblingProcessingTimeWindows.of(Time.hours(1)),
                                      SlidingProcessingTimeWindows.of(Time.hours(2), Time.hours(1))],
                         ids=["tumbling", "sliding"])
def test_processing_time_windows_pre_aggregate(assigner: Any) -> None:
    """The wall clock decides the windows: every record lands in the current hour's window(s),
    whose totals are all of the key's records (two runs straddling an hour's end differ)."""
    recs = records(3, 200)
    op = WindowOperator(assigner, "reduce", Sum())
    assert op.pre_aggregates_in_batch
    out, _ = pre_aggregated(op, recs)
    totals: dict[str, int] = {}
    for k, _, (_, v) in recs:
        totals[k] = totals.get(k, 0) + v
    last = {v[0]: v[1] for _, _, v in out}  # the latest window has every record, unless the hour
    if len(out) == len(totals) * (1 if isinstance(assigner, TumblingProcessingTimeWindows) else 2):
        assert last == totals


def test_partials_are_one_per_key_and_window_per_subtask() -> None:
    recs = [("a", 1, ("a", 1)), ("a", 2, ("a", 2)), ("a", 12, ("a", 3)), ("b", 3, ("b", 4))]
    combiner = WindowPreAggregator(WindowOperator(TumblingEventTimeWindows.of(Time.milliseconds(10)),
                                                  "reduce", Sum()))
    combined, n = combiner.combine(iter([(ts, v) for _, ts, v in recs]), lambda v: v[0], True)
    assert n == 4
    assert {(k, (w.start, w.end)): p for (k, w), p in combined.items()} == {
        ("a", (0, 10)): ("a", 3), ("a", (10, 20)): ("a", 3), ("b", (0, 10)): ("b", 4)}


def test_a_record_without_timestamp_in_an_event_time_window_fails_as_before() -> None:
    combiner = WindowPreAggregator(WindowOperator(TumblingEventTimeWindows.of(Time.milliseconds(10)),
                                                  "reduce", Sum()))
    with pytest.raises(RuntimeError, match="timestamp"):
        combiner.combine(iter([("a", 1)]), lambda v: v[0], False)


TUMBLING = TumblingEventTimeWindows.of(Time.milliseconds(10))


@pytest.mark.parametrize("make", [
    lambda: WindowOperator(TUMBLING, "reduce", Sum(), evictor=CountEvictor.of(2)),
    lambda: WindowOperator(TUMBLING, "reduce", Sum(), trigger=CountTrigger.of(3)),
    lambda: WindowOperator(TUMBLING, "reduce", Sum(), trigger=ProcessingTimeTrigger()),
    lambda: WindowOperator(EventTimeSessionWindows.with_gap(Time.milliseconds(3)), "reduce", Sum()),
    lambda: WindowOperator(CountTumblingWindowAssigner.of(3), "reduce", Sum()),
    lambda: WindowOperator(TUMBLING, "process", WithWindow()),
    lambda: WindowOperator(TUMBLING, "aggregate", NoMerge()),
    lambda: WindowOperator(TUMBLING, "reduce", OpenedSum()),
], ids=["evictor", "count-trigger", "other-trigger", "session", "count-window", "process",
        "aggregate-without-merge", "rich-reduce-with-open"])
def test_what_must_not_pre_aggregate(make: Any) -> None:
    assert not make().pre_aggregates_in_batch


def test_the_default_trigger_given_explicitly_still_pre_aggregates() -> None:
    assert WindowOperator(TUMBLING, "reduce", lambda a, b: a, trigger=EventTimeTrigger()
                          ).pre_aggregates_in_batch


def _edges(*streams: Any, into: str = "Window") -> list[Any]:
    """The HASH edges into the vertices named ``into...`` of the job of ``streams``."""
    env = streams[0].env
    graph, _ = env.job_graph("job", [s._sink(OperatorKind.SINK_COLLECT) for s in streams])
    return [e for e in graph.edges if e.ship_strategy is Partitioning.HASH
            and graph.vertex(e.target).name.startswith(into)]


def test_the_job_graph_marks_a_pre_aggregating_windows_edge() -> None:
    env = StreamExecutionEnvironment(None)
    keyed = env.from_collection([("a", 1)]).map(lambda t: t).key_by(lambda t: t[0])
    [edge] = _edges(keyed.window(TUMBLING).reduce(Sum(), window_function=WithWindow()))
    assert edge.window_partials and edge.combiner_key is not None


@pytest.mark.parametrize("window", [
    lambda k: k.window(TUMBLING).process(WithWindow()),
    lambda k: k.window(TUMBLING).trigger(CountTrigger.of(2)).reduce(Sum()),
    lambda k: k.window(TUMBLING).evictor(CountEvictor.of(2)).reduce(Sum()),
    lambda k: k.window(EventTimeSessionWindows.with_gap(Time.milliseconds(3))).reduce(Sum()),
], ids=["process", "custom-trigger", "evictor", "session"])
def test_the_job_graph_leaves_other_windows_alone(window: Any) -> None:
    env = StreamExecutionEnvironment(None)
    keyed = env.from_collection([("a", 1)]).key_by(lambda t: t[0])
    [edge] = _edges(window(keyed))
    assert not edge.window_partials and edge.combiner_key is None


def test_a_window_reading_a_fanned_out_stream_takes_records_from_every_input() -> None:
    """Two consumers of one stream: the source hands records on one at a time, so the window
    takes no partials over either of its inputs."""
    env = StreamExecutionEnvironment(None)
    src = env.from_collection([("a", 1)]).map(lambda t: t)
    other = env.from_collection([("b", 2)]).map(lambda t: t)
    windowed = src.union(other).key_by(lambda t: t[0]).window(TUMBLING).reduce(Sum())
    edges = _edges(windowed, src.key_by(lambda t: t[0]).reduce(Sum()))
    assert len(edges) == 2
    assert not any(e.window_partials or e.combiner_key for e in edges)
    # without the second consumer both inputs send partials
    edges = _edges(src.union(other).key_by(lambda t: t[0]).window(TUMBLING).reduce(Sum()))
    assert len(edges) == 2 and all(e.window_partials for e in edges)
