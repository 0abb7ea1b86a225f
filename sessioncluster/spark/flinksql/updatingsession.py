"""A legacy ``GROUP BY SESSION(ts, INTERVAL gap)`` over the changes of an updating query, in
STREAMING over unbounded sources: the sessions' state, how they merge and when they fire.

Flink 2.3 runs it (``/work/briefs/data/legacyhop/probe1.out`` S1/S2/S3,
``/work/briefs/data/legacywin/probe1.out`` S, ``/work/briefs/data/legacysession/probe1.out``)
as its table ``WindowOperator`` with a merging (session) window assigner does, per key (the
window query's other GROUP BY columns):

- each change, ``+I``/``+U`` and ``-U``/``-D`` alike, gets the window ``[ts, ts + gap)``,
  which merges with every session of its key it intersects (touching counts); a window that is
  late after merging (its last millisecond at or before the watermark) is dropped;
- an accumulation counts its row +1 in its session, a retraction -1: a retraction whose row
  was in a session that fired before merges into the session it touches and is subtracted
  there (legacywin S: ``[2,10)`` count 1, sum 11 = e 8 + a 5 - b 2);
- a session is never split (S2: ``[1,8)`` with a@1, c@5 after b@3's retraction);
- when the watermark reaches ``end - 1`` the session fires once, and emits when its record
  count (accumulations less retractions) is not zero (S3: a session whose rows were all
  retracted emits nothing); insert-only.

A session's aggregates are over its SIGNED rows (:func:`signed_query`): ``COUNT(*)`` is the sum
of the signs, ``SUM(x)`` the signed sum (legacysession M: ``-97`` = 2 + 1 - 100). Flink's
``MIN``/``MAX``/``COUNT(DISTINCT)`` with retraction count VALUES, not rows, and in their order
(legacysession V: ``MAX(s)`` 2 over w 2, y 100 and x 100 retracted, where the rows that remain
give 100): no query over the fired rows gives them, so they are refused by name.

The session merging is the runtime's (:class:`~sessioncluster.runtime.operators.windowcontext.
MergingWindowSet`, DataStream's session windows). At runtime the updating query's rows carry
their time (:func:`with_time_column`); after each micro-batch its changes go into the sessions
(:func:`session_step`, pickled per micro-batch id like the TUMBLE/HOP windows) and the window
query, rewritten over signed rows, runs as a batch query over the fired sessions' rows
(:func:`session_rows`, :func:`session_frame`). Where Flink's differ: as for TUMBLE/HOP (the
watermark per micro-batch, one ``-U``/``+U`` per key and micro-batch), and a micro-batch's
changes apply in their rows' time order (:func:`in_time_order`), Flink's in its records' order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from ...api.state import KeyedStateStore, ValueState
from ...api.window import TimeWindow
from ...runtime.operators.windowcontext import MergingWindowSet
from .model import FlinkSqlError
from .planner import interval_ms, window_aux

#: the RowKinds that accumulate a row; the others (``-U``, ``-D``) retract it
ACCUMULATE = frozenset({"+I", "+U"})

Key = tuple[Any, ...]
Row = tuple[Any, ...]
#: a fired session: its key, window (start, end in ms) and rows, each with its sign (+1/-1)
Fired = tuple[Key, TimeWindow, list[tuple[Row, int]]]


def _add(rows: dict[Row, int], row: Row, count: int) -> None:
    total = rows.get(row, 0) + count
    if total:
        rows[row] = total
    else:
        rows.pop(row, None)


@dataclass(slots=True)
class ChangeSessions:
    """The open sessions of a session window aggregation over a changelog: per key its
    sessions (each mapped to the window its rows live under, as :class:`MergingWindowSet`
    keeps them), each state window's rows (row -> signed count) and the current watermark
    (ms; None before the first)."""

    gap: int
    watermark: int | None = None
    #: key -> {None: MergingWindowSet's mapping of session -> state window}
    sessions: dict[Key, dict[None, dict[TimeWindow, TimeWindow]]] = field(default_factory=dict)
    contents: dict[tuple[Key, TimeWindow], dict[Row, int]] = field(default_factory=dict)

    def _merging(self, key: Key) -> tuple[MergingWindowSet, dict[None, Any]]:
        table = self.sessions.setdefault(key, {})
        return MergingWindowSet(ValueState(KeyedStateStore(), table)), table

    def _persist(self, key: Key, merging: MergingWindowSet, table: dict[None, Any]) -> None:
        merging.persist()
        if not table:
            self.sessions.pop(key, None)

    def is_late(self, window: TimeWindow) -> bool:
        """Flink's ``isWindowLate`` (no allowed lateness)."""
        return self.watermark is not None and window[1] - 1 <= self.watermark

    def apply(self, kind: str, key: Key, row: Row, ts: int) -> bool:
        """Accumulate (``+I``/``+U``) or retract ``row`` of ``key`` at ``ts`` (ms) in the
        session its window ``[ts, ts + gap)`` merges into; False when it is dropped as late."""
        merging, table = self._merging(key)

        def merge(_result: Any, _merged: Any, state_window: TimeWindow,
                  merged_state: list[TimeWindow]) -> None:
            into = self.contents.setdefault((key, state_window), {})
            for window in merged_state:
                for merged_row, count in self.contents.pop((key, window), {}).items():
                    _add(into, merged_row, count)

        actual = merging.add_window(TimeWindow(ts, ts + self.gap), merge)
        if self.is_late(actual):
            merging.retire_window(actual)
            self._persist(key, merging, table)
            return False
        state_window = merging.get_state_window(actual)
        _add(self.contents.setdefault((key, state_window), {}), row,
             1 if kind in ACCUMULATE else -1)
        self._persist(key, merging, table)
        return True

    def advance(self, watermark: int) -> list[Fired]:
        """Move the watermark to ``watermark`` (it never goes back) and fire every session it
        reaches, by end then start: each with its rows and their signs (a row as often as it
        counts), a session whose record count is zero left out. Fired sessions are forgotten."""
        if self.watermark is not None and watermark <= self.watermark:
            return []
        self.watermark = watermark
        due = sorted(((w, key) for key, table in self.sessions.items()
                      for w in table.get(None, {}) if w[1] - 1 <= watermark),
                     key=lambda d: (d[0][1], d[0][0]))
        out: list[Fired] = []
        for window, key in due:
            merging, table = self._merging(key)
            state_window = merging.get_state_window(window)
            merging.retire_window(window)
            self._persist(key, merging, table)
            rows = self.contents.pop((key, state_window), {})
            if sum(rows.values()) != 0:  # Flink's record counter
                out.append((key, window, [(row, 1 if n > 0 else -1)
                                          for row, n in rows.items() for _ in range(abs(n))]))
        return out


def session_step(sessions: ChangeSessions, changes: list[tuple[str, Row]],
                 key_positions: list[int], delay_ms: int) -> list[Fired]:
    """One micro-batch of the updating query's changes (each row ending in its time, ms)
    applied to ``sessions`` in their time order (:func:`in_time_order`), keyed by the row's
    columns at ``key_positions``, then the watermark moved to the highest time accumulated
    less ``delay_ms`` (as :func:`~.updatingwindow.window_step`): the sessions that fire, their
    rows with their time. A row without a time (NULL) is in no session."""
    highest = None
    for kind, row in in_time_order(changes):
        time = row[-1]
        if time is None:
            continue
        sessions.apply(kind, tuple(row[i] for i in key_positions), row, time)
        if kind in ACCUMULATE:
            highest = time if highest is None else max(highest, time)
    return [] if highest is None else sessions.advance(highest - delay_ms)


def in_time_order(changes: list[tuple[str, Row]]) -> list[tuple[str, Row]]:
    """A micro-batch's changes (rows ending in their time) in the order of the records that
    made them, as far as their times tell: each ``-U`` with its ``+U``, by the time of the
    row they leave (the record's when it moved the row's time), stably. A micro-batch's
    changes come in no record order, and where a retraction merges depends on the sessions
    already there (legacysession M: x@20's retraction of x@2 after y@5's row)."""
    units: list[list[tuple[str, Row]]] = []
    for change in changes:
        if change[0] == "+U" and units and units[-1][-1][0] == "-U":
            units[-1].append(change)
        else:
            units.append([change])
    units.sort(key=lambda unit: (unit[-1][1][-1] is None, unit[-1][1][-1] or 0))
    return [change for unit in units for change in unit]


# -- the window query over a fired session's signed rows ----------------------------------------
#: the columns a fired session's rows carry after the updating query's: the row's sign (+1: an
#: accumulation, -1: a retraction) and its session's start and end (the time column's type)
SIGN, SESSION_START, SESSION_END = "__flink_sign", "__flink_session_start", "__flink_session_end"


@dataclass(frozen=True, slots=True)
class SessionWindow:
    """A legacy ``GROUP BY key..., SESSION(ts, gap)``: the time column, the gap (ms) and the
    positions of the keys in the updating query's row."""

    ts: str
    gap_ms: int
    key_positions: list[int]


def is_session(select: exp.Select) -> bool:
    """True for a legacy ``GROUP BY ... SESSION(...)``."""
    group = select.args.get("group")
    return group is not None and any(isinstance(g, exp.Anonymous) and g.name.upper() == "SESSION"
                                     for g in group.expressions)


def session_window_of(select: exp.Select, columns: list[str], view: str | None = None
                      ) -> SessionWindow | None:
    """The session window of ``select`` (a ``GROUP BY ... SESSION(ts, gap)``) over rows of
    ``columns`` (read as ``view``); None for another grouping. A key or time that is not a
    column, a WHERE, a join and a view between them are refused by name."""
    group = select.args.get("group")
    calls = [g for g in group.expressions if isinstance(g, exp.Anonymous)
             and g.name.upper() == "SESSION"] if group is not None else []
    if group is None or len(calls) != 1 or len(calls[0].expressions) != 2 \
            or not isinstance(calls[0].expressions[0], exp.Column):
        return None
    from_ = select.args.get("from_")
    names = [c.lower() for c in columns]
    if select.args.get("where") is not None or select.args.get("joins") \
            or from_ is None or not isinstance(from_.this, exp.Table) \
            or (view is not None and from_.this.name.lower() != view.lower()) \
            or calls[0].expressions[0].name.lower() not in names:
        raise FlinkSqlError("GROUP BY SESSION(...) over the changes of an updating query is "
                            "supported by sessioncluster over the updating query alone, without "
                            "WHERE, a join or a view between them, its time one of its "
                            "columns: Flink filters and joins the changes before they merge "
                            "into sessions, and sessioncluster runs the window query over the "
                            "rows of the sessions that fire")
    keys = [g for g in group.expressions if g is not calls[0]]
    if not all(isinstance(k, exp.Column) and k.name.lower() in names for k in keys):
        raise FlinkSqlError("GROUP BY SESSION(...) over the changes of an updating query is "
                            "supported by sessioncluster with keys that are the updating "
                            "query's columns only")
    return SessionWindow(calls[0].expressions[0].name, interval_ms(calls[0].expressions[1]),
                         [names.index(k.name.lower()) for k in keys])


def signed_query(select: exp.Select) -> exp.Select:
    """``select`` (``GROUP BY key..., SESSION(ts, gap)``) over a fired session's signed rows
    (:data:`SIGN`, :data:`SESSION_START`, :data:`SESSION_END`): grouped by the keys and the
    session, ``SESSION_START``/``_END``/``_ROWTIME`` its bounds, ``COUNT(*)`` the sum of the
    signs, ``COUNT(x)`` that of the non-NULL ``x``, ``SUM(x)`` the signed sum (NULL when no
    ``x`` counts, as Flink's SUM with retraction). Another aggregate is refused by name."""
    query = select.copy()
    start, end = exp.column(SESSION_START), exp.column(SESSION_END)
    group = query.args["group"]
    group.set("expressions", [*(g for g in group.expressions if not (
        isinstance(g, exp.Anonymous) and g.name.upper() == "SESSION")), start, end])
    query.transform(lambda node: window_aux(node, "SESSION", start, end), copy=False)
    query.transform(_signed, copy=False)
    return query


def _signed(node: exp.Expression) -> exp.Expression:
    if not isinstance(node, exp.AggFunc):
        return node
    arg = node.this
    if isinstance(node, (exp.Count, exp.Sum)) and not isinstance(arg, exp.Distinct):
        sign = exp.column(SIGN)
        if isinstance(node, exp.Count) and (arg is None or isinstance(arg, exp.Star)):
            return exp.Sum(this=sign)
        counted = exp.Sum(this=exp.If(this=exp.Is(this=arg.copy(), expression=exp.Null()),
                                      true=exp.Literal.number(0), false=sign.copy()))
        if isinstance(node, exp.Count):
            return counted
        signed = exp.If(this=exp.GT(this=sign.copy(), expression=exp.Literal.number(0)),
                        true=arg.copy(), false=exp.Neg(this=exp.Paren(this=arg.copy())))
        return exp.If(this=exp.EQ(this=counted, expression=exp.Literal.number(0)),
                      true=exp.Null(), false=exp.Sum(this=signed))
    name = node.sql_name() if not isinstance(arg, exp.Distinct) else f"{node.sql_name()}(DISTINCT)"
    raise FlinkSqlError(
        f"{name} over a legacy SESSION window of an updating query is not supported by "
        "sessioncluster: a retraction whose row was in a session that fired merges into the "
        "session it touches, and Flink's aggregate with retraction counts that session's "
        "VALUES, retracted ones too, in their order, which no query over the session's rows "
        "gives (COUNT and SUM over its signed rows do). Use COUNT or SUM, or a TUMBLE or HOP "
        "window")


# -- at runtime ---------------------------------------------------------------------------------
#: the column :func:`with_time_column` adds to the updating query's rows: the row's time (ms)
TIME = "__flink_time_ms"


def with_time_column(frame: Any, ts: str) -> Any:
    """``frame`` (the updating query's rows) with :data:`TIME`, its ``ts`` in epoch ms."""
    from pyspark.sql import functions as F

    return frame.select("*", F.expr(f"unix_millis(CAST(`{ts}` AS TIMESTAMP))").alias(TIME))


def session_schema(inner_schema: Any, ts: str) -> Any:
    """The schema of a fired session's rows as the window query reads them: the updating
    query's columns, then :data:`SIGN` and the session's bounds (``ts``'s type)."""
    from pyspark.sql.types import LongType, StructField

    ts_type = next(f.dataType for f in inner_schema.fields if f.name.lower() == ts.lower())
    return type(inner_schema)([*inner_schema.fields, StructField(SIGN, LongType()),
                               StructField(SESSION_START, ts_type),
                               StructField(SESSION_END, ts_type)])


def session_rows(fired: list[Fired]) -> list[Row]:
    """The fired sessions' rows (each ending in its time, ms) as :func:`session_frame` takes
    them: the updating query's columns, the sign and the session's start and end (ms)."""
    return [row[:-1] + (sign, window[0], window[1]) for _, window, rows in fired
            for row, sign in rows]


def session_frame(spark: Any, rows: list[Row], schema: Any) -> Any:
    """A DataFrame of :func:`session_rows` with ``schema`` (:func:`session_schema`): the
    session's bounds from epoch ms to the time column's type."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField

    bounds = schema.fields[-2:]
    frame = spark.createDataFrame(rows, type(schema)(
        [*schema.fields[:-2], *(StructField(f.name, LongType()) for f in bounds)]))
    return frame.select(*[F.col(f"`{f.name}`") for f in schema.fields[:-2]],
                        *[F.timestamp_millis(F.col(f.name)).cast(f.dataType).alias(f.name)
                          for f in bounds])
