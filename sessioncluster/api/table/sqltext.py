"""Flink SQL text of the Table API: quoted identifiers and strings, Python values as
literals, and the :class:`RenderContext` an expression renders against."""

from __future__ import annotations

import datetime
import decimal
from dataclasses import dataclass, field
from typing import Any, Callable


def quote_identifier(name: str) -> str:
    """``name`` as a Flink SQL identifier in backticks (a backtick doubled)."""
    return "`" + name.replace("`", "``") + "`"


def quote_path(path: str) -> str:
    """A dotted table path (``cat.db.t``) with each part quoted."""
    return ".".join(quote_identifier(p) for p in path.split("."))


def quote_string(text: str) -> str:
    """``text`` as a Flink SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


@dataclass
class RenderContext:
    """What an expression needs from the operation it appears in."""

    #: the alias of the group window (``Tumble...alias('w')``) of a window aggregation
    window_alias: str | None = None
    #: the OVER clause of each over window, by alias
    over_windows: dict[str, str] = field(default_factory=dict)
    #: the column names of the table the operation reads, fetched when an expression needs
    #: them (``with_columns``/``without_columns``)
    columns: Callable[[], list[str]] | None = None
    #: aggregate calls and window properties in the order met, numbered as Flink's Table API
    #: numbers them (an unaliased one is the column ``EXPR$<n>``)
    named_calls: dict[str, int] = field(default_factory=dict)

    def note(self, text: str) -> str:
        """Number the aggregate or window property ``text`` (once); give it back."""
        self.named_calls.setdefault(text, len(self.named_calls))
        return text


Renderer = Callable[[RenderContext], str]


def literal_sql(value: Any) -> str:
    """A Python value as a Flink SQL literal (PyFlink's ``lit`` types: int -> INT, float ->
    DOUBLE, str -> STRING, ...)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return f"CAST({quote_string(repr(value).replace('inf', 'Infinity'))} AS DOUBLE)"
        return f"{value!r}E0" if "e" not in repr(value) else repr(value).upper()
    if isinstance(value, decimal.Decimal):
        return f"{value:f}"
    if isinstance(value, str):
        return quote_string(value)
    if isinstance(value, (bytes, bytearray)):
        return f"X'{bytes(value).hex()}'"
    if isinstance(value, datetime.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, datetime.time):
        return f"TIME '{value.isoformat()}'"
    if isinstance(value, (list, tuple)):
        return f"ARRAY[{', '.join(literal_sql(v) for v in value)}]"
    if isinstance(value, dict):
        items = ", ".join(f"{literal_sql(k)}, {literal_sql(v)}" for k, v in value.items())
        return f"MAP[{items}]"
    raise TypeError(f"lit() cannot make a Flink SQL literal of {type(value).__name__} {value!r}")
