"""Python aggregate functions (general ``udaf`` and ``func_type='pandas'``) in a group window
aggregation over an unbounded table in STREAMING mode: ``GROUP BY k, TUMBLE(ts, ...)`` (``HOP``,
``SESSION``) and the Table API's ``window(Tumble...).group_by(...).select(...)``, Flink 2.3's
``PythonGroupWindowAggregate``: each window's row once, when the watermark passes its end
(/work/briefs/data/udafwin/probe2.out, g1, g2, d3, d4).

It runs as the built-in window aggregations do: Spark's append-mode ``groupBy(window(...))``
with the table's watermark, each call ``f(a, b)`` replaced by a scalar Python function of the
window's rows, ``f'(collect_list(named_struct(a, b)))`` (:func:`.functions.register_window_function`).
The state per window and key is its rows' arguments (as Flink's pandas window aggregation
buffers them; Flink keeps a general function's accumulator instead), dropped when the window
is emitted. A window TVF's aggregation in SQL is not one: Flink plans it as a
``PythonGroupAggregate`` (:mod:`.tableaggregate`); but a SESSION TVF's rows
come when the watermark closes their session, and its aggregation runs here."""

from __future__ import annotations

from typing import Any, Callable

from sqlglot import exp

from ...api.table.udf import PANDAS
from .functions import FunctionCatalog, register_window_function
from .model import FlinkSqlError
from .tableaggregate import (
    PANDAS_UDAF_STREAMING,
    is_group_window_aggregation,
    is_session_tvf_aggregation,
)


def plan_group_windows(session: Any, query: exp.Expr, functions: FunctionCatalog
                       ) -> exp.Expr | None:
    """``query`` with the calls of Python aggregate functions in its group window
    aggregations (and SESSION window TVF aggregations) replaced by functions of the window's
    collected rows, registered on ``session``; None when it has none."""
    def windowed(select: exp.Select) -> bool:
        if not is_session_tvf_aggregation(select):
            return is_group_window_aggregation(select)
        if any(f.wrapper.func_type == PANDAS for c in select.find_all(exp.Anonymous)
               if c.parent_select is select
               and (f := functions.aggregate(c.name, pandas=True)) is not None):
            raise FlinkSqlError(PANDAS_UDAF_STREAMING)  # Flink: session_udaf.out, h2
        return True

    return collected_calls(session, query, functions, windowed)


def plan_mixed_aggregations(session: Any, query: exp.Expr, functions: FunctionCatalog
                            ) -> exp.Expr:
    """``query`` with the calls of Python aggregate functions in a select that also calls
    built-in aggregate functions replaced by functions of the group's collected rows: Spark
    runs no grouped-aggregate pandas UDF beside other aggregates, and Flink's
    ``PythonGroupAggregate`` runs both (/work/briefs/data/udafstream/probe1.out, b1, b2)."""
    def mixed(select: exp.Select) -> bool:
        calls = [c for c in select.find_all(exp.AggFunc, exp.Anonymous)
                 if c.parent_select is select]
        return any(isinstance(c, exp.AggFunc) for c in calls) and any(
            isinstance(c, exp.Anonymous) and functions.aggregate(c.name, pandas=True)
            is not None for c in calls)

    return collected_calls(session, query, functions, mixed) or query


def collected_calls(session: Any, query: exp.Expr, functions: FunctionCatalog,
                    which: Callable[[exp.Select], bool]) -> exp.Expr | None:
    """``query`` with each call ``f(a, b)`` of a Python aggregate function in the selects
    ``which`` takes replaced by ``f'(collect_list(named_struct(a, b)))``, ``f'`` a scalar
    function of the group's rows registered on ``session``; None when there is no such call."""
    query = query.copy()
    found = False
    for select in list(query.find_all(exp.Select)):
        if not which(select):
            continue
        for call in [c for c in select.find_all(exp.Anonymous) if c.parent_select is select]:
            function = functions.aggregate(call.name, pandas=True)
            if function is None:
                continue
            fields: list[exp.Expression] = []
            for i, argument in enumerate(call.expressions):
                fields += [exp.Literal.string(f"flink_argument{i}"), argument.copy()]
            rows = exp.ArrayAgg(this=exp.Anonymous(this="named_struct", expressions=fields))
            name = register_window_function(session, function)
            call.replace(exp.Anonymous(this=name, expressions=[rows]))
            found = True
    return query if found else None
