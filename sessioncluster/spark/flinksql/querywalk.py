"""One walk over a query's sources, for what is computed per column of it (Flink's types in
:mod:`.querytypes`, time attributes in :mod:`.timeattributes`).

The walk dispatches once: a query is a ``WITH``, ``VALUES``, a subquery, a set operation or a
``SELECT``; a ``SELECT`` reads its ``FROM`` and ``JOIN`` sources, each a table by name (a common
table expression first), ``VALUES``, a subquery or a window table function ``TABLE(...)``,
renamed by an alias's column list. A subclass gives the rules per column. Pure (no Spark).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Callable, Generic, Mapping, TypeVar

from sqlglot import exp

from .dialect import output_name, window_table_and_time

#: what is computed per column (None where it is not known, or nothing)
T = TypeVar("T")
#: a query's columns: each name with what is computed for it
Named = list[tuple[str, "T | None"]]


@dataclass
class Scope(Generic[T]):
    """The columns a SELECT reads: in order (for ``*``) and by name (its name alone, and
    ``qualifier.name``, lower case; a name two sources have is None unqualified)."""

    ordered: Named[T] = field(default_factory=list)
    by_name: dict[str, T | None] = field(default_factory=dict)


class QueryWalker(ABC, Generic[T]):
    """The walk of a query's sources; subclasses give what each column is."""

    def __init__(self, tables: Callable[[str], "Named[T] | None"]) -> None:
        self.tables = tables

    # -- the rules per column ---------------------------------------------------------------
    @abstractmethod
    def values(self, values: exp.Values) -> Named[T] | None:
        """A ``VALUES`` list's columns."""

    @abstractmethod
    def set_operation(self, operation: exp.SetOperation, left: Named[T],
                      right: Named[T]) -> Named[T] | None:
        """The columns of a set operation of two queries' (of equal length)."""

    @abstractmethod
    def projection(self, node: exp.Expr, select: exp.Select, scope: Scope[T]) -> T | None:
        """What a SELECT's item (unaliased) is."""

    @abstractmethod
    def window_bounds(self, time: T | None) -> Named[T]:
        """A window table function's ``window_start``, ``window_end`` and ``window_time``
        columns, given its time column's."""

    def outer(self, column: T | None) -> T | None:
        """A column of an outer join's side that may be missing."""
        return column

    def table(self, table: exp.Table, ctes: Mapping[str, Named[T]]
              ) -> Named[T] | None:
        """A table's columns by its name: a common table expression's, else a table's."""
        columns = ctes.get(table.name.lower())
        return self.tables(table.name) if columns is None else columns

    def joined(self, select: exp.Select, scope: Scope[T]) -> Scope[T] | None:
        """The scope of a SELECT with joins (None: not known here)."""
        return scope

    # -- the walk ---------------------------------------------------------------------------
    def columns(self, query: exp.Expr, ctes: Mapping[str, Named[T]] | None = None
                ) -> Named[T] | None:
        """A query's columns (its common table expressions', then its own); None when its shape
        is not one known here."""
        known = dict(ctes or {})
        with_ = query.args.get("with_")
        for cte in with_.expressions if with_ is not None else []:
            columns = self.columns(cte.this, known)
            if columns is None:
                return None
            known[cte.alias.lower()] = columns
        if isinstance(query, exp.Values):
            return self.values(query)
        if isinstance(query, exp.Subquery):
            return self.columns(query.this, known)
        if isinstance(query, exp.SetOperation):
            left, right = self.columns(query.this, known), self.columns(query.expression, known)
            if left is None or right is None or len(left) != len(right):
                return None
            return self.set_operation(query, left, right)
        if not isinstance(query, exp.Select):
            return None
        scope = self.scope(query, known)
        if scope is None:
            return None
        out: Named[T] = []
        for i, projection in enumerate(query.selects):
            if isinstance(projection, exp.Star):
                out += scope.ordered
            elif isinstance(projection, exp.Column) and projection.is_star:
                return None
            else:
                out.append((output_name(projection, i),
                            self.projection(projection.unalias(), query, scope)))
        return out

    def scope(self, select: exp.Select, ctes: Mapping[str, Named[T]]
              ) -> Scope[T] | None:
        """The columns of a SELECT's FROM and JOINs (an outer join's side that may be missing
        as :meth:`outer` makes it); None when a source is not known here."""
        from_ = select.args.get("from_")
        scope: Scope[T] = Scope()
        if from_ is None:
            return scope
        joins = select.args.get("joins") or []
        sources = [from_.this] + [j.this for j in joins]
        sides = [""] + [(j.side or "").upper() for j in joins]
        for position, (source, side) in enumerate(zip(sources, sides)):
            columns = self.source(source, ctes)
            if columns is None:
                return None
            if side in ("RIGHT", "FULL"):  # everything read before may be missing
                scope.ordered = [(n, self.outer(t)) for n, t in scope.ordered]
                scope.by_name = {k: self.outer(t) for k, t in scope.by_name.items()}
            if side in ("LEFT", "FULL"):
                columns = [(n, self.outer(t)) for n, t in columns]
            qualifier = source.alias_or_name.lower()
            scope.ordered += columns
            for name, t in columns:
                key = name.lower()
                scope.by_name[key] = None if key in scope.by_name and position else t
                scope.by_name[f"{qualifier}.{key}"] = t
        return self.joined(select, scope) if joins else scope

    def source(self, source: exp.Expr, ctes: Mapping[str, Named[T]]
               ) -> Named[T] | None:
        """A FROM or JOIN source's columns, renamed by its alias's column list."""
        alias = source.args.get("alias")
        renamed = [c.name for c in alias.columns] if alias is not None and alias.columns else None
        columns: Named[T] | None
        if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier):
            columns = self.table(source, ctes)
        elif isinstance(source, exp.Values):
            columns = self.values(source)
        elif isinstance(source, exp.Subquery):
            columns = self.columns(source.this, ctes)
        elif isinstance(source, exp.Table) and isinstance(source.this, exp.Anonymous) \
                and source.this.name.upper() == "TABLE" and len(source.this.expressions) == 1:
            columns = self.window(source.this.expressions[0], ctes)
        else:
            return None
        if columns is None or (renamed is not None and len(renamed) != len(columns)):
            return None
        return columns if renamed is None else [(n, t) for n, (_, t) in zip(renamed, columns)]

    def window(self, call: exp.Expr, ctes: Mapping[str, Named[T]]
               ) -> Named[T] | None:
        """A window table function's columns (``TUMBLE``, ``HOP``, ``CUMULATE``, ``SESSION``
        over ``TABLE t``): ``t``'s, then :meth:`window_bounds`; None when ``call`` is not one
        known here."""
        found = window_table_and_time(call)
        if found is None:
            return None
        table, time_name = found
        columns = self.source(table, ctes)
        if columns is None:
            return None
        time = next((t for n, t in columns if n.lower() == time_name), None)
        return columns + self.window_bounds(time)
