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
update) needs the row emitted before. :class:`ChangelogState` keeps the last emitted row per key
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
"""

from __future__ import annotations

import secrets
import tempfile
import uuid
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable

import sqlglot
from sqlglot import exp

from ...common.sqlscript import MAX_TABLE_RESULT_ROWS
from ..driver import incremental_checkpoints
from . import connectors
from .boundedchangelog import changelog_query, ordered_changes
from .changelogjoin import KIND, SEQUENCE
from .dialect import Flink, table_names
from .functions import FunctionCatalog
from .matchrecognize import find_match_recognize
from .matchrecognize import rewrite as rewrite_match_recognize
from .matchstream import keyed_matches
from .microbatch import batch_changelog
from .model import DEFAULT_PATH, CatalogTable, Column, FlinkSqlError, table_named
from .outcome import StatementJob, StatementOutcome
from .planner import flink_named, interval_ms, to_spark_sql
from .rankedaggregation import find_ranked_aggregation
from .setoperations import replicated, set_operation_changes
from .sortlimit import find_sort_limit
from .statements import Insert, StopJob
from .tableaggregate import (
    ROW_KIND,
    plan_on_keyed_state,
    python_aggregate_node,
    python_aggregate_refusal,
    python_aggregation,
    table_aggregation,
)
from .tableaggregate import updating_node as table_aggregate_node
from .temporaljoin import plan_temporal_join
from .topn import changes as top_n_changes
from .topn import find_top_n, rank_refusal
from .updating import (
    AGGREGATION,
    JOIN,
    OVER_RESULT,
    TABLE_AGGREGATION,
    WINDOW_AGGREGATION,
    OuterQuery,
    OverUpdating,
    key_positions,
    outer_key_positions,
    over_updating,
    over_updating_refusal,
    retract_refusal,
    split_over_updating,
    stateful_reader,
    updating_node,
)
from .updatingjoin import (
    ChangelogFeed,
    nest_first_join,
    nest_join,
    plan_updating_join,
    row_kind_changes,
    window_over_join_refusal,
)
from .updatingsession import (
    is_session,
    session_schema,
    session_window_of,
    signed_query,
    with_time_column,
)
from .updatingunion import (
    INPUT_REFUSAL,
    plan_updating_union,
    set_operation_refusal,
    updating_union_inputs,
)
from .updatingwindow import group_window_of, with_window_columns, with_window_start

#: the connector of a streaming SELECT's sink: its rows (with their RowKind) go to the client
#: through the job's result buffer, as Flink's collect sink sends them to the SQL client
COLLECT = "collect"


@dataclass(slots=True)
class StreamingInsert:
    """One ``INSERT INTO`` of a streaming statement: its sink, and the DataFrame (the sink's
    physical columns) that feeds it."""

    table: CatalogTable
    frame: Any
    #: ``append`` or ``update`` (Spark's output mode)
    output_mode: str = "append"
    #: an updating query's key columns (by position in ``frame``): its changelog's keys
    key_positions: list[int] = field(default_factory=list)
    #: the catalog tables it reads
    sources: list[str] = field(default_factory=list)
    #: the frame's last column is each row's RowKind (a table aggregation's changelog, made
    #: on keyed state: :mod:`.tableaggregate`)
    row_kinds: bool = False
    #: the query over ``frame``'s current result whose changes the sink gets, when ``frame``
    #: is an updating query that a stateful one reads (:mod:`.updating`)
    outer: OuterQuery | None = None
    #: Flink's name of the query's operator in the job's graph, when its output mode and
    #: ``row_kinds`` do not tell it (a bounded group aggregation's changelog: ``GroupAggregate``)
    operator: str = ""
    #: the feeding queries of a join of an updating query with a stream (:mod:`.updatingjoin`)
    feeds: list[ChangelogFeed] = field(default_factory=list)
    #: ``(checkpoint dir, feed key prefix)`` -> ``(frame, feeds)``: the query planned again to
    #: read its feeds under a job's checkpoint directory (None: it has no feeds)
    replan: Callable[[Path, str], tuple[Any, list[ChangelogFeed]]] | None = None

    @property
    def result_fields(self) -> list[Any]:
        """The Spark fields of the rows the sink gets (a RowKind column left out)."""
        if self.outer is not None:
            return list(self.outer.schema.fields)
        fields = list(self.frame.schema.fields)
        return fields[:-1] if self.row_kinds else fields

    @property
    def sink_name(self) -> str:
        return f"{DEFAULT_PATH}.{self.table.name}"


@dataclass(slots=True)
class StreamingStatementJob(StatementJob):
    """A planned streaming INSERT (or statement set): run by the JobManager's streaming SQL
    runner, not by ``run``."""

    inserts: list[StreamingInsert] = field(default_factory=list)
    #: every source ends: the statement is read once and the job FINISHES
    bounded: bool = False
    #: the statement's configuration (``execution.checkpointing.interval``, ...)
    configuration: dict[str, str] = field(default_factory=dict)

    @property
    def collects(self) -> bool:
        """True for a SELECT: its one sink is the client (:data:`COLLECT`)."""
        return len(self.inserts) == 1 and self.inserts[0].table.connector == COLLECT

    def columns(self) -> list[str]:
        """Flink's result columns of an INSERT: the sinks' full names."""
        return [insert.sink_name for insert in self.inserts]


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
    session, read, bounded = _streaming_session(spark, tables, [i.query for i in inserts],
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
        schemas = {n: used[n.lower()] for n in names}
        query = _Query.plan(session, insert.query, schemas, bounded, functions)
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
                planned[-1].replan = partial(_replanned, session, insert.query, schemas,
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
    insert-only (:meth:`_Query._window_over_changes`), as Flink's."""
    found = over_updating(query, functions)
    return found is not None and found.operation == WINDOW_AGGREGATION \
        and group_window_of(found.reader) is not None


def plan_select(spark: Any, tables: dict[str, CatalogTable], query: Any,
                configuration: dict[str, str],
                functions: FunctionCatalog | None = None) -> StreamingStatementJob:
    """Plan a streaming SELECT: a job (named ``collect``, as Flink's) whose one sink is the
    client; an updating query's rows become Flink's changelog, as into ``print``. The result's
    Flink types are the caller's to fill in (``column_types``)."""
    session, read, bounded = _streaming_session(spark, tables, [query], configuration, functions)
    schemas = {n: tables[n.lower()] for n in read[0]}
    planned = _Query.plan(session, query, schemas, bounded, functions)
    updating = updating_node(query) is not None and not bounded and not planned.row_kinds
    sink = CatalogTable(COLLECT, [], {"connector": COLLECT})
    insert = StreamingInsert(sink, planned.frame, "update" if updating else "append",
                             key_positions(planned.updating) if updating else [],
                             sorted(read[0]), planned.row_kinds, planned.outer,
                             planned.operator, planned.feeds)
    if planned.feeds:
        insert.replan = partial(_replanned, session, query, schemas, functions, None)
    return StreamingStatementJob("collect", _not_a_batch_job, [], [insert], bounded,
                                 dict(configuration))


@dataclass(slots=True)
class _Query:
    """A streaming query planned: its DataFrame (window structs left out); whether its last
    column is :data:`ROW_KIND` (a table aggregation over an unbounded table runs on keyed
    state); the updating query whose changelog ``frame`` gives (the query itself, or the one
    a stateful query reads, which ``outer`` runs over)."""

    frame: Any
    row_kinds: bool
    updating: Any
    outer: OuterQuery | None = None
    #: :attr:`StreamingInsert.operator`
    operator: str = ""
    #: :attr:`StreamingInsert.feeds`
    feeds: list[ChangelogFeed] = field(default_factory=list)

    @classmethod
    def plan(cls, session: Any, query: Any, schemas: dict[str, CatalogTable], bounded: bool,
             functions: FunctionCatalog | None,
             feeds_at: tuple[Path | None, str] = (None, "")) -> "_Query":
        """``feeds_at``: where the feeds of a join of an updating query with a stream are (a
        job's checkpoint directory and a prefix of their keys; None: planning only)."""
        if functions is not None:
            query = functions.rename_calls(query)
        if find_match_recognize(query) is not None:  # unbounded: on keyed state
            query = rewrite_match_recognize(
                query, lambda tree: flink_named(session.sql(to_spark_sql(
                    tree, schemas, streaming=not bounded))), keyed_matches)
        refused = rank_refusal(query) or window_over_join_refusal(query) \
            or (retract_refusal(query, functions) if functions is not None else None)
        if refused is not None:
            raise FlinkSqlError(refused)
        refused = None if bounded else set_operation_refusal(query, partial(_is_static, schemas))
        if refused is not None:
            raise FlinkSqlError(refused)
        inputs = None if bounded else updating_union_inputs(query)
        if inputs is not None:
            return cls._updating_union(session, inputs, schemas, functions, feeds_at)
        found = None if bounded else over_updating(query, functions)
        if found is not None:
            parts = split_over_updating(query, found, partial(_is_static, schemas)) \
                if found.operation in OVER_RESULT else None
            if parts is None and found.operation == AGGREGATION and found.reader.args.get("joins"):
                # an aggregation over a join of an updating query: over the join's changes
                return cls.plan(session, nest_join(query, found.reader), schemas, bounded,
                                functions, feeds_at)
            if parts is None and found.operation == JOIN:
                above = stateful_reader(found.reader)
                while above is not None and above.operation == JOIN:  # the last join's
                    found, above = above, stateful_reader(above.reader)
                if above is not None:
                    return cls._over_join(session, query, above, schemas, functions, feeds_at)
                return cls._updating_join(session, query, found, schemas, functions, feeds_at)
            if found.operation == TABLE_AGGREGATION and functions is not None:
                return cls._over_changes(session, query, found, schemas, functions, feeds_at)
            if found.operation == WINDOW_AGGREGATION and (
                    group_window_of(found.reader) is not None or is_session(found.reader)):
                return cls._window_over_changes(session, query, found, schemas, functions)
            if parts is None:
                raise FlinkSqlError(over_updating_refusal(found))
            inner, rest, view = parts
            planned = cls.plan(session, inner, schemas, bounded, functions)
            planned.outer = _outer_query(session, rest, view, planned.frame.schema, schemas,
                                         found)
            return planned
        add_cte_schemas(session, query, schemas, not bounded)
        changes = _bounded_changes(session, query, schemas, functions) if bounded else None
        if changes is not None:
            return cls(changes, True, query, operator="GroupAggregate")
        ranked = _bounded_top_n(session, query, schemas) if bounded else None
        if ranked is not None:
            return cls(ranked, True, query, operator="Rank")
        query = plan_temporal_join(session, query, schemas, streaming=not bounded)
        keyed = None if bounded or functions is None else \
            plan_on_keyed_state(session, query, schemas, functions)
        called = [] if bounded or functions is None else functions.aggregate_calls(keyed or query)
        if called:
            raise FlinkSqlError(python_aggregate_refusal(called[0], functions, keyed or query))
        frame = flink_named(session.sql(to_spark_sql(keyed or query, schemas,
                                                     streaming=not bounded)))
        frame = frame.select(*[f"`{c}`" for c in frame.columns if not c.startswith("__window")])
        if keyed is not None:  # the RowKind last, whatever the selects around it put it
            frame = _kind_last(frame)
        python = keyed is not None and functions is not None \
            and table_aggregation(query, functions) is None
        return cls(frame, keyed is not None, query,
                   operator="PythonGroupAggregate" if python else "")

    @classmethod
    def _over_join(cls, session: Any, query: Any, above: OverUpdating,
                   schemas: dict[str, CatalogTable], functions: FunctionCatalog | None,
                   feeds_at: tuple[Path | None, str]) -> "_Query":
        """A query (an aggregation, an OVER aggregation) over a join of an updating query: the
        join on keyed state, its changes applied after each micro-batch and the query over
        them run as a batch query (:class:`OuterQuery`), as over an updating query."""
        parts = split_over_updating(query, above, partial(_is_static, schemas)) \
            if above.operation in OVER_RESULT else None
        if parts is None:
            raise FlinkSqlError(over_updating_refusal(above))
        inner, rest, view = parts
        planned = cls.plan(session, inner, schemas, False, functions, feeds_at)
        fields = [f for f in planned.frame.schema.fields if f.name != ROW_KIND]
        planned.outer = _outer_query(session, rest, view, type(planned.frame.schema)(fields),
                                     schemas, above)
        return planned

    @classmethod
    def _over_changes(cls, session: Any, query: Any, found: OverUpdating,
                      schemas: dict[str, CatalogTable], functions: FunctionCatalog,
                      feeds_at: tuple[Path | None, str]) -> "_Query":
        """A table aggregation (``flat_aggregate``) over an updating query: the updating
        query's changes fed (a :class:`ChangelogFeed`, as a join's updating side) into the
        function's keyed processor, which retracts ``-U``/``-D`` as Flink's
        ``GroupTableAggFunction`` does; its changes carry their RowKind last."""
        parts = split_over_updating(query, found, lambda name: True)
        assert parts is not None
        inner, rest, name = parts
        view = f"__flink_changes_{secrets.token_hex(6)}"
        reads = [t for t in rest.find_all(exp.Table) if t.name.lower() == name.lower()]
        aggregation = table_aggregation(rest, functions)
        if aggregation is None or len(reads) != 1 or reads[0].parent_select is not aggregation[0]:
            raise FlinkSqlError(over_updating_refusal(found))
        reads[0].set("this", exp.to_identifier(view))
        directory, prefix = feeds_at
        with tempfile.TemporaryDirectory(prefix="flink-changes-plan-") as scratch:
            # planning only (no directory): the feed is planned again under the job's
            planned = cls.plan(session, inner, schemas, False, functions)
            if planned.row_kinds or planned.outer is not None:
                raise FlinkSqlError(over_updating_refusal(found))
            key = f"{prefix}table-aggregate-feed"
            insert = StreamingInsert(CatalogTable(COLLECT, [], {"connector": COLLECT}),
                                     planned.frame, "update", key_positions(planned.updating))
            feed = ChangelogFeed(key, planned.frame, partial(batch_changelog, insert),
                                 (directory or Path(scratch)) / key)
            feed.reader(session, feed.schema).createOrReplaceTempView(view)
            keyed = plan_on_keyed_state(session, rest, schemas, functions, (KIND, SEQUENCE))
            assert keyed is not None
            frame = flink_named(session.sql(to_spark_sql(keyed, schemas, streaming=True)))
        return cls(_kind_last(frame), True, rest, feeds=[feed])

    @classmethod
    def _window_over_changes(cls, session: Any, query: Any, found: OverUpdating,
                             schemas: dict[str, CatalogTable],
                             functions: FunctionCatalog | None) -> "_Query":
        """A legacy ``GROUP BY TUMBLE(ts, ...)`` (``HOP``) over an updating query: the updating
        query's rows with their windows (:func:`with_window_columns`), its changes accumulated and
        retracted per window after each micro-batch and the window query run over the rows
        of each window the watermark passes (:mod:`.updatingwindow`), as Flink 2.3 does; a
        ``GROUP BY SESSION``'s over the signed rows of each session that fires
        (:mod:`.updatingsession`)."""
        window = group_window_of(found.reader)
        parts = split_over_updating(query, found, partial(_is_static, schemas))
        delays = {watermark_delay_ms(t) for t in schemas.values()} - {None}
        if parts is None or len(delays) != 1:
            raise FlinkSqlError(over_updating_refusal(found))
        inner, rest, view = parts
        planned = cls.plan(session, inner, schemas, False, functions)
        if planned.row_kinds or planned.outer is not None:
            raise FlinkSqlError(over_updating_refusal(found))
        if window is None:  # a SESSION's: the window query over its fired sessions' signed rows
            spec = session_window_of(rest, planned.frame.columns, view) if isinstance(
                rest, exp.Select) else None
            if spec is None:
                raise FlinkSqlError(over_updating_refusal(found))
            planned.outer = _outer_query(session, signed_query(rest), view,
                                         session_schema(planned.frame.schema, spec.ts),
                                         schemas, found)
            planned.outer.window_delay_ms, planned.outer.session = delays.pop(), spec
            planned.frame = with_time_column(planned.frame, spec.ts)
            return planned
        windowed = with_window_start(rest)
        if windowed is None:
            raise FlinkSqlError(over_updating_refusal(found))
        outer = _outer_query(session, windowed[0], view, planned.frame.schema, schemas, found)
        if windowed[1] is not None:  # the window's start: Spark's last column, not Flink's
            outer.window_column = windowed[1]
            outer.schema = type(outer.schema)(outer.schema.fields[:-1])
        outer.window_delay_ms = delays.pop()
        planned.outer = outer
        planned.frame = with_window_columns(planned.frame, *window)
        return planned

    @classmethod
    def _updating_union(cls, session: Any, inputs: list[Any], schemas: dict[str, CatalogTable],
                        functions: FunctionCatalog | None,
                        feeds_at: tuple[Path | None, str]) -> "_Query":
        """A ``UNION ALL`` of an updating query with streams or updating queries
        (:mod:`.updatingunion`): its records carry their RowKind last."""
        static = {t.name.lower() for i in inputs for t in i.find_all(exp.Table)
                  if _is_static(schemas, t.name)}
        directory, prefix = feeds_at
        with tempfile.TemporaryDirectory(prefix="flink-union-plan-") as scratch:
            # planning only (no directory): the feeds are planned again under the job's
            frame, feeds = plan_updating_union(
                session, inputs, static, partial(_plan_side, session, schemas, functions, INPUT_REFUSAL),
                directory or Path(scratch), prefix)
        return cls(flink_named(frame), True, inputs[0], operator="Union", feeds=feeds)

    @classmethod
    def _updating_join(cls, session: Any, query: Any, found: OverUpdating,
                       schemas: dict[str, CatalogTable], functions: FunctionCatalog | None,
                       feeds_at: tuple[Path | None, str]) -> "_Query":
        """A join of an updating query with a stream, on keyed state (:mod:`.updatingjoin`):
        its changes carry their RowKind last."""
        position = next(i for i, s in enumerate(query.find_all(exp.Select)) if s is found.reader)
        query = query.copy()
        select = list(query.find_all(exp.Select))[position]

        if len(select.args.get("joins") or []) > 1:  # the first join's changes, joined
            return cls.plan(session, nest_first_join(query, select), schemas, False,
                            functions, feeds_at)

        plan_side = partial(_plan_side, session, schemas, functions,
                            over_updating_refusal(found))
        directory, prefix = feeds_at
        with tempfile.TemporaryDirectory(prefix="flink-join-plan-") as scratch:
            # planning only (no directory): the feeds are planned again under the job's
            query, feeds = plan_updating_join(session, query, select, plan_side,
                                              directory or Path(scratch), prefix)
            frame = flink_named(session.sql(to_spark_sql(query, schemas, streaming=True)))
        frame = _kind_last(frame)
        return cls(frame, True, query, operator="Join", feeds=feeds)


def _plan_side(session: Any, schemas: dict[str, CatalogTable],
               functions: FunctionCatalog | None, refusal: str, side: Any, root: Path,
               prefix: str) -> tuple[Any, Any, list[ChangelogFeed]]:
    """A join's or a union's input planned (:data:`.updatingjoin.PlanSide`): its frame, its
    changes when it is updating (or a join of an updating query), its own feeds; ``refusal``
    for an input that runs over an updating query's result or on keyed state."""
    planned = _Query.plan(session, side, schemas, False, functions, (root, prefix))
    if planned.row_kinds and planned.feeds and planned.outer is None:  # a join's
        return planned.frame, row_kind_changes, planned.feeds
    if planned.row_kinds or planned.outer is not None:
        raise FlinkSqlError(refusal)
    if updating_node(side) is None:
        return planned.frame, None, []
    insert = StreamingInsert(CatalogTable(COLLECT, [], {"connector": COLLECT}),
                             planned.frame, "update", key_positions(planned.updating))
    return planned.frame, partial(batch_changelog, insert), []


def _kind_last(frame: Any) -> Any:
    """``frame`` with its :data:`ROW_KIND` column last."""
    return frame.select(*[f"`{c}`" for c in frame.columns if c != ROW_KIND], ROW_KIND)


def _conform_kinds(conform: Callable[..., Any], sink: CatalogTable, insert: Insert,
                   frame: Any) -> Any:
    return conform(frame, sink, insert, (ROW_KIND,))


def _replanned(session: Any, query: Any, schemas: dict[str, CatalogTable],
               functions: FunctionCatalog | None, conform: Callable[[Any], Any] | None,
               directory: Path, prefix: str) -> tuple[Any, list[ChangelogFeed]]:
    """A query with feeds planned again, its feeds under ``directory`` (a job's checkpoint
    directory), their keys starting with ``prefix``."""
    planned = _Query.plan(session, query, schemas, False, functions, (directory, prefix))
    return (conform(planned.frame) if conform is not None else planned.frame), planned.feeds


def _bounded_changes(session: Any, query: Any, schemas: dict[str, CatalogTable],
                     functions: FunctionCatalog | None) -> Any:
    """A group aggregation or a set operation over bounded sources as Flink's streaming job
    emits it, record by record (:mod:`.boundedchangelog`, :mod:`.setoperations`), its RowKind
    last; None for a query of another shape, or one Spark cannot analyse so (it runs as
    before: its final rows)."""
    from pyspark.errors import AnalysisException

    columns = partial(_source_columns, session, schemas)
    scalars = functions.scalar_names() if functions is not None else frozenset()
    rewritten, copies = changelog_query(query, columns, scalars), False
    if rewritten is None:  # a set operation's (:mod:`.setoperations`), or None
        rewritten, copies = set_operation_changes(query, columns) or (None, False)
    if rewritten is None:
        return None
    try:
        frame = flink_named(session.sql(to_spark_sql(rewritten, schemas)))
    except AnalysisException:
        return None
    return ordered_changes(replicated(frame) if copies else frame)


def _source_columns(session: Any, schemas: dict[str, CatalogTable],
                    source: Any) -> list[str] | None:
    """The column names of an aggregation's FROM (a table or a subquery), analysed only; None
    when Spark cannot analyse it."""
    from pyspark.errors import AnalysisException

    try:
        probe = exp.select("*").from_(source.copy())
        return list(session.sql(to_spark_sql(probe, schemas)).columns)
    except AnalysisException:
        return None


def _bounded_top_n(session: Any, query: Any, schemas: dict[str, CatalogTable]) -> Any:
    """A Top-N over a bounded table or group aggregation as Flink's streaming job emits it,
    record by record (:mod:`.topn`), its RowKind last; None for another query, or one Spark
    cannot analyse so."""
    from pyspark.errors import AnalysisException

    columns = partial(_source_columns, session, schemas)
    found = find_top_n(query) or find_sort_limit(query, columns) \
        or find_ranked_aggregation(query)
    if found is None:
        return None
    try:
        frame = top_n_changes(session, found, partial(to_spark_sql, tables=schemas), columns)
    except AnalysisException:
        return None
    return None if frame is None else flink_named(frame)


def _outer_query(session: Any, rest: Any, view: str, inner_schema: Any,
                 schemas: dict[str, CatalogTable], found: OverUpdating) -> OuterQuery:
    """The query over an updating query's result (the view ``view``) and bounded tables, as
    a batch query."""
    session.createDataFrame([], inner_schema).createOrReplaceTempView(view)
    sql = to_spark_sql(rest, schemas)
    schema = flink_named(session.sql(sql)).schema  # analysed now: a wrong column fails here
    return OuterQuery(view, sql, inner_schema, schema,
                      outer_key_positions(rest, found, schema.names))


def _is_static(schemas: dict[str, CatalogTable], name: str) -> bool:
    """True for a table a streaming query reads as a bounded (static) one: a bounded catalog
    table, or the session's temporary view of local data."""
    table = table_named(schemas, name)
    return table is None or connectors.is_bounded(table)


def add_cte_schemas(session: Any, query: Any, schemas: dict[str, CatalogTable],
                    streaming: bool) -> None:
    """Add the columns of each of the query's common table expressions to ``schemas`` (a
    window TVF over a CTE lists them: the Table API's group windows read ``_window_input``),
    analysed by the statement's session in order (nothing runs)."""
    for with_ in query.find_all(exp.With):
        ctes = list(with_.expressions)
        for i, cte in enumerate(ctes):
            probe = exp.select("*").from_(exp.to_identifier(cte.alias))
            for earlier in ctes[: i + 1]:
                probe = probe.with_(exp.to_identifier(earlier.alias), as_=earlier.this.copy())
            fields = session.sql(to_spark_sql(probe, schemas, streaming=streaming)).schema.fields
            # a TVF needs the names only (Spark's type text stands in for Flink's)
            schemas[cte.alias] = CatalogTable(cte.alias, [Column(f.name, f.dataType.simpleString())
                                                          for f in fields])


def is_updating(job: StreamingStatementJob) -> bool:
    """True when the statement's (first) query emits updates (-U/+U) or deletions, not only
    +I."""
    return any(insert.output_mode == "update" or insert.row_kinds for insert in job.inserts)


def _streaming_session(spark: Any, tables: dict[str, CatalogTable], queries: list[Any],
                       configuration: dict[str, str], functions: FunctionCatalog | None
                       ) -> tuple[Any, list[set[str]], bool]:
    """A SparkSession of the statement's own with a view of each catalog table the queries
    read (streaming unless every one is bounded) and the catalog's Python functions; per query
    the tables it reads; bounded. Its shuffles have ``parallelism.default`` partitions
    (default: every slot)."""
    session = spark.newSession()
    if functions is not None:
        functions.register_on(session)
    session.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        incremental_checkpoints(session, configuration)
    except ValueError as exc:
        raise FlinkSqlError(str(exc)) from None
    parallelism = str(configuration.get("parallelism.default") or "").strip()
    if parallelism and (not parallelism.isdigit() or int(parallelism) < 1):
        raise FlinkSqlError(f"parallelism.default must be a positive integer, not "
                            f"'{parallelism}'")
    rows = str(configuration.get(MAX_TABLE_RESULT_ROWS) or "").strip()
    if rows and (not rows.isdigit() or int(rows) < 1):
        raise FlinkSqlError(f"{MAX_TABLE_RESULT_ROWS} must be a positive integer, not '{rows}'")
    session.conf.set("spark.sql.shuffle.partitions",
                     parallelism or str(spark.sparkContext.defaultParallelism))
    read = [{name for name in table_names(q) if name.lower() in tables} for q in queries]
    used = {name.lower(): tables[name.lower()] for names in read for name in names}
    bounded = all(connectors.is_bounded(t) for t in used.values())
    for table in used.values():
        source_frame(session, table, streaming=not bounded).createOrReplaceTempView(table.name)
    for query in queries:
        share_client_views(spark, session, table_names(query) - set(tables))
    return session, read, bounded


def share_client_views(spark: Any, session: Any, names: set[str]) -> None:
    """Make the session's temporary views of local data among ``names`` (a client's pandas
    DataFrame, ``from_elements``, ``from_data_stream``: bounded, read as a static table, as
    Flink reads a bounded source in a streaming job) views of the statement's own session too
    (a new SparkSession has no temporary views of its parent's)."""
    for name in sorted(names):
        if "." in name or not spark.catalog.tableExists(name) \
                or session.catalog.tableExists(name):
            continue
        shared = f"__shared_{uuid.uuid4().hex}"
        spark.table(name).createOrReplaceGlobalTempView(shared)
        session.table(f"global_temp.{shared}").createOrReplaceTempView(name)


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


def source_frame(spark: Any, table: CatalogTable, streaming: bool) -> Any:
    """The table's rows (its computed columns too) as a DataFrame, a streaming one when
    ``streaming`` and the source is unbounded; its watermark as ``withWatermark``."""
    from pyspark.sql import functions as F

    frame = connectors.read_table(spark, table, streaming=streaming)
    if any(not c.is_physical for c in table.columns):
        physical = f"__physical_{table.name}"
        frame.createOrReplaceTempView(physical)
        select = ", ".join(f"`{c.name}`" if c.is_physical else f"{c.expression} AS `{c.name}`"
                           for c in table.columns)
        tree = sqlglot.parse_one(f"SELECT {select} FROM `{physical}`", read=Flink)
        frame = spark.sql(to_spark_sql(tree, {}))
    delay = watermark_delay_ms(table)
    if delay is not None and frame.isStreaming:
        rowtime = table.watermark.rowtime  # type: ignore[union-attr]
        # Spark's event time is a TIMESTAMP (Flink's TIMESTAMP(3) is Spark's TIMESTAMP_NTZ):
        # the same wall-clock value in the session's UTC
        frame = frame.withColumn(rowtime, F.col(f"`{rowtime}`").cast("timestamp"))
        frame = frame.withWatermark(rowtime, f"{delay} milliseconds")
    return frame


def watermark_delay_ms(table: CatalogTable) -> int | None:
    """The delay of the table's ``WATERMARK FOR ts AS ts [- INTERVAL ...]`` (ms); None
    without a watermark. Another strategy fails, naming it."""
    if table.watermark is None:
        return None
    rowtime, text = table.watermark.rowtime, table.watermark.expression
    tree = sqlglot.parse_one(text, read=Flink)
    if isinstance(tree, exp.Paren):
        tree = tree.this
    if isinstance(tree, exp.Column) and tree.name == rowtime:
        return 0
    if isinstance(tree, exp.Sub) and isinstance(tree.this, exp.Column) \
            and tree.this.name == rowtime:
        return interval_ms(tree.expression)
    raise FlinkSqlError(f"WATERMARK FOR {rowtime} AS {text}: sessioncluster supports the bounded "
                        f"out-of-orderness strategy only: {rowtime} - INTERVAL '...' unit "
                        "(Flink docs: CREATE TABLE / WATERMARK)")
