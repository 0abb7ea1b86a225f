"""``UNION`` and ``EXCEPT`` (distinct) over unbounded tables in STREAMING, as Flink 2.3 runs them
(/work/briefs/data/setops/probe1.out U4, U6, U7, U8; setops2/probe2.out): a count per row of
each input's records in keyed state, a row's ``+I`` when it comes into the result (a ``UNION``'s
count goes 0 -> 1; an ``EXCEPT``'s left count above 0 with no right row) and its ``-D`` when it
leaves it. A bounded table's rows come first, each ``+I``.

Each input is a :func:`.updatingunion.input_records` frame (an updating one fed by its
changelog, a bounded ``filesystem`` table read as a file stream of its files); all go, keyed by
the whole row, into the changelog join's ``transformWithStateInPandas`` processor
(:func:`.changelogjoin.changelog_join_processor`) with :func:`set_changes` as its step.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, Callable

from sqlglot import exp

from ..streaming import ROCKSDB_PROVIDER
from .changelogjoin import ACCUMULATE, KIND, SEQUENCE, SIDE, JoinSpec, KeyRows, Row, changelog_join_processor
from .model import CatalogTable, FlinkSqlError, table_named
from .tableaggregate import ROW_KIND
from .updating import updating_node
from .updatingjoin import ChangelogFeed, PlanSide
from .updatingunion import input_records


def distinct_set_operation(query: Any) -> tuple[bool, list[exp.Expr]] | None:
    """``(is an EXCEPT, its inputs)`` of a top-level ``UNION`` (its unions' inputs, left to
    right) or ``EXCEPT`` (left, right), neither ``ALL``; None for another query."""
    if query.args.get("with_") is not None or not isinstance(query, (exp.Union, exp.Except)) \
            or not query.args.get("distinct") \
            or any(query.args.get(a) for a in ("order", "limit", "offset")):
        return None
    if isinstance(query, exp.Except):
        return True, [_unnested(query.this), _unnested(query.expression)]
    return False, _union_inputs(query)


def _unnested(side: Any) -> Any:
    return side.unnest() if isinstance(side, exp.Subquery) and not side.alias else side


def _union_inputs(query: Any) -> list[exp.Expr]:
    inputs: list[exp.Expr] = []
    for side in (_unnested(query.this), _unnested(query.expression)):
        plain = isinstance(side, exp.Union) and type(side) is exp.Union \
            and not any(side.args.get(a) for a in ("order", "limit", "offset"))
        inputs += _union_inputs(side) if plain else [side]
    return inputs


def set_changes(except_: bool, state: KeyRows, changes: list[tuple[bool, str, Row]]
                ) -> list[tuple[str, Row]]:
    """A row's changes (the key is the whole row) applied to its counts per side: ``+I`` when
    it comes into the set operation's result, ``-D`` when it leaves it."""
    out: list[tuple[str, Row]] = []
    for from_left, kind, row in changes:
        before = _in_result(state, except_)
        own = state.left if from_left else state.right
        own[row] += 1 if kind in ACCUMULATE else -1
        if own[row] <= 0:
            del own[row]
        now = _in_result(state, except_)
        if now != before:
            out.append(("+I" if now else "-D", row))
    return out


def _in_result(state: KeyRows, except_: bool) -> bool:
    return bool(state.left) and not (except_ and state.right)


def streamed_bounded(session: Any, inputs: list[exp.Expr], schemas: dict[str, CatalogTable],
                     source: Callable[[Any, CatalogTable, bool], Any], static: Callable[[str], bool],
                     what: str) -> tuple[list[exp.Expr], set[int]]:
    """``inputs`` with each bounded table they read read from a view of its files as a file
    stream (``source``: :func:`.streamingsession.source_frame`), each file read once in the
    first micro-batch as Flink reads a bounded source; the positions of the inputs that read
    only bounded tables (their rows come first)."""
    out, first = [], set()
    for n, side in enumerate(inputs):
        side = side.copy()
        tables = [t for t in side.find_all(exp.Table) if isinstance(t.this, exp.Identifier)]
        for t in tables:
            table = table_named(schemas, t.name)
            if not static(t.name):
                continue
            if table is None or table.connector != "filesystem":
                raise FlinkSqlError(
                    f"A {what} of the bounded table '{t.name}' with an unbounded one is not "
                    "supported by sessioncluster in STREAMING mode unless it is a filesystem "
                    "table: Spark unions no static table with a stream")
            view = f"__flink_bounded_{secrets.token_hex(6)}"
            options = {**table.options, "source.monitor-interval": "1s"}
            source(session, replace(table, options=options), True).createOrReplaceTempView(view)
            if not t.alias:
                t.set("alias", exp.TableAlias(this=exp.to_identifier(t.name)))
            t.set("this", exp.to_identifier(view))
            t.set("db", None)
            t.set("catalog", None)
        if tables and all(static(t.name) for t in inputs[n].find_all(exp.Table)):
            first.add(n)
        out.append(side)
    return out, first


def plan_distinct_set(session: Any, except_: bool, inputs: list[exp.Expr], first: set[int],
                      plan_side: PlanSide, feed_root: Path, feed_prefix: str = ""
                      ) -> tuple[Any, list[ChangelogFeed]]:
    """The set operation's changes (its columns, :data:`ROW_KIND` last) of ``inputs`` (the
    ones in ``first`` before the others in a micro-batch); the updating inputs' feeds."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    if except_ and any(updating_node(i) is not None for i in inputs):
        raise FlinkSqlError("An EXCEPT of an updating query over an unbounded table is not "
                            "supported by sessioncluster in STREAMING mode (EXCEPT of "
                            "unbounded and bounded tables runs)")
    frames, feeds = input_records(session, inputs, plan_side, feed_root, feed_prefix)
    names = [c for c in frames[0].columns if c not in (KIND, SEQUENCE)]
    values = [f"flink_l{i}" for i in range(len(names))]
    keyed = [frame.select(*[F.col(f"`{c}`").alias(k) for c, k in zip(names, values)],
                          F.lit(1 if except_ and n == 1 else 0).alias(SIDE), F.col(KIND),
                          (F.lit(-1).cast("long") if n in first else F.col(SEQUENCE))
                          .alias(SEQUENCE))
             for n, frame in enumerate(frames)]
    both = keyed[0]
    for frame in keyed[1:]:
        both = both.unionByName(frame)
    both = both.select(*[F.col(k).alias(f"flink_k{i}") for i, k in enumerate(values)], "*")
    fields = [StructField(k, both.schema[k].dataType, True) for k in values]
    timestamps = [f.name for f in fields if f.dataType.typeName().startswith("timestamp")]
    processor = changelog_join_processor(JoinSpec(len(values), 0), values, [], timestamps,
                                         ROW_KIND, partial(set_changes, except_))
    session.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
    changes = both.groupBy(*[f"flink_k{i}" for i in range(len(values))]) \
        .transformWithStateInPandas(processor, StructType([*fields, StructField(
            ROW_KIND, StringType())]), "Append", "None")
    return changes.toDF(*names, ROW_KIND), feeds
