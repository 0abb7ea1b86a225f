"""Flink SQL type text (``BIGINT``, ``DECIMAL(10, 2)``, ``ROW<a INT, b ARRAY<STRING>>``,
``TIMESTAMP(3) WITH LOCAL TIME ZONE``, ``INT NOT NULL``) as the Table API's ``DataType``.

A tiny tokenizer and a recursive descent over Flink's type grammar (its ``LogicalTypeParser``):
the text comes from the SQL parser, which keeps a column's type as the user wrote it.
"""

from __future__ import annotations

import re
from typing import Callable

from .types import DataType, DataTypes, RowField

_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|('(?:[^']|'')*')|([A-Za-z_][A-Za-z0-9_$]*)|(\d+)|(\S))")

_SIMPLE: dict[str, Callable[[], DataType]] = {
    "STRING": DataTypes.STRING, "BOOLEAN": DataTypes.BOOLEAN, "BYTES": DataTypes.BYTES,
    "TINYINT": DataTypes.TINYINT, "SMALLINT": DataTypes.SMALLINT, "INT": DataTypes.INT,
    "INTEGER": DataTypes.INT, "BIGINT": DataTypes.BIGINT, "FLOAT": DataTypes.FLOAT,
    "REAL": DataTypes.FLOAT, "DATE": DataTypes.DATE, "NULL": DataTypes.NULL,
}


class _Tokens:
    def __init__(self, text: str) -> None:
        self.text = text
        self.items: list[tuple[str, str]] = []  # (kind, text): name | quoted | word | int | sym
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                break
            pos = m.end()
            for kind, value in zip(("name", "quoted", "word", "int", "sym"), m.groups()):
                if value is not None:
                    self.items.append((kind, value))
        self.i = 0

    def peek(self, offset: int = 0) -> str:
        j = self.i + offset
        return self.items[j][1].upper() if j < len(self.items) else ""

    def take(self) -> tuple[str, str]:
        if self.i >= len(self.items):
            raise self.error("unexpected end")
        self.i += 1
        return self.items[self.i - 1]

    def accept(self, *words: str) -> bool:
        if all(self.peek(k) == w for k, w in enumerate(words)):
            self.i += len(words)
            return True
        return False

    def expect(self, word: str) -> None:
        if not self.accept(word):
            raise self.error(f"'{word}' expected")

    def error(self, what: str) -> ValueError:
        return ValueError(f"Could not parse type at position {self.i} ({what}): {self.text!r}")

    def integer(self) -> int:
        kind, value = self.take()
        if kind != "int":
            raise self.error("a number expected")
        return int(value)


def parse_type(text: str) -> DataType:
    """The DataType of Flink SQL type text; a type Flink does not know raises ValueError."""
    tokens = _Tokens(text)
    t = _type(tokens)
    if tokens.i != len(tokens.items):
        raise tokens.error("unexpected text after the type")
    return t


def _params(tokens: _Tokens, defaults: tuple[int, ...]) -> list[int]:
    """``(a[, b])`` after a type name, or the defaults."""
    if not tokens.accept("("):
        return list(defaults)
    values = [tokens.integer()]
    while tokens.accept(","):
        values.append(tokens.integer())
    tokens.expect(")")
    return values + list(defaults[len(values):])


def _type(tokens: _Tokens) -> DataType:
    t = _base_type(tokens)
    while tokens.peek() in ("ARRAY", "MULTISET") and tokens.peek(1) != "<":
        multiset = tokens.take()[1].upper() == "MULTISET"
        t = DataTypes.MULTISET(t) if multiset else DataTypes.ARRAY(t)
    if tokens.accept("NOT", "NULL"):
        return t.not_null()
    tokens.accept("NULL")
    return t


def _base_type(tokens: _Tokens) -> DataType:
    kind, word = tokens.take()
    name = word.upper()
    if kind != "word":
        raise tokens.error(f"a type name expected, not {word!r}")
    if name in _SIMPLE:
        return _SIMPLE[name]()
    if name == "DOUBLE":
        tokens.accept("PRECISION")
        return DataTypes.DOUBLE()
    if name in ("CHAR", "CHARACTER") and tokens.accept("VARYING"):
        name = "VARCHAR"
    if name in ("CHAR", "CHARACTER"):
        return DataTypes.CHAR(_params(tokens, (1,))[0])
    if name == "VARCHAR":
        return DataTypes.VARCHAR(_params(tokens, (1,))[0])
    if name == "BINARY" and tokens.accept("VARYING"):
        name = "VARBINARY"
    if name == "BINARY":
        return DataTypes.BINARY(_params(tokens, (1,))[0])
    if name == "VARBINARY":
        return DataTypes.VARBINARY(_params(tokens, (1,))[0])
    if name in ("DECIMAL", "DEC", "NUMERIC"):
        precision, scale = _params(tokens, (10, 0))
        return DataTypes.DECIMAL(precision, scale)
    if name == "TIME":
        precision = _params(tokens, (0,))[0]
        tokens.accept("WITHOUT", "TIME", "ZONE")
        return DataTypes.TIME(precision)
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _timestamp(tokens, name)
    if name in ("ARRAY", "MULTISET"):
        tokens.expect("<")
        element = _type(tokens)
        tokens.expect(">")
        return DataTypes.MULTISET(element) if name == "MULTISET" else DataTypes.ARRAY(element)
    if name == "MAP":
        tokens.expect("<")
        key = _type(tokens)
        tokens.expect(",")
        value = _type(tokens)
        tokens.expect(">")
        return DataTypes.MAP(key, value)
    if name == "ROW":
        return _row(tokens)
    raise ValueError(f"The type {word} is not supported here (Flink's data types: "
                        f"https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/table/types/)")


def _timestamp(tokens: _Tokens, name: str) -> DataType:
    precision = _params(tokens, (6,))[0]
    if name == "TIMESTAMP_LTZ" or tokens.accept("WITH", "LOCAL", "TIME", "ZONE"):
        return DataTypes.TIMESTAMP_LTZ(precision)
    if tokens.accept("WITH", "TIME", "ZONE"):
        raise ValueError("TIMESTAMP WITH TIME ZONE is not supported by Flink's planner")
    tokens.accept("WITHOUT", "TIME", "ZONE")
    return DataTypes.TIMESTAMP(precision)


def _row(tokens: _Tokens) -> DataType:
    close = ">" if tokens.accept("<") else ")"
    if close == ")":
        tokens.expect("(")
    fields: list[RowField] = []
    while not tokens.accept(close):
        if fields:
            tokens.expect(",")
        kind, raw = tokens.take()
        name = raw[1:-1].replace("``", "`") if kind == "name" else raw
        field_type = _type(tokens)
        description = None
        if tokens.items[tokens.i:] and tokens.items[tokens.i][0] == "quoted":
            description = tokens.take()[1][1:-1].replace("''", "'")
        fields.append(DataTypes.FIELD(name, field_type, description))
    return DataTypes.ROW(fields)


def spark_type(text: str) -> str:
    """Spark SQL's type for Flink SQL type text (``TIMESTAMP(3)`` -> ``TIMESTAMP_NTZ``)."""
    return parse_type(text).spark_ddl()
