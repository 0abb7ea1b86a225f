"""Flink's time attributes among a query's columns, which its schemas mark: a rowtime column
(``WATERMARK FOR ts``) ``TIMESTAMP(3) *ROWTIME*`` in STREAMING mode, a ``PROCTIME()`` column
``TIMESTAMP_LTZ(3) NOT NULL *PROCTIME*`` in both modes (Flink 2.3's ``print_schema()``,
``DESCRIBE`` and a TableResult's schema, recorded by /work/briefs/data/ftypes3/probe.py).

A column keeps its table's time attribute when read as it is (``*``, by name, renamed, through
a view, a subquery or a common table expression, as ``MAX(ts)``); a window table function's
``window_time`` is one of its time column's kind; a CAST or any other expression is none.
Pure (no Spark); a query of another shape (a join, a set operation) marks nothing.
"""

from __future__ import annotations

from typing import Callable, Mapping

from sqlglot import exp

from ...api.table.result import TIME_ATTRIBUTE_MARKERS
from .dialect import output_name, window_table_and_time
from .model import CatalogTable

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


def query_attributes(query: exp.Expr, tables: TableAttributes,
                     ctes: Mapping[str, Attributes] | None = None) -> Attributes | None:
    """The time attributes of a query's columns; None when its shape is not one known here."""
    ctes = dict(ctes or {})
    with_ = query.args.get("with_")
    for cte in with_.expressions if with_ is not None else []:
        columns = query_attributes(cte.this, tables, ctes)
        if columns is None:
            return None
        ctes[cte.alias.lower()] = columns
    if isinstance(query, exp.Subquery):
        return query_attributes(query.this, tables, ctes)
    if not isinstance(query, exp.Select) or query.args.get("joins"):
        return None
    from_ = query.args.get("from_")
    source = _source(from_.this, tables, ctes) if from_ is not None else []
    if source is None:
        return None
    by_name = {name.lower(): kind for name, kind in source}
    out: Attributes = []
    for i, projection in enumerate(query.selects):
        if isinstance(projection, exp.Star):
            out += source
        elif isinstance(projection, exp.Column) and projection.is_star:
            return None
        else:
            out.append((output_name(projection, i), _kind(projection.unalias(), by_name)))
    return out


def marked(types: list[str], attributes: Attributes | None, streaming: bool) -> list[str]:
    """Each type text with its column's time attribute's marker (a rowtime's in STREAMING
    only, as Flink 2.3's BATCH schemas show none)."""
    if attributes is None or len(attributes) != len(types):
        return types
    return [f"{t} *{kind}*" if kind == PROCTIME or kind == ROWTIME and streaming else t
            for t, (_, kind) in zip(types, attributes)]


def unmarked(type_text: str) -> str:
    """A type text without its time attribute's marker (a table a CTAS makes stores the
    column's type; its time attribute is the WATERMARK's the statement declares)."""
    for marker in TIME_ATTRIBUTE_MARKERS:
        type_text = type_text.removesuffix(marker)
    return type_text


def _kind(node: exp.Expr, by_name: Mapping[str, str | None]) -> str | None:
    if isinstance(node, exp.Max):  # Flink 2.3: MAX(ts) of a rowtime is one
        node = node.this
    if isinstance(node, exp.Column):
        return by_name.get(node.name.lower())
    return None


def _source(source: exp.Expr, tables: TableAttributes,
            ctes: Mapping[str, Attributes]) -> Attributes | None:
    alias = source.args.get("alias")
    renamed = [c.name for c in alias.columns] if alias is not None and alias.columns else None
    columns: Attributes | None
    if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier):
        columns = ctes.get(source.name.lower())
        if columns is None:
            columns = tables(source.name)
    elif isinstance(source, exp.Subquery):
        columns = query_attributes(source.this, tables, ctes)
    elif isinstance(source, exp.Table) and isinstance(source.this, exp.Anonymous) \
            and source.this.name.upper() == "TABLE" and len(source.this.expressions) == 1:
        columns = _window(source.this.expressions[0], tables, ctes)
    else:
        return None
    if columns is None or (renamed is not None and len(renamed) != len(columns)):
        return None
    return columns if renamed is None else [(n, k) for n, (_, k) in zip(renamed, columns)]


def _window(call: exp.Expr, tables: TableAttributes,
            ctes: Mapping[str, Attributes]) -> Attributes | None:
    """A window table function's columns: its table's, ``window_start`` and ``window_end``
    none, ``window_time`` its time column's kind."""
    found = window_table_and_time(call)
    if found is None:
        return None
    table, time = found
    columns = _source(table, tables, ctes)
    if columns is None:
        return None
    kind = next((k for n, k in columns if n.lower() == time), None)
    return columns + [("window_start", None), ("window_end", None), ("window_time", kind)]
