"""The non-equality part of a regular join's ON condition (``o.amount > c.n``), evaluated in
Python on each pair of rows the equality keys match, as Flink's ``StreamingJoinOperator``
evaluates its join condition: a pair joins when the condition is TRUE (SQL's three-valued
logic: a comparison with a null is UNKNOWN, and does not join). Columns, literals, comparisons,
``AND``/``OR``/``NOT``, ``IS [NOT] NULL``, ``BETWEEN``, ``IN`` of literals and ``+ - *`` are
evaluated; another construct is refused naming it. Operands meet as Flink's implicit casts have
them meet: a text literal compared with a TIMESTAMP, DATE or TIME column is that type's value
(``o.ts > '2024-01-01 10:00:00'``), a DOUBLE with a DECIMAL literal a DOUBLE; a typed literal
(``TIMESTAMP '...'``, ``CAST('...' AS DATE)``) is its value."""

from __future__ import annotations

import datetime
import functools
import operator
from decimal import Decimal
from typing import Any, Callable

from sqlglot import exp

from .dialect import FlinkCast
from .model import FlinkSqlError
from .temporaljoin import PROBE, JoinNames

Row = tuple[Any, ...]
#: a condition's value of a pair (left row, right row): True, False or None (UNKNOWN)
Value = Callable[[Row, Row], Any]

_COMPARISONS: dict[type, Callable[[Any, Any], bool]] = {
    exp.EQ: operator.eq, exp.NEQ: operator.ne, exp.GT: operator.gt, exp.GTE: operator.ge,
    exp.LT: operator.lt, exp.LTE: operator.le, exp.Add: operator.add, exp.Sub: operator.sub,
    exp.Mul: operator.mul}


def pair_condition(terms: list[exp.Expr], names: JoinNames) -> Callable[[Row, Row], bool]:
    """The predicate of a pair (left row, right row) for the AND of ``terms``: True when every
    term is TRUE."""
    values = [_compile(t, names) for t in terms]
    return lambda left, right: all(_truth(v(left, right)) is True for v in values)


def _truth(value: Any) -> bool | None:
    """A condition's value as True, False or None (UNKNOWN); numpy's booleans as Python's."""
    return None if value is None else bool(value)


def _compile(node: exp.Expr, names: JoinNames) -> Value:
    if isinstance(node, exp.Paren):
        return _compile(node.this, names)
    if isinstance(node, exp.Column):
        position = names.position(node)
        index = int(position[len(PROBE):])
        if position.startswith(PROBE):
            return lambda left, right: left[index]
        return lambda left, right: right[index]
    if isinstance(node, (exp.Literal, exp.Boolean, exp.Null)):
        value = None if isinstance(node, exp.Null) else node.to_py()
        return lambda left, right: value
    if isinstance(node, (exp.Cast, FlinkCast)) and isinstance(node.this, exp.Literal) \
            and node.this.is_string:
        typed = _typed_literal(node.this.name, str(node.args["to"].this).upper())
        return lambda left, right: typed
    if type(node) in _COMPARISONS:
        return _binary(_COMPARISONS[type(node)], _compile(node.this, names),
                       _compile(node.expression, names))
    if isinstance(node, (exp.And, exp.Or)):
        return _logical(isinstance(node, exp.And), _compile(node.this, names),
                        _compile(node.expression, names))
    if isinstance(node, exp.Not):
        inner = _compile(node.this, names)
        return lambda left, right: None if (v := _truth(inner(left, right))) is None else not v
    if isinstance(node, exp.Neg):
        inner = _compile(node.this, names)
        return lambda left, right: None if (v := inner(left, right)) is None else -v
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        inner = _compile(node.this, names)
        return lambda left, right: inner(left, right) is None
    if isinstance(node, exp.Between):
        between = exp.and_(exp.GTE(this=node.this.copy(), expression=node.args["low"].copy()),
                           exp.LTE(this=node.this.copy(), expression=node.args["high"].copy()))
        return _compile(between, names)
    if isinstance(node, exp.In) and node.expressions and not node.args.get("query"):
        return _in(_compile(node.this, names), [_compile(e, names) for e in node.expressions])
    raise FlinkSqlError(
        f"A join condition '{node.sql()}' ({type(node).__name__}) of a join of an updating "
        "query is not supported by sessioncluster in STREAMING mode: it evaluates columns, "
        "literals, comparisons, AND/OR/NOT, IS NULL, BETWEEN, IN and + - * on each pair of "
        "rows (Flink docs: Joins / Regular Joins)")


@functools.lru_cache(maxsize=256)
def _typed_literal(text: str, type_name: str) -> Any:
    """The value of a literal of a temporal type (``TIMESTAMP '2024-01-01 10:00:00'``)."""
    try:
        if "TIME" in type_name and ("STAMP" in type_name or "TZ" in type_name):
            return datetime.datetime.fromisoformat(text.strip())
        if type_name.startswith("DATE"):
            return datetime.date.fromisoformat(text.strip())
        if type_name.startswith("TIME"):
            return datetime.time.fromisoformat(text.strip())
    except ValueError as exc:
        raise FlinkSqlError(f"'{text}' is not a {type_name} literal: {exc}") from None
    raise FlinkSqlError(f"A {type_name} literal in a join condition of a join of an updating "
                        "query is not supported by sessioncluster in STREAMING mode")


def _coerced(x: Any, y: Any) -> tuple[Any, Any]:
    """``x`` and ``y`` as Flink's implicit casts make them meet (see the module's docstring)."""
    if isinstance(x, str) != isinstance(y, str):
        text, other = (x, y) if isinstance(x, str) else (y, x)
        if isinstance(other, (datetime.datetime, datetime.date, datetime.time)):
            kind = "TIMESTAMP" if isinstance(other, datetime.datetime) else \
                "DATE" if isinstance(other, datetime.date) else "TIME"
            parsed = _typed_literal(text, kind)
            return (parsed, y) if isinstance(x, str) else (x, parsed)
    if isinstance(x, float) and isinstance(y, Decimal):
        return x, float(y)
    if isinstance(x, Decimal) and isinstance(y, float):
        return float(x), y
    return x, y


def _binary(op: Callable[[Any, Any], Any], a: Value, b: Value) -> Value:
    def value(left: Row, right: Row) -> Any:
        x, y = a(left, right), b(left, right)
        return None if x is None or y is None else op(*_coerced(x, y))
    return value


def _logical(conjunction: bool, a: Value, b: Value) -> Value:
    def value(left: Row, right: Row) -> Any:
        x, y = _truth(a(left, right)), _truth(b(left, right))
        if conjunction:
            return False if x is False or y is False else None if x is None or y is None \
                else True
        return True if x is True or y is True else None if x is None or y is None else False
    return value


def _in(a: Value, options: list[Value]) -> Value:
    def value(left: Row, right: Row) -> Any:
        x = a(left, right)
        found = [o(left, right) for o in options]
        if x is None:
            return None
        return True if x in [f for f in found if f is not None] else \
            None if None in found else False
    return value
