"""The non-equality part of a regular join's ON condition (``o.amount > c.n``), evaluated in
Python on each pair of rows the equality keys match, as Flink's ``StreamingJoinOperator``
evaluates its join condition: a pair joins when the condition is TRUE (SQL's three-valued
logic, :mod:`.sqlcondition`: a comparison with a null is UNKNOWN, and does not join). Columns
of either side are read from the pair; another construct than :mod:`.sqlcondition` evaluates
is refused naming it."""

from __future__ import annotations

from typing import Any, Callable

from sqlglot import exp

from .sqlcondition import Evaluator, compile_condition, truth
from .temporaljoin import PROBE, JoinNames

Row = tuple[Any, ...]


def pair_condition(terms: list[exp.Expr], names: JoinNames) -> Callable[[Row, Row], bool]:
    """The predicate of a pair (left row, right row) for the AND of ``terms``: True when every
    term is TRUE."""
    def column(node: exp.Expr) -> Evaluator | None:
        if not isinstance(node, exp.Column):
            return None
        position = names.position(node)
        index = int(position[len(PROBE):])
        if position.startswith(PROBE):
            return lambda pair: pair[0][index]
        return lambda pair: pair[1][index]

    values = [compile_condition(t, column, _refusal) for t in terms]
    return lambda left, right: all(truth(v((left, right))) is True for v in values)


def _refusal(node: exp.Expr) -> str:
    return (f"A join condition '{node.sql()}' ({type(node).__name__}) of a join of an updating "
            "query is not supported by sessioncluster in STREAMING mode: it evaluates columns, "
            "literals, comparisons, AND/OR/NOT, IS NULL, BETWEEN, IN, + - * / %, CASE, LIKE, "
            "SIMILAR TO and common scalar functions on each pair of rows (Flink docs: Joins / "
            "Regular Joins)")
