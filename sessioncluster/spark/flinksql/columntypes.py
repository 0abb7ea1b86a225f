"""Flink's types of a query's columns on Spark: Spark's schema named in Flink's types, refined by
:mod:`.flinktypes` where Spark keeps less (a CHAR/VARCHAR's length, a TIMESTAMP's precision,
nullability), kept in a view's Spark schema (field metadata), and ``TYPEOF`` answered at planning.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from sqlglot import exp

from ...api.table.typeparser import parse_type
from ...api.table.types import (
    BinaryType,
    CharType,
    DataType,
    DataTypes,
    DecimalType,
    LocalZonedTimestampType,
    MultisetType,
    TimestampType,
    TimeType,
    VarBinaryType,
)
from . import flinktypes
from .builtins import temporal_type
from .model import CatalogTable, FlinkSqlError
from .sources import FLINK_TYPE

#: a field's metadata: the Flink type inferred for it is NOT NULL (DESCRIBE's ``null`` column)
FLINK_NOT_NULL = "flink.not_null"


def flink_types(schema: Any) -> list[str]:
    """The Flink SQL types of a Spark schema's fields (a declared type kept in a field's
    metadata wins)."""
    return [field.metadata.get(FLINK_TYPE) or flink_type(field.dataType)
            for field in schema.fields]


def flink_type(spark_type: Any) -> str:
    """Flink SQL's name of a Spark data type (``BIGINT``, ``TIMESTAMP(6)``, ``ARRAY<INT>``)."""
    from pyspark.sql import types as T

    simple = {T.ByteType: "TINYINT", T.ShortType: "SMALLINT", T.IntegerType: "INT",
              T.LongType: "BIGINT", T.FloatType: "FLOAT", T.DoubleType: "DOUBLE",
              T.BooleanType: "BOOLEAN", T.StringType: "STRING", T.BinaryType: "BYTES",
              T.DateType: "DATE", T.TimestampNTZType: "TIMESTAMP(6)",
              T.TimestampType: "TIMESTAMP_LTZ(6)", T.NullType: "NULL"}
    for kind, name in simple.items():
        if isinstance(spark_type, kind):
            return name
    if isinstance(spark_type, T.DecimalType):
        return f"DECIMAL({spark_type.precision}, {spark_type.scale})"
    if isinstance(spark_type, T.ArrayType):
        return f"ARRAY<{flink_type(spark_type.elementType)}>"
    if isinstance(spark_type, T.MapType):
        return f"MAP<{flink_type(spark_type.keyType)}, {flink_type(spark_type.valueType)}>"
    if isinstance(spark_type, T.StructType):
        fields = ", ".join(f"`{f.name}` {flink_type(f.dataType)}" for f in spark_type.fields)
        return f"ROW<{fields}>"
    return spark_type.simpleString().upper()


def field_type(field: Any) -> DataType | None:
    """A Spark field's Flink type: NOT NULL where Spark's field is not nullable or the type
    (declared, or inferred for a view) says so; None when the text does not parse."""
    try:
        t = parse_type(flink_types(_schema_of(field))[0])
    except (ValueError, TypeError):
        return None
    return t.not_null() if not field.nullable or field.metadata.get(FLINK_NOT_NULL) else t


def field_type_text(field: Any) -> str:
    """A Spark field's Flink type text (``VARCHAR(5) NOT NULL``; Spark's in Flink's names when
    the text does not parse)."""
    t = field_type(field)
    return str(t) if t is not None else flink_type(field.dataType)


def _schema_of(field: Any) -> Any:
    from pyspark.sql.types import StructType

    return StructType([field])


def spark_columns(spark: Any, name: str) -> flinktypes.Columns | None:
    """The Flink types of the columns of the Spark table or view ``name`` (None if none)."""
    if not spark.catalog.tableExists(name):
        return None
    return [(f.name, field_type(f)) for f in spark.table(name).schema.fields]


def not_null_in_view(field: Any) -> bool:
    """Whether a view's field is NOT NULL as Flink's DESCRIBE says (as inferred)."""
    return bool(field.metadata.get(FLINK_NOT_NULL))


def with_view_types(frame: Any, columns: flinktypes.Columns | None) -> Any:
    """The view's frame with Flink's inferred type of each column Spark types less precisely
    (``VARCHAR(5)`` for Spark's ``STRING``, ``TIMESTAMP(0)``) and its nullability in its field
    metadata; a column not typed here is nullable (Spark carries a column's metadata through
    an outer join, which makes it nullable)."""
    if columns is None or len(columns) != len(frame.columns):
        columns = [(name, None) for name in frame.columns]
    spark_types = flink_types(frame.schema)
    for field, (_, t), spark_text in zip(frame.schema.fields, columns, spark_types):
        metadata = dict(field.metadata)
        if t is not None and spark_compatible(t, spark_text):
            metadata[FLINK_TYPE] = str(t.nullable())
            metadata[FLINK_NOT_NULL] = not t.is_nullable
        elif metadata.get(FLINK_NOT_NULL):
            metadata[FLINK_NOT_NULL] = False
        else:
            continue
        frame = frame.withMetadata(field.name, metadata)
    return frame


def refined_types(types: list[str], inferred: flinktypes.Columns | None) -> list[str]:
    """A query's result ``types`` (from Spark's schema), each replaced by Flink's ``inferred``
    type where that refines Spark's (a length, a precision, NOT NULL, a MULTISET); a column
    not inferred keeps Spark's type, nullable."""
    if inferred is None or len(inferred) != len(types):
        return types
    return [str(t) if t is not None and spark_compatible(t, spark_text) else spark_text
            for (_, t), spark_text in zip(inferred, types)]


def spark_compatible(flink: DataType, spark_text: str) -> bool:
    """Whether ``flink`` refines Spark's answer ``spark_text`` (a Flink type text made from
    Spark's schema) without contradicting it: the same kind of value, only a length, a
    precision (a DECIMAL's no smaller, of the same scale) or a nullability Spark does not
    keep."""
    base = flink.nullable()
    spark = spark_text.upper().replace(" NOT NULL", "")
    if str(base).replace(" NOT NULL", "") == spark:
        return True
    if isinstance(base, CharType):  # a CHAR's type Spark carried through a set operation
        return spark == "STRING" or re.fullmatch(r"(VAR)?CHAR\(\d+\)", spark) is not None
    if isinstance(base, (BinaryType, VarBinaryType)):
        return spark in ("BYTES", "BINARY")
    if isinstance(base, DecimalType):  # Flink's wider DECIMAL of a SUM, of the same scale
        spark_decimal = re.fullmatch(r"DECIMAL\((\d+), (\d+)\)", spark)
        return spark_decimal is not None and int(spark_decimal.group(2)) == base.scale \
            and int(spark_decimal.group(1)) <= base.precision
    if isinstance(base, (TimestampType, LocalZonedTimestampType, TimeType)):
        return spark.startswith(base.sql_name + "(")
    if isinstance(base, MultisetType):  # held as a map of each value to its count
        element = re.fullmatch(r"MAP<(.*), INT>", spark)
        return element is not None and spark_compatible(base.element_type, element.group(1))
    return False


def typeof_from_spark(spark: Any, tree: exp.Expr, calls: list[exp.Anonymous],
                      to_spark_sql: Callable[[exp.Expr], str]) -> list[str]:
    """The type texts of TYPEOF calls :mod:`.flinktypes` could not type: Spark's type of each
    argument, in Flink's names (a call must be an item of the query's own SELECT)."""
    if not isinstance(tree, exp.Select):
        raise FlinkSqlError(f"TYPEOF({calls[0].expressions[0].sql()}) is not supported here")
    probe = tree.copy()
    items = list(tree.selects)
    for i, call in enumerate(calls):
        item = call.parent if isinstance(call.parent, exp.Alias) else call
        if item not in items:
            raise FlinkSqlError(f"TYPEOF({call.expressions[0].sql()}) is supported as an item "
                                "of a SELECT only, here")
        probe.selects[items.index(item)].replace(
            exp.alias_(call.expressions[0].copy(), f"__typeof{i}", quoted=True))
    fields = {f.name: f for f in spark.sql(to_spark_sql(probe)).schema.fields}
    out = []
    for i in range(len(calls)):
        field = fields[f"__typeof{i}"]
        out.append(flink_types(_schema_of(field))[0] + ("" if field.nullable else " NOT NULL"))
    return out


def declared_columns(table: CatalogTable) -> flinktypes.Columns:
    """A catalog table's columns as its CREATE TABLE declares them (a computed column's type
    not known here but ``PROCTIME()``'s, ``TIMESTAMP_LTZ(3) NOT NULL``)."""
    out: flinktypes.Columns = []
    for column in table.columns:
        if (column.expression or "").replace(" ", "").upper() == "PROCTIME()":
            out.append((column.name, DataTypes.TIMESTAMP_LTZ(3, False)))
            continue
        try:
            out.append((column.name, parse_type(column.type) if column.type else None))
        except (ValueError, TypeError):
            out.append((column.name, None))
    return out


def typeof_not_typed(tree: exp.Expr, calls: list[exp.Anonymous]) -> list[str]:
    """STREAMING: a TYPEOF :mod:`.flinktypes` cannot type is refused (no batch probe there)."""
    raise FlinkSqlError(f"TYPEOF({calls[0].expressions[0].sql()}) is not supported in "
                        "STREAMING mode: its type is not known before the job runs here")


#: Flink's window bounds and the legacy group window functions, all TIMESTAMP(3)
_WINDOW_BOUNDS = {"window_start", "window_end", "window_time"}
_GROUP_WINDOW_BOUNDS = {f"{w}_{p}" for w in ("tumble", "hop", "session")
                        for p in ("start", "end", "rowtime")}


def window_bound_types(query: Any, types: list[str]) -> list[str]:
    """``types`` of a query's columns as Flink types them where Spark's differ: its window
    bounds (``window_start``, ``w.start``, ``TUMBLE_END(...)``, however aliased) are
    ``TIMESTAMP(3)``, a SUM of a DECIMAL(p, s) is DECIMAL(38, s), a timestamp expression has
    Flink's precision (``builtins.temporal_type``). A ``SELECT *`` over one
    subquery (the Table API's ``order_by``, ``limit``, ``where``) types as its subquery."""
    if not isinstance(query, exp.Select):
        return types
    if any(isinstance(p, exp.Star) or p.is_star for p in query.selects):
        from_ = query.args.get("from_")
        if (len(query.selects) == 1 and from_ is not None and not query.args.get("joins")
                and isinstance(from_.this, exp.Subquery)):
            return window_bound_types(from_.this.this, types)
        return types
    out = list(types)
    for i, projection in enumerate(query.selects[: len(out)]):
        inner = projection.unalias()
        name = inner.name.lower() if isinstance(inner, exp.Column) else ""
        func = (inner.name if isinstance(inner, exp.Anonymous) else inner.key).lower() \
            if isinstance(inner, exp.Func) else ""
        if out[i] in ("TIMESTAMP(6)", "TIMESTAMP_LTZ(6)") and (
                name in _WINDOW_BOUNDS or func in _GROUP_WINDOW_BOUNDS):
            # a window's time is its rowtime's kind (TIMESTAMP_LTZ of an instant); its
            # bounds are TIMESTAMP(3) whatever the rowtime
            ltz = out[i].startswith("TIMESTAMP_LTZ") and (name == "window_time"
                                                           or func.endswith("_rowtime"))
            out[i] = "TIMESTAMP_LTZ(3)" if ltz else "TIMESTAMP(3)"
        temporal = temporal_type(inner)
        if temporal is not None and out[i] in ("TIMESTAMP(6)", "TIME(6)"):
            out[i] = temporal
        elif temporal is not None and out[i] == "TIMESTAMP_LTZ(6)":  # Spark's date_trunc
            out[i] = temporal.replace("TIMESTAMP", "TIMESTAMP_LTZ")
        aggregate = inner.this if isinstance(inner, exp.Window) else inner
        scale = re.fullmatch(r"DECIMAL\(\d+, (\d+)\)", out[i])
        if isinstance(aggregate, exp.Sum) and scale:
            out[i] = f"DECIMAL(38, {scale.group(1)})"
    return out
