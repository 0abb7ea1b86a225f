"""A Top-N that ranks its own group aggregation's rows, over bounded sources in STREAMING mode.

``SELECT * FROM (SELECT k, SUM(v) AS s, ROW_NUMBER() OVER (ORDER BY SUM(v) DESC) AS rn FROM t
GROUP BY k HAVING ..) WHERE rn <= N``: Flink 2.3 plans the ``Rank`` over the aggregation's
changelog (its ``HAVING`` a filter of each record in between), as for a Top-N over a subquery
of that aggregation (PyFlink 2.3's ``explain_sql``: ``Rank(strategy=[RetractStrategy], ..)``
over ``Calc(where=..)`` over ``GroupAggregate``). Here the ranked select is split so:
:func:`split_ranked_aggregation` gives the query whose Top-N :mod:`.topn` replays.

Flink's planner took its ``RetractStrategy`` (``RetractableTopNFunction``) for each such query
recorded, ``ORDER BY COUNT(*) DESC`` too (where a Top-N over a subquery of the aggregation
takes the update-fast one) and over an aggregation of an aggregation: :func:`find_ranked_aggregation`
takes it always.
"""

from __future__ import annotations

from sqlglot import exp

from .dialect import Flink
from .topn import TopN, find_top_n, without_ctes
from .updating import is_aggregation

#: the alias of the aggregation's rows under the rank
_AGGREGATED = "__ra_rows"


def find_ranked_aggregation(query: exp.Expr) -> TopN | None:
    """The Top-N of a query ranking its own aggregation, as :func:`~.topn.changes` replays it
    (module docstring); None for another query."""
    split = split_ranked_aggregation(query)
    return None if split is None else find_top_n(split, retract=True)


def split_ranked_aggregation(query: exp.Expr) -> exp.Expr | None:
    """``query`` with its ranked select, a group aggregation with one ``ROW_NUMBER()`` item,
    split into that item over a subquery of the aggregation without it; None for another
    query, or when a partition or order key is not one of the aggregation's items."""
    query = without_ctes(query)
    from_ = query.args.get("from_") if isinstance(query, exp.Select) else None
    inner = from_.this.this if from_ is not None and isinstance(from_.this, exp.Subquery) \
        else None
    if not isinstance(inner, exp.Select) or not is_aggregation(inner):
        return None
    numbered = [(i, e) for i, e in enumerate(inner.expressions)
                if isinstance(e, exp.Alias) and isinstance(e.this, exp.Window)]
    if len(numbered) != 1 or numbered[0][0] != len(inner.expressions) - 1 \
            or not isinstance(numbered[0][1].this.this, exp.RowNumber):
        return None
    window = numbered[0][1].this.copy()
    items = {e.unalias().sql(dialect=Flink): e.alias_or_name
             for e in inner.expressions[:-1]}
    names = {n.lower() for n in items.values()}

    def column(key: exp.Expr) -> exp.Column | None:
        name = items.get(key.sql(dialect=Flink))
        if name is None and isinstance(key, exp.Column) and not key.table \
                and key.name.lower() in names:
            name = key.name
        return None if name is None else exp.column(name, quoted=True)

    for key in [*(window.args.get("partition_by") or []),
                *(o.this for o in window.args["order"].expressions)]:
        replaced = column(key)
        if replaced is None:
            return None
        key.replace(replaced)
    aggregation = inner.copy()
    aggregation.set("expressions", [e.copy() for e in inner.expressions[:-1]])
    ranked = exp.select(exp.Star(), exp.alias_(window, numbered[0][1].alias)).from_(
        exp.Subquery(this=aggregation, alias=exp.TableAlias(
            this=exp.to_identifier(_AGGREGATED))))
    split = query.copy()
    split.args["from_"].this.set("this", ranked)
    return split
