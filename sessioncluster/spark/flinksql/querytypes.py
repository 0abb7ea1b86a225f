"""Flink's names and types of a query's columns, and ``TYPEOF`` answered at planning.

Pure (no Spark), over :mod:`.flinktypes`: the columns a SELECT reads (its tables', through a
callback, its ``VALUES``', its subqueries' and common table expressions'), an outer join's
missing side nullable; the columns it makes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from sqlglot import exp

from ...api.table.types import DataType, DataTypes, DoubleType, FloatType
from .dialect import output_name, window_table_and_time
from .flinktypes import Columns, Context, infer, type_text, types_of
from .model import FlinkSqlError
from .typemerging import least_restrictive

#: a table's columns by its name (None when the table is not known)
TableColumns = Callable[[str], "Columns | None"]


def query_columns(query: exp.Expr, tables: TableColumns,
                  ctes: Mapping[str, Columns] | None = None) -> Columns | None:
    """The names and Flink types of a query's columns (``VALUES`` or a ``SELECT`` over tables,
    ``VALUES``, subqueries and window table functions, its common table expressions included; a
    set operation of those); None when its shape is not one typed here."""
    ctes = dict(ctes or {})
    with_ = query.args.get("with_")
    if with_ is not None:
        for cte in with_.expressions:
            columns = query_columns(cte.this, tables, ctes)
            if columns is None:
                return None
            ctes[cte.alias.lower()] = columns
    if isinstance(query, exp.Values):
        return values_columns(query)
    if isinstance(query, exp.Subquery):
        return query_columns(query.this, tables, ctes)
    if isinstance(query, exp.SetOperation):
        return set_operation_columns(query_columns(query.this, tables, ctes),
                                     query_columns(query.expression, tables, ctes))
    if not isinstance(query, exp.Select):
        return None
    scope = select_scope(query, tables, ctes)
    if scope is None:
        return None
    context = Context(scope.by_name, grouped=query.args.get("group") is not None)
    out: Columns = []
    for i, projection in enumerate(query.selects):
        if isinstance(projection, exp.Star):
            out += scope.ordered
        elif isinstance(projection, exp.Column) and projection.is_star:
            return None
        else:
            out.append((output_name(projection, i), infer(projection.unalias(), context)))
    return out


def values_columns(values: exp.Values) -> Columns | None:
    """A ``VALUES`` list's columns: each the least restrictive type of its rows' values."""
    rows = [row.expressions if isinstance(row, exp.Tuple) else [row]
            for row in values.expressions]
    if not rows or any(len(r) != len(rows[0]) for r in rows):
        return None
    alias = values.args.get("alias")
    names = [c.name for c in alias.columns] if alias is not None and alias.columns else []
    names += [f"EXPR${i}" for i in range(len(names), len(rows[0]))]
    out: Columns = []
    for i, name in enumerate(names):
        types = types_of([r[i] for r in rows], Context())
        # Flink 2.3 types a column with a NULL in it NOT NULL still: not claimed here
        known = types is not None and not any(t.is_nullable for t in types)
        out.append((name, least_restrictive(types) if known and types else None))
    return out


def set_operation_columns(left: Columns | None, right: Columns | None) -> Columns | None:
    """The columns of ``UNION [ALL]``, ``INTERSECT``, ``EXCEPT`` of two queries' columns: the
    left's names, each column the least restrictive type of both sides' (Calcite's
    ``SqlSetOperator`` with Flink's type system), nullable if either side's is."""
    if left is None or right is None or len(left) != len(right):
        return None
    out: Columns = []
    for (name, a), (_, b) in zip(left, right):
        kinds = {type(a), type(b)}
        # Flink 2.3 unites a FLOAT column with a DOUBLE one as FLOAT: not claimed here
        known = a is not None and b is not None and kinds != {FloatType, DoubleType}
        out.append((name, least_restrictive([a, b]) if known else None))  # type: ignore[list-item]
    return out


def window_columns(call: exp.Expr, tables: TableColumns,
                   ctes: Mapping[str, Columns]) -> Columns | None:
    """The columns of a window table function (``TUMBLE``, ``HOP``, ``CUMULATE``, ``SESSION``
    over ``TABLE t``): ``t``'s as declared, then ``window_start`` and ``window_end``
    ``TIMESTAMP(3) NOT NULL`` and ``window_time`` the time column's type, NOT NULL (Flink's
    ``SqlWindowTableFunction``); None when ``call`` is not one typed here."""
    found = window_table_and_time(call)
    if found is None:
        return None
    table, time_name = found
    columns = _source_columns(table, tables, ctes)
    if columns is None:
        return None
    time = next((t for n, t in columns if n.lower() == time_name), None)
    bound = DataTypes.TIMESTAMP(3, False)
    return columns + [("window_start", bound), ("window_end", bound),
                      ("window_time", time and time.not_null())]




@dataclass
class SelectScope:
    """The columns a SELECT reads: in order (for ``*``) and by name."""

    ordered: Columns
    by_name: dict[str, DataType | None]


def select_scope(select: exp.Select, tables: TableColumns,
                 ctes: Mapping[str, Columns]) -> SelectScope | None:
    """The columns of a SELECT's FROM and JOINs (an outer join's nullable side made nullable);
    None when a source is not known here."""
    from_ = select.args.get("from_")
    scope = SelectScope([], {})
    if from_ is None:
        return scope
    joins = select.args.get("joins") or []
    sources = [from_.this] + [j.this for j in joins]
    sides = [""] + [(j.side or "").upper() for j in joins]
    for position, (source, side) in enumerate(zip(sources, sides)):
        columns = _source_columns(source, tables, ctes)
        if columns is None:
            return None
        if side in ("RIGHT", "FULL"):  # everything read before may be missing
            scope.ordered = [(n, t and t.nullable()) for n, t in scope.ordered]
            scope.by_name = {k: t and t.nullable() for k, t in scope.by_name.items()}
        if side in ("LEFT", "FULL"):
            columns = [(n, t and t.nullable()) for n, t in columns]
        qualifier = source.alias_or_name.lower()
        scope.ordered += columns
        for name, t in columns:
            key = name.lower()
            # a name two sources have is ambiguous unqualified: not typed here
            scope.by_name[key] = None if key in scope.by_name and position else t
            scope.by_name[f"{qualifier}.{key}"] = t
    return scope


def _source_columns(source: exp.Expr, tables: TableColumns,
                    ctes: Mapping[str, Columns]) -> Columns | None:
    alias = source.args.get("alias")
    renamed = [c.name for c in alias.columns] if alias is not None and alias.columns else None
    columns: Columns | None
    if isinstance(source, exp.Table) and not source.args.get("db") and isinstance(
            source.this, exp.Identifier):
        columns = ctes.get(source.name.lower())
        if columns is None:
            columns = tables(source.name)
    elif isinstance(source, exp.Values):
        columns = values_columns(source)
    elif isinstance(source, exp.Subquery):
        columns = query_columns(source.this, tables, ctes)
    elif isinstance(source, exp.Table) and isinstance(source.this, exp.Anonymous) \
            and source.this.name.upper() == "TABLE" and len(source.this.expressions) == 1:
        columns = window_columns(source.this.expressions[0], tables, ctes)
    else:
        return None
    if columns is None or (renamed is not None and len(renamed) != len(columns)):
        return None
    if renamed is not None:
        columns = [(n, t) for n, (_, t) in zip(renamed, columns)]
    return columns


def typeof_calls(tree: exp.Expr) -> list[exp.Anonymous]:
    """The ``TYPEOF(expr [, force_serializable])`` calls of ``tree``."""
    return [n for n in tree.find_all(exp.Anonymous) if n.name.upper() == "TYPEOF"]


#: the type texts of the TYPEOF calls of a tree not typed here (the tree, the calls)
Fallback = Callable[[exp.Expr, list[exp.Anonymous]], list[str]]


def resolve_typeof(tree: exp.Expr, tables: TableColumns, fallback: Fallback) -> exp.Expr:
    """``tree`` (a copy, if it has any) with each ``TYPEOF(expr [, force])`` replaced by the
    text of Flink's type of ``expr``, a string literal, as Flink evaluates it at planning
    (``force``, a serializable string, is the same text for the types there are here);
    ``fallback`` answers for the calls not typed here."""
    if not typeof_calls(tree):
        return tree
    tree = tree.copy()
    ctes = _cte_columns(tree, tables)
    unknown = []
    for call in typeof_calls(tree):
        if not 1 <= len(call.expressions) <= 2:
            raise FlinkSqlError("TYPEOF takes an expression and, optionally, whether to force "
                                f"a serializable string; not {len(call.expressions)} arguments")
        select = call.find_ancestor(exp.Select)
        scope = select_scope(select, tables, ctes) if select is not None else SelectScope([], {})
        grouped = select is not None and select.args.get("group") is not None
        t = infer(call.expressions[0], Context(scope.by_name, grouped)) if scope else None
        if t is None:
            unknown.append(call)
        else:
            call.replace(exp.Literal.string(type_text(t)))
    if unknown:
        for call, text in zip(unknown, fallback(tree, unknown)):
            call.replace(exp.Literal.string(text))
    return tree


def _cte_columns(tree: exp.Expr, tables: TableColumns) -> dict[str, Columns]:
    """The columns of the common table expressions of ``tree``'s WITH (those typed here)."""
    ctes: dict[str, Columns] = {}
    with_ = tree.args.get("with_")
    for cte in with_.expressions if with_ is not None else []:
        columns = query_columns(cte.this, tables, ctes)
        if columns is not None:
            ctes[cte.alias.lower()] = columns
    return ctes
