"""``LISTAGG``, ``FIRST_VALUE`` and ``LAST_VALUE`` of a group aggregation (and ``MIN``/``MAX``
over a changelog), as Spark running window functions with Flink's values
(:mod:`.boundedchangelog`).

Over insert-only rows, Flink's ``ListAggFunction`` joins a key's non-NULL values so far in
arrival order with its separator (``,`` by default), NULL while there are none (``DISTINCT``:
each value once, where it first came); ``FirstValueAggFunction`` and ``LastValueAggFunction``
keep the first and the latest non-NULL value. Each is its Spark window function over the key's
rows up to the current one, in source order: the list of values (``COLLECT_LIST``, which skips
NULLs; ``ARRAY_DISTINCT`` keeps first occurrences) joined, ``FIRST(x, TRUE)``,
``LAST(x, TRUE)``.

Over a changelog Flink runs their retract variants (``ListAggWithRetractAggFunction``,
``FirstValueWithRetractAggFunction``, ``LastValueWithRetractAggFunction``): the key's non-NULL
values in arrival order, a retraction taking out the earliest equal one (``List.remove``; the
first of a value's orders), the value the list joined, its first or its last. Here that list is
folded (``AGGREGATE``) from the key's ``(value, sign)`` records so far (quadratic in a key's
records: bounded inputs only). ``LISTAGG(DISTINCT x)`` over a changelog counts each value
(Flink's distinct view): a value joins the list when its count becomes 1 and leaves it when its
count becomes 0, so a value that stays keeps its place.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from .dialect import Flink

#: the aggregate calls of this module
CALLS = (exp.GroupConcat, exp.FirstValue, exp.LastValue)


def running_call(call: exp.Expr, window: exp.Window) -> exp.Expr:
    """``call`` (one of :data:`CALLS`; a ``LISTAGG`` may be DISTINCT) as the Spark expression
    of its value over ``window`` (a key's rows up to the current one)."""
    distinct = isinstance(call.this, exp.Distinct)
    argument = (call.this.expressions[0] if distinct else call.this).copy()
    if isinstance(call, exp.GroupConcat):
        values: exp.Expr = window.copy()
        values.set("this", exp.Anonymous(this="COLLECT_LIST", expressions=[argument]))
        if distinct:
            values = exp.Anonymous(this="ARRAY_DISTINCT", expressions=[values])
        return _picked(call, values)
    name = "FIRST" if isinstance(call, exp.FirstValue) else "LAST"
    value = window.copy()
    value.set("this", exp.Anonymous(this=name, expressions=[argument, exp.true()]))
    return value


def retracting_call(call: exp.Expr, x: str, sign: str, over: str) -> exp.Expr:
    """``call`` (one of :data:`CALLS`; a ``LISTAGG`` may be DISTINCT) over a changelog: its
    value from the key's non-NULL values in arrival order, each ``-U``/``-D`` (``sign`` -1)
    taking out the earliest value equal to its own. ``x``: the argument's SQL; ``over``: the
    window (a key's records up to the current one), in Flink's dialect."""
    seen = _signed_values(x, sign, over)
    if isinstance(call.this, exp.Distinct):
        return _picked(call, _distinct_present(seen))
    at = "ARRAY_POSITION(acc, e.v)"
    present = sqlglot.parse_one(
        f"AGGREGATE({seen}, FILTER(TRANSFORM({seen}, e -> e.v), v -> FALSE), (acc, e) -> "
        f"CASE WHEN e.v IS NULL THEN acc WHEN e.s > 0 THEN CONCAT(acc, ARRAY(e.v)) "
        f"WHEN {at} = 0 THEN acc ELSE CONCAT(SLICE(acc, 1, {at} - 1), "
        f"SLICE(acc, {at} + 1, SIZE(acc))) END)", read=Flink)
    return _picked(call, present)


def _distinct_present(seen: str) -> exp.Expr:
    """The distinct non-NULL values of ``seen`` (a key's ``(value, sign)`` records) whose
    count is positive, each where its count last became 1."""
    counted = (f"AGGREGATE({seen}, FILTER(TRANSFORM({seen}, e -> NAMED_STRUCT('v', e.v, 'n', 0)),"
               " a -> FALSE), (acc, e) -> CASE WHEN e.v IS NULL THEN acc "
               "WHEN e.s > 0 AND EXISTS(acc, a -> a.v = e.v) THEN TRANSFORM(acc, a -> "
               "IF(a.v = e.v, NAMED_STRUCT('v', a.v, 'n', a.n + 1), a)) "
               "WHEN e.s > 0 THEN CONCAT(acc, ARRAY(NAMED_STRUCT('v', e.v, 'n', 1))) "
               "ELSE FILTER(TRANSFORM(acc, a -> IF(a.v = e.v, NAMED_STRUCT('v', a.v, 'n', "
               "a.n - 1), a)), a -> a.n > 0) END)")
    return sqlglot.parse_one(f"TRANSFORM({counted}, a -> a.v)", read=Flink)


def min_max_with_retraction(call: exp.Min | exp.Max, x: str, sign: str, over: str) -> exp.Expr:
    """``MIN``/``MAX`` over a changelog (Flink's ``MinWithRetract``/``MaxWithRetract``): the
    least/greatest of the values whose signed count so far is positive (quadratic in a key's
    records: bounded inputs only)."""
    pick = "ARRAY_MIN" if isinstance(call, exp.Min) else "ARRAY_MAX"
    return exp.Anonymous(this=pick, expressions=[_counted_present(x, sign, over)])


def count_distinct_with_retraction(x: str, sign: str, over: str) -> exp.Expr:
    """``COUNT(DISTINCT x)`` over a changelog: how many values have a positive signed count."""
    size = exp.Anonymous(this="SIZE", expressions=[_counted_present(x, sign, over)])
    return exp.Cast(this=size, to=exp.DataType.build("BIGINT"))


def _counted_present(x: str, sign: str, over: str) -> exp.Expr:
    """The distinct non-NULL values of the key's ``(value, sign)`` records so far whose signed
    count is positive."""
    seen = _signed_values(x, sign, over)
    return sqlglot.parse_one(
        f"FILTER(ARRAY_DISTINCT(TRANSFORM({seen}, e -> e.v)), x -> x IS NOT NULL AND "
        f"AGGREGATE({seen}, 0, (n, e) -> n + IF(e.v = x, e.s, 0)) > 0)", read=Flink)


def _signed_values(x: str, sign: str, over: str) -> str:
    """The list of a key's ``(value, sign)`` records up to the current one, in Flink's
    dialect."""
    return f"COLLECT_LIST(NAMED_STRUCT('v', ({x}), 's', {sign})) {over}"


def _picked(call: exp.Expr, values: exp.Expr) -> exp.Expr:
    """The call's value from the list of a key's present values: joined, or its first or its
    last element; NULL for an empty list."""
    size = exp.Anonymous(this="SIZE", expressions=[values.copy()])
    if isinstance(call, exp.GroupConcat):
        separator = call.args.get("separator") or exp.Literal.string(",")
        value: exp.Expr = exp.Anonymous(this="ARRAY_JOIN",
                                        expressions=[values, separator.copy()])
    else:
        index = exp.Literal.number(1) if isinstance(call, exp.FirstValue) else size.copy()
        value = exp.Anonymous(this="ELEMENT_AT", expressions=[values, index])
    return exp.Case(ifs=[exp.If(this=exp.EQ(this=size, expression=exp.Literal.number(0)),
                                true=exp.Null())], default=value)
