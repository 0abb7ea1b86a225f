"""STREAMING windows pre-aggregated before the shuffle, on the shared session: files dropped into a
monitored directory, one micro-batch each, with records that arrive late across micro-batches.
A keyed tumbling event-time window with a reduce (and a ProcessWindowFunction) and one with an
AggregateFunction give plain Python's windows, the late records dropped; the producer sends
fewer partials than it read. A window with a late-data side output keeps the one-record path
and gives the late records."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterable, Iterator

import pytest

import sessioncluster
from sessioncluster.pyflink.common import Duration, Time, WatermarkStrategy
from sessioncluster.pyflink.common.watermark_strategy import TimestampAssigner
from sessioncluster.pyflink.datastream import OutputTag
from sessioncluster.pyflink.datastream.connectors.file_system import FileSource, StreamFormat
from sessioncluster.pyflink.datastream.functions import AggregateFunction, ProcessWindowFunction
from sessioncluster.pyflink.datastream.window import TumblingEventTimeWindows
from tests.integration.test_streaming import RESULT_TIMEOUT, drop, streaming_env

pytestmark = pytest.mark.integration

WINDOW_S = 10
DELAY_S = 2

#: one file per micro-batch: ``seconds,key,value``; the watermark after a file is its largest
#: time so far - 2 s (whole seconds, away from the windows' ends)
ROUNDS = [
    [f"{s},{k},{v}" for s, k, v in [(1, "a", 1), (2, "a", 2), (3, "b", 3), (5, "a", 4), (7, "b", 5),
                                    (8, "c", 6), (11, "a", 7), (12, "a", 8), (14, "b", 9),
                                    (16, "c", 10), (17, "c", 11), (9, "a", 12)]],
    # up to 25 s: the watermark goes to 23 s, [0, 10) and [10, 20) fire
    [f"{s},{k},{v}" for s, k, v in [(21, "a", 13), (22, "b", 14), (25, "a", 15), (18, "b", 16),
                                    (23, "a", 17)]],
    # 5 s and 15 s are late (their windows fired); up to 33 s: [20, 30) fires
    [f"{s},{k},{v}" for s, k, v in [(5, "a", 100), (15, "b", 200), (27, "a", 18), (28, "a", 19),
                                    (33, "c", 20), (26, "b", 21)]],
    # 22 s is late; up to 45 s: [30, 40) fires
    [f"{s},{k},{v}" for s, k, v in [(22, "a", 300), (35, "c", 22), (36, "c", 23), (45, "b", 24)]],
]


def plain_windows() -> tuple[dict[tuple[str, int], tuple[int, int]], list[str]]:
    """(key, window start in ms) -> (sum, count) of the windows that fire by the last round,
    and the late lines, in plain Python (the watermark moves after each micro-batch)."""
    windows: dict[tuple[str, int], tuple[int, int]] = {}
    late: list[str] = []
    watermark = None
    for lines in ROUNDS:
        for line in lines:
            s, k, v = line.split(",")
            start = int(s) - int(s) % WINDOW_S
            if watermark is not None and start + WINDOW_S <= watermark:
                late.append(line)
                continue
            total, n = windows.get((k, start * 1000), (0, 0))
            windows[(k, start * 1000)] = (total + int(v), n + 1)
        top = max(int(line.split(",")[0]) for r in ROUNDS[:ROUNDS.index(lines) + 1] for line in r)
        watermark = top - DELAY_S
    assert watermark is not None
    return {kw: sn for kw, sn in windows.items() if kw[1] // 1000 + WINDOW_S <= watermark}, late


class Seconds(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value.split(",")[0]) * 1000


class WithStart(ProcessWindowFunction):
    """(key, window start, the pre-aggregated element)."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        for element in elements:
            yield key, context.window().start, element


class SumCount(AggregateFunction):
    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: tuple[str, int], acc: tuple[int, int]) -> tuple[int, int]:
        return (acc[0] + value[1], acc[1] + 1)

    def get_result(self, acc: tuple[int, int]) -> tuple[int, int]:
        return acc

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


def events(session: sessioncluster.Session, src: Path) -> Any:
    env = streaming_env(session)
    strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(DELAY_S))
                .with_timestamp_assigner(Seconds()))
    source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(src))
              .monitor_continuously(Duration.of_millis(200)).build())
    return env.from_source(source, strategy, "events")


def run_rounds(results: Iterator[Any], src: Path, expected: int) -> list[Any]:
    """Drop the rounds one micro-batch each (the next once the source has read the last), then
    read ``expected`` results."""
    client = results.client  # type: ignore[attr-defined]
    read = 0
    for i, lines in enumerate(ROUNDS):
        drop(src, f"{i}.txt", lines)
        read += len(lines)
        deadline = time.monotonic() + RESULT_TIMEOUT
        while client.details().vertices[0].records_in < read:
            assert time.monotonic() < deadline, f"the source has not read {read} records"
            time.sleep(0.2)
    got = []
    deadline = time.monotonic() + RESULT_TIMEOUT
    while len(got) < expected:
        assert time.monotonic() < deadline, f"got only {got}"
        got.append(next(results))
    return got


@pytest.mark.parametrize("kind", ["reduce", "aggregate"])
def test_pre_aggregated_windows_over_micro_batches_with_late_records(
        session: sessioncluster.Session, tmp_path: Path, kind: str) -> None:
    src = tmp_path / "in"
    src.mkdir()
    keyed = (events(session, src).map(lambda line: (line.split(",")[1], int(line.split(",")[2])))
             .key_by(lambda t: t[0]).window(TumblingEventTimeWindows.of(Time.seconds(WINDOW_S))))
    if kind == "reduce":
        windows = keyed.reduce(lambda a, b: (a[0], a[1] + b[1]), window_function=WithStart())
    else:
        windows = keyed.aggregate(SumCount(), window_function=WithStart())
    results = windows.uid(f"pre-aggregated-{kind}").execute_and_collect(f"pre-aggregated {kind}")
    expected, late = plain_windows()
    assert late and len(expected) >= 8
    try:
        got = run_rounds(results, src, len(expected))
        if kind == "reduce":
            assert {(k, s): el[1] for k, s, el in got} == {kw: sn[0] for kw, sn in expected.items()}
        else:
            assert {(k, s): el for k, s, el in got} == expected
        vertices = results.client.details().vertices
        producer, window = vertices[0], vertices[1]
        # one partial per (key, window) of a subtask's micro-batch crossed the shuffle
        assert producer.records_in == sum(len(r) for r in ROUNDS)
        assert producer.records_out < producer.records_in
        assert window.records_in == producer.records_out
    finally:
        results.close()


def test_a_window_with_a_late_data_side_output_gives_the_late_records(
        session: sessioncluster.Session, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    late_tag = OutputTag("late")
    windows = (events(session, src).map(lambda line: (line.split(",")[1], int(line.split(",")[2])))
               .key_by(lambda t: t[0]).window(TumblingEventTimeWindows.of(Time.seconds(WINDOW_S)))
               .side_output_late_data(late_tag)
               .reduce(lambda a, b: (a[0], a[1] + b[1]), window_function=WithStart())
               .uid("late-side-output"))
    both = windows.map(lambda r: ("window", r)).union(
        windows.get_side_output(late_tag).map(lambda r: ("late", r)))
    results = both.execute_and_collect("late data side output")
    expected, late = plain_windows()
    try:
        got = run_rounds(results, src, len(expected) + len(late))
        assert {(k, s): el[1] for what, (k, s, el) in (g for g in got if g[0] == "window")} == {
            kw: sn[0] for kw, sn in expected.items()}
        assert sorted(r for what, r in got if what == "late") == sorted(
            (line.split(",")[1], int(line.split(",")[2])) for line in late)
        producer = results.client.details().vertices[0]
        assert producer.records_out == producer.records_in  # one record at a time
    finally:
        results.close()
