"""Flink's ``datagen`` connector as Spark expressions over ``spark.range`` (BATCH) or the
``rate`` source (STREAMING): a row's ``id`` is its position, so a ``sequence`` field is exactly
``start + id`` and the rows are split across Spark's partitions; a ``random`` field is ``rand()``
scaled into its bounds (``fields.<f>.min``/``max``/``length``/``max-past``/``null-rate``)."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from ....api.table.typeparser import parse_type
from ....api.table.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegralType,
    LocalZonedTimestampType,
    MapType,
    RowType,
    TimestampType,
    TimeType,
)
from ..model import CatalogTable, FlinkSqlError

#: Flink's RandomGeneratorVisitor: 100 characters or bytes, 3 elements of a collection
_INT_RANGE = {"TINYINT": 7, "SMALLINT": 15, "INT": 31, "BIGINT": 63}
_FLOAT_MAX = {"FLOAT": 3.4028234663852886e38, "DOUBLE": 1.7976931348623157e308}


def _duration_ms(text: str) -> int:
    """Flink's Duration text (``5 s``, ``1min``, ``100 ms``, ``1h``, or milliseconds)."""
    units = {"ms": 1, "milli": 1, "millis": 1, "s": 1000, "sec": 1000, "second": 1000,
             "seconds": 1000, "min": 60_000, "m": 60_000, "minute": 60_000, "minutes": 60_000,
             "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000, "d": 86_400_000,
             "day": 86_400_000, "days": 86_400_000}
    stripped = text.strip().lower()
    number = stripped.rstrip("abcdefghijklmnopqrstuvwxyz ")
    unit = stripped[len(number):].strip() or "ms"
    if unit not in units or not number:
        raise FlinkSqlError(f"Could not parse value '{text}' as a duration")
    return int(float(number) * units[unit])


def _sql_literal(value: Any) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)


def _row_count(table: CatalogTable, fields: list[tuple[str, DataType]]) -> int | None:
    """The rows a bounded table has: ``number-of-rows``, or the shortest sequence."""
    options = table.options
    counts = []
    if "number-of-rows" in options:
        counts.append(int(options["number-of-rows"]))
    for name, _ in fields:
        if options.get(f"fields.{name}.kind") == "sequence":
            start = Decimal(options[f"fields.{name}.start"])
            end = Decimal(options[f"fields.{name}.end"])
            counts.append(max(0, int(end - start) + 1))
    return min(counts) if counts else None


def _sequence(name: str, t: DataType, options: dict[str, str]) -> str:
    start = options[f"fields.{name}.start"]
    if isinstance(t, (IntegralType, DecimalType, FloatType, DoubleType)):
        return f"CAST({Decimal(start)} + id AS {t.spark_ddl()})"
    if isinstance(t, CharType):
        return f"CAST({int(start)} + id AS STRING)"
    raise FlinkSqlError(f"Unsupported type: {t}. The sequence generator of datagen supports "
                        "the numeric types and the strings.")


def _hex(length_expr: str, chunks: int) -> str:
    """``length`` random hex characters (Flink's random strings are hex)."""
    pieces = ", ".join("sha2(CAST(rand() AS STRING), 256)" for _ in range(chunks))
    return f"substr(concat({pieces}), 1, {length_expr})"


def _random(name: str, t: DataType, options: dict[str, str]) -> str:
    def opt(key: str, default: Any) -> str:
        return str(options.get(f"fields.{name}.{key}", default))

    if isinstance(t, BooleanType):
        return "rand() < 0.5"
    if isinstance(t, IntegralType):
        bits = _INT_RANGE[t.sql_name]
        low, high = int(opt("min", -(2**bits))), int(opt("max", 2**bits - 1))
        width = float(high - low + 1)
        # floor() is a BIGINT: beyond its range the (rounded) decimal, clamped below
        spread = (f"CAST(floor(rand() * {width!r}) AS DECIMAL(38, 0))" if width <= 2.0**62
                  else f"CAST(rand() * {width!r} AS DECIMAL(38, 0))")
        return f"CAST(least({low} + {spread}, {high}) AS {t.spark_ddl()})"
    if isinstance(t, (FloatType, DoubleType, DecimalType)):
        if isinstance(t, DecimalType):
            top = float(Decimal(10) ** (t.precision - t.scale) - Decimal(10) ** -t.scale)
            default_low, default_high = -top, top
        else:
            default_low, default_high = -_FLOAT_MAX[t.sql_name], _FLOAT_MAX[t.sql_name]
        low_f, high_f = float(opt("min", default_low)), float(opt("max", default_high))
        mid, half = low_f / 2 + high_f / 2, high_f / 2 - low_f / 2
        value = f"least(greatest({mid!r} + (rand() - 0.5) * 2 * {half!r}, {low_f!r}), {high_f!r})"
        return f"CAST({value} AS {t.spark_ddl()})"
    if isinstance(t, (CharType, BinaryType)):
        # a CHAR(n)/BINARY(n) has n characters; a VARCHAR(n) up to 100, at most n
        fixed = t.sql_name in ("CHAR", "BINARY")
        length = t.length if fixed else int(opt("length", min(100, t.length)))
        size = f"CAST(1 + floor(rand() * {length}) AS INT)" if opt("var-len", "false") == "true" \
            else str(length)
        if isinstance(t, CharType):
            return _hex(size, max(1, math.ceil(length / 64)))
        return f"unhex({_hex(f'2 * {size}', max(1, math.ceil(length / 32)))})"
    if isinstance(t, DateType):
        return "current_date()"
    if isinstance(t, TimeType):
        return "date_format(current_timestamp(), 'HH:mm:ss')"
    if isinstance(t, (TimestampType, LocalZonedTimestampType)):
        past = _duration_ms(opt("max-past", "0"))
        value = (f"timestamp_millis(unix_millis(current_timestamp()) - "
                 f"CAST(floor(rand() * {past}) AS BIGINT))")
        return value if isinstance(t, LocalZonedTimestampType) else f"CAST({value} AS TIMESTAMP_NTZ)"
    if isinstance(t, RowType):
        inner = ", ".join(f"'{f.name}', {_random(f'{name}.{f.name}', f.data_type, options)}"
                          for f in t.fields)
        return f"CAST(named_struct({inner}) AS {t.spark_ddl()})"
    if isinstance(t, ArrayType):
        element = _random(f"{name}.element", t.element_type, options)
        return f"transform(sequence(1, {int(opt('length', 3))}), i -> {element})"
    if isinstance(t, MapType):
        key = _random(f"{name}.key", t.key_type, options)
        value = _random(f"{name}.value", t.value_type, options)
        keys = f"array_distinct(transform(sequence(1, {int(opt('length', 3))}), i -> {key}))"
        return f"map_from_arrays({keys}, transform({keys}, k -> {value}))"
    raise FlinkSqlError(f"Unsupported type: {t} (field '{name}' of a datagen table)")


def field_expression(name: str, t: DataType, options: dict[str, str]) -> str:
    """The Spark SQL expression of a generated field, over the row's position ``id``."""
    if options.get(f"fields.{name}.kind", "random") == "sequence":
        expr = _sequence(name, t, options)
    else:
        expr = _random(name, t, options)
    rate = options.get(f"fields.{name}.null-rate")
    if rate is not None and float(rate) > 0:
        expr = f"CASE WHEN rand() < {float(rate)!r} THEN NULL ELSE {expr} END"
    return expr


def read_datagen(spark: Any, table: CatalogTable, streaming: bool) -> Any:
    """The generated rows: ``spark.range`` of the row count (BATCH; an unbounded table fails as
    in Flink), or Spark's ``rate`` source at ``rows-per-second`` (STREAMING; a bounded table's
    stream stops producing rows after the last one)."""
    from pyspark.sql import functions as F

    options = table.options
    fields = [(c.name, parse_type(c.type or "")) for c in table.physical_columns]
    count = _row_count(table, fields)
    if streaming:
        rate = int(options.get("rows-per-second", "10000"))
        ids = (spark.readStream.format("rate").option("rowsPerSecond", rate).load()
               .select(F.col("value").alias("id")))
        if count is not None:
            ids = ids.where(F.col("id") < count)
    else:
        if count is None:
            raise FlinkSqlError(f"Querying an unbounded table '{table.name}' in batch mode is "
                                "not allowed. The table source is unbounded.")
        ids = spark.range(0, count, 1, spark.sparkContext.defaultParallelism)
    return ids.select(*[F.expr(field_expression(n, t, options)).alias(n) for n, t in fields])
