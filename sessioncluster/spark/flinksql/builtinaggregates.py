"""Flink's built-in aggregate functions ``COUNT``, ``SUM``, ``MIN``, ``MAX`` and ``AVG`` as
Python aggregate functions with retraction, for a group aggregation that mixes them with Python
aggregate functions over an unbounded table in STREAMING mode: Flink 2.3 runs the whole select
as one ``PythonGroupAggregate`` (/work/briefs/data/udafstream/probe1.out, b1, b2), and so do
the keyed processors of :mod:`.tableaggregate` (one state per key: every function's
accumulator)."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from sqlglot import exp

from ...api.table.udf import AggregateFunction

#: the built-in aggregate functions a Python group aggregation runs, by sqlglot's node
BUILTIN_AGGREGATES: dict[type[exp.Expression], str] = {
    exp.Count: "COUNT", exp.Sum: "SUM", exp.Min: "MIN", exp.Max: "MAX", exp.Avg: "AVG"}


def builtin_name(call: exp.Expression) -> str | None:
    """The built-in aggregate function ``call`` is, when it runs as a Python accumulator
    (not ``DISTINCT``); None otherwise."""
    name = BUILTIN_AGGREGATES.get(type(call))
    return None if name is None or isinstance(call.this, exp.Distinct) else name


def builtin_arguments(call: exp.Expression) -> list[exp.Expression]:
    """The arguments of a built-in aggregate call (none for ``COUNT(*)``)."""
    return [] if call.this is None or isinstance(call.this, exp.Star) else [call.this]


class BuiltinAggregate(AggregateFunction):
    """``name`` (:data:`BUILTIN_AGGREGATES`) over one argument (none: ``COUNT(*)``), NULLs
    skipped. The accumulator: the count of values, their sum and, for ``MIN``/``MAX``, the
    count of each value (as Flink's ``MinWithRetractAggFunction``, so that a retracted
    minimum gives the next one). ``integral``: ``AVG`` of an integer type is one, truncated
    (Flink's ``AVG(BIGINT)`` is a BIGINT); ``scale``: ``AVG`` of a DECIMAL is one of this
    scale, rounded half up (Flink's ``AVG(DECIMAL(p, s))`` is a ``DECIMAL(38, max(6, s))``)."""

    def __init__(self, name: str, integral: bool = False, scale: int | None = None) -> None:
        self.name = name
        self.integral = integral
        self.scale = scale

    def create_accumulator(self) -> list[Any]:
        return [0, 0, {}]

    def accumulate(self, accumulator: list[Any], *args: Any) -> None:
        self._add(accumulator, args, 1)

    def retract(self, accumulator: list[Any], *args: Any) -> None:
        self._add(accumulator, args, -1)

    def _add(self, accumulator: list[Any], args: tuple[Any, ...], sign: int) -> None:
        value = args[0] if args else 1
        if value is None:
            return
        accumulator[0] += sign
        if self.name in ("SUM", "AVG"):
            accumulator[1] += sign * value
        if self.name in ("MIN", "MAX"):
            counts = accumulator[2]
            counts[value] = counts.get(value, 0) + sign
            if counts[value] == 0:
                del counts[value]

    def get_value(self, accumulator: list[Any]) -> Any:
        count, total, counts = accumulator
        if self.name == "COUNT":
            return count
        if count <= 0:
            return None
        if self.name == "SUM":
            return total
        if self.name == "MIN":
            return min(counts)
        if self.name == "MAX":
            return max(counts)
        if self.integral:  # Java's integer division: toward zero
            quotient = abs(total) // count
            return quotient if total >= 0 else -quotient
        if self.scale is not None:
            return (Decimal(total) / count).quantize(Decimal(1).scaleb(-self.scale),
                                                     rounding=ROUND_HALF_UP)
        return total / count
