"""A program's StreamGraph as Flink's JSON execution plan (``env.get_execution_plan()``): each
operator before chaining, with its parallelism and how each input reaches it. Flink's
visualizer (and Flink's web UI's "plan" view) reads this format."""

from __future__ import annotations

import json

from .streamgraph import Partitioning, StreamGraph, StreamNode


def execution_plan(graph: StreamGraph, sinks: list[StreamNode]) -> str:
    """The JSON plan of the operators ``sinks`` depend on (Flink's ids count from 1)."""
    nodes = []
    for node in graph.nodes_of(sinks):
        pact = "Data Source" if node.kind.is_source else \
            "Data Sink" if node.kind.is_sink else "Operator"
        entry: dict[str, object] = {"id": node.node_id + 1, "type": node.name, "pact": pact,
                                    "contents": node.name,
                                    "parallelism": graph.parallelism_of(node)}
        if node.inputs:
            entry["predecessors"] = [
                {"id": e.source.node_id + 1, "ship_strategy": _ship_strategy(graph, e.source,
                                                                              node,
                                                                              e.partitioning),
                 "side": "second"} for e in node.inputs]
        nodes.append(entry)
    return json.dumps({"nodes": nodes}, indent=2)


def _ship_strategy(graph: StreamGraph, source: StreamNode, target: StreamNode,
                   partitioning: Partitioning) -> str:
    """Flink turns a forward edge between different parallelisms into a rebalance."""
    if partitioning is Partitioning.FORWARD and \
            graph.parallelism_of(source) != graph.parallelism_of(target):
        return Partitioning.REBALANCE.value
    return partitioning.value
