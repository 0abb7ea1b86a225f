"""The changelog of a group aggregation over bounded sources in STREAMING mode, as Flink's.

Flink runs a query whose sources all end as a streaming job all the same: its group aggregation
emits, record by record in the order its input comes, ``+I`` for a key's first row, then ``-U``
(the result before) and ``+U`` (the result after) for each row that changes the key's aggregate
values, and nothing for a row that leaves them as they were (``GroupAggFunction`` with state TTL
off compares the aggregate values, not the projected row); a projection or a filter over it
(``HAVING`` too) runs on each of those records, keeping its kind (a ``+U`` whose ``+I`` was
filtered out comes alone).

Here that changelog is one Spark batch query (:func:`changelog_query`, no Python loop over the
rows): the aggregation's input rows are numbered in their source order
(``MONOTONICALLY_INCREASING_ID``, before any shuffle); each aggregate function runs over its
key's rows up to the current one (a window function ``ROWS BETWEEN UNBOUNDED PRECEDING AND
CURRENT ROW``); ``LAG`` gives the values of the row before; each input row becomes none, one or
two records (a cross join with ``VALUES (0), (1)``), the selects above the aggregation carry the
records' kind and position, and :func:`ordered_changes` orders them. Across keys the order is
Flink's at parallelism 1 (its source order); per key it is Flink's at any parallelism.

Only a shape whose order is the source's is rewritten: one non-windowed aggregation (``GROUP
BY`` or a global one) of ``COUNT``/``SUM``/``MIN``/``MAX``/``AVG`` (and ``COUNT(DISTINCT x)``)
with projections and filters below and above it. Anything else (joins, ``OVER``, Top-N,
``DISTINCT``, an aggregation of an aggregation, a Python aggregate function, ``ORDER BY`` /
``LIMIT``, set operations) gives None: the caller keeps the final rows, all ``+I``.
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from .dialect import Flink
from .tableaggregate import ROW_KIND
from .updating import is_aggregation, is_window_aggregation

#: the position of an input row in its source order, and of a record made of it (0: ``+I`` or
#: ``-U``, 1: ``+U``)
SEQ, SUB = "__cl_seq", "__cl_sub"
_PASS, _FIRST, _ROWS, _SOURCE = "__cl_pass", "__cl_n", "__cl_rows", "__cl_source"
#: aggregate functions Spark runs as running window functions with Flink's values
_RUNNING = (exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg)
#: nodes after which rows are no longer in their source order, or whose changelog differs
_REORDERING = (exp.Join, exp.Window, exp.SetOperation, exp.Lateral, exp.Unnest, exp.Limit,
               exp.Fetch, exp.Order, exp.Filter)


def changelog_query(query: exp.Expr) -> exp.Expr | None:
    """``query`` (a bounded STREAMING query, Flink dialect) rewritten to give Flink's changelog
    of its one group aggregation: the query's columns, then :data:`SEQ`, :data:`SUB` and
    :data:`~.tableaggregate.ROW_KIND` (``+I``/``-U``/``+U``), in any order (see
    :func:`ordered_changes`); None for a query of another shape (module docstring)."""
    tree = query.copy()
    if any(True for _ in tree.find_all(*_REORDERING)) or _calls_table_function(tree):
        return None
    selects = list(tree.find_all(exp.Select))
    aggregations = [s for s in selects if is_aggregation(s)]
    if len(aggregations) != 1 or is_window_aggregation(aggregations[0]) \
            or any(s.args.get("distinct") is not None for s in selects) \
            or not all(s is tree or _read_from(s) for s in selects):
        return None
    aggregation = aggregations[0]
    readers = _readers(tree, aggregation)
    records = _records(aggregation) if readers is not None else None
    if records is None or readers is None:
        return None
    if aggregation is tree:
        return records
    aggregation.replace(records)
    for reader in readers:
        if not any(isinstance(e, exp.Star) or e.is_star for e in reader.expressions):
            for name in (SEQ, SUB, ROW_KIND):
                reader.append("expressions", exp.column(name, quoted=True))
    return tree


def ordered_changes(frame: Any) -> Any:
    """The rows of :func:`changelog_query`'s query in Flink's order, :data:`SEQ` and
    :data:`SUB` dropped and :data:`~.tableaggregate.ROW_KIND` last."""
    columns = [f"`{c}`" for c in frame.columns if c not in (SEQ, SUB, ROW_KIND)]
    return frame.orderBy(SEQ, SUB).select(*columns, f"`{ROW_KIND}`")


def _calls_table_function(tree: exp.Expr) -> bool:
    """A window TVF or another ``TABLE(...)`` in FROM."""
    return any(isinstance(t.this, exp.Anonymous) for t in tree.find_all(exp.Table))


def _read_from(select: exp.Select) -> bool:
    """The select is a subquery in FROM or a common table expression (not one in a WHERE)."""
    parent = select.parent
    return isinstance(parent, exp.CTE) or (isinstance(parent, exp.Subquery)
                                           and isinstance(parent.parent, exp.From))


def _readers(root: exp.Expr, aggregation: exp.Select) -> list[exp.Select] | None:
    """The selects that read the aggregation's rows, directly or through others (subqueries
    in FROM, common table expressions), up to ``root``; None when ``root`` does not read them."""
    ctes = {c.alias_or_name.lower(): c.this for c in root.find_all(exp.CTE)}
    reading, path = {id(aggregation)}, []
    grew = True
    while grew:
        grew = False
        for select in root.find_all(exp.Select):
            from_ = select.args.get("from_")
            if id(select) in reading or from_ is None:
                continue
            source = from_.this
            body = source.this if isinstance(source, exp.Subquery) else \
                ctes.get(source.name.lower()) if isinstance(source, exp.Table) else None
            if body is not None and id(body) in reading:
                reading.add(id(select))
                path.append(select)
                grew = True
    return path if id(root) in reading else None


def _records(aggregation: exp.Select) -> exp.Select | None:
    """The select that replaces ``aggregation``: its changelog records, with :data:`SEQ`,
    :data:`SUB` and :data:`~.tableaggregate.ROW_KIND`; None when it cannot."""
    group = aggregation.args.get("group")
    keys = list(group.expressions) if group is not None else []
    if group is not None and any(v for k, v in group.args.items() if k != "expressions") \
            or any(isinstance(k, (exp.Rollup, exp.Cube, exp.GroupingSets)) for k in keys):
        return None  # GROUPING SETS, ROLLUP, CUBE
    having = aggregation.args.get("having")
    parts = [*aggregation.expressions, *([having.this] if having is not None else [])]
    own = [n for p in parts for n in p.find_all(exp.AggFunc, exp.Anonymous)
           if n.find_ancestor(exp.Select) is aggregation]
    if any(not isinstance(n, _RUNNING) or _distinct_arguments(n) not in (0, 1) for n in own) \
            or any(isinstance(n.this, exp.Distinct) and not isinstance(n, exp.Count)
                   for n in own):
        return None  # a Python aggregate function (Anonymous), or one Spark cannot run so
    from_ = aggregation.args.get("from_")
    if from_ is None:
        return None
    values: dict[str, exp.Expression] = {}
    for call in own:
        values.setdefault(call.sql(dialect=Flink), _running(call, keys))
    for call in own:
        call.replace(values[call.sql(dialect=Flink)].copy())

    source = from_.this
    alias = source.alias_or_name if isinstance(source, exp.Table) else source.alias or _SOURCE
    numbered = exp.select(exp.Star(), exp.alias_(
        exp.Anonymous(this="MONOTONICALLY_INCREASING_ID", expressions=[]), SEQ, quoted=True)
    ).from_(source.copy())
    names = [_name(e, i) for i, e in enumerate(aggregation.expressions)]
    items = [exp.alias_(e.unalias().copy(), n, quoted=True)
             for e, n in zip(aggregation.expressions, names)]
    items += [exp.alias_(k.copy(), f"__cl_k{i}", quoted=True) for i, k in enumerate(keys)]
    items += [exp.alias_(v, f"__cl_a{i}", quoted=True) for i, v in enumerate(values.values())]
    passes = having.this.copy() if having is not None else exp.true()
    items += [exp.alias_(passes, _PASS, quoted=True), exp.column(SEQ, quoted=True)]
    rows = exp.select(*items).from_(exp.Subquery(
        this=numbered, alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True))))
    where = aggregation.args.get("where")
    if where is not None:
        rows.set("where", where.copy())
    return _changes(rows, names, len(keys), len(values))


def _distinct_arguments(call: exp.Expression) -> int:
    """How many arguments a ``DISTINCT`` call has (0 for a call without DISTINCT)."""
    return len(call.this.expressions) if isinstance(call.this, exp.Distinct) else 0


def _name(expression: exp.Expression, position: int) -> str:
    """A select item's column name, Flink's ``EXPR$<n>`` for an unnamed expression."""
    if isinstance(expression, (exp.Alias, exp.Column)):
        return expression.alias_or_name
    return f"EXPR${position}"


def _window(keys: list[exp.Expression], frame: bool) -> exp.Window:
    return exp.Window(
        partition_by=[k.copy() for k in keys], over="OVER",
        order=exp.Order(expressions=[exp.Ordered(this=exp.column(SEQ, quoted=True))]),
        spec=exp.WindowSpec(kind="ROWS", start="UNBOUNDED", start_side="PRECEDING",
                            end="CURRENT ROW") if frame else None)


def _running(call: exp.Expression, keys: list[exp.Expression]) -> exp.Expression:
    """The aggregate call over its key's rows up to the current one (``COUNT(DISTINCT x)``: the
    size of the set of the ``x`` so far)."""
    window = _window(keys, frame=True)
    if isinstance(call.this, exp.Distinct):
        window.set("this", exp.Anonymous(this="COLLECT_SET",
                                         expressions=[call.this.expressions[0].copy()]))
        size = exp.Anonymous(this="SIZE", expressions=[window])
        return exp.Cast(this=size, to=exp.DataType.build("BIGINT"))
    window.set("this", call.copy())
    return window


def _changes(rows: exp.Select, names: list[str], keys: int, values: int) -> exp.Select:
    """The records of ``rows`` (one per input row: the result after it, its key columns
    ``__cl_k<i>``, aggregate values ``__cl_a<i>``, HAVING ``__cl_pass`` and :data:`SEQ`): ``+I``
    for a key's first row, ``-U`` (the values before) and ``+U`` for a row that changes the
    aggregate values, each kept when its HAVING holds."""
    q = _quoted
    window = _window([exp.column(f"__cl_k{i}", quoted=True) for i in range(keys)], frame=False)
    earlier = [*names, *[f"__cl_a{i}" for i in range(values)], _PASS]
    lags = [f"LAG({q(n)}) {window.sql(dialect=Flink)} AS {q(f'__cl_p{i}')}"
            for i, n in enumerate(earlier)]
    lags.append(f"ROW_NUMBER() {window.sql(dialect=Flink)} AS {q(_FIRST)}")
    before = "__cl_s = 0 AND " + q(_FIRST) + " > 1"
    items = [f"CASE WHEN {before} THEN {q(f'__cl_p{i}')} ELSE {q(n)} END AS {q(n)}"
             for i, n in enumerate(names)]
    items += [f"CASE WHEN {q(_FIRST)} = 1 THEN '+I' WHEN __cl_s = 0 THEN '-U' ELSE '+U' END "
              f"AS {q(ROW_KIND)}", q(SEQ), f"__cl_s AS {q(SUB)}"]
    same = " AND ".join(f"{q(f'__cl_a{i}')} IS NOT DISTINCT FROM "
                        f"{q(f'__cl_p{len(names) + i}')}" for i in range(values)) or "TRUE"
    passes = f"CASE WHEN {before} THEN {q(f'__cl_p{len(earlier) - 1}')} ELSE {q(_PASS)} END"
    text = (f"SELECT {', '.join(items)} FROM (SELECT *, {', '.join(lags)} FROM {_ROWS}) AS "
            f"{q('__cl_changes')} CROSS JOIN (VALUES (0), (1)) AS __cl_sub(__cl_s) "
            f"WHERE CASE WHEN {q(_FIRST)} = 1 THEN __cl_s = 0 ELSE NOT ({same}) END "
            f"AND COALESCE({passes}, FALSE)")
    changes = sqlglot.parse_one(text, read=Flink)
    assert isinstance(changes, exp.Select)
    placeholder = next(t for t in changes.find_all(exp.Table) if t.name == _ROWS)
    placeholder.replace(exp.Subquery(this=rows, alias=exp.TableAlias(
        this=exp.to_identifier(_ROWS, quoted=True))))
    return changes


def _quoted(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect=Flink)
