"""Layout and styling of a JobGraph drawn as a DAG, shared by the static SVG and the Bokeh view.

>>> layout = layout_dag(["src", "map", "sink"], [("src", "map"), ("map", "sink")])
>>> layout.positions["sink"]
(2, 0.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..graph.lifecycle import ExecutionState, JobStatus

#: Fill colours by ExecutionState, close to Flink's web UI.
STATE_COLORS: dict[str, str] = {
    "CREATED": "#b8b8b8",
    "SCHEDULED": "#a9c7e3",
    "DEPLOYING": "#7fb0dc",
    "INITIALIZING": "#5d9ad3",
    "RUNNING": "#2b7bcb",
    "FINISHED": "#2e9d4f",
    "CANCELING": "#f0ad4e",
    "CANCELLING": "#f0ad4e",
    "CANCELED": "#8f8f8f",
    "FAILING": "#e07a5f",
    "FAILED": "#d9534f",
    "RESTARTING": "#f0ad4e",
}
_DARK_FILLS = {"RUNNING", "FINISHED", "FAILED", "CANCELED", "INITIALIZING"}


def state_color(state: ExecutionState | JobStatus | str) -> str:
    """The fill colour of an ExecutionState or JobStatus."""
    return STATE_COLORS.get(str(state), "#b8b8b8")


def text_color(state: ExecutionState | JobStatus | str) -> str:
    """A text colour readable on :func:`state_color`."""
    return "#ffffff" if str(state) in _DARK_FILLS else "#1f1f1f"


@dataclass(frozen=True, slots=True)
class DagLayout:
    """``positions[vertex_id] = (layer, row)``: layers run left to right, rows top to bottom;
    rows are centred on the widest layer, so they can be halves."""

    positions: dict[str, tuple[int, float]]
    layers: int
    rows: int


def layout_dag(vertex_ids: Sequence[str], edges: Sequence[tuple[str, str]]) -> DagLayout:
    """Layer a DAG left to right: a vertex sits one layer right of its furthest input.

    Within a layer, vertices are ordered by the mean row of their inputs (one barycenter pass),
    ties broken by the given order. Raises ``ValueError`` on a cycle or an unknown vertex.

    >>> layout_dag(["a", "b", "c"], [("a", "c"), ("b", "c")]).positions
    {'a': (0, 0.0), 'b': (0, 1.0), 'c': (1, 0.5)}
    """
    order = {v: i for i, v in enumerate(vertex_ids)}
    inputs: dict[str, list[str]] = {v: [] for v in vertex_ids}
    outputs: dict[str, list[str]] = {v: [] for v in vertex_ids}
    for src, dst in edges:
        if src not in order or dst not in order:
            raise ValueError(f"edge {src} -> {dst} names an unknown vertex")
        inputs[dst].append(src)
        outputs[src].append(dst)

    # Kahn's algorithm, stable in the given order
    pending = {v: len(inputs[v]) for v in vertex_ids}
    ready = [v for v in vertex_ids if pending[v] == 0]
    layer: dict[str, int] = {}
    topo: list[str] = []
    while ready:
        v = ready.pop(0)
        topo.append(v)
        layer[v] = max((layer[u] + 1 for u in inputs[v]), default=0)
        for w in outputs[v]:
            pending[w] -= 1
            if pending[w] == 0:
                ready.append(w)
                ready.sort(key=order.__getitem__)
    if len(topo) != len(vertex_ids):
        raise ValueError("the graph has a cycle")

    n_layers = max(layer.values(), default=-1) + 1
    by_layer: list[list[str]] = [[] for _ in range(n_layers)]
    for v in vertex_ids:
        by_layer[layer[v]].append(v)
    index: dict[str, int] = {}
    for members in by_layer:
        def barycenter(v: str) -> float:
            ins = [index[u] for u in inputs[v] if u in index]
            return sum(ins) / len(ins) if ins else float(order[v])

        members.sort(key=lambda v: (barycenter(v), order[v]))
        for i, v in enumerate(members):
            index[v] = i
    rows = max((len(m) for m in by_layer), default=0)
    positions = {v: (layer[v], index[v] + (rows - len(by_layer[layer[v]])) / 2)
                 for v in vertex_ids}
    return DagLayout(positions, n_layers, rows)


def shorten(text: str, width: int = 34) -> str:
    """``text`` cut to ``width`` characters with an ellipsis."""
    return text if len(text) <= width else text[: width - 1] + "…"


def node_lines(operators: Sequence[str], parallelism: int, records_in: int | None,
               records_out: int | None, width: int = 34) -> list[str]:
    """The label of a JobVertex node: its chained operators, parallelism, records in/out.

    >>> node_lines(["Source: Collection Source", "Map"], 2, 10, 10)
    ['Source: Collection Source', '→ Map', 'parallelism 2', 'in 10 · out 10']
    """
    lines = [shorten(op if i == 0 else f"→ {op}", width) for i, op in enumerate(operators)]
    lines.append(f"parallelism {parallelism}")
    if records_in is not None and records_out is not None:
        lines.append(f"in {records_in:,} · out {records_out:,}")
    return lines
