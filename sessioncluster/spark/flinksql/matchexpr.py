"""MATCH_RECOGNIZE's DEFINE and MEASURES expressions over the rows of a (partial) match.

A reference to a pattern variable's rows is an :class:`Atom`: ``A.col`` (the last row of ``A``),
``FIRST(A.col, n)``/``LAST(A.col, n)`` (the n-th row of ``A`` from its first or last), an
aggregate over ``A``'s rows (``COUNT SUM AVG MIN MAX``), ``MATCH_ROWTIME()``; a column with no
variable reads all the rows of the match. In DEFINE the row being tried is the last row of its
variable (Flink's running semantics); in MEASURES of ONE ROW PER MATCH the match is complete
(final semantics). DEFINE conditions are evaluated here, in Python, with SQL's three-valued
logic; MEASURES are left to Spark over the atoms' values (:mod:`.matchrecognize`).
"""

from __future__ import annotations

import datetime
import operator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, Sequence

from sqlglot import exp

from .model import FlinkSqlError
from .patternmatch import Assigned
from .planner import interval_ms

AGGREGATES: dict[type, str] = {
    exp.Count: "COUNT", exp.Sum: "SUM", exp.Avg: "AVG", exp.Min: "MIN", exp.Max: "MAX",
}
_REFUSED_CALLS = {
    "CLASSIFIER": "MATCH_RECOGNIZE's CLASSIFIER() is not supported",
    "MATCH_NUMBER": "MATCH_RECOGNIZE's MATCH_NUMBER() is not supported",
    "MATCH_PROCTIME": "MATCH_RECOGNIZE's MATCH_PROCTIME() is not supported by sessioncluster",
    "NEXT": "Flink does not support physical offsets within partition.",
}


@dataclass(frozen=True, slots=True)
class Atom:
    """A value read from a match's rows: ``kind`` FIRST, LAST, an aggregate's name or
    MATCH_ROWTIME; ``variable`` None for all the rows; ``column`` None for ``COUNT(*)``."""

    kind: str
    variable: str | None
    column: str | None
    offset: int = 0


def extract_atoms(node: exp.Expr, atoms: list[Atom], placeholder: Callable[[int], exp.Expr],
                  rowtime: str) -> exp.Expr:
    """``node`` with each atom replaced by ``placeholder(its position in atoms)`` (appended to
    ``atoms`` when new); FlinkSqlError for what MATCH_RECOGNIZE cannot read here."""
    def replace(n: exp.Expr) -> exp.Expr:
        atom = _atom(n, rowtime)
        if atom is None:
            return n
        if atom not in atoms:
            atoms.append(atom)
        return placeholder(atoms.index(atom))

    return node.copy().transform(replace)


def _atom(node: exp.Expr, rowtime: str) -> Atom | None:
    if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
        return Atom("LAST", node.table or None, node.name)
    if isinstance(node, exp.Anonymous):
        name = node.name.upper()
        if name in _REFUSED_CALLS:
            raise FlinkSqlError(_REFUSED_CALLS[name])
        if name == "MATCH_ROWTIME":
            return Atom("LAST", None, rowtime)
        if name in ("FIRST", "LAST", "PREV"):
            args = node.expressions
            if not args or not isinstance(args[0], exp.Column) or len(args) > 2 or \
                    len(args) == 2 and not (isinstance(args[1], exp.Literal) and args[1].is_int):
                raise FlinkSqlError(f"{name} takes a pattern variable's column and a constant "
                                    f"offset: {node.sql()}")
            offset = int(args[1].name) if len(args) == 2 else (1 if name == "PREV" else 0)
            if name == "PREV":
                if offset:
                    raise FlinkSqlError(_REFUSED_CALLS["NEXT"])
                name = "LAST"
            return Atom(name, args[0].table or None, args[0].name, offset)
    kind = AGGREGATES.get(type(node))
    if kind is not None:
        arg = node.this
        if isinstance(arg, exp.Distinct):
            raise FlinkSqlError("DISTINCT aggregations are not supported in MATCH_RECOGNIZE")
        if isinstance(arg, exp.Star) and kind == "COUNT":
            return Atom(kind, None, None)
        if not isinstance(arg, exp.Column):
            raise FlinkSqlError(f"MATCH_RECOGNIZE: only a pattern variable's column can be "
                                f"aggregated, not {node.sql()}")
        return Atom(kind, arg.table or None, arg.name)
    return None


def atom_value(atom: Atom, matched: Sequence[Assigned], row: Callable[[int], Any]) -> Any:
    """The value of ``atom`` over the rows ``matched`` (``row(i)`` the i-th row of the partition,
    a mapping of column names)."""
    rows = [i for i, v in matched if atom.variable is None or v == atom.variable]
    if atom.kind in ("FIRST", "LAST"):
        at = atom.offset if atom.kind == "FIRST" else len(rows) - 1 - atom.offset
        return row(rows[at])[atom.column] if 0 <= at < len(rows) else None
    values = [row(i)[atom.column] for i in rows] if atom.column else [1] * len(rows)
    values = [v for v in values if v is not None]
    if atom.kind == "COUNT":
        return len(values)
    if not values:
        return None
    if atom.kind in ("MIN", "MAX"):
        return min(values) if atom.kind == "MIN" else max(values)
    total = sum(values)
    if atom.kind == "SUM":
        return total
    return _divide(total, len(values))  # AVG: of an integral column, integral as Flink's


def _divide(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):  # Java's integer division: toward zero
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b > 0) else -q
    return a / b


Evaluator = Callable[[Sequence[Any]], Any]

_COMPARISONS: dict[type, Callable[[Any, Any], Any]] = {
    exp.EQ: operator.eq, exp.NEQ: operator.ne, exp.GT: operator.gt, exp.GTE: operator.ge,
    exp.LT: operator.lt, exp.LTE: operator.le, exp.Add: operator.add, exp.Sub: operator.sub,
    exp.Mul: operator.mul, exp.Div: _divide, exp.Mod: operator.mod,
}


def compile_condition(node: exp.Expr) -> Evaluator:
    """A DEFINE condition whose atoms are placeholders ``__atom<k>`` as a function of the atoms'
    values; FlinkSqlError for an expression it cannot evaluate."""
    if isinstance(node, exp.Column) and node.name.startswith("__atom"):
        k = int(node.name[len("__atom"):])
        return lambda values: values[k]
    if isinstance(node, exp.Paren):
        return compile_condition(node.this)
    if isinstance(node, exp.Literal):
        value: Any = node.this if node.is_string else \
            (int(node.this) if node.is_int else Decimal(node.this))
        return lambda values: value
    if isinstance(node, exp.Boolean):
        truth = bool(node.this)
        return lambda values: truth
    if isinstance(node, exp.Null):
        return lambda values: None
    if isinstance(node, exp.Interval):
        delta = datetime.timedelta(milliseconds=interval_ms(node))
        return lambda values: delta
    if isinstance(node, (exp.And, exp.Or)):
        return _logical(isinstance(node, exp.And), compile_condition(node.this),
                        compile_condition(node.expression))
    if isinstance(node, exp.Not):
        inner = compile_condition(node.this)
        return lambda values: None if (v := inner(values)) is None else not v
    if isinstance(node, exp.Neg):
        inner = compile_condition(node.this)
        return lambda values: None if (v := inner(values)) is None else -v
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        inner = compile_condition(node.this)
        return lambda values: inner(values) is None
    if isinstance(node, exp.Between):
        low = exp.GTE(this=node.this, expression=node.args["low"])
        high = exp.LTE(this=node.this, expression=node.args["high"])
        return compile_condition(exp.And(this=low, expression=high))
    if isinstance(node, exp.In) and node.expressions:
        tests = [exp.EQ(this=node.this, expression=e) for e in node.expressions]
        either: exp.Expr = tests[0]
        for t in tests[1:]:
            either = exp.Or(this=either, expression=t)
        return compile_condition(either)
    function = _COMPARISONS.get(type(node))
    if function is not None:
        left, right = compile_condition(node.this), compile_condition(node.expression)

        def binary(values: Sequence[Any]) -> Any:
            a, b = left(values), right(values)
            return None if a is None or b is None else function(*_numeric(a, b))
        return binary
    raise FlinkSqlError(f"MATCH_RECOGNIZE: {node.sql()} in DEFINE is not supported by "
                        "sessioncluster")


def _numeric(a: Any, b: Any) -> tuple[Any, Any]:
    """Decimal and float mixed as Flink would: as floats."""
    if isinstance(a, Decimal) and isinstance(b, float) or isinstance(a, float) and \
            isinstance(b, Decimal):
        return float(a), float(b)
    return a, b


def _logical(conjunction: bool, left: Evaluator, right: Evaluator) -> Evaluator:
    """SQL's AND / OR over true, false and unknown (None)."""
    decisive = not conjunction

    def combine(values: Sequence[Any]) -> Any:
        a = left(values)
        if a is decisive:
            return decisive
        b = right(values)
        if b is decisive:
            return decisive
        return None if a is None or b is None else conjunction
    return combine
