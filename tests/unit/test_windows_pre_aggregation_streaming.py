"""STREAMING pre-aggregation of window contents, without Spark: which windows pre-aggregate
(``WindowOperator.pre_aggregates_in_streaming``, ``JobEdge.window_partials_streaming``); the
producer's partial rows (``ChainFunction`` of a vertex whose edge goes into such a window); and
the keyed window (``KeyedVertex`` over the partials) against the one-record path over several
micro-batches with late records, the watermark advanced from the rows' timestamps as Spark's is."""

from __future__ import annotations

import random
from typing import Any

import cloudpickle
import pyarrow as pa
import pytest

from sessioncluster.api.functions import OutputTag, TimeDomain
from sessioncluster.api.window import (
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from sessioncluster.client.environment import StreamExecutionEnvironment
from sessioncluster.common.time import Time
from sessioncluster.graph.jobgraph import JobEdge
from sessioncluster.graph.streamgraph import OperatorKind, Partitioning
from sessioncluster.runtime.operators import WindowOperator
from sessioncluster.streaming.keyed import KeyedVertex
from sessioncluster.streaming.runtime import ChainFunction, VertexProgram, edge_outs
from tests.unit.test_streaming import FakeHandle, FakeState, KeyedHarness, Times, blob, vertex
from tests.unit.test_windows_pre_aggregation import Sum, SumAndCount, WithWindow, _edges

TUMBLING = TumblingEventTimeWindows.of(Time.seconds(10))
SLIDING = SlidingEventTimeWindows.of(Time.seconds(15), Time.seconds(5))
DELAY = 2_000


def window(assigner: Any = TUMBLING, kind: str = "reduce", **kw: Any) -> WindowOperator:
    return WindowOperator(assigner, kind, Sum() if kind == "reduce" else SumAndCount(),
                          window_function=WithWindow(), **kw)


@pytest.mark.parametrize("op", [window(), window(SLIDING), window(kind="aggregate"),
                                window(SLIDING, "aggregate")],
                         ids=["tumbling-reduce", "sliding-reduce", "tumbling-aggregate",
                              "sliding-aggregate"])
def test_event_time_windows_without_lateness_pre_aggregate_in_streaming(op: WindowOperator) -> None:
    assert op.pre_aggregates_in_batch and op.pre_aggregates_in_streaming


@pytest.mark.parametrize("op", [
    window(allowed_lateness=1),
    window(late_data_tag=OutputTag("late")),
    WindowOperator(TumblingProcessingTimeWindows.of(Time.seconds(10)), "reduce", Sum()),
], ids=["allowed-lateness", "late-data-side-output", "processing-time"])
def test_what_pre_aggregates_in_batch_only(op: WindowOperator) -> None:
    assert op.pre_aggregates_in_batch and not op.pre_aggregates_in_streaming


def test_the_job_graph_marks_the_streaming_edges() -> None:
    env = StreamExecutionEnvironment(None)
    keyed = env.from_collection([("a", 1)]).map(lambda t: t).key_by(lambda t: t[0])
    [edge] = _edges(keyed.window(TUMBLING).reduce(Sum(), window_function=WithWindow()))
    assert edge.window_partials and edge.window_partials_streaming
    [edge] = _edges(keyed.window(TUMBLING).side_output_late_data(OutputTag("late")).reduce(Sum()))
    assert edge.window_partials and not edge.window_partials_streaming
    [edge] = _edges(keyed.window(TUMBLING).allowed_lateness(1000).reduce(Sum()))
    assert edge.window_partials and not edge.window_partials_streaming
    [edge] = _edges(keyed.window(TUMBLING).process(WithWindow()))
    assert not edge.window_partials and not edge.window_partials_streaming


def test_a_fanned_out_stream_sends_no_partials_in_streaming() -> None:
    env = StreamExecutionEnvironment(None)
    src = env.from_collection([("a", 1)]).map(lambda t: t)
    edges = _edges(src.key_by(lambda t: t[0]).window(TUMBLING).reduce(Sum()),
                   src.key_by(lambda t: t[0]).reduce(Sum()))
    assert not any(e.window_partials_streaming for e in edges)


class Producer:
    """A stateless vertex (a map) whose HASH edge goes into the window: its ``ChainFunction``
    over one partition's Arrow batches of ``(ts, record)`` rows."""

    def __init__(self, op: WindowOperator, partials: bool) -> None:
        kkey, kdata = blob(lambda t: t[0])
        wkey, wdata = blob(op)
        edge = JobEdge("p", "w", Partitioning.HASH, kkey, wkey if partials else None,
                       window_partials=partials, window_partials_streaming=partials)
        v, blobs = vertex([(OperatorKind.MAP, lambda t: t)], outputs=[edge],
                          inputs=[JobEdge("s", "p", Partitioning.FORWARD)])
        blobs.update({kkey: kdata, wkey: wdata})
        self.prog = VertexProgram("job", v, blobs, edge_outs(v), True, True)

    def rows(self, recs: list[tuple[int, Any]], batch_rows: int = 4) -> list[tuple[bytes, int, Any]]:
        """(key bytes, ts, record) of the rows it sends for ``recs`` (in batches)."""
        batches = [pa.RecordBatch.from_pydict({
            "out": [0] * len(part), "k": [None] * len(part), "ts": [t for t, _ in part],
            "v": [cloudpickle.dumps(r) for _, r in part]},
            schema=pa.schema([("out", pa.int32()), ("k", pa.binary()), ("ts", pa.int64()),
                              ("v", pa.binary())]))
            for part in (recs[i:i + batch_rows] for i in range(0, len(recs), batch_rows))]
        out = []
        for b in ChainFunction(self.prog)(iter(batches)):
            d = b.to_pydict()
            out += [(k, t, cloudpickle.loads(v)) for k, t, v in zip(d["k"], d["ts"], d["v"])]
        return out


def test_a_producer_sends_one_partial_per_key_and_window_of_its_partition() -> None:
    recs = [(1000, ("a", 1)), (2000, ("a", 2)), (12000, ("a", 3)), (3000, ("b", 4)),
            (4000, ("a", 5))]
    rows = Producer(window(), True).rows(recs, batch_rows=2)  # over three Arrow batches
    got = {(cloudpickle.loads(k), w.start): (t, p) for k, t, (w, p) in rows}
    # a partial's timestamp: its window's max timestamp, at most the records' largest (12 s)
    assert got == {("a", 0): (9_999, ("a", 8)), ("a", 10_000): (12_000, ("a", 3)),
                   ("b", 0): (9_999, ("b", 4))}
    assert max(t for _, t, _ in rows) == max(t for t, _ in recs)  # Spark's watermark sees the same


def micro_batches(seed: int) -> list[list[tuple[int, Any]]]:
    """Records over 4 micro-batches: out of order within the watermark's delay, and a few late
    ones (far behind the watermark of the batch they come in)."""
    rng = random.Random(seed)
    batches, t = [], 0
    for b in range(4):
        batch = []
        for _ in range(60):
            t += rng.randint(0, 300)
            batch.append((max(0, t - rng.randint(0, DELAY)), (rng.choice("abc"), rng.randint(1, 9))))
        if b:
            batch += [(rng.randint(0, max(0, t - 15_000)), (rng.choice("abc"), 100)) for _ in range(3)]
        rng.shuffle(batch)
        batches.append(batch)
    return batches


class WindowVertex(KeyedHarness):
    """The keyed window as ``transformWithStateInPandas`` runs it, its input partials or records
    (a vertex with an input edge; ``advance`` fires Spark's timers as ``KeyedHarness``'s)."""

    def __init__(self, op: WindowOperator, partials: bool) -> None:
        v, blobs = vertex([(OperatorKind.PROCESS, op), (OperatorKind.SINK_COLLECT, None)],
                          inputs=[JobEdge("p", "w", Partitioning.HASH, None, None,
                                          window_partials=partials,
                                          window_partials_streaming=partials)])
        self.prog = VertexProgram("job", v, blobs, [], True, True, "record", time_mode=TimeDomain.EVENT_TIME)
        self.handle, self.state = FakeHandle(), FakeState()
        self.runner = KeyedVertex(self.prog, self.handle)

    def micro_batch(self, rows: list[tuple[bytes, int, Any]], watermark: int) -> list[Any]:
        by_key: dict[bytes, list[tuple[int, Any]]] = {}
        for k, t, v in rows:
            by_key.setdefault(k, []).append((t, v))
        out = []
        for k, recs in by_key.items():
            self.state.key = self.handle.key = k
            out += [cloudpickle.loads(v) for v in
                    self.runner.run(k, self.state, Times(watermark), recs).v]
        return out


@pytest.mark.parametrize("assigner", [TUMBLING, SLIDING], ids=["tumbling", "sliding"])
@pytest.mark.parametrize("kind", ["reduce", "aggregate"])
def test_partials_give_the_one_record_paths_windows_over_micro_batches(kind: str, assigner: Any) -> None:
    """Two producer subtasks per micro-batch; Spark's watermark after each batch is the largest
    timestamp of the rows it saw, less the delay. Late records are dropped as on the one-record
    path, and every window fires once with the same contents."""
    results: dict[bool, list[Any]] = {}
    marks: dict[bool, list[int]] = {}
    for partials in (False, True):
        op = window(assigner, kind)
        producers = [Producer(op, partials) for _ in range(2)]
        consumer = WindowVertex(op, partials)
        watermark, seen, out, marks[partials] = 0, -1, [], []
        for batch in micro_batches(11):
            rows = producers[0].rows(batch[0::2]) + producers[1].rows(batch[1::2])
            if partials:
                assert len(rows) < len(batch)
            else:
                assert len(rows) == len(batch)
            out += consumer.micro_batch(rows, watermark)
            seen = max([seen] + [t for _, t, _ in rows])
            watermark = max(watermark, seen - DELAY)
            marks[partials].append(watermark)
            out += consumer.advance(watermark)
        out += consumer.advance(2**62)  # the input's end
        results[partials] = sorted(out)
    assert marks[True] == marks[False]
    assert results[True] == results[False]
    if assigner is TUMBLING:  # plain Python: all but the late records are in the windows' sums
        late, kept = 0, 0
        for b, batch in enumerate(micro_batches(11)):
            for t, (_, v) in batch:
                if b and t - t % 10_000 + 9_999 <= marks[True][b - 1]:
                    late += 1
                else:
                    kept += v
        total = sum(el[0] if kind == "aggregate" else el[1] for *_, el in results[True])
        assert late > 0 and total == kept
