"""Flink's time attributes among a query's columns, which its schemas mark: a rowtime column
(``WATERMARK FOR ts``) ``TIMESTAMP(3) *ROWTIME*`` in STREAMING mode, a ``PROCTIME()`` column
``TIMESTAMP_LTZ(3) NOT NULL *PROCTIME*`` in both modes (Flink 2.3's ``print_schema()``,
``DESCRIBE`` and a TableResult's schema, recorded by /work/briefs/data/ftypes3/probe.py).

A column keeps its table's time attribute when read as it is (``*``, by name, renamed, through
a view, a subquery or a common table expression, as ``MAX(ts)``); a window table function's
``window_time`` is one of its time column's kind; a CAST or any other expression is none.
A join keeps each side's time attributes (Flink 2.3's schema of a regular, an outer or an
interval join alike: /work/briefs/data/types4/probe.py, probe2.py), a set operation its left
query's. Pure (no Spark); a query of another shape marks nothing.
"""

from __future__ import annotations

from typing import Callable, Mapping

from sqlglot import exp

from .model import CatalogTable
from .querywalk import QueryWalker, Scope

ROWTIME, PROCTIME = "ROWTIME", "PROCTIME"
#: the columns of a query, each with its time attribute's kind (None: not a time attribute)
Attributes = list[tuple[str, "str | None"]]
#: a table's or view's columns with their time attributes, by its name (None: not known)
TableAttributes = Callable[[str], "Attributes | None"]


def table_attributes(table: CatalogTable) -> Attributes:
    """A catalog table's columns: its watermark's column a rowtime, a ``PROCTIME()`` one a
    proctime."""
    rowtime = table.watermark.rowtime.lower() if table.watermark is not None else None
    out: Attributes = []
    for column in table.columns:
        if (column.expression or "").replace(" ", "").upper() == "PROCTIME()":
            out.append((column.name, PROCTIME))
        else:
            out.append((column.name, ROWTIME if column.name.lower() == rowtime else None))
    return out


#: Flink 2.3's refusals, in BATCH, of a window over a ``PROCTIME()`` column (its schema is
#: given; running or explaining it is not: /work/briefs/data/types4/probe4.out,
#: /work/briefs/data/lead26/probe_gw.out): a window table function's, a legacy group window's
PROCTIME_WINDOW_TVF = "Processing time Window TableFunction is not supported yet."
PROCTIME_GROUP_WINDOW = "Window can not be defined over a proctime attribute column for batch mode"
_GROUP_WINDOWS = ("TUMBLE", "HOP", "SESSION")


class AttributeWalker(QueryWalker[str]):
    """The time attributes of a query's columns; counts the window table functions
    (:attr:`proctime_windows`) and legacy group windows (:attr:`proctime_group_windows`) over a
    proctime it reads."""

    def __init__(self, tables: TableAttributes) -> None:
        super().__init__(tables)
        self.proctime_windows = self.proctime_group_windows = 0

    def scope(self, select: exp.Select, ctes: Mapping[str, Attributes]) -> Scope[str] | None:
        """The SELECT's scope; a ``GROUP BY TUMBLE|HOP|SESSION(pt, ...)`` over a proctime
        counted."""
        scope = super().scope(select, ctes)
        group = select.args.get("group")
        if scope is None or group is None:
            return scope
        for call in group.expressions:
            if isinstance(call, exp.Anonymous) and call.name.upper() in _GROUP_WINDOWS \
                    and call.expressions and isinstance(call.expressions[0], exp.Column) \
                    and self.projection(call.expressions[0], select, scope) == PROCTIME:
                self.proctime_group_windows += 1
        return scope

    def values(self, values: exp.Values) -> Attributes | None:
        """A ``VALUES`` list's columns: none a time attribute."""
        first = values.expressions[0] if values.expressions else None
        width = len(first.expressions) if isinstance(first, exp.Tuple) else 1
        alias = values.args.get("alias")
        names = [c.name for c in alias.columns] if alias is not None and alias.columns else []
        return [(n, None) for n in names + [f"EXPR${i}" for i in range(len(names), width)]]

    def set_operation(self, operation: exp.SetOperation, left: Attributes, right: Attributes
                      ) -> Attributes | None:
        """The left query's (Flink 2.3: ``ts UNION ALL CAST(ts ...)`` is a rowtime still,
        ``CAST(ts ...) UNION ALL ts`` none)."""
        return left

    def projection(self, node: exp.Expr, select: exp.Select, scope: Scope[str]) -> str | None:
        if isinstance(node, exp.Max):  # Flink 2.3: MAX(ts) of a rowtime is one
            node = node.this
        if isinstance(node, exp.Column):
            key = node.name.lower()
            return scope.by_name.get(f"{node.table.lower()}.{key}" if node.table else key)
        return None

    def window_bounds(self, time: str | None) -> Attributes:
        """``window_start`` and ``window_end`` none, ``window_time`` its time column's kind."""
        if time == PROCTIME:
            self.proctime_windows += 1
        return [("window_start", None), ("window_end", None), ("window_time", time)]


def catalog_attributes(tables: Mapping[str, CatalogTable]) -> TableAttributes:
    """The time attributes of the columns of the catalog's ``tables`` (by lower-case name)."""
    return lambda name: table_attributes(tables[name.lower()]) if name.lower() in tables \
        else None


def query_attributes(query: exp.Expr, tables: TableAttributes,
                     ctes: Mapping[str, Attributes] | None = None) -> Attributes | None:
    """The time attributes of a query's columns; None when its shape is not one known here."""
    return AttributeWalker(tables).columns(query, ctes)


def proctime_window_refusal(query: exp.Expr, tables: TableAttributes) -> str | None:
    """Flink 2.3's message refusing the query in BATCH mode when it reads a window table
    function or a legacy group window over a ``PROCTIME()`` column (STREAMING's only)."""
    walker = AttributeWalker(tables)
    walker.columns(query)
    if walker.proctime_windows:
        return PROCTIME_WINDOW_TVF
    return PROCTIME_GROUP_WINDOW if walker.proctime_group_windows else None


def marked(types: list[str], attributes: Attributes | None, streaming: bool) -> list[str]:
    """Each type text with its column's time attribute's marker (a rowtime's in STREAMING
    only, as Flink 2.3's BATCH schemas show none)."""
    if attributes is None or len(attributes) != len(types):
        return types
    return [f"{t} *{kind}*" if kind == PROCTIME or kind == ROWTIME and streaming else t
            for t, (_, kind) in zip(types, attributes)]
