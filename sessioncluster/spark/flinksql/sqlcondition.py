"""A SQL condition evaluated in Python with SQL's three-valued logic (a comparison with a NULL
is UNKNOWN, ``None``): the updating join's non-equality condition on each pair of rows
(:mod:`.joincondition`) and MATCH_RECOGNIZE's DEFINE on each row tried (:mod:`.matchexpr`).

Literals, comparisons, ``+ - * / %`` (``/`` of integers is Java's, truncated, ``%`` keeps the
dividend's sign), ``AND``/``OR``/``NOT``, ``IS NULL``, ``BETWEEN``, ``IN``, ``CASE``/``IF`` and
the common scalar functions (:mod:`.sqlfunctions`) are evaluated; the caller's ``leaf``
reads its own nodes (a join's columns, a match's atoms); anything else is refused with the
caller's message. Operands meet as Flink's implicit casts have them meet: a text literal
compared with a TIMESTAMP, DATE or TIME is that type's value (``o.ts > '2024-01-01
10:00:00'``), a DOUBLE with a DECIMAL a DOUBLE; a typed literal (``TIMESTAMP '...'``,
``CAST('...' AS DATE)``) is its value.
"""

from __future__ import annotations

import datetime
import functools
import operator
from decimal import Decimal
from typing import Any, Callable

from sqlglot import exp

from .dialect import FlinkCast
from .model import FlinkSqlError
from .sqlfunctions import Function, java_mod, scalar_function

#: a condition's value in the caller's context (a pair of rows, a match's atom values):
#: True, False, None (UNKNOWN), or an operand's value
Evaluator = Callable[[Any], Any]
#: the caller's evaluator of a node of its own, or None for a node of SQL's
Leaf = Callable[[exp.Expr], "Evaluator | None"]


def java_divide(a: Any, b: Any) -> Any:
    """``a / b``; of two integers Java's, truncated toward zero."""
    if isinstance(a, int) and isinstance(b, int):  # Java's integer division: toward zero
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b > 0) else -q
    return a / b


_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    exp.EQ: operator.eq, exp.NEQ: operator.ne, exp.GT: operator.gt, exp.GTE: operator.ge,
    exp.LT: operator.lt, exp.LTE: operator.le, exp.Add: operator.add, exp.Sub: operator.sub,
    exp.Mul: operator.mul, exp.Div: java_divide, exp.Mod: java_mod,
}


def compile_condition(node: exp.Expr, leaf: Leaf, refusal: Callable[[exp.Expr], str]
                      ) -> Evaluator:
    """``node`` as a function of the caller's context; FlinkSqlError(``refusal(node)``) for a
    node neither SQL's above nor the caller's."""
    own = leaf(node)
    if own is not None:
        return own
    if isinstance(node, exp.Paren):
        return compile_condition(node.this, leaf, refusal)
    if isinstance(node, (exp.Literal, exp.Boolean, exp.Null)):
        value = None if isinstance(node, exp.Null) else node.to_py()
        return lambda context: value
    if isinstance(node, (exp.Cast, FlinkCast)) and isinstance(node.this, exp.Literal) \
            and node.this.is_string:
        to = node.args["to"].this  # sqlglot's type (DATE '...') or the Flink dialect's
        typed = typed_literal(node.this.name, to.value if isinstance(to, exp.DataType.Type)
                              else str(to).upper())
        return lambda context: typed
    if isinstance(node, (exp.And, exp.Or)):
        return _logical(isinstance(node, exp.And), compile_condition(node.this, leaf, refusal),
                        compile_condition(node.expression, leaf, refusal))
    if isinstance(node, (exp.Not, exp.Neg)):
        inner = compile_condition(node.this, leaf, refusal)
        if isinstance(node, exp.Not):
            return lambda context: None if (v := truth(inner(context))) is None else not v
        return lambda context: None if (v := inner(context)) is None else -v
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        inner = compile_condition(node.this, leaf, refusal)
        return lambda context: inner(context) is None
    if isinstance(node, exp.Between):
        between = exp.and_(exp.GTE(this=node.this.copy(), expression=node.args["low"].copy()),
                           exp.LTE(this=node.this.copy(), expression=node.args["high"].copy()))
        return compile_condition(between, leaf, refusal)
    if isinstance(node, exp.In) and node.expressions and not node.args.get("query"):
        return _in(compile_condition(node.this, leaf, refusal),
                   [compile_condition(e, leaf, refusal) for e in node.expressions])
    function = _BINARY.get(type(node))
    if function is not None:
        return _binary(function, compile_condition(node.this, leaf, refusal),
                       compile_condition(node.expression, leaf, refusal))
    if isinstance(node, (exp.Case, exp.If)):
        return _case(node, leaf, refusal)
    called = scalar_function(node)
    if called is not None:
        return _call(called[0], [compile_condition(o, leaf, refusal) for o in called[1]],
                     called[2])
    raise FlinkSqlError(refusal(node))


def truth(value: Any) -> bool | None:
    """A condition's value as True, False or None (UNKNOWN); numpy's booleans as Python's."""
    return None if value is None else bool(value)


@functools.lru_cache(maxsize=256)
def typed_literal(text: str, type_name: str) -> Any:
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
    raise FlinkSqlError(f"A {type_name} literal in a condition evaluated by sessioncluster is "
                        "not supported")


def _coerced(x: Any, y: Any) -> tuple[Any, Any]:
    """``x`` and ``y`` as Flink's implicit casts make them meet (see the module's docstring)."""
    if isinstance(x, str) != isinstance(y, str):
        text, other = (x, y) if isinstance(x, str) else (y, x)
        if isinstance(other, (datetime.datetime, datetime.date, datetime.time)):
            kind = "TIMESTAMP" if isinstance(other, datetime.datetime) else \
                "DATE" if isinstance(other, datetime.date) else "TIME"
            parsed = typed_literal(text, kind)
            return (parsed, y) if isinstance(x, str) else (x, parsed)
    if isinstance(x, float) and isinstance(y, Decimal):
        return x, float(y)
    if isinstance(x, Decimal) and isinstance(y, float):
        return float(x), y
    return x, y


def _binary(op: Callable[[Any, Any], Any], a: Evaluator, b: Evaluator) -> Evaluator:
    def value(context: Any) -> Any:
        x, y = a(context), b(context)
        return None if x is None or y is None else op(*_coerced(x, y))
    return value


def _call(function: Function, operands: list[Evaluator], strict: bool) -> Evaluator:
    def value(context: Any) -> Any:
        values = [o(context) for o in operands]
        return None if strict and None in values else function(*values)
    return value


def _case(node: exp.Case | exp.If, leaf: Leaf, refusal: Callable[[exp.Expr], str]
          ) -> Evaluator:
    """``CASE [x] WHEN ... THEN ... [ELSE ...] END`` and ``IF(c, a, b)``: the first branch
    whose condition is TRUE (``x = ...`` for a simple CASE)."""
    def compiled(n: exp.Expr | None) -> Evaluator:
        return compile_condition(n, leaf, refusal) if n is not None else lambda context: None
    if isinstance(node, exp.If):
        branches = [(compiled(node.this), compiled(node.args.get("true")))]
        otherwise, subject = compiled(node.args.get("false")), None
    else:
        branches = [(compiled(b.this), compiled(b.args.get("true"))) for b in node.args["ifs"]]
        otherwise = compiled(node.args.get("default"))
        subject = compiled(node.this) if node.this is not None else None

    def value(context: Any) -> Any:
        x = subject(context) if subject is not None else None
        for when, then in branches:
            w = when(context)
            hit = (x is not None and w is not None and _coerced(x, w)[0] == _coerced(x, w)[1]) \
                if subject is not None else truth(w) is True
            if hit:
                return then(context)
        return otherwise(context)
    return value


def _logical(conjunction: bool, a: Evaluator, b: Evaluator) -> Evaluator:
    """SQL's AND / OR over true, false and unknown (None); the second operand is not evaluated
    when the first decides."""
    decisive = not conjunction

    def value(context: Any) -> Any:
        x = truth(a(context))
        if x is decisive:
            return decisive
        y = truth(b(context))
        if y is decisive:
            return decisive
        return None if x is None or y is None else conjunction
    return value


def _in(a: Evaluator, options: list[Evaluator]) -> Evaluator:
    def value(context: Any) -> Any:
        x = a(context)
        found = [o(context) for o in options]
        if x is None:
            return None
        return True if x in [f for f in found if f is not None] else \
            None if None in found else False
    return value
