"""Flink's ``print`` and ``blackhole`` sinks: a row printed as Flink prints it (``+I[a, 1]``, the
values as Java's ``toString`` writes them), behind ``print-identifier`` and the subtask."""

from __future__ import annotations

import datetime
import math
import sys
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable

from ....api.formats.base import java_double
from ..model import CatalogTable


def _java_fraction(micros: int, nanos: int = 0) -> str:
    """Java's fraction of a second: in groups of three digits (``.123``, ``.123400``)."""
    total = micros * 1000 + nanos
    if total == 0:
        return ""
    digits = f"{total:09d}"
    for width in (3, 6):
        if digits[width:] == "0" * (9 - width):
            return "." + digits[:width]
    return "." + digits


def java_local_time(value: datetime.time) -> str:
    """``LocalTime.toString``: ``08:00`` (no zero seconds), ``08:00:01``, ``08:00:00.123``."""
    text = f"{value.hour:02d}:{value.minute:02d}"
    if value.second or value.microsecond:
        text += f":{value.second:02d}{_java_fraction(value.microsecond)}"
    return text


def java_text(value: Any) -> str:
    """A value as Flink's ``Row.toString`` writes it (Java's ``toString`` of the external type:
    ``LocalDateTime`` ``2026-11-24T08:00``, ``Instant`` ``...Z``, ``byte[]`` ``[1, -1]``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, JavaFloat) and not (math.isnan(value) or math.isinf(value)):
        return java_float(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        return java_double(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:  # an Instant: always with seconds
            utc = value.astimezone(datetime.timezone.utc)
            return (f"{utc:%Y-%m-%dT%H:%M:%S}{_java_fraction(utc.microsecond)}Z")
        return f"{value.date().isoformat()}T{java_local_time(value.time())}"
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, datetime.time):
        return java_local_time(value)
    if isinstance(value, (bytes, bytearray)):
        return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{java_text(k)}={java_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple) and hasattr(value, "asDict"):  # a nested row (a Spark Row)
        return format_row(list(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(java_text(v) for v in value) + "]"
    return str(value)


class JavaFloat(float):
    """A FLOAT column's value: Java's ``Float.toString`` writes the float's own shortest
    digits (``130.1``), not the double's (``130.10000610351562``)."""


def java_float(x: float) -> str:
    """A float as Java's ``Float.toString``: the float32's shortest digits, in ``Double``'s
    layout."""
    import numpy as np

    return java_double(float(str(np.float32(x))))


def value_fixers(schema: Any) -> list[Callable[[Any], Any] | None]:
    """Per column of a Spark schema, what makes its collected values print as Flink prints
    them: a FLOAT as a float, a TIMESTAMP_LTZ (Spark's local-time TIMESTAMP) as an Instant."""
    from pyspark.sql.types import FloatType, TimestampType

    def instant(value: Any) -> Any:
        return value.astimezone(datetime.timezone.utc) if isinstance(
            value, datetime.datetime) and value.tzinfo is None else value

    def single(value: Any) -> Any:
        return JavaFloat(value) if isinstance(value, float) else value

    return [instant if isinstance(f.dataType, TimestampType) else
            single if isinstance(f.dataType, FloatType) else None for f in schema.fields]


def fixed(values: list[Any], fixers: list[Callable[[Any], Any] | None]) -> list[Any]:
    """``values`` with each column's fixer applied (:func:`value_fixers`)."""
    return [v if fix is None or v is None else fix(v) for v, fix in zip(values, fixers)]


def format_row(values: list[Any], kind: str = "+I") -> str:
    """A row as Flink's ``Row.toString``: ``+I[alice, 1]`` (kind ``+I``, ``-U``, ``+U``, ``-D``)."""
    return f"{kind}[{', '.join(java_text(v) for v in values)}]"


def print_prefix(identifier: str, subtask: int, parallelism: int) -> str:
    """Flink's print sink prefix: ``id:<subtask+1>> `` with parallelism > 1, ``id> ``, ``3> ``
    or nothing."""
    prefix = identifier
    if parallelism > 1:
        prefix = f"{prefix}:{subtask + 1}" if prefix else str(subtask + 1)
    return f"{prefix}> " if prefix else ""


def print_lines(df: Any, table: CatalogTable) -> list[str]:
    """The lines Flink's ``print`` sink prints for ``df``'s rows (BATCH: every row ``+I``), in
    subtask order; the sink's parallelism is ``sink.parallelism`` or the DataFrame's partitions."""
    options = table.options
    if "sink.parallelism" in options:
        df = df.repartition(int(options["sink.parallelism"]))
    parallelism = df.rdd.getNumPartitions()
    identifier = options.get("print-identifier", "")
    fixers = value_fixers(df.schema)

    def lines(index: int, rows: Any) -> Any:
        prefix = print_prefix(identifier, index, parallelism)
        return (prefix + format_row(fixed(list(row), fixers)) for row in rows)

    return df.rdd.mapPartitionsWithIndex(lines).collect()


@dataclass(slots=True)
class PrintedLines:
    """What a statement's ``print`` sinks printed, for the client that waits for it (as an
    attached DataStream job's ``print()`` lines): standard out's and standard error's."""

    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)

    def add(self, table: CatalogTable, lines: list[str]) -> None:
        (self.err if to_standard_error(table) else self.out).extend(lines)


def to_standard_error(table: CatalogTable) -> bool:
    """True when the ``print`` table prints to standard error (``'standard-error' = 'true'``)."""
    return table.options.get("standard-error", "false").lower() == "true"


def write_print(df: Any, table: CatalogTable) -> list[str]:
    """Print ``df``'s rows to standard out (or standard error with ``standard-error``) as
    Flink's print sink does; the lines printed."""
    printed = print_lines(df, table)
    print_to_standard(table, printed)
    return printed


def print_to_standard(table: CatalogTable, lines: list[str]) -> None:
    """Print the ``print`` table's lines to this process's standard out or error."""
    out = sys.stderr if to_standard_error(table) else sys.stdout
    for line in lines:
        print(line, file=out)
    out.flush()


def write_blackhole(df: Any) -> int:
    """Consume every row and discard it (Flink's ``blackhole``); how many rows."""
    return int(df.count())
