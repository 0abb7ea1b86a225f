"""``flat_aggregate`` (a Python table aggregate function) over an unbounded table, in STREAMING
mode, on Spark's keyed runtime.

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
from typing import Any

from sqlglot import exp

from ...api.table.typeparser import spark_type
from ..streaming import ROCKSDB_PROVIDER
from .dialect import plan_text
from .functions import CatalogFunction, FunctionCatalog
from .model import CatalogTable, FlinkSqlError
from .planner import to_spark_sql
from .udf_runners import TableAggregateRunner, table_aggregate_processor

#: the column of a changelog query's rows that holds their RowKind (``+I``, ``-D``)
ROW_KIND = "__flink_rowkind"


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


def plan_on_keyed_state(session: Any, query: exp.Expr, schemas: dict[str, CatalogTable],
                        functions: FunctionCatalog, changes: tuple[str, str] | None = None
                        ) -> exp.Expr | None:
    """``query`` with its table aggregation read from a ``transformWithStateInPandas`` view
    of ``session`` and :data:`ROW_KIND` carried to its last column; None when it calls no
    table aggregate function. FlinkSqlError for a query around it that is not a projection
    (an aggregation of the changelog). ``changes``: the RowKind and sequence columns of the
    table aggregation's input, when it reads an updating query's changes."""
    query = query.copy()
    found = table_aggregation(query, functions)
    if found is None:
        return None
    select, call, function = found
    keys = _group_keys(select)
    # no leading underscore: pyspark hands the processor its rows through namedtuples, which
    # rename such fields
    key_names = [f"flink_key{i}" for i in range(max(len(keys), 1))]
    arguments = [f"flink_argument{i}" for i in range(len(call.expressions))]
    source = select.copy()
    source.set("group", None)
    source.set("expressions",
               [exp.alias_(k.copy(), n) for k, n in zip(keys, key_names)]
               + ([] if keys else [exp.alias_(exp.Literal.number(0), key_names[0])])
               + [exp.alias_(a.copy(), n) for a, n in zip(call.expressions, arguments)]
               + [exp.column(c) for c in changes or ()])
    frame = session.sql(to_spark_sql(source, schemas, streaming=True))
    rows = next(e.alias_or_name for e in select.expressions if call in e.find_all(exp.Anonymous))
    view = _keyed_view(session, frame, function, key_names, arguments, rows, changes)
    items: list[exp.Expr] = []
    for expression in select.expressions:
        if call in expression.find_all(exp.Anonymous):
            items.append(exp.column(rows, quoted=True))
            continue
        position = next((i for i, k in enumerate(keys) if k == expression.unalias()), None)
        if position is None:
            raise FlinkSqlError(f"flat_aggregate selects {expression.sql()}, which is neither "
                                "a group key nor the function's rows")
        items.append(exp.alias_(exp.column(key_names[position]), expression.alias_or_name,
                                quoted=True))
    items.append(exp.column(ROW_KIND))
    replacement = exp.select(*items).from_(exp.to_identifier(view, quoted=True))
    select.replace(replacement)
    carry_row_kind(replacement, "flat_aggregate")
    return query


def _keyed_view(session: Any, frame: Any, function: CatalogFunction, keys: list[str],
                arguments: list[str], rows: str, changes: tuple[str, str] | None) -> str:
    """A view of ``session``: ``frame`` grouped by ``keys`` into the function's keyed
    processor; its columns the keys, ``rows`` (the array of result rows) and :data:`ROW_KIND`."""
    from pyspark.sql.types import DataType, StringType, StructField, StructType

    # transformWithStateInPandas needs RocksDB
    session.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
    wrapper = function.wrapper
    array = DataType.fromDDL(spark_type(f"ARRAY<{wrapper.result_data_types()[0]}>"))
    schema = StructType([frame.schema[k] for k in keys]
                        + [StructField(rows, array), StructField(ROW_KIND, StringType())])
    runner = TableAggregateRunner(wrapper.function, secrets.token_hex(8), wrapper.name,
                                  function.parameters)
    processor = table_aggregate_processor(runner, keys, arguments, rows, ROW_KIND, changes)
    keyed = frame.groupBy(*keys).transformWithStateInPandas(processor, schema, "Append", "None")
    view = f"__flink_table_aggregate_{secrets.token_hex(6)}"
    keyed.createOrReplaceTempView(view)
    return view


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
