"""A Flink SQL query (sqlglot AST in the ``Flink`` dialect) to Spark SQL text, for BATCH.

Every catalog table and view is a Spark temporary view of the same name whose columns are the
table's (computed ones included, the rowtime a TIMESTAMP). Rewritten: window table-valued
functions (``TUMBLE``/``HOP``/``CUMULATE``/``SESSION``) into subqueries exposing Flink's
``window_start``, ``window_end`` and ``window_time``; the legacy ``GROUP BY TUMBLE(...)`` with its
``TUMBLE_START``/``_END``/``_ROWTIME``; Flink's functions whose Spark form differs; Flink's types.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import count
from typing import Any, cast

import sqlglot
from sqlglot import exp

from sessioncluster.api.table.typeparser import spark_type
from sessioncluster.spark.flinksql.builtins import (
    boolean_text,
    builtin,
    dated_timestampadd,
    float_aggregates,
    integer_arithmetic,
    java_integers,
)
from sessioncluster.spark.flinksql.dialect import (
    Descriptor,
    FlinkCast,
    TableArgument,
    name_outputs,
)
from sessioncluster.spark.flinksql.jsonfunctions import (
    RAW_JSON_PLACE,
    FlinkJson,
    FlinkJsonArrayAgg,
    FlinkJsonObjectAgg,
    aggregate_to_spark,
    is_json,
    is_raw_json,
    to_spark,
)
from sessioncluster.spark.flinksql.model import CatalogTable, FlinkSqlError

_UNITS_MS = {
    "MILLISECOND": 1, "SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": 86_400_000,
}
_WINDOW_PARAMS = {
    "TUMBLE": ("DATA", "TIMECOL", "SIZE", "OFFSET"),
    "HOP": ("DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"),
    "CUMULATE": ("DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"),
    "SESSION": ("DATA", "TIMECOL", "GAP"),
}
_GROUP_WINDOWS = ("TUMBLE", "HOP", "SESSION")
_WINDOW_AUX = {"START", "END", "ROWTIME", "PROCTIME"}
_MS = "INTERVAL '0.001' SECOND"
_BIGINT_RANKINGS = (exp.RowNumber, exp.Rank, exp.DenseRank)


def to_spark_sql(query: exp.Expr, tables: Mapping[str, CatalogTable],
                 streaming: bool = False) -> str:
    """Spark SQL text for a Flink query; FlinkSqlError for what Spark cannot run as Flink does.

    ``streaming``: a window aggregation also groups by Spark's window struct (``__window<n>``,
    hidden in the TVF's rows): Structured Streaming emits a group in append mode only when a
    grouping key carries the watermark, which ``window_start``/``window_end`` (fields taken
    out of the struct) do not."""
    tree = query.copy()
    name_outputs(tree)
    columns = _column_types(tables)
    integer_arithmetic(tree, columns, _typeable)
    java_integers(tree, list(tree.find_all(FlinkCast)), columns, _typeable)
    boolean_text(tree, list(tree.find_all(FlinkCast)), columns, _typeable)
    float_aggregates(tree, columns, _typeable)
    dated_timestampadd(tree, columns, _typeable)
    names = count()
    for select in list(tree.find_all(exp.Select)):
        _rewrite_group_window(select, names, streaming)
    windows: dict[str, int] = {}
    sessions: dict[int, set[str]] = {}  # a SESSION TVF's number -> its PARTITION BY keys
    for table in list(tree.find_all(exp.Table)):
        call = table.this
        if isinstance(call, exp.Anonymous) and call.name.upper() == "TABLE":
            table.replace(_window_tvf(call, table.alias, tables, names, windows, streaming,
                                      sessions))
    for select in list(tree.find_all(exp.Select)) if streaming else []:
        _group_by_window_struct(select, windows, sessions)
        _global_aggregate_of_rows(select)
    for window in list(tree.find_all(exp.Window)):
        if isinstance(window.this, _BIGINT_RANKINGS):  # Flink's are BIGINT, Spark's INT
            window.replace(exp.Cast(this=window.copy(), to=exp.DataType.build("BIGINT")))
    tree = tree.transform(_rewrite_node)
    return tree.sql(dialect="spark")


def _global_aggregate_of_rows(select: exp.Select) -> None:
    """STREAMING: an aggregation without GROUP BY has a row once it has read one, as Flink's
    global ``GroupAggregate`` emits nothing before its first input record. Structured
    Streaming's gives a row for a micro-batch whose input rows were all filtered out (``0``,
    NULLs); its input is append-only, so ``HAVING COUNT(*) > 0`` drops only that row."""
    if select.args.get("group") is not None or select.args.get("distinct") is not None:
        return
    if not any(agg.find_ancestor(exp.Select) is select and not agg.find_ancestor(exp.Window)
               for e in select.expressions for agg in e.find_all(exp.AggFunc)):
        return
    read = exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0))
    having = select.args.get("having")
    select.set("having", exp.Having(this=read if having is None else exp.and_(
        exp.paren(having.this.copy()), read)))


def _typeable(tree: exp.Expr) -> exp.Expr:
    """A copy of ``tree`` whose Flink casts are sqlglot's, for its type inference."""
    def spark(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, FlinkCast):
            return node
        node.set("this", node.this.transform(spark))  # a replaced node is not visited
        return _spark_cast(node)

    return tree.copy().transform(spark)


def _spark_cast(node: FlinkCast) -> exp.Expression:
    """A Flink ``CAST``/``TRY_CAST`` as sqlglot's, to the Spark type of its Flink type."""
    to = exp.DataType.build(spark_type(node.args["to"].this), dialect="spark")
    spark = exp.TryCast(this=node.this, to=to, safe=True) if node.args.get("safe") \
        else exp.Cast(this=node.this, to=to)
    spark.meta.update(node.meta)  # the marks of the type inference's callers
    return spark


def _column_types(tables: Mapping[str, CatalogTable]) -> dict[str, dict[str, str]]:
    """The tables' typed columns as Spark type text, by lower-case table and column name."""
    columns: dict[str, dict[str, str]] = {}
    for name, table in tables.items():
        typed = {}
        for column in table.columns:
            try:
                typed[column.name.lower()] = spark_type(column.type) if column.type else None
            except (ValueError, KeyError):
                typed[column.name.lower()] = None
        columns[name.lower()] = {c: t for c, t in typed.items() if t}
    return columns


def _group_by_window_struct(select: exp.Select, windows: dict[str, int],
                            sessions: dict[int, set[str]]) -> None:
    """STREAMING: a GROUP BY window_start/window_end over a window TVF also groups by the
    TVF's hidden window struct (which carries the watermark). A SESSION TVF's rows have no
    bounds before the aggregation merges their sessions: the struct replaces them in GROUP BY
    and its fields are ``window_start``/``window_end``/``window_time`` everywhere else."""
    group, from_ = select.args.get("group"), select.args.get("from_")
    if group is None or from_ is None or not isinstance(from_.this, exp.Subquery):
        return
    n = windows.get(from_.this.alias)
    keys = {c.name.lower() for g in group.expressions for c in g.find_all(exp.Column)}
    if n is None or not keys & {"window_start", "window_end"}:
        return
    if n not in sessions:
        group.append("expressions", exp.column(f"__window{n}"))
        return
    others = [g for g in group.expressions if not (isinstance(g, exp.Column) and g.name.lower()
                                                   in _WINDOW_COLUMNS)]
    named = {g.name.lower() for g in others if isinstance(g, exp.Column)}
    if named != sessions[n] or len(named) != len(others):
        raise FlinkSqlError(_SESSION_KEYS_REFUSAL)
    if not others:  # Spark refuses a session window as the only key: one key for all rows
        others = [exp.column(f"__window{n}_key")]
    group.set("expressions", [*others, exp.column(f"__window{n}")])
    for part in ("expressions", "having", "order", "qualify"):
        value = select.args.get(part)
        for item in (value if isinstance(value, list) else [value] if value else []):
            for column in list(item.find_all(exp.Column)):
                if column.name.lower() in _WINDOW_COLUMNS and column.find_ancestor(
                        exp.Select) is select:
                    bound: exp.Expr = _session_bound(n, column.name.lower())
                    if column.parent is select:  # a bare projection keeps its name
                        bound = exp.alias_(bound, column.name)
                    column.replace(bound)


_WINDOW_COLUMNS = ("window_start", "window_end", "window_time")
#: Spark's session windows are per grouping key, Flink's SESSION TVF's per PARTITION BY key
#: (without one: across all rows; /work/briefs/data/lead30/session_tvf_probe.out)
_SESSION_KEYS_REFUSAL = (
    "A SESSION window TVF aggregation whose GROUP BY keys (besides window_start and window_end) "
    "are not its PARTITION BY keys is not supported by sessioncluster in STREAMING mode: "
    "Spark keeps a session per grouping key, Flink per partition key (across all rows without "
    "PARTITION BY). Partition the TVF by the group keys: SESSION(TABLE t PARTITION BY k, "
    "DESCRIPTOR(ts), INTERVAL ...) ... GROUP BY k, window_start, window_end")
#: the grouping key of a SESSION TVF aggregation without one of its own (Spark refuses a
#: "global aggregation with session window")
_GLOBAL_SESSION_KEY = "0"


def _session_bound(n: int, which: str) -> exp.Expression:
    """``window_start``/``window_end``/``window_time`` of a merged session (the struct
    ``__window<n>`` of Spark's ``session_window``)."""
    field = "start" if which == "window_start" else "end"
    bound = exp.Dot(this=exp.column(f"__window{n}"), expression=exp.to_identifier(field))
    if which == "window_time":
        return exp.Sub(this=bound, expression=exp.Interval(this=exp.Literal.string("0.001"),
                                                           unit=exp.Var(this="SECOND")))
    return bound


def interval_ms(node: exp.Expression) -> int:
    """Milliseconds of ``INTERVAL '10' MINUTES`` (FlinkSqlError for other expressions)."""
    if isinstance(node, exp.Interval) and node.this is not None:
        unit = (node.text("unit") or "SECOND").upper().rstrip("S")
        value = node.this.this if isinstance(node.this, exp.Literal) else None
        if unit in _UNITS_MS and value is not None:
            try:
                return round(float(value) * _UNITS_MS[unit])
            except ValueError:
                pass
    raise FlinkSqlError(f"Expected a duration like INTERVAL '10' MINUTES, got "
                        f"{node.sql(dialect='spark')}")


def _duration(ms: int) -> str:
    return f"'{ms} milliseconds'"


def _interval(ms: int) -> str:
    return f"INTERVAL '{ms / 1000:.3f}' SECOND"


def _window_args(call: exp.Anonymous) -> tuple[str, dict[str, exp.Expression]]:
    """A window TVF's name and its arguments by Flink's parameter names."""
    if len(call.expressions) != 1 or not isinstance(call.expressions[0], exp.Anonymous):
        raise FlinkSqlError("TABLE(...) in FROM takes a window table-valued function: TUMBLE, "
                            "HOP, CUMULATE or SESSION")
    inner = call.expressions[0]
    name = inner.name.upper()
    params = _WINDOW_PARAMS.get(name)
    if params is None:
        raise FlinkSqlError(f"Table function {name} is not supported by sessioncluster "
                            "(Flink docs: Queries / Windowing TVF)")
    args: dict[str, exp.Expression] = {}
    for position, arg in enumerate(inner.expressions):
        if isinstance(arg, exp.Kwarg):
            args[arg.this.name.upper()] = arg.expression
        elif position < len(params):
            args[params[position]] = arg
    missing = [p for p in params[:3] if p not in args]
    if missing:
        raise FlinkSqlError(f"{name} misses its {', '.join(missing)} argument")
    return name, args


def _window_tvf(call: exp.Anonymous, alias: str, tables: Mapping[str, CatalogTable],
                names: count, windows: dict[str, int] | None = None,
                streaming: bool = False, sessions: dict[int, set[str]] | None = None
                ) -> exp.Expression:
    name, args = _window_args(call)
    data, timecol = args["DATA"], args["TIMECOL"]
    if not isinstance(data, TableArgument) or not isinstance(timecol, Descriptor):
        raise FlinkSqlError(f"{name} takes TABLE t and DESCRIPTOR(column) as its first arguments")
    source = ".".join(p.name for p in data.this.parts)
    table = tables.get(source)
    if table is None:
        raise FlinkSqlError(f"Object '{source}' not found")
    columns = ", ".join(f"`{c.name}`" for c in table.columns)
    ts = f"`{timecol.expressions[0].name}`"
    n = next(names)
    keys = [f"`{k.name}`" for k in data.args.get("partition_by") or []]
    if windows is not None:
        windows[alias or f"__tvf{n}"] = n
    if name == "SESSION" and streaming:
        # Spark's session_window merges the rows' sessions in the aggregation (per grouping
        # key) and emits each once the watermark passes its end, as Flink's session windows
        if sessions is not None:
            sessions[n] = {k.name.lower() for k in data.args.get("partition_by") or []}
        return _subquery(f"SELECT {columns}, session_window({ts}, "
                         f"{_duration(interval_ms(args['GAP']))}) AS __window{n}, "
                         f"{_GLOBAL_SESSION_KEY} AS __window{n}_key "
                         f"FROM {source}", alias or f"__tvf{n}")
    if name == "SESSION":
        inner = _session_sql(source, ts, interval_ms(args["GAP"]), keys, n)
    else:
        inner = _fixed_window_sql(name, args, source, ts, n)
    hidden = f", __w AS __window{n}" if streaming else ""
    bounds = [f"__s{n}", f"__e{n}"]
    if _instant(table, timecol.expressions[0].name):  # Flink's bounds: TIMESTAMP(3), local
        bounds = [f"CAST({b} AS TIMESTAMP_NTZ)" for b in bounds]
    sql = (f"SELECT {columns}, {bounds[0]} AS window_start, {bounds[1]} AS window_end, "
           f"__e{n} - {_MS} AS window_time{hidden} FROM ({inner}) AS __w{n}")
    return _subquery(sql, alias or f"__tvf{n}")


def _instant(table: CatalogTable, name: str) -> bool:
    """Whether the table's column ``name`` is an instant (TIMESTAMP_LTZ, a ``PROCTIME()``)."""
    column = next((c for c in table.columns if c.name.lower() == name.lower()), None)
    return column is not None and (
        (column.type or "").upper().startswith("TIMESTAMP_LTZ")
        or (column.expression or "").replace(" ", "").upper() == "PROCTIME()")


def _fixed_window_sql(name: str, args: dict[str, exp.Expression], source: str, ts: str,
                      n: int) -> str:
    size = interval_ms(args["SIZE"])
    offset = interval_ms(args["OFFSET"]) if "OFFSET" in args else 0
    if name == "TUMBLE":
        window = fixed_window(ts, size, size, offset)
    elif name == "HOP":
        window = fixed_window(ts, size, interval_ms(args["SLIDE"]), offset)
    else:  # CUMULATE: the tumbling window of the max size, one row per step end after ts
        step = interval_ms(args["STEP"])
        if size % step:
            raise FlinkSqlError("CUMULATE's size must be an integral multiple of its step")
        window = fixed_window(ts, size, size, offset)
        ends = (f"explode(sequence(__w.start + {_interval(step)}, __w.end, "
                f"{_interval(step)}))")
        return (f"SELECT * FROM (SELECT *, __w.start AS __s{n}, {ends} AS __e{n} FROM "
                f"(SELECT *, {window} AS __w FROM {source})) WHERE __e{n} > {ts}")
    return f"SELECT *, __w.start AS __s{n}, __w.end AS __e{n} FROM " \
           f"(SELECT *, {window} AS __w FROM {source})"


def fixed_window(ts: str, size: int, slide: int, offset: int) -> str:
    """Spark's ``window(...)`` of ``ts`` (Spark SQL) for a TUMBLE (``slide == size``) or HOP
    window of ``size`` ms: the struct of the window's ``start`` and ``end``."""
    return f"window({ts}, {_duration(size)}, {_duration(slide)}, {_duration(offset)})"


def _session_sql(source: str, ts: str, gap: int, keys: list[str], n: int) -> str:
    """Session windows by window functions: a row opens a session when the previous row of its
    partition is more than ``gap`` before it (windows that touch merge, as Flink's
    ``TimeWindow.intersects``); a session spans its rows' times plus the gap."""
    part = f"PARTITION BY {', '.join(keys)} " if keys else ""
    order = f"({part}ORDER BY {ts})"
    session = f"(PARTITION BY {', '.join(keys + [f'__id{n}'])})"
    new = (f"CASE WHEN LAG({ts}) OVER {order} IS NULL OR {ts} > LAG({ts}) OVER {order} + "
           f"{_interval(gap)} THEN 1 ELSE 0 END")
    ids = f"SUM(__new) OVER ({part}ORDER BY {ts} ROWS UNBOUNDED PRECEDING)"
    return (f"SELECT *, MIN({ts}) OVER {session} AS __s{n}, MAX({ts}) OVER {session} + "
            f"{_interval(gap)} AS __e{n} FROM (SELECT *, {ids} AS __id{n} FROM "
            f"(SELECT *, {new} AS __new FROM {source}))")


def _group_window(select: exp.Select) -> tuple[exp.Anonymous | None, list[exp.Expression]]:
    group = select.args.get("group")
    if group is None:
        return None, []
    windows = [g for g in group.expressions
               if isinstance(g, exp.Anonymous) and g.name.upper() in _GROUP_WINDOWS]
    if len(windows) > 1:
        raise FlinkSqlError("Only one group window is allowed in GROUP BY")
    others = [g for g in group.expressions if not windows or g is not windows[0]]
    return (windows[0] if windows else None), others


def _rewrite_group_window(select: exp.Select, names: count, streaming: bool = False) -> None:
    """``GROUP BY TUMBLE(ts, size)`` (HOP, SESSION), the deprecated group window aggregation."""
    window, others = _group_window(select)
    if window is None:
        return
    name = window.name.upper()
    args = window.expressions
    if not args or not isinstance(args[0], exp.Column):
        raise FlinkSqlError(f"{name}'s first argument must be a time attribute column")
    ts = f"`{args[0].name}`"
    n = next(names)
    from_ = select.args.get("from_")
    if from_ is None:
        raise FlinkSqlError(f"GROUP BY {name}(...) needs a FROM clause")
    source = exp.select("*").from_(from_.this.copy())
    for join in select.args.get("joins") or []:
        source = source.join(join.copy())
    where = select.args.get("where")
    if where is not None:
        source = source.where(where.this.copy())
    session_struct = name == "SESSION" and streaming
    if session_struct:  # Spark's session_window: merged per key in the aggregation
        inner = (f"SELECT *, session_window({ts}, {_duration(interval_ms(_arg(args, 1, name)))})"
                 f" AS __w FROM ({source.sql(dialect='spark')})")
    elif name == "SESSION":
        keys = [f"`{k.name}`" for k in others if isinstance(k, exp.Column)]
        if len(keys) != len(others):
            raise FlinkSqlError("SESSION group windows take column keys only")
        inner = _session_sql(f"({source.sql(dialect='spark')})", ts,
                             interval_ms(_arg(args, 1, name)), keys, n)
    else:
        inner = _fixed_window_sql("TUMBLE" if name == "TUMBLE" else "HOP",
                                  legacy_window_args(name, args),
                                  f"({source.sql(dialect='spark')})", ts, n)
    for part in ("expressions", "having", "order", "qualify"):
        for item in select.args.get(part) or []:
            for column in item.find_all(exp.Column) if isinstance(item, exp.Expression) else []:
                column.set("table", None)
    for column in (c for g in others for c in g.find_all(exp.Column)):
        column.set("table", None)
    select.set("from_", exp.From(this=_subquery(inner, f"__g{n}")))
    select.set("joins", None)
    select.set("where", None)
    window_ends = [exp.column(f"__s{n}"), exp.column(f"__e{n}")]
    if streaming:  # the window struct carries the watermark (see to_spark_sql)
        window_ends = [exp.column("__w")] if session_struct else [*window_ends,
                                                                   exp.column("__w")]
    select.set("group", exp.Group(expressions=[*window_ends, *others]))
    start: exp.Expression
    end: exp.Expression
    if session_struct:
        start, end = (exp.Dot(this=exp.column("__w"), expression=exp.to_identifier(f))
                      for f in ("start", "end"))
    else:
        start, end = exp.column(f"__s{n}"), exp.column(f"__e{n}")
    select.transform(lambda node: window_aux(node, name, start, end), copy=False)


def _subquery(sql: str, alias: str) -> exp.Expression:
    query = sqlglot.parse_one(sql, read="spark")
    assert isinstance(query, exp.Select)
    return query.subquery(alias)


def _arg(args: list[exp.Expression], i: int, name: str) -> exp.Expression:
    if i >= len(args):
        raise FlinkSqlError(f"{name} misses an argument")
    return args[i]


def legacy_window_args(name: str, args: list[exp.Expression]) -> dict[str, exp.Expression]:
    """A ``GROUP BY TUMBLE(ts, size[, offset])`` / ``HOP(ts, slide, size)`` call's arguments
    after ``ts``, by Flink's parameter names."""
    if name == "TUMBLE":
        result = {"SIZE": _arg(args, 1, name)}
        if len(args) > 2:
            result["OFFSET"] = args[2]
        return result
    return {"SLIDE": _arg(args, 1, name), "SIZE": _arg(args, 2, name)}


def window_aux(node: exp.Expression, name: str, start: exp.Expression,
               end: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Anonymous) and node.name.upper().startswith(name + "_"):
        which = node.name.upper()[len(name) + 1:]
        if which == "START":
            return start.copy()
        if which == "END":
            return end.copy()
        if which in _WINDOW_AUX:
            return exp.Sub(this=end.copy(), expression=exp.Interval(
                this=exp.Literal.string("0.001"), unit=exp.Var(this="SECOND")))
    return node


def _rewrite_node(node: exp.Expression) -> exp.Expression:
    replaced = builtin(node, lambda arg: arg.transform(_rewrite_node))
    if replaced is not None:
        return cast(exp.Expression, replaced)
    if isinstance(node, FlinkCast):  # its operand first: a replaced node is not visited
        node.set("this", node.this.transform(_rewrite_node))
        return _spark_cast(node)
    if isinstance(node, FlinkJson):
        return to_spark(node, lambda arg: arg.transform(_rewrite_node))
    if isinstance(node, (FlinkJsonObjectAgg, FlinkJsonArrayAgg)):
        return aggregate_to_spark(node, lambda arg: arg.transform(_rewrite_node))
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.JSON):
        return is_json(node, lambda arg: arg.transform(_rewrite_node))
    if isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.TIMESTAMPTZ) \
            and isinstance(node.this, exp.Literal):
        return exp.Cast(this=node.this, to=exp.DataType.build("TIMESTAMP_NTZ", dialect="spark"))
    if isinstance(node, exp.Column) and not node.table and node.name.upper() == "LOCALTIMESTAMP":
        return exp.Anonymous(this="localtimestamp", expressions=[])
    if isinstance(node, exp.Version):
        raise FlinkSqlError("FOR SYSTEM_TIME AS OF is not supported by sessioncluster in BATCH "
                            "mode (Flink docs: Queries / Joins / Temporal Joins)")
    if isinstance(node, (TableArgument, Descriptor)):
        raise FlinkSqlError("TABLE and DESCRIPTOR arguments are only allowed in a window "
                            "table-valued function in FROM (Flink docs: Windowing TVF)")
    if isinstance(node, exp.Lateral) and isinstance(node.this, exp.Anonymous) \
            and node.this.name.upper() == "TABLE":
        return _lateral_table(node)
    if isinstance(node, exp.Join) and is_lateral_on_true(node) and not node.side:
        # Spark plans JOIN LATERAL f(x) ON TRUE as a join of f's rows with the distinct x
        # (its rows out of their order); the CROSS JOIN it is runs f next to its input rows
        node.set("on", None)
        node.set("kind", "CROSS")
    if is_raw_json(node):
        raise FlinkSqlError(RAW_JSON_PLACE)
    if isinstance(node, exp.Anonymous):
        return _function(node)
    return node


def is_lateral_on_true(join: exp.Join) -> bool:
    """``[LEFT] JOIN LATERAL TABLE(f(x)) [AS T(a)] ON TRUE`` (an inner one is the comma form's
    join)."""
    lateral, on = join.this, join.args.get("on")
    return isinstance(lateral, exp.Lateral) and isinstance(lateral.this, exp.Anonymous) \
        and lateral.this.name.upper() == "TABLE" and isinstance(on, exp.Boolean) \
        and on.this is True and join.kind in ("", "INNER") and join.side in ("", "LEFT") \
        and not join.args.get("using")


def _lateral_table(node: exp.Lateral) -> exp.Lateral:
    """Flink's ``LATERAL TABLE(f(x)) [AS T(a, b)]`` as Spark's ``LATERAL f(x) [AS T(a, b)]``
    (a table function: a Python UDTF of the session)."""
    call = node.this
    if len(call.expressions) != 1 or not isinstance(call.expressions[0], exp.Func):
        raise FlinkSqlError("LATERAL TABLE(...) takes a call of a table function: LATERAL "
                            "TABLE(split(s)) (Flink docs: Queries / Joins / Table Function)")
    node.set("this", call.expressions[0])
    return node


def _function(node: exp.Anonymous) -> exp.Expression:
    name = node.name.upper()
    args = node.expressions
    if name == "CURRENT_WATERMARK":
        raise FlinkSqlError("CURRENT_WATERMARK is not supported in BATCH mode: a bounded table "
                            "has no watermark (Flink docs: System Functions / CURRENT_WATERMARK)")
    if name in _GROUP_WINDOWS or name == "CUMULATE" or name.split("_")[0] in _GROUP_WINDOWS \
            and name.split("_", 1)[-1] in _WINDOW_AUX:
        raise FlinkSqlError(f"{name} is only allowed in GROUP BY TUMBLE/HOP/SESSION(...) and in "
                            "FROM TABLE(...) (Flink docs: Queries / Window Aggregation)")
    if name == "ROW":  # a row constructor (a Python function's argument of all columns)
        node.set("this", "struct")  # in place: sqlglot's transform skips a new node's children
        return node
    if name in ("NOW", "PROCTIME"):
        return exp.Anonymous(this="current_timestamp", expressions=[])
    if name == "LOCALTIMESTAMP":
        return exp.Anonymous(this="localtimestamp", expressions=[])
    if name == "TO_TIMESTAMP":
        fmt = args[1] if len(args) > 1 else exp.Literal.string("yyyy-MM-dd HH:mm:ss")
        parsed = exp.Anonymous(this="try_to_timestamp", expressions=[args[0], fmt])
        return exp.Cast(this=parsed, to=exp.DataType.build("TIMESTAMP_NTZ", dialect="spark"))
    if name == "TO_TIMESTAMP_LTZ":  # epoch milliseconds (precision 3) or seconds (0)
        precision = args[1].name if len(args) > 1 and isinstance(args[1], exp.Literal) else "3"
        function = "timestamp_seconds" if precision == "0" else "timestamp_millis"
        return exp.Anonymous(this=function, expressions=[args[0]])
    if name == "REGEXP_EXTRACT":
        group = args[2] if len(args) > 2 else exp.Literal.number(0)
        extract = exp.Anonymous(this="regexp_extract", expressions=[args[0], args[1], group])
        matches = exp.RegexpLike(this=args[0].copy(), expression=args[1].copy())
        return exp.Case(ifs=[exp.If(this=matches, true=extract)])
    if name in _SAME_IN_SPARK:
        node.set("this", node.name.lower())
    return node  # the same node: its arguments are rewritten too (a new one's would not be)


#: Flink functions Spark has under the same name and meaning
_SAME_IN_SPARK = {"TIMESTAMPADD", "TIMESTAMPDIFF", "CHAR_LENGTH", "DATE_FORMAT", "TO_DATE"}


def unique_names(names: list[str]) -> list[str]:
    """A query's column names as Flink's (Calcite's) validator makes them unique: a name met
    before takes the first free one of ``<name>0``, ``<name>1``, … (``SELECT * FROM a JOIN b``
    of two tables with a ``key`` gives ``key``, ``key0``)."""
    used: set[str] = set()
    unique = []
    for name in names:
        candidate, n = name, 0
        while candidate in used:
            candidate, n = f"{name}{n}", n + 1
        used.add(candidate)
        unique.append(candidate)
    return unique


def flink_named(frame: Any) -> Any:
    """``frame`` with its columns named as Flink names a query's (:func:`unique_names`): Spark
    keeps a join's two ``key`` columns, which no later step could name apart."""
    names = unique_names(list(frame.columns))
    return frame if names == list(frame.columns) else frame.toDF(*names)
