"""``UNION ALL`` of an updating query with streams or other updating queries in STREAMING over
unbounded sources, as Flink 2.3 runs it: its ``Union`` forwards each input's records as they
come, the updating inputs' ``+I``/``-U``/``+U``/``-D`` and the others' ``+I``
(/work/briefs/data/setops/probe1.out, U1-U3).

Structured Streaming runs no operator after an aggregation in ``update`` mode that would keep
its RowKind, so each updating input is a query of its own (a :class:`.ChangelogFeed`, as an
updating side of a join is, :mod:`.updatingjoin`) whose changelog the union reads as a file
stream; an append-only input is read as it is, each row ``+I``. A bounded input (a table that
Flink reads once, first) is refused by name: Spark unions no static table with a stream.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from sqlglot import exp

from .changelogjoin import KIND, SEQUENCE
from .model import FlinkSqlError
from .tableaggregate import ROW_KIND
from .topn import without_ctes
from .updating import plain_positions, updating_node
from .updatingjoin import ChangelogFeed, PlanSide

#: why a union's input that runs over an updating query's result or on keyed state is refused
INPUT_REFUSAL = ("A UNION ALL of an updating query over the result of another or on keyed "
                 "state is not supported by sessioncluster in STREAMING mode")


def updating_union_inputs(query: Any) -> list[exp.Expr] | None:
    """The inputs, left to right, of a top-level ``UNION ALL`` (a union of unions of ALL
    merged, as Calcite merges them) of which one at least is an updating query; None for
    another query."""
    if query.args.get("with_") is not None:
        return None
    inputs = _union_all_inputs(query)
    return inputs if inputs is not None \
        and any(updating_node(i) is not None for i in inputs) else None


def _union_all_inputs(query: Any) -> list[exp.Expr] | None:
    if not isinstance(query, exp.Union) or query.args.get("distinct") is not False \
            or any(query.args.get(a) for a in ("order", "limit", "offset")):
        return None
    inputs: list[exp.Expr] = []
    for side in (query.this, query.expression):
        side = side.unnest() if isinstance(side, exp.Subquery) and not side.alias else side
        nested = _union_all_inputs(side)
        inputs += nested if nested is not None else [side]
    return inputs


def plan_updating_union(session: Any, inputs: list[exp.Expr], plan_side: PlanSide,
                        feed_root: Path, feed_prefix: str = "") -> tuple[Any, list[ChangelogFeed]]:
    """The union of ``inputs``' records as one append-only streaming DataFrame, the first
    input's column names and :data:`ROW_KIND` last; the feeds of its updating inputs under
    ``feed_root``, their keys starting with ``feed_prefix``. A bounded table an input reads is
    a file stream by now (:func:`.distinctsetops.streamed_bounded`)."""
    frames, feeds = input_records(session, inputs, plan_side, feed_root, feed_prefix)
    union = frames[0].drop(SEQUENCE).withColumnRenamed(KIND, ROW_KIND)
    for frame in frames[1:]:
        union = union.union(frame.drop(SEQUENCE).withColumnRenamed(KIND, ROW_KIND))
    return union, feeds


def input_records(session: Any, inputs: list[exp.Expr], plan_side: PlanSide, feed_root: Path,
                  feed_prefix: str = "") -> tuple[list[Any], list[ChangelogFeed]]:
    """Each input's records as a streaming DataFrame: the first input's column names,
    :data:`KIND` (``+I`` for an append-only input) and :data:`SEQUENCE` (an updating input's
    records in order; 0 for another's); the feeds of the updating inputs."""
    from pyspark.sql import functions as F

    frames, feeds, names = [], [], None
    for n, side in enumerate(inputs):
        key = f"{feed_prefix}union-feed-{n}"
        frame, changes, own = plan_side(side, feed_root, f"{key}-")
        feeds += own  # the feeds the input reads, before its own
        if changes is not None:
            feed = ChangelogFeed(key, frame, changes, feed_root / key)
            feeds.append(feed)
            frame = feed.reader(session, feed.schema)
            kind, sequence = F.col(KIND), F.col(SEQUENCE)
        else:
            kind, sequence = F.lit("+I"), F.lit(0).cast("long")
        columns = [c for c in frame.columns if c not in (KIND, SEQUENCE)]
        names = names or columns
        if len(columns) != len(names):
            raise FlinkSqlError("Column count mismatch in UNION ALL: each input of a set "
                                "operation has the same number of columns")
        frames.append(frame.select(*[F.col(f"`{c}`").alias(name)
                                     for c, name in zip(columns, names)],
                                   kind.alias(KIND), sequence.alias(SEQUENCE)))
    return frames, feeds


def set_operation_refusal(query: Any, static: Callable[[str], bool]) -> str | None:
    """Why a ``UNION``, ``INTERSECT`` or ``EXCEPT`` (``ALL`` too, not ``UNION ALL``) over an
    unbounded table cannot run here in STREAMING mode (Flink 2.3 runs it: a GroupAggregate or
    a semi/anti join of counts per row, probe1.out U4-U11); None for another query or one whose
    tables are all ``static``."""
    top = without_ctes(query)
    if not isinstance(top, (exp.Union, exp.Intersect, exp.Except)) \
            or (isinstance(top, exp.Union) and top.args.get("distinct") is False):
        return None
    read = sorted({t.name for t in top.find_all(exp.Table)
                   if isinstance(t.this, exp.Identifier) and not static(t.name)})
    if not read:
        return None
    name = {exp.Union: "UNION", exp.Intersect: "INTERSECT", exp.Except: "EXCEPT"}[type(top)]
    name += " ALL" if top.args.get("distinct") is False else ""
    return (f"{name} over the unbounded table '{read[0]}' is not supported by sessioncluster in "
            f"STREAMING mode in this form: Spark's Structured Streaming runs no {name} of a "
            "stream. sessioncluster runs UNION, INTERSECT and EXCEPT (ALL too) over unbounded "
            "tables on a count per row in state as Flink does, but not with ORDER BY, LIMIT, "
            "OFFSET or WITH, nor with an INTERSECT, EXCEPT or UNION as an input of INTERSECT or "
            "EXCEPT; every set operation runs in BATCH mode and over bounded sources")


def _wrapped_union(query: Any) -> tuple[exp.Select, exp.Subquery] | None:
    """The select (no GROUP BY) over a UNION ALL of an updating query, and the union's
    subquery; None for another query."""
    top = without_ctes(query)
    if not isinstance(top, exp.Select) or top.args.get("group"):
        return None
    source = top.args.get("from_")
    inner = source.this if source is not None else None
    if not isinstance(inner, exp.Subquery) or (updating_union_inputs(inner.this) is None
                                               and not _filtered_aggregation(top, inner.this)):
        return None
    return top, inner


def _filtered_aggregation(top: exp.Select, inner: Any) -> bool:
    """True when ``top`` filters the rows of ``inner``, a group aggregation of a table (Flink's
    Calc over its changelog, record by record: probe2.out S1, S3)."""
    return top.args.get("where") is not None and _table_aggregation(inner)


def projected_aggregation(query: Any) -> tuple[exp.Select, exp.Subquery] | None:
    """A projection and/or filter (no GROUP BY, nothing stateful) of a group aggregation of a
    table, which Flink runs as a Calc over the aggregation's changelog, each record's RowKind
    kept (setops3/probe3.out E4: ``Calc(select=[n])`` over ``GroupAggregate(groupBy=[w])``):
    the select and the subquery it reads; None for another query."""
    if not isinstance(query, exp.Select) or query.args.get("group"):
        return None
    source = query.args.get("from_")
    inner = source.this if source is not None else None
    if not isinstance(inner, exp.Subquery) or not _table_aggregation(inner.this) \
            or _calc_refusal(query, query) is not None:
        return None
    return query, inner


def _table_aggregation(inner: Any) -> bool:
    """True for a group aggregation (GROUP BY) of a table, no join, window or subquery."""
    source = inner.args.get("from_") if isinstance(inner, exp.Select) else None
    return updating_node(inner) is not None \
        and inner.args.get("group") is not None and not inner.args.get("joins") \
        and source is not None and isinstance(source.this, exp.Table) \
        and inner.find(exp.Window, exp.Subquery) is None


def _calc_refusal(query: Any, top: exp.Select) -> str | None:
    """Why the select ``top`` over a UNION ALL of an updating query is no filter and/or
    projection of each of its records that runs here; None for one."""
    stateful = query.args.get("with_") is not None or top.args.get("joins") \
        or any(top.args.get(a) for a in ("order", "limit", "offset", "distinct", "having",
                                           "qualify")) \
        or any(e.find(exp.AggFunc, exp.Window, exp.Subquery, exp.Select) is not None
               for e in [*top.expressions, top.args.get("where") or exp.null()])
    if not stateful:
        return None
    return ("An aggregation, join, sort or subquery over a UNION ALL of an updating query is "
            "not supported by sessioncluster in STREAMING mode without GROUP BY: sessioncluster "
            "runs a filter and/or projection of the union's records (Flink's Calc, each "
            "record's RowKind kept) and a GROUP BY over it")


#: the column of a HAVING's condition over a group aggregation made a filter over its rows
HAVING = "__flink_having"


def having_as_filter(query: Any) -> exp.Select | None:
    """A group aggregation of a table with a ``HAVING`` (each of its columns named) as a filter
    over the aggregation's rows, the condition a column of its own (Flink's Calc over the
    GroupAggregate's changelog: probe2.out S2 = S1); None for another query."""
    if not isinstance(query, exp.Select) or query.args.get("having") is None \
            or query.args.get("with_") is not None \
            or any(not isinstance(e, (exp.Alias, exp.Column)) or e.is_star
                   for e in query.expressions):
        return None
    inner = query.copy()
    condition = inner.args["having"].this
    inner.set("having", None)
    inner.append("expressions", exp.alias_(condition, HAVING))
    top = exp.select(*[exp.column(e.alias_or_name) for e in query.expressions]).from_(
        exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(f"{HAVING}_t")))
    ).where(exp.column(HAVING))
    return top if _filtered_aggregation(top, inner) else None


def union_calc(query: Any, on_spark: Callable[[Any], bool]
               ) -> tuple[exp.Select, exp.Subquery] | None:
    """A filter and/or projection of each record of a UNION ALL of an updating query, or a
    filter over a group aggregation that runs ``on_spark`` (no Python aggregate function; a
    HAVING made a filter, :func:`having_as_filter`): the select and the subquery it reads;
    None for another query or one refused (:func:`wrapped_union_refusal`)."""
    query = having_as_filter(query) or query
    found = _wrapped_union(query)
    if found is None or _calc_refusal(query, found[0]) is not None:
        return None
    union = updating_union_inputs(found[1].this) is not None
    return found if union or on_spark(found[1].this) else None


def wrapped_union_refusal(query: Any) -> str | None:
    """Why a select without GROUP BY over a ``UNION ALL`` of an updating query cannot run
    here in STREAMING mode (an aggregation, a join, a sort, a subquery, a WITH); None for
    another query and a filter and/or projection (:func:`union_calc`)."""
    found = _wrapped_union(query)
    return _calc_refusal(query, found[0]) if found is not None else None


def pruned_inputs(query: exp.Select, read: exp.Subquery) -> exp.Subquery:
    """``read`` (a UNION ALL of an updating query, or one group aggregation, that ``query``
    filters and/or projects) with the aggregates ``query`` does not read pruned from its
    inputs, as Flink's planner prunes them: an aggregation whose aggregate is gone emits no
    update for it (setops2/probe2.out U13d: ``+I`` per new key only); ``read`` when nothing
    is pruned."""
    inputs = _named_selects(read)
    unread = _unread_positions(query, inputs)
    drop = {i for i in unread
            if any(_aggregates_at(s, i) for s in inputs)
            and all(_aggregates_at(s, i) or updating_node(s) is None for s in inputs)}
    if not drop or len(drop) == len(inputs[0].expressions):
        return read
    pruned = read.copy()
    for select in _named_selects(pruned):
        select.set("expressions", [e for i, e in enumerate(select.expressions) if i not in drop])
    return pruned


def pruned_refusal(query: exp.Select, read: exp.Subquery) -> str | None:
    """Why a filter and/or projection over ``read`` (:func:`pruned_inputs`'s) cannot run
    here: it reads not an aggregate that could not be pruned (a Python aggregate function, or
    a column that is an aggregate in one input and not in another), whose updates a
    projection of each record would still emit; None when it reads them all."""
    inputs = _named_selects(read)
    unread = [i for i in _unread_positions(query, inputs)
              if any(updating_node(s) is not None and i not in plain_positions(s)
                     for s in inputs)]
    if not unread:
        return None
    column = inputs[0].expressions[unread[0]].alias_or_name
    return (f"A projection over an updating query that reads not its aggregate '{column}' is "
            "not supported by sessioncluster in STREAMING mode here: Flink prunes the "
            "aggregate from the query, which changes its changelog, and sessioncluster prunes "
            "only built-in aggregate functions that are aggregates in each input. Read the "
            "column (in the filter or the projection)")


def _named_selects(read: exp.Subquery) -> list[exp.Select]:
    """The inputs of the union (or the one select) ``read``, each a select of named columns;
    none when one of them is not."""
    inputs = _union_all_inputs(read.this) or [read.this]
    selects = [s for s in inputs
               if isinstance(s, exp.Select) and not any(e.is_star for e in s.expressions)]
    return selects if len(selects) == len(inputs) else []


def _unread_positions(query: exp.Select, inputs: list[exp.Select]) -> list[int]:
    """The positions of the inputs' columns ``query`` reads not (none for a ``*``, or no
    input)."""
    if not inputs or any(isinstance(e, exp.Star) or e.is_star for e in query.expressions):
        return []
    read = {c.name.lower() for e in [*query.expressions, query.args.get("where") or exp.null()]
            for c in e.find_all(exp.Column)}
    return [i for i, e in enumerate(inputs[0].expressions) if e.alias_or_name.lower() not in read]


def _aggregates_at(select: exp.Select, position: int) -> bool:
    """The select is an updating aggregation (no HAVING, which may read the column) whose
    column at ``position`` is a built-in aggregate function's."""
    return updating_node(select) is not None and select.args.get("having") is None \
        and select.expressions[position].find(exp.AggFunc) is not None


def calc_over(query: exp.Select, union: exp.Subquery, view: str) -> exp.Select:
    """``query`` (a filter and/or projection over the subquery ``union``) reading the view
    ``view`` of the union's records instead, and selecting :data:`ROW_KIND` too."""
    tree = query.copy()
    alias = union.args.get("alias")
    tree.args["from_"].this.replace(exp.Table(this=exp.to_identifier(view),
                                              alias=alias.copy() if alias else None))
    if not any(isinstance(e, exp.Star) or e.is_star for e in tree.expressions):
        tree.append("expressions", exp.column(ROW_KIND))
    return tree
