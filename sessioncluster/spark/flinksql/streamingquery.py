"""A streaming Flink SQL query planned on Structured Streaming (:class:`StreamingQuery`): as one
Spark query, on keyed state (a table aggregation, a Python aggregation, MATCH_RECOGNIZE), as
an updating query with a batch query over its result (:class:`.updating.OuterQuery`), as a
join or union of updating queries fed by their changelogs (:mod:`.updatingjoin`,
:mod:`.updatingunion`), or, over bounded sources, as Flink's changelog computed by one batch
(:mod:`.boundedchangelog`, :mod:`.topn`)."""

from __future__ import annotations

import secrets
import tempfile
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable

from sqlglot import exp

from .boundedchangelog import CHANGELOG_REFUSAL, changelog_query, is_changelog_table, ordered_changes
from .boundedjoin import table_first_changes, table_first_ordered
from .changelogjoin import KIND, SEQUENCE
from .distinctsetops import SetOperation, plan_set_operation, set_operation, streamed_bounded, unique_rows
from .functions import FunctionCatalog
from .matchrecognize import find_match_recognize
from .matchrecognize import rewrite as rewrite_match_recognize
from .matchstream import keyed_matches
from .microbatch import batch_changelog
from .model import CatalogTable, FlinkSqlError
from .planner import flink_named, to_spark_sql
from .pythonwindow import plan_group_windows, plan_mixed_aggregations
from .rankedaggregation import find_ranked_aggregation
from .setoperations import replicated, set_operation_changes
from .sortlimit import find_sort_limit
from .streamchangelog import plan_changelog_stream, reads_changelog_stream
from .streamingjob import COLLECT, StreamingInsert
from .streamingsession import add_cte_schemas, is_static, source_frame, watermark_delay_ms
from .tableaggregate import (
    ROW_KIND,
    plan_on_keyed_state,
    python_aggregate_refusal,
    table_aggregation,
)
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
from .updatingsession import is_session, session_schema, session_window_of, signed_query, with_time_column
from .updatingunion import (
    INPUT_REFUSAL,
    calc_over,
    plan_updating_union,
    projected_aggregation,
    pruned_inputs,
    pruned_refusal,
    set_operation_refusal,
    union_calc,
    updating_union_inputs,
    wrapped_union_refusal,
)
from .updatingwindow import group_window_of, with_window_columns, with_window_start


@dataclass(slots=True)
class StreamingQuery:
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
             feeds_at: tuple[Path | None, str] = (None, "")) -> "StreamingQuery":
        """``feeds_at``: where the feeds of a join of an updating query with a stream are (a
        job's checkpoint directory and a prefix of their keys; None: planning only)."""
        if functions is not None:
            query = functions.rename_calls(query)
        if find_match_recognize(query) is not None:  # unbounded: on keyed state
            query = rewrite_match_recognize(
                query, lambda tree: flink_named(session.sql(to_spark_sql(
                    tree, schemas, streaming=not bounded))), keyed_matches)
        if not bounded and reads_changelog_stream(query):  # from_changelog_stream's records
            return _over_changelog_stream(session, query, schemas, functions)
        refused = rank_refusal(query) or window_over_join_refusal(query) \
            or (retract_refusal(query, functions) if functions is not None else None)
        if refused is not None:
            raise FlinkSqlError(refused)
        refused = None if bounded else set_operation_refusal(query, partial(is_static, schemas))
        if refused is not None and (found_set := set_operation(query)) is not None:
            return cls._set_operation(session, *found_set, schemas, functions, feeds_at)
        refused = refused or (None if bounded else wrapped_union_refusal(query))
        if refused is not None:
            raise FlinkSqlError(refused)
        calc = None if bounded else union_calc(query, partial(_on_spark, functions))
        if calc is not None:
            return cls._union_calc(session, *calc, schemas, functions, feeds_at)
        inputs = None if bounded else updating_union_inputs(query)
        if inputs is not None:
            return cls._updating_union(session, inputs, schemas, functions, feeds_at)
        found = None if bounded else over_updating(query, functions)
        if found is not None:
            parts = split_over_updating(query, found, partial(is_static, schemas)) \
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
        query, windowed = _collected_python_calls(session, query, bounded, functions)
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
                   operator="PythonGroupAggregate" if python
                   else "PythonGroupWindowAggregate" if windowed else "")

    @classmethod
    def _over_join(cls, session: Any, query: Any, above: OverUpdating,
                   schemas: dict[str, CatalogTable], functions: FunctionCatalog | None,
                   feeds_at: tuple[Path | None, str]) -> "StreamingQuery":
        """A query (an aggregation, an OVER aggregation) over a join of an updating query: the
        join on keyed state, its changes applied after each micro-batch and the query over
        them run as a batch query (:class:`OuterQuery`), as over an updating query."""
        parts = split_over_updating(query, above, partial(is_static, schemas)) \
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
                      feeds_at: tuple[Path | None, str]) -> "StreamingQuery":
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
                             functions: FunctionCatalog | None) -> "StreamingQuery":
        """A legacy ``GROUP BY TUMBLE(ts, ...)`` (``HOP``) over an updating query: the updating
        query's rows with their windows (:func:`with_window_columns`), its changes accumulated and
        retracted per window after each micro-batch and the window query run over the rows
        of each window the watermark passes (:mod:`.updatingwindow`), as Flink 2.3 does; a
        ``GROUP BY SESSION``'s over the signed rows of each session that fires
        (:mod:`.updatingsession`)."""
        window = group_window_of(found.reader)
        parts = split_over_updating(query, found, partial(is_static, schemas))
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
                        feeds_at: tuple[Path | None, str]) -> "StreamingQuery":
        """A ``UNION ALL`` of an updating query with streams, updating queries or bounded
        ``filesystem`` tables (read as file streams, each file once: Flink's U1, setops/
        probe1.out) (:mod:`.updatingunion`): its records carry their RowKind last."""
        inputs, _ = streamed_bounded(session, inputs, schemas, source_frame,
                                     partial(is_static, schemas), "UNION ALL")
        directory, prefix = feeds_at
        with tempfile.TemporaryDirectory(prefix="flink-union-plan-") as scratch:
            # planning only (no directory): the feeds are planned again under the job's
            frame, feeds = plan_updating_union(
                session, inputs, partial(plan_side, session, schemas, functions, INPUT_REFUSAL),
                directory or Path(scratch), prefix)
        return cls(flink_named(frame), True, inputs[0], operator="Union", feeds=feeds)

    @classmethod
    def _union_calc(cls, session: Any, query: Any, read: Any, schemas: dict[str, CatalogTable],
                    functions: FunctionCatalog | None,
                    feeds_at: tuple[Path | None, str]) -> "StreamingQuery":
        """A filter and/or projection over a ``UNION ALL`` of an updating query, or a filter
        over a group aggregation: applied to each record of its changelog, its RowKind kept, as
        Flink's Calc does (/work/briefs/data/setops2/probe2.out: U13, U13b, U13c, S1, S3)."""
        refused = pruned_refusal(query, read := pruned_inputs(query, read))
        if refused is not None:
            raise FlinkSqlError(refused)
        union = cls.plan(session, read.this, schemas, False, functions, feeds_at) \
            if updating_union_inputs(read.this) is not None \
            else cls._updating_union(session, [read.this], schemas, functions, feeds_at)
        view = f"__flink_union_{secrets.token_hex(6)}"
        union.frame.createOrReplaceTempView(view)
        frame = flink_named(session.sql(to_spark_sql(calc_over(query, read, view), schemas,
                                                     streaming=True)))
        return cls(_kind_last(frame), True, union.updating, feeds=union.feeds,
                   operator=union.operator if isinstance(read.this, exp.Union)
                   else "GroupAggregate")

    @classmethod
    def _set_operation(cls, session: Any, operation: SetOperation, inputs: list[Any],
                       schemas: dict[str, CatalogTable], functions: FunctionCatalog | None,
                       feeds_at: tuple[Path | None, str]) -> "StreamingQuery":
        """A ``UNION``, ``INTERSECT`` or ``EXCEPT`` (``ALL`` too) over an unbounded table: a
        count per row in keyed state (:mod:`.distinctsetops`), its records with their RowKind
        last."""
        name = operation.name + (" ALL" if operation.all else "")
        inputs, first = streamed_bounded(session, inputs, schemas, source_frame,
                                         partial(is_static, schemas), name)
        directory, prefix = feeds_at
        with tempfile.TemporaryDirectory(prefix="flink-setop-plan-") as scratch:
            # planning only (no directory): the feeds are planned again under the job's
            frame, feeds = plan_set_operation(
                session, operation, inputs, first,
                partial(_set_operation_side, session, schemas, functions),
                directory or Path(scratch), prefix)
        operator = "Join" if operation.unique_left else "GroupAggregate"
        return cls(flink_named(frame), True, inputs[0], operator=operator, feeds=feeds)

    @classmethod
    def _updating_join(cls, session: Any, query: Any, found: OverUpdating,
                       schemas: dict[str, CatalogTable], functions: FunctionCatalog | None,
                       feeds_at: tuple[Path | None, str]) -> "StreamingQuery":
        """A join of an updating query with a stream, on keyed state (:mod:`.updatingjoin`):
        its changes carry their RowKind last."""
        position = next(i for i, s in enumerate(query.find_all(exp.Select)) if s is found.reader)
        query = query.copy()
        select = list(query.find_all(exp.Select))[position]

        if len(select.args.get("joins") or []) > 1:  # the first join's changes, joined
            return cls.plan(session, nest_first_join(query, select), schemas, False,
                            functions, feeds_at)

        side = partial(plan_side, session, schemas, functions, over_updating_refusal(found))
        directory, prefix = feeds_at
        with tempfile.TemporaryDirectory(prefix="flink-join-plan-") as scratch:
            # planning only (no directory): the feeds are planned again under the job's
            query, feeds = plan_updating_join(session, query, select, side,
                                              directory or Path(scratch), prefix)
            frame = flink_named(session.sql(to_spark_sql(query, schemas, streaming=True)))
        frame = _kind_last(frame)
        return cls(frame, True, query, operator="Join", feeds=feeds)



def plan_side(session: Any, schemas: dict[str, CatalogTable],
               functions: FunctionCatalog | None, refusal: str, side: Any, root: Path,
               prefix: str) -> tuple[Any, Any, list[ChangelogFeed]]:
    """A join's or a union's input planned (:data:`.updatingjoin.PlanSide`): its frame, its
    changes when it is updating (or a join of an updating query), its own feeds; ``refusal``
    for an input that runs over an updating query's result or on keyed state."""
    planned = StreamingQuery.plan(session, side, schemas, False, functions, (root, prefix))
    if planned.row_kinds and planned.feeds and planned.outer is None:  # a join's
        return planned.frame, row_kind_changes, planned.feeds
    if planned.row_kinds or planned.outer is not None:
        raise FlinkSqlError(refusal)
    if updating_node(side) is None:
        return planned.frame, None, []
    insert = StreamingInsert(CatalogTable(COLLECT, [], {"connector": COLLECT}),
                             planned.frame, "update", key_positions(planned.updating))
    return planned.frame, partial(batch_changelog, insert), []


def _set_operation_side(session: Any, schemas: dict[str, CatalogTable],
                        functions: FunctionCatalog | None, side: Any, root: Path,
                        prefix: str) -> tuple[Any, Any, list[ChangelogFeed]]:
    """A set operation's input planned (:func:`plan_side`); a projection and/or filter of a
    group aggregation that selects not each of its group keys as Flink's Calc over the
    aggregation's changelog (keyed by them), each record's RowKind kept."""
    found = None if unique_rows(side) else projected_aggregation(side)
    if found is None:
        return plan_side(session, schemas, functions, INPUT_REFUSAL, side, root, prefix)
    planned = StreamingQuery._union_calc(session, *found, schemas, functions, (root, prefix))
    return planned.frame, row_kind_changes, planned.feeds


def _over_changelog_stream(session: Any, query: Any, schemas: dict[str, CatalogTable],
                           functions: FunctionCatalog | None) -> StreamingQuery:
    """A query over an unbounded changelog table (:mod:`.streamchangelog`): its records'
    RowKinds applied, carried last."""
    frame, operator = plan_changelog_stream(session, query, schemas, functions)
    return StreamingQuery(frame, True, query, operator=operator)


def _on_spark(functions: FunctionCatalog | None, query: Any) -> bool:
    """True when ``query`` calls no Python aggregate function (it runs on keyed state)."""
    return functions is None or not functions.aggregate_calls(query)


def _collected_python_calls(session: Any, query: Any, bounded: bool,
                            functions: FunctionCatalog | None) -> tuple[Any, bool]:
    """``query`` with the Python aggregate calls Spark runs over collected rows: a group
    window's (and a SESSION TVF's) over an unbounded table, and one beside built-in
    aggregates over bounded ones (:mod:`.pythonwindow`); whether it has group windows."""
    if functions is None:
        return query, False
    if bounded:
        return plan_mixed_aggregations(session, query, functions), False
    windowed = plan_group_windows(session, query, functions)
    return windowed or query, windowed is not None


def _kind_last(frame: Any) -> Any:
    """``frame`` with its :data:`ROW_KIND` column last."""
    return frame.select(*[f"`{c}`" for c in frame.columns if c != ROW_KIND], ROW_KIND)




def replanned(session: Any, query: Any, schemas: dict[str, CatalogTable],
               functions: FunctionCatalog | None, conform: Callable[[Any], Any] | None,
               directory: Path, prefix: str) -> tuple[Any, list[ChangelogFeed]]:
    """A query with feeds planned again, its feeds under ``directory`` (a job's checkpoint
    directory), their keys starting with ``prefix``."""
    planned = StreamingQuery.plan(session, query, schemas, False, functions, (directory, prefix))
    return (conform(planned.frame) if conform is not None else planned.frame), planned.feeds




def _bounded_changes(session: Any, query: Any, schemas: dict[str, CatalogTable],
                     functions: FunctionCatalog | None) -> Any:
    """A group aggregation or a set operation over bounded sources as Flink's streaming job
    emits it, record by record (:mod:`.boundedchangelog`, :mod:`.setoperations`,
    :mod:`.boundedjoin`), its RowKind
    last; None for a query of another shape, or one Spark cannot analyse so (it runs as
    before: its final rows)."""
    from pyspark.errors import AnalysisException

    columns = partial(_source_columns, session, schemas)
    scalars = functions.scalar_names() if functions is not None else frozenset()
    rewritten, copies = changelog_query(query, columns, scalars), False
    if rewritten is None:  # a set operation's (:mod:`.setoperations`), or None
        rewritten, copies = set_operation_changes(query, columns) or (None, False)
    ordered = ordered_changes
    if rewritten is None:  # a table joined with or UNION ALL an aggregation (:mod:`.boundedjoin`)
        rewritten, ordered = table_first_changes(query, columns, scalars), table_first_ordered
    if rewritten is None:
        if any(is_changelog_table(t) for t in query.find_all(exp.Table)):
            raise FlinkSqlError(CHANGELOG_REFUSAL)
        return None
    try:
        frame = flink_named(session.sql(to_spark_sql(rewritten, schemas)))
    except AnalysisException:
        return None
    return ordered(replicated(frame) if copies else frame)


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
