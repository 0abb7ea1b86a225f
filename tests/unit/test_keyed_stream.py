"""A KeyedStream as PyFlink's, a DataStream of its own (``print``, ``union``, ``connect``,
``min_by``/``max_by``, ``key_by`` again) that refuses what would undo its partitioning, with
PyFlink 2.3's messages (/work/briefs/data/lead29/keyed_stream.py and .out); without Spark."""

from __future__ import annotations

import pytest

from sessioncluster.api.functions import FieldMaxBy, FieldMinBy
from sessioncluster.client.datastream import KEYED_STREAM_VALUES, ConnectedStreams
from sessioncluster.client.environment import StreamExecutionEnvironment
from sessioncluster.graph.streamgraph import OperatorKind, Partitioning


@pytest.fixture
def keyed() -> object:
    env = StreamExecutionEnvironment(None)
    return env.from_collection([("a", 3), ("b", 1)]).key_by(lambda r: r[0])


@pytest.mark.parametrize("call,message", [
    (lambda k: k.set_parallelism(2), "Set parallelism for KeyedStream is not supported."),
    (lambda k: k.name("x"), "Set name for KeyedStream is not supported."),
    (lambda k: k.uid("u"), "Set uid for KeyedStream is not supported."),
    (lambda k: k.shuffle(), "Cannot override partitioning for KeyedStream."),
    (lambda k: k.rebalance(), "Cannot override partitioning for KeyedStream."),
    (lambda k: k.partition_custom(lambda key, n: 0, lambda r: r),
     "Cannot override partitioning for KeyedStream."),
    (lambda k: k.cache(), "Cache for KeyedStream is not supported.")])
def test_what_would_undo_the_keying_is_refused_as_pyflink_does(keyed, call, message) -> None:
    with pytest.raises(Exception) as refused:
        call(keyed)
    assert str(refused.value) == message


def test_its_records_as_a_stream_are_hash_partitioned(keyed) -> None:
    """``print``/``union``/``project``: PyFlink's identity map after the key_by, the exchange
    kept (each record printed by the subtask its key goes to)."""
    for stream in (keyed.print(), keyed.union(keyed.stream), keyed.project(1)):
        node = stream.node
        while node.name != KEYED_STREAM_VALUES:
            node = node.inputs[0].source
        assert node.kind is OperatorKind.MAP
        assert [e.partitioning for e in node.inputs] == [Partitioning.HASH]

def test_min_by_max_by_and_connect_of_two_keyed_streams(keyed) -> None:
    assert isinstance(keyed.min_by(1).node.function, FieldMinBy)
    assert isinstance(keyed.max_by(1).node.function, FieldMaxBy)
    other = keyed.stream.env.from_collection([("a", "x")]).key_by(lambda r: r[0])
    both = keyed.connect(other)
    assert isinstance(both, ConnectedStreams) and both.key_selectors is not None
    assert keyed.stream.connect(other).key_selectors is None  # a DataStream with a KeyedStream
    assert keyed.connect(other.stream).key_selectors is None


def test_reductions_and_filters_keep_the_declared_type_for_print() -> None:
    """PyFlink's reduce, sum/min/max, min_by/max_by and filter declare their input's type, so
    print() shows Java's text (word_count.py: ``(And,5)``, javaprint/flink_out); the sink's
    config carries it, with the sink identifier."""
    from sessioncluster.common.typeinfo import Types, from_type_spec

    env = StreamExecutionEnvironment(None)
    pair = Types.TUPLE([Types.STRING(), Types.INT()])
    ds = env.from_collection([("a", 1)], type_info=pair)
    keyed = ds.key_by(lambda r: r[0])
    for stream in (keyed.reduce(lambda a, b: a), keyed.sum(1), keyed.min(1), keyed.max(1),
                   keyed.min_by(1), keyed.max_by(1), keyed.filter(bool), ds.filter(bool)):
        stream.print("ID")
        sink = env._sinks[-1]
        assert from_type_spec(sink.config["print_type"]) == pair
        assert sink.config["identifier"] == "ID"
    keyed.print()
    assert from_type_spec(env._sinks[-1].config["print_type"]) == pair
    env.from_collection([1]).map(str).print()
    assert env._sinks[-1].config["print_type"] is None
