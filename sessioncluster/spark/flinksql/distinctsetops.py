"""``UNION``, ``INTERSECT`` and ``EXCEPT`` (``ALL`` too) over unbounded tables in STREAMING, as
Flink 2.3 runs them (/work/briefs/data/setops/probe1.out U4-U11; setops2/probe2.out; setops3/
probe3.out and its plans): a count per row of each input's records in keyed state.

Flink's plans: a ``UNION`` is a GroupAggregate over the inputs' union, an ``INTERSECT``/``EXCEPT``
one over a semi/anti join of its two inputs on all columns: a row's ``+I`` when it comes into the
result, its ``-D`` when it leaves it. When the left input's rows are unique (a group aggregation
selecting its group keys) Flink drops that GroupAggregate and the semi/anti join's records pass
with their RowKind (probe1.out U9: a ``-U`` with no ``+U``). An ``ALL`` is a GroupAggregate of
the row's counts per side, its changelog filtered to the rows in the result and each record
replicated (``REPLICATE_ROWS``) as often as the row is in it. A bounded table's rows come first.

Each input is a :func:`.updatingunion.input_records` frame (an updating one fed by its
changelog, a bounded ``filesystem`` table read as a file stream of its files; a group
aggregation selecting not each of its group keys as Flink's Calc over it, :func:`keyed_input`;
a global aggregation keyed by nothing, setops4/probe4.out G1-G6); all go, keyed by
the whole row, into the changelog join's ``transformWithStateInPandas`` processor
(:func:`.changelogjoin.changelog_join_processor`) with :func:`set_changes` as its step.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Callable

from sqlglot import exp

from ..streaming import ROCKSDB_PROVIDER
from .changelogjoin import ACCUMULATE, KIND, SEQUENCE, SIDE, JoinSpec, KeyRows, Row, changelog_join_processor
from .model import CatalogTable, FlinkSqlError, table_named
from .tableaggregate import ROW_KIND
from .updating import is_aggregation, is_window_aggregation, key_positions, updating_node
from .updatingjoin import ChangelogFeed, PlanSide
from .updatingunion import input_records, projected_aggregation


@dataclass(frozen=True, slots=True)
class SetOperation:
    """A set operation run on a count per row: ``UNION``, ``INTERSECT`` or ``EXCEPT``, ``ALL``
    or not, and whether its left input's rows are unique (Flink runs a distinct ``INTERSECT``
    or ``EXCEPT`` of them as its semi/anti join alone: the join's records pass as they are)."""

    name: str
    all: bool = False
    unique_left: bool = False


def set_operation(query: Any) -> tuple[SetOperation, list[exp.Expr]] | None:
    """The top-level ``UNION`` (its unions' inputs, left to right), ``INTERSECT`` or ``EXCEPT``
    (left, right; ``ALL`` too) that runs on a count per row, and its inputs; None for another
    query, a ``UNION ALL``, a sorted or limited one and one with another set operation (a
    ``UNION ALL`` aside) as an input."""
    names = {exp.Union: "UNION", exp.Intersect: "INTERSECT", exp.Except: "EXCEPT"}
    name = names.get(type(query))
    all_ = query.args.get("distinct") is False
    if name is None or query.args.get("with_") is not None or (name == "UNION" and all_) \
            or any(query.args.get(a) for a in ("order", "limit", "offset")):
        return None
    inputs = _union_inputs(query) if name == "UNION" \
        else [_unnested(query.this), _unnested(query.expression)]
    if any(isinstance(i, (exp.Intersect, exp.Except)) or (isinstance(i, exp.Union)
           and i.args.get("distinct") is not False) for i in inputs):
        return None
    unique = name != "UNION" and not all_ and unique_rows(inputs[0])
    return SetOperation(name, all_, unique), [keyed_input(i) for i in inputs]


def keyed_input(side: Any) -> Any:
    """``side`` as Flink plans it when it is a group aggregation of a table that selects not
    each of its group keys: a projection (Flink's Calc, :func:`.updatingunion.
    projected_aggregation`) of the aggregation selecting them too, so that its changelog is
    keyed by them (setops4/probe4.out E7's plan = E4's); ``side`` itself otherwise."""
    if not isinstance(side, exp.Select) or side.args.get("group") is None \
            or updating_node(side) is None or unique_rows(side) \
            or any(e.is_star for e in side.expressions):
        return side
    inner = side.copy()
    names = [e.alias_or_name if isinstance(e, (exp.Alias, exp.Column)) else f"EXPR${i}"
             for i, e in enumerate(side.expressions)]
    inner.set("expressions", [
        *[e if isinstance(e, (exp.Alias, exp.Column)) else exp.alias_(e, n, quoted=True)
          for e, n in zip(inner.expressions, names)],
        *[exp.alias_(k.copy(), f"__flink_key{i}") for i, k in enumerate(side.args["group"].expressions)]])
    alias = exp.TableAlias(this=exp.to_identifier("__flink_keyed"))
    return exp.select(*[exp.column(n, quoted=True) for n in names]).from_(
        exp.Subquery(this=inner, alias=alias))


def global_aggregation(query: Any) -> bool:
    """True for an aggregation of a table with no GROUP BY, no join and no subquery (one row,
    its changelog keyed by nothing: Flink's ``GroupAggregate(select=[COUNT(*) AS n])``)."""
    source = query.args.get("from_") if isinstance(query, exp.Select) else None
    return source is not None and isinstance(source.this, exp.Table) \
        and is_aggregation(query) and not is_window_aggregation(query) \
        and query.args.get("group") is None and query.args.get("distinct") is None \
        and not query.args.get("joins") and query.find(exp.Window, exp.Subquery) is None


def unique_rows(query: Any) -> bool:
    """The query's rows are unique: a group aggregation (or a ``SELECT DISTINCT``) whose group
    keys are all among its columns (Flink's unique key within them)."""
    if updating_node(query) is None:
        return False
    grouping = next(s for s in query.find_all(exp.Select)
                    if is_aggregation(s) and not is_window_aggregation(s))
    group = grouping.args.get("group")
    plain = [grouping.expressions[i] for i in key_positions(grouping)]
    if group is None:
        return grouping.args.get("distinct") is not None \
            and len(key_positions(query)) == len(query.selects)

    def selected(key: Any) -> bool:
        return any(e.unalias() == key or (isinstance(key, exp.Column)
                                         and e.alias_or_name.lower() == key.name.lower())
                   for e in plain)

    return all(selected(k) for k in group.expressions) \
        and len(key_positions(query)) >= len(plain)


def _unnested(side: Any) -> Any:
    return side.unnest() if isinstance(side, exp.Subquery) and not side.alias else side


def _union_inputs(query: Any) -> list[exp.Expr]:
    inputs: list[exp.Expr] = []
    for side in (_unnested(query.this), _unnested(query.expression)):
        plain = isinstance(side, exp.Union) and type(side) is exp.Union \
            and not any(side.args.get(a) for a in ("order", "limit", "offset"))
        inputs += _union_inputs(side) if plain else [side]
    return inputs


def set_changes(operation: SetOperation, state: KeyRows, changes: list[tuple[bool, str, Row]]
                ) -> list[tuple[str, Row]]:
    """A row's changes (the key is the whole row) applied to its counts per side; the set
    operation's records as Flink's (see the module)."""
    out: list[tuple[str, Row]] = []
    for from_left, kind, row in changes:
        before = (state.left[row], state.right[row])
        own = state.left if from_left else state.right
        own[row] += 1 if kind in ACCUMULATE else -1
        if own[row] <= 0:
            del own[row]
        after = (state.left[row], state.right[row])
        if operation.all:
            out += _replicated(operation, before, after, row)
        elif operation.unique_left:
            out += _semi_anti_joined(operation, before, after, from_left, kind, row)
        elif _in_result(operation, *after) != _in_result(operation, *before):
            out.append(("+I" if _in_result(operation, *after) else "-D", row))
    return out


def _in_result(operation: SetOperation, left: int, right: int) -> bool:
    if operation.name == "EXCEPT":
        return left > 0 and right == 0
    return left > 0 and (right > 0 or operation.name == "UNION")


def _replicated(operation: SetOperation, before: tuple[int, int], after: tuple[int, int],
                row: Row) -> list[tuple[str, Row]]:
    """Flink's ``ALL``: the GroupAggregate's record of the row's counts (``+I`` for its first
    record, ``-D`` when it has none left, else ``-U``/``+U``), each replicated as often as the
    row is in the result (a record of a row not in it filtered out)."""
    def times(left: int, right: int) -> int:
        return max(left - right, 0) if operation.name == "EXCEPT" else min(left, right)

    if not sum(before):
        return [("+I", row)] * times(*after)
    if not sum(after):
        return [("-D", row)] * times(*before)
    return [("-U", row)] * times(*before) + [("+U", row)] * times(*after)


def _semi_anti_joined(operation: SetOperation, before: tuple[int, int], after: tuple[int, int],
                      from_left: bool, kind: str, row: Row) -> list[tuple[str, Row]]:
    """Flink's semi (``INTERSECT``) or anti (``EXCEPT``) join's records of a change
    (``StreamingSemiAntiJoinOperator``): a left change passes with its RowKind while the row
    has (semi) or has no (anti) right row; the right's first row of it or its last one's
    retraction emits each left row, a semi join's with the right change's RowKind, an anti
    join's ``-D`` / ``+I``."""
    semi = operation.name == "INTERSECT"
    if from_left:
        return [(kind, row)] if (before[1] > 0) == semi else []
    if (before[1] > 0) == (after[1] > 0):
        return []
    out_kind = kind if semi else "-D" if after[1] else "+I"
    return [(out_kind, row)] * after[0]


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


def plan_set_operation(session: Any, operation: SetOperation, inputs: list[exp.Expr], first: set[int],
                      plan_side: PlanSide, feed_root: Path, feed_prefix: str = ""
                      ) -> tuple[Any, list[ChangelogFeed]]:
    """The set operation's changes (its columns, :data:`ROW_KIND` last) of ``inputs`` (the
    ones in ``first`` before the others in a micro-batch); the updating inputs' feeds."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    for side in inputs:
        if updating_node(side) is not None and not unique_rows(side) \
                and not global_aggregation(side) and projected_aggregation(side) is None:
            raise FlinkSqlError(
                f"An updating input of {operation.name} is not supported by sessioncluster in "
                "STREAMING mode unless it is a group aggregation of a table, a global "
                "aggregation, or a projection and/or filter of one (run the set operation over "
                "bounded sources)")
    frames, feeds = input_records(session, inputs, plan_side, feed_root, feed_prefix)
    names = [c for c in frames[0].columns if c not in (KIND, SEQUENCE)]
    values = [f"flink_l{i}" for i in range(len(names))]
    keyed = [frame.select(*[F.col(f"`{c}`").alias(k) for c, k in zip(names, values)],
                          F.lit(0 if operation.name == "UNION" or n == 0 else 1).alias(SIDE), F.col(KIND),
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
                                         ROW_KIND, partial(set_changes, operation))
    session.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
    changes = both.groupBy(*[f"flink_k{i}" for i in range(len(values))]) \
        .transformWithStateInPandas(processor, StructType([*fields, StructField(
            ROW_KIND, StringType())]), "Append", "None")
    return changes.toDF(*names, ROW_KIND), feeds
