"""Flink SQL ``INSERT INTO`` (and ``EXECUTE STATEMENT SET``) in STREAMING mode, planned on
Structured Streaming.

Each catalog table an INSERT reads becomes a view of a SparkSession of the statement's own: a
``filesystem`` table with ``source.monitor-interval`` is Spark's file stream over its directory
(each file read once, new files by the next micro-batch), ``datagen`` Spark's ``rate`` source; a
``WATERMARK FOR ts AS ts - INTERVAL ...`` is ``withWatermark`` (the rowtime as Spark's
TIMESTAMP, the session in UTC, so that its value is unchanged). A statement whose every source
is bounded (``filesystem`` without ``source.monitor-interval``, ``datagen`` with
``number-of-rows``) reads them once and ends, as Flink's bounded streaming job does after its
final watermark: it runs as one batch (every window fires). A group aggregation in it still
emits Flink's streaming changelog record by record (``+I``, ``-U``/``+U`` per row that changes
it), computed by that batch (:mod:`.boundedchangelog`), and so does a Top-N (:mod:`.topn`); a
shape they do not rewrite gives its final rows, each ``+I``.

What Flink's planner calls an *updating* query (a non-windowed GROUP BY, ``DISTINCT``) is refused
into an append-only sink (``filesystem``) with Flink's message. Into ``print`` (and
``blackhole``) it runs in Spark's ``update`` output mode, which gives the new row of every key
updated by a micro-batch; Flink's changelog (``+I`` for a new key, ``-U`` old then ``+U`` new per
update) needs the row emitted before. :class:`.microbatch.ChangelogState` keeps the last emitted row per key
on the JobManager (where the print sink's rows are collected anyway), written per batch id
next to the query's checkpoint: a micro-batch Spark runs again after a failure finds the state
of the batch before it and emits the same lines once. (transformWithStateInPandas after the
aggregation would keep it in the state store, but Spark chains stateful operators in ``append``
mode only: its UnsupportedOperationChecker refuses one after a streaming aggregation in
``update`` mode; apache/spark PR 55250 proposed lifting this and was closed.)
Several updates of one key within one micro-batch are one ``-U``/``+U`` pair here; Flink emits
each.

Window aggregations (window TVFs, the legacy ``GROUP BY TUMBLE``) run in ``append`` mode and emit
a window once the watermark passes its end. A table aggregation (``flat_aggregate``) runs on
keyed state in ``append`` mode, each row with its RowKind (:mod:`.tableaggregate`).

A query's plan is :class:`.streamingquery.StreamingQuery`'s; the session it runs in,
:mod:`.streamingsession`'s; what the JobManager runs, :mod:`.streamingjob`'s.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from . import connectors
from .functions import FunctionCatalog
from .model import DEFAULT_PATH, CatalogTable, FlinkSqlError
from .outcome import StatementOutcome
from .statements import Insert, StopJob
from .streamchangelog import append_only_refusal
from .streamingjob import COLLECT, StreamingInsert, StreamingStatementJob
from .streamingquery import StreamingQuery, replanned
from .streamingsession import streaming_session
from .tableaggregate import (
    ROW_KIND,
    python_aggregate_node,
    python_aggregation,
    table_aggregation,
)
from .tableaggregate import updating_node as table_aggregate_node
from .updating import WINDOW_AGGREGATION, key_positions, over_updating, updating_node
from .updatingwindow import group_window_of


# -- planning ---------------------------------------------------------------------------------
def plan_inserts(spark: Any, tables: dict[str, CatalogTable], inserts: list[Insert],
                 conform: Callable[..., Any],
                 configuration: dict[str, str],
                 functions: FunctionCatalog | None = None) -> StreamingStatementJob:
    """Plan a streaming INSERT / statement set: each query as a DataFrame of a new streaming
    session, checked against its sink (an updating query into an append-only sink fails);
    the Python functions of ``functions`` registered on that session, so that a query calls
    them as in BATCH. ``conform(frame, sink, insert, passed)`` casts a query's columns to its
    sink's (the ``passed`` ones kept last)."""
    session, read, bounded = streaming_session(spark, tables, [i.query for i in inserts],
                                                configuration, functions)
    used = {name.lower(): tables[name.lower()] for names in read for name in names}
    planned = []
    for insert, names in zip(inserts, read):
        sink = tables.get(insert.target.lower())
        if sink is None:
            raise FlinkSqlError(f"Table '{DEFAULT_PATH}.{insert.target}' was not found.")
        aggregation = table_aggregation(insert.query, functions) if functions else None
        node = updating_node(insert.query)
        python = python_aggregation(insert.query, functions) if functions else None
        if node is not None and python is not None:
            node = python_aggregate_node(python[0])
        if aggregation is not None and connectors.sink_is_append_only(sink):
            raise FlinkSqlError(f"Table sink '{DEFAULT_PATH}.{sink.name}' doesn't support "
                                "consuming update and delete changes which is produced by "
                                f"node {table_aggregate_node(*aggregation)}")
        if node is not None and connectors.sink_is_append_only(sink) \
                and not _window_over_updating(insert.query, functions):
            raise FlinkSqlError(f"Table sink '{DEFAULT_PATH}.{sink.name}' doesn't support "
                                f"consuming update changes which is produced by node {node}")
        refused = append_only_refusal(sink, [used[n.lower()] for n in names])
        if refused is not None:
            raise FlinkSqlError(refused)
        schemas = {n: used[n.lower()] for n in names}
        query = StreamingQuery.plan(session, insert.query, schemas, bounded, functions)
        if query.outer is not None:  # its rows are the outer query's, cast there
            query.outer.conform = lambda frame, sink=sink, insert=insert: conform(
                frame, sink, insert)
        if query.row_kinds:
            frame = query.frame if query.outer is not None else \
                conform(query.frame, sink, insert, (ROW_KIND,))
            planned.append(StreamingInsert(sink, frame, "append", [], sorted(names), True,
                                           outer=query.outer, operator=query.operator,
                                           feeds=query.feeds))
            if query.feeds:
                cast = None if query.outer is not None else \
                    partial(_conform_kinds, conform, sink, insert)
                planned[-1].replan = partial(replanned, session, insert.query, schemas,
                                             functions, cast)
            continue
        frame = query.frame if query.outer is not None else conform(query.frame, sink, insert)
        updating = node is not None and not bounded
        planned.append(StreamingInsert(sink, frame, "update" if updating else "append",
                                       key_positions(query.updating) if updating else [],
                                       sorted(names), outer=query.outer))
    columns = [p.sink_name for p in planned]
    return StreamingStatementJob("insert-into_" + ",".join(columns), _not_a_batch_job,
                                 ["BIGINT"] * len(columns), planned, bounded,
                                 dict(configuration))


def _window_over_updating(query: Any, functions: FunctionCatalog | None) -> bool:
    """True for a legacy ``GROUP BY TUMBLE``/``HOP`` over an updating query: its rows are
    insert-only (:meth:`StreamingQuery._window_over_changes`), as Flink's."""
    found = over_updating(query, functions)
    return found is not None and found.operation == WINDOW_AGGREGATION \
        and group_window_of(found.reader) is not None


def plan_select(spark: Any, tables: dict[str, CatalogTable], query: Any,
                configuration: dict[str, str],
                functions: FunctionCatalog | None = None) -> StreamingStatementJob:
    """Plan a streaming SELECT: a job (named ``collect``, as Flink's) whose one sink is the
    client; an updating query's rows become Flink's changelog, as into ``print``. The result's
    Flink types are the caller's to fill in (``column_types``)."""
    session, read, bounded = streaming_session(spark, tables, [query], configuration, functions)
    schemas = {n: tables[n.lower()] for n in read[0]}
    planned = StreamingQuery.plan(session, query, schemas, bounded, functions)
    updating = updating_node(query) is not None and not bounded and not planned.row_kinds
    sink = CatalogTable(COLLECT, [], {"connector": COLLECT})
    insert = StreamingInsert(sink, planned.frame, "update" if updating else "append",
                             key_positions(planned.updating) if updating else [],
                             sorted(read[0]), planned.row_kinds, planned.outer,
                             planned.operator, planned.feeds)
    if planned.feeds:
        insert.replan = partial(replanned, session, query, schemas, functions, None)
    return StreamingStatementJob("collect", _not_a_batch_job, [], [insert], bounded,
                                 dict(configuration))



def _conform_kinds(conform: Callable[..., Any], sink: CatalogTable, insert: Insert,
                   frame: Any) -> Any:
    return conform(frame, sink, insert, (ROW_KIND,))




def stop_job(statement: StopJob, options: dict[str, str]) -> StatementOutcome:
    """``STOP JOB '<id>' [WITH SAVEPOINT]``: for the Dispatcher to do; the savepoint goes to
    ``state.savepoints.dir`` (Flink's SQL client has no other)."""
    directory = None
    if statement.with_savepoint:
        directory = options.get("state.savepoints.dir")
        if not directory:
            raise FlinkSqlError("No savepoint directory configured. You can either specify a "
                                "directory when triggering a savepoint or configure a "
                                "cluster-wide default via key 'state.savepoints.dir'.")
    return StatementOutcome("SUCCESS", ["result"], ["STRING"], [("OK",)],
                            stop_job=(statement.job_id, directory))


def _not_a_batch_job() -> Any:
    raise TypeError("a streaming INSERT runs as a streaming SQL job")

