"""What PyFlink's ``StreamTableEnvironment`` conversions between a DataStream and a Table need
of records and rows, without a session: the columns a DataStream's records give a Table
(``from_data_stream``), the projection its fields or Schema ask for, and the rows of a Table as
the records of a DataStream (``to_data_stream`` / ``to_changelog_stream``).

>>> stream_column_names([Row(name='a', score=1)])
['name', 'score']
>>> stream_column_names([('a', 1)])
['f0', 'f1']
"""

from __future__ import annotations

from typing import Any, Sequence

from ...common.types import Row, RowKind
from .descriptor import Schema
from .expressions import Expression, as_expression, quote_identifier

#: the sink name Flink's planner gives a Table converted into a DataStream
DATASTREAM_SINK = "*anonymous_datastream_sink$1*"


def stream_column_names(records: Sequence[Any]) -> list[str]:
    """Flink's column names of a DataStream's records: a named Row's field names; ``f0``,
    ``f1``... of a tuple, list or unnamed Row; ``f0`` of an atomic value."""
    if not records:
        raise ValueError("from_data_stream() of a DataStream without records needs a Schema "
                         "(Schema.new_builder().column(...)) to know its columns")
    first = records[0]
    if isinstance(first, Row):
        try:
            return list(first.as_dict())
        except TypeError:
            return [f"f{i}" for i in range(len(first))]
    if isinstance(first, (tuple, list)):
        return [f"f{i}" for i in range(len(first))]
    return ["f0"]


def stream_rows(records: Sequence[Any], names: list[str]) -> list[tuple[Any, ...]]:
    """The records as tuples of ``len(names)`` values; a Row that is not an insertion fails
    (Flink: a DataStream converted to a Table is insert-only)."""
    rows = []
    for r in records:
        if isinstance(r, Row) and r.get_row_kind() is not RowKind.INSERT:
            raise ValueError(f"from_data_stream() takes insert-only records; {r!r} is a "
                             f"{r.get_row_kind().name} (use from_changelog_stream)")
        values = tuple(r) if isinstance(r, (Row, tuple, list)) else (r,)
        if len(values) != len(names):
            raise ValueError(f"the DataStream's record {r!r} has {len(values)} fields, its "
                             f"first record {len(names)}")
        rows.append(values)
    return rows


def projection(names: list[str], fields_or_schema: Sequence[Any]) -> list[str] | None:
    """The SELECT list (Flink SQL) a ``from_data_stream(ds, *fields_or_schema)`` puts over
    the stream's columns ``names``; None for none. Expressions reference the input fields by
    name (and may alias them) or, when none names an input field, rename them by position;
    a Schema casts the physical columns it declares and adds its computed columns."""
    if not fields_or_schema:
        return None
    if len(fields_or_schema) == 1 and isinstance(fields_or_schema[0], Schema):
        return _schema_projection(names, fields_or_schema[0])
    exprs: list[Expression] = [as_expression(f) for f in fields_or_schema]
    referenced = [getattr(e, "alias_of", None) or e.name for e in exprs]
    if any(r in names for r in referenced):  # by name (reordered, projected, aliased)
        unknown = [r for r in referenced if r not in names]
        if unknown:
            raise ValueError(f"from_data_stream(): the stream has no field {unknown[0]!r}; "
                             f"its fields are {names}")
        return [e.to_sql() for e in exprs]
    if len(exprs) > len(names):
        raise ValueError(f"from_data_stream(): {len(exprs)} fields for a stream of "
                         f"{len(names)} columns {names}")
    return [f"{quote_identifier(old)} AS {quote_identifier(e.name or e.to_sql())}"
            for old, e in zip(names, exprs)]


#: the metadata key of a DataStream record's timestamp (Flink's ``rowtime`` metadata column)
ROWTIME_METADATA = "rowtime"


def rowtime_column(schema: Any) -> str | None:
    """The name of a Schema's metadata column of the records' timestamps (``rowtime``), or
    None; another metadata key fails, as Flink's DataStream source has only this one."""
    if not isinstance(schema, Schema):
        return None
    for name, _, key in schema.metadata_columns():
        if key != ROWTIME_METADATA:
            raise ValueError(f"Invalid metadata key '{key}' in column '{name}': a DataStream "
                             f"offers only '{ROWTIME_METADATA}' (its records' timestamps)")
        return name
    return None


def rowtime_value(timestamp: int | None) -> Any:
    """A record's timestamp (epoch milliseconds) as the value of a TIMESTAMP_LTZ(3) column."""
    import datetime

    if timestamp is None:
        return None
    return datetime.datetime.fromtimestamp(timestamp / 1000, tz=datetime.timezone.utc)


def _schema_projection(names: list[str], schema: Schema) -> list[str]:
    # The Schema's watermark needs nothing here: the stream is read whole as a bounded table,
    # and a bounded table's query ends with Flink's final watermark (every window fires).
    # Where Flink's watermarks would have overtaken some records of the stream (late records),
    # those records are counted here.
    physical = dict(schema.physical_columns())
    unknown = [n for n in physical if n not in names]
    if unknown:
        raise ValueError(f"Unable to find a field named '{unknown[0]}' in the physical data "
                         f"type derived from the given type information for schema "
                         f"declaration. Make sure that the type information is not a generic "
                         f"raw type. Currently available fields are: {names}")
    metadata = {name: type_ for name, type_, _ in schema.metadata_columns()}
    select = [f"CAST({quote_identifier(n)} AS {physical.get(n) or metadata[n]}) AS "
              f"{quote_identifier(n)}" if n in physical or n in metadata else quote_identifier(n)
              for n in names]
    return select + schema.computed_columns()


def insert_only(rows: Sequence[Row], node: str = "the query") -> None:
    """Fail as Flink's planner does when an updating Table is converted by ``to_data_stream``."""
    if any(r.get_row_kind() is not RowKind.INSERT for r in rows):
        raise ValueError(f"Table sink '{DATASTREAM_SINK}' doesn't support consuming update "
                         f"changes which is produced by {node}. Use to_changelog_stream() for "
                         "an updating table.")


def as_records(rows: Sequence[Row], names: list[str], changelog: bool) -> list[Row]:
    """A Table's rows as a DataStream's records: Rows of the column names (their RowKind kept
    by ``to_changelog_stream``, INSERT for ``to_data_stream``)."""
    records = []
    for r in rows:
        record = Row(*list(r))
        record.set_field_names(list(names))
        record.set_row_kind(r.get_row_kind() if changelog else RowKind.INSERT)
        records.append(record)
    return records
