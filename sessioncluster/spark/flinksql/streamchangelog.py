"""A STREAMING query over the table of an unbounded changelog DataStream
(``from_changelog_stream``), as Flink 2.3 runs it (/work/briefs/data/cstream/probe.out).

The table's frame carries each record's RowKind and position (:mod:`.connectors.datastream`),
as a bounded changelog table's view does, and the same selects carry them
(:func:`.boundedchangelog.read_changelogs`): a projection or a filter of the records keeps each
record's RowKind (Flink's Calc); a group aggregation of built-in functions over them runs on
keyed state (:func:`.tableaggregate.plan_builtins_on_keyed_state`), each record accumulated or
retracted and its change emitted record by record as Flink's ``GroupAggFunction`` does. The
query's frame then has :data:`~.tableaggregate.ROW_KIND` last. Any other shape (a join, a
window, an aggregation over the aggregation, a Python aggregate function) is refused by name.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from ...api.table.changelog_mode import DATASTREAM_SOURCE, SEQ_COLUMN, SUB_COLUMN
from ...api.table.conversion import CHANGELOG_OPTION
from .boundedchangelog import is_changelog_table, read_changelogs
from .connectors import sink_is_append_only
from .functions import FunctionCatalog
from .model import DEFAULT_PATH, CatalogTable, FlinkSqlError
from .planner import flink_named, to_spark_sql
from .tableaggregate import ROW_KIND, plan_builtins_on_keyed_state

#: the maker of the changelog, in the refusals
MAKER = "a table of from_changelog_stream() (an unbounded changelog in STREAMING mode)"
#: the refusal of a query of a shape that does not apply the changelog's RowKinds
STREAM_REFUSAL = (
    f"A query over {MAKER} is not supported by sessioncluster in this shape: only projections, "
    "filters and one non-windowed group aggregation (COUNT, SUM, MIN, MAX, AVG) over its "
    "records apply their RowKinds")


def reads_changelog_stream(query: exp.Expr) -> bool:
    """Whether ``query`` reads a changelog table (in STREAMING: an unbounded one's)."""
    return any(is_changelog_table(t) for t in query.find_all(exp.Table))


def append_only_refusal(sink: CatalogTable, tables: list[CatalogTable]) -> str | None:
    """Flink's refusal of an INSERT reading an unbounded changelog table among ``tables``
    into an append-only ``sink`` (/work/briefs/data/cstream2/probe.out, probe2.out: it names
    the table's ``TableSourceScan``, under a projection or a filter too; a changelog format's
    sink takes the changes); None when it runs."""
    if not sink_is_append_only(sink):
        return None
    for table in tables:
        if table.options.get(CHANGELOG_OPTION):
            fields = ", ".join(c.name for c in table.physical_columns)
            return (f"Table sink '{DEFAULT_PATH}.{sink.name}' doesn't support consuming update "
                    "and delete changes which is produced by node TableSourceScan(table=[["
                    f"{DATASTREAM_SOURCE}]], fields=[{fields}])")
    return None


def plan_changelog_stream(session: Any, query: exp.Expr, schemas: dict[str, CatalogTable],
                          functions: FunctionCatalog | None) -> tuple[Any, str]:
    """The frame of ``query`` over a changelog stream's records, :data:`ROW_KIND` last, and
    the name of its operator in Flink's plan (``GroupAggregate`` or ``""``)."""
    tree = query.copy()
    refused = _shape_refusal(tree, functions)
    if refused is not None:
        raise FlinkSqlError(refused)
    selects = list(tree.find_all(exp.Select))
    read = read_changelogs(tree, selects)
    if read is None:
        raise FlinkSqlError(STREAM_REFUSAL)
    aggregations = [s for s in selects if id(s) in read[0]]
    if len(aggregations) > 1:
        raise FlinkSqlError(STREAM_REFUSAL)
    operator = ""
    if aggregations:
        # the records applied in their position's order (an upsert changelog's records were
        # numbered as they came, before its normalize regrouped them by key)
        tree = plan_builtins_on_keyed_state(session, tree, aggregations[0], schemas,
                                            (ROW_KIND, SEQ_COLUMN, SUB_COLUMN), MAKER)
        operator = "GroupAggregate"
    frame = flink_named(session.sql(to_spark_sql(tree, schemas, streaming=True)))
    hidden = (SEQ_COLUMN, SUB_COLUMN, ROW_KIND)
    return frame.select(*[f"`{c}`" for c in frame.columns if c not in hidden], ROW_KIND), \
        operator


def _shape_refusal(tree: exp.Expr, functions: FunctionCatalog | None) -> str | None:
    """The refusal of a shape whose records would not keep their order and kinds: a join, a
    set operation, an OVER window, ORDER BY / LIMIT, a Python aggregate function."""
    if any(True for _ in tree.find_all(exp.Join, exp.SetOperation, exp.Window, exp.Order,
                                       exp.Limit, exp.Fetch)):
        return STREAM_REFUSAL
    if functions is not None and functions.aggregate_calls(tree):
        return STREAM_REFUSAL
    return None
