"""PyFlink's ``Table``: a Flink SQL query built by the Table API, run by its TableEnvironment.

Every operation wraps the query it is applied to (``t.where(col('a') > 1)`` is
``SELECT * FROM (<t>) WHERE (`a` > 1)``); nothing runs until ``execute()``, ``execute_insert()``
or ``to_pandas()``. The column names are known when the operations say them (``select`` of
columns and aliases, ``from_elements``); otherwise they are asked of the JobManager on first need
(``get_schema``, ``drop_columns``...).
"""

from __future__ import annotations

import itertools
import secrets
from typing import Any, Callable, Sequence

from ...common.types import RowKind
from .expression import Expression
from .expressions import as_expression, call_sql, col, expressions_sql
from .result import (
    ResolvedSchema,
    StatementRunner,
    TableResult,
    TableSchema,
    WatermarkSpec,
    without_marker,
)
from .sqltext import RenderContext, quote_identifier, quote_path
from .table_pipeline import TablePipeline
from .types import RowType
from .window import GroupWindow, OverWindow

_UDF_ITEM = "needs Python UDFs (issue 27, item 5), not built yet"
_UNNAMED_TOKEN = secrets.token_hex(3)
_UNNAMED_COUNTER = itertools.count()


def unnamed_view_name() -> str:
    """A fresh name for a Table that str() registers (Flink's ``UnnamedTable$<n>``; here with a
    process token, unique on a session several clients share)."""
    return f"UnnamedTable_{_UNNAMED_TOKEN}_{next(_UNNAMED_COUNTER)}"


def _select_items(exprs: Sequence[Any], ctx: RenderContext | None = None,
                  aggregating: bool = False,
                  columns: Callable[[], list[str]] | None = None) -> list[tuple[str, str | None]]:
    """(SQL, name) of each of ``exprs``, named as Flink's Table API names it: a column by its
    name, an alias by the alias, a cast column ``<name>-<TYPE>``, an aggregate or window
    property ``EXPR$<n>`` (numbered in the order met), anything else ``_c<i>`` (``*``: None)."""
    ctx = ctx if ctx is not None else RenderContext()
    ctx.columns = ctx.columns or columns
    items: list[tuple[str, str | None]] = []
    for i, x in enumerate(exprs):
        e = as_expression(x)
        if e.kind == "columns":  # with_columns/without_columns: a select item per column
            items += [(quote_identifier(n), n) for n in e.value(ctx)]
            continue
        sql = e.to_sql(ctx)
        if e.name == "*":
            items.append((sql, None))
            continue
        if e.name is not None:
            items.append((sql, e.name))
            continue
        if e.derived_name is not None:
            name = e.derived_name
        elif aggregating and sql in ctx.named_calls:
            name = f"EXPR${ctx.named_calls[sql]}"
        else:
            name = f"_c{i}"
        items.append((f"{sql} AS {quote_identifier(name)}", name))
    return items


def _named_select(exprs: Sequence[Any], ctx: RenderContext | None = None,
                  aggregating: bool = False, columns: Callable[[], list[str]] | None = None
                  ) -> tuple[str, list[str] | None]:
    """The select list of ``exprs`` and its column names (None when ``*`` is among them);
    ``columns``: the columns of the table read (for ``with_columns``)."""
    items = _select_items(exprs, ctx, aggregating, columns)
    names = [n for _, n in items]
    return ", ".join(sql for sql, _ in items), (None if None in names else
                                                [n for n in names if n is not None])


class Table:
    """A relational query of the Table API (PyFlink's ``pyflink.table.Table``)."""

    def __init__(self, query: str, t_env: "StatementRunner", columns: Sequence[str] | None = None,
                 types: Sequence[str] | None = None, path: str | None = None) -> None:
        self._query = query
        #: the catalog path this table reads as it is (``from_path``), whose schema shows its
        #: computed columns' expressions and its watermark
        self._path = path
        self._t_env = t_env
        self._columns = list(columns) if columns is not None else None
        self._types = list(types) if types is not None else None
        #: (the query sorted or limited, its ORDER BY list or None) when this table is
        #: order_by's, offset's or fetch's, else None
        self._sort: tuple[str, str | None] | None = None
        self._offset: int | None = None
        self._fetch: int | None = None
        #: the temporary view str() registered this table as
        self._view_name: str | None = None

    # -- the query ------------------------------------------------------------------------------
    @property
    def query_sql(self) -> str:
        """This table's Flink SQL query."""
        return self._query

    def __str__(self) -> str:
        """The name of this table registered as a temporary view, for use in SQL text
        (``t_env.execute_sql("SELECT * FROM %s" % table)``), as PyFlink's ``str(table)``."""
        if self._view_name is None:
            self._view_name = unnamed_view_name()
            self._t_env.create_temporary_view(self._view_name, self)
        return self._view_name

    def __repr__(self) -> str:
        return f"Table({self._query!r})"

    def __getattr__(self, name: str) -> Expression:
        """A column of this table (``orders.name``), as in PyFlink."""
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self.get_column_names():
            raise AttributeError(f"the table has no column {name!r}; its columns are "
                                 f"{self.get_column_names()}")
        return col(name)

    def _derive(self, query: str, columns: Sequence[str] | None = None,
                types: Sequence[str] | None = None) -> "Table":
        return Table(query, self._t_env, columns, types)

    def _from(self) -> str:
        return f"FROM ({self._query})"

    def get_column_names(self) -> list[str]:
        """The column names, asked of the JobManager if the operations did not say them."""
        if self._columns is None:
            schema = self._t_env.query_schema(self._query)
            self._columns, self._types = schema.get_field_names(), schema.get_field_type_texts()
        return list(self._columns)

    def get_schema(self) -> TableSchema:
        """The columns and their Flink SQL types (asked of the JobManager when not known); a
        catalog table's (``from_path``) with its computed columns' expressions and watermark
        (its DESCRIBE's extras and watermark columns), as Flink's."""
        if self._columns is None or self._types is None:
            schema = self._t_env.query_schema(self._query)
            self._columns, self._types = schema.get_field_names(), schema.get_field_type_texts()
        if self._path is None:
            return TableSchema(self._columns, self._types)
        rows = self._t_env.execute_sql(f"DESCRIBE {quote_path(self._path)}").collect()
        described = {str(r[0]): (r[4], r[5]) for r in rows}
        extras = [described.get(n, (None, None))[0] for n in self._columns]
        watermarks = [WatermarkSpec(n, without_marker(t), str(described[n][1]))
                      for n, t in zip(self._columns, self._types)
                      if described.get(n, (None, None))[1]]
        return TableSchema(self._columns, self._types, extras, watermarks)

    def get_resolved_schema(self) -> ResolvedSchema:
        """The columns and their types (PyFlink's newer name), printed as Flink's
        ResolvedSchema."""
        schema = self.get_schema()
        return ResolvedSchema(schema.get_field_names(), schema.get_field_type_texts(),
                              schema.get_extras(), schema.get_watermark_specs())

    def print_schema(self) -> None:
        print(self.get_resolved_schema())

    # -- relational operations -----------------------------------------------------------------
    def select(self, *fields: Any) -> "Table":
        """``SELECT <fields> FROM (<this>)`` (with aggregates: a global aggregation)."""
        sql, names = _named_select(fields, aggregating=True, columns=self.get_column_names)
        return self._derive(f"SELECT {sql} {self._from()}", names)

    def where(self, predicate: Any) -> "Table":
        """``SELECT * FROM (<this>) WHERE <predicate>``."""
        if isinstance(predicate, str):
            raise TypeError(f"where() takes an Expression (col('a') > 1), not the string "
                            f"{predicate!r}; call_sql({predicate!r}) inlines Flink SQL text")
        return self._derive(f"SELECT * {self._from()} WHERE {as_expression(predicate).to_sql()}",
                            self._columns, self._types)

    filter = where

    def alias(self, field: str, *fields: str) -> "Table":
        """The same rows, columns renamed in order."""
        new = [field, *fields]
        old = self.get_column_names()
        if len(new) != len(old):
            raise ValueError(f"alias() names {len(new)} columns; the table has {len(old)}: {old}")
        sql = ", ".join(f"{quote_identifier(o)} AS {quote_identifier(n)}" for o, n in zip(old, new))
        return self._derive(f"SELECT {sql} {self._from()}", new, self._types)

    def distinct(self) -> "Table":
        # the columns named (not *): a bounded STREAMING DISTINCT's changelog is planned per column
        columns = ", ".join(quote_identifier(c) for c in self.get_column_names())
        return self._derive(f"SELECT DISTINCT {columns} {self._from()}", self._columns,
                            self._types)

    def group_by(self, *fields: Any) -> "GroupedTable":
        return GroupedTable(self, [as_expression(f) for f in fields])

    def window(self, window: GroupWindow) -> "GroupWindowedTable":
        return GroupWindowedTable(self, window)

    def over_window(self, *over_windows: OverWindow) -> "OverWindowedTable":
        return OverWindowedTable(self, list(over_windows))

    # -- joins -----------------------------------------------------------------------------------
    def _join(self, kind: str, right: "Table", predicate: Any) -> "Table":
        if not isinstance(right, Table):
            raise TypeError(f"{kind.lower()} takes a Table, not {right!r}")
        if predicate is None:
            if kind != "INNER JOIN":
                raise ValueError(f"a {kind} needs a join predicate")
            on, kind = "", "CROSS JOIN"
        else:
            on = f" ON {as_expression(predicate).to_sql()}"
        left_names, right_names = self.get_column_names(), right.get_column_names()
        ambiguous = [n for n in left_names if n in right_names]
        if ambiguous:  # Flink's JoinOperationFactory: the join's columns must be named apart
            raise ValueError(f"join relations with ambiguous names: [{', '.join(ambiguous)}]")
        columns = left_names + right_names
        return self._derive(f"SELECT * FROM ({self._query}) AS `_l` {kind} ({right._query}) "
                            f"AS `_r`{on}", columns)

    def join(self, right: "Table", join_predicate: Any = None) -> "Table":
        """An inner join (a cross join without a predicate; filter with where())."""
        return self._join("INNER JOIN", right, join_predicate)

    def left_outer_join(self, right: "Table", join_predicate: Any = None) -> "Table":
        return self._join("LEFT OUTER JOIN", right, join_predicate)

    def right_outer_join(self, right: "Table", join_predicate: Any) -> "Table":
        return self._join("RIGHT OUTER JOIN", right, join_predicate)

    def full_outer_join(self, right: "Table", join_predicate: Any) -> "Table":
        return self._join("FULL OUTER JOIN", right, join_predicate)

    # -- set operations --------------------------------------------------------------------------
    def _set_op(self, op: str, right: "Table") -> "Table":
        return self._derive(f"SELECT * FROM ({self._query}) {op} SELECT * FROM ({right._query})",
                            self._columns, self._types)

    def union_all(self, right: "Table") -> "Table":
        return self._set_op("UNION ALL", right)

    def union(self, right: "Table") -> "Table":
        return self._set_op("UNION", right)

    def intersect(self, right: "Table") -> "Table":
        return self._set_op("INTERSECT", right)

    def intersect_all(self, right: "Table") -> "Table":
        return self._set_op("INTERSECT ALL", right)

    def minus(self, right: "Table") -> "Table":
        return self._set_op("EXCEPT", right)

    def minus_all(self, right: "Table") -> "Table":
        return self._set_op("EXCEPT ALL", right)

    # -- sorting and limits ----------------------------------------------------------------------
    def order_by(self, *fields: Any) -> "Table":
        """``SELECT * FROM (<this>) ORDER BY <fields>`` (``col('a').desc`` for descending)."""
        order = expressions_sql(fields)
        t = self._derive(f"SELECT * {self._from()} ORDER BY {order}", self._columns, self._types)
        t._sort = (self._query, order)
        return t

    def _limited(self, offset: int | None, fetch: int | None) -> "Table":
        base, order = self._sort if self._sort is not None else (self._query, None)
        offset = self._offset if offset is None else offset
        fetch = self._fetch if fetch is None else fetch
        sql = f"SELECT * FROM ({base})" + (f" ORDER BY {order}" if order else "")
        if fetch is not None:
            sql += f" LIMIT {int(fetch)}"
        if offset:
            sql += f" OFFSET {int(offset)}"
        t = self._derive(sql, self._columns, self._types)
        t._sort, t._offset, t._fetch = (base, order), offset, fetch
        return t

    def offset(self, offset: int) -> "Table":
        """Skip the first ``offset`` rows (of the order of order_by())."""
        return self._limited(offset, None)

    def fetch(self, fetch: int) -> "Table":
        """Keep the first ``fetch`` rows (after offset())."""
        return self._limited(None, fetch)

    def limit(self, fetch: int, offset: int = 0) -> "Table":
        """Keep ``fetch`` rows from ``offset`` on."""
        return self._limited(offset, fetch)

    # -- columns -----------------------------------------------------------------------------------
    def add_columns(self, *fields: Any) -> "Table":
        """The columns of this table, then ``fields``."""
        sql, names = _named_select(fields, columns=self.get_column_names)
        cols = None if self._columns is None or names is None else self._columns + names
        return self._derive(f"SELECT *, {sql} {self._from()}", cols)

    def add_or_replace_columns(self, *fields: Any) -> "Table":
        """As add_columns, but a field of an existing column's name replaces that column."""
        old = self.get_column_names()
        replacing = {name: sql for sql, name in _select_items(fields, columns=lambda: old)
                     if name is not None}
        parts = [replacing.pop(n) if n in replacing else quote_identifier(n) for n in old]
        parts += list(replacing.values())
        return self._derive(f"SELECT {', '.join(parts)} {self._from()}", old + list(replacing))

    def rename_columns(self, *fields: Any) -> "Table":
        """Rename columns: ``rename_columns(col('a').alias('x'))``."""
        old = self.get_column_names()
        renames: dict[str, str] = {}
        for f in fields:
            e = as_expression(f)
            source = e.alias_of
            if e.kind != "alias" or source is None:
                raise ValueError(f"rename_columns takes col('old').alias('new'), not {e.to_sql()}")
            renames[source] = e.name or ""
        unknown = set(renames) - set(old)
        if unknown:
            raise ValueError(f"rename_columns: no column {sorted(unknown)} in {old}")
        new = [renames.get(n, n) for n in old]
        sql = ", ".join(quote_identifier(o) + (f" AS {quote_identifier(n)}" if n != o else "")
                        for o, n in zip(old, new))
        return self._derive(f"SELECT {sql} {self._from()}", new, self._types)

    def drop_columns(self, *fields: Any) -> "Table":
        """All columns but ``fields``."""
        old = self.get_column_names()
        drop = {as_expression(f).name for f in fields}
        unknown = drop - set(old)
        if unknown:
            raise ValueError(f"drop_columns: no column {sorted(n or '' for n in unknown)} in {old}")
        keep = [n for n in old if n not in drop]
        types = None if self._types is None else [t for n, t in zip(old, self._types)
                                                  if n not in drop]
        sql = ", ".join(quote_identifier(n) for n in keep)
        return self._derive(f"SELECT {sql} {self._from()}", keep, types)

    # -- row-based operations (UDFs) ---------------------------------------------------------------
    def _function_call(self, func: Any, kind: str, operation: str) -> tuple[Any, str, list[str]]:
        """The wrapper, call SQL and result column names of ``func``: a call of a Python
        function (aliased or not), or the function itself (called on a ROW of all columns)."""
        if not isinstance(func, Expression):
            if getattr(func, "kind", None) != kind:
                raise TypeError(f"{operation}() takes a Python {kind} function (made by "
                                f"{_MAKERS[kind]}) or a call of one, not {func!r}")
            row = ", ".join(quote_identifier(n) for n in self.get_column_names())
            names = func.alias_names
            func = func(call_sql(f"ROW({row})"))
            if names:
                func = func.alias(*names)
        wrapper = func.udf
        if wrapper is None or wrapper.kind != kind:
            raise TypeError(f"{operation}() takes a call of a Python {kind} function (made by "
                            f"{_MAKERS[kind]}), not {func.to_sql()}")
        names = wrapper.result_names()
        if func.aliases is not None:
            if len(func.aliases) != len(names):
                raise ValueError(f"{operation}(): {len(func.aliases)} aliases for the "
                                 f"{len(names)} result columns {names}")
            names, func = list(func.aliases), func.aliased
        return wrapper, func.to_sql(), names

    def map(self, func: Any) -> "Table":
        """A Python scalar function applied to each row; a ROW result becomes columns."""
        wrapper, call, names = self._function_call(func, "scalar", "map")
        return self._derive(_expanded(wrapper, call, names, self._from()), names)

    def flat_map(self, func: Any) -> "Table":
        """A Python table function applied to each row: its rows."""
        _, call, names = self._function_call(func, "table", "flat_map")
        columns = ", ".join(quote_identifier(n) for n in names)
        return self._derive(f"SELECT {columns} FROM ({self._query}) AS `_l`, LATERAL "
                            f"TABLE({call}) AS `_t`({columns})", names)

    def aggregate(self, func: Any) -> "AggregatedTable":
        """A Python aggregate function over all rows: ``aggregate(f).select(...)``."""
        return GroupedTable(self, []).aggregate(func)

    def join_lateral(self, table_function_call: Any, join_predicate: Any = None) -> "Table":
        """Each row joined with the rows a Python table function gives for it."""
        return self._lateral("INNER JOIN", table_function_call, join_predicate)

    def left_outer_join_lateral(self, table_function_call: Any,
                                join_predicate: Any = None) -> "Table":
        """As join_lateral, a row the function gives no rows for kept with nulls."""
        return self._lateral("LEFT JOIN", table_function_call, join_predicate)

    def _lateral(self, kind: str, func: Any, predicate: Any) -> "Table":
        _, call, names = self._function_call(func, "table", "join_lateral")
        columns = ", ".join(quote_identifier(n) for n in names)
        on = "TRUE" if predicate is None else as_expression(predicate).to_sql()
        cols = None if self._columns is None else self._columns + names
        return self._derive(f"SELECT * FROM ({self._query}) AS `_l` {kind} LATERAL "
                            f"TABLE({call}) AS `_t`({columns}) ON {on}", cols)

    def flat_aggregate(self, func: Any) -> "FlatAggregateTable":
        """A Python table aggregate function over all rows: ``flat_aggregate(f).select(...)``."""
        return GroupedTable(self, []).flat_aggregate(func)

    # -- running -----------------------------------------------------------------------------------
    def execute(self) -> TableResult:
        """Run the query; its rows in the TableResult (``collect()``, ``print()``)."""
        return self._t_env.execute_sql(self._query)

    def execute_insert(self, table_path_or_descriptor: Any, overwrite: bool = False
                       ) -> TableResult:
        """``INSERT INTO|OVERWRITE <table> <this query>``; the table is a path or a
        TableDescriptor (created as an anonymous temporary table first)."""
        return self._t_env.execute_sql(self.insert_sql(table_path_or_descriptor, overwrite))

    def insert_into(self, table_path_or_descriptor: Any, overwrite: bool = False
                    ) -> TablePipeline:
        """The INSERT of this query into a table (a path or a TableDescriptor), to run with
        ``execute()`` or to add to a StatementSet."""
        path = table_path_or_descriptor if isinstance(table_path_or_descriptor, str) else None
        return TablePipeline(self._t_env, self.insert_sql(table_path_or_descriptor, overwrite),
                             path)

    def insert_sql(self, table_path_or_descriptor: Any, overwrite: bool = False) -> str:
        """The INSERT statement of :meth:`execute_insert`."""
        path = table_path_or_descriptor
        if not isinstance(path, str):
            path = unnamed_view_name()
            self._t_env.create_temporary_table(path, table_path_or_descriptor)
        verb = "INSERT OVERWRITE" if overwrite else "INSERT INTO"
        return f"{verb} {quote_path(path)} {self._query}"

    def explain(self, *extra_details: Any) -> str:
        """Flink's plan of this query (``EXPLAIN``), as text."""
        details = ", ".join(getattr(d, "name", str(d)) for d in extra_details)
        result = self._t_env.execute_sql(f"EXPLAIN {details + ' ' if details else ''}"
                                         f"{self._query}")
        rows = result.rows()
        return str(rows[0][0]) if rows else ""

    def print_explain(self, *extra_details: Any) -> None:
        print(self.explain(*extra_details))

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame; a changelog (STREAMING) is applied first, as PyFlink
        does: ``-U``/``-D`` retract an earlier equal row, ``+I``/``+U`` add one."""
        executed = self.execute()
        result = executed.result
        if executed.is_live():  # a streaming query: its rows until its job ends
            import pandas as pd

            with executed.collect() as changes:
                got = list(changes)
            rows, kinds = [tuple(r) for r in got], [r.get_row_kind() for r in got]
            keep = materialized_indices(rows, kinds)
            return pd.DataFrame([rows[i] for i in keep], columns=list(result.columns))
        table = result.table
        if result.row_kinds is not None:
            table = table.take(materialized_indices(table.to_pylist(), result.row_kinds))
        df = table.to_pandas()
        df.columns = list(result.columns)
        return df


def materialized_indices(rows: Sequence[Any], kinds: Sequence[RowKind]) -> list[int]:
    """The positions of the rows left once the changelog ``kinds`` is applied."""
    alive: dict[Any, list[int]] = {}
    for i, (r, kind) in enumerate(zip(rows, kinds)):
        key = repr(r)
        if kind in (RowKind.INSERT, RowKind.UPDATE_AFTER):
            alive.setdefault(key, []).append(i)
        elif alive.get(key):
            alive[key].pop(0)
    return sorted(i for positions in alive.values() for i in positions)


class GroupedTable:
    """A table grouped by keys: ``group_by(...).select(...)``."""

    def __init__(self, table: Table, keys: list[Expression]) -> None:
        self.table = table
        self.keys = keys

    def select(self, *fields: Any) -> Table:
        """``SELECT <fields> FROM (<table>) GROUP BY <keys>``."""
        columns = self.table.get_column_names
        sql, names = _named_select(fields, aggregating=True, columns=columns)
        query = f"SELECT {sql} FROM ({self.table.query_sql})"
        if self.keys:
            query += f" GROUP BY {expressions_sql(self.keys, RenderContext(columns=columns))}"
        return Table(query, self.table._t_env, names)

    def aggregate(self, func: Any) -> "AggregatedTable":
        """A Python aggregate function per group: ``aggregate(f).select(...)``."""
        wrapper, call, names = self.table._function_call(func, "aggregate", "aggregate")
        keys = [k.name for k in self.keys]
        if None in keys:
            raise ValueError("group_by(...).aggregate() groups by columns: col('a'), ...")
        key_sql = ", ".join(quote_identifier(k) for k in keys if k is not None)
        source = f"FROM ({self.table.query_sql})" + (f" GROUP BY {key_sql}" if keys else "")
        query = _expanded(wrapper, call, names, source, key_sql)
        return AggregatedTable(Table(query, self.table._t_env,
                                     [k for k in keys if k is not None] + names))

    def flat_aggregate(self, func: Any) -> "FlatAggregateTable":
        """A Python table aggregate function (``udtaf``) per group: the group keys and the
        rows the function emits for the group, ``flat_aggregate(f).select(...)``. The
        function runs once per group over the group's rows, as a Spark grouped-aggregate
        pandas UDF whose value (the rows) is unnested; in STREAMING mode over an unbounded
        source per key and micro-batch on keyed state, its changes as Flink's (``-D`` of the
        rows emitted before, ``+I`` of the new ones)."""
        t_env = self.table._t_env
        wrapper, call, names = self.table._function_call(func, "table_aggregate",
                                                         "flat_aggregate")
        keys = [k.name for k in self.keys]
        if None in keys:
            raise ValueError("group_by(...).flat_aggregate() groups by columns: col('a'), ...")
        key_sql = ", ".join(quote_identifier(k) for k in keys if k is not None)
        lead = f"{key_sql}, " if key_sql else ""
        result = wrapper.result_data_types()[0]
        fields = result.field_names() if isinstance(result, RowType) else [None]
        items = ["`_u`.`_r`" + (f".{quote_identifier(f)}" if f is not None else "")
                 + f" AS {quote_identifier(n)}" for f, n in zip(fields, names)]
        group = f" GROUP BY {key_sql}" if key_sql else ""
        query = (f"SELECT {lead}{', '.join(items)} FROM (SELECT {lead}{call} AS `_rows` FROM "
                 f"({self.table.query_sql}){group}) AS `_g` CROSS JOIN UNNEST(`_rows`) AS "
                 f"`_u`(`_r`)")
        return FlatAggregateTable(Table(query, t_env, [k for k in keys if k is not None]
                                        + names))


class FlatAggregateTable:
    """The result of ``flat_aggregate(f)``: the group keys and the function's columns."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def select(self, *fields: Any) -> Table:
        return self.table.select(*fields)


class AggregatedTable:
    """The result of ``aggregate(f)``: the group keys and the function's columns."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def select(self, *fields: Any) -> Table:
        return self.table.select(*fields)


def _expanded(wrapper: Any, call: str, names: list[str], source: str, keys: str = "") -> str:
    """``SELECT [keys,] <call> AS <name> <source>``; a ROW result expanded into columns."""
    lead = f"{keys}, " if keys else ""
    types = wrapper.result_data_types()
    if len(types) == 1 and isinstance(types[0], RowType):
        fields = types[0].field_names()
        expanded = ", ".join(f"`_r`.{quote_identifier(f)} AS {quote_identifier(n)}"
                             for f, n in zip(fields, names))
        outer = f"{keys}, " if keys else ""
        return f"SELECT {outer}{expanded} FROM (SELECT {lead}{call} AS `_r` {source})"
    return f"SELECT {lead}{call} AS {quote_identifier(names[0])} {source}"


_MAKERS = {"scalar": "udf()", "table": "udtf()", "aggregate": "udaf()",
           "table_aggregate": "udtaf()"}


#: the name of a group window's input in the query ``window(w).group_by(...).select(...)``
#: renders (a window TVF over it); Flink plans Python aggregate functions in it as a group
#: window aggregation, emitted once per window, not as a window TVF's group aggregation
WINDOW_INPUT = "_window_input"


class GroupWindowedTable:
    """A table with a group window: ``window(w).group_by(col('w'), ...)``."""

    def __init__(self, table: Table, window: GroupWindow) -> None:
        self.table = table
        self.group_window = window

    def group_by(self, *fields: Any) -> "WindowGroupedTable":
        return WindowGroupedTable(self.table, self.group_window,
                                  [as_expression(f) for f in fields])


class WindowGroupedTable:
    """A table grouped by a group window and keys; select renders a window TVF aggregation."""

    def __init__(self, table: Table, window: GroupWindow, keys: list[Expression]) -> None:
        self.table = table
        self.group_window = window
        self.keys = keys

    def select(self, *fields: Any) -> Table:
        """``WITH `_window_input` AS (<table>) SELECT <fields> FROM TABLE(<TVF>)
        GROUP BY <keys>, window_start, window_end``."""
        alias = self.group_window.alias_name
        if alias is None:
            raise ValueError("the group window needs an alias: .alias('w')")
        if not any(k.name == alias for k in self.keys):
            raise ValueError(f"a window aggregation groups by its window: "
                             f"group_by(col({alias!r}), ...)")
        ctx = RenderContext(window_alias=alias)
        sql, names = _named_select(fields, ctx, aggregating=True)
        keys = [k.to_sql(ctx) for k in self.keys if k.name != alias]
        source = quote_identifier(WINDOW_INPUT)
        query = (f"WITH {source} AS ({self.table.query_sql}) SELECT {sql} "
                 f"FROM TABLE({self.group_window.tvf_sql(source, keys)}) "
                 f"GROUP BY {', '.join([*keys, 'window_start', 'window_end'])}")
        return Table(query, self.table._t_env, names)

    def aggregate(self, func: Any) -> Any:
        raise NotImplementedError(f"aggregate() {_UDF_ITEM}")


class OverWindowedTable:
    """A table with over windows: ``over_window(w).select(col('b').sum.over(col('w')))``."""

    def __init__(self, table: Table, windows: list[OverWindow]) -> None:
        self.table = table
        self.over_windows = windows

    def select(self, *fields: Any) -> Table:
        ctx = RenderContext(over_windows={w.alias_name or "": w.over_sql()
                                          for w in self.over_windows})
        sql, names = _named_select(fields, ctx)
        return Table(f"SELECT {sql} FROM ({self.table.query_sql})", self.table._t_env, names)
