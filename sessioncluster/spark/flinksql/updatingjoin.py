"""A regular join of an updating query with a stream (or of two updating queries) in STREAMING
over unbounded sources, as Flink's ``StreamingJoinOperator`` runs it over changelog inputs.

Structured Streaming runs no stateful operator after an aggregation in ``update`` mode. So each
updating side of the join is a query of its own (a :class:`ChangelogFeed`, started by the job
beside its query, as ``to_changelog_stream``'s feeders are): each micro-batch's changelog
(``+I``, ``-U``/``+U``, ``-D`` per key) written as a Parquet file into a directory under the
job's checkpoint directory, which the join's query reads as a file stream. An append-only side
is read as it is (each row ``+I``). Both sides, keyed by the join's equality keys, go into one
``transformWithStateInPandas`` processor (:mod:`.changelogjoin`) that keeps each side's rows of
a key in Spark's state store (RocksDB, checkpointed with the query) and emits the join's changes
with their RowKind, which the stateless selects around the join carry to the sink. The updating
sides' changes come per key and micro-batch of their feeder (as every updating query's here);
the join's changes per change of them, as Flink's.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from sqlglot import exp

from ..streaming import ROCKSDB_PROVIDER
from .changelogjoin import KIND, SEQUENCE, SIDE, JoinSpec, changelog_join_processor
from .dialect import TableArgument
from .feeds import OutboxFeed
from .joincondition import pair_condition
from .model import FlinkSqlError
from .tableaggregate import ROW_KIND, carry_row_kind
from .temporaljoin import PROBE, VERSIONED, JoinNames
from .topn import without_ctes
from .updating import NO_TIME_ATTRIBUTE, needed_ctes

#: the changes of a micro-batch of a side's query: ``(df, batch_id, state_dir)`` -> changes
Changes = Callable[[Any, int, Path], list[tuple[str, tuple[Any, ...]]]]
#: plans one side's query (with its own feeds under a directory, their keys' prefix): its
#: frame, its changes (None for an append-only side) and its own feeds (a join's)
PlanSide = Callable[[Any, Path, str], tuple[Any, "Changes | None", "list[ChangelogFeed]"]]

_TYPES = {"": (False, False), "LEFT": (True, False), "RIGHT": (False, True),
          "FULL": (True, True)}


class ChangelogFeed(OutboxFeed):
    """The feed of an updating side's changelog: each micro-batch's changes as the side's
    columns, :data:`KIND` and :data:`SEQUENCE`, which the join's query reads."""

    def __init__(self, key: str, frame: Any, changes: Changes, directory: Path) -> None:
        # a join's changes (its RowKind last) come in append mode, an aggregation's in update
        kinds = ROW_KIND in frame.columns
        super().__init__(key, frame, "append" if kinds else "update", directory)
        self.changes = changes
        self.schema = _change_schema([f for f in frame.schema.fields if f.name != ROW_KIND])

    def changes_table(self, df: Any, batch_id: int) -> Any:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        changes = self.changes(df, batch_id, self.state_dir)
        if not changes:
            return None
        rows = [dict(zip(self.schema.names, (*row, kind, (batch_id << 24) + i)))
                for i, (kind, row) in enumerate(changes)]
        return pa.Table.from_pylist(rows, schema=to_arrow_schema(self.schema))


def row_kind_changes(df: Any, batch_id: int, state_dir: Path
                     ) -> list[tuple[str, tuple[Any, ...]]]:
    """:data:`Changes` of a query whose rows carry their RowKind last (a join's)."""
    return [(r[-1], tuple(r)[:-1]) for r in df.collect()]


def _change_schema(fields: list[Any]) -> Any:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    return StructType([*fields, StructField(KIND, StringType()),
                       StructField(SEQUENCE, LongType())])


@dataclass(slots=True)
class _Side:
    alias: str
    frame: Any
    feed: ChangelogFeed | None


def plan_updating_join(session: Any, query: Any, select: exp.Select, plan_side: PlanSide,
                       feed_root: Path, feed_prefix: str = ""
                       ) -> tuple[Any, list[ChangelogFeed]]:
    """``query`` with the join of ``select`` (a join that reads an updating query and a
    stream) read from a view of its changes, :data:`ROW_KIND` carried to the query's last
    column; the feeds of its updating sides, under ``feed_root`` (a job's checkpoint
    directory), their keys starting with ``feed_prefix``."""
    joins = select.args.get("joins") or []
    if len(joins) != 1 or select.args.get("from_") is None:
        raise FlinkSqlError("sessioncluster runs a join of an updating query with a stream as "
                            "one join of a FROM (Flink docs: Joins / Regular Joins)")
    join = joins[0]
    side_type = (join.args.get("side") or "").upper()
    if side_type not in _TYPES or (join.args.get("kind") or "").upper() not in ("", "INNER",
                                                                                "OUTER"):
        raise FlinkSqlError(f"A {join.args.get('kind') or side_type} JOIN of an updating query "
                            "is not supported by sessioncluster in STREAMING mode")
    sides, feeds = [], []
    for n, node in enumerate((select.args["from_"].this, join.this)):
        side_query = exp.select("*").from_(node.copy())
        ctes = needed_ctes(side_query, list(query.args["with_"].expressions)
                           if query.args.get("with_") is not None else [])
        if ctes:  # (only its own: another may read this join)
            side_query.set("with_", exp.With(expressions=[c.copy() for c in ctes]))
        key = f"{feed_prefix}join-feed-{n}"
        frame, changes, own = plan_side(side_query, feed_root, f"{key}-")
        feed = None
        if changes is not None:
            feed = ChangelogFeed(key, frame, changes, feed_root / key)
            frame = feed.reader(session, feed.schema)
            feeds.append(feed)
        feeds += own
        sides.append(_Side(node.alias_or_name, frame, feed))
    left, right = sides
    names = JoinNames(left.alias, right.alias, _columns(left), _columns(right))
    keys, residual = _equality_keys(join.args.get("on"), names)
    spec = JoinSpec(len(names.probe), len(names.versioned), *_TYPES[side_type],
                    condition=pair_condition(residual, names) if residual else None)
    view = _keyed_view(session, left, right, keys, spec)
    names.read_from(select, view)
    select.append("expressions", exp.column(ROW_KIND))
    carry_row_kind(select, "a join of an updating query")
    return query, feeds


def _columns(side: _Side) -> list[str]:
    return [c for c in side.frame.columns if c not in (KIND, SEQUENCE)]


def _equality_keys(on: exp.Expr | None, names: JoinNames
                   ) -> tuple[list[tuple[int, int]], list[exp.Expr]]:
    """The join's equality keys (left column, right column by position), and the rest of its
    ON condition (evaluated on each pair of rows of a key: :mod:`.joincondition`). A join
    without one (a non-equi or cross join) has no keys: all its rows meet in one key, as
    Flink's planner sends both sides to one instance of its join."""
    keys, residual = [], []
    for term in (on.flatten() if isinstance(on, exp.And) else [on] if on is not None else []):
        sides = [names.position(c) for c in (term.this, term.expression)] \
            if isinstance(term, exp.EQ) and isinstance(term.this, exp.Column) \
            and isinstance(term.expression, exp.Column) else []
        if sorted(s[:len(PROBE)] for s in sides) != [PROBE, VERSIONED]:
            residual.append(term)
            continue
        sides.sort()
        keys.append((int(sides[0][len(PROBE):]), int(sides[1][len(VERSIONED):])))
    return keys, residual


def _keyed_view(session: Any, left: _Side, right: _Side, keys: list[tuple[int, int]],
                spec: JoinSpec) -> str:
    """A view of both sides' changes, keyed by ``keys``, joined by the processor."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    session.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
    fields = ([StructField(f"{PROBE}{i}", f.dataType) for i, f in
               enumerate(left.frame.schema.fields) if f.name not in (KIND, SEQUENCE)]
              + [StructField(f"{VERSIONED}{j}", f.dataType) for j, f in
                 enumerate(right.frame.schema.fields) if f.name not in (KIND, SEQUENCE)])
    # no equality keys (a non-equi or cross join): one constant key
    key_names = [f"flink_k{i}" for i in range(max(len(keys), 1))]
    inputs = []
    for n, side in enumerate((left, right)):
        own = _columns(side)
        prefix = PROBE if n == 0 else VERSIONED
        values = [F.col(f"`{own[int(f.name[len(prefix):])]}`").alias(f.name)
                  if f.name.startswith(prefix) else F.lit(None).cast(f.dataType).alias(f.name)
                  for f in fields]
        kind = F.col(KIND) if side.feed is not None else F.lit("+I")
        sequence = F.col(SEQUENCE) if side.feed is not None else F.lit(0).cast("long")
        key_columns = [F.col(f"`{own[k[n]]}`").alias(name) for name, k in zip(key_names, keys)] \
            or [F.lit(0).alias(key_names[0])]
        inputs.append(side.frame.select(*key_columns, F.lit(n).alias(SIDE), kind.alias(KIND),
                                        sequence.alias(SEQUENCE), *values))
    both = inputs[0].unionByName(inputs[1])
    timestamps = [f.name for f in fields if f.dataType.typeName().startswith("timestamp")]
    processor = changelog_join_processor(spec, [f.name for f in fields[:spec.left_width]],
                                         [f.name for f in fields[spec.left_width:]],
                                         timestamps, ROW_KIND)
    schema = StructType([StructField(f.name, f.dataType, True) for f in fields]
                        + [StructField(ROW_KIND, StringType())])
    keyed = both.groupBy(*key_names) \
        .transformWithStateInPandas(processor, schema, "Append", "None")
    view = f"__flink_updating_join_{secrets.token_hex(6)}"
    keyed.createOrReplaceTempView(view)
    return view


def nest_join(query: Any, reader: exp.Select) -> Any:
    """``query`` with the join of ``reader`` (a select that joins and aggregates) made a
    subquery of its own, which ``reader`` aggregates (Flink's plan: a GroupAggregate over the
    Join): the join's FROM, joins and WHERE move into it."""
    tree, select = _copy_at(query, reader)
    inner = exp.Select()
    for arg in ("from_", "joins", "where"):
        inner.set(arg, select.args.get(arg))
        select.set(arg, None)
    select.set("from_", exp.From(this=_nested(select, inner, lambda column: True)))
    return tree


def nest_first_join(query: Any, reader: exp.Select) -> Any:
    """``query`` with the first join of ``reader`` (a select of several joins, Flink's
    left-deep tree of joins) made a subquery of its own, which the next joins read: ``FROM a
    JOIN b ON .. JOIN c ON ..`` becomes ``FROM (a JOIN b ON ..) JOIN c ON ..``."""
    tree, select = _copy_at(query, reader)
    joins = list(select.args["joins"])
    inner = exp.Select()
    inner.set("from_", select.args["from_"])
    inner.set("joins", [joins[0]])
    select.set("joins", joins[1:])
    nested = {node.alias_or_name.lower() for node in (inner.args["from_"].this, joins[0].this)}

    def moved(column: exp.Column) -> bool:
        if not column.table:
            raise FlinkSqlError(
                f"Column '{column.sql()}' of a select of several joins of an updating query "
                "names no table: sessioncluster runs such a select in STREAMING mode with "
                "each column qualified (Flink docs: Joins / Regular Joins)")
        return column.table.lower() in nested
    select.set("from_", exp.From(this=_nested(select, inner, moved)))
    return tree


def _copy_at(query: Any, select: exp.Select) -> tuple[Any, exp.Select]:
    """A copy of ``query``, and its copy of ``select``."""
    position = next(i for i, s in enumerate(query.find_all(exp.Select)) if s is select)
    tree = query.copy()
    return tree, list(tree.find_all(exp.Select))[position]


def _nested(select: exp.Select, inner: exp.Select, moved: Callable[[exp.Column], bool]
            ) -> exp.Subquery:
    """``inner`` as a subquery of a fresh name that ``select`` reads: each column of
    ``select`` that is ``moved`` becomes one of the subquery's (``flink_j<n>``); a column
    selected keeps its name."""
    name = f"__flink_join_{secrets.token_hex(4)}"
    select.set("expressions", [exp.alias_(e, e.name) if isinstance(e, exp.Column)
                               and not e.is_star else e for e in select.expressions])
    aliases: dict[tuple[str, str], str] = {}
    for column in list(select.find_all(exp.Column)):
        if column.find_ancestor(exp.Select) is not select or not moved(column):
            continue
        if column.is_star:
            raise FlinkSqlError(f"'{column.sql()}' over a join of an updating query is not "
                                "supported by sessioncluster in STREAMING mode")
        key = (column.table.lower(), column.name.lower())
        if key not in aliases:
            aliases[key] = f"flink_j{len(aliases)}"
            inner.append("expressions", exp.alias_(column.copy(), aliases[key]))
        column.replace(exp.column(aliases[key], table=name))
    if not aliases:  # (COUNT(*) of the join: a column of its own)
        inner.append("expressions", exp.alias_(exp.Literal.number(1), "flink_j"))
    return exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(name)))


def window_over_join_refusal(query: Any) -> str | None:
    """Flink 2.3's refusal of a window TVF over a regular join in STREAMING mode (its rows'
    time attributes are regular TIMESTAMPs: Flink refuses it even over two append-only
    streams); None for another query. A join with a range condition (an interval join, which
    keeps its time attributes) is not one. (A legacy ``GROUP BY TUMBLE`` over a join runs.)"""
    for argument in without_ctes(query).find_all(TableArgument):
        call = argument.parent
        if not isinstance(call, exp.Anonymous) or call.name.upper() not in _WINDOW_TVFS:
            continue
        node = argument.this
        while isinstance(node, exp.Subquery):
            node = node.this
        while isinstance(node, exp.Select) and not node.args.get("joins"):
            from_ = node.args.get("from_")  # through projections and filters
            node = from_.this.this if from_ is not None and isinstance(
                from_.this, exp.Subquery) else None
        conditions = [j.args.get("on") for j in node.args["joins"]] + [node.args.get("where")] \
            if isinstance(node, exp.Select) else []
        if isinstance(node, exp.Select) and not any(
                c is not None and c.find(*_RANGES) is not None for c in conditions):
            return f"{NO_TIME_ATTRIBUTE}: the rows of a regular join have no time attribute"
    return None


_WINDOW_TVFS = {"TUMBLE", "HOP", "CUMULATE", "SESSION"}
_RANGES = (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between)
