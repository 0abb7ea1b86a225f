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

An aggregation over another's changelog (directly, or through projections and filters) reads
its records in their order (position ``SEQ * 2 + SUB``), each counted with its sign (+1 for
``+I``/``+U``, -1 for ``-U``/``-D``): ``COUNT`` and ``SUM`` are running sums of signed values,
``MIN`` and ``MAX`` the least and greatest of the values whose signed count is positive
(``MinWithRetract``/``MaxWithRetract``), and a key whose count of rows goes back to 0 emits
``-D`` (its values before), ``+I`` again when a row comes back, as Flink's
``GroupAggFunction`` does. ``SELECT DISTINCT`` is the group aggregation without aggregate
functions Flink plans for it. ``GROUPING SETS``, ``ROLLUP`` and ``CUBE`` expand each numbered
input row into one per set (position ``n * sets + set``), the sets in Flink's order
(:mod:`.groupingsets`).

Only a shape whose order is the source's is rewritten: non-windowed aggregations (``GROUP BY``,
global, grouping sets over columns of their input) of ``COUNT``/``SUM``/``MIN``/``MAX``/``AVG``
(and ``COUNT(DISTINCT x)``) and ``LISTAGG`` (``DISTINCT`` too)/``FIRST_VALUE``/``LAST_VALUE``
(:mod:`.runningcalls`) over insert-only rows, of ``COUNT``/``SUM``/``MIN``/``MAX`` and
``LISTAGG``/``FIRST_VALUE``/``LAST_VALUE`` (their retract variants; ``COUNT(DISTINCT x)`` and
``LISTAGG(DISTINCT x)`` with a count per value) over a changelog, with
projections and filters below and above them (a Top-N is :mod:`.topn`'s). An aggregation's
aggregate columns that the select reading it does not name are dropped first, as Flink's planner
prunes them. Below an aggregation its input may come through Python functions: a table function
(``, LATERAL TABLE(f(x))``, ``JOIN .. ON TRUE``, the Table API's ``flat_map``; its rows
numbered after it, in the order of the rows they are made of, as Flink's ``PythonCorrelate``
emits them; a ``LEFT JOIN .. ON TRUE`` the catalog made a CROSS JOIN of the function's outer
variant) and scalar functions (keys too: ``scalars`` names them). Anything else (other joins,
a ``LEFT JOIN LATERAL`` of another function, ``OVER``, another ``DISTINCT`` call over a
changelog, a Python aggregate function, ``ORDER BY`` / ``LIMIT``, set operations) gives None: the caller
keeps the final rows, all ``+I`` (for a Python aggregate function that is Flink's output too,
for an input within one bundle: its Python group aggregation emits once per bundle).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlglot
from sqlglot import exp

from ...api.table.changelog_mode import CHANGELOG_VIEW_PREFIX, SEQ_COLUMN, SUB_COLUMN
from .dialect import Flink, output_name
from .groupingsets import flink_order, grouping_sets
from .planner import is_lateral_on_true
from .runningcalls import (
    CALLS,
    count_distinct_with_retraction,
    min_max_with_retraction,
    retracting_call,
    running_call,
)
from .tableaggregate import ROW_KIND
from .updating import is_aggregation, is_window_aggregation

#: the position of an input row in its source order, and of a record made of it (0: ``+I`` or
#: ``-U``, 1: ``+U``)
SEQ, SUB = SEQ_COLUMN, SUB_COLUMN
_PASS, _COUNT, _ROWS, _SOURCE = "__cl_pass", "__cl_count", "__cl_rows", "__cl_source"
#: an aggregation's input row: its position in order, and +1 for an addition, -1 a retraction
_POS, _SIGN = "__cl_pos", "__cl_sign"
#: the number of an input row's copy for one grouping set (``GROUPING SETS``/``ROLLUP``/``CUBE``)
_GROUPING_SET = "__cl_g"
#: the refusal of a query of a shape this module does not rewrite over a changelog table
CHANGELOG_REFUSAL = (
    "A query over a table of from_changelog_stream() (a bounded changelog in STREAMING mode) "
    "is not supported by sessioncluster in this shape: only projections, filters and "
    "non-windowed group aggregations (COUNT, SUM, MIN, MAX, LISTAGG, FIRST_VALUE, LAST_VALUE) "
    "over its records apply their RowKinds")
#: the column names of an aggregation's FROM (a table or a subquery), None when unknown
Columns = Callable[[exp.Expr], list[str] | None]
#: aggregate functions Spark runs as running window functions with Flink's values
_RUNNING = (exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg, *CALLS)
#: nodes after which rows are no longer in their source order, or whose changelog differs
_REORDERING = (exp.Window, exp.SetOperation, exp.Unnest, exp.Limit, exp.Fetch, exp.Order,
               exp.Filter)


def changelog_query(query: exp.Expr, columns: Columns | None = None,
                    scalars: frozenset[str] = frozenset()) -> exp.Expr | None:
    """``query`` (a bounded STREAMING query, Flink dialect) rewritten to give Flink's changelog
    of its group aggregations: the query's columns, then :data:`SEQ`, :data:`SUB` and
    :data:`~.tableaggregate.ROW_KIND` (``+I``/``-U``/``+U``/``-D``), in any order (see
    :func:`ordered_changes`); None for a query of another shape (module docstring).
    ``columns``: the column names of an aggregation's FROM (a table or a subquery), which
    order the grouping sets (:func:`~.groupingsets.flink_order`); without it, or when it gives
    None, a ``GROUPING SETS``/``ROLLUP``/``CUBE`` query gives None. ``scalars``: the names
    (lower case) of the Python scalar functions a query may call (any other call of an unknown
    function in an aggregation is taken for a Python aggregate function)."""
    tree = query.copy()
    if any(True for _ in tree.find_all(*_REORDERING)) or _calls_table_function(tree) \
            or not all(is_table_function_join(j) for j in tree.find_all(exp.Join)):
        return None
    selects = list(tree.find_all(exp.Select))
    if not all(s is tree or _read_from(s) for s in selects) \
            or not all([_distinct_as_group(s) for s in selects]):
        return None
    aggregations = [s for s in selects if is_aggregation(s)]
    read = read_changelogs(tree, selects)
    if read is None or not aggregations and not read[1]:
        return None
    if not aggregations:  # a projection or filter of a changelog table: its records kept
        return tree
    over_changes = read[0]
    paths = {id(a): _readers(tree, a) for a in aggregations}
    if any(is_window_aggregation(a) for a in aggregations) \
            or any(p is None for p in paths.values()) \
            or any(r.args.get("joins") for p in paths.values() for r in p or ()):
        return None  # a table function over a changelog: its records' order is not kept
    # innermost first: an aggregation's readers are also those of each aggregation over it
    aggregations.sort(key=lambda a: -len(paths[id(a)] or ()))
    for aggregation in aggregations:
        path = paths[id(aggregation)] or []
        if path:
            _prune(aggregation, path[0])
        records = _records(aggregation, id(aggregation) in over_changes, columns, scalars)
        if records is None:
            return None
        upto = next((i for i, s in enumerate(path) if is_aggregation(s)), len(path))
        if upto < len(path):
            over_changes.add(id(path[upto]))
        if aggregation is tree:  # its common table expressions go to the new root
            records.set("with_", tree.args.get("with_"))
            tree = records
        else:
            aggregation.replace(records)
        _carry_changes(path[:upto])
    return tree


def read_changelogs(tree: exp.Expr, selects: list[exp.Select]) -> tuple[set[int], bool] | None:
    """Where ``tree`` reads a changelog table (``from_changelog_stream``'s, with :data:`SEQ`,
    :data:`SUB` and :data:`~.tableaggregate.ROW_KIND` columns): the selects reading it up to
    the first aggregation carry those columns; the ids of the aggregations over its records,
    and whether it reads one. None when its records would not reach the root in order (a
    join, a read outside FROM)."""
    over: set[int] = set()
    found = False
    for select in selects:
        source = select.args["from_"].this if select.args.get("from_") else None
        reads = [source, *[j.this for j in select.args.get("joins") or []]]
        if not any(is_changelog_table(t) for t in reads):
            continue
        found = True
        if not is_changelog_table(source) or select.args.get("joins"):
            return None
        if is_aggregation(select):
            over.add(id(select))
            continue
        path = _readers(tree, select)
        if path is None:
            return None
        upto = next((i for i, s in enumerate(path) if is_aggregation(s)), len(path))
        if upto < len(path):
            over.add(id(path[upto]))
        _carry_changes([select, *path[:upto]])
    return over, found


def is_changelog_table(source: exp.Expr | None) -> bool:
    """``source`` is a changelog table of ``from_changelog_stream`` (its view's name says)."""
    return isinstance(source, exp.Table) and not source.args.get("db") \
        and source.name.startswith(CHANGELOG_VIEW_PREFIX)


def _carry_changes(readers: list[exp.Select]) -> None:
    """The selects pass a changelog's :data:`SEQ`, :data:`SUB` and ROW_KIND on (``*`` does)."""
    for reader in readers:
        if not any(isinstance(e, exp.Star) or e.is_star for e in reader.expressions):
            for name in (SEQ, SUB, ROW_KIND):
                reader.append("expressions", exp.column(name, quoted=True))


def _prune(aggregation: exp.Select, reader: exp.Select) -> None:
    """Drop the aggregation's aggregate columns that its reader does not name, as Flink's
    planner prunes them (a GROUP BY whose aggregates are all unused emits ``+I`` per new key
    only). Nothing when the reader reads ``*``."""
    if any(isinstance(e, exp.Star) or e.is_star for e in reader.expressions):
        return
    used = {c.name.lower() for c in reader.find_all(exp.Column)
            if c.find_ancestor(exp.Select) is reader}
    kept = [e for i, e in enumerate(aggregation.expressions)
            if output_name(e, i).lower() in used
            or not any(a.find_ancestor(exp.Select) is aggregation for a in e.find_all(exp.AggFunc))]
    if kept and len(kept) < len(aggregation.expressions):
        aggregation.set("expressions", kept)


def _distinct_as_group(select: exp.Select) -> bool:
    """Turn ``SELECT DISTINCT a, b`` into ``SELECT a, b ... GROUP BY a, b`` (Flink plans it as
    that group aggregation without aggregate functions); False for a DISTINCT it cannot."""
    distinct = select.args.get("distinct")
    if distinct is None:
        return True
    if distinct.args.get("on") is not None or select.args.get("group") is not None \
            or any(a.find_ancestor(exp.Select) is select
                   for e in select.expressions for a in e.find_all(exp.AggFunc)) \
            or any(isinstance(e, exp.Star) or e.is_star for e in select.expressions):
        return False
    select.set("distinct", None)
    select.set("group", exp.Group(expressions=[e.unalias().copy() for e in select.expressions]))
    return True


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


def is_table_function_join(join: exp.Join) -> bool:
    """A join of each row with the rows of a table function (``, LATERAL TABLE(f(x))`` or a
    ``CROSS JOIN`` of one, or ``JOIN .. ON TRUE``, which the planner makes that): its rows
    come in the order of the rows they are made of, each one's in the order the function gives
    them (Flink's ``PythonCorrelate``; Spark runs the Python UDTF in the partition of its
    input, unshuffled). Not a ``LEFT JOIN``: Spark plans it as a join of the table function's
    rows, out of that order."""
    lateral = join.this
    if is_lateral_on_true(join):
        return not join.side
    return isinstance(lateral, exp.Lateral) and isinstance(lateral.this, exp.Anonymous) \
        and lateral.this.name.upper() == "TABLE" and not join.side \
        and join.kind in ("", "CROSS") and not join.args.get("on") \
        and not join.args.get("using")


def _records(aggregation: exp.Select, over_changes: bool, columns: Columns | None,
             scalars: frozenset[str] = frozenset()) -> exp.Select | None:
    """The select that replaces ``aggregation``: its changelog records, with :data:`SEQ`,
    :data:`SUB` and :data:`~.tableaggregate.ROW_KIND`; None when it cannot. ``over_changes``:
    its input is itself a changelog (records with those three columns)."""
    group = aggregation.args.get("group")
    from_ = aggregation.args.get("from_")
    if from_ is None or group is not None \
            and any(v for k, v in group.args.items() if k != "expressions"):
        return None
    names = [output_name(e, i) for i, e in enumerate(aggregation.expressions)]
    keys = list(group.expressions) if group is not None else []
    expanded = None
    if any(isinstance(k, (exp.Rollup, exp.Cube, exp.GroupingSets)) for k in keys):
        expanded = _expand(aggregation, columns)
        if expanded is None:
            return None
        keys = expanded[0]
    having = aggregation.args.get("having")
    parts = [*aggregation.expressions, *([having.this] if having is not None else [])]
    own = [n for p in parts for n in p.find_all(exp.AggFunc, exp.Anonymous)
           if n.find_ancestor(exp.Select) is aggregation
           and not (isinstance(n, exp.Anonymous) and n.name.lower() in scalars)]
    if not all(_runs(n, over_changes) for n in own):
        return None  # a Python aggregate function (Anonymous), or one Spark cannot run so
    values: dict[str, exp.Expr] = {}
    for call in own:
        values.setdefault(call.sql(dialect=Flink), _running(call, keys, over_changes))
    for call in own:
        call.replace(values[call.sql(dialect=Flink)].copy())

    source = from_.this
    alias = source.alias_or_name if isinstance(source, exp.Table) else source.alias or _SOURCE
    numbered = exp.select(exp.Star(), *_position_and_sign(over_changes)).from_(source.copy())
    if aggregation.args.get("joins"):  # table functions' (numbered after them)
        numbered.set("joins", [j.copy() for j in aggregation.args["joins"]])
    items = [exp.alias_(e.unalias().copy(), n, quoted=True)
             for e, n in zip(aggregation.expressions, names)]
    items += [exp.alias_(k.copy(), f"__cl_k{i}", quoted=True) for i, k in enumerate(keys)]
    items += [exp.alias_(v, f"__cl_a{i}", quoted=True) for i, v in enumerate(values.values())]
    passes = having.this.copy() if having is not None else exp.true()
    count = _window(keys, frame=True)
    count.set("this", exp.Sum(this=exp.column(_SIGN, quoted=True)))
    position: exp.Expr = exp.column(_POS, quoted=True)
    if expanded is not None:  # each row's records in the order of its grouping sets
        position = exp.alias_(sqlglot.parse_one(
            f"{_quoted(_POS)} * {expanded[1]} + {_GROUPING_SET}", read=Flink), _POS, quoted=True)
    items += [exp.alias_(passes, _PASS, quoted=True), exp.alias_(count, _COUNT, quoted=True),
              position]
    rows = exp.select(*items).from_(exp.Subquery(
        this=numbered, alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True))))
    if expanded is not None:
        rows = rows.join(f"(VALUES {', '.join(f'({i})' for i in range(expanded[1]))}) AS "
                         f"__cl_sets({_GROUPING_SET})", join_type="CROSS", dialect=Flink)
    where = aggregation.args.get("where")
    if where is not None:
        rows.set("where", where.copy())
    return _changes(rows, names, len(keys), len(values))


def _expand(aggregation: exp.Select, columns: Columns | None
            ) -> tuple[list[exp.Expr], int] | None:
    """Rewrite the grouping sets' aggregation for an input expanded into one row per set
    (:data:`_GROUPING_SET`: its number, in Flink's order): each key outside an aggregate
    function NULL in the sets without it, ``GROUPING(..)`` its bits. The keys to partition by
    and the number of sets; None when the keys are not plain columns of the input."""
    found = grouping_sets(aggregation.args["group"])
    source = aggregation.args["from_"].this
    known = columns(source) if columns is not None and found is not None else None
    if found is None or known is None:
        return None
    keys, sets = found
    lowered = [c.lower() for c in known]
    if not all(isinstance(k, exp.Column) and not k.table and k.name.lower() in lowered
               for k in keys):
        return None
    sets = flink_order(sets, [lowered.index(k.name.lower()) for k in keys])
    g = exp.column(_GROUPING_SET)

    def nulled(i: int) -> exp.Expr:
        with_key = [exp.Literal.number(n) for n, s in enumerate(sets) if i in s]
        return exp.Case(ifs=[exp.If(this=g.copy().isin(*with_key), true=keys[i].copy())]) \
            if with_key else exp.Null()

    def grouping(call: exp.Grouping) -> exp.Expr | None:
        positions = [next((i for i, k in enumerate(keys) if k == a), None)
                     for a in call.expressions]
        if None in positions:
            return None
        bits = [sum(1 << (len(positions) - 1 - j) for j, i in enumerate(positions)
                    if i not in s) for s in sets]
        return exp.Case(this=g.copy(), ifs=[exp.If(this=exp.Literal.number(n),
                                                   true=exp.Literal.number(b))
                                            for n, b in enumerate(bits)])

    def rewrite(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Grouping):
            return grouping(node) or node
        if isinstance(node, exp.Column) and not node.find_ancestor(exp.AggFunc):
            return next((nulled(i) for i, k in enumerate(keys) if k == node), node)
        return node

    having = aggregation.args.get("having")
    for part in [*aggregation.expressions, *([having] if having is not None else [])]:
        part.replace(part.transform(rewrite))
    if any(isinstance(n, exp.Grouping) for n in aggregation.find_all(exp.Grouping)):
        return None
    return [*(nulled(i) for i in range(len(keys))), g], len(sets)


def _runs(call: exp.Expr, over_changes: bool) -> bool:
    """Spark runs the aggregate call as a running window function with Flink's values: over
    insert-only rows :data:`_RUNNING` (``COUNT(DISTINCT x)`` and ``LISTAGG(DISTINCT x)`` too),
    over a changelog ``COUNT``, ``SUM``, ``MIN``, ``MAX`` and :data:`~.runningcalls.CALLS`
    (``COUNT(DISTINCT x)`` and ``LISTAGG(DISTINCT x)`` too)."""
    distinct = _distinct_arguments(call)
    if over_changes:
        return isinstance(call, (exp.Count, exp.Sum, exp.Min, exp.Max, *CALLS)) \
            and (distinct == 0 or (distinct == 1 and isinstance(call, (exp.Count,
                                                                       exp.GroupConcat))))
    return isinstance(call, _RUNNING) and distinct in (0, 1) \
        and (distinct == 0 or isinstance(call, (exp.Count, exp.GroupConcat)))


def input_position(over_changes: bool) -> exp.Expr:
    """An input row's position in Flink's order: its source order (a table's rows, before any
    shuffle), or, over a changelog of this module, its record's ``SEQ * 2 + SUB``."""
    if not over_changes:
        return exp.Anonymous(this="MONOTONICALLY_INCREASING_ID", expressions=[])
    return exp.column(SEQ, quoted=True) * 2 + exp.column(SUB, quoted=True)


def _position_and_sign(over_changes: bool) -> list[exp.Expr]:
    """An input row's position (:data:`_POS`, :func:`input_position`) and :data:`_SIGN` (-1
    for a ``-U``/``-D`` record, else 1)."""
    sign: exp.Expr = exp.Literal.number(1)
    if over_changes:
        sign = sqlglot.parse_one(f"CASE WHEN {_quoted(ROW_KIND)} IN ('-U', '-D') THEN -1 "
                                 "ELSE 1 END", read=Flink)
    return [exp.alias_(input_position(over_changes), _POS, quoted=True),
            exp.alias_(sign, _SIGN, quoted=True)]


def _distinct_arguments(call: exp.Expr) -> int:
    """How many arguments a ``DISTINCT`` call has (0 for a call without DISTINCT)."""
    return len(call.this.expressions) if isinstance(call.this, exp.Distinct) else 0


def _window(keys: list[exp.Expr], frame: bool) -> exp.Window:
    return exp.Window(
        partition_by=[k.copy() for k in keys], over="OVER",
        order=exp.Order(expressions=[exp.Ordered(this=exp.column(_POS, quoted=True))]),
        spec=exp.WindowSpec(kind="ROWS", start="UNBOUNDED", start_side="PRECEDING",
                            end="CURRENT ROW") if frame else None)


def _running(call: exp.Expr, keys: list[exp.Expr],
             over_changes: bool) -> exp.Expr:
    """The aggregate call over its key's rows up to the current one (``COUNT(DISTINCT x)``: the
    size of the set of the ``x`` so far; over a changelog, each record counted with its
    :data:`_SIGN`, and a ``SUM`` of no values NULL)."""
    window = _window(keys, frame=True)
    if over_changes:
        sign, over = _quoted(_SIGN), window.sql(dialect=Flink)
        argument = call.this
        if isinstance(call, exp.Count) and (argument is None or isinstance(argument, exp.Star)):
            return sqlglot.parse_one(f"SUM({sign}) {over}", read=Flink)
        distinct = isinstance(argument, exp.Distinct)
        x = (argument.expressions[0] if distinct else argument).sql(dialect=Flink)
        if isinstance(call, (exp.Min, exp.Max)):
            return min_max_with_retraction(call, x, sign, over)
        if isinstance(call, CALLS):
            return retracting_call(call, x, sign, over)
        if distinct:
            return count_distinct_with_retraction(x, sign, over)
        counted = f"SUM(CASE WHEN ({x}) IS NOT NULL THEN {sign} ELSE 0 END) {over}"
        if isinstance(call, exp.Count):
            return sqlglot.parse_one(counted, read=Flink)
        return sqlglot.parse_one(f"CASE WHEN {counted} = 0 THEN NULL ELSE SUM(CASE WHEN "
                                 f"{sign} > 0 THEN ({x}) ELSE -({x}) END) {over} END", read=Flink)
    if isinstance(call, CALLS):
        return running_call(call, window)
    if isinstance(call.this, exp.Distinct):
        window.set("this", exp.Anonymous(this="COLLECT_SET",
                                         expressions=[call.this.expressions[0].copy()]))
        size = exp.Anonymous(this="SIZE", expressions=[window])
        return exp.Cast(this=size, to=exp.DataType.build("BIGINT"))
    window.set("this", call.copy())
    return window


def _changes(rows: exp.Select, names: list[str], keys: int, values: int) -> exp.Select:
    """The records of ``rows`` (one per input row: the result after it, its key columns
    ``__cl_k<i>``, aggregate values ``__cl_a<i>``, HAVING ``__cl_pass``, the key's count of
    rows :data:`_COUNT` and position :data:`_POS`): ``+I`` when the key's count becomes
    non-zero, ``-D`` (the values before) when it becomes zero, else ``-U`` (the values before)
    and ``+U`` for a row that changes the aggregate values, each kept when its HAVING holds."""
    q = _quoted
    window = _window([exp.column(f"__cl_k{i}", quoted=True) for i in range(keys)], frame=False)
    earlier = [*names, *[f"__cl_a{i}" for i in range(values)], _PASS, _COUNT]
    lags = [f"LAG({q(n)}) {window.sql(dialect=Flink)} AS {q(f'__cl_p{i}')}"
            for i, n in enumerate(earlier)]
    was, now = f"COALESCE({q(f'__cl_p{len(earlier) - 1}')}, 0)", q(_COUNT)
    first, gone = f"({was} = 0 AND {now} > 0)", f"({was} > 0 AND {now} = 0)"
    before = f"(__cl_s = 0 AND NOT {first})"
    items = [f"CASE WHEN {before} THEN {q(f'__cl_p{i}')} ELSE {q(n)} END AS {q(n)}"
             for i, n in enumerate(names)]
    items += [f"CASE WHEN {first} THEN '+I' WHEN {gone} THEN '-D' WHEN __cl_s = 0 THEN '-U' "
              f"ELSE '+U' END AS {q(ROW_KIND)}", f"{q(_POS)} AS {q(SEQ)}", f"__cl_s AS {q(SUB)}"]
    same = " AND ".join(f"{q(f'__cl_a{i}')} IS NOT DISTINCT FROM "
                        f"{q(f'__cl_p{len(names) + i}')}" for i in range(values)) or "TRUE"
    passes = f"CASE WHEN {before} THEN {q(f'__cl_p{len(earlier) - 2}')} ELSE {q(_PASS)} END"
    text = (f"SELECT {', '.join(items)} FROM (SELECT *, {', '.join(lags)} FROM {_ROWS}) AS "
            f"{q('__cl_changes')} CROSS JOIN (VALUES (0), (1)) AS __cl_sub(__cl_s) "
            f"WHERE CASE WHEN {first} OR {gone} THEN __cl_s = 0 WHEN {was} > 0 AND {now} > 0 "
            f"THEN NOT ({same}) ELSE FALSE END AND COALESCE({passes}, FALSE)")
    changes = sqlglot.parse_one(text, read=Flink)
    assert isinstance(changes, exp.Select)
    placeholder = next(t for t in changes.find_all(exp.Table) if t.name == _ROWS)
    placeholder.replace(exp.Subquery(this=rows, alias=exp.TableAlias(
        this=exp.to_identifier(_ROWS, quoted=True))))
    return changes


def _quoted(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect=Flink)
