"""EXPLAIN of a query, an INSERT or a statement set: Flink's sections (:mod:`.explain`) from
the statement's Spark plan (:mod:`.explain_spark`), Spark's own plan last."""

from __future__ import annotations

import re
from typing import Any, Protocol

from sqlglot import exp

from . import explain, explain_spark
from .catalog import Catalog
from .columntypes import flink_types
from .ctas import CreateTableAs, derived_table
from .dialect import cte_names, plan_text
from .explainmatch import distribution, physical_match
from .functions import FunctionCatalog
from .matchrecognize import read_plan
from .model import CatalogTable, FlinkSqlError
from .outcome import StatementOutcome
from .statements import Explain, Insert, Query, StatementSet
from .tableaggregate import (
    group_key_names,
    is_group_window_aggregation,
    node_attributes,
    python_aggregate_attributes,
    python_aggregation,
    table_aggregation,
)
from .updating import updating_node


class Planner(Protocol):
    """What EXPLAIN needs of the session's planner (:class:`.executor.FlinkSqlPlanner`)."""

    spark: Any
    catalog: Catalog
    functions: FunctionCatalog

    def frame(self, query: Any) -> Any: ...

    def spark_sql(self, query: Any) -> str: ...

    def table(self, name: str) -> CatalogTable: ...

    def resolve(self, name: str) -> tuple[str, CatalogTable | None]: ...

    def conform(self, frame: Any, table: CatalogTable, insert: Insert,
                passed: tuple[str, ...] = ()) -> Any: ...


def explain_statement(planner: Planner, statement: Explain,
                      streaming: bool = False) -> StatementOutcome:
    """Flink's EXPLAIN sections (see :mod:`.explain`), Spark's physical plan last. In
    STREAMING the physical plan is Spark's plan of the query over the tables as they are
    now, its aggregates named as the streaming job runs them (stateful, in Spark's state
    store) and each scan of a table with a watermark under its WatermarkAssigner."""
    explain.check_details(statement.details)
    inner = statement.statement
    if isinstance(inner, CreateTableAs):
        return _explain_ctas(planner, statement, inner, streaming)
    if isinstance(inner, Query):
        queries: list[tuple[Insert | None, Any]] = [(None, inner.ast)]
    elif isinstance(inner, (Insert, StatementSet)):
        inserts = [inner] if isinstance(inner, Insert) else inner.inserts
        queries = [(i, i.query) for i in inserts]
    else:
        raise FlinkSqlError("EXPLAIN takes a query, an INSERT or a STATEMENT SET")
    if streaming and any(query.find(exp.Version) for _, query in queries):
        raise FlinkSqlError("EXPLAIN of a temporal join (FOR SYSTEM_TIME AS OF) is not "
                            "supported by sessioncluster yet; the query itself runs")
    asts, physicals, spark_plans = [], [], []
    for insert, query in queries:
        frame = planner.frame(query)
        scanned = _scanned_tables(planner, query)
        watermarks = _watermarks(planner, scanned) if streaming else {}
        builder = explain.AstBuilder({name: columns for name, columns, _ in scanned},
                                     watermarks, planner.functions.aggregate_calls(query))
        windows = explain.window_functions(query)
        physical = explain_spark.translate(frame._jdf.queryExecution().executedPlan(),
                                           scanned, windows)
        for match in query.find_all(exp.MatchRecognize):
            physical = _with_match(planner, match, physical, scanned, builder)
        aggregation = table_aggregation(query, planner.functions)
        if streaming:
            physical = explain.as_streaming(physical, bool(windows), watermarks, any(
                is_group_window_aggregation(s) for s in query.find_all(exp.Select)))
        python = python_aggregation(query, planner.functions)
        if streaming and python is not None:
            physical = explain.as_python_group_aggregate(
                physical, python_aggregate_attributes(python[0]))
        if streaming and aggregation is not None:
            select, call, function = aggregation
            physical = explain.as_table_aggregate(
                physical, node_attributes(select, call, function),
                [*group_key_names(select), *function.wrapper.result_names()])
        if insert is not None:
            table = planner.table(insert.target)
            frame = planner.conform(frame, table, insert)
            sink = builder.sink(table.name, insert.columns, query)
            asts.append(sink)
            physical = explain.PlanNode("Sink", sink.attrs[:2], [physical])
        else:
            asts.append(builder.rel(query))
        if aggregation is not None:
            select, call, function = aggregation
            asts[-1] = explain.as_table_aggregate_ast(
                asts[-1], function.wrapper.name or function.name, group_key_names(select),
                [plan_text(a) for a in call.expressions])
        physicals.append(physical)
        mode = "COST " if "ESTIMATED_COST" in statement.details else ""
        spark_plans.append(planner.spark.sql(f"EXPLAIN {mode}{planner.spark_sql(query)}"
                                          ).collect()[0][0])
    updating = any(updating_node(query) is not None for _, query in queries)
    text = explain.explain_text(asts, physicals, "\n".join(spark_plans),
                                statement.details, streaming=streaming, updating=updating)
    return StatementOutcome("SUCCESS_WITH_CONTENT", ["result"], ["STRING"], [(text,)])

def _explain_ctas(planner: Planner, statement: Explain, ctas: CreateTableAs,
                  streaming: bool) -> StatementOutcome:
    """EXPLAIN of a CTAS: its INSERT's, into the table it makes (put in the catalog while it is
    explained only: EXPLAIN makes no table)."""
    frame = planner.frame(ctas.query)
    key, tables = ctas.table.name.lower(), planner.catalog.tables
    table = tables.get(key) if ctas.if_not_exists else None
    if table is None:
        table = derived_table(ctas, list(zip(frame.columns, flink_types(frame.schema))))
    names = [c.name for c in table.physical_columns]
    insert = Insert(table.name, ctas.query,
                    columns=[] if names == list(frame.columns) else list(frame.columns))
    before = tables.get(key)
    tables[key] = table
    try:
        return explain_statement(planner, Explain(insert, statement.details), streaming)
    finally:
        if before is None:
            del tables[key]
        else:
            tables[key] = before


#: the columns of the matches' rows as :mod:`.matchrecognize` makes them, not Flink's
_MATCH_COLUMNS = re.compile(r"\b__(atom\d+|at|seq|n)\b")


def _with_match(planner: Planner, match: exp.MatchRecognize, physical: explain.PlanNode,
                scanned: list[tuple[str, list[str], str]], builder: explain.AstBuilder
                ) -> explain.PlanNode:
    """``physical`` with the operators that read a MATCH_RECOGNIZE's matches (the scan of
    their rows, their measures, their order) as Flink's ``Match`` over an ``Exchange`` by the
    PARTITION BY columns over the plan of its input; a condition Spark pushed into them is
    kept in a Calc above."""
    source = match.parent.args["from_"].this.copy() if match.parent is not None else None
    if not isinstance(source, exp.Expr):
        return physical
    if isinstance(source, exp.Table) and source.alias:
        source.set("alias", None)
    frame = planner.frame(exp.select("*").from_(source))
    below = explain_spark.translate(frame._jdf.queryExecution().executedPlan(), scanned)
    plan = read_plan(match)
    types = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    node = explain.PlanNode("Match", physical_match(match, types, lambda e: builder.rex(e, [])),
                            [explain.PlanNode("Exchange", [f"distribution=[{distribution(plan)}]"],
                                              [below])],
                            [("", n) for n in plan.partition] + [("", n) for n, _ in plan.measures])
    path = _path_to_matches(physical)
    if not path:
        return physical
    top = next(i for i, n in enumerate(path) if all(
        _MATCH_COLUMNS.search(" ".join(m.attrs)) for m in path[i:]))
    names = {m.group(1): m.group(2) for n in path[top:] for a in n.attrs
             for m in re.finditer(r"\b(__atom\d+) AS (\w+)", a)}
    pushed = [re.sub(r"\b__atom\d+\b", lambda m: names.get(m.group(0), m.group(0)), a)
              for n in path[top:] for a in n.attrs if a.startswith("where=")]
    outputs = f"select=[{', '.join(n for _, n in node.fields)}]"
    if top > 0 and path[top - 1].name == "Calc" and path[top - 1].attrs == [outputs]:
        top -= 1  # a Calc that only names the Match's fields: Flink has none
    parent = path[top - 1] if top > 0 else None
    if pushed and parent is not None and parent.name == "Calc" and not any(
            a.startswith("where=") for a in parent.attrs):
        parent.attrs += pushed  # one Calc, as Flink's
    elif pushed:
        node = explain.PlanNode("Calc", [outputs, *pushed], [node], node.fields)
    if parent is None:
        return node
    parent.inputs = [node if child is path[top] else child for child in parent.inputs]
    return physical


def _path_to_matches(node: explain.PlanNode) -> list[explain.PlanNode]:
    """The nodes from ``node`` down to the scan of a MATCH_RECOGNIZE's rows (none: [])."""
    if node.name == "TableSourceScan" and any("__seq" in a for a in node.attrs):
        return [node]
    for child in node.inputs:
        below = _path_to_matches(child)
        if below:
            return [node, *below]
    return []


def _watermarks(planner: Planner, scanned: list[tuple[str, list[str], str]]
                ) -> dict[str, tuple[str, str]]:
    """table -> (rowtime, watermark expression) of the scanned tables with a watermark."""
    out = {}
    for name, _, _ in scanned:
        table = planner.catalog.table(name)
        if table is not None and table.watermark is not None:
            out[name] = (table.watermark.rowtime, table.watermark.expression)
    return out

def _scanned_tables(planner: Planner, query: Any) -> list[tuple[str, list[str], str]]:
    """(name, columns, path) of each table or view ``query`` reads, in the order it names
    them (their Spark views made already by the planner's ``spark_sql``)."""
    scanned: list[tuple[str, list[str], str]] = []
    for table in query.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            continue
        name = ".".join(p.name for p in table.parts)
        if name in cte_names(query) or any(s[0] == name for s in scanned):
            continue
        schema = planner.catalog.table(name)
        if schema is None:
            schema = planner.resolve(name)[1]
        if schema is not None:
            scanned.append((name, [c.name for c in schema.columns],
                            schema.options.get("path", "")))
    return scanned
