"""The JSON part of PyFlink's expression DSL: the enums of ``pyflink.table.expression`` and the
Flink SQL text of the JSON functions (of an Expression's ``is_json``/``json_exists``/
``json_value``/``json_query``, of ``json_object``/``json_array`` and of the aggregates
``json_object_agg``/``json_array_agg``), from rendered operands."""

from __future__ import annotations

from enum import Enum

from .types import DataType


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


def is_json_sql(x: str, json_type: JsonType | None) -> str:
    """``x IS JSON [type]``."""
    return f"{x} IS JSON" + (f" {json_type.name}" if json_type is not None else "")


def json_exists_sql(x: str, path: str, on_error: JsonExistsOnError | None) -> str:
    """``JSON_EXISTS(x, path [... ON ERROR])``."""
    error = f" {on_error.name} ON ERROR" if on_error is not None else ""
    return f"JSON_EXISTS({x}, {_string(path)}{error})"


def value_behaviour(word: JsonValueOnEmptyOrError, default: str) -> str:
    """``NULL``, ``ERROR`` or ``DEFAULT <default>`` (``default``: rendered)."""
    return f"DEFAULT {default}" if word is JsonValueOnEmptyOrError.DEFAULT else word.name


def json_value_sql(x: str, path: str, returning_type: DataType, on_empty: str,
                   on_error: str) -> str:
    """``JSON_VALUE(x, path RETURNING <type> <on_empty> ON EMPTY <on_error> ON ERROR)``."""
    return (f"JSON_VALUE({x}, {_string(path)} RETURNING {returning_type} {on_empty} ON EMPTY "
            f"{on_error} ON ERROR)")


_WRAPPERS = {JsonQueryWrapper.WITHOUT_ARRAY: "WITHOUT",
             JsonQueryWrapper.CONDITIONAL_ARRAY: "WITH CONDITIONAL",
             JsonQueryWrapper.UNCONDITIONAL_ARRAY: "WITH UNCONDITIONAL"}


def json_query_sql(x: str, path: str, wrapper: JsonQueryWrapper,
                   on_empty: JsonQueryOnEmptyOrError, on_error: JsonQueryOnEmptyOrError) -> str:
    """``JSON_QUERY(x, path <wrapper> ARRAY WRAPPER ... ON EMPTY ... ON ERROR)``."""
    empty, error = (b.name.replace("_", " ") for b in (on_empty, on_error))
    return (f"JSON_QUERY({x}, {_string(path)} {_WRAPPERS[wrapper]} ARRAY WRAPPER {empty} ON "
            f"EMPTY {error} ON ERROR)")


def json_constructor_sql(function: str, items: list[str], on_null: JsonOnNull) -> str:
    """``JSON_OBJECT``'s (``items``: rendered keys and values alternately) or
    ``JSON_ARRAY``'s Flink SQL."""
    if function == "JSON_OBJECT":
        if len(items) % 2:
            raise ValueError("json_object() takes keys and values in pairs")
        items = [f"KEY {k} VALUE {v}" for k, v in zip(items[::2], items[1::2], strict=True)]
    return f"{function}({' '.join([', '.join(items), f'{on_null.name} ON NULL']).strip()})"


def json_object_agg_sql(key: str, value: str, on_null: JsonOnNull) -> str:
    """``JSON_OBJECTAGG(KEY key VALUE value <on_null> ON NULL)``."""
    return f"JSON_OBJECTAGG(KEY {key} VALUE {value} {on_null.name} ON NULL)"


def json_array_agg_sql(item: str, on_null: JsonOnNull) -> str:
    """``JSON_ARRAYAGG(item <on_null> ON NULL)``."""
    return f"JSON_ARRAYAGG({item} {on_null.name} ON NULL)"
