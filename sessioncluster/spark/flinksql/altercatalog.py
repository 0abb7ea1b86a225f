"""``ALTER TABLE``/``VIEW``/``FUNCTION`` applied to the session's catalog, with Flink 2.3's answers.

Flink alters permanent objects only (a temporary one is "doesn't exist or is a temporary
table"). A changed table is a new :class:`CatalogTable` in the catalog's place: a job planned
before the ALTER keeps the table it was planned with, as Flink's running job keeps its plan.
The Spark view of a changed object is dropped; a query that reads it next makes it anew.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import sqlglot
from sqlglot import exp

from ...api.table.typeparser import parse_type
from ...api.table.types import DataType, LocalZonedTimestampType, TimestampType
from .alterstatements import AlterFunction, AlterTable, AlterView, PlacedColumn, SchemaChange
from .catalog import Catalog
from .dialect import Flink
from .exprcheck import refused_operator
from .flinktypes import Context, infer
from .functions import CatalogFunction, FunctionCatalog
from .model import DEFAULT_CATALOG, DEFAULT_DATABASE, CatalogTable, FlinkSqlError
from .showcreate import quoted
from .statements import CreateFunction, CreateView

_FAILED = "Failed to execute ALTER TABLE statement.\n"


def _path(name: str) -> str:
    return f"{DEFAULT_CATALOG}.{DEFAULT_DATABASE}.{name}"


def _failed(message: str) -> FlinkSqlError:
    return FlinkSqlError(_FAILED + message)


def alter_table(catalog: Catalog, drop_view: Callable[[str], None], statement: AlterTable
                ) -> None:
    """Apply ``statement`` to ``catalog``; ``drop_view`` drops a Spark view by name."""
    key = statement.name.lower()
    if key in catalog.views:
        raise FlinkSqlError("ALTER TABLE for a view is not allowed")
    table = catalog.tables.get(key) if key not in catalog.temporary_tables else None
    if table is None:
        if statement.if_exists:
            return
        raise FlinkSqlError(f"Table `{DEFAULT_CATALOG}`.`{DEFAULT_DATABASE}`.`{statement.name}` "
                            "doesn't exist or is a temporary table.")
    if statement.action == "RENAME":
        assert statement.new_name is not None
        _taken(catalog, "TABLE", statement.name, statement.new_name)
        del catalog.tables[key]
        catalog.tables[statement.new_name.lower()] = _renamed(table, statement.new_name)
    else:
        catalog.tables[key] = altered(table, statement)
    drop_view(catalog.hidden_name("table", key))


def _renamed(table: CatalogTable, name: str) -> CatalogTable:
    renamed = copy.deepcopy(table)
    renamed.name = name
    return renamed


def _taken(catalog: Catalog, kind: str, name: str, new_name: str) -> None:
    """Flink's refusal to rename onto a permanent table or view of that name."""
    new_key = new_name.lower()
    if new_key in catalog.tables or new_key in catalog.views:
        raise FlinkSqlError(
            f"Could not execute ALTER {kind} {_path(name)} RENAME TO {_path(new_name)}\n"
            f"Caused by: Table (or view) {DEFAULT_DATABASE}.{new_name} already exists in "
            f"Catalog {DEFAULT_CATALOG}.")


def altered(table: CatalogTable, statement: AlterTable) -> CatalogTable:
    """A copy of ``table`` with the change of ``statement`` (not a RENAME TO)."""
    new = copy.deepcopy(table)
    action = statement.action
    if action == "SET":
        new.options.update(statement.options)
    elif action == "RESET":
        if not statement.keys:
            raise FlinkSqlError("ALTER TABLE RESET does not support empty key")
        if "connector" in statement.keys:
            raise FlinkSqlError("ALTER TABLE RESET does not support changing 'connector'")
        for k in statement.keys:
            new.options.pop(k, None)
    elif action == "DROP PRIMARY KEY":
        if not new.primary_key:
            raise _failed("The current table does not define any primary key.")
        new.primary_key, new.primary_key_name = [], None
    elif action == "DROP WATERMARK":
        if new.watermark is None:
            raise _failed("The current table does not define any watermark strategy.")
        new.watermark = None
    elif action == "DROP COLUMNS":
        _drop_columns(new, statement.keys)
    elif action == "RENAME COLUMN":
        assert statement.new_name is not None
        _rename_column(new, statement.keys[0], statement.new_name)
    else:
        assert statement.schema is not None
        _change_schema(new, statement.schema)
    return new


def _names(table: CatalogTable) -> list[str]:
    return [c.name.lower() for c in table.columns]


def _referenced(expression: str) -> set[str]:
    """The (lower-case) column names an expression reads."""
    tree = sqlglot.parse_one(expression, read=Flink)
    return {c.name.lower() for c in tree.find_all(exp.Column)}


def _check_unreferenced(table: CatalogTable, names: list[str]) -> None:
    """Flink's refusal to drop or rename a column a computed column or the watermark reads."""
    for name in names:
        readers = sorted(f"`{c.name}`" for c in table.columns if c.expression is not None
                         and c.name.lower() not in names
                         and name.lower() in _referenced(c.expression))
        if readers:
            raise _failed(f"The column `{name}` is referenced by computed column "
                          f"{', '.join(readers)}.")
        wm = table.watermark
        if wm is not None and name.lower() in {wm.rowtime.lower()} | _referenced(wm.expression):
            raise _failed(f"The column `{name}` is referenced by watermark expression.")


def _drop_columns(table: CatalogTable, names: list[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name.lower() in seen:
            raise _failed(f"Duplicate column `{name}`.")
        seen.add(name.lower())
        if name.lower() not in _names(table):
            raise _failed(f"The column `{name}` does not exist in the base table.")
    _check_unreferenced(table, [n.lower() for n in names])
    for name in names:
        if name.lower() in {k.lower() for k in table.primary_key}:
            raise _failed(f"The column `{name}` is used as the primary key.")
    table.columns = [c for c in table.columns if c.name.lower() not in seen]


def _rename_column(table: CatalogTable, old: str, new: str) -> None:
    if old.lower() not in _names(table):
        raise _failed(f"The column `{old}` does not exist in the base table.")
    _check_unreferenced(table, [old.lower()])
    if new.lower() in _names(table):
        raise _failed(f"The column `{new}` already existed in table schema.")
    for column in table.columns:
        if column.name.lower() == old.lower():
            column.name = new
    if old.lower() in {k.lower() for k in table.primary_key}:
        # the constraint keeps the name it was made with (PK_<the old columns>)
        table.primary_key_name = table.primary_key_name or f"PK_{'_'.join(table.primary_key)}"
        table.primary_key = [new if k.lower() == old.lower() else k for k in table.primary_key]


def _change_schema(table: CatalogTable, change: SchemaChange) -> None:
    """``ADD``/``MODIFY`` of columns, then the watermark and the primary key."""
    names = [p.column.name.lower() for p in change.columns]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise _failed(f"Encounter duplicate column `{change.columns[i].column.name}`.")
    for placed in change.columns:
        _place(table, placed, change.modify)
    types = _column_types(table)
    if change.watermark is not None:
        _set_watermark(table, change, types)
    elif table.watermark is not None:
        _check_rowtime(table.watermark.rowtime, types)
    if change.primary_key is not None:
        _set_primary_key(table, change)


def _set_primary_key(table: CatalogTable, change: SchemaChange) -> None:
    assert change.primary_key is not None
    if table.primary_key and not change.modify:
        listed = ", ".join(f"`{k}`" for k in table.primary_key)
        raise _failed(f"The current table has already defined the primary key constraint "
                      f"[{listed}]. You might want to drop it before adding a new one.")
    if change.modify and not table.primary_key:
        raise _failed("The current table does not define any primary key constraint. You "
                      "might want to add a new one.")
    name = change.constraint or f"PK_{'_'.join(change.primary_key)}"
    by_name = {c.name.lower(): c for c in table.columns}
    for key in change.primary_key:
        column = by_name.get(key.lower())
        if column is None:
            raise _failed(f"Invalid primary key '{name}'. Column '{key}' does not exist.")
        if not column.is_physical:
            raise _failed(f"Invalid primary key '{name}'. Column '{key}' is not a physical "
                          "column.")
    table.primary_key, table.primary_key_name = change.primary_key, change.constraint
    for key in change.primary_key:  # Flink keeps a key column NOT NULL, also once dropped
        column = by_name[key.lower()]
        if column.type is not None and not column.type.upper().endswith("NOT NULL"):
            column.type += " NOT NULL"


def _place(table: CatalogTable, placed: PlacedColumn, modify: bool) -> None:
    column = placed.column
    at = next((i for i, c in enumerate(table.columns)
               if c.name.lower() == column.name.lower()), None)
    if modify and at is None:
        raise _failed(f"Column `{column.name}` does not exist in the table.")
    if not modify and at is not None:
        raise _failed(f"Column `{column.name}` already exists in the table.")
    if column.expression is not None:
        unknown = _referenced(column.expression) - set(_names(table))
        if unknown:
            raise _failed(f"Invalid expression for computed column '{column.name}'.")
    columns = list(table.columns)
    if at is not None:
        del columns[at]
    if placed.first:
        at = 0
    elif placed.after is not None:
        after = next((i for i, c in enumerate(columns)
                      if c.name.lower() == placed.after.lower()), None)
        if after is None:
            raise _failed(f"Referenced column `{placed.after}` by 'AFTER' does not exist in "
                          "the table.")
        at = after + 1
    elif at is None:
        at = len(columns)
    columns.insert(at, column)
    table.columns = columns


def _set_watermark(table: CatalogTable, change: SchemaChange,
                   types: dict[str, DataType | None]) -> None:
    assert change.watermark is not None
    if change.modify and table.watermark is None:
        raise _failed("The current table does not define any watermark. You might want to add "
                      "a new one.")
    if not change.modify and table.watermark is not None:
        raise _failed(f"The current table has already defined the watermark strategy "
                      f"`{table.watermark.rowtime}` AS {quoted(table.watermark.expression)}. "
                      "You might want to drop it before adding a new one.")
    if change.watermark.rowtime.lower() not in types:
        raise _failed(f"Invalid column name '{change.watermark.rowtime}' for rowtime attribute "
                      f"in watermark declaration. Available columns are: "
                      f"[{', '.join(c.name for c in table.columns)}]")
    _check_rowtime(change.watermark.rowtime, types)
    table.watermark = change.watermark


def _check_rowtime(rowtime: str, types: dict[str, DataType | None]) -> None:
    """Flink's refusal of a watermark's time column that is no TIMESTAMP(p) or
    TIMESTAMP_LTZ(p) of a precision up to 3 (as far as its type is known here)."""
    kind = types.get(rowtime.lower())
    if kind is not None and not (isinstance(kind, (TimestampType, LocalZonedTimestampType))
                                 and kind.precision <= 3):
        raise _failed("Invalid data type of time field for watermark definition. The field "
                      "must be of type TIMESTAMP(p) or TIMESTAMP_LTZ(p), the supported "
                      f"precision 'p' is from 0 to 3, but the time field type is {kind}")


def _column_types(table: CatalogTable) -> dict[str, DataType | None]:
    """The Flink types of ``table``'s columns by lower-case name (None: not known here): a
    computed column's its expression's over the physical columns; Flink's refusal of one whose
    expression's operators do not take the columns' types (an ALTER that changed them)."""
    physical: dict[str, DataType | None] = {}
    for c in table.columns:
        if c.is_physical:
            try:
                physical[c.name.lower()] = parse_type(c.type) if c.type else None
            except (ValueError, TypeError):
                physical[c.name.lower()] = None
    context = Context(physical)
    types = dict(physical)
    for c in table.columns:
        if c.expression is not None:
            tree = sqlglot.parse_one(c.expression, read=Flink)
            if refused_operator(tree, context) is not None:
                raise _failed(f"Invalid expression for computed column '{c.name}'.")
            types[c.name.lower()] = infer(tree, context)
    return {c.name.lower(): types[c.name.lower()] for c in table.columns}


def alter_view(catalog: Catalog, drop_view: Callable[[str], None], statement: AlterView,
               check: Callable[[CreateView], Any]) -> None:
    """Apply ``statement`` to ``catalog``; ``check`` plans a view (one whose query does not
    plan is refused)."""
    key = statement.name.lower()
    if key in catalog.tables:
        raise FlinkSqlError("ALTER VIEW for a table is not allowed")
    if key not in catalog.views or key in catalog.temporary_views:
        raise FlinkSqlError(f"View `{DEFAULT_CATALOG}`.`{DEFAULT_DATABASE}`.`{statement.name}` "
                            "doesn't exist or is a temporary view.")
    name, text = catalog.views[key]
    if statement.new_name is not None:
        _taken(catalog, "VIEW", statement.name, statement.new_name)
        del catalog.views[key]
        catalog.views[statement.new_name.lower()] = (statement.new_name,
                                                     _view_text(text, statement.new_name))
    else:
        assert statement.query is not None
        check(CreateView(name, statement.query))
        text = f"CREATE VIEW `{name}` AS {statement.query_text}"
        catalog.views[key] = (name, text)
    drop_view(catalog.hidden_name("view", key))


def _view_text(text: str, new_name: str) -> str:
    """A ``CREATE VIEW`` text with another name."""
    tree = sqlglot.parse_one(text, read=Flink)
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    target.set("this", exp.to_identifier(new_name, quoted=True))
    target.set("db", None)
    target.set("catalog", None)
    return tree.sql(dialect=Flink)


def alter_function(functions: FunctionCatalog, statement: AlterFunction,
                   options: dict[str, str]) -> None:
    """``ALTER FUNCTION``: the catalog function made again from its new class name (one whose
    module did not import too: then imported at its first use, as Flink 2.3 does,
    /work/briefs/data/deps2/probe_alter2.out); a temporary one is not found (Flink 2.3: "does
    not exist in Catalog")."""
    if statement.temporary:
        kind = "system" if statement.system else "catalog"
        raise FlinkSqlError(f"Alter temporary {kind} function is not supported")
    key = statement.name.lower()
    function: CatalogFunction | CreateFunction | None = functions.functions.get(key)
    if function is None and key in functions.pending:
        function = functions.pending[key].statement
    if function is None or function.system or function.temporary:
        if statement.if_exists:
            return
        raise FlinkSqlError(f"Function {DEFAULT_DATABASE}.{statement.name} does not exist in "
                            f"Catalog {DEFAULT_CATALOG}.")
    functions.create(CreateFunction(function.name, statement.class_name, statement.language),
                     b"", options)
