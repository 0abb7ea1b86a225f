"""``CREATE TABLE ... AS SELECT`` (CTAS) and ``[CREATE OR] REPLACE TABLE ... AS SELECT`` (RTAS).

Flink 2.3 runs a CTAS as the table's creation followed by an ``INSERT INTO`` job: the table's
schema is the query's columns (their Flink types, NOT NULL kept), merged with what the statement's
head declares (recorded with PyFlink 2.3, ``/work/briefs/data/ctas``):

- a column list of names only orders the query's columns; it must name each of them once;
- declared columns (typed or computed) that the query has not come first, in their order, then
  the query's columns in its order, a declared one with its declared type;
- a ``PRIMARY KEY``, a ``WATERMARK``, ``PARTITIONED BY``, ``COMMENT`` and ``WITH`` as in a
  ``CREATE TABLE``; a primary key's columns must be NOT NULL already.

``CREATE TABLE IF NOT EXISTS`` over an existing table still runs its INSERT, into the existing
table. ``CREATE OR REPLACE`` replaces the table or creates it; ``REPLACE`` needs it to exist.
The table is made when the statement is planned: a failing job leaves it in the catalog, as
Flink does with ``table.rtas-ctas.atomicity-enabled`` false (its default; the ``filesystem``
connector has no staged, atomic sink, so Flink keeps the table there either way).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable

from sqlglot import exp

from .model import CatalogTable, Column, FlinkSqlError

#: the configuration key a JobManager sets on a statement of a job it recovers (HA): a CTAS's
#: table is then the one the catalog log made again, its INSERT the job's work
RECOVERED = "sessioncluster.recovered-statement"
#: RTAS: ``CREATE OR REPLACE`` makes the table if it is missing, ``REPLACE`` refuses
CREATE_OR_REPLACE, REPLACE = "CREATE OR REPLACE", "REPLACE"


@dataclass(slots=True)
class CreateTableAs:
    """``CREATE TABLE [IF NOT EXISTS] t [(head)] [...] WITH (...) AS query``, or RTAS."""

    #: what the head declares: its columns (typed or computed), keys, options
    table: CatalogTable
    query: exp.Expr
    #: a column list of names only: the order of the query's columns
    order: list[str] = field(default_factory=list)
    if_not_exists: bool = False
    #: "" (CTAS), :data:`CREATE_OR_REPLACE` or :data:`REPLACE`
    replace: str = ""


def create_table_as(tree: exp.Create,
                    declared: Callable[[exp.Create], CatalogTable]) -> CreateTableAs:
    """The CTAS or RTAS ``tree`` is; ``declared`` reads a ``CREATE TABLE``'s head (the
    statements module's reader, its key columns not checked here)."""
    head = tree.copy()
    head.set("expression", None)
    target = head.this
    order: list[str] = []
    if isinstance(target, exp.Schema):
        order = [e.name for e in target.expressions if isinstance(e, exp.Identifier)]
        items = [e for e in target.expressions if not isinstance(e, exp.Identifier)]
        if order and items:
            raise FlinkSqlError("SQL parse failed. A CREATE TABLE AS column list has names only "
                                "or declared columns, not both.")
        target.set("expressions", items)
    else:
        head.set("this", exp.Schema(this=target, expressions=[]))
    table = declared(head)
    if table.temporary:
        raise FlinkSqlError("CREATE TABLE AS SELECT syntax does not support to create "
                            "temporary table yet.")
    replace = CREATE_OR_REPLACE if tree.args.get("replace") else ""
    if replace and tree.args.get("exists"):
        raise FlinkSqlError("CREATE OR REPLACE TABLE AS SELECT syntax does not support IF NOT "
                            "EXISTS statements yet.")
    return CreateTableAs(table, tree.expression, order, bool(tree.args.get("exists")), replace)


def replace_only(statement: object) -> CreateTableAs:
    """``REPLACE TABLE ... AS query`` read as ``CREATE OR REPLACE``: the table must exist."""
    if not isinstance(statement, CreateTableAs) or not statement.replace:
        raise FlinkSqlError("SQL parse failed. REPLACE TABLE needs AS select_statement.")
    return dataclasses.replace(statement, replace=REPLACE)


def derived_table(statement: CreateTableAs, columns: list[tuple[str, str]]) -> CatalogTable:
    """The table a CTAS makes from the query's ``columns`` (names, Flink type texts)."""
    head = statement.table
    if statement.order:
        columns = _ordered(columns, statement.order)
    names = {name for name, _ in columns}
    declared = {c.name: c for c in head.columns}
    out = [c for c in head.columns if c.name not in names]
    for name, type_text in columns:
        mine = declared.get(name)
        if mine is not None and mine.expression is not None:
            raise FlinkSqlError(f"A column named '{name}' already exists in the source schema.")
        out.append(mine if mine is not None else Column(name, type_text))
    table = dataclasses.replace(head, columns=out, options=dict(head.options),
                                primary_key=list(head.primary_key),
                                partition_keys=list(head.partition_keys))
    _check_keys(table)
    return table


def _ordered(columns: list[tuple[str, str]], order: list[str]) -> list[tuple[str, str]]:
    if len(order) != len(columns):
        raise FlinkSqlError("The number of columns in the column list must match the number "
                            "of columns in the source schema.")
    by_name = dict(columns)
    for name in order:
        if name not in by_name:
            raise FlinkSqlError(f"Column '{name}' not found in the source schema.")
    return [(name, by_name[name]) for name in order]


def _check_keys(table: CatalogTable) -> None:
    by_name = {c.name: c for c in table.columns}
    for key in table.primary_key:
        column = by_name.get(key)
        if column is None:
            raise FlinkSqlError(f"Primary key column '{key}' is not defined in the schema")
        if column.type is not None and not column.type.upper().endswith("NOT NULL"):
            raise FlinkSqlError(f"Invalid primary key 'PK_{'_'.join(table.primary_key)}'. "
                                f"Column '{key}' is nullable.")
    for key in ([table.watermark.rowtime] if table.watermark else []) + table.partition_keys:
        if key not in by_name:
            raise FlinkSqlError(f"Unknown column '{key}' in table '{table.name}'")
