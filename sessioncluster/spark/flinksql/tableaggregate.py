"""``flat_aggregate`` (a Python table aggregate function) and a group aggregation calling
general Python aggregate functions (``udaf``) over an unbounded table, in STREAMING mode, on
Spark's keyed runtime.

A ``udaf``'s group aggregation (``SELECT k, wavg(v, w) FROM t GROUP BY k``, or a global one)
runs the same way: the key's accumulators and count of rows in the state store, each
micro-batch's rows of the key accumulated (retracted, over an updating query's changes), and
Flink's changelog of its values once per bundle: ``+I`` of a new key, ``-U``/``+U`` of a
changed one, nothing for an unchanged one (PyFlink 2.3's ``PythonGroupAggregate``,
/work/briefs/data/udafstream/probe1.out). Built-in aggregates mixed in (``COUNT``, ``SUM``,
``MIN``, ``MAX``, ``AVG``) run in the same keyed state as Python accumulators with retraction
(:mod:`.builtinaggregates`), as Flink runs them; a pandas UDAF is refused with Flink's message.

The Table API writes ``group_by(k).flat_aggregate(f(v))`` as a grouping query whose value is the
array of the group's rows, unnested by the query around it (see ``FlatAggregateTable``). Over a
bounded table that runs as in BATCH. Over an unbounded one the grouping query is replaced by
``groupBy(keys).transformWithStateInPandas`` (append mode, no timers): the key's accumulator in
Spark's state store (checkpointed with the query, so a restart or a savepoint continues the
groups), each micro-batch's rows of the key accumulated as Flink's ``GroupTableAggFunction``
does a bundle's, and per changed key two rows: the rows emitted before as ``-D`` and the rows
emitted now as ``+I`` (what Flink 2.3 emits, probed with PyFlink). The RowKind travels as the
last column (:data:`ROW_KIND`) through the stateless query around it to the sink.
``transformWithStateInPandas`` rather than ``applyInPandasWithState``: it is what the keyed
DataStream operators run on (RocksDB state store), and its state is typed per name.
"""

from __future__ import annotations

import secrets
from functools import partial
from typing import Any

from sqlglot import exp

from ...api.table.changelog_mode import ROW_KIND_COLUMN
from ...api.table.table import WINDOW_INPUT
from ...api.table.typeparser import spark_type
from ...api.table.udf import PANDAS
from ..streaming import ROCKSDB_PROVIDER
from .builtinaggregates import BuiltinAggregate, builtin_arguments, builtin_name
from .dialect import plan_text
from .functions import CatalogFunction, FunctionCatalog, returns_row
from .model import CatalogTable, FlinkSqlError
from .planner import to_spark_sql
from .udf_runners import (
    AggregateRunner,
    GroupAggregateRunner,
    TableAggregateRunner,
    keyed_processor,
    table_aggregate_changes,
)

#: the column of a changelog query's rows that holds their RowKind (``+I``, ``-D``)
ROW_KIND = ROW_KIND_COLUMN


def table_aggregation(query: exp.Expr, functions: FunctionCatalog
                      ) -> tuple[exp.Select, exp.Anonymous, CatalogFunction] | None:
    """The query's grouping select calling a table aggregate function, the call and the
    function; None when it calls none."""
    for call in query.find_all(exp.Anonymous):
        function = functions.table_aggregate(call.name)
        select = call.find_ancestor(exp.Select)
        if function is not None and select is not None:
            return select, call, function
    return None


def updating_node(select: exp.Select, call: exp.Anonymous, function: CatalogFunction) -> str:
    """Flink's name of the node a table aggregation is planned as (its messages name it)."""
    return f"PythonGroupTableAggregate({', '.join(node_attributes(select, call, function))})"


def node_attributes(select: exp.Select, call: exp.Anonymous, function: CatalogFunction
                    ) -> list[str]:
    """The attributes of a table aggregation's node in Flink's plans (``groupBy=[k]``,
    ``select=[k, Top2(v) AS (a)]``)."""
    keys = group_key_names(select)
    arguments = ", ".join(plan_text(a) for a in call.expressions)
    names = ", ".join(function.wrapper.result_names())
    items = keys + [f"{function.wrapper.name or function.name}({arguments}) AS ({names})"]
    return ([f"groupBy=[{', '.join(keys)}]"] if keys else []) + [f"select=[{', '.join(items)}]"]


def group_key_names(select: exp.Select) -> list[str]:
    """A table aggregation's group keys as Flink's plans print them."""
    return [plan_text(k) for k in _group_keys(select)]


def _group_keys(select: exp.Select) -> list[exp.Expression]:
    group = select.args.get("group")
    return list(group.expressions) if group is not None else []


def python_aggregation(query: exp.Expr, functions: FunctionCatalog
                       ) -> tuple[exp.Select, list[tuple[exp.Anonymous, CatalogFunction]]] | None:
    """The query's grouping select (not a group window aggregation) calling general Python
    aggregate functions (``udaf``, not ``func_type='pandas'``) and those calls; None when it
    calls none. A window TVF's aggregation is one: Flink 2.3 plans it as a
    ``PythonGroupAggregate`` grouped by ``window_start``, ``window_end`` and the keys, an
    updating query (/work/briefs/data/udafwin/probe2.out, f1-f3)."""
    for select in query.find_all(exp.Select):
        calls = [(c, f) for c in select.find_all(exp.Anonymous)
                 if c.parent_select is select
                 and (f := functions.aggregate(c.name)) is not None]
        if calls and not is_group_window_aggregation(select) \
                and not is_session_tvf_aggregation(select):
            return select, calls
    return None


_LEGACY_WINDOWS = ("TUMBLE", "HOP", "SESSION")


def is_group_window_aggregation(select: exp.Select) -> bool:
    """Whether ``select`` is a group window aggregation (Flink's ``GroupWindowAggregate``):
    ``GROUP BY TUMBLE(ts, ...)`` (``HOP``, ``SESSION``), or the Table API's
    ``window(Tumble...)`` (a window TVF over :data:`WINDOW_INPUT`)."""
    if any(isinstance(k, exp.Anonymous) and k.name.upper() in _LEGACY_WINDOWS
           for k in _group_keys(select)):
        return True
    from_ = select.args.get("from_")
    table = from_.this if from_ is not None else None
    return isinstance(table, exp.Table) and isinstance(table.this, exp.Anonymous) \
        and table.this.name.upper() == "TABLE" and any(
            t.name == WINDOW_INPUT for t in table.this.find_all(exp.Table))


def is_session_tvf_aggregation(select: exp.Select) -> bool:
    """Whether ``select`` aggregates a SESSION window TVF: Flink's ``WindowTableFunction``
    of a session emits its rows once the watermark passes the session's end, so a Python
    aggregate function over them gives each window's row once (``+I``), as a group window's
    (/work/briefs/data/lead29/session_udaf.out, h1, h3)."""
    from_ = select.args.get("from_")
    table = from_.this if from_ is not None else None
    call = table.this if isinstance(table, exp.Table) else None
    return isinstance(call, exp.Anonymous) and call.name.upper() == "TABLE" \
        and any(isinstance(a, exp.Anonymous) and a.name.upper() == "SESSION"
                for a in call.expressions)


def python_aggregate_node(select: exp.Select) -> str:
    """Flink's name of a grouping select calling Python aggregate functions (its messages
    name it): ``PythonGroupAggregate(groupBy=[k], select=[k, wavg(v, w) AS a])``."""
    return f"PythonGroupAggregate({', '.join(python_aggregate_attributes(select))})"


def python_aggregate_attributes(select: exp.Select) -> list[str]:
    """The attributes of :func:`python_aggregate_node`: ``groupBy=[k]`` (none for a global
    aggregation), ``select=[k, wavg(v, w) AS a]``."""
    keys = group_key_names(select)
    items = ", ".join(plan_text(e) for e in select.expressions)
    for call in select.find_all(exp.Anonymous):  # the function's name as it was called
        arguments = ", ".join(plan_text(a) for a in call.expressions)
        items = items.replace(plan_text(call), f"{call.name}({arguments})")
    return ([f"groupBy=[{', '.join(keys)}]"] if keys else []) + [f"select=[{items}]"]


#: a call a keyed group aggregation runs: a Python aggregate function's (with its catalog
#: entry) or a built-in aggregate function's (with its name, :mod:`.builtinaggregates`)
Call = tuple[exp.Expression, CatalogFunction | str]


def with_builtin_calls(select: exp.Select, calls: list[Call]) -> list[Call]:
    """``calls`` and the built-in aggregate calls of ``select`` (``COUNT``, ``SUM``, ``MIN``,
    ``MAX``, ``AVG``), which run as Python accumulators with retraction beside the Python
    aggregate functions, as Flink 2.3's ``PythonGroupAggregate`` runs them (probe1.out, b1,
    b2). FlinkSqlError for another built-in one, or a ``DISTINCT`` one."""
    builtins = [a for e in select.expressions for a in e.find_all(exp.AggFunc)
                if a.parent_select is select]
    for call in builtins:
        if builtin_name(call) is None:
            raise FlinkSqlError(
                f"The built-in aggregate function {plan_text(call)} in the same group "
                f"aggregation as a Python aggregate function ({python_aggregate_node(select)}) "
                "over an unbounded table is not supported by sessioncluster in STREAMING mode "
                "yet (COUNT, SUM, MIN, MAX and AVG are): compute it in a query of its own, or "
                "run the mix in BATCH mode or over bounded tables")
    return calls + [(c, str(builtin_name(c))) for c in builtins]


def _arguments_of(call: exp.Expression) -> list[exp.Expression]:
    return builtin_arguments(call) if isinstance(call, exp.AggFunc) else list(call.expressions)


def plan_on_keyed_state(session: Any, query: exp.Expr, schemas: dict[str, CatalogTable],
                        functions: FunctionCatalog, changes: tuple[str, str] | None = None
                        ) -> exp.Expr | None:
    """``query`` with its table aggregation (``flat_aggregate``) or its group aggregation
    calling general Python aggregate functions read from a ``transformWithStateInPandas``
    view of ``session`` and :data:`ROW_KIND` carried to its last column; None when it calls
    neither. FlinkSqlError for a query around it that is not a projection (an aggregation of
    the changelog), or a select mixing built-in aggregate functions. ``changes``: the RowKind
    and sequence columns of the table aggregation's input, when it reads an updating query's
    changes."""
    query = query.copy()
    found = table_aggregation(query, functions)
    aggregates = None if found is not None else python_aggregation(query, functions)
    if found is None and aggregates is None:
        return None
    select, given_calls = (found[0], [found[1:]]) if found is not None \
        else aggregates  # type: ignore[misc]
    calls: list[Call] = list(given_calls)
    if found is None:
        calls = with_builtin_calls(select, calls)
    if found is None and select.args.get("having") is not None:
        # Flink filters the changelog after the aggregation (a value that stops passing is
        # retracted); the keyed processor emits every change, so HAVING is not dropped silently
        raise FlinkSqlError(
            f"HAVING over a group aggregation calling a Python aggregate function "
            f"({python_aggregate_node(select)}) over an unbounded table is not supported by "
            "sessioncluster in STREAMING mode yet: filter the aggregation's result in a query "
            "around it, or run it in BATCH mode or over bounded tables")
    return _on_keyed_state(session, query, select, calls, found, schemas, changes)


def plan_builtins_on_keyed_state(session: Any, query: exp.Expr, select: exp.Select,
                                 schemas: dict[str, CatalogTable], changes: tuple[str, ...],
                                 what: str) -> exp.Expr:
    """``query`` with its group aggregation ``select`` of built-in aggregate functions
    (``COUNT``, ``SUM``, ``MIN``, ``MAX``, ``AVG``) over a changelog's records (``changes``:
    their RowKind, position and sub-position columns) read from a keyed view: each record accumulated or
    retracted and its change emitted record by record, as Flink's ``GroupAggFunction`` does
    (``+I`` of a new key, ``-U``/``+U``, ``-D`` when the key's last row is retracted).
    FlinkSqlError (naming ``what``, the changelog's maker) for another aggregate function or
    a ``HAVING``."""
    position = next(i for i, s in enumerate(query.find_all(exp.Select)) if s is select)
    query = query.copy()
    select = list(query.find_all(exp.Select))[position]
    calls = [a for e in select.expressions for a in e.find_all(exp.AggFunc)
             if a.parent_select is select]
    unknown = [c for c in calls if builtin_name(c) is None]
    if unknown or select.args.get("having") is not None or is_group_window_aggregation(select):
        refused = plan_text(unknown[0]) if unknown else "HAVING" if select.args.get(
            "having") is not None else "a group window"
        raise FlinkSqlError(
            f"{refused} in a group aggregation over {what} is not supported by sessioncluster "
            "yet: COUNT, SUM, MIN, MAX and AVG of a GROUP BY (or a global aggregation) apply "
            "its RowKinds")
    return _on_keyed_state(session, query, select, [(c, str(builtin_name(c))) for c in calls],
                           None, schemas, changes, what)


def _on_keyed_state(session: Any, query: exp.Expr, select: exp.Select, calls: list[Call],
                    found: Any, schemas: dict[str, CatalogTable],
                    changes: tuple[str, ...] | None, over_changelog: str | None = None
                    ) -> exp.Expr:
    """``query`` (a copy) with ``select`` (a table aggregation when ``found``, else a group
    aggregation of ``calls``) read from its keyed view, :data:`ROW_KIND` carried up.
    ``over_changelog``: the maker of the changelog a group aggregation of built-in functions
    reads (its changes then emitted per record)."""
    keys = _group_keys(select)
    # no leading underscore: pyspark hands the processor its rows through namedtuples, which
    # rename such fields
    key_names = [f"flink_key{i}" for i in range(max(len(keys), 1))]
    given = [a for c, _ in calls for a in _arguments_of(c)]
    arguments = [f"flink_argument{i}" for i in range(len(given))]
    source = select.copy()
    source.set("group", None)
    source.set("having", None)
    source.set("expressions",
               [exp.alias_(k.copy(), n) for k, n in zip(keys, key_names)]
               + ([] if keys else [exp.alias_(exp.Literal.number(0), key_names[0])])
               + [exp.alias_(a.copy(), n) for a, n in zip(given, arguments)]
               + [exp.alias_(exp.column(c), n) for c, n in zip(changes or (), _CHANGES)])
    frame = session.sql(to_spark_sql(source, schemas, streaming=True))
    if found is not None:
        outputs = [next(e.alias_or_name for e in select.expressions
                        if found[1] in e.find_all(exp.Anonymous))]
    else:
        outputs = [f"flink_value{i}" for i in range(len(calls))]
    view = _keyed_view(session, frame, calls, key_names, arguments, outputs,
                       _CHANGES[:len(changes)] if changes else None, over_changelog is not None)
    replacement = exp.select(*_items(select, keys, key_names, calls, outputs, found is not None),
                             ROW_KIND).from_(exp.to_identifier(view, quoted=True))
    if select is query:
        return replacement
    select.replace(replacement)
    carry_row_kind(replacement, "flat_aggregate" if found is not None
                   else f"the group aggregation over {over_changelog}" if over_changelog
                   else python_aggregate_node(select))
    return query


#: the input's RowKind, position and sub-position columns as the keyed processor reads them
#: (no leading underscore: see the key columns)
_CHANGES = ("flink_change_kind", "flink_change_position", "flink_change_subposition")


def _items(select: exp.Select, keys: list[exp.Expression], key_names: list[str],
           calls: list[Call], outputs: list[str],
           table: bool) -> list[exp.Expr]:
    """The select's items over the keyed view: a group key as its column, a table
    aggregation's rows as the rows column, a call of an aggregate function as its value's."""
    items: list[exp.Expr] = []
    for expression in select.expressions:
        position = next((i for i, k in enumerate(keys) if k == expression.unalias()), None)
        if position is not None:
            items.append(exp.alias_(exp.column(key_names[position]), expression.alias_or_name,
                                    quoted=True))
            continue
        called = [i for i, (c, _) in enumerate(calls)
                  if c in expression.find_all(exp.Anonymous, exp.AggFunc)]
        if table and called:
            items.append(exp.column(outputs[0], quoted=True))
            continue
        if not called:
            raise FlinkSqlError(f"{'flat_aggregate' if table else 'The group aggregation'} "
                                f"selects {expression.sql()}, which is neither a group key "
                                "nor " + ("the function's rows" if table else
                                          "a Python aggregate function's value"))
        item = expression.copy()
        for call in list(item.find_all(exp.Anonymous, exp.AggFunc)):
            index = next((i for i, (c, _) in enumerate(calls) if c == call), None)
            if index is not None:
                call.replace(exp.column(outputs[index], quoted=True))
        items.append(item if isinstance(item, exp.Alias)
                     else exp.alias_(item, expression.alias_or_name, quoted=True))
    return items


def _keyed_view(session: Any, frame: Any, calls: list[Call], keys: list[str],
                arguments: list[str], outputs: list[str],
                changes: tuple[str, ...] | None, per_record: bool = False) -> str:
    """A view of ``session``: ``frame`` grouped by ``keys`` into the functions' keyed
    processor; its columns the keys, ``outputs`` (a table aggregate's array of result rows,
    or each aggregate function's value) and :data:`ROW_KIND`."""
    from pyspark.sql.types import StringType, StructField, StructType

    # transformWithStateInPandas needs RocksDB
    session.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
    fields, runners = [], []
    widths: list[int] = []
    for (call, function), name in zip(calls, outputs):
        argument = arguments[sum(widths):sum(widths) + 1]
        widths.append(len(_arguments_of(call)))
        field_type, runner = _runner(function, [frame.schema[a].dataType for a in argument])
        fields.append(StructField(name, field_type))
        runners.append(runner)
    schema = StructType([frame.schema[k] for k in keys] + fields
                        + [StructField(ROW_KIND, StringType())])
    if isinstance(runners[0], TableAggregateRunner):
        step: Any = partial(table_aggregate_changes, runners[0])
    else:
        step = GroupAggregateRunner([r for r in runners if isinstance(r, AggregateRunner)],
                                    widths, per_record).changes
    processor = keyed_processor(step, keys, arguments, outputs, ROW_KIND, changes)
    keyed = frame.groupBy(*keys).transformWithStateInPandas(processor, schema, "Append", "None")
    view = f"__flink_keyed_aggregate_{secrets.token_hex(6)}"
    keyed.createOrReplaceTempView(view)
    return view


def _runner(function: CatalogFunction | str, argument_types: list[Any]
            ) -> tuple[Any, AggregateRunner | TableAggregateRunner]:
    """A call's Spark type of its value and its runner: a Python function's, or a built-in
    one's (:class:`.BuiltinAggregate`; its value typed as Flink's: ``COUNT`` a BIGINT,
    ``SUM`` of a ``DECIMAL(p, s)`` a ``DECIMAL(38, s)``, ``AVG`` of one a
    ``DECIMAL(38, max(6, s))``, the others their argument's type)."""
    from pyspark.sql.types import DataType, DecimalType, IntegralType, LongType

    token = secrets.token_hex(8)
    if isinstance(function, str):
        typed = LongType() if function == "COUNT" else argument_types[0]
        scale = None
        if isinstance(typed, DecimalType) and function in ("SUM", "AVG"):
            scale = typed.scale if function == "SUM" else max(6, typed.scale)
            typed = DecimalType(38, scale)
        integral = isinstance(typed, IntegralType)
        builtin = AggregateRunner(BuiltinAggregate(function, integral, scale), token, function, {})
        builtin.user_code = False
        return typed, builtin
    wrapper = function.wrapper
    boxed = wrapper.kind == "table_aggregate" or returns_row(wrapper)
    text = str(wrapper.result_data_types()[0])
    make = TableAggregateRunner if wrapper.kind == "table_aggregate" else AggregateRunner
    runner = make(wrapper.function, token, wrapper.name, function.parameters)
    runner.dependencies = function.dependencies
    if isinstance(runner, AggregateRunner):
        runner.boxed = boxed
    return DataType.fromDDL(spark_type(f"ARRAY<{text}>" if boxed else text)), runner


#: Flink 2.3's error for a ``func_type='pandas'`` aggregate function in a group aggregation or
#: a window TVF aggregation in STREAMING mode (/work/briefs/data/udafstream/probe1.out, d1/d2)
PANDAS_UDAF_STREAMING = ("Cannot generate a valid execution plan for the given query: \n\n"
                         "Pandas UDAFs are not supported in streaming mode currently.\n\n"
                         "Please check the documentation for the set of currently supported "
                         "SQL features.")


def python_aggregate_refusal(name: str, functions: FunctionCatalog | None = None,
                             query: Any = None) -> str:
    """Why an aggregation calling the Python aggregate function ``name`` over an unbounded
    table is refused in STREAMING mode: a pandas one (in a group aggregation or a window TVF's
    aggregation; a group window's runs, :mod:`.pythonwindow`) with Flink's message; otherwise
    by name. A general one in a group aggregation or a window TVF's runs on keyed state."""
    function = functions.functions.get(name.lower()) if functions is not None else None
    if function is not None and function.wrapper.func_type == PANDAS and query is not None:
        return PANDAS_UDAF_STREAMING
    return (f"The Python aggregate function {name} in this query over an unbounded table is "
            "not supported by sessioncluster in STREAMING mode yet: it runs in a group "
            "aggregation and a window aggregation, in BATCH mode and over bounded tables "
            "(Flink docs: Python / Table API / User-defined Functions / General User-defined "
            "Functions / Aggregate Functions)")


def carry_row_kind(select: exp.Select, what: str) -> None:
    """Add :data:`ROW_KIND` to each select around ``select`` (one with ``*`` has it); ``what``
    (the changelog's maker, for the error of an aggregation around it)."""
    node = select.parent
    while node is not None:
        if isinstance(node, exp.Select):
            aggregating = node.args.get("group") is not None or any(
                True for e in node.expressions for _ in e.find_all(exp.AggFunc))
            if aggregating or node.args.get("distinct") is not None:
                raise FlinkSqlError(f"An aggregation of the rows of {what} over an "
                                    "unbounded table is not supported by sessioncluster in "
                                    "STREAMING mode yet")
            if not any(isinstance(e, exp.Star) or e.is_star for e in node.expressions):
                node.append("expressions", exp.column(ROW_KIND))
        node = node.parent
