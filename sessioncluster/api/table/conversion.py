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

from ...common.time import Instant
from ...common.types import Row, RowKind
from ..watermark import TimestampAssigner, WatermarkStrategy
from .descriptor import Schema
from .expression import Expression
from .expressions import as_expression
from .sqltext import quote_identifier

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
    return [_values(r, len(names), "its first record") for r in records]


def _values(record: Any, width: int, expected: str, changelog: bool = False
            ) -> tuple[Any, ...]:
    if not changelog and isinstance(record, Row) and record.get_row_kind() is not RowKind.INSERT:
        raise ValueError(f"from_data_stream() takes insert-only records; {record!r} is a "
                         f"{record.get_row_kind().name} (use from_changelog_stream)")
    values = tuple(record) if isinstance(record, (Row, tuple, list)) else (record,)
    if any(isinstance(v, Instant) for v in values):  # Types.INSTANT(): a TIMESTAMP_LTZ value
        values = tuple(v.to_datetime() if isinstance(v, Instant) else v for v in values)
    if len(values) != width:
        raise ValueError(f"the DataStream's record {record!r} has {len(values)} fields, "
                         f"{expected} {width}")
    return values


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
    if physical:  # Flink: the declared columns only, in their order (as print_schema shows)
        return schema.select_items()
    metadata = {name: type_ for name, type_, _ in schema.metadata_columns()}
    select = [f"CAST({quote_identifier(n)} AS {physical.get(n) or metadata[n]}) AS "
              f"{quote_identifier(n)}" if n in physical or n in metadata else quote_identifier(n)
              for n in names]
    return select + schema.computed_columns()


def insert_only(rows: Sequence[Row], node: str = "the query") -> None:
    """Fail as Flink's planner does when an updating Table is converted by ``to_data_stream``."""
    if any(r.get_row_kind() is not RowKind.INSERT for r in rows):
        raise _updates_refused(node)


def _updates_refused(producer: str) -> ValueError:
    return ValueError(f"Table sink '{DATASTREAM_SINK}' doesn't support consuming update "
                      f"changes which is produced by {producer}. Use to_changelog_stream() "
                      "for an updating table.")


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


# -- an unbounded DataStream as a table of the JobManager's streaming query ---------------------

#: the connector of the temporary table an unbounded DataStream becomes (``from_data_stream``):
#: the DataStream's JobGraph travels with its CREATE TABLE and runs inside the table's query
DATASTREAM_CONNECTOR = "datastream"
#: that table's option naming its column of the records' timestamps (the Schema's rowtime)
ROWTIME_OPTION = "rowtime"
#: that table's option saying its records are a changelog (``from_changelog_stream``): each
#: record's RowKind is a column of the table's frame, which its queries apply
CHANGELOG_OPTION = "changelog"
#: its values: every kind, or an upsert changelog normalized on its primary key first
CHANGELOG_ALL, CHANGELOG_UPSERT = "all", "upsert"

#: Flink's SQL types of PyFlink's basic TypeInformation (``Types.STRING()`` ...)
_SQL_TYPES = {"String": "STRING", "Character": "STRING", "Boolean": "BOOLEAN",
              "Byte": "TINYINT", "Short": "SMALLINT", "Integer": "INT", "Long": "BIGINT",
              "BigInteger": "DECIMAL(38, 0)", "BigDecimal": "DECIMAL(38, 18)",
              "Float": "FLOAT", "Double": "DOUBLE", "Date": "DATE", "Time": "TIME(0)",
              "Timestamp": "TIMESTAMP(3)", "Instant": "TIMESTAMP_LTZ(3)"}


def sql_type(type_info: Any) -> str:
    """Flink's SQL type of a column of records of ``type_info`` (a basic TypeInformation)."""
    from ...common.typeinfo import BasicTypeInfo, PickledBytesTypeInfo

    if isinstance(type_info, BasicTypeInfo) and not isinstance(type_info, PickledBytesTypeInfo):
        if type_info.name in _SQL_TYPES:
            return _SQL_TYPES[type_info.name]
    raise ValueError(f"from_data_stream() of an unbounded DataStream: a column of type "
                     f"{type_info!r} has no SQL type here; declare the column in a Schema "
                     "(Schema.new_builder().column(name, DataTypes...))")


def type_columns(type_info: Any) -> list[tuple[str, str]]:
    """The columns (name, Flink SQL type) Flink derives from a DataStream's output type: a
    named Row's fields, ``f0``, ``f1``... of a tuple or unnamed Row, ``f0`` of an atomic type."""
    from ...common.typeinfo import RowTypeInfo, TupleTypeInfo

    if isinstance(type_info, RowTypeInfo):
        return list(zip(type_info.get_field_names(),
                        [sql_type(t) for t in type_info.get_field_types()]))
    if isinstance(type_info, TupleTypeInfo):
        return [(f"f{i}", sql_type(t)) for i, t in enumerate(type_info.get_field_types())]
    return [("f0", sql_type(type_info))]


def unbounded_columns(schema: Schema | None, type_info: Any) -> list[tuple[str, str]]:
    """The physical columns (name, Flink SQL type) of an unbounded DataStream's table, in the
    order of the records' fields: the output type's, typed as a Schema declares them; without
    an output type, the Schema's physical columns. Neither fails, naming what to add: an
    unbounded stream's records cannot be read first to find its columns."""
    declared = dict(schema.physical_columns()) if schema is not None else {}
    if type_info is None:
        if declared:
            return list(declared.items())
        raise ValueError(
            "from_data_stream() of an unbounded DataStream needs its columns: give the "
            "stream's output type (e.g. map(f, output_type=Types.ROW_NAMED(['word'], "
            "[Types.STRING()]))) or a Schema with its physical columns "
            "(Schema.new_builder().column('word', DataTypes.STRING()).build())")
    columns = type_columns(type_info)
    names = [n for n, _ in columns]
    unknown = [n for n in declared if n not in names]
    if unknown:
        raise ValueError(f"Unable to find a field named '{unknown[0]}' in the physical data "
                         f"type derived from the given type information for schema "
                         f"declaration. Currently available fields are: {names}")
    return [(n, declared.get(n, t)) for n, t in columns]


def datastream_table_sql(name: str, columns: list[tuple[str, str]],
                         rowtime: tuple[str, str] | None, watermark: str | None,
                         changelog: str = "") -> str:
    """``CREATE TEMPORARY TABLE`` of an unbounded DataStream's table: its physical columns,
    ``rowtime`` (name, type) the records' timestamps, and ``watermark`` its
    ``WATERMARK FOR ...`` line; ``changelog`` (:data:`CHANGELOG_ALL` or
    :data:`CHANGELOG_UPSERT`): its records' RowKinds are its changelog."""
    lines = [f"{quote_identifier(n)} {t}" for n, t in columns]
    options = {"connector": DATASTREAM_CONNECTOR}
    if changelog:
        options[CHANGELOG_OPTION] = changelog
    if rowtime is not None:
        lines.append(f"{quote_identifier(rowtime[0])} {rowtime[1]}")
        options[ROWTIME_OPTION] = rowtime[0]
    if watermark is not None:
        lines.append(watermark)
    with_ = ", ".join(f"'{k}' = '{v}'" for k, v in options.items())
    return (f"CREATE TEMPORARY TABLE {quote_identifier(name)} (" + ", ".join(lines)
            + f") WITH ({with_})")


def unbounded_watermark(schema: Schema | None, rowtime: str | None,
                        source_delay_ms: int | None) -> str | None:
    """The ``WATERMARK FOR`` line of an unbounded DataStream's table: the Schema's own; for
    ``SOURCE_WATERMARK()``, the DataStream's watermark (its bounded out-of-orderness
    ``source_delay_ms``) on the rowtime column."""
    if schema is None or not schema.watermark:
        return None
    if "SOURCE_WATERMARK()" not in schema.watermark.upper().replace(" ", ""):
        return schema.watermark
    if rowtime is None:
        raise ValueError("SOURCE_WATERMARK() needs the records' timestamps as a column: "
                         "column_by_metadata('rowtime', 'TIMESTAMP_LTZ(3)')")
    if source_delay_ms is None:
        raise ValueError("SOURCE_WATERMARK() propagates the DataStream's watermarks: this "
                         "DataStream has none (assign_timestamps_and_watermarks(...) first)")
    quoted = quote_identifier(rowtime)
    return f"WATERMARK FOR {quoted} AS {quoted} - INTERVAL '{int(source_delay_ms)}' MILLISECOND"


def record_values(record: Any, width: int) -> tuple[Any, ...]:
    """One record of an unbounded DataStream as its ``width`` column values (as
    :func:`stream_rows`: an insert-only Row, tuple or list of that many fields, or an atomic
    value for one column)."""
    return _values(record, width, "its table's columns")


def changelog_record_values(record: Any, width: int) -> tuple[tuple[Any, ...], str]:
    """One record of an unbounded changelog DataStream as its ``width`` column values and its
    RowKind's short string (``+I``, ``-U``, ``+U``, ``-D``; a value that is no Row ``+I``)."""
    kind = record.get_row_kind() if isinstance(record, Row) else RowKind.INSERT
    return _values(record, width, "its table's columns", changelog=True), kind.short_string()


# -- an unbounded Table as the source of the JobManager's DataStream query ---------------------

#: the configuration key of a query planned as a DataStream's source (the JobManager answers
#: whether it is bounded, updating, and its rowtime column, and refuses an updating query for
#: ``to_data_stream``): ``data`` (``to_data_stream``) or ``changelog``
TO_DATASTREAM = "sessioncluster.table.to-datastream"
#: the keys of a ``SOURCE_TABLE`` operator's config: its query, the TableEnvironment's
#: configuration, ``data`` or ``changelog``, and the rowtime column ("" for none)
TABLE_QUERY, TABLE_CONFIGURATION, TABLE_CONVERSION, TABLE_ROWTIME = (
    "query", "configuration", "conversion", "rowtime")

#: RowKind by its short string (``+I``, ``-U``, ``+U``, ``-D``), as a changelog names it
ROW_KINDS = {kind.short_string(): kind for kind in RowKind}


def row_record(values: Sequence[Any], names: list[str], kind: str = "+I") -> Row:
    """One row of an unbounded Table as its DataStream's record: a Row of the column names
    with the RowKind of ``kind`` (``to_data_stream`` passes ``+I`` only)."""
    record = Row(*values)
    record.set_field_names(list(names))
    record.set_row_kind(ROW_KINDS[kind])
    return record


def rowtime_millis(value: Any) -> int | None:
    """The record timestamp (epoch ms) of a rowtime column's value, as Flink's
    ``to_data_stream`` stamps each record with the Table's rowtime; None for no value."""
    import datetime

    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        # a naive value is UTC's: the planner's session runs in UTC
        epoch = datetime.datetime(1970, 1, 1, tzinfo=value.tzinfo and datetime.timezone.utc)
        return (value - epoch) // datetime.timedelta(milliseconds=1)
    return int(value)


#: the rowtime of a window table-valued function's result: Flink's time attribute of the
#: windows (``window_end`` - 1 ms), which stamps the records of ``to_data_stream``
WINDOW_TIME = "window_time"


class RowtimeAssigner(TimestampAssigner):
    """A bounded Table's records stamped with their rowtime column (field ``index``), as
    Flink's ``to_data_stream`` writes a Table's time attribute into the records' timestamps."""

    def __init__(self, index: int) -> None:
        self.index = index

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        millis = rowtime_millis(value[self.index])
        return record_timestamp if millis is None else millis


def rowtime_strategy(index: int) -> WatermarkStrategy:
    """The watermark strategy of a bounded Table's records with a rowtime (field ``index``):
    the Table's rows are read whole before its final watermark, so none is late."""
    return WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        RowtimeAssigner(index))


def insert_only_table(updating_node: str | None) -> None:
    """Fail as Flink's planner does when ``to_data_stream`` is given an updating Table (its
    node, e.g. ``GroupAggregate(...)``, named when known)."""
    if updating_node is not None:
        raise _updates_refused(f"node {updating_node}")
