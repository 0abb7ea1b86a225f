"""Flink SQL type text (``TIMESTAMP(3)``, ``ROW<a INT, b STRING> NOT NULL``) to ``DataType``."""

from __future__ import annotations

from typing import Any

from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from sessioncluster.api.table.types import DataType, DataTypes, RowField
from sessioncluster.spark.flinksql.dialect import Flink
from sessioncluster.spark.flinksql.model import FlinkSqlError


def data_type(text: str) -> DataType:
    """The Table API type of Flink SQL type text; FlinkSqlError for text that is not a type."""
    try:
        tokens = Flink().tokenize(text)
    except TokenError as e:
        raise FlinkSqlError(f"Invalid data type '{text}': {e}") from None
    reader = _TypeReader(text, tokens)
    result = reader.type()
    if reader.peek() is not None:
        raise reader.fail()
    return result


def spark_type(text: str) -> str:
    """Spark SQL's type for Flink SQL type text (``TIMESTAMP(3)`` -> ``TIMESTAMP_NTZ``)."""
    return data_type(text).spark_ddl()


_SIMPLE = {
    "STRING": DataTypes.STRING, "BOOLEAN": DataTypes.BOOLEAN, "BYTES": DataTypes.BYTES,
    "TINYINT": DataTypes.TINYINT, "SMALLINT": DataTypes.SMALLINT, "INT": DataTypes.INT,
    "INTEGER": DataTypes.INT, "BIGINT": DataTypes.BIGINT, "FLOAT": DataTypes.FLOAT,
    "REAL": DataTypes.FLOAT, "DOUBLE": DataTypes.DOUBLE, "DOUBLE PRECISION": DataTypes.DOUBLE,
    "DATE": DataTypes.DATE,
    "NULL": DataTypes.NULL,
}
_SIZED = {"CHAR": DataTypes.CHAR, "VARCHAR": DataTypes.VARCHAR, "BINARY": DataTypes.BINARY,
          "VARBINARY": DataTypes.VARBINARY}


class _TypeReader:
    """Recursive descent over the tokens of one type."""

    def __init__(self, text: str, tokens: list[Token]) -> None:
        self.text = text
        self.tokens = tokens
        self.i = 0

    def peek(self, ahead: int = 0) -> Token | None:
        j = self.i + ahead
        return self.tokens[j] if j < len(self.tokens) else None

    def word(self, ahead: int = 0) -> str:
        token = self.peek(ahead)
        return token.text.upper() if token is not None else ""

    def fail(self) -> FlinkSqlError:
        token = self.peek()
        where = f'"{token.text}" at column {token.start + 1}' if token else "the end"
        return FlinkSqlError(f"Invalid data type '{self.text}': unexpected {where}")

    def take(self, *words: str) -> bool:
        if all(self.word(k) == w for k, w in enumerate(words)):
            self.i += len(words)
            return True
        return False

    def expect(self, kind: TokenType) -> Token:
        token = self.peek()
        if token is None or token.token_type != kind:
            raise self.fail()
        self.i += 1
        return token

    def integers(self) -> list[int]:
        if not self.peek() or self.peek().token_type != TokenType.L_PAREN:  # type: ignore[union-attr]
            return []
        self.i += 1
        values = [int(self.expect(TokenType.NUMBER).text)]
        while self.peek() and self.peek().token_type == TokenType.COMMA:  # type: ignore[union-attr]
            self.i += 1
            values.append(int(self.expect(TokenType.NUMBER).text))
        self.expect(TokenType.R_PAREN)
        return values

    def type(self) -> DataType:
        result = self.base()
        if self.take("NOT", "NULL"):
            return result.not_null()
        self.take("NULL")
        return result

    def base(self) -> DataType:
        name = self.word()
        if not name:
            raise self.fail()
        self.i += 1
        if name in _SIMPLE:
            if name == "DOUBLE":
                self.take("PRECISION")
            simple: Any = _SIMPLE[name]
            return simple()
        if name in _SIZED:
            args = self.integers()
            return _SIZED[name](args[0] if args else 1)
        if name in ("DECIMAL", "DEC", "NUMERIC"):
            args = self.integers() or [10]
            return DataTypes.DECIMAL(args[0], args[1] if len(args) > 1 else 0)
        if name in ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ"):
            return self.temporal(name)
        if name in ("ARRAY", "MAP", "MULTISET"):
            return self.collection(name)
        if name == "ROW":
            return self.row()
        self.i -= 1
        raise self.fail()

    def temporal(self, name: str) -> DataType:
        args = self.integers()
        if name == "TIME":
            self.take("WITHOUT", "TIME", "ZONE")
            return DataTypes.TIME(args[0] if args else 0)
        precision = args[0] if args else 6
        if name == "TIMESTAMP_LTZ" or self.take("WITH", "LOCAL", "TIME", "ZONE"):
            return DataTypes.TIMESTAMP_LTZ(precision)
        self.take("WITHOUT", "TIME", "ZONE")
        return DataTypes.TIMESTAMP(precision)

    def collection(self, name: str) -> DataType:
        self.expect(TokenType.LT)
        first = self.type()
        if name == "MAP":
            self.expect(TokenType.COMMA)
            second = self.type()
            self.expect(TokenType.GT)
            return DataTypes.MAP(first, second)
        self.expect(TokenType.GT)
        if name == "MULTISET":
            return DataTypes.MAP(first, DataTypes.INT().not_null())
        return DataTypes.ARRAY(first)

    def row(self) -> DataType:
        token = self.peek()
        if token is None or token.token_type not in (TokenType.LT, TokenType.L_PAREN):
            raise self.fail()
        close = TokenType.GT if token.token_type == TokenType.LT else TokenType.R_PAREN
        self.i += 1
        fields: list[RowField] = []
        while self.peek() is not None and self.peek().token_type != close:  # type: ignore[union-attr]
            if fields:
                self.expect(TokenType.COMMA)
            name = self.peek()
            if name is None:
                raise self.fail()
            self.i += 1
            field_type = self.type()
            description = None
            if self.peek() is not None and self.peek().token_type == TokenType.STRING:  # type: ignore[union-attr]
                description = self.expect(TokenType.STRING).text
            fields.append(RowField(name.text, field_type, description))
        self.expect(close)
        return DataTypes.ROW(fields)
