"""A bounded group aggregation joined with, or ``UNION ALL``-ed to, a bounded table in STREAMING
mode: Flink's changelog record by record.

Flink 2.3 at parallelism 1 (probed: ``/work/briefs/data/boundedjoin``, 2 runs each, the
table on either side of the join) emits the table's rows first, then the aggregation's
changelog (:mod:`.boundedchangelog`):

- ``agg JOIN table ON ..`` (inner): the table's rows reach the join while the aggregation has
  none (nothing out), then each of the aggregation's records joins the table's rows that
  match it, keeping its RowKind (``+I[a,1,1] -U[a,1,1] +U[a,2,1] +I[c,1,5] ..``);
- ``agg UNION ALL table``: the table's rows ``+I``, then the aggregation's records.

A key with several table rows: each record joins them in the table's order here (Flink's is
its join state's, not probed). Here that is one Spark batch query: the aggregation's records
(:func:`changelog_query`), the table's rows numbered in source order, their order (table
first, then the records' :data:`SEQ`, :data:`SUB`; a record's joined rows in the table's
order) numbered (:func:`table_first_ordered` orders by that number). Other joins (outer
joins, a join of two aggregations: Flink's order of their records is a race, it differed
between its runs) give None: the caller keeps the final rows, which are Flink's final state.
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from .boundedchangelog import SEQ, SUB, Columns, changelog_query
from .dialect import Flink, output_name
from .tableaggregate import ROW_KIND
from .topn import in_source_order, without_ctes

#: a row's place: 0 the table's rows, 1 the aggregation's records; a table row's position
_FIRST, _POS = "__bj_first", "__bj_pos"
#: a row's number in Flink's order
_NUMBER = "__bj_n"


def table_first_changes(query: exp.Expr, columns: Columns,
                        scalars: frozenset[str] = frozenset()) -> exp.Expr | None:
    """The query (Flink dialect) giving the records of an inner join or a ``UNION ALL`` of a
    group aggregation and a table (module docstring), in any order (see
    :func:`table_first_ordered`); None for another query."""
    query = without_ctes(query)
    if isinstance(query, exp.Union):
        return _union_all(query, columns, scalars)
    if isinstance(query, exp.Select):
        return _inner_join(query, columns, scalars)
    return None


def _changes_of(side: exp.Expr, columns: Columns, scalars: frozenset[str]) -> exp.Expr | None:
    """The aggregation's records (:func:`changelog_query`) of a select that is one."""
    if not isinstance(side, exp.Select) or in_source_order(exp.Subquery(this=side)):
        return None
    return changelog_query(side, columns, scalars)


def _union_all(union: exp.Union, columns: Columns, scalars: frozenset[str]) -> exp.Expr | None:
    if union.args.get("distinct") is not False \
            or any(union.args.get(a) for a in ("order", "limit", "offset")):
        return None
    sides = [union.this, union.expression]
    changes = [_changes_of(s, columns, scalars) for s in sides]
    tables = [isinstance(s, exp.Select) and in_source_order(exp.Subquery(this=s)) for s in sides]
    if not ((changes[0] is not None and tables[1]) or (tables[0] and changes[1] is not None)):
        return None
    parts = []
    for side, records in zip(sides, changes):
        if records is None:  # the table's rows: +I, in source order, first
            parts.append(exp.select(
                "*", exp.alias_(_sql("MONOTONICALLY_INCREASING_ID()"), SEQ, quoted=True),
                exp.alias_(_sql("0"), SUB, quoted=True),
                exp.alias_(exp.Literal.string("+I"), ROW_KIND, quoted=True),
                exp.alias_(_sql("0"), _FIRST, quoted=True),  # the columns in the records' order
            ).from_(exp.Subquery(this=side.copy(), alias=exp.TableAlias(
                this=exp.to_identifier("__bj_table")))))
        else:
            if any(isinstance(e, exp.Star) or e.is_star for e in side.expressions):
                return None
            names = [exp.column(output_name(e, i), quoted=True)
                     for i, e in enumerate(side.expressions)]
            parts.append(exp.select(
                *names, *(exp.column(n, quoted=True) for n in (SEQ, SUB, ROW_KIND)),
                exp.alias_(_sql("1"), _FIRST, quoted=True)).from_(
                exp.Subquery(this=records, alias=exp.TableAlias(
                    this=exp.to_identifier("__bj_agg")))))
    both = exp.union(parts[0], parts[1], distinct=False)
    return _renumbered(both, [_FIRST, SEQ, SUB])


def _inner_join(select: exp.Select, columns: Columns, scalars: frozenset[str]) -> exp.Expr | None:
    joins = select.args.get("joins") or []
    from_ = select.args.get("from_")
    if len(joins) != 1 or from_ is None or joins[0].side \
            or (joins[0].kind or "") not in ("", "INNER") \
            or joins[0].args.get("using") or any(
                select.args.get(a) for a in ("group", "having", "order", "limit", "offset",
                                             "distinct")) \
            or any(n.find_ancestor(exp.Select) is select
                   for n in select.find_all(exp.Window, exp.AggFunc)) \
            or any(isinstance(e, exp.Star) or e.is_star for e in select.expressions):
        return None
    tree = select.copy()
    sources = [tree.args["from_"].this, tree.args["joins"][0].this]
    bodies = [s.this if isinstance(s, exp.Subquery) else None for s in sources]
    changes = [_changes_of(b, columns, scalars) if b is not None else None for b in bodies]
    at = 0 if changes[0] is not None else 1
    table = sources[1 - at]
    if changes[at] is None or not in_source_order(table) or not sources[at].alias:
        return None
    sources[at].set("this", changes[at])
    alias = table.alias_or_name
    numbered = exp.select("*", exp.alias_(_sql("MONOTONICALLY_INCREASING_ID()"), _POS,
                                          quoted=True)).from_(table.copy())
    table.replace(exp.Subquery(this=numbered, alias=exp.TableAlias(
        this=exp.to_identifier(alias))))
    agg = sources[at].alias
    for name in (SEQ, SUB, ROW_KIND):
        tree.append("expressions", exp.column(name, table=agg, quoted=True))
    tree.append("expressions", exp.column(_POS, table=alias, quoted=True))
    return _renumbered(tree, [SEQ, SUB, _POS])


def _renumbered(query: exp.Expr, order: list[str]) -> exp.Select:
    """``query``'s rows with their number in ``order`` (:data:`_NUMBER`)."""
    keys = ", ".join(_quoted(n) for n in order)
    renumbered = sqlglot.parse_one(
        f"SELECT *, ROW_NUMBER() OVER (ORDER BY {keys}) AS {_quoted(_NUMBER)} FROM __bj_rows",
        read=Flink)
    assert isinstance(renumbered, exp.Select)
    placeholder = next(t for t in renumbered.find_all(exp.Table) if t.name == "__bj_rows")
    placeholder.replace(exp.Subquery(this=query, alias=exp.TableAlias(
        this=exp.to_identifier("__bj_rows"))))
    return renumbered


def table_first_ordered(frame: Any) -> Any:
    """The rows of :func:`table_first_changes`'s query in Flink's order, the helper columns
    dropped and :data:`~.tableaggregate.ROW_KIND` last."""
    helpers = (SEQ, SUB, ROW_KIND, _FIRST, _POS, _NUMBER)
    columns = [f"`{c}`" for c in frame.columns if c not in helpers]
    return frame.orderBy(_NUMBER).select(*columns, f"`{ROW_KIND}`")


def _sql(text: str) -> exp.Expr:
    return sqlglot.parse_one(text, read=Flink)


def _quoted(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect=Flink)
