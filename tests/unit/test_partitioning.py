"""Flink's physical partitioning (``rebalance``, ``shuffle``, ``rescale``, ``broadcast``,
``partition_custom``, ``forward``) and ``project``: the JobGraph's edges and the partitions each
record goes to, without Spark. Flink 2.3's records per subtask:
/work/briefs/data/lead28/partitioning.py and .out (PyFlink 2.3's own partition_custom fails
there: "The partition number should be a positive value, got -1"; this follows its docs)."""

from __future__ import annotations

from collections import Counter

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
