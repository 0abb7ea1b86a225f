"""Flink's names and types of a query's columns, and ``TYPEOF`` answered at planning.

Pure (no Spark), over :mod:`.flinktypes`: the columns a SELECT reads (its tables', through a
callback, its ``VALUES``', its subqueries' and common table expressions', walked by
:class:`.querywalk.QueryWalker`), an outer join's missing side nullable; the columns it makes.
"""

from __future__ import annotations

from typing import Callable, Mapping

from sqlglot import exp

from ...api.table.types import DataType, DataTypes, DoubleType, FloatType
from .flinktypes import Columns, Context, infer, type_text, types_of
from .model import FlinkSqlError
from .querywalk import QueryWalker, Scope
from .typemerging import least_restrictive

#: a table's columns by its name (None when the table is not known)
TableColumns = Callable[[str], "Columns | None"]


class TypeWalker(QueryWalker[DataType]):
    """Flink's types of a query's columns: an outer join's missing side nullable."""

    def values(self, values: exp.Values) -> Columns | None:
        return values_columns(values)

    def set_operation(self, operation: exp.SetOperation, left: Columns, right: Columns
                      ) -> Columns | None:
        return set_operation_columns(left, right)

    def projection(self, node: exp.Expr, select: exp.Select, scope: Scope[DataType]
                   ) -> DataType | None:
        return infer(node, Context(scope.by_name, grouped=select.args.get("group") is not None))

    def window_bounds(self, time: DataType | None) -> Columns:
        """``window_start`` and ``window_end`` ``TIMESTAMP(3) NOT NULL``, ``window_time`` the
        time column's type, NOT NULL (Flink's ``SqlWindowTableFunction``)."""
        bound = DataTypes.TIMESTAMP(3, False)
        return [("window_start", bound), ("window_end", bound),
                ("window_time", time and time.not_null())]

    def outer(self, column: DataType | None) -> DataType | None:
        return column and column.nullable()

    def table(self, table: exp.Table, ctes: Mapping[str, Columns]) -> Columns | None:
        """A table by its name alone (one of another catalog or database is not typed here)."""
        return None if table.args.get("db") else super().table(table, ctes)


def query_columns(query: exp.Expr, tables: TableColumns,
                  ctes: Mapping[str, Columns] | None = None) -> Columns | None:
    """The names and Flink types of a query's columns (``VALUES`` or a ``SELECT`` over tables,
    ``VALUES``, subqueries and window table functions, its common table expressions included; a
    set operation of those); None when its shape is not one typed here."""
    return TypeWalker(tables).columns(query, ctes)


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


#: the columns a SELECT reads: in order (for ``*``) and by name
SelectScope = Scope[DataType]


def select_scope(select: exp.Select, tables: TableColumns,
                 ctes: Mapping[str, Columns]) -> SelectScope | None:
    """The columns of a SELECT's FROM and JOINs (an outer join's nullable side made nullable);
    None when a source is not known here."""
    return TypeWalker(tables).scope(select, ctes)


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
        scope = select_scope(select, tables, ctes) if select is not None else SelectScope()
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
