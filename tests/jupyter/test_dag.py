"""The layered DAG layout (left to right) of JobGraphs."""

from __future__ import annotations

import pytest

from sessioncluster.jupyter.dag import layout_dag, node_lines, state_color, text_color


def test_chain_is_one_row_of_layers() -> None:
    layout = layout_dag(["a", "b", "c"], [("a", "b"), ("b", "c")])
    assert layout.positions == {"a": (0, 0.0), "b": (1, 0.0), "c": (2, 0.0)}
    assert (layout.layers, layout.rows) == (3, 1)


def test_vertex_sits_right_of_its_furthest_input() -> None:
    # a -> b -> d and a -> d, c -> d: d is in layer 2 (after b), c in layer 0
    layout = layout_dag(["a", "b", "c", "d"], [("a", "b"), ("b", "d"), ("a", "d"), ("c", "d")])
    layers = {v: p[0] for v, p in layout.positions.items()}
    assert layers == {"a": 0, "c": 0, "b": 1, "d": 2}
    for src, dst in [("a", "b"), ("b", "d"), ("a", "d"), ("c", "d")]:
        assert layers[src] < layers[dst]


def test_rows_are_distinct_within_a_layer_and_centred() -> None:
    layout = layout_dag(["s1", "s2", "s3", "j"], [("s1", "j"), ("s2", "j"), ("s3", "j")])
    rows = [layout.positions[v][1] for v in ("s1", "s2", "s3")]
    assert sorted(rows) == [0.0, 1.0, 2.0]
    assert layout.positions["j"] == (1, 1.0)  # centred on the widest layer
    assert layout.rows == 3


def test_order_follows_inputs_to_avoid_crossings() -> None:
    # a feeds y, b feeds x: in layer 1, y must sit above x (the inputs' rows)
    layout = layout_dag(["a", "b", "x", "y"], [("b", "x"), ("a", "y")])
    assert layout.positions["y"][1] < layout.positions["x"][1]


def test_input_order_does_not_matter_and_bad_graphs_raise() -> None:
    assert layout_dag(["c", "b", "a"], [("a", "b"), ("b", "c")]).positions["c"][0] == 2
    with pytest.raises(ValueError, match="cycle"):
        layout_dag(["a", "b"], [("a", "b"), ("b", "a")])
    with pytest.raises(ValueError, match="unknown"):
        layout_dag(["a"], [("a", "zzz")])
    assert layout_dag([], []).positions == {}


def test_node_lines_and_colours() -> None:
    lines = node_lines(["Source: Collection Source", "x" * 60], 3, 1000, 7)
    assert lines[0] == "Source: Collection Source"
    assert lines[1].startswith("→ x") and lines[1].endswith("…") and len(lines[1]) == 34
    assert lines[2:] == ["parallelism 3", "in 1,000 · out 7"]
    assert node_lines(["Map"], 1, None, None) == ["Map", "parallelism 1"]
    assert state_color("RUNNING") != state_color("FINISHED") != state_color("FAILED")
    assert text_color("RUNNING") == "#ffffff" and text_color("CREATED") != "#ffffff"
