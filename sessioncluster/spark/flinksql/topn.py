"""Top-N over bounded sources in STREAMING mode: Flink's changelog record by record.

Flink runs ``SELECT .. FROM (SELECT .., ROW_NUMBER() OVER (PARTITION BY p ORDER BY o) AS rn
FROM t) WHERE rn <= N`` as a ``Rank`` whose function keeps, per partition key, the rows ranked
so far and emits records for each input record (:mod:`.rankfunctions`: the rules of
``FastTop1Function`` and ``AppendOnlyTopNFunction`` over an insert-only table,
``RetractableTopNFunction`` over a group aggregation's changelog; :mod:`.updatabletopn`'s
``UpdatableTopNFunction`` over one whose order keys only improve, chosen as Flink's planner
does, :func:`_row_key`).

Here the input is numbered in its source order: a table's rows by ``MONOTONICALLY_INCREASING_ID``
(before any shuffle), an aggregation's records by their position in its changelog
(:mod:`.boundedchangelog`, ``SEQ * 2 + SUB``); it is grouped by the partition key
(``applyInPandas``) and replayed in that order. The records carry their position (the input
record's, then the record's number within it) as :mod:`.boundedchangelog`'s do, and
:func:`~.boundedchangelog.ordered_changes` orders them: at parallelism 1 the order is Flink's.

Only that shape is rewritten (:func:`find_top_n`): the outer select plain columns of the ranked
subquery (or ``*``), its WHERE only the bound on ``rn`` (``<=``, ``<``, ``=``, ``BETWEEN``);
the subquery's items plain columns and the one ``ROW_NUMBER()`` over columns, its FROM a table
or a group aggregation whose changelog :func:`~.boundedchangelog.changelog_query` gives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from sqlglot import exp

from .boundedchangelog import SEQ, SUB, Columns, changelog_query, input_position, ordered_changes
from .rankfunctions import RankRange, replay, replay_retractable
from .tableaggregate import ROW_KIND
from .updatabletopn import replay_updatable
from .updating import is_aggregation

#: a ranked row's columns carried for the replay: partition key i, order key i, row key i, its
#: kind and its position in its input's order
_PART, _ORDER, _ROW, _KIND, _POS = "__tn_p", "__tn_o", "__tn_r", "__tn_kind", "__tn_pos"
_CARRIED = (_PART, _ORDER, _ROW, _KIND, _POS, SEQ, SUB, ROW_KIND)


@dataclass(frozen=True, slots=True)
class TopN:
    """A Top-N query's parts: the ranked subquery without its ``ROW_NUMBER()`` item, the
    ``rn`` column's name and position among the subquery's columns (None: the last, after a
    ``*``), the partition and order
    keys, the ranks kept, the outer query's columns (None for ``*``), whether the ranked
    subquery reads a group aggregation's changelog (else a table's rows) and, when Flink
    updates its Top-N in place, the aggregation's key columns (else [])."""

    ranked: exp.Select
    number: str
    number_at: int | None
    partition: list[exp.Expr]
    order: list[exp.Expr]
    ranks: RankRange
    columns: list[str] | None
    over_changes: bool
    row_key: list[str]


def find_top_n(query: exp.Expr, retract: bool = False) -> TopN | None:
    """The Top-N over a table or a group aggregation that :func:`changes` replays; None for
    another query (module docstring). ``retract``: over an aggregation, Flink's planner takes
    its ``RetractStrategy`` whatever the order keys."""
    query = without_ctes(query)
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
            or any(isinstance(t.this, exp.Anonymous) for t in inner.find_all(exp.Table)):
        return None
    source = (inner.args.get("from_") or exp.From()).this
    over_changes = isinstance(source, exp.Subquery) and isinstance(source.this, exp.Select) \
        and is_aggregation(source.this)
    if not over_changes and not in_source_order(source):
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
    star = any(isinstance(e, exp.Star) for e in others)
    if star and at != len(others):
        return None
    if not all(isinstance(e, exp.Column) for e in partition) \
            or not all(isinstance(e, (exp.Column, exp.Star)) for e in others) \
            or not all(isinstance(o.this, exp.Column) for o in ordered) \
            or any(True for e in others for _ in e.find_all(exp.Window)):
        return None
    row_key = _row_key(source.this, ordered, partition, others) \
        if over_changes and not retract else []
    if row_key is None:
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
    return TopN(ranked, number, None if star else at, [p.copy() for p in partition],
                [o.this.copy() for o in ordered], ranks, columns, over_changes,
                row_key)


def rank_refusal(query: exp.Expr) -> str | None:
    """Flink's refusal of a Top-N by ``RANK()`` or ``DENSE_RANK()`` (``.. WHERE r <= N``) in
    STREAMING mode (PyFlink 2.3's ``TableException``); None for another query."""
    query = without_ctes(query)
    from_ = query.args.get("from_") if isinstance(query, exp.Select) else None
    inner = from_.this.this if from_ is not None and isinstance(from_.this, exp.Subquery) \
        else None
    if not isinstance(inner, exp.Select):
        return None
    for item in inner.expressions:
        if isinstance(item, exp.Alias) and isinstance(item.this, exp.Window) \
                and isinstance(item.this.this, (exp.Rank, exp.DenseRank)) \
                and _bounds(query.args.get("where"), item.alias) is not None:
            name = "RANK" if isinstance(item.this.this, exp.Rank) else "DENSE_RANK"
            return f"{name}() on streaming table is not supported currently"
    return None


def without_ctes(query: exp.Expr) -> exp.Expr:
    """``query`` with each common table expression it reads as a subquery of its name (a
    STREAMING query reads its views so); ``query`` itself when it has none."""
    with_ = query.args.get("with_")
    if with_ is None or with_.args.get("recursive"):
        return query
    tree = query.copy()
    ctes = {c.alias_or_name.lower(): c.this for c in tree.args["with_"].expressions}
    tree.set("with_", None)
    for _ in range(len(ctes)):  # a CTE may read an earlier one
        tables = [t for t in tree.find_all(exp.Table)
                  if not t.args.get("db") and t.name.lower() in ctes]
        for table in tables:
            table.replace(exp.Subquery(this=ctes[table.name.lower()].copy(), alias=exp.TableAlias(
                this=exp.to_identifier(table.alias_or_name))))
        if not tables:
            break
    return tree


def _row_key(aggregation: exp.Select, ordered: list[exp.Ordered], partition: list[exp.Expr],
             ranked: list[exp.Expr]) -> list[str] | None:
    """The Top-N over the aggregation's changelog as Flink's planner picks its function: the
    aggregation's key columns for its ``UpdateFastStrategy`` (``UpdatableTopNFunction``), []
    for its ``RetractStrategy`` (``RetractableTopNFunction``), None when not worked out here.
    Update-fast needs each order key a key column (constant per row key) or one that only
    improves: over insert-only rows a ``COUNT`` or ``MAX`` descending, a ``MIN`` ascending
    (``RankProcessStrategy``, ``FlinkRelMdModifiedMonotonicity``; a ``SUM`` or ``AVG`` of a
    non-constant is never known to be monotonic); and a unique key: the aggregation's keys,
    among its columns and the ranked ones, holding the partition key."""
    items = {e.alias_or_name.lower(): e.unalias() for e in aggregation.expressions}
    group = aggregation.args.get("group")
    keys = [k.name.lower() if isinstance(k, exp.Column) else None
            for k in (group.expressions if group is not None else [])]
    monotonic = True
    for key in ordered:
        item = items.get(key.this.name.lower()) if isinstance(key.this, exp.Column) else None
        if isinstance(item, (exp.Sum, exp.Avg)) and not isinstance(item.this, exp.Literal):
            return []
        if isinstance(item, exp.Count) and not isinstance(item.this, exp.Distinct) \
                or isinstance(item, (exp.Max, exp.Min)):
            monotonic = monotonic and bool(key.args.get("desc")) == \
                isinstance(item, (exp.Count, exp.Max))
        elif not (isinstance(item, exp.Column) and item.name.lower() in keys):
            return None
    source = (aggregation.args.get("from_") or exp.From()).this
    if not monotonic:
        return []
    if not keys or None in keys or aggregation.args.get("having") is not None \
            or not in_source_order(source):
        return None  # Flink's unique key or monotonicity not worked out here
    names = [next((n for n, e in items.items() if isinstance(e, exp.Column)
                   and e.name.lower() == k), None) for k in keys]
    columns = {e.name.lower() for e in ranked if isinstance(e, exp.Column)}
    unique = None not in names and (any(isinstance(e, exp.Star) for e in ranked)
                                    or set(names) <= columns)
    fast = unique and {p.name.lower() for p in partition} <= set(names)
    return [n for n in names if n is not None] if fast else []


def in_source_order(source: exp.Expr) -> bool:
    """A table, ``VALUES``, or a subquery of projections and filters over one: its rows come in
    the source's order, insert-only."""
    if isinstance(source, exp.Table):
        return not isinstance(source.this, exp.Anonymous)
    if isinstance(source, exp.Values):
        return True
    body = source.this if isinstance(source, exp.Subquery) else None
    if not isinstance(body, exp.Select) or is_aggregation(body) or any(
            body.args.get(a) for a in ("group", "having", "order", "limit", "joins",
                                       "distinct", "with_", "offset")) \
            or any(True for _ in body.find_all(exp.Window, exp.Unnest, exp.Lateral)):
        return False
    from_ = body.args.get("from_")
    return from_ is not None and in_source_order(from_.this)


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


def changes(session: Any, top_n: TopN, sql: Callable[[exp.Expr], str],
            columns: Columns | None = None) -> Any:
    """The Top-N's records as Flink emits them (the outer query's columns, its RowKind last),
    ``sql`` turning a Flink select into the Spark SQL text of the session's tables; None when
    the aggregation it reads has no changelog here (``columns``: as
    :func:`~.boundedchangelog.changelog_query` takes it)."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    ranked = top_n.ranked.copy()
    kind: exp.Expr = exp.Literal.string("+I")
    if top_n.over_changes:
        source = ranked.args["from_"].this
        log = changelog_query(source.this, columns)
        if log is None:
            return None
        source.set("this", log)
        kind = exp.column(ROW_KIND, quoted=True)
    carried = [exp.alias_(p.copy(), f"{_PART}{i}", quoted=True)
               for i, p in enumerate(top_n.partition)]
    carried += [exp.alias_(o.copy(), f"{_ORDER}{i}", quoted=True)
                for i, o in enumerate(top_n.order)]
    carried += [exp.alias_(exp.column(k), f"{_ROW}{i}", quoted=True)
                for i, k in enumerate(top_n.row_key)]
    ranked.set("expressions", [*ranked.expressions, *carried, exp.alias_(kind, _KIND, quoted=True),
                               exp.alias_(input_position(top_n.over_changes), _POS, quoted=True)])
    frame = session.sql(sql(ranked))
    names = [c for c in frame.columns if not c.startswith(_CARRIED)]
    number_at = len(names) if top_n.number_at is None else top_n.number_at
    fields = [frame.schema[n] for n in names]
    fields.insert(number_at, StructField(top_n.number, LongType(), False))
    schema = StructType([*fields, StructField(SEQ, LongType(), False),
                         StructField(SUB, LongType(), False),
                         StructField(ROW_KIND, StringType(), False)])
    keys = [f"{_PART}{i}" for i in range(len(top_n.partition))] or [_PART]
    if not top_n.partition:
        from pyspark.sql.functions import lit
        frame = frame.withColumn(_PART, lit(0))
    orders, ranks = len(top_n.order), top_n.ranks
    over_changes, row_keys = top_n.over_changes, len(top_n.row_key)

    def replay_partition(rows: Any) -> Any:  # a function: Spark reads its type hints
        return _replay_frame(names, orders, number_at, ranks, (over_changes, row_keys),
                             schema.names, rows)

    replayed = frame.groupBy(*keys).applyInPandas(replay_partition, schema)
    out = [f"`{c}`" for c in (top_n.columns or [f.name for f in fields])]
    return ordered_changes(replayed.select(*out, SEQ, SUB, ROW_KIND))


def _replay_frame(names: list[str], orders: int, number_at: int, ranks: RankRange,
                  changes: tuple[bool, int], columns: list[str], rows: Any) -> Any:
    """One partition's rows (a pandas frame) replayed into its records' frame; ``changes``:
    whether they are a changelog's records, and how many row key columns they carry (> 0:
    ``UpdatableTopNFunction``'s input, which has no ``-U``)."""
    import pandas as pd

    over_changes, row_keys = changes
    rows = rows.sort_values(_POS, kind="stable")
    if row_keys:
        rows = rows[rows[_KIND] != "-U"]
    values = rows[names].astype(object).where(rows[names].notna(), None)
    keys = rows[[f"{_ORDER}{i}" for i in range(orders)]].astype(object)
    keys = keys.where(keys.notna(), None)
    seqs = [int(s) for s in rows[_POS]]
    inputs = list(zip(map(tuple, keys.itertuples(index=False)),
                      map(tuple, values.itertuples(index=False))))
    if row_keys:
        ids = rows[[f"{_ROW}{i}" for i in range(row_keys)]].astype(object)
        ids = ids.where(ids.notna(), None)
        records = replay_updatable([(r, *i) for r, i in zip(
            map(tuple, ids.itertuples(index=False)), inputs)], ranks)
    elif over_changes:
        records = replay_retractable([(k, *i) for k, i in zip(rows[_KIND], inputs)], ranks)
    else:
        records = replay(inputs, ranks)
    out = []
    for index, sub, kind, row, rank in records:
        record = list(row)
        record.insert(number_at, rank)
        out.append([*record, seqs[index], sub, kind])
    return pd.DataFrame(out, columns=columns)
