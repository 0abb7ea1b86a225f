"""``LISTAGG``, ``FIRST_VALUE`` and ``LAST_VALUE`` of a group aggregation over insert-only rows,
as Spark running window functions with Flink's values (:mod:`.boundedchangelog`).

Flink's ``ListAggFunction`` joins a key's non-NULL values so far in arrival order with its
separator (``,`` by default), NULL while there are none; ``FirstValueAggFunction`` and
``LastValueAggFunction`` keep the first and the latest non-NULL value. Each is its Spark
window function over the key's rows up to the current one, in source order: the list of
values (``COLLECT_LIST``, which skips NULLs) joined, ``FIRST(x, TRUE)``, ``LAST(x, TRUE)``.
"""

from __future__ import annotations

from sqlglot import exp

#: the aggregate calls of this module
CALLS = (exp.GroupConcat, exp.FirstValue, exp.LastValue)


def running_call(call: exp.Expr, window: exp.Window) -> exp.Expr:
    """``call`` (one of :data:`CALLS`) as the Spark expression of its value over ``window``
    (a key's rows up to the current one)."""
    argument = call.this.copy()
    if isinstance(call, exp.GroupConcat):
        values = window.copy()
        values.set("this", exp.Anonymous(this="COLLECT_LIST", expressions=[argument]))
        separator = call.args.get("separator") or exp.Literal.string(",")
        joined = exp.Anonymous(this="ARRAY_JOIN", expressions=[values, separator.copy()])
        size = exp.Anonymous(this="SIZE", expressions=[values.copy()])
        return exp.Case(ifs=[exp.If(this=exp.EQ(this=size, expression=exp.Literal.number(0)),
                                    true=exp.Null())], default=joined)
    name = "FIRST" if isinstance(call, exp.FirstValue) else "LAST"
    value = window.copy()
    value.set("this", exp.Anonymous(this=name, expressions=[argument, exp.true()]))
    return value
