"""StreamGraph -> JobGraph: Flink's operator chaining rules, edges and blob keys."""

from __future__ import annotations

import hashlib
import re
import threading

import pytest

from sessioncluster.client.environment import StreamExecutionEnvironment
from sessioncluster.client.shipping import UnpicklableFunctionError
from sessioncluster.graph.jobgraph import build_job_graph, chaining_veto
from sessioncluster.graph.streamgraph import ChainingStrategy, OperatorKind, Partitioning, StreamGraph

K = OperatorKind


class FakeBlobs:
    """put_blob(obj, what): a deterministic key per object, every call recorded."""

    def __init__(self):
        self.calls: list[tuple[object, str]] = []

    def __call__(self, obj, what):
        self.calls.append((obj, what))
        return hashlib.sha256(repr(obj).encode()).hexdigest()


def double(x):
    return 2 * x


def positive(x):
    return x > 0


def first(t):
    return t[0]


def add(a, b):
    return a + b


def linear(g: StreamGraph, parallelism: int = 1):
    """source(HEAD) -> map -> filter -> collect sink, all FORWARD."""
    src = g.add_node(K.SOURCE_COLLECTION, [1, 2, 3], parallelism=parallelism,
                     chaining=ChainingStrategy.HEAD)
    m = g.add_node(K.MAP, double, parallelism=parallelism)
    f = g.add_node(K.FILTER, positive, parallelism=parallelism)
    sink = g.add_node(K.SINK_COLLECT, parallelism=parallelism)
    g.add_edge(src, m)
    g.add_edge(m, f)
    g.add_edge(f, sink)
    return src, m, f, sink


def keyed(g: StreamGraph):
    """source(HEAD) -> map -HASH-> reduce -> sink."""
    src = g.add_node(K.SOURCE_COLLECTION, [("a", 1)], chaining=ChainingStrategy.HEAD)
    m = g.add_node(K.MAP, double)
    r = g.add_node(K.REDUCE, add)
    sink = g.add_node(K.SINK_COLLECT)
    g.add_edge(src, m)
    g.add_edge(m, r, Partitioning.HASH, key_selector=first)
    g.add_edge(r, sink)
    return src, m, r, sink


def test_forward_chain_with_equal_parallelism_is_one_vertex():
    g = StreamGraph()
    *_, sink = linear(g)
    blobs = FakeBlobs()
    jg = build_job_graph(g, [sink], "job", blobs)
    assert len(jg.vertices) == 1
    v = jg.vertices[0]
    assert [op.kind for op in v.operators] == [K.SOURCE_COLLECTION, K.MAP, K.FILTER, K.SINK_COLLECT]
    assert v.name == "Source: Collection Source -> Map -> Filter -> Sink: Collect"
    assert v.parallelism == 1
    assert v.is_source and v.is_sink
    assert jg.edges == [] and jg.chaining_notes == []
    # the sink has no function: no blob for it
    assert v.operators[-1].function_key is None
    assert [obj for obj, _ in blobs.calls] == [[1, 2, 3], double, positive]


def test_hash_edge_splits_the_chain_and_carries_key_selector_and_combiner():
    g = StreamGraph()
    src, m, r, sink = keyed(g)
    blobs = FakeBlobs()
    jg = build_job_graph(g, [sink], "job", blobs)
    assert [v.name for v in jg.vertices] == ["Source: Collection Source -> Map",
                                            "Keyed Reduce -> Sink: Collect"]
    up, down = jg.vertices
    [edge] = jg.edges
    assert (edge.source, edge.target) == (up.vertex_id, down.vertex_id)
    assert up.outputs == [edge] and down.inputs == [edge]
    assert edge.ship_strategy is Partitioning.HASH
    assert edge.key_selector_key == blobs(first, "")
    reduce_op = down.operators[0]
    assert reduce_op.kind is K.REDUCE
    assert edge.combiner_key == reduce_op.function_key == blobs(add, "")
    assert edge.intermediate_dataset_id == f"{up.vertex_id}->{down.vertex_id}"
    assert any("HASH partitioning" in n for n in jg.chaining_notes)


def test_hash_edge_into_a_non_reduce_has_no_combiner():
    g = StreamGraph()
    src = g.add_node(K.SOURCE_COLLECTION, [1], chaining=ChainingStrategy.HEAD)
    m = g.add_node(K.MAP, double)
    sink = g.add_node(K.SINK_COLLECT)
    g.add_edge(src, m, Partitioning.HASH, key_selector=first)
    g.add_edge(m, sink)
    jg = build_job_graph(g, [sink], "job", FakeBlobs())
    [edge] = jg.edges
    assert edge.key_selector_key is not None
    assert edge.combiner_key is None


def test_different_parallelism_is_not_chained():
    g = StreamGraph()
    src, m, f, sink = linear(g)
    f.parallelism = 2
    sink.parallelism = 2
    jg = build_job_graph(g, [sink], "job", FakeBlobs())
    assert [v.name for v in jg.vertices] == ["Source: Collection Source -> Map", "Filter -> Sink: Collect"]
    assert [v.parallelism for v in jg.vertices] == [1, 2]
    assert jg.edges[0].ship_strategy is Partitioning.REBALANCE  # FORWARD needs equal parallelism
    assert jg.chaining_notes == ["'Map' -> 'Filter': parallelism differs (1 vs 2)"]
    assert chaining_veto(m.outputs[0], g) == "parallelism differs (1 vs 2)"


@pytest.mark.parametrize("which", ["upstream", "downstream"])
def test_never_chaining_is_not_chained(which):
    g = StreamGraph()
    src, m, f, sink = linear(g)
    (m if which == "upstream" else f).chaining = ChainingStrategy.NEVER
    jg = build_job_graph(g, [sink], "job", FakeBlobs())
    if which == "upstream":  # NEVER: neither to its input nor to its output
        assert [v.name for v in jg.vertices] == ["Source: Collection Source", "Map", "Filter -> Sink: Collect"]
    else:
        assert [v.name for v in jg.vertices] == ["Source: Collection Source -> Map", "Filter", "Sink: Collect"]
    assert any("chaining is disabled on" in n for n in jg.chaining_notes)


def test_head_on_a_downstream_node_starts_a_new_chain():
    g = StreamGraph()
    src, m, f, sink = linear(g)
    f.chaining = ChainingStrategy.HEAD
    jg = build_job_graph(g, [sink], "job", FakeBlobs())
    # HEAD chains with its outputs, not its input
    assert [v.name for v in jg.vertices] == ["Source: Collection Source -> Map", "Filter -> Sink: Collect"]
    assert jg.chaining_notes == ["'Map' -> 'Filter': 'Filter' starts a new chain"]


def test_different_slot_sharing_groups_are_not_chained():
    g = StreamGraph()
    src, m, f, sink = linear(g)
    f.slot_sharing_group = sink.slot_sharing_group = "other"
    jg = build_job_graph(g, [sink], "job", FakeBlobs())
    assert [(v.name, v.slot_sharing_group) for v in jg.vertices] == [
        ("Source: Collection Source -> Map", "default"), ("Filter -> Sink: Collect", "other")]
    assert "slot sharing groups differ" in jg.chaining_notes[0]


def test_disabled_chaining_gives_one_vertex_per_node():
    g = StreamGraph()
    nodes = linear(g)
    g.chaining_enabled = False
    jg = build_job_graph(g, [nodes[-1]], "job", FakeBlobs())
    assert [v.operators[0].operator_id for v in jg.vertices] == [n.node_id for n in nodes]
    assert all(len(v.operators) == 1 for v in jg.vertices)
    assert len(jg.edges) == 3
    assert all(e.ship_strategy is Partitioning.FORWARD for e in jg.edges)
    assert len(jg.chaining_notes) == 3
    assert all("chaining is disabled for the environment" in n for n in jg.chaining_notes)


def fan_out(g: StreamGraph):
    src = g.add_node(K.SOURCE_COLLECTION, [1], chaining=ChainingStrategy.HEAD)
    m = g.add_node(K.MAP, double)
    a = g.add_node(K.FILTER, positive)
    b = g.add_node(K.SINK_PRINT)
    sink_a = g.add_node(K.SINK_COLLECT)
    g.add_edge(src, m)
    g.add_edge(m, a)
    g.add_edge(m, b)
    g.add_edge(a, sink_a)
    return m, a, b, sink_a


def test_node_with_two_outputs_is_chained_to_neither():
    g = StreamGraph()
    m, a, b, sink_a = fan_out(g)
    jg = build_job_graph(g, [sink_a, b], "job", FakeBlobs())
    assert [v.name for v in jg.vertices] == [
        "Source: Collection Source -> Map", "Filter -> Sink: Collect", "Sink: Print to Std. Out"]
    up = jg.vertices[0]
    assert sorted(e.target for e in up.outputs) == sorted(v.vertex_id for v in jg.vertices[1:])
    assert all("'Map' has 2 outputs" in n for n in jg.chaining_notes)
    assert len(jg.chaining_notes) == 2


def test_outputs_outside_the_job_do_not_count():
    g = StreamGraph()
    m, a, b, sink_a = fan_out(g)
    jg = build_job_graph(g, [sink_a], "job", FakeBlobs())
    assert [v.name for v in jg.vertices] == ["Source: Collection Source -> Map -> Filter -> Sink: Collect"]
    assert chaining_veto(m.outputs[0], g) == "'Map' has 2 outputs"
    assert chaining_veto(m.outputs[0], g, {n.node_id for n in g.nodes if n is not b}) is None


def test_vertex_ids_are_deterministic_32_hex():
    def build():
        g = StreamGraph()
        *_, sink = keyed(g)
        return build_job_graph(g, [sink], "job", FakeBlobs())

    ids = [v.vertex_id for v in build().vertices]
    assert ids == [v.vertex_id for v in build().vertices]
    assert len(set(ids)) == 2
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)


def test_vertex_id_depends_on_the_operators():
    g1, g2 = StreamGraph(), StreamGraph()
    sink1 = keyed(g1)[-1]
    *_, reduce2, sink2 = keyed(g2)
    reduce2.uid = "my-reduce"
    jg1 = build_job_graph(g1, [sink1], "job", FakeBlobs())
    jg2 = build_job_graph(g2, [sink2], "job", FakeBlobs())
    assert jg1.vertices[0].vertex_id == jg2.vertices[0].vertex_id
    assert jg1.vertices[1].vertex_id != jg2.vertices[1].vertex_id


def test_blob_keys_hold_every_function_key():
    g = StreamGraph()
    *_, sink = keyed(g)
    blobs = FakeBlobs()
    jg = build_job_graph(g, [sink], "job", blobs)
    expected = {blobs(obj, "") for obj in ([("a", 1)], double, first, add)}
    assert jg.blob_keys == expected
    fn_keys = {op.function_key for v in jg.vertices for op in v.operators if op.function_key}
    assert fn_keys <= jg.blob_keys and jg.edges[0].key_selector_key in jg.blob_keys


def test_explain_names_every_vertex_and_the_hash_edge():
    g = StreamGraph()
    *_, sink = keyed(g)
    jg = build_job_graph(g, [sink], "wordcount", FakeBlobs())
    text = jg.explain()
    assert "JobGraph 'wordcount': 2 JobVertices" in text
    for v in jg.vertices:
        assert v.name in text
        assert v.vertex_id[:8] in text
    assert f"<- HASH from [{jg.vertices[0].vertex_id[:8]}]" in text
    assert "Not chained:" in text


def test_no_sinks_raises():
    g = StreamGraph()
    linear(g)
    with pytest.raises(ValueError, match="add a sink"):
        build_job_graph(g, [], "job", FakeBlobs())


# -- through the client API -----------------------------------------------------------------


def env():
    return StreamExecutionEnvironment(None)


def test_client_word_count_gives_two_vertices():
    e = env()
    ds = (e.from_collection(["a b", "b"]).flat_map(str.split).map(lambda w: (w, 1))
          .key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1])))
    sink = ds._sink(OperatorKind.SINK_COLLECT)
    jg, blobs = e.job_graph("j", [sink])
    assert [v.name for v in jg.vertices] == ["Source: Collection Source -> FlatMap -> Map",
                                            "Keyed Reduce -> Sink: Collect"]
    [edge] = jg.edges
    assert edge.ship_strategy is Partitioning.HASH
    assert edge.combiner_key == jg.vertices[1].operators[0].function_key
    # the real put_blob keys each blob by the SHA-256 of its bytes
    assert jg.blob_keys == set(blobs)
    assert all(hashlib.sha256(data).hexdigest() == key for key, data in blobs.items())


def test_client_parallelism_change_gives_rebalance():
    e = env()
    m = e.from_collection([1, 2]).map(double).set_parallelism(2)
    sink = m._sink(OperatorKind.SINK_COLLECT)
    jg, _ = e.job_graph("j", [sink])
    assert [(v.name, v.parallelism) for v in jg.vertices] == [
        ("Source: Collection Source", 1), ("Map -> Sink: Collect", 2)]
    assert [edge.ship_strategy for edge in jg.edges] == [Partitioning.REBALANCE]


def test_client_rebalance_gives_rebalance_even_at_equal_parallelism():
    e = env()
    sink = e.from_collection([1, 2]).rebalance().map(double)._sink(OperatorKind.SINK_COLLECT)
    jg, _ = e.job_graph("j", [sink])
    assert len(jg.vertices) == 2
    assert [edge.ship_strategy for edge in jg.edges] == [Partitioning.REBALANCE]
    assert jg.vertices[0].parallelism == jg.vertices[1].parallelism == 1


def test_client_unpicklable_closure_names_the_operator():
    lock = threading.Lock()
    e = env()
    sink = e.from_collection([1]).map(lambda x: (lock, x)).name("locking mapper")._sink(
        OperatorKind.SINK_COLLECT)
    with pytest.raises(UnpicklableFunctionError, match="'locking mapper'"):
        e.job_graph("j", [sink])


def test_client_forward_edge_never_joins_different_parallelism():
    e = env()
    m = e.from_collection([1, 2]).map(double)
    f = m.filter(positive)
    m.set_parallelism(2)  # after the filter was attached
    jg, _ = e.job_graph("j", [f._sink(OperatorKind.SINK_COLLECT)])
    for edge in jg.edges:
        if edge.ship_strategy is Partitioning.FORWARD:
            assert jg.vertex(edge.source).parallelism == jg.vertex(edge.target).parallelism


def test_side_output_edges_are_never_chained_and_keep_their_tag() -> None:
    g = StreamGraph()
    g.default_parallelism = 2
    src = g.add_node(K.SOURCE_COLLECTION, [1], chaining=ChainingStrategy.HEAD)
    proc = g.add_node(K.PROCESS, abs)
    side = g.add_node(K.MAP, abs)
    sink = g.add_node(K.SINK_COLLECT)
    g.add_edge(src, proc)
    g.add_edge(proc, side, side_output="late")
    g.add_edge(side, sink)
    graph = build_job_graph(g, [sink], "job", FakeBlobs())
    assert [[op.kind for op in v.operators] for v in graph.vertices] == [
        [K.SOURCE_COLLECTION, K.PROCESS], [K.MAP, K.SINK_COLLECT]]
    (edge,) = graph.edges
    assert edge.side_output == "late" and edge.ship_strategy is Partitioning.FORWARD
    assert any("side output 'late'" in note for note in graph.chaining_notes)


def test_a_stream_read_twice_ends_its_vertex_with_two_output_edges() -> None:
    g = StreamGraph()
    src = g.add_node(K.SOURCE_COLLECTION, [1], chaining=ChainingStrategy.HEAD)
    m = g.add_node(K.MAP, abs)
    a, b = g.add_node(K.SINK_COLLECT), g.add_node(K.SINK_PRINT)
    g.add_edge(src, m)
    g.add_edge(m, a)
    g.add_edge(m, b)
    graph = build_job_graph(g, [a, b], "job", FakeBlobs())
    first = graph.vertices[0]
    assert [op.kind for op in first.operators] == [K.SOURCE_COLLECTION, K.MAP]
    assert len(first.outputs) == 2
    assert any("has 2 outputs" in note for note in graph.chaining_notes)


def test_a_two_input_vertex_draws_both_input_edges() -> None:
    import xml.etree.ElementTree as ET

    from sessioncluster.jupyter.html import dag_svg

    g = StreamGraph()
    a = g.add_node(K.SOURCE_COLLECTION, [1], chaining=ChainingStrategy.HEAD)
    b = g.add_node(K.SOURCE_COLLECTION, [2], chaining=ChainingStrategy.HEAD)
    co = g.add_node(K.PROCESS, abs)
    sink = g.add_node(K.SINK_COLLECT)
    g.add_edge(a, co, Partitioning.REBALANCE, input_index=0)
    g.add_edge(b, co, Partitioning.REBALANCE, input_index=1)
    g.add_edge(co, sink)
    graph = build_job_graph(g, [sink], "connect", FakeBlobs())
    (two,) = [v for v in graph.vertices if len(v.inputs) == 2]
    assert sorted(e.input_index for e in two.inputs) == [0, 1]
    svg = ET.fromstring(dag_svg(graph))
    lines = [el for el in svg.iter() if el.tag.endswith(("line", "path"))]
    assert len(lines) >= 2  # one drawn edge per input
    assert "has 2 inputs" in " ".join(graph.chaining_notes)


def test_the_execution_plan_lists_operators_before_chaining():
    """``env.get_execution_plan()``: Flink's JSON plan (/work/briefs/data/lead28/execplan.out):
    each operator unchained, a source's pact "Data Source", a sink's "Data Sink", a key_by a
    HASH input, a forward edge between different parallelisms a REBALANCE."""
    import json

    e = env()
    e.set_parallelism(2)
    ds = e.from_collection([("a", 1), ("b", 2)]).set_parallelism(1)
    ds.map(lambda x: x).name("plus").key_by(first).reduce(lambda a, b: a).print()
    plan = json.loads(e.get_execution_plan())["nodes"]
    assert [(n["type"], n["pact"], n["parallelism"]) for n in plan] == [
        ("Source: Collection Source", "Data Source", 1), ("plus", "Operator", 2),
        ("Keyed Reduce", "Operator", 2), ("Sink: Print to Std. Out", "Data Sink", 2)]
    assert [[(p["id"], p["ship_strategy"]) for p in n.get("predecessors", [])] for n in plan] == [
        [], [(plan[0]["id"], "REBALANCE")], [(plan[1]["id"], "HASH")],
        [(plan[2]["id"], "FORWARD")]]
