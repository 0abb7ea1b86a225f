"""PyFlink's ``Schema``, ``TableDescriptor`` and ``FormatDescriptor``: a table declared in Python,
rendered as Flink SQL's ``CREATE [TEMPORARY] TABLE`` text.

>>> from sessioncluster.api.table.types import DataTypes
>>> d = (TableDescriptor.for_connector('datagen')
...      .schema(Schema.new_builder().column('id', DataTypes.BIGINT()).build())
...      .option('number-of-rows', '3').build())
>>> print(d.create_table_sql('t', temporary=True))
CREATE TEMPORARY TABLE `t` (
  `id` BIGINT
) WITH (
  'connector' = 'datagen',
  'number-of-rows' = '3'
)
"""

from __future__ import annotations

from typing import Any

from .expression import Expression
from .sqltext import quote_identifier, quote_path, quote_string
from .types import DataType, RowType


def _expression_sql(expr: Any) -> str:
    return expr.to_sql() if isinstance(expr, Expression) else str(expr)


def _cast_item(name: str, type_text: str) -> str:
    return f"CAST({quote_identifier(name)} AS {type_text}) AS {quote_identifier(name)}"


class Schema:
    """The columns, watermark and primary key of a table (``Schema.new_builder()...build()``)."""

    class Builder:
        """Builds a :class:`Schema` column by column."""

        def __init__(self) -> None:
            self._columns: list[str] = []
            self._watermark: str | None = None
            self._primary_key: str | None = None
            self._key: list[str] = []
            self._physical: list[tuple[str, str]] = []
            self._computed: list[str] = []
            self._metadata: list[tuple[str, str, str]] = []
            #: each column as a select item over the data's fields, in declared order
            self._select: list[str] = []

        def from_schema(self, unresolved_schema: "Schema") -> "Schema.Builder":
            self._columns += unresolved_schema.columns
            self._watermark = unresolved_schema.watermark or self._watermark
            self._primary_key = unresolved_schema.primary_key or self._primary_key
            self._key = unresolved_schema.key_columns or self._key
            self._physical += unresolved_schema.physical_columns()
            self._computed += unresolved_schema.computed_columns()
            self._metadata += unresolved_schema.metadata_columns()
            self._select += unresolved_schema.select_items()
            return self

        def from_row_data_type(self, data_type: DataType) -> "Schema.Builder":
            if not isinstance(data_type, RowType):
                raise TypeError(f"from_row_data_type takes a ROW type, not {data_type}")
            return self.from_fields(data_type.field_names(), data_type.field_types())

        def from_fields(self, field_names: list[str], field_data_types: list[DataType]
                        ) -> "Schema.Builder":
            for name, data_type in zip(field_names, field_data_types):
                self.column(name, data_type)
            return self

        def column(self, column_name: str, data_type: DataType | str) -> "Schema.Builder":
            """A physical column."""
            self._columns.append(f"{quote_identifier(column_name)} {data_type}")
            self._physical.append((column_name, str(data_type)))
            self._select.append(_cast_item(column_name, str(data_type)))
            return self

        def column_by_expression(self, column_name: str, expr: Any) -> "Schema.Builder":
            """A computed column (``ts AS TO_TIMESTAMP(...)``, ``pt AS PROCTIME()``)."""
            self._columns.append(f"{quote_identifier(column_name)} AS {_expression_sql(expr)}")
            self._computed.append(f"{_expression_sql(expr)} AS {quote_identifier(column_name)}")
            self._select.append(self._computed[-1])
            return self

        def column_by_metadata(self, column_name: str, data_type: DataType | str,
                               metadata_key: str | None = None,
                               is_virtual: bool = False) -> "Schema.Builder":
            """A metadata column of the connector."""
            text = f"{quote_identifier(column_name)} {data_type} METADATA"
            if metadata_key is not None:
                text += f" FROM {quote_string(metadata_key)}"
            self._columns.append(text + (" VIRTUAL" if is_virtual else ""))
            self._metadata.append((column_name, str(data_type), metadata_key or column_name))
            self._select.append(_cast_item(column_name, str(data_type)))
            return self

        def watermark(self, column_name: str, watermark_expr: Any) -> "Schema.Builder":
            """``WATERMARK FOR column AS expr``."""
            self._watermark = (f"WATERMARK FOR {quote_identifier(column_name)} AS "
                               f"{_expression_sql(watermark_expr)}")
            return self

        def primary_key(self, *column_names: str) -> "Schema.Builder":
            cols = ", ".join(quote_identifier(c) for c in column_names)
            self._primary_key = f"PRIMARY KEY ({cols}) NOT ENFORCED"
            self._key = list(column_names)
            return self

        def primary_key_named(self, constraint_name: str, *column_names: str) -> "Schema.Builder":
            self.primary_key(*column_names)
            self._primary_key = f"CONSTRAINT {quote_identifier(constraint_name)} {self._primary_key}"
            return self

        def build(self) -> "Schema":
            schema = Schema(self._columns, self._watermark, self._primary_key, self._physical,
                            self._computed, self._metadata, self._select)
            schema.key_columns = list(self._key)
            return schema

    def __init__(self, columns: list[str], watermark: str | None = None,
                 primary_key: str | None = None, physical: list[tuple[str, str]] | None = None,
                 computed: list[str] | None = None,
                 metadata: list[tuple[str, str, str]] | None = None,
                 select: list[str] | None = None) -> None:
        #: each column's Flink SQL definition
        self.columns = list(columns)
        self.watermark = watermark
        self.primary_key = primary_key
        #: the primary key's column names (empty without one)
        self.key_columns: list[str] = []
        self._physical = list(physical or [])
        self._computed = list(computed or [])
        self._metadata = list(metadata or [])
        self._select = list(select or [])

    def physical_columns(self) -> list[tuple[str, str]]:
        """The physical columns declared: (name, Flink type text)."""
        return list(self._physical)

    def metadata_columns(self) -> list[tuple[str, str, str]]:
        """The metadata columns declared: (name, Flink type text, metadata key)."""
        return list(self._metadata)

    def select_items(self) -> list[str]:
        """Every column declared, in order, as a select item over the data's fields (a
        physical or metadata column cast to its declared type, a computed one its expression)."""
        return list(self._select)

    def computed_columns(self) -> list[str]:
        """The computed columns declared, as ``expression AS name`` select items."""
        return list(self._computed)

    @staticmethod
    def new_builder() -> "Schema.Builder":
        return Schema.Builder()

    def definitions(self) -> list[str]:
        """The lines inside ``CREATE TABLE t (...)``."""
        return self.columns + [x for x in (self.watermark, self.primary_key) if x]

    def __str__(self) -> str:
        return "(\n  " + ",\n  ".join(self.definitions()) + "\n)"


class FormatDescriptor:
    """A format and its options (``FormatDescriptor.for_format('csv').option(...).build()``)."""

    class Builder:
        def __init__(self, format: str) -> None:
            self._format = format
            self._options: dict[str, str] = {}

        def option(self, key: str, value: Any) -> "FormatDescriptor.Builder":
            self._options[key] = _option_value(value)
            return self

        def build(self) -> "FormatDescriptor":
            return FormatDescriptor(self._format, self._options)

    def __init__(self, format: str, options: dict[str, str] | None = None) -> None:
        self.format = format
        self.options = dict(options or {})

    @staticmethod
    def for_format(format: str) -> "FormatDescriptor.Builder":
        return FormatDescriptor.Builder(format)


def _option_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class TableDescriptor:
    """A connector table: schema, options, format, partitioning, comment."""

    class Builder:
        def __init__(self, connector: str) -> None:
            self._schema: Schema | None = None
            self._options: dict[str, str] = {"connector": connector}
            self._partition_keys: list[str] = []
            self._comment: str | None = None

        def schema(self, schema: Schema) -> "TableDescriptor.Builder":
            self._schema = schema
            return self

        def option(self, key: str, value: Any) -> "TableDescriptor.Builder":
            self._options[key] = _option_value(value)
            return self

        def format(self, format: str | FormatDescriptor,
                   format_option_key: str | None = None) -> "TableDescriptor.Builder":
            """The format (``'csv'`` or a FormatDescriptor, whose options get its prefix)."""
            key = format_option_key or "format"
            if isinstance(format, str):
                self._options[key] = format
                return self
            self._options[key] = format.format
            prefix = key[:-len("format")] if key.endswith("format") else ""
            for k, v in format.options.items():
                self._options[f"{prefix}{format.format}.{k}"] = v
            return self

        def partitioned_by(self, *partition_keys: str) -> "TableDescriptor.Builder":
            self._partition_keys = list(partition_keys)
            return self

        def comment(self, comment: str) -> "TableDescriptor.Builder":
            self._comment = comment
            return self

        def build(self) -> "TableDescriptor":
            return TableDescriptor(self._schema, self._options, self._partition_keys,
                                   self._comment)

    def __init__(self, schema: Schema | None, options: dict[str, str],
                 partition_keys: list[str] | None = None, comment: str | None = None) -> None:
        self._schema = schema
        self._options = dict(options)
        self._partition_keys = list(partition_keys or [])
        self._comment = comment

    @staticmethod
    def for_connector(connector: str) -> "TableDescriptor.Builder":
        return TableDescriptor.Builder(connector)

    def get_schema(self) -> Schema | None:
        return self._schema

    def get_options(self) -> dict[str, str]:
        return dict(self._options)

    def get_partition_keys(self) -> list[str]:
        return list(self._partition_keys)

    def get_comment(self) -> str | None:
        return self._comment

    def create_table_sql(self, path: str, temporary: bool = False,
                         if_not_exists: bool = False) -> str:
        """``CREATE [TEMPORARY] TABLE [IF NOT EXISTS] <path> (...) ... WITH (...)``."""
        if self._schema is None:
            raise ValueError("the table descriptor needs a schema: .schema(Schema.new_builder()"
                             "...build())")
        head = "CREATE TEMPORARY TABLE" if temporary else "CREATE TABLE"
        if if_not_exists:
            head += " IF NOT EXISTS"
        parts = [f"{head} {quote_path(path)} {self._schema}"]
        if self._comment is not None:
            parts.append(f"COMMENT {quote_string(self._comment)}")
        if self._partition_keys:
            keys = ", ".join(quote_identifier(k) for k in self._partition_keys)
            parts.append(f"PARTITIONED BY ({keys})")
        options = ",\n  ".join(f"{quote_string(k)} = {quote_string(v)}"
                               for k, v in self._options.items())
        parts.append(f"WITH (\n  {options}\n)")
        return " ".join(parts)

    def __str__(self) -> str:
        return self.create_table_sql("<table>")

