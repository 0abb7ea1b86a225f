"""The pure parts of STREAMING mode, without Spark: a vertex's chain over Arrow batches, the keyed
head with its state and timers (against a state store and timer service of our own making, with
the calls pyspark's StatefulProcessorHandle has), event-time windows, the results buffer,
savepoint manifests and restore checks, and Flink's checkpoint statistics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cloudpickle
import pyarrow as pa
import pytest

from sessioncluster.api.checkpoint_config import CheckpointConfig, parse_duration_ms
from sessioncluster.graph.jobgraph import JobEdge, JobVertex, OperatorSpec
from sessioncluster.graph.streamgraph import OperatorKind, Partitioning
from sessioncluster.jobmanager import savepoint
from sessioncluster.jobmanager.rest import checkpoint_statistics
from sessioncluster.jobmanager.streamresults import ResultBuffer
from sessioncluster.runtime.operators import KeyedProcessOperator, WindowOperator
from sessioncluster.protocol.messages import CheckpointInfo, JobDetails, JobSummary, VertexInfo
from sessioncluster.graph.lifecycle import ExecutionState, JobStatus
from sessioncluster.spark.streaming import StreamQuery
from sessioncluster.streaming.keyed import KeyedVertex
from sessioncluster.streaming.runtime import ChainFunction, VertexProgram
from sessioncluster.api.functions import KeyedProcessFunction, TimeDomain
from sessioncluster.api.state import ValueStateDescriptor
from sessioncluster.api.window import TumblingEventTimeWindows
from sessioncluster.common.time import Time


def blob(obj: Any) -> tuple[str, bytes]:
    data = cloudpickle.dumps(obj)
    return f"k{abs(hash(data))}", data


def vertex(ops: list[tuple[OperatorKind, Any]], outputs: list[JobEdge] | None = None,
           inputs: list[JobEdge] | None = None) -> tuple[JobVertex, dict[str, bytes]]:
    blobs: dict[str, bytes] = {}
    specs = []
    for i, (kind, fn) in enumerate(ops):
        key = None
        if fn is not None:
            key, data = blob(fn)
            blobs[key] = data
        specs.append(OperatorSpec(i, kind, kind.value, key))
    return JobVertex("v", "v", specs, 1, inputs=inputs or [], outputs=outputs or []), blobs


def records(batch: pa.RecordBatch) -> list[tuple[int, Any, Any, Any]]:
    d = batch.to_pydict()
    return [(o, None if k is None else cloudpickle.loads(k), t, cloudpickle.loads(v))
            for o, k, t, v in zip(d["out"], d["k"], d["ts"], d["v"])]


def test_a_source_chain_keys_its_records_for_a_hash_edge() -> None:
    key_fn = lambda t: t[0]  # noqa: E731
    kkey, kdata = blob(key_fn)
    v, blobs = vertex([(OperatorKind.SOURCE_TEXT_FILE, None),
                       (OperatorKind.FLAT_MAP, lambda line: line.split()),
                       (OperatorKind.MAP, lambda w: (w, 1))],
                      outputs=[JobEdge("v", "w", Partitioning.HASH, kkey)])
    blobs[kkey] = kdata
    from sessioncluster.streaming.runtime import edge_outs

    prog = VertexProgram("job", v, blobs, edge_outs(v), False, False, source_format="text")
    out = list(ChainFunction(prog)(iter([pa.RecordBatch.from_pydict({"value": ["a b", "a"]})])))
    assert [r for b in out for r in records(b)] == [(0, "a", None, ("a", 1)), (0, "b", None, ("b", 1)),
                                                    (0, "a", None, ("a", 1))]


class FakeState:
    """A ValueState of the state store: one row per key."""

    def __init__(self) -> None:
        self.rows: dict[Any, tuple[bytes]] = {}
        self.key: Any = None

    def exists(self) -> bool:
        return self.key in self.rows

    def get(self) -> tuple[bytes] | None:
        return self.rows.get(self.key)

    def update(self, row: tuple[bytes]) -> None:
        self.rows[self.key] = row

    def clear(self) -> None:
        self.rows.pop(self.key, None)


class FakeHandle:
    def __init__(self) -> None:
        self.timers: set[tuple[Any, int]] = set()
        self.key: Any = None

    def registerTimer(self, ts: int) -> None:  # noqa: N802 - pyspark's name
        self.timers.add((self.key, ts))

    def deleteTimer(self, ts: int) -> None:  # noqa: N802 - pyspark's name
        self.timers.discard((self.key, ts))


class Times:
    def __init__(self, watermark: int, now: int = 0) -> None:
        self.watermark, self.now = watermark, now

    def getCurrentWatermarkInMs(self) -> int:  # noqa: N802 - pyspark's name
        return self.watermark

    def getCurrentProcessingTimeInMs(self) -> int:  # noqa: N802 - pyspark's name
        return self.now


class KeyedHarness:
    """Drives a keyed vertex as transformWithStateInPandas does: per key, rows then timers."""

    def __init__(self, head: Any, event_time: bool = True) -> None:
        v, blobs = vertex([(OperatorKind.PROCESS if not callable(head) or hasattr(head, "user_functions")
                            else OperatorKind.REDUCE, head), (OperatorKind.SINK_COLLECT, None)])
        self.prog = VertexProgram("job", v, blobs, [], True, True, "record",
                                  time_mode=TimeDomain.EVENT_TIME if event_time else None)
        self.handle = FakeHandle()
        self.state = FakeState()
        self.runner = KeyedVertex(self.prog, self.handle)

    def rows(self, key: Any, recs: list[tuple[int, Any]], watermark: int) -> list[Any]:
        self.state.key = self.handle.key = cloudpickle.dumps(key)
        out = self.runner.run(cloudpickle.dumps(key), self.state, Times(watermark), recs)
        return [cloudpickle.loads(v) for v in out.v]

    def advance(self, watermark: int) -> list[Any]:
        """Spark's no-data batch: every timer at or before the watermark fires, per key."""
        fired = []
        for key_bytes, ts in sorted(self.handle.timers, key=lambda kt: kt[1]):
            if ts > watermark:
                continue
            self.handle.timers.discard((key_bytes, ts))
            self.state.key = self.handle.key = key_bytes
            out = self.runner.fire(key_bytes, self.state, Times(watermark), ts)
            fired += [cloudpickle.loads(v) for v in out.v]
        return fired


def test_a_running_reduce_keeps_its_accumulator_in_the_state_store() -> None:
    h = KeyedHarness(lambda a, b: a + b, event_time=False)
    assert h.rows("a", [(None, 1), (None, 2)], 0) == [1, 3]
    assert h.rows("b", [(None, 10)], 0) == [10]
    assert h.rows("a", [(None, 4)], 0) == [7]  # a new micro-batch: the state came back
    assert set(h.state.rows) == {cloudpickle.dumps("a"), cloudpickle.dumps("b")}


class CountWithTimeout(KeyedProcessFunction):
    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", None))

    def process_element(self, value: Any, ctx: Any) -> Any:
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 100)

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield (ctx.get_current_key(), self.count.value(), timestamp)


def test_keyed_state_and_event_time_timers_fire_when_the_watermark_passes() -> None:
    h = KeyedHarness(KeyedProcessOperator(CountWithTimeout()))
    assert h.rows("x", [(1000, "a"), (1050, "b")], watermark=0) == []
    assert h.advance(1099) == []                         # 1100 and 1150 not due yet
    assert h.advance(1100) == [("x", 2, 1100)]
    assert h.rows("x", [(1200, "c")], watermark=1100) == []
    assert h.advance(2000) == [("x", 3, 1150), ("x", 3, 1300)]
    assert not h.handle.timers


def test_state_made_in_open_is_in_the_state_store_for_a_new_worker() -> None:
    """A function's state objects come from open(); the next micro-batch (or a timer) may run in
    another Python worker, which has only the state store."""
    h = KeyedHarness(KeyedProcessOperator(CountWithTimeout()))
    assert h.rows("x", [(1000, "a"), (1050, "b")], watermark=0) == []
    assert h.rows("y", [(1000, "c")], watermark=0) == []
    h.runner = KeyedVertex(h.prog, h.handle)  # a new worker
    assert sorted(h.advance(1100)) == [("x", 2, 1100), ("y", 1, 1100)]
    h.runner = KeyedVertex(h.prog, h.handle)
    assert h.rows("x", [(1200, "d")], watermark=1100) == []
    assert h.advance(2000) == [("x", 3, 1150), ("x", 3, 1300)]


def test_tumbling_event_time_windows_with_late_records() -> None:
    from sessioncluster.api.functions import OutputTag

    late = OutputTag("late")
    op = WindowOperator(TumblingEventTimeWindows.of(Time.seconds(10)), "reduce",
                        lambda a, b: (a[0], a[1] + b[1]), late_data_tag=late)
    h = KeyedHarness(op)
    assert h.rows("x", [(1000, ("x", 1)), (3000, ("x", 1)), (12000, ("x", 1))], watermark=0) == []
    assert h.advance(11000) == [("x", 2)]                # [0, 10 s) fired at 9,999
    # 4 s is behind the watermark for [0, 10 s): late, to the side output (not the main output)
    assert h.rows("x", [(4000, ("x", 1))], watermark=11000) == []
    assert h.advance(25000) == [("x", 1)]


def test_a_watermark_fires_all_of_a_keys_windows_at_its_first_timer() -> None:
    """Spark keeps one timer per key (its earliest); its call fires all the key's windows up to
    the watermark, in order, and each key's state is read once."""
    op = WindowOperator(TumblingEventTimeWindows.of(Time.seconds(10)), "reduce",
                        lambda a, b: (a[0], a[1] + b[1]))
    h = KeyedHarness(op)
    assert h.rows("x", [(t * 1000, ("x", t)) for t in (1, 12, 13, 25, 41)], watermark=0) == []
    assert h.rows("y", [(2000, ("y", 7))], watermark=0) == []
    # one Spark timer per key, at its earliest window's end
    assert sorted(h.handle.timers) == sorted([(cloudpickle.dumps("x"), 9_999),
                                             (cloudpickle.dumps("y"), 9_999)])
    reads = []
    get = h.state.get
    h.state.get = lambda: reads.append(h.state.key) or get()  # type: ignore[method-assign]
    fired = h.advance(30_000)
    assert sorted(fired) == [("x", 1), ("x", 25), ("x", 25), ("y", 7)]
    assert [r for r in fired if r[0] == "x"] == [("x", 1), ("x", 25), ("x", 25)]  # in time order
    assert sorted(reads) == sorted([cloudpickle.dumps("x"), cloudpickle.dumps("y")])
    # new records of the key: its next timers fire again
    assert h.rows("x", [(33_000, ("x", 2))], watermark=30_000) == []
    assert h.advance(50_000) == [("x", 2), ("x", 41)]


def test_count_windows_keep_their_count_across_micro_batches() -> None:
    from sessioncluster.api.window import CountSlidingWindowAssigner, CountTumblingWindowAssigner

    tumbling = KeyedHarness(WindowOperator(CountTumblingWindowAssigner.of(3), "reduce",
                                           lambda a, b: a + b), event_time=False)
    assert tumbling.rows("x", [(None, 1), (None, 2)], 0) == []
    assert tumbling.rows("x", [(None, 3), (None, 4)], 0) == [6]      # 1+2+3, then 4 waits
    assert tumbling.rows("y", [(None, 100)], 0) == []                 # counted per key
    assert tumbling.rows("x", [(None, 5), (None, 6), (None, 7)], 0) == [15]
    sliding = KeyedHarness(WindowOperator(CountSlidingWindowAssigner.of(3, 2), "reduce",
                                          lambda a, b: a + b), event_time=False)
    assert sliding.rows("x", [(None, 1)], 0) == []
    assert sliding.rows("x", [(None, 2), (None, 3)], 0) == [3]        # every 2: the last <= 3
    assert sliding.rows("x", [(None, 4)], 0) == [2 + 3 + 4]


def test_processing_time_windows_fire_by_the_clock() -> None:
    from sessioncluster.api.window import TumblingProcessingTimeWindows

    op = WindowOperator(TumblingProcessingTimeWindows.of(Time.seconds(10)), "reduce", lambda a, b: a + b)
    h = KeyedHarness(op, event_time=False)
    h.prog.time_mode = TimeDomain.PROCESSING_TIME
    h.runner = KeyedVertex(h.prog, h.handle)
    assert h.rows("x", [(None, 1), (None, 2)], 0) == []
    (_, due), = h.handle.timers                                       # the window's end on the clock
    assert due % 10_000 == 9_999
    assert h.advance(due) == [3]
    assert not h.handle.timers and not h.state.rows


def test_a_continuous_event_time_trigger_fires_early_and_at_the_end() -> None:
    """Flink's ContinuousEventTimeTrigger: a 10 s window fires every 5 s of event time while
    open and at its end; its next fire time is window-scoped state in the key's state."""
    from sessioncluster.api.window import ContinuousEventTimeTrigger

    op = WindowOperator(TumblingEventTimeWindows.of(Time.seconds(10)), "reduce", lambda a, b: a + b,
                        trigger=ContinuousEventTimeTrigger.of(Time.seconds(5)))
    h = KeyedHarness(op)
    assert h.rows("x", [(1000, 1), (2000, 2)], watermark=0) == []
    assert h.advance(4999) == []
    assert h.advance(5000) == [3]                        # the early firing at 5 s
    h.runner = KeyedVertex(h.prog, h.handle)              # a new worker: only the state store
    assert h.rows("x", [(7000, 4)], watermark=5000) == []
    assert h.advance(10_000) == [7]                      # the end (9,999): fired once
    assert not h.handle.timers and not h.state.rows      # cleaned up at the window's end


def test_a_purging_count_trigger_keeps_its_count_across_micro_batches() -> None:
    """GlobalWindows with PurgingTrigger.of(CountTrigger.of(2)): the trigger's count is
    window-scoped state that survives micro-batches and workers."""
    from sessioncluster.api.window import CountTrigger, GlobalWindows, PurgingTrigger

    op = WindowOperator(GlobalWindows.create(), "reduce", lambda a, b: a + b,
                        trigger=PurgingTrigger.of(CountTrigger.of(2)))
    h = KeyedHarness(op, event_time=False)
    assert h.rows("x", [(None, 1), (None, 2), (None, 3)], 0) == [3]
    h.runner = KeyedVertex(h.prog, h.handle)
    assert h.rows("x", [(None, 4)], 0) == [7]
    assert h.rows("y", [(None, 10)], 0) == []            # counted per key
    assert h.rows("x", [(None, 5), (None, 6)], 0) == [11]


def test_keyed_connect_shares_one_state_between_both_inputs() -> None:
    from sessioncluster.api.functions import KeyedCoProcessFunction
    from sessioncluster.runtime.operators import KeyedCoProcessOperator

    class Both(KeyedCoProcessFunction):
        def open(self, runtime_context: Any) -> None:
            self.seen = runtime_context.get_state(ValueStateDescriptor("seen", None))

        def process_element1(self, value: Any, ctx: Any) -> Any:
            self.seen.update((self.seen.value() or 0) + value)
            yield ctx.get_current_key(), "1", self.seen.value()

        def process_element2(self, value: Any, ctx: Any) -> Any:
            self.seen.update((self.seen.value() or 0) * value)
            yield ctx.get_current_key(), "2", self.seen.value()

    h = KeyedHarness(KeyedCoProcessOperator(Both()), event_time=False)
    assert h.rows("k", [(None, (0, 2)), (None, (1, 10))], 0) == [("k", "1", 2), ("k", "2", 20)]
    assert h.rows("k", [(None, (0, 1))], 0) == [("k", "1", 21)]


def test_the_results_buffer_is_idempotent_by_batch_and_drops_what_was_fetched() -> None:
    buf = ResultBuffer()
    assert buf.add(("sink-0", 0), [b"a", b"b"])
    assert not buf.add(("sink-0", 0), [b"a", b"b"])      # foreachBatch ran batch 0 again
    assert buf.add(("sink-0", 1), [b"c"])
    assert buf.since(0, 2) == ([b"a", b"b"], 2)
    assert buf.since(2, 10) == ([b"c"], 3)
    assert buf.since(3, 10) == ([], 3)
    assert len(buf.items) == 0 and buf.size == 0


def _sink(key: str, uids: list[str], names: list[str]) -> StreamQuery:
    v = JobVertex("s", "Sink", [OperatorSpec(0, OperatorKind.SINK_COLLECT, "Sink")], 1)
    return StreamQuery(key, [v], None, uids, names)


def test_savepoint_write_and_restore_match_state_by_uid(tmp_path: Path) -> None:
    from sessioncluster.graph.jobgraph import JobGraph

    ckpt = tmp_path / "ckpt"
    (ckpt / "sink-0" / "commits").mkdir(parents=True)
    (ckpt / "sink-0" / "commits" / "3").write_text("v1")
    graph = JobGraph("job", [JobVertex("k", "Keyed", [OperatorSpec(0, OperatorKind.REDUCE, "Sum",
                                                                    uid="counts")], 1)])
    sinks = [_sink("sink-0", ["counts"], ["Sum"])]
    location = savepoint.write(tmp_path / "sp", "a" * 32, graph, sinks, ckpt, 7)
    manifest = json.loads((location / "_metadata.json").read_text())
    assert manifest["queries"]["sink-0"]["stateful_uids"] == ["counts"]
    assert manifest["queries"]["sink-0"]["batches"] == 3
    assert (location / "queries" / "sink-0" / "commits" / "3").exists()
    for uri in (f"file://{tmp_path}/sp2", f"file:{tmp_path}/sp3"):  # Flink's CLI sends file:/x
        written = savepoint.write(Path(uri), "a" * 32, graph, sinks, ckpt, 7)
        assert written.parent == tmp_path / uri.rsplit("/", 1)[1]

    target = tmp_path / "new"
    savepoint.restore(location, [_sink("sink-0", ["counts"], ["Sum"])], target, False)
    assert (target / "sink-0" / "commits" / "3").read_text() == "v1"
    with pytest.raises(savepoint.SavepointError, match="uid\\(s\\) 'counts'.*ignore-unclaimed"):
        savepoint.restore(location, [_sink("sink-0", ["other"], ["Sum"])], target, False)
    savepoint.restore(location, [_sink("sink-0", ["other"], ["Sum"])], tmp_path / "n2", True)
    # its operator is there, in a query with another stateful one: Spark cannot split the state
    with pytest.raises(savepoint.SavepointError, match="'counts' now sit.*restored as a whole"):
        savepoint.restore(location, [_sink("sink-0", ["counts", "more"], ["Sum", "More"])],
                          tmp_path / "n3", False)
    with pytest.raises(savepoint.SavepointError, match="does not exist"):
        savepoint.restore(tmp_path / "nope", sinks, target, False)
    # a retained checkpoint (a job's checkpoint directory) restores as a savepoint, by key
    savepoint.restore(ckpt, sinks, tmp_path / "n4", False)
    assert (tmp_path / "n4" / "sink-0" / "commits" / "3").read_text() == "v1"
    (tmp_path / "empty" / "sink-0").mkdir(parents=True)  # no committed micro-batch
    with pytest.raises(savepoint.SavepointError, match="is not a savepoint"):
        savepoint.restore(tmp_path / "empty", sinks, target, False)


def test_a_stateful_operator_without_a_uid_gets_flinks_generated_one(tmp_path: Path) -> None:
    """As Flink generates an operator id from the operator's place in the program: the same
    program restores its state without uid(), a program changed before the operator does not
    take it (and the error names the operator)."""
    from sessioncluster.graph.jobgraph import JobGraph
    from sessioncluster.spark.stages import generated_uid

    def program(*before: str, after: str = "Print", start: int = 0) -> tuple[JobGraph, JobVertex]:
        ops = [OperatorSpec(start + i, OperatorKind.MAP, n) for i, n in enumerate(before)]
        src = JobVertex("src", "Source", [OperatorSpec(start + 9, OperatorKind.SOURCE_COLLECTION,
                                                       "Source"), *ops], 1)
        keyed = JobVertex("k", "Keyed", [OperatorSpec(start + 20, OperatorKind.REDUCE, "Sum"),
                                         OperatorSpec(start + 21, OperatorKind.SINK_PRINT, after)], 1)
        keyed.inputs.append(JobEdge("src", "k", Partitioning.HASH))
        return JobGraph("job", [src, keyed]), keyed

    uid = generated_uid(*program("Split"))
    assert uid.startswith("auto-")
    assert generated_uid(*program("Split", start=100)) == uid  # a notebook's graph grows
    assert generated_uid(*program("Split", after="Another sink")) == uid  # chained after it
    assert generated_uid(*program("Split", "Filter")) != uid
    ckpt = tmp_path / "ckpt"
    (ckpt / "sink-0" / "commits").mkdir(parents=True)
    (ckpt / "sink-0" / "commits" / "3").write_text("v1")
    location = savepoint.write(tmp_path / "sp", "a" * 32, program("Split")[0],
                               [_sink("sink-0", [uid], ["Sum"])], ckpt, 7)
    savepoint.restore(location, [_sink("sink-0", [uid], ["Sum"])], tmp_path / "same", False)
    assert (tmp_path / "same" / "sink-0" / "commits" / "3").read_text() == "v1"
    changed = generated_uid(*program("Split", "Filter"))
    with pytest.raises(savepoint.SavepointError, match="generated for 'Sum', which had no uid"):
        savepoint.restore(location, [_sink("sink-0", [changed], ["Sum"])], tmp_path / "x", False)


def test_checkpoint_statistics_have_flinks_shape() -> None:
    from sessioncluster.graph.jobgraph import JobGraph

    cps = [CheckpointInfo(i, "COMPLETED", 1000 * i, 1000 * i + 50, 50, 4096, 10, batch_id=i - 1,
                          query="sink-0") for i in (1, 2, 3)]
    restored = CheckpointInfo(9, "COMPLETED", 5, 5, 0, 1, 0, is_savepoint=True, external_path="/sp")
    details = JobDetails(JobSummary("j" * 32, "s", JobStatus.RUNNING, 0.0, None), JobGraph("s", []),
                         [VertexInfo("v", "v", [], 2, ExecutionState.RUNNING, 0, 0)], [], {},
                         streaming={"checkpoints": cps, "counts": {"completed": 3, "failed": 0},
                                    "restored": restored})
    stats = checkpoint_statistics(details)
    assert set(stats) == {"counts", "summary", "latest", "history"}
    assert stats["counts"] == {"restored": 1, "total": 3, "in_progress": 0, "completed": 3, "failed": 0}
    assert set(stats["summary"]["end_to_end_duration"]) == {"min", "max", "avg", "p50", "p90", "p95",
                                                            "p99", "p999"}
    assert stats["latest"]["completed"]["id"] == 3 and stats["latest"]["restored"]["external_path"] == "/sp"
    assert [h["id"] for h in stats["history"]] == [3, 2, 1]
    assert stats["history"][0]["status"] == "COMPLETED" and stats["history"][0]["num_subtasks"] == 2


def test_checkpoint_config_and_durations() -> None:
    c = CheckpointConfig()
    assert not c.is_checkpointing_enabled()
    c.set_checkpoint_interval(1000)
    assert c.is_checkpointing_enabled() and c.get_checkpoint_interval() == 1000
    with pytest.raises(ValueError):
        c.set_checkpoint_interval(1)
    with pytest.raises(ValueError):
        c.set_min_pause_between_checkpoints(-1)
    assert parse_duration_ms("10 s") == 10_000 and parse_duration_ms("500 ms") == 500
    assert parse_duration_ms("1 min") == 60_000 and parse_duration_ms("250") == 250


def _two_watermarked_inputs(unbounded: bool, idleness: int | None) -> Any:
    from sessioncluster.graph.jobgraph import build_job_graph
    from sessioncluster.graph.streamgraph import ChainingStrategy, StreamGraph

    g = StreamGraph()
    sources = []
    for name in ("a", "b"):
        src = g.add_node(OperatorKind.SOURCE_TEXT_FILE, name=name, chaining=ChainingStrategy.HEAD)
        src.config.update({"path": f"/in/{name}", "unbounded": unbounded})
        marks = g.add_node(OperatorKind.PROCESS, name=f"marks {name}")
        marks.config.update({"timestamped": True, "watermark_delay_ms": 2000})
        if idleness is not None and name == "b":
            marks.config["watermark_idleness_ms"] = idleness
        g.add_edge(src, marks)
        sources.append(marks)
    sink = g.add_node(OperatorKind.SINK_COLLECT)
    for marks in sources:
        g.add_edge(marks, sink)
    return build_job_graph(g, [sink], "job", lambda obj, what: "key")


def test_which_watermarks_read_a_control_stream() -> None:
    """Every watermark of a bounded job (its final watermark); in an unbounded job of several
    watermarks, those with an idle timeout."""
    from sessioncluster.spark.streaming import controlled_watermarks

    def names(graph: Any) -> dict[str, tuple[int, int | None]]:
        return {graph.vertex(vid).name.split(" -> ")[-1]: m
                for vid, m in controlled_watermarks(graph).items()}

    assert names(_two_watermarked_inputs(False, None)) == {"marks a": (2000, None),
                                                            "marks b": (2000, None)}
    assert names(_two_watermarked_inputs(True, None)) == {}
    assert names(_two_watermarked_inputs(True, 500)) == {"marks b": (2000, 500)}


def test_record_counts_add_counts_and_keep_the_largest_timestamp() -> None:
    from sessioncluster.spark.streaming import RecordCounts
    from sessioncluster.streaming.runtime import MAX_TS

    param = RecordCounts()
    acc = param.zero({})
    acc = param.addInPlace(acc, {("v", 0, "in"): 3, ("v", -1, MAX_TS): 900})
    acc = param.addInPlace(acc, {("v", 0, "in"): 2, ("v", -1, MAX_TS): 400})
    assert acc == {("v", 0, "in"): 5, ("v", -1, MAX_TS): 900}


def test_automatic_mode_is_streaming_with_an_unbounded_source() -> None:
    from sessioncluster.client.environment import StreamExecutionEnvironment
    from sessioncluster.common.execution_mode import RuntimeExecutionMode

    env = StreamExecutionEnvironment(session=None)  # type: ignore[arg-type] - no job is run
    env.set_runtime_mode(RuntimeExecutionMode.AUTOMATIC)
    env.from_collection([1, 2])
    assert env._effective_runtime_mode() is RuntimeExecutionMode.BATCH
    env.from_rate(10)
    assert env._effective_runtime_mode() is RuntimeExecutionMode.STREAMING


def _fan_out() -> Any:
    """numbers -> (map a -> sink A, map b -> sink B), and an unrelated source -> sink C."""
    from sessioncluster.graph.jobgraph import build_job_graph
    from sessioncluster.graph.streamgraph import ChainingStrategy, StreamGraph

    g = StreamGraph()
    src = g.add_node(OperatorKind.SOURCE_TEXT_FILE, name="numbers", chaining=ChainingStrategy.HEAD)
    src.config["path"] = "/in"
    sinks = []
    for name in ("a", "b"):
        m = g.add_node(OperatorKind.MAP, name=f"map {name}")
        g.add_edge(src, m)
        sink = g.add_node(OperatorKind.SINK_COLLECT, name=f"sink {name}")
        g.add_edge(m, sink)
        sinks.append(sink)
    other = g.add_node(OperatorKind.SOURCE_TEXT_FILE, name="other", chaining=ChainingStrategy.HEAD)
    other.config["path"] = "/other"
    sink_c = g.add_node(OperatorKind.SINK_COLLECT, name="sink c")
    g.add_edge(other, sink_c)
    return build_job_graph(g, sinks + [sink_c], "job", lambda obj, what: "key")


def test_sinks_that_share_a_stream_are_one_query_whose_region_computes_it_once() -> None:
    """A stream fanned out to two sinks is one query (each source read once per micro-batch),
    and its two stateless branches are one region of the source's stage: the source runs once."""
    from sessioncluster.spark.stages import StagePlan, sink_groups

    graph = _fan_out()
    groups = [(i, [v.name for v in members]) for i, members in sink_groups(graph)]
    assert groups == [(0, ["map a -> sink a", "map b -> sink b"]), (2, ["other -> sink c"])]
    plan = StagePlan.of(graph)
    names = {v.vertex_id: v.name for v in graph.vertices}
    assert {names[root]: [m.name for m in ms] for root, ms in plan.members.items()} == {
        "numbers": ["map a -> sink a", "map b -> sink b"], "other -> sink c": []}


def test_a_stream_read_by_a_keyed_vertex_and_a_region_is_computed_once_for_each() -> None:
    """numbers -> key_by -> sum -> (main: sink s, side output: sink late) and numbers -> map ->
    sink m: the keyed vertex's two sinks are its region (the sum runs once), the source is read by
    the keyed exchange and by its own region (it runs twice)."""
    from sessioncluster.graph.jobgraph import build_job_graph
    from sessioncluster.graph.streamgraph import ChainingStrategy, Partitioning, StreamGraph
    from sessioncluster.spark.stages import StagePlan

    g = StreamGraph()
    src = g.add_node(OperatorKind.SOURCE_TEXT_FILE, name="numbers", chaining=ChainingStrategy.HEAD)
    src.config["path"] = "/in"
    total = g.add_node(OperatorKind.PROCESS, name="sum")
    g.add_edge(src, total, Partitioning.HASH, key_selector=lambda x: x)
    sink_s = g.add_node(OperatorKind.SINK_COLLECT, name="sink s", chaining=ChainingStrategy.HEAD)
    g.add_edge(total, sink_s)
    sink_late = g.add_node(OperatorKind.SINK_COLLECT, name="sink late")
    g.add_edge(total, sink_late, side_output="late")
    m = g.add_node(OperatorKind.MAP, name="map")
    g.add_edge(src, m)
    sink_m = g.add_node(OperatorKind.SINK_COLLECT, name="sink m")
    g.add_edge(m, sink_m)
    graph = build_job_graph(g, [sink_s, sink_late, sink_m], "job", lambda obj, what: "key")
    names = {v.vertex_id: v.name for v in graph.vertices}
    plan = StagePlan.of(graph)
    assert {names[root]: [m.name for m in ms] for root, ms in plan.members.items()} == {
        "numbers": ["map -> sink m"], "sum": ["sink s", "sink late"]}
