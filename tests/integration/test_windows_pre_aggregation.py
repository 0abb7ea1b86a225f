"""BATCH windows whose contents are pre-aggregated before the shuffle (a reduce, or an aggregate
with merge, over tumbling or sliding windows with the assigner's own trigger), on a real session
cluster: plain Python's results, one partial per (key, window) and subtask across the shuffle;
and windows that must not pre-aggregate (an evictor, a custom trigger, sessions) still right."""

from __future__ import annotations

import collections
import random
from typing import Any, Iterable

from sessioncluster.api.functions import AggregateFunction, ProcessWindowFunction, ReduceFunction
from sessioncluster.api.watermark import TimestampAssigner, WatermarkStrategy
from sessioncluster.api.window import (
    CountEvictor,
    CountTrigger,
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from sessioncluster.common.time import Duration, Time

N = 3000


def events() -> list[tuple[str, int, int]]:
    """(key, value, event time in ms): distinct times 10 ms apart, shuffled within each 2 s."""
    rng = random.Random(26)
    times = list(range(0, N * 10, 10))
    for i in range(0, N, 200):
        chunk = times[i:i + 200]
        rng.shuffle(chunk)
        times[i:i + 200] = chunk
    return [(f"k{rng.randrange(7)}", rng.randint(1, 9), t) for t in times]


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return value[2]


def timed(env: Any) -> Any:
    return env.from_collection(events()).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(2))
        .with_timestamp_assigner(EventTime()))


class Add(ReduceFunction):
    def reduce(self, a: Any, b: Any) -> Any:
        return (a[0], a[1] + b[1], max(a[2], b[2]))


class SumCount(AggregateFunction):
    def create_accumulator(self) -> Any:
        return [0, 0]

    def add(self, value: Any, accumulator: Any) -> Any:
        return [accumulator[0] + value[1], accumulator[1] + 1]

    def get_result(self, accumulator: Any) -> Any:
        return tuple(accumulator)

    def merge(self, a: Any, b: Any) -> Any:
        return [a[0] + b[0], a[1] + b[1]]


class WithWindow(ProcessWindowFunction):
    """(key, window start, window end, the window's one pre-aggregated element)."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        (element,) = list(elements)
        yield key, context.window().start, context.window().end, element


def plain(size: int, slide: int) -> dict[tuple[str, int, int], list[int]]:
    """(key, start, end) -> [sum, count, latest event time] in plain Python."""
    out: dict[tuple[str, int, int], list[int]] = {}
    for key, value, t in events():
        for start in range(t - t % slide, t - size, -slide):
            acc = out.setdefault((key, start, start + size), [0, 0, t])
            acc[0] += value
            acc[1] += 1
            acc[2] = max(acc[2], t)
    return out


def vertex_records(client: Any) -> dict[str, tuple[int, int]]:
    return {v.name: (v.records_in, v.records_out) for v in client.details().vertices}


def test_tumbling_and_sliding_reduce_and_aggregate_match_plain_python(env) -> None:
    for assigner, size, slide in ((TumblingEventTimeWindows.of(Time.seconds(5)), 5000, 5000),
                                  (SlidingEventTimeWindows.of(Time.seconds(6), Time.seconds(2)),
                                   6000, 2000)):
        want = plain(size, slide)
        keyed = timed(env).key_by(lambda e: e[0])
        client = (keyed.window(assigner).reduce(Add(), window_function=WithWindow())
                  .execute_and_collect_async(f"reduce {assigner}"))
        got = client.collect()
        assert {(k, s, e): [v[1], v[2]] for k, s, e, v in got} == \
            {w: [total, latest] for w, (total, _, latest) in want.items()}
        assert len(got) == len(want)
        window_in, _ = next(r for name, r in vertex_records(client).items() if name.startswith("Window"))
        # one partial per (key, window) and subtask crossed the shuffle, not every event
        assert len(want) <= window_in < N
        keyed = timed(env).key_by(lambda e: e[0])
        got = (keyed.window(assigner).aggregate(SumCount(), window_function=WithWindow())
               .execute_and_collect(f"aggregate {assigner}"))
        assert {(k, s, e): list(v) for k, s, e, v in got} == \
            {w: [total, count] for w, (total, count, _) in want.items()}


def test_windows_that_must_not_pre_aggregate_still_match_plain_python(env) -> None:
    tumbling = TumblingEventTimeWindows.of(Time.seconds(5))
    want = plain(5000, 5000)
    # an evictor keeping the last 3 elements of each window (in timestamp order in BATCH)
    per_window: dict[tuple[str, int, int], list[tuple[int, int]]] = collections.defaultdict(list)
    for key, value, t in events():
        start = t - t % 5000
        per_window[(key, start, start + 5000)].append((t, value))
    last3 = {w: sum(v for _, v in sorted(items, key=lambda x: x[0])[-3:])
             for w, items in per_window.items()}
    client = (timed(env).key_by(lambda e: e[0]).window(tumbling).evictor(CountEvictor.of(3))
              .reduce(Add(), window_function=WithWindow()).execute_and_collect_async("evictor"))
    got = client.collect()
    assert {(k, s, e): v[1] for k, s, e, v in got} == last3
    window_in, _ = next(r for name, r in vertex_records(client).items() if name.startswith("Window"))
    assert window_in == N  # every record crossed the shuffle
    # a custom trigger: fires every 50 elements of a window and at its end (FIRE, no purge)
    got = (timed(env).key_by(lambda e: e[0]).window(tumbling).trigger(CountTrigger.of(50))
           .aggregate(SumCount(), window_function=WithWindow()).execute_and_collect("trigger"))
    fired = collections.Counter((k, s, e) for k, s, e, _ in got)
    assert fired == {w: c // 50 for w, (_, c, _) in want.items() if c >= 50}
    # session windows (merging): a gap of 40 ms
    got = (timed(env).key_by(lambda e: e[0]).window(EventTimeSessionWindows.with_gap(Time.milliseconds(40)))
           .reduce(Add()).execute_and_collect("sessions"))
    by_key: dict[str, list[int]] = collections.defaultdict(list)
    for key, _, t in events():
        by_key[key].append(t)
    sessions = 0
    for ts in by_key.values():
        ts.sort()
        sessions += 1 + sum(1 for a, b in zip(ts, ts[1:]) if b - a > 40)
    assert len(got) == sessions
    assert sum(v for _, v, _ in got) == sum(v for _, v, _ in events())
