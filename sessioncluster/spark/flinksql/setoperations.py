"""``UNION``, ``EXCEPT`` and ``INTERSECT`` over bounded sources in STREAMING mode: Flink's
changelog record by record.

Flink 2.3 plans them over their two inputs (``explain_sql``):

- ``UNION``: a ``GroupAggregate`` without aggregate functions over the ``UNION ALL``;
- ``EXCEPT`` / ``INTERSECT``: a ``LeftAntiJoin`` / ``LeftSemiJoin`` of the left rows with the
  right ones, then that ``GroupAggregate`` (distinct) over the join's changes;
- ``EXCEPT ALL``: ``SUM`` of a marker (1 left, -1 right) per row over the ``UNION ALL``, rows
  with a positive sum, each replicated that many times (``$REPLICATE_ROWS$``);
  ``INTERSECT ALL``: ``COUNT`` of a left and of a right marker, rows with both at least 1,
  replicated the lesser count.

The records depend on how the two inputs interleave at the two-input operator, which is a race
in Flink: PyFlink 2.3 at parallelism 1 printed, for the same ``EXCEPT`` of two ``VALUES``,
the left input first, then the right (most runs), but also the inputs alternating, or the right
first. Here the left input comes whole, then the right: the rows of ``L UNION ALL R`` numbered
in that order (``MONOTONICALLY_INCREASING_ID``, before any shuffle). ``UNION``: ``+I`` of a row
where it first comes; ``EXCEPT``: ``+I`` of a left row where it first comes, ``-D`` where it
first comes on the right; ``INTERSECT``: ``+I`` where a left row first comes on the right;
``ALL``: the aggregation's changelog (:mod:`.boundedchangelog`), each record replicated
(:func:`replicated`). Each side must be a projection/filter of one table or ``VALUES`` (or a
select without FROM), or, in a distinct one, a select of the keys only of a ``GROUP BY`` of
such rows (Flink prunes the unused aggregates: the keys come where they first come); a
``UNION`` of unions is one union of all their inputs, as Calcite merges it. Another query
keeps the final rows.
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from .boundedchangelog import SEQ, SUB, Columns, changelog_query
from .dialect import Flink, output_name
from .tableaggregate import ROW_KIND
from .topn import in_source_order, without_ctes

#: the parts of the rewritten query: both inputs' rows, their side (0 left, 1 right) and
#: position, their left/right marker, and how many copies of a record (the ``ALL`` forms)
_ROWS, _SIDE, _POS, _LEFT, _RIGHT, _COPIES = (
    "__so_rows", "__so_side", "__so_pos", "__so_l", "__so_r", "__so_n")


def set_operation_changes(query: exp.Expr, columns: Columns) -> tuple[exp.Expr, bool] | None:
    """The query (Flink dialect) giving the set operation's records: its columns, :data:`SEQ`,
    :data:`SUB`, :data:`ROW_KIND` (to order with :func:`~.boundedchangelog.ordered_changes`),
    and whether each record must be :func:`replicated` first; None for another query."""
    query = without_ctes(query)
    if not isinstance(query, (exp.Union, exp.Except, exp.Intersect)) \
            or any(query.args.get(a) for a in ("order", "limit", "offset")):
        return None
    sides = _union_inputs(query) if isinstance(query, exp.Union) \
        else [query.this, query.expression]
    if query.args.get("distinct") is not False:
        sides = [_keys_read(s) or s for s in sides]
    if not all(_in_order(s) for s in sides):
        return None
    names = columns(exp.Subquery(this=sides[0].copy(), alias=exp.TableAlias(
        this=exp.to_identifier("__so_left"))))
    if names is None:
        return None
    keys = ", ".join(_quoted(n) for n in names)
    rows = _numbered(sides)
    distinct = query.args.get("distinct") is not False
    if isinstance(query, exp.Union):
        if not distinct:
            return None  # UNION ALL: insert-only in its inputs' order already
        text = (f"SELECT {keys}, '+I' AS {_quoted(ROW_KIND)}, MIN({_POS}) AS {_quoted(SEQ)}, "
                f"0 AS {_quoted(SUB)} FROM {_ROWS} GROUP BY {keys}")
    elif distinct:
        text = _first_left_and_right(keys, isinstance(query, exp.Except))
    else:
        text = _counted(keys, isinstance(query, exp.Except))
    parsed = sqlglot.parse_one(text, read=Flink)
    built = parsed if distinct else changelog_query(parsed)
    if built is None:
        return None
    placeholder = next(t for t in built.find_all(exp.Table) if t.name == _ROWS)
    placeholder.replace(exp.Subquery(this=rows, alias=exp.TableAlias(
        this=exp.to_identifier(_ROWS))))
    return built, not distinct


def replicated(frame: Any) -> Any:
    """The records of an ``EXCEPT ALL``/``INTERSECT ALL`` (a DataFrame), each as many times as
    its row's count (``$REPLICATE_ROWS$``), in order after one another."""
    from pyspark.sql import functions as f

    copies = f.posexplode(f.sequence(f.lit(1), f.col(_COPIES).cast("int")))
    return frame.select("*", copies.alias("__so_i", "__so_v")) \
        .withColumn(SEQ, f.col(SEQ) * 2 + f.col(SUB)).withColumn(SUB, f.col("__so_i")) \
        .drop(_COPIES, "__so_i", "__so_v")


def _in_order(side: exp.Expr) -> bool:
    """A side whose rows come in its source's order, insert-only."""
    if isinstance(side, exp.Select) and side.args.get("from_") is None:
        return not any(side.args.get(a) for a in ("group", "having", "where", "distinct"))
    return isinstance(side, exp.Select) and in_source_order(exp.Subquery(this=side))


def _union_inputs(union: exp.Union) -> list[exp.Expr]:
    """The inputs of a ``UNION`` and of the unions (of the same ALL or not) it is made of,
    left to right: Calcite merges ``a UNION b UNION c`` into one union of the three."""
    distinct = union.args.get("distinct") is not False
    sides: list[exp.Expr] = []
    for side in (union.this, union.expression):
        side = side.unnest() if isinstance(side, exp.Subquery) and not side.alias else side
        nested = isinstance(side, exp.Union) and (side.args.get("distinct") is not False) \
            == distinct and not any(side.args.get(a) for a in ("order", "limit", "offset"))
        sides += _union_inputs(side) if nested and isinstance(side, exp.Union) else [side]
    return sides


def _keys_read(side: exp.Expr) -> exp.Select | None:
    """A side that reads only the keys of a ``GROUP BY`` (``SELECT k FROM (SELECT k, COUNT(*)
    .. GROUP BY k)``) as the projection of the keys of the aggregation's input rows: Flink
    prunes the unused aggregates, and the aggregation of keys only emits ``+I`` where a key
    first comes, which a distinct set operation reads as it reads those rows. None for another
    side."""
    source = side.args["from_"].this if isinstance(side, exp.Select) \
        and side.args.get("from_") is not None else None
    inner = source.this if isinstance(source, exp.Subquery) else None
    group = inner.args.get("group") if isinstance(inner, exp.Select) else None
    if inner is None or group is None or any(
            side.args.get(a) for a in ("where", "group", "having", "distinct", "joins")) \
            or any(inner.args.get(a) for a in ("having", "joins", "distinct", "with_")) \
            or any(v for k, v in group.args.items() if k != "expressions"):
        return None
    keys = {output_name(e, i).lower(): e.unalias() for i, e in enumerate(inner.expressions)
            if not any(True for _ in e.find_all(exp.AggFunc))
            and any(e.unalias() == k for k in group.expressions)}
    items = []
    for i, item in enumerate(side.expressions):
        column = item.unalias()
        if not isinstance(column, exp.Column) or column.name.lower() not in keys:
            return None
        items.append(exp.alias_(keys[column.name.lower()].copy(), output_name(item, i)))
    read = exp.select(*items).from_(inner.args["from_"].this.copy())
    if inner.args.get("where") is not None:
        read.set("where", inner.args["where"].copy())
    return read


def _numbered(sides: list[exp.Expr]) -> exp.Select:
    """The sides' rows, left first, with their :data:`_SIDE`, :data:`_POS` and markers (left:
    side 0)."""
    both = exp.union(*[exp.select(exp.Star(), exp.alias_(exp.Literal.number(i), _SIDE))
                       .from_(exp.Subquery(this=s.copy(), alias=exp.TableAlias(
                           this=exp.to_identifier(f"__so_side{i}"))))
                       for i, s in enumerate(sides)], distinct=False)
    marked = sqlglot.parse_one(
        f"SELECT *, MONOTONICALLY_INCREASING_ID() AS {_POS}, CASE WHEN {_SIDE} = 0 THEN TRUE "
        f"END AS {_LEFT}, CASE WHEN {_SIDE} = 1 THEN TRUE END AS {_RIGHT} FROM __so_both",
        read=Flink)
    assert isinstance(marked, exp.Select)
    marked.set("from_", exp.From(this=exp.Subquery(this=both, alias=exp.TableAlias(
        this=exp.to_identifier("__so_both")))))
    return marked


def _first_left_and_right(keys: str, except_: bool) -> str:
    """``EXCEPT``: ``+I`` where a left row first comes, ``-D`` where it first comes on the
    right; ``INTERSECT``: ``+I`` where a left row first comes on the right."""
    firsts = (f"SELECT {keys}, MIN(CASE WHEN {_SIDE} = 0 THEN {_POS} END) AS __so_lp, "
              f"MIN(CASE WHEN {_SIDE} = 1 THEN {_POS} END) AS __so_rp FROM {_ROWS} "
              f"GROUP BY {keys}")
    if not except_:
        return (f"SELECT {keys}, '+I' AS {_quoted(ROW_KIND)}, __so_rp AS {_quoted(SEQ)}, "
                f"0 AS {_quoted(SUB)} FROM ({firsts}) AS __so_f "
                "WHERE __so_lp IS NOT NULL AND __so_rp IS NOT NULL")
    return (f"SELECT {keys}, CASE WHEN __so_s = 0 THEN '+I' ELSE '-D' END AS "
            f"{_quoted(ROW_KIND)}, CASE WHEN __so_s = 0 THEN __so_lp ELSE __so_rp END AS "
            f"{_quoted(SEQ)}, 0 AS {_quoted(SUB)} FROM ({firsts}) AS __so_f CROSS JOIN "
            "(VALUES (0), (1)) AS __so_k(__so_s) WHERE __so_lp IS NOT NULL AND "
            "(__so_s = 0 OR __so_rp IS NOT NULL)")


def _counted(keys: str, except_: bool) -> str:
    """The aggregation Flink runs for ``EXCEPT ALL`` / ``INTERSECT ALL``, the number of copies
    of each of its records in :data:`_COPIES`."""
    if except_:
        total = f"SUM(CASE WHEN {_SIDE} = 0 THEN 1 ELSE -1 END)"
        return (f"SELECT {keys}, {total} AS {_COPIES} FROM {_ROWS} GROUP BY {keys} "
                f"HAVING {total} > 0")
    left, right = f"COUNT({_LEFT})", f"COUNT({_RIGHT})"
    return (f"SELECT {keys}, CASE WHEN {left} > {right} THEN {right} ELSE {left} END AS "
            f"{_COPIES} FROM {_ROWS} GROUP BY {keys} HAVING {left} >= 1 AND {right} >= 1")


def _quoted(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect=Flink)
