"""``%%flink_sql --chart bar|line|area --x COL --y COL``: a streaming query's live result drawn
with Bokeh, updated in place (as Zeppelin's charts of ``%flink.ssql``).

The figure lives in an ipywidget (``jupyter_bokeh.BokehModel``, as the job widget's DAG): setting
its ``ColumnDataSource`` sends a document patch over the widget's comm; no Bokeh server.
"""

from __future__ import annotations

import datetime
import uuid
from html import escape
from typing import Any, Sequence

from .sqlresult import LiveResult

CHARTS = ("bar", "line", "area")


def chart_data(columns: Sequence[str], rows: Sequence[Sequence[Any]], x: str, y: str,
               categorical: bool) -> dict[str, list[Any]]:
    """The ``x`` and ``y`` columns of ``rows`` as a ColumnDataSource's data: ``x`` as text for
    a bar chart (its categories, in the rows' order), else sorted by ``x``; a NULL ``y`` is 0."""
    for name in (x, y):
        if name not in columns:
            raise ValueError(f"--x/--y: no column {name!r} in the result "
                             f"({', '.join(columns)})")
    ix, iy = list(columns).index(x), list(columns).index(y)
    pairs = [(r[ix], 0.0 if r[iy] is None else float(r[iy])) for r in rows]
    if categorical:
        xs = [str(v) for v, _ in pairs]
        return {"x": xs, "y": [v for _, v in pairs]}
    pairs = sorted((p for p in pairs if p[0] is not None), key=lambda p: p[0])
    return {"x": [v for v, _ in pairs], "y": [v for _, v in pairs]}


class ChartFigure:
    """A bar, line or area chart of two columns of a live result."""

    def __init__(self, kind: str, columns: Sequence[str], types: Sequence[str], x: str,
                 y: str) -> None:
        from bokeh.models import ColumnDataSource, FactorRange
        from bokeh.plotting import figure

        if kind not in CHARTS:
            raise ValueError(f"unknown chart {kind!r}: one of {', '.join(CHARTS)}")
        chart_data(columns, [], x, y, True)  # both columns exist
        self.kind, self.columns, self.x, self.y = kind, list(columns), x, y
        self.source = ColumnDataSource({"x": [], "y": []})
        x_type = types[self.columns.index(x)].upper() if len(types) == len(columns) else ""
        common: dict[str, Any] = {"height": 260, "width": 640, "toolbar_location": None,
                                  "title": f"{y} by {x}"}
        self.factors = FactorRange()
        if kind == "bar":
            self.figure = figure(x_range=self.factors, **common)
            self.figure.vbar(x="x", top="y", width=0.8, source=self.source)
        else:
            timed = x_type.startswith(("TIMESTAMP", "DATE"))
            self.figure = figure(x_axis_type="datetime" if timed else "auto", **common)
            if kind == "line":
                self.figure.line(x="x", y="y", source=self.source, line_width=2)
            else:
                self.figure.varea(x="x", y1=0, y2="y", source=self.source, fill_alpha=0.6)
        self.figure.xaxis.axis_label, self.figure.yaxis.axis_label = x, y
        self.display_id = uuid.uuid4().hex
        self._widget: Any = None

    def update(self, view: LiveResult) -> None:
        """Draw the rows the view shows now."""
        data = chart_data(view.header(), view.rows(), self.x, self.y, self.kind == "bar")
        if self.kind == "bar":
            self.factors.factors = list(dict.fromkeys(data["x"]))
        else:
            data["x"] = [_plain_time(v) for v in data["x"]]
        self.source.data = data

    def static_html(self) -> str:
        """The figure as it is now, as HTML a saved notebook shows without a kernel: a
        standalone Bokeh page (``bokeh.embed.file_html``; BokehJS from Bokeh's resources
        setting, the CDN by default, inline with ``BOKEH_RESOURCES=inline``) in an iframe."""
        from bokeh.embed import file_html
        from bokeh.resources import Resources
        from bokeh.settings import settings

        page = file_html(self.figure, Resources(mode=settings.resources(default="cdn")),
                         title=f"{self.y} by {self.x}")
        height = int(self.figure.height or 260) + 30
        return (f'<iframe class="sc-sql-chart" srcdoc="{escape(page, quote=True)}" '
                f'style="border: none; width: 100%; height: {height}px;"></iframe>')

    def show(self) -> None:
        """Display the live chart (its widget) in the cell, under :attr:`display_id`."""
        from IPython.display import display

        self._widget = self.widget()
        display(self._widget._repr_mimebundle_(), raw=True, display_id=self.display_id)

    def show_final(self, view: LiveResult) -> None:
        """Draw the view's final rows, and add the chart's static rendering to its display
        (the widget view kept): what a saved notebook shows without a kernel."""
        from IPython.display import update_display

        self.update(view)
        bundle = {**(self._widget._repr_mimebundle_() if self._widget is not None else {}),
                  "text/html": self.static_html(),
                  "text/plain": f"{self.kind} chart of {self.y} by {self.x}"}
        update_display(bundle, raw=True, display_id=self.display_id)

    def widget(self) -> Any:
        """The figure as an ipywidget (BokehJS is loaded into the page first)."""
        from jupyter_bokeh import BokehModel

        from .widgets.bokeh_views import load_bokehjs

        load_bokehjs()
        return BokehModel(self.figure)


def _plain_time(v: Any) -> Any:
    """A date as a datetime (Bokeh's datetime axis takes either; keep one kind per source)."""
    if isinstance(v, datetime.date) and not isinstance(v, datetime.datetime):
        return datetime.datetime(v.year, v.month, v.day)
    return v
