"""Flink's (Calcite's) refusal of an expression whose operators do not take its operands' types.

Pure (no Spark), over :mod:`.flinktypes`: an operator is refused only where all its operands'
types are known here and Calcite's operand checks (Flink turns implicit coercion off) take none
of them: ``+ - * / %`` of a non-number (but a date or time and an INTERVAL), ``AND``/``OR``/
``NOT`` of a non-BOOLEAN, ``UPPER``/``LOWER``/``INITCAP`` of a non-string, ``||`` of other
than two strings or two binaries, ``TO_TIMESTAMP`` of a non-string (Flink 2.3:
/work/briefs/data/sqlsmall/probe_small.out, ``Cannot apply '+' to arguments of type
'<VARCHAR(2147483647)> + <INTEGER>'``). A NULL literal is taken by all.
"""

from __future__ import annotations

from typing import Callable, Sequence

from sqlglot import exp

from ...api.table.types import (
    BinaryType,
    BooleanType,
    CharType,
    DataType,
    NullType,
    NumericType,
)
from .flinktypes import Context, infer

#: a check of an operator's operand types (all known): True where Calcite takes them
Check = Callable[[Sequence[DataType]], bool]


def refused_operator(tree: exp.Expr, context: Context) -> exp.Expr | None:
    """The first operator of ``tree`` (inner ones first) Flink refuses for its operands'
    types; None when none is refused here."""
    for node in tree.walk(bfs=False):
        operands, check = _operands(node)
        if check is None or not operands:
            continue
        types = [infer(o, context) for o in operands]
        known = [t for t in types if t is not None and not isinstance(t, NullType)]
        if len(known) == len(types) and not check(known):
            inner = next((r for o in operands if (r := refused_operator(o, context))), None)
            return inner or node
    return None


def _all(kind: type | tuple[type, ...]) -> Check:
    return lambda types: all(isinstance(t, kind) for t in types)


def _same_family(types: Sequence[DataType]) -> bool:
    return all(isinstance(t, CharType) for t in types) or \
        all(isinstance(t, BinaryType) for t in types)


_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod)
_CHECKS: dict[type, Check] = {
    **{kind: _all(NumericType) for kind in _ARITHMETIC},
    exp.Neg: _all(NumericType),
    exp.And: _all(BooleanType), exp.Or: _all(BooleanType), exp.Not: _all(BooleanType),
    exp.Upper: _all(CharType), exp.Lower: _all(CharType), exp.Initcap: _all(CharType),
    exp.DPipe: _same_family,
}
#: calls sqlglot keeps as written: their checks
_CALLS: dict[str, Check] = {"TO_TIMESTAMP": _all(CharType)}


def _operands(node: exp.Expr) -> tuple[list[exp.Expr], Check | None]:
    """``node``'s operands and the check of their types (None: not checked here)."""
    if isinstance(node, exp.Anonymous):
        return list(node.expressions), _CALLS.get(node.name.upper())
    check = _CHECKS.get(type(node))
    if check is None:
        return [], None
    operands = [node.this] + ([node.expression] if isinstance(node, exp.Binary) else [])
    if any(isinstance(o.unnest(), exp.Interval) for o in operands):
        return [], None  # a date or time and an INTERVAL, an INTERVAL's arithmetic
    return operands, check
