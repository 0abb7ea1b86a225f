"""Flink's physical partitioning (``rebalance``, ``shuffle``, ``rescale``, ``broadcast``,
``partition_custom``, ``forward``) and ``project``: the JobGraph's edges and the partitions each
record goes to, without Spark. Flink 2.3's records per subtask:
/work/briefs/data/lead28/partitioning.py and .out (PyFlink 2.3's own partition_custom fails
there: "The partition number should be a positive value, got -1"; this follows its docs)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import cloudpickle
import pytest

from sessioncluster.api.functions import CustomPartitioning, Partitioner
from sessioncluster.client.environment import StreamExecutionEnvironment
from sessioncluster.graph.jobgraph import build_job_graph
from sessioncluster.graph.streamgraph import OperatorKind, Partitioning
from sessioncluster.taskmanager.writer import Channels, OutputKind, VertexOutput


class ByMod(Partitioner):
    def partition(self, key: int, num_partitions: int) -> int:
        return key % num_partitions


def channels(kind: OutputKind, subtask: int, partitions: int, producers: int = 1,
             partitioner: CustomPartitioning | None = None) -> Channels:
    return Channels(VertexOutput(kind, partitions, producers=producers), subtask, partitioner)


def test_each_partitioner_chooses_flinks_subtasks() -> None:
    records = list(range(6))
    rebalance = channels(OutputKind.REBALANCE, 1, 3)
    assert [tuple(rebalance.of(r)) for r in records] == [(1,), (2,), (0,), (1,), (2,), (0,)]
    assert [list(channels(OutputKind.BROADCAST, 0, 3).of(r)) for r in records[:2]] == [
        [0, 1, 2], [0, 1, 2]]
    # rescale, Flink's pointwise pattern: 2 -> 4 each subtask feeds two; 4 -> 2 two feed one
    rescale = channels(OutputKind.RESCALE, 1, 4, 2)
    assert [next(iter(rescale.of(r))) for r in records[:4]] == [2, 3, 2, 3]
    assert [next(iter(channels(OutputKind.RESCALE, s, 2, 4).of(0))) for s in range(4)] == [
        0, 0, 1, 1]
    shuffled = channels(OutputKind.SHUFFLE, 0, 3)
    assert set(Counter(next(iter(shuffled.of(r))) for r in range(300))) == {0, 1, 2}
    custom = channels(OutputKind.CUSTOM, 0, 3, partitioner=CustomPartitioning(ByMod(), lambda x: x))
    assert [next(iter(custom.of(r))) for r in records] == [0, 1, 2, 0, 1, 2]
    bad = channels(OutputKind.CUSTOM, 0, 3, partitioner=CustomPartitioning(lambda k, n: -1,
                                                                            lambda x: x))
    with pytest.raises(ValueError, match=r"partitioner returned -1 for the key 4; a partition "
                                         r"is an int in \[0, 3\)"):
        bad.of(4)


def edges(sink: object, env: StreamExecutionEnvironment) -> list[Partitioning]:
    graph = build_job_graph(env.stream_graph, [sink], "job", lambda obj, what: "key")
    return [e.ship_strategy for v in graph.vertices for e in v.inputs]


def test_the_partitionings_are_edges_of_the_job_graph_and_any_operator_may_follow() -> None:
    def double(x: int) -> int:
        return 2 * x

    for method, strategy in [("rebalance", Partitioning.REBALANCE),
                             ("shuffle", Partitioning.SHUFFLE),
                             ("rescale", Partitioning.RESCALE),
                             ("broadcast", Partitioning.BROADCAST)]:
        env = StreamExecutionEnvironment(None)
        stream = getattr(env.from_collection([1, 2]), method)()
        sink = stream.map(double, output_type=None).set_parallelism(3)._sink(
            OperatorKind.SINK_COLLECT)
        assert edges(sink, env)[0] is strategy
        with pytest.raises(TypeError, match="a partitioning is not an operator"):
            stream.name("x")
    env = StreamExecutionEnvironment(None)
    custom = env.from_collection([1, 2]).partition_custom(ByMod(), lambda x: x)
    assert edges(custom._sink(OperatorKind.SINK_PRINT), env) == [Partitioning.CUSTOM]
    env = StreamExecutionEnvironment(None)  # key_by after a partitioning partitions by key
    keyed = env.from_collection([1, 2]).shuffle().key_by(lambda x: x).reduce(lambda a, b: a)
    assert edges(keyed._sink(OperatorKind.SINK_COLLECT), env)[0] is Partitioning.HASH
    with pytest.raises(NotImplementedError, match="broadcast state pattern"):
        env.from_collection([1]).broadcast(object())


def test_forward_needs_equal_parallelism_and_project_picks_fields() -> None:
    env = StreamExecutionEnvironment(None)
    env.set_parallelism(2)
    ds = env.from_collection([(1, "a", 2.0)]).map(lambda x: x)
    bad = ds.forward().map(lambda x: x).set_parallelism(3)._sink(OperatorKind.SINK_COLLECT)
    with pytest.raises(ValueError, match="Forward partitioning does not allow change of "
                       "parallelism. Upstream operation: Map-2 parallelism: 2, downstream "
                       "operation: Map-3 parallelism: 3 You must use another partitioning"):
        edges(bad, env)
    env = StreamExecutionEnvironment(None)
    projected = env.from_collection([(1, "a", 2.0)]).project(2, 0)
    assert projected.node.function((1, "a", 2.0)) == (2.0, 1)


def test_a_declared_float_reads_back_in_32_bits_over_a_forward_edge_between_vertices() -> None:
    """Flink serializes a FORWARD edge between unchained operators (probe_filesink.out: after
    disable_chaining / start_new_chain / another slot sharing group a FLOAT 0.1 reads back as
    0.10000000149011612; chained it stays 0.1; a DOUBLE or an undeclared type is unchanged)."""
    from types import SimpleNamespace

    from sessioncluster.api.accumulators import IntCounter
    from sessioncluster.common.typeinfo import Types
    from sessioncluster.streaming.runtime import Router, Rows, VertexProgram, edge_outs
    from sessioncluster.taskmanager.writer import emit_all

    def first_vertex(unchain: str | None, output_type: object) -> Any:
        env = StreamExecutionEnvironment(None)
        second = (env.from_collection([1, 2]).map(lambda x: x * 0.1, output_type=output_type)
                  .map(repr))
        if unchain == "slot_sharing_group":
            second.slot_sharing_group("other")
        elif unchain is not None:
            getattr(second, unchain)()
        graph = build_job_graph(env.stream_graph, [second._sink(OperatorKind.SINK_COLLECT)],
                                "job", lambda obj, what: "key")
        return next(v for v in graph.vertices
                    if v.operators[0].kind is OperatorKind.SOURCE_COLLECTION)

    def emitted(vertex: Any, ts: bool = False) -> list[object]:
        spec = SimpleNamespace(vertex=vertex, output=VertexOutput(OutputKind.FORWARD), outputs=None)
        task = SimpleNamespace(spec=spec, subtask=0, records_out=IntCounter(), key_selectors={},
                               combiners={})
        records = [(7, 0.1)] if ts else [0.1]
        return list(emit_all(task, iter(records), ts))  # type: ignore[arg-type]

    def routed(vertex: Any) -> list[object]:  # STREAMING: the vertex's output rows
        prog = VertexProgram("job", vertex, {}, edge_outs(vertex), False, False)
        rows = Rows()
        Router(prog).route([(None, 0.1)], rows)
        return [cloudpickle.loads(v) for v in rows.v]

    for unchain in ("disable_chaining", "start_new_chain", "slot_sharing_group"):
        vertex = first_vertex(unchain, Types.FLOAT())
        assert vertex.operators[-1].kind is OperatorKind.MAP  # the vertex ends with the map
        assert emitted(vertex) == [0.10000000149011612], unchain
        assert routed(vertex) == [0.10000000149011612], unchain
    assert emitted(first_vertex("disable_chaining", Types.FLOAT()), ts=True) == [
        (7, 0.10000000149011612)]
    assert emitted(first_vertex("disable_chaining", Types.DOUBLE())) == [0.1]
    assert routed(first_vertex("disable_chaining", Types.DOUBLE())) == [0.1]
    chained = first_vertex(None, Types.FLOAT())
    assert chained.operators[-1].kind is OperatorKind.SINK_COLLECT  # one chain: no exchange
