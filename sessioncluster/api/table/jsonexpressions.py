"""The JSON part of PyFlink's expression DSL: the enums of ``pyflink.table.expression`` and the
``is_json``/``json_exists``/``json_value``/``json_query`` methods of an Expression, rendered as
Flink SQL's JSON functions."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

from .types import DataType, DataTypes

if TYPE_CHECKING:
    from .expressions import Expression, RenderContext


class JsonType(Enum):
    """Types of JSON for ``is_json()``."""

    VALUE = 0
    SCALAR = 1
    ARRAY = 2
    OBJECT = 3


class JsonExistsOnError(Enum):
    """Behaviour of ``json_exists()`` on errors."""

    TRUE = 0
    FALSE = 1
    UNKNOWN = 2
    ERROR = 3


class JsonValueOnEmptyOrError(Enum):
    """Behaviour of ``json_value()`` on emptiness or errors."""

    NULL = 0
    ERROR = 1
    DEFAULT = 2


class JsonQueryWrapper(Enum):
    """Whether and when ``json_query()`` wraps its result into an array."""

    WITHOUT_ARRAY = 0
    CONDITIONAL_ARRAY = 1
    UNCONDITIONAL_ARRAY = 2


class JsonQueryOnEmptyOrError(Enum):
    """Behaviour of ``json_query()`` on emptiness or errors."""

    NULL = 0
    EMPTY_ARRAY = 1
    EMPTY_OBJECT = 2
    ERROR = 3


class JsonOnNull(Enum):
    """Behaviour of ``json_object()``/``json_array()`` for NULL values."""

    NULL = 0
    ABSENT = 1


def _string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _words(behaviour: Enum) -> str:
    return behaviour.name.replace("_", " ")


class JsonMethods:
    """The JSON methods of :class:`~.expressions.Expression`."""

    def _json(self: "Expression", render: Any) -> "Expression":
        return type(self)(render)

    def is_json(self: "Expression", json_type: JsonType | None = None) -> "Expression":
        """``self IS JSON [VALUE|SCALAR|ARRAY|OBJECT]``."""
        kind = f" {json_type.name}" if json_type is not None else ""
        return self._json(lambda c: f"{self.to_sql(c)} IS JSON{kind}")

    def json_exists(self: "Expression", path: str,
                    on_error: JsonExistsOnError | None = None) -> "Expression":
        """``JSON_EXISTS(self, path [... ON ERROR])``."""
        error = f" {on_error.name} ON ERROR" if on_error is not None else ""
        return self._json(lambda c: f"JSON_EXISTS({self.to_sql(c)}, {_string(path)}{error})")

    def json_value(self: "Expression", path: str,
                   returning_type: DataType = DataTypes.STRING(),
                   on_empty: JsonValueOnEmptyOrError = JsonValueOnEmptyOrError.NULL,
                   default_on_empty: Any = None,
                   on_error: JsonValueOnEmptyOrError = JsonValueOnEmptyOrError.NULL,
                   default_on_error: Any = None) -> "Expression":
        """``JSON_VALUE(self, path RETURNING <type> ... ON EMPTY ... ON ERROR)``."""
        from .expressions import to_expr

        def behaviour(word: JsonValueOnEmptyOrError, default: Any, c: "RenderContext") -> str:
            if word is JsonValueOnEmptyOrError.DEFAULT:
                return f"DEFAULT {to_expr(default).to_sql(c)}"
            return word.name

        return self._json(lambda c: (
            f"JSON_VALUE({self.to_sql(c)}, {_string(path)} RETURNING {returning_type} "
            f"{behaviour(on_empty, default_on_empty, c)} ON EMPTY "
            f"{behaviour(on_error, default_on_error, c)} ON ERROR)"))

    def json_query(self: "Expression", path: str,
                   wrapping_behavior: JsonQueryWrapper = JsonQueryWrapper.WITHOUT_ARRAY,
                   on_empty: JsonQueryOnEmptyOrError = JsonQueryOnEmptyOrError.NULL,
                   on_error: JsonQueryOnEmptyOrError = JsonQueryOnEmptyOrError.NULL
                   ) -> "Expression":
        """``JSON_QUERY(self, path <wrapper> ... ON EMPTY ... ON ERROR)``."""
        wrapper = {JsonQueryWrapper.WITHOUT_ARRAY: "WITHOUT",
                   JsonQueryWrapper.CONDITIONAL_ARRAY: "WITH CONDITIONAL",
                   JsonQueryWrapper.UNCONDITIONAL_ARRAY: "WITH UNCONDITIONAL"}[wrapping_behavior]
        return self._json(lambda c: (
            f"JSON_QUERY({self.to_sql(c)}, {_string(path)} {wrapper} ARRAY WRAPPER "
            f"{_words(on_empty)} ON EMPTY {_words(on_error)} ON ERROR)"))


def json_constructor_sql(function: str, items: list[str], on_null: JsonOnNull) -> str:
    """``JSON_OBJECT``'s (``items``: rendered keys and values alternately) or
    ``JSON_ARRAY``'s Flink SQL."""
    if function == "JSON_OBJECT":
        if len(items) % 2:
            raise ValueError("json_object() takes keys and values in pairs")
        items = [f"KEY {k} VALUE {v}" for k, v in zip(items[::2], items[1::2], strict=True)]
    return f"{function}({' '.join([', '.join(items), f'{on_null.name} ON NULL']).strip()})"
