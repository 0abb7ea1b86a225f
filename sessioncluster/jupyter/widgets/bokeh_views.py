"""Bokeh models of the job widget: the JobGraph DAG and Histogram accumulators.

They live inside ipywidgets through ``jupyter_bokeh.BokehModel`` (no Bokeh server): changing a
``ColumnDataSource`` here sends a document patch over the widget's comm.
"""

from __future__ import annotations

from bokeh.io import output_notebook
from bokeh.io.state import curstate
from bokeh.models import ColumnDataSource, DataRange1d, HoverTool, Range1d
from bokeh.models.annotations.arrows import Arrow, VeeHead
from bokeh.plotting import figure

from ...graph.jobgraph import JobGraph
from ..dag import layout_dag, node_lines, state_color, text_color
from ..models import JobView

NODE_W, NODE_H = 0.84, 0.8
PX_PER_LAYER, PX_PER_LINE = 260, 15


def load_bokehjs() -> None:
    """Load BokehJS into the notebook page, once per kernel, from the current cell.

    ``jupyter_bokeh``'s views draw nothing without it (Bokeh requires ``output_notebook()`` in
    every notebook). Resources come from Bokeh's settings: the CDN by default,
    ``BOKEH_RESOURCES=inline`` on a machine without internet.
    """
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel") or curstate().notebook:
        return
    output_notebook(hide_banner=True)


class DagFigure:
    """The JobGraph, layered left to right; one box per JobVertex, coloured by its state.

    >>> dag = DagFigure(job_graph)          # doctest: +SKIP
    >>> dag.update(view)                    # doctest: +SKIP
    """

    def __init__(self, job_graph: JobGraph) -> None:
        self.job_graph = job_graph
        vs = job_graph.vertices
        edges = [(e.source, e.target) for e in job_graph.edges]
        self.layout = layout_dag([v.vertex_id for v in vs], edges)
        lines = max(max(len(v.operators), 1) for v in vs) + 2 if vs else 3
        layers, rows = max(self.layout.layers, 1), max(self.layout.rows, 1)
        px_per_row = (lines * PX_PER_LINE + 20) / NODE_H
        self.source = ColumnDataSource(self._data(None))
        fig = figure(width=int(PX_PER_LAYER * layers + 20), height=int(px_per_row * rows + 20),
                     x_range=Range1d(start=-0.5, end=layers - 0.5),
                     y_range=Range1d(start=rows - 0.5, end=-0.5),
                     tools="", toolbar_location=None, min_border=4)
        fig.axis.visible = False
        fig.grid.visible = False
        fig.outline_line_color = None
        for e in job_graph.edges:
            (sl, sr), (tl, tr) = self.layout.positions[e.source], self.layout.positions[e.target]
            # bokeh's type stubs name the body's line properties body_line_*, its runtime line_*
            fig.add_layout(Arrow(end=VeeHead(size=8, fill_color="#666", line_color="#666"),  # type: ignore[call-arg]
                                 x_start=sl + NODE_W / 2, y_start=sr, x_end=tl - NODE_W / 2,
                                 y_end=tr, line_color="#666", line_width=1.4))
        if job_graph.edges:
            mids = [((self.layout.positions[e.source][0] + self.layout.positions[e.target][0]) / 2,
                     (self.layout.positions[e.source][1] + self.layout.positions[e.target][1]) / 2,
                     e.ship_strategy.value) for e in job_graph.edges]
            fig.text(x=[m[0] for m in mids], y=[m[1] - 0.06 for m in mids],
                     text=[m[2] for m in mids], text_align="center", text_font_size="8pt",
                     text_color="#555")
        nodes = fig.rect(x="x", y="y", width=NODE_W, height=NODE_H, fill_color="color",
                         line_color="#333", source=self.source)
        fig.text(x="tx", y="ty", text="label", text_color="text_color", text_font_size="8pt",
                 text_baseline="top", text_align="left", text_line_height=1.25, source=self.source)
        fig.add_tools(HoverTool(renderers=[nodes], tooltips=[
            ("JobVertex", "@name"), ("state", "@state"), ("parallelism", "@parallelism"),
            ("records in", "@records_in"), ("records out", "@records_out")]))
        self.figure = fig

    def _data(self, view: JobView | None) -> dict[str, list[object]]:
        data: dict[str, list[object]] = {k: [] for k in (
            "x", "y", "tx", "ty", "name", "state", "color", "text_color", "label", "parallelism",
            "records_in", "records_out")}
        for v in self.job_graph.vertices:
            layer, row = self.layout.positions[v.vertex_id]
            info = view.vertices.get(v.vertex_id) if view is not None else None
            state = info.state.value if info is not None else "CREATED"
            rin = info.records_in if info is not None else 0
            rout = info.records_out if info is not None else 0
            lines = node_lines([op.name for op in v.operators] or [v.name], v.parallelism,
                               rin, rout, width=36)
            for key, value in (("x", layer), ("y", row), ("tx", layer - NODE_W / 2 + 0.03),
                               ("ty", row - NODE_H / 2 + 0.05), ("name", v.name), ("state", state),
                               ("color", state_color(state)), ("text_color", text_color(state)),
                               ("label", "\n".join(lines)), ("parallelism", v.parallelism),
                               ("records_in", rin), ("records_out", rout)):
                data[key].append(value)
        return data

    def update(self, view: JobView) -> None:
        """Recolour and relabel the nodes from ``view`` (only when something changed)."""
        data = self._data(view)
        if data != dict(self.source.data):
            self.source.data = data


class HistogramFigure:
    """A Histogram accumulator (bin -> count) as a bar chart."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.source = ColumnDataSource({"bin": [], "count": []})
        fig = figure(width=380, height=200, title=f"Histogram '{name}'", tools="",
                     toolbar_location=None, min_border=4, y_range=DataRange1d(start=0))
        fig.vbar(x="bin", top="count", width=0.9, source=self.source, fill_color="#2b7bcb",
                 line_color=None)
        fig.add_tools(HoverTool(tooltips=[("bin", "@bin"), ("count", "@count")]))
        fig.xgrid.visible = False
        self.figure = fig

    def update(self, counts: dict[int, int]) -> None:
        bins = sorted(counts)
        data = {"bin": bins, "count": [counts[b] for b in bins]}
        if data != dict(self.source.data):
            self.source.data = data
