"""The non-equality part of a regular join's ON condition (``o.amount > c.n``), evaluated in
Python on each pair of rows the equality keys match, as Flink's ``StreamingJoinOperator``
evaluates its join condition: a pair joins when the condition is TRUE (SQL's three-valued
logic: a comparison with a null is UNKNOWN, and does not join). Columns, literals, comparisons,
``AND``/``OR``/``NOT``, ``IS [NOT] NULL``, ``BETWEEN``, ``IN`` of literals and ``+ - *`` are
evaluated; another construct is refused naming it."""

from __future__ import annotations

import operator
from typing import Any, Callable

from sqlglot import exp

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


def _binary(op: Callable[[Any, Any], Any], a: Value, b: Value) -> Value:
    def value(left: Row, right: Row) -> Any:
        x, y = a(left, right), b(left, right)
        return None if x is None or y is None else op(x, y)
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
