"""What Flink's planner calls an updating query, and a query that reads one, in STREAMING.

An updating query (a non-windowed ``GROUP BY``, ``DISTINCT``) emits a changelog: ``+I`` for a new
key, ``-U`` then ``+U`` per update. Spark gives such an aggregation's new rows in ``update``
mode, and :func:`changelog` makes Flink's changes of them against the rows emitted before.

Flink retracts those changes from the state of a stateful operation that reads them (an
aggregation of an aggregation's result, ``SELECT n, COUNT(*) FROM (SELECT word, COUNT(*) AS n
FROM words GROUP BY word) GROUP BY n``, runs ``COUNT_RETRACT``). Structured Streaming runs no
stateful operator after an aggregation in ``update`` mode. So when that operation is an
aggregation that reads nothing else (:func:`split_over_updating`), the inner query is the
streaming query, its current result kept per key as for any updating query, and the outer query
is a batch query of Spark over that result after each micro-batch (:class:`OuterQuery`): its
changes against the result before are the changelog, ``-D`` for a group that is gone. After
each micro-batch the result is Flink's; Flink emits every change on the way, this one per key
and micro-batch (as every updating query here). A join of an updating query with a stream
runs on keyed state (:mod:`.updatingjoin`). Other stateful operations over an updating query
are refused by name (:func:`over_updating_refusal`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any, Callable

from sqlglot import exp

from ...api.table.udf import TableAggregateFunction
from .dialect import plan_text
from .functions import FunctionCatalog
from .tableaggregate import table_aggregation
from .updatingsession import SessionWindow, session_frame

_WINDOW_FUNCTIONS = {"TUMBLE", "HOP", "SESSION"}


def is_window_aggregation(select: exp.Select) -> bool:
    """A window aggregation: grouped by ``TUMBLE(...)``/``HOP``/``SESSION`` or by a window
    TVF's ``window_start`` and ``window_end``."""
    group = select.args.get("group")
    if group is None:
        return False
    for key in group.expressions:
        if isinstance(key, exp.Anonymous) and key.name.upper() in _WINDOW_FUNCTIONS:
            return True
    keys = {c.name.lower() for g in group.expressions for c in g.find_all(exp.Column)}
    return {"window_start", "window_end"} <= keys


def is_aggregation(select: exp.Select) -> bool:
    """The select aggregates: ``GROUP BY``, ``DISTINCT`` or an aggregate function of its own."""
    if select.args.get("group") is not None or select.args.get("distinct") is not None:
        return True
    return any(agg.find_ancestor(exp.Select) is select and not agg.find_ancestor(exp.Window)
               for e in select.expressions for agg in e.find_all(exp.AggFunc))


def updating_node(query: Any) -> str | None:
    """Flink's name of the node that makes the query updating (``GroupAggregate(groupBy=[k],
    select=[k, COUNT(*) AS cnt])``), or None for an append-only query (projections, filters,
    window aggregations)."""
    for select in query.find_all(exp.Select):
        if not is_aggregation(select) or is_window_aggregation(select):
            continue
        group = select.args.get("group")
        keys = [plan_text(g) for g in group.expressions] if group is not None else []
        if not keys and select.args.get("distinct") is not None:
            keys = [e.alias_or_name for e in select.expressions]
        items = [plan_text(e) for e in select.expressions]
        by = f"groupBy=[{', '.join(keys)}], " if keys else ""
        return f"GroupAggregate({by}select=[{', '.join(items)}])"
    return None


def key_positions(query: Any) -> list[int]:
    """The positions of an updating query's output columns that are its keys (no aggregate
    function in them): its changelog's rows are matched by them."""
    top = query if isinstance(query, exp.Select) else next(query.find_all(exp.Select))
    grouping = next((s for s in query.find_all(exp.Select)
                     if is_aggregation(s) and not is_window_aggregation(s)), None)
    if grouping is None or grouping is top or is_aggregation(top):
        return plain_positions(top)
    # a projection of an updating view or subquery: its keys are the grouping's, by name
    names = {grouping.expressions[i].alias_or_name.lower() for i in plain_positions(grouping)}
    if any(isinstance(e, exp.Star) for e in top.expressions):
        return plain_positions(grouping)
    return [i for i, e in enumerate(top.expressions) if e.alias_or_name.lower() in names]


def plain_positions(select: exp.Select) -> list[int]:
    """The positions of the select's expressions with no aggregate function in them."""
    return [i for i, e in enumerate(select.expressions)
            if not any(True for _ in e.find_all(exp.AggFunc))]


# -- the changelog of an updating query ------------------------------------------------------------
def changelog(previous: dict[tuple[Any, ...], tuple[Any, ...]], rows: list[tuple[Any, ...]],
              keys: list[int], trim: int = 0) -> list[tuple[str, tuple[Any, ...]]]:
    """Flink's changelog of a micro-batch's updated rows: ``+I`` for a new key, ``-U`` (the
    row emitted before) and ``+U`` for an updated one, nothing for an unchanged one.
    ``previous`` (key -> last emitted row) is brought up to date. ``trim``: the rows' last
    columns that are part of the key only."""
    out: list[tuple[str, tuple[Any, ...]]] = []
    for row in rows:
        key = tuple(row[i] for i in keys)
        row = row[: len(row) - trim]
        before = previous.get(key)
        if before is None:
            out.append(("+I", row))
        elif before != row:
            out += [("-U", before), ("+U", row)]
        else:
            continue
        previous[key] = row
    return out


# -- a stateful operation over an updating query ------------------------------------------------
@dataclass(frozen=True, slots=True)
class OverUpdating:
    """An updating select and the stateful select that reads its rows."""

    inner: exp.Select
    reader: exp.Select
    #: Flink's name of what ``reader`` does ("An aggregation (GROUP BY, DISTINCT)", ...)
    operation: str


AGGREGATION = "An aggregation (GROUP BY, DISTINCT)"
JOIN = "A join"
WINDOW_AGGREGATION = "A window aggregation"
TABLE_AGGREGATION = "A table aggregation (flat_aggregate)"


def over_updating(query: Any, functions: FunctionCatalog | None = None) -> OverUpdating | None:
    """The first stateful operation (an aggregation, a ``flat_aggregate``, a join, an OVER
    aggregation) that reads an updating query, directly or through projections, subqueries
    and common table expressions (views); None when there is none."""
    aggregation = table_aggregation(query, functions) if functions is not None else None
    for inner in query.find_all(exp.Select):
        if not is_aggregation(inner) or is_window_aggregation(inner) \
                or (aggregation is not None and aggregation[0] is inner):
            continue  # (a table aggregation runs on keyed state, its rows unnested by a join)
        found = stateful_reader(inner, aggregation)
        if found is not None:
            return found
    return None


def stateful_reader(inner: exp.Select, aggregation: Any = None) -> OverUpdating | None:
    """The first stateful operation that reads ``inner``'s rows, directly or through
    projections, subqueries and common table expressions; None when there is none.
    ``aggregation``: the query's table aggregation, if any (:func:`table_aggregation`)."""
    pending, seen = _readers(inner), set()
    while pending:
        reader = pending.pop()
        if id(reader) in seen:
            continue
        seen.add(id(reader))
        operation = _stateful_operation(reader, aggregation)
        if operation is not None:
            return OverUpdating(inner, reader, operation)
        pending += _readers(reader)
    return None


def retract_refusal(query: Any, functions: FunctionCatalog) -> str | None:
    """PyFlink's error for a table aggregate function without ``retract`` that reads an
    updating query (Flink raises it in the job, at the first retraction it gets; here when
    the query is planned); None for another query."""
    aggregation = table_aggregation(query, functions)
    if aggregation is None:
        return None
    wrapper = aggregation[2].wrapper
    if getattr(type(wrapper.function), "retract", None) is not TableAggregateFunction.retract:
        return None
    for inner in query.find_all(exp.Select):
        if inner is aggregation[0] or not is_aggregation(inner) or is_window_aggregation(inner):
            continue
        found = stateful_reader(inner, aggregation)
        if found is not None and found.reader is aggregation[0]:
            return ("Method retract is not implemented: the table aggregate function "
                    f"{wrapper.name or aggregation[2].name} reads the changes of an updating query "
                    f"({updating_node(inner)})")
    return None


#: the operations over an updating query that run over its result (:func:`split_over_updating`)
OVER_RESULT = (AGGREGATION, JOIN, "An OVER aggregation")


def over_updating_refusal(found: OverUpdating) -> str:
    """Why ``found`` cannot run here (a window or table aggregation over the updating query,
    or an aggregation or OVER aggregation that also reads a stream). A window TVF over it
    gets Flink 2.3's error: an updating query's rows have no time attribute."""
    if found.operation == WINDOW_AGGREGATION and any(
            isinstance(t.this, exp.Anonymous) and t.this.name.upper() == "TABLE"
            for t in found.reader.find_all(exp.Table)):
        return (f"{NO_TIME_ATTRIBUTE}: the rows of an updating query "
                f"({updating_node(found.inner)}) have no time attribute")
    return (f"{found.operation} over the changes of an updating query "
            f"({updating_node(found.inner)}) is not supported by sessioncluster in STREAMING "
            "mode over an unbounded source: Flink retracts each change (-U/-D) from the "
            "operation's state, and Spark's Structured Streaming runs no stateful operation "
            "after an aggregation that updates its rows (sessioncluster runs an aggregation "
            "or an OVER aggregation over the updating query's result and bounded tables, and "
            "an equi-join of it with bounded tables or streams). Run it in BATCH mode or over "
            "bounded sources, or aggregate once")


#: Flink 2.3's error for a window TVF over rows without a time attribute
NO_TIME_ATTRIBUTE = ("The window function requires the timecol is a time attribute type, but "
                     "is TIMESTAMP(3)")


def _readers(select: exp.Select) -> list[exp.Select]:
    """The selects that read ``select``'s rows: the one around it, or each one that names it
    when it is a common table expression."""
    if isinstance(select.parent, exp.CTE):
        name = select.parent.alias_or_name.lower()
        return [t.parent_select for t in select.root().find_all(exp.Table)
                if isinstance(t.this, exp.Identifier) and t.name.lower() == name
                and t.parent_select is not None]
    return [select.parent_select] if select.parent_select is not None else []


def _stateful_operation(select: exp.Select, aggregation: Any) -> str | None:
    """Flink's name for the stateful operation ``select`` runs, if any."""
    if aggregation is not None and aggregation[0] is select:
        return TABLE_AGGREGATION
    if is_window_aggregation(select):
        return WINDOW_AGGREGATION
    if is_aggregation(select):
        return AGGREGATION
    if select.args.get("joins"):
        return JOIN
    if any(w.find_ancestor(exp.Select) is select for w in select.find_all(exp.Window)):
        return "An OVER aggregation"
    return None


def split_over_updating(query: Any, found: OverUpdating,
                        static: Callable[[str], bool] = lambda name: False
                        ) -> tuple[Any, Any, str] | None:
    """``query`` cut below the updating query of ``found``: (the updating query as a query of
    its own, the rest reading its rows as the table ``name``, ``name``); None when the rest
    reads a table that is not ``static`` (a join of the updating query with a stream)."""
    position = next(i for i, s in enumerate(query.find_all(exp.Select)) if s is found.inner)
    tree = query.copy()
    inner = list(tree.find_all(exp.Select))[position]
    if isinstance(inner.parent, exp.CTE):
        name = inner.parent.alias_or_name
    else:  # a subquery: made a common table expression of a fresh name
        name = f"__updating_{secrets.token_hex(4)}"
        subquery = inner.parent
        alias = subquery.args.get("alias") or exp.TableAlias(this=exp.to_identifier(name))
        subquery.replace(exp.Table(this=exp.to_identifier(name), alias=alias))
        with_ = tree.args.get("with_")
        ctes = list(with_.expressions) if with_ is not None else []
        tree.set("with_", exp.With(expressions=[*ctes, exp.CTE(
            this=inner, alias=exp.TableAlias(this=exp.to_identifier(name)))]))
    ctes = list(tree.args["with_"].expressions)
    at = next(i for i, c in enumerate(ctes) if c.alias_or_name == name)
    updating = exp.select("*").from_(exp.to_table(name))
    updating.set("with_", exp.With(expressions=[c.copy() for c in ctes[: at + 1]]))
    rest = tree.copy()
    rest.set("with_", None)
    kept = needed_ctes(rest, [c for c in ctes if c.alias_or_name != name])
    if kept:
        rest.set("with_", exp.With(expressions=[c.copy() for c in kept]))
    own = {c.alias_or_name.lower() for c in kept}
    read = _table_names(rest).union(*(_table_names(c.this) for c in kept))
    if not all(static(t) for t in read - own - {name.lower()}):
        return None
    return updating, rest, name


def outer_key_positions(rest: Any, found: OverUpdating, columns: list[str]) -> list[int]:
    """The key columns (by position in ``columns``, the outer query's) of the changelog of a
    query over an updating one: an aggregation's group keys; else the columns named as the
    updating query's keys (a join's or an OVER aggregation's rows follow its keys' changes),
    or every column when none is."""
    if is_aggregation(rest if isinstance(rest, exp.Select)
                      else next(rest.find_all(exp.Select))):
        return key_positions(rest)
    names = {found.inner.expressions[i].alias_or_name.lower()
             for i in plain_positions(found.inner)}
    keys = [i for i, c in enumerate(columns) if c.lower() in names]
    return keys or list(range(len(columns)))


def needed_ctes(body: Any, ctes: list[exp.CTE]) -> list[exp.CTE]:
    """The common table expressions ``body`` reads, directly or through each other, in order."""
    needed: set[str] = set()
    pending = _table_names(body)
    by_name = {c.alias_or_name.lower(): c for c in ctes}
    while pending:
        name = pending.pop()
        if name in by_name and name not in needed:
            needed.add(name)
            pending |= _table_names(by_name[name].this)
    return [c for c in ctes if c.alias_or_name.lower() in needed]


def _table_names(query: Any) -> set[str]:
    return {t.name.lower() for t in query.find_all(exp.Table) if isinstance(t.this, exp.Identifier)}


@dataclass(slots=True)
class OuterQuery:
    """The query over an updating query's current result, run by Spark as a batch query after
    each micro-batch (the result's Spark view is ``view``)."""

    view: str
    #: Spark SQL of the outer query
    sql: str
    #: the updating query's rows' Spark schema, and the outer query's
    inner_schema: Any
    schema: Any
    #: the outer query's key columns (by position): its changelog's keys
    key_positions: list[int]
    #: casts the outer query's rows to its sink's columns (an INSERT's)
    conform: Callable[[Any], Any] | None = None
    #: a legacy ``GROUP BY TUMBLE``/``HOP`` over the updating query's changes: the delay (ms) of the
    #: source's watermark; the outer query runs over the rows of the windows that fire, its
    #: rows ``+I`` (:mod:`.updatingwindow`). None: it runs over the whole current result.
    window_delay_ms: int | None = None
    #: the Spark SQL's last column (not in ``schema``) is the start of the row's window
    #: (``HOP_START``): a HOP's row is in several windows, each fired window's result is the
    #: rows of that window (:meth:`rows`' ``window_start_ms``)
    window_column: str | None = None
    #: a legacy ``GROUP BY SESSION`` over the updating query's changes: its session window;
    #: the outer query runs over the fired sessions' signed rows (:mod:`.updatingsession`)
    session: SessionWindow | None = None

    def rows(self, session: Any, inner_rows: list[tuple[Any, ...]],
             window_start_ms: int | None = None) -> list[tuple[Any, ...]]:
        """The outer query's result over the updating query's current rows (of the window
        starting at ``window_start_ms``, with :attr:`window_column`: its rows only)."""
        rows = (session.createDataFrame(inner_rows, self.inner_schema) if self.session is None
                else session_frame(session, inner_rows, self.inner_schema))
        rows.createOrReplaceTempView(self.view)
        frame = session.sql(self.sql)
        if self.window_column is not None:
            from pyspark.sql import functions as F

            start = F.expr(f"unix_millis(CAST(`{self.window_column}` AS TIMESTAMP))")
            frame = frame.where(start == F.lit(window_start_ms)).drop(self.window_column)
        return [tuple(r) for r in self._conformed(frame).collect()]

    def frame(self, session: Any, rows: list[tuple[Any, ...]]) -> Any:
        """A DataFrame of rows of :meth:`rows` (its sink's columns), to write into its sink."""
        return session.createDataFrame(
            rows, self._conformed(session.createDataFrame([], self.schema)).schema)

    def _conformed(self, frame: Any) -> Any:
        return frame if self.conform is None else self.conform(frame)


def result_changes(previous: dict[tuple[Any, ...], tuple[Any, ...]], rows: list[tuple[Any, ...]],
                   keys: list[int]) -> list[tuple[str, tuple[Any, ...]]]:
    """Flink's changelog from one whole result of a query (``previous``, key -> row, brought up
    to date) to the next (``rows``): ``-D`` for each key gone, then ``+I`` for a new key and
    ``-U``/``+U`` for a changed row. A key's rows (a join's matches) are told apart by their
    order (its last element), so a row whose other columns stay pairs with its update."""
    seen: dict[tuple[Any, ...], int] = {}
    indexed: list[tuple[Any, ...]] = []
    ordered = sorted(rows, key=lambda r: tuple(map(repr, r)))
    for row in ordered:
        key = tuple(row[i] for i in keys)
        seen[key] = seen.get(key, -1) + 1
        indexed.append((*key, seen[key]))
    current = set(indexed)
    gone = [("-D", previous.pop(k)) for k in list(previous) if k not in current]
    return gone + changelog(previous, [(*r, k[-1]) for r, k in zip(ordered, indexed)],
                            [*keys, -1], trim=1)
