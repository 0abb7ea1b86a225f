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
from .feeds import OutboxFeed
from .model import FlinkSqlError
from .tableaggregate import ROW_KIND, carry_row_kind
from .temporaljoin import PROBE, VERSIONED, JoinNames

#: the changes of a micro-batch of a side's query: ``(df, batch_id, state_dir)`` -> changes
Changes = Callable[[Any, int, Path], list[tuple[str, tuple[Any, ...]]]]
#: plans one side's query: its frame, and its changes (None for an append-only side)
PlanSide = Callable[[Any], tuple[Any, "Changes | None"]]

_TYPES = {"": (False, False), "LEFT": (True, False), "RIGHT": (False, True),
          "FULL": (True, True)}


class ChangelogFeed(OutboxFeed):
    """The feed of an updating side's changelog: each micro-batch's changes as the side's
    columns, :data:`KIND` and :data:`SEQUENCE`, which the join's query reads."""

    def __init__(self, key: str, frame: Any, changes: Changes, directory: Path) -> None:
        super().__init__(key, frame, "update", directory)
        self.changes = changes
        self.schema = _change_schema(frame.schema)

    def changes_table(self, df: Any, batch_id: int) -> Any:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        changes = self.changes(df, batch_id, self.state_dir)
        if not changes:
            return None
        rows = [dict(zip(self.schema.names, (*row, kind, (batch_id << 24) + i)))
                for i, (kind, row) in enumerate(changes)]
        return pa.Table.from_pylist(rows, schema=to_arrow_schema(self.schema))


def _change_schema(schema: Any) -> Any:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    return StructType([*schema.fields, StructField(KIND, StringType()),
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
                            "the only join of its SELECT (Flink docs: Joins / Regular Joins)")
    join = joins[0]
    side_type = (join.args.get("side") or "").upper()
    if side_type not in _TYPES or (join.args.get("kind") or "").upper() not in ("", "INNER",
                                                                                "OUTER"):
        raise FlinkSqlError(f"A {join.args.get('kind') or side_type} JOIN of an updating query "
                            "is not supported by sessioncluster in STREAMING mode")
    sides = []
    for n, node in enumerate((select.args["from_"].this, join.this)):
        side_query = exp.select("*").from_(node.copy())
        if query.args.get("with_") is not None:
            side_query.set("with_", query.args["with_"].copy())
        frame, changes = plan_side(side_query)
        feed = None
        if changes is not None:
            key = f"{feed_prefix}join-feed-{n}"
            feed = ChangelogFeed(key, frame, changes, feed_root / key)
            frame = feed.reader(session, feed.schema)
        sides.append(_Side(node.alias_or_name, frame, feed))
    left, right = sides
    names = JoinNames(left.alias, right.alias, _columns(left), _columns(right))
    keys = _equality_keys(join.args.get("on"), names)
    spec = JoinSpec(len(names.probe), len(names.versioned), *_TYPES[side_type])
    view = _keyed_view(session, left, right, keys, spec)
    names.read_from(select, view)
    select.append("expressions", exp.column(ROW_KIND))
    carry_row_kind(select, "a join of an updating query")
    return query, [s.feed for s in sides if s.feed is not None]


def _columns(side: _Side) -> list[str]:
    return [c for c in side.frame.columns if c not in (KIND, SEQUENCE)]


def _equality_keys(on: exp.Expr | None, names: JoinNames) -> list[tuple[int, int]]:
    """The join's equality keys (left column, right column by position); FlinkSqlError for
    a condition that is not one (a non-equi join)."""
    keys = []
    for term in (on.flatten() if isinstance(on, exp.And) else [on] if on is not None else []):
        sides = [names.position(c) for c in (term.this, term.expression)] \
            if isinstance(term, exp.EQ) and isinstance(term.this, exp.Column) \
            and isinstance(term.expression, exp.Column) else []
        if sorted(s[:len(PROBE)] for s in sides) != [PROBE, VERSIONED]:
            raise FlinkSqlError(
                f"A join of an updating query with a stream on '{term.sql() if term else ''}' "
                "is not supported by sessioncluster in STREAMING mode: it runs a regular join "
                "whose conditions are equalities of a column of each side (an equi-join); "
                "a non-equi join condition is not supported (Flink docs: Joins / Regular Joins)")
        sides.sort()
        keys.append((int(sides[0][len(PROBE):]), int(sides[1][len(VERSIONED):])))
    if not keys:
        raise FlinkSqlError("A join of an updating query with a stream without an equality "
                            "condition is not supported by sessioncluster in STREAMING mode")
    return keys


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
    inputs = []
    for n, side in enumerate((left, right)):
        own = _columns(side)
        prefix = PROBE if n == 0 else VERSIONED
        values = [F.col(f"`{own[int(f.name[len(prefix):])]}`").alias(f.name)
                  if f.name.startswith(prefix) else F.lit(None).cast(f.dataType).alias(f.name)
                  for f in fields]
        kind = F.col(KIND) if side.feed is not None else F.lit("+I")
        sequence = F.col(SEQUENCE) if side.feed is not None else F.lit(0).cast("long")
        key_columns = [F.col(f"`{own[k[n]]}`").alias(f"flink_k{i}") for i, k in enumerate(keys)]
        inputs.append(side.frame.select(*key_columns, F.lit(n).alias(SIDE), kind.alias(KIND),
                                        sequence.alias(SEQUENCE), *values))
    both = inputs[0].unionByName(inputs[1])
    timestamps = [f.name for f in fields if f.dataType.typeName().startswith("timestamp")]
    processor = changelog_join_processor(spec, [f.name for f in fields[:spec.left_width]],
                                         [f.name for f in fields[spec.left_width:]],
                                         timestamps, ROW_KIND)
    schema = StructType([StructField(f.name, f.dataType, True) for f in fields]
                        + [StructField(ROW_KIND, StringType())])
    keyed = both.groupBy(*[f"flink_k{i}" for i in range(len(keys))]) \
        .transformWithStateInPandas(processor, schema, "Append", "None")
    view = f"__flink_updating_join_{secrets.token_hex(6)}"
    keyed.createOrReplaceTempView(view)
    return view
