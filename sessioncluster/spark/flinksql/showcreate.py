"""``SHOW CREATE TABLE`` and ``SHOW CREATE VIEW``: a catalog object's DDL in Flink's layout.

Flink prints a table's columns with their serializable types (``VARCHAR(2147483647)`` for
``STRING``), a primary key's columns ``NOT NULL``, its constraint as ``PK_<columns>``, and the
``WITH`` options sorted by key. A view's query is printed as the statement wrote it, with its
identifiers quoted; Flink prints Calcite's expansion of it (every column qualified).
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from ...api.table.typeparser import parse_type
from ...api.table.types import (
    ArrayType,
    DataType,
    LocalZonedTimestampType,
    MapType,
    RowType,
    VarBinaryType,
    VarCharType,
)
from .dialect import Flink
from .model import DEFAULT_CATALOG, DEFAULT_DATABASE, CatalogTable
from .timeattributes import PROCTIME, marked, table_attributes


def serializable_type(t: DataType) -> str:
    """Flink's ``LogicalType.asSerializableString()`` of ``t``."""
    not_null = "" if t.is_nullable else " NOT NULL"
    if isinstance(t, (VarCharType, VarBinaryType)):
        return f"{t.sql_name}({t.length}){not_null}"
    if isinstance(t, LocalZonedTimestampType):
        return f"TIMESTAMP({t.precision}) WITH LOCAL TIME ZONE{not_null}"
    if isinstance(t, ArrayType):
        return f"ARRAY<{serializable_type(t.element_type)}>{not_null}"
    if isinstance(t, MapType):
        return (f"MAP<{serializable_type(t.key_type)}, "
                f"{serializable_type(t.value_type)}>{not_null}")
    if isinstance(t, RowType):
        fields = ", ".join(f"`{f.name}` {serializable_type(f.data_type)}" for f in t.fields)
        return f"ROW<{fields}>{not_null}"
    return str(t)


def object_path(name: str) -> str:
    """A catalog object's full name as Flink prints it: `catalog`.`database`.`name`."""
    return f"`{DEFAULT_CATALOG}`.`{DEFAULT_DATABASE}`.`{name}`"


def quoted(expression: str) -> str:
    """A Flink SQL expression with its identifiers quoted, as Flink prints it."""
    return sqlglot.parse_one(expression, read=Flink).sql(dialect=Flink, identify=True)


def show_create_table(table: CatalogTable) -> str:
    """``CREATE [TEMPORARY] TABLE ...`` of ``table``."""
    key = {c.lower() for c in table.primary_key}
    lines = []
    for column in table.columns:
        if column.expression is not None:
            line = f"  `{column.name}` AS {quoted(column.expression)}"
        else:
            assert column.type is not None
            data_type = parse_type(column.type)
            if column.name.lower() in key:
                data_type = data_type.not_null()
            line = f"  `{column.name}` {serializable_type(data_type)}"
        if column.comment:
            line += f" COMMENT '{_escaped(column.comment)}'"
        lines.append(line)
    if table.watermark is not None:
        lines.append(f"  WATERMARK FOR `{table.watermark.rowtime}` AS "
                     f"{quoted(table.watermark.expression)}")
    if table.primary_key:
        columns = ", ".join(f"`{c}`" for c in table.primary_key)
        name = table.primary_key_name or f"PK_{'_'.join(table.primary_key)}"
        lines.append(f"  CONSTRAINT `{name}` PRIMARY KEY ({columns}) NOT ENFORCED")
    text = f"CREATE {_temporary(table.temporary)}TABLE {object_path(table.name)} (\n"
    text += ",\n".join(lines) + "\n)\n"
    if table.comment:
        text += f"COMMENT '{_escaped(table.comment)}'\n"
    if table.partition_keys:
        text += f"PARTITIONED BY ({', '.join(f'`{k}`' for k in table.partition_keys)})\n"
    options = ",\n".join(f"  '{_escaped(k)}' = '{_escaped(v)}'"
                         for k, v in sorted(table.options.items()))
    return text + f"WITH (\n{options}\n)\n"


def describe_table(table: CatalogTable, computed: dict[str, str],
                   streaming: bool) -> list[tuple[object, ...]]:
    """DESCRIBE's rows of a catalog table (name, type, null, key, extras, watermark), as Flink
    2.3 prints them: a time attribute's type marked (a rowtime's in ``streaming`` only), a
    computed column's and the watermark's expression quoted; ``computed``: the computed columns' types."""
    key = {c.lower() for c in table.primary_key}
    rows: list[tuple[object, ...]] = []
    for c, (_, kind) in zip(table.columns, table_attributes(table)):
        watermark = (quoted(table.watermark.expression) if table.watermark is not None
                     and table.watermark.rowtime == c.name else None)
        type_text = "TIMESTAMP_LTZ(3)" if kind == PROCTIME else c.type or computed.get(c.name, "?")
        not_null = type_text.upper().endswith(" NOT NULL")  # in the ``null`` column
        type_text = type_text[: -len(" NOT NULL")] if not_null else type_text
        primary = f"PRI({', '.join(table.primary_key)})" if c.name.lower() in key else None
        rows.append((c.name, marked([type_text], [(c.name, kind)], streaming)[0],
                     c.name.lower() not in key and kind != PROCTIME and not not_null, primary,
                     f"AS {quoted(c.expression)}" if c.expression else None, watermark))
    return rows


def show_create_view(name: str, temporary: bool, columns: list[str], query: exp.Expr) -> str:
    """``CREATE [TEMPORARY] VIEW ...`` of the view ``name`` with ``columns``."""
    listed = ",\n".join(f"  `{c}`" for c in columns)
    body = query.sql(dialect=Flink, identify=True)
    return (f"CREATE {_temporary(temporary)}VIEW {object_path(name)} (\n{listed}\n)\n"
            f"AS {body}\n")


def _temporary(temporary: bool) -> str:
    return "TEMPORARY " if temporary else ""


def _escaped(text: str) -> str:
    return text.replace("'", "''")
