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
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from sqlglot import exp

from .model import FlinkSqlError
from .patternmatch import Assigned
from .planner import interval_ms
from .sqlcondition import Evaluator, java_divide
from .sqlcondition import compile_condition as sql_condition

AGGREGATES: dict[type, str] = {
    exp.Count: "COUNT", exp.Sum: "SUM", exp.Avg: "AVG", exp.Min: "MIN", exp.Max: "MAX",
}
_REFUSED_CALLS = {
    "CLASSIFIER": "MATCH_RECOGNIZE's CLASSIFIER() is not supported",
    "MATCH_NUMBER": "MATCH_RECOGNIZE's MATCH_NUMBER() is not supported",
    "MATCH_PROCTIME": "MATCH_RECOGNIZE's MATCH_PROCTIME() is not supported by sessioncluster",
    "NEXT": "Flink does not support physical offsets within partition.",
}


#: the calls whose first operand is a time unit (``TIMESTAMPADD(SECOND, 5, A.ts)``)
_UNIT_FIRST = ("TIMESTAMPADD", "TIMESTAMPDIFF")


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
        if isinstance(n, exp.Anonymous) and n.name.upper() in _UNIT_FIRST and n.expressions \
                and isinstance(n.expressions[0], exp.Column):  # the unit, not a column
            n.expressions[0].replace(exp.Var(this=n.expressions[0].name.upper()))
            return n
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
    return java_divide(total, len(values))  # AVG: of an integral column, integral as Flink's


def compile_condition(node: exp.Expr) -> Evaluator:
    """A DEFINE condition whose atoms are placeholders ``__atom<k>`` as a function of the atoms'
    values (:mod:`.sqlcondition`); FlinkSqlError for an expression it cannot evaluate."""
    return sql_condition(node, _placeholder, _refusal)


def _refusal(node: exp.Expr) -> str:
    """Why ``node`` is refused in DEFINE: a function by its name (its operands are atoms)."""
    what = f"the function {node.name.upper()}" if isinstance(node, exp.Anonymous) else \
        f"the function {node.sql_name()}" if isinstance(node, exp.Func) else node.sql()
    return f"MATCH_RECOGNIZE: {what} in DEFINE is not supported by sessioncluster"


def _placeholder(node: exp.Expr) -> Evaluator | None:
    """An atom's value, or an INTERVAL's (a condition on times: ``B.ts < A.ts + INTERVAL ...``)."""
    if isinstance(node, exp.Column) and node.name.startswith("__atom"):
        k = int(node.name[len("__atom"):])
        return lambda values: values[k]
    if isinstance(node, exp.Interval):
        delta = datetime.timedelta(milliseconds=interval_ms(node))
        return lambda values: delta
    return None
