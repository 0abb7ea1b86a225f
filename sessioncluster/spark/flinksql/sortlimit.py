"""``ORDER BY .. LIMIT`` over bounded sources in STREAMING mode: Flink's changelog record by
record.

Flink plans ``SELECT .. FROM t ORDER BY o LIMIT n OFFSET m`` in STREAMING mode as a
``SortLimit``: a Top-N without ``PARTITION BY`` and without the rank in its output, ranks
``m + 1`` to ``m + n`` (``AppendFastStrategy``, ``AppendOnlyTopNFunction``, over insert-only
rows; over a group aggregation's changelog the strategy its ``Rank`` would take). PyFlink 2.3
prints, for ``ORDER BY amount DESC LIMIT 2`` over amounts 3, 5, 2, 9: ``+I 3``, ``+I 5``,
``-D 3``, ``+I 9``.

Here the query is rewritten into that Top-N (:func:`as_top_n`: ``ROW_NUMBER() OVER (ORDER BY
o)`` over the query without its ``ORDER BY``/``LIMIT``, kept ``BETWEEN m + 1 AND m + n``, its
columns named), which :mod:`.topn` replays. A ``LIMIT`` without ``ORDER BY``, or one whose
order keys are not columns, keeps the final rows.
"""

from __future__ import annotations

from sqlglot import exp

from .boundedchangelog import Columns
from .topn import TopN, find_top_n, without_ctes
from .updating import is_aggregation

#: the names of the rewritten query's parts: the sorted rows, an order key not among their
#: columns, the row number
_ROWS, _KEY, _NUMBER = "__sl_rows", "__sl_o", "__sl_rn"


def find_sort_limit(query: exp.Expr, columns: Columns) -> TopN | None:
    """The ``ORDER BY .. LIMIT`` query as the Top-N :func:`~.topn.changes` replays; None for
    another query. ``columns``: the column names of a FROM (a subquery here)."""
    rewritten = as_top_n(query, columns)
    return None if rewritten is None else find_top_n(rewritten)


def as_top_n(query: exp.Expr, columns: Columns) -> exp.Select | None:
    """``query`` (``SELECT .. ORDER BY o LIMIT n [OFFSET m]``, Flink dialect) as the Top-N
    query Flink plans it as (module docstring); None for another shape."""
    query = without_ctes(query)
    if not isinstance(query, exp.Select) or query.args.get("order") is None \
            or query.args.get("limit") is None or query.args.get("distinct") \
            or query.args.get("joins") or any(True for _ in query.find_all(exp.Window)):
        return None
    fetch, skip = _literal(query.args["limit"]), _literal(query.args.get("offset"), 0)
    if fetch is None or skip is None or fetch < 1 \
            or (is_aggregation(query) and any(query.find_all(exp.Rollup, exp.Cube,
                                                             exp.GroupingSets))):
        return None
    body = query.copy()
    for part in ("order", "limit", "offset"):
        body.set(part, None)
    names = columns(exp.Subquery(this=body.copy(), alias=exp.TableAlias(
        this=exp.to_identifier(_ROWS))))
    if names is None:
        return None
    lowered = [n.lower() for n in names]
    ordered = []
    for i, key in enumerate(query.args["order"].expressions):
        if isinstance(key.this, exp.Column) and not key.this.table \
                and key.this.name.lower() in lowered:
            column = exp.column(key.this.name, quoted=True)
        elif is_aggregation(query) or isinstance(key.this, exp.Literal):
            return None  # a key of the aggregation's input, or a column's ordinal
        else:
            body.append("expressions", exp.alias_(key.this.copy(), f"{_KEY}{i}", quoted=True))
            column = exp.column(f"{_KEY}{i}", quoted=True)
        ordered.append(exp.Ordered(this=column, desc=key.args.get("desc"),
                                   nulls_first=key.args.get("nulls_first")))
    number = exp.Window(this=exp.RowNumber(), over="OVER",
                        order=exp.Order(expressions=ordered))
    ranked = exp.select(exp.Star(), exp.alias_(number, _NUMBER)).from_(exp.Subquery(
        this=body, alias=exp.TableAlias(this=exp.to_identifier(_ROWS))))
    bound = exp.Between(this=exp.column(_NUMBER), low=exp.Literal.number(skip + 1),
                        high=exp.Literal.number(skip + fetch))
    return exp.select(*[exp.column(n, quoted=True) for n in names]).from_(exp.Subquery(
        this=ranked, alias=exp.TableAlias(this=exp.to_identifier("__sl_ranked")))) \
        .where(bound)


def _literal(node: exp.Expr | None, default: int | None = None) -> int | None:
    """The non-negative integer of a ``LIMIT``/``OFFSET`` (``default`` without one)."""
    if node is None:
        return default
    value = node.args.get("expression")
    return int(value.this) if isinstance(value, exp.Literal) and not value.is_string \
        and value.this.isdigit() else None
