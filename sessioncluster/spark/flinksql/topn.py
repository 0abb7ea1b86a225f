"""Top-N over bounded insert-only sources in STREAMING mode: Flink's changelog record by record.

Flink plans ``SELECT .. FROM (SELECT .., ROW_NUMBER() OVER (PARTITION BY p ORDER BY o) AS rn
FROM t) WHERE rn <= N`` over an insert-only input as a ``Rank`` whose function keeps, per
partition key, the rows ranked so far (``TopNBuffer``: sort key to rows, ties in arrival order)
and emits, for each input row (:func:`replay`, the rules of Flink's ``AppendOnlyTopNFunction``
and ``FastTop1Function``):

- a rank end of 1 from rank 1 (``FastTop1Function``): ``+I`` for the partition's first row, then
  ``-U`` old / ``+U`` new for a row ranked strictly before it; the ``-U`` only without
  ``PARTITION BY`` (with one, the partition key is the result's upsert key and Flink's planner
  asks for no update-before: PyFlink 2.3 prints a bare ``+U``);
- with ``rn`` in the output, or a rank start after 1: a row ranked within the end shifts the
  rows after it, each changed rank ``-U`` (the row there before) / ``+U`` (the row there now),
  and ``+I`` for the rank that was empty, only ranks within the range emitted;
- without ``rn``: ``-D`` of the row pushed out of the top N, then ``+I`` of the new one.

A row ranked after the buffer's worst (or equal to it) when the buffer is full is dropped.
Here the input rows are numbered in their source order (``MONOTONICALLY_INCREASING_ID``, before
any shuffle), grouped by the partition key (``applyInPandas``) and replayed in that order; the
records carry their position (the row's number, then the record's number within it) as
:mod:`.boundedchangelog`'s do, and :func:`~.boundedchangelog.ordered_changes` orders them: at
parallelism 1 the order is Flink's.

Only that shape is rewritten (:func:`find_top_n`): the outer select plain columns of the ranked
subquery, its WHERE only the bound on ``rn``; the subquery's items plain columns and the one
``ROW_NUMBER()`` over columns, its FROM a table (a Top-N over an aggregation is Flink's
``RetractableTopNFunction``, not replayed here).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from .boundedchangelog import SEQ, SUB, ordered_changes
from .tableaggregate import ROW_KIND

#: a ranked row's columns carried for the replay: partition key i, order key i
_PART, _ORDER = "__tn_p", "__tn_o"


@dataclass(frozen=True, slots=True)
class RankRange:
    """A Top-N's ranks kept (``start`` to ``end``, 1-based, inclusive) and its rules."""

    start: int
    end: int
    #: ``rn`` is a column of the result
    output_number: bool
    #: the rank has a PARTITION BY (a top-1 then emits no ``-U``)
    partitioned: bool
    #: per order key: descending, and NULLs first
    order: tuple[tuple[bool, bool], ...]


#: a record of the replay: the input row's index, its number within that row, its kind, the
#: row and its rank
Record = tuple[int, int, str, tuple[Any, ...], int]


def replay(rows: Iterable[tuple[tuple[Any, ...], tuple[Any, ...]]],
           ranks: RankRange) -> Iterator[Record]:
    """Flink's Top-N records of one partition's insert-only rows (``(sort key, row)`` each,
    in arrival order), as the module docstring says."""
    compare = functools.cmp_to_key(functools.partial(_compare_keys, ranks.order))
    if ranks.start == 1 and ranks.end == 1:
        yield from _top1(rows, compare, not ranks.partitioned)
        return
    buffer: list[tuple[Any, list[tuple[Any, ...]]]] = []  # (sort key, rows), best first
    for index, (key, row) in enumerate(rows):
        ordered = compare(key)
        size = sum(len(r) for _, r in buffer)
        if buffer and not (ordered < buffer[-1][0]) and size >= ranks.end:
            continue  # not within the buffer's range
        at = next((i for i, (k, _) in enumerate(buffer) if not (k < ordered)), len(buffer))
        if at < len(buffer) and buffer[at][0] == ordered:
            buffer[at][1].append(row)
        else:
            buffer.insert(at, (ordered, [row]))
        emitted = _with_number(buffer, at, row, ranks) \
            if ranks.output_number or ranks.start > 1 else _without_number(buffer, row, ranks)
        for sub, (kind, record, rank) in enumerate(emitted):
            yield index, sub, kind, record, rank


def _top1(rows: Iterable[tuple[tuple[Any, ...], tuple[Any, ...]]], compare: Any,
          update_before: bool) -> Iterator[Record]:
    """``FastTop1Function``: the first row, then each one strictly before the current."""
    current: tuple[Any, tuple[Any, ...]] | None = None
    for index, (key, row) in enumerate(rows):
        ordered = compare(key)
        if current is None:
            current = (ordered, row)
            yield index, 0, "+I", row, 1
        elif ordered < current[0]:
            if update_before:
                yield index, 0, "-U", current[1], 1
            yield index, 1, "+U", row, 1
            current = (ordered, row)


def _with_number(buffer: list[tuple[Any, list[tuple[Any, ...]]]], at: int, row: tuple[Any, ...],
                 ranks: RankRange) -> list[tuple[str, tuple[Any, ...], int]]:
    """``processElementWithRowNumber``: the records of the rows shifted by ``row`` (in the
    buffer's entry ``at``), the entries after the rank end dropped."""
    out: list[tuple[str, tuple[Any, ...], int]] = []
    rank = sum(len(r) for _, r in buffer[:at + 1])
    current, i = row, at + 1
    while i < len(buffer) and rank <= ranks.end:
        for previous in buffer[i][1]:
            if rank > ranks.end:
                break
            if rank >= ranks.start:
                out += [("-U", previous, rank), ("+U", current, rank)]
            current, rank = previous, rank + 1
        i += 1
    if rank <= ranks.end and rank >= ranks.start:
        out.append(("+I", current, rank))
    del buffer[i:]
    return out


def _without_number(buffer: list[tuple[Any, list[tuple[Any, ...]]]], row: tuple[Any, ...],
                    ranks: RankRange) -> list[tuple[str, tuple[Any, ...], int]]:
    """``processElementWithoutRowNumber``: ``-D`` of the row past the rank end, ``+I``."""
    out: list[tuple[str, tuple[Any, ...], int]] = []
    if sum(len(r) for _, r in buffer) > ranks.end:
        last = buffer[-1][1].pop()
        if not buffer[-1][1]:
            buffer.pop()
        if last is row:
            return out
        out.append(("-D", last, 0))
    out.append(("+I", row, 0))
    return out


def _compare_keys(order: Sequence[tuple[bool, bool]], a: tuple[Any, ...],
                  b: tuple[Any, ...]) -> int:
    """Flink's sort key comparator: per key its direction and where its NULLs go."""
    for (descending, nulls_first), x, y in zip(order, a, b):
        if x is None or y is None:
            if x is None and y is None:
                continue
            return (-1 if x is None else 1) * (1 if nulls_first else -1)
        if x != y:
            less = x < y
            return (-1 if less else 1) * (-1 if descending else 1)
    return 0


@dataclass(frozen=True, slots=True)
class TopN:
    """A Top-N query's parts: the ranked subquery without its ``ROW_NUMBER()`` item, the
    ``rn`` column's name and position among the subquery's items, the partition and order
    keys, the ranks kept and the outer query's columns (None for ``*``)."""

    ranked: exp.Select
    number: str
    number_at: int
    partition: list[exp.Expr]
    order: list[exp.Expr]
    ranks: RankRange
    columns: list[str] | None


def find_top_n(query: exp.Expr) -> TopN | None:
    """The Top-N over an insert-only table that :func:`changes` replays; None for another
    query (module docstring)."""
    if not isinstance(query, exp.Select) or any(
            query.args.get(a) for a in ("group", "having", "order", "limit", "joins",
                                        "distinct", "with_", "offset")):
        return None
    from_ = query.args.get("from_")
    inner = from_.this.this if from_ is not None and isinstance(from_.this, exp.Subquery) \
        else None
    if not isinstance(inner, exp.Select) or any(
            inner.args.get(a) for a in ("group", "having", "order", "limit", "joins",
                                        "distinct", "with_", "offset")) \
            or not isinstance((inner.args.get("from_") or exp.From()).this, exp.Table) \
            or any(isinstance(t.this, exp.Anonymous) for t in inner.find_all(exp.Table)):
        return None
    numbered = [(i, e) for i, e in enumerate(inner.expressions)
                if isinstance(e, exp.Alias) and isinstance(e.this, exp.Window)]
    if len(numbered) != 1 or not isinstance(numbered[0][1].this.this, exp.RowNumber):
        return None
    at, item = numbered[0]
    window = item.this
    if window.args.get("spec") is not None or not window.args.get("order"):
        return None
    partition = list(window.args.get("partition_by") or [])
    ordered = list(window.args["order"].expressions)
    others = [e for i, e in enumerate(inner.expressions) if i != at]
    if not all(isinstance(e, exp.Column) for e in [*partition, *others]) \
            or not all(isinstance(o.this, exp.Column) for o in ordered) \
            or any(True for e in others for _ in e.find_all(exp.Window)):
        return None
    number = item.alias
    bounds = _bounds(query.args.get("where"), number)
    if bounds is None:
        return None
    outer = list(query.expressions)
    if len(outer) == 1 and isinstance(outer[0], exp.Star):
        columns = None
    elif all(isinstance(e, exp.Column) and not e.table for e in outer):
        columns = [e.name for e in outer]
    else:
        return None
    output_number = columns is None or number.lower() in [c.lower() for c in columns]
    ranks = RankRange(bounds[0], bounds[1], output_number, bool(partition),
                      tuple((bool(o.args.get("desc")), bool(o.args.get("nulls_first")))
                            for o in ordered))
    ranked = inner.copy()
    ranked.set("expressions", [e.copy() for e in others])
    return TopN(ranked, number, at, [p.copy() for p in partition],
                [o.this.copy() for o in ordered], ranks, columns)


def _bounds(where: exp.Where | None, number: str) -> tuple[int, int] | None:
    """The ranks ``rn <= N``, ``rn < N``, ``rn = N``, ``rn BETWEEN a AND b`` keep."""
    if where is None:
        return None
    cond = where.this

    def is_number(e: exp.Expr) -> bool:
        return isinstance(e, exp.Column) and not e.table and e.name.lower() == number.lower()

    def literal(e: exp.Expr) -> int | None:
        return int(e.this) if isinstance(e, exp.Literal) and not e.is_string \
            and e.this.isdigit() else None

    if isinstance(cond, exp.Between) and is_number(cond.this):
        low, high = literal(cond.args["low"]), literal(cond.args["high"])
        return (max(low, 1), high) if low is not None and high is not None and high >= 1 \
            else None
    flipped: dict[type[exp.Binary], type[exp.Binary]] = {
        exp.GTE: exp.LTE, exp.GT: exp.LT, exp.EQ: exp.EQ}
    if isinstance(cond, exp.Binary) and type(cond) in flipped \
            and is_number(cond.expression):
        cond = flipped[type(cond)](this=cond.expression, expression=cond.this)
    if not isinstance(cond, (exp.LTE, exp.LT, exp.EQ)) or not is_number(cond.this):
        return None
    n = literal(cond.expression)
    if n is None:
        return None
    end = n - 1 if isinstance(cond, exp.LT) else n
    start = n if isinstance(cond, exp.EQ) else 1
    return (start, end) if end >= 1 else None


def changes(session: Any, top_n: TopN, sql: Any) -> Any:
    """The Top-N's records as Flink emits them (the outer query's columns, its RowKind last),
    ``sql`` turning a Flink select into the Spark SQL text of the session's tables."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    ranked = top_n.ranked.copy()
    carried = [exp.alias_(p.copy(), f"{_PART}{i}", quoted=True)
               for i, p in enumerate(top_n.partition)]
    carried += [exp.alias_(o.copy(), f"{_ORDER}{i}", quoted=True)
                for i, o in enumerate(top_n.order)]
    position = exp.Anonymous(this="MONOTONICALLY_INCREASING_ID", expressions=[])
    ranked.set("expressions", [*ranked.expressions, *carried,
                               exp.alias_(position, SEQ, quoted=True)])
    frame = session.sql(sql(ranked))
    names = frame.columns[:len(top_n.ranked.expressions)]
    fields = [frame.schema[n] for n in names]
    fields.insert(top_n.number_at, StructField(top_n.number, LongType(), False))
    schema = StructType([*fields, StructField(SEQ, LongType(), False),
                         StructField(SUB, LongType(), False),
                         StructField(ROW_KIND, StringType(), False)])
    keys = [f"{_PART}{i}" for i in range(len(top_n.partition))] or [_PART]
    if not top_n.partition:
        from pyspark.sql.functions import lit
        frame = frame.withColumn(_PART, lit(0))
    orders, number_at, ranks = len(top_n.order), top_n.number_at, top_n.ranks

    def replay_partition(rows: Any) -> Any:  # a function: Spark reads its type hints
        return _replay_frame(names, orders, number_at, ranks, schema.names, rows)

    replayed = frame.groupBy(*keys).applyInPandas(replay_partition, schema)
    out = [f"`{c}`" for c in (top_n.columns or [f.name for f in fields])]
    return ordered_changes(replayed.select(*out, SEQ, SUB, ROW_KIND))


def _replay_frame(names: list[str], orders: int, number_at: int, ranks: RankRange,
                  columns: list[str], rows: Any) -> Any:
    """One partition's rows (a pandas frame) replayed into its records' frame."""
    import pandas as pd

    rows = rows.sort_values(SEQ, kind="stable")
    values = rows[names].astype(object).where(rows[names].notna(), None)
    keys = rows[[f"{_ORDER}{i}" for i in range(orders)]].astype(object)
    keys = keys.where(keys.notna(), None)
    seqs = [int(s) for s in rows[SEQ]]
    inputs = list(zip(map(tuple, keys.itertuples(index=False)),
                      map(tuple, values.itertuples(index=False))))
    out = []
    for index, sub, kind, row, rank in replay(inputs, ranks):
        record = list(row)
        record.insert(number_at, rank)
        out.append([*record, seqs[index], sub, kind])
    return pd.DataFrame(out, columns=columns)
