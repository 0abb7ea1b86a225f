"""A legacy group window (``GROUP BY TUMBLE(ts, ...)``, ``HOP``) over the changes of an
updating query, in STREAMING over unbounded sources: the windows' state and when they fire.

Flink 2.3 runs it (``/work/briefs/data/legacywin/probe1.py``): the updating query's ``ts``
column (``MAX(ts)`` of a rowtime) is the window's time, and the sources' watermarks pass through
the updating query to the window operator. Its result is insert-only. Per window, as Flink's
``WindowOperator`` of the table runtime does:

- a change whose window is late (its last millisecond, ``end - 1``, at or before the current
  watermark) is dropped, an accumulation and a retraction alike;
- ``+I``/``+U`` accumulate the row into the window, ``-U``/``-D`` retract it;
- when the watermark reaches ``end - 1`` the window fires, once: its result is emitted when it
  holds at least one row (Flink's record counter), and its state is dropped (so a retraction
  of a fired window is late).

Flink's built-in aggregate functions with retraction (``COUNT``, ``SUM``, ``MAX_RETRACT``, ...)
give over the accumulated and retracted changes what they give over the rows that remain; so a
window keeps the multiset of its rows (count per row) and fires them, and the window query's
own aggregation runs over a fired window's rows. The windows of a change come from the window
assignment of the planner (``window(ts, size, slide)``): a change of a ``HOP`` belongs to each
of its windows.

Flink emits a watermark after each source record; :meth:`ChangeWindows.advance` may be called
after each change (Flink's order) or once per micro-batch (this runtime's unit of progress).

At runtime (``GROUP BY TUMBLE``/``HOP``; ``/work/briefs/data/legacyhop/``) the updating query
is the streaming query, in ``update`` mode, its rows carrying their time and windows
(:func:`with_window_columns`: Spark's ``window(...)``, a HOP's row once per window, folded back
into one row with its windows by :func:`fold_windows`); after each micro-batch its changes
(against the rows emitted before, as for every updating query) go into each of their windows
(:func:`window_step`, the windows pickled per micro-batch id next to the changelog's rows), and
the window query runs as a batch query over the rows of the windows that fire (the
``OuterQuery``), each row ``+I``: insert-only, so a filesystem sink takes it. Flink's legacy
``SESSION`` over an updating query merges a retraction's window ``[ts, ts + gap)`` into the
session it touches and subtracts it there, so a session's aggregate is over signed rows: its
sessions and their signed rows are :mod:`.updatingsession`'s (the runtime's merging window
set), the window query rewritten over them. Where Flink's differ (SESSION's too; its
micro-batch's changes also apply in their rows' time order, not the records' order):

- the watermark moves once per micro-batch, after all its changes, where Flink's moves after
  each record: a change that came in a file after the record whose watermark fired its window
  is late in Flink, in time here (``probe2.out``: b@14 after c@25);
- the watermark is the highest time of the changes accumulated less the source's delay, not
  the source's own (the same for ``MAX(ts)``; a source record that changes no row moves
  Flink's);
- one micro-batch gives one ``-U``/``+U`` per key, where Flink's changelog has each update.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from .planner import fixed_window, interval_ms, legacy_window_args

#: a window: (start, end) in epoch milliseconds, the end exclusive
Window = tuple[int, int]

#: the RowKinds that accumulate a row; the others (``-U``, ``-D``) retract it
ACCUMULATE = frozenset({"+I", "+U"})


@dataclass(frozen=True, slots=True)
class WindowChange:
    """One change of the updating query (its RowKind and row) in one of its windows."""

    kind: str
    row: tuple[Any, ...]
    window: Window


@dataclass(slots=True)
class ChangeWindows:
    """The open windows of a group window aggregation over a changelog: each window's rows
    (row -> count, a retraction counts -1) and the current watermark (ms; None before the
    first)."""

    watermark: int | None = None
    contents: dict[Window, dict[tuple[Any, ...], int]] = field(default_factory=dict)

    def is_late(self, window: Window) -> bool:
        """Flink's ``isWindowLate`` (no allowed lateness): the watermark is at or past the
        window's last millisecond."""
        return self.watermark is not None and window[1] - 1 <= self.watermark

    def apply(self, change: WindowChange) -> bool:
        """Accumulate or retract ``change`` in its window; False when it is dropped as late."""
        if self.is_late(change.window):
            return False
        rows = self.contents.setdefault(change.window, {})
        count = rows.get(change.row, 0) + (1 if change.kind in ACCUMULATE else -1)
        if count:
            rows[change.row] = count
        else:
            rows.pop(change.row, None)
        return True

    def advance(self, watermark: int) -> list[tuple[Window, list[tuple[Any, ...]]]]:
        """Move the watermark to ``watermark`` (it never goes back) and fire every window it
        reaches, by end then start: each with its rows (a row as often as it counts), a window
        whose rows count to nothing left out. The fired windows are forgotten."""
        if self.watermark is not None and watermark <= self.watermark:
            return []
        self.watermark = watermark
        fired = sorted((w for w in self.contents if w[1] - 1 <= watermark),
                       key=lambda w: (w[1], w[0]))
        out = []
        for window in fired:
            rows = self.contents.pop(window)
            if sum(rows.values()) > 0:
                out.append((window, [row for row, n in rows.items() for _ in range(max(n, 0))]))
        return out

    def batch(self, changes: list[WindowChange], watermark: int | None
              ) -> list[tuple[Window, list[tuple[Any, ...]]]]:
        """One micro-batch: its changes applied in their order, then the watermark moved to
        ``watermark`` (None: no watermark yet); the windows that fire."""
        for change in changes:
            self.apply(change)
        return [] if watermark is None else self.advance(watermark)


# -- over a micro-batch's changes --------------------------------------------------------------
#: the columns the planner adds to the updating query's rows (:func:`with_window_columns`):
#: the row's time and its window's start and end, epoch milliseconds (a HOP's row once per
#: window, as Spark's ``window(...)`` gives it)
WINDOW_COLUMNS = ("__flink_time_ms", "__flink_window_start_ms", "__flink_window_end_ms")


def fold_windows(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """A micro-batch's rows (each ending in :data:`WINDOW_COLUMNS`, a HOP's row once per
    window) as one row per row of the updating query, in their order, ending in its time and
    the tuple of its windows ``(start, end)``: the changelog's rows."""
    width = len(WINDOW_COLUMNS)
    folded: dict[tuple[Any, ...], list[Window]] = {}
    for row in rows:
        windows = folded.setdefault(row[:-width + 1], [])
        if row[-2] is not None:
            windows.append((row[-2], row[-1]))
    return [row + (tuple(sorted(windows)),) for row, windows in folded.items()]


def window_step(windows: ChangeWindows, changes: list[tuple[str, tuple[Any, ...]]],
                delay_ms: int) -> list[tuple[Window, list[tuple[Any, ...]]]]:
    """One micro-batch of the updating query's changes (each row ending in its time and its
    windows, :func:`fold_windows`) applied to ``windows`` in their order, each change to each
    of its windows, then the watermark moved to the highest time accumulated so far less
    ``delay_ms`` (the source's ``WATERMARK FOR ts AS ts - INTERVAL ...``): the windows that
    fire, each with its rows (without those columns). A row without a time (NULL) is in no
    window."""
    batch, highest = [], None
    for kind, row in changes:
        time, assigned = row[-2:]
        if time is None:
            continue
        batch += [WindowChange(kind, row[:-2], window) for window in assigned]
        if kind in ACCUMULATE:
            highest = time if highest is None else max(highest, time)
    watermark = None if highest is None else highest - delay_ms
    return windows.batch(batch, watermark)


#: the column :func:`with_window_start` adds to a HOP's window query
WINDOW_START = "__flink_window_start"


def with_window_start(query: Any) -> tuple[Any, str | None] | None:
    """The window query (over the updating query's rows) of a legacy ``GROUP BY HOP`` with
    its window's start (``HOP_START``) as its last column :data:`WINDOW_START`, since its
    rows are in several windows; a TUMBLE's as it is (None: no column). None when the HOP's
    select is not the query's own."""
    hops = [s for s in query.find_all(exp.Select)
            if (window := group_window_of(s)) is not None and window[1] != window[2]]
    if not hops:
        return query, None
    if hops != [query]:
        return None
    call = next(g for g in query.args["group"].expressions if isinstance(g, exp.Anonymous)
                and g.name.upper() == "HOP")
    start = exp.Anonymous(this="HOP_START", expressions=[e.copy() for e in call.expressions])
    return query.copy().select(exp.alias_(start, WINDOW_START), copy=False), WINDOW_START


def group_window_of(select: exp.Select) -> tuple[str, int, int, int] | None:
    """The time column, size, slide and offset (ms) of a ``GROUP BY TUMBLE(ts, size[,
    offset])`` (its slide its size) or ``HOP(ts, slide, size)``; None for another grouping
    (SESSION, a window TVF's)."""
    group = select.args.get("group")
    windows = [g for g in group.expressions if isinstance(g, exp.Anonymous)
               and g.name.upper() in ("TUMBLE", "HOP")] if group is not None else []
    if len(windows) != 1 or not windows[0].expressions \
            or not isinstance(windows[0].expressions[0], exp.Column):
        return None
    args = legacy_window_args(windows[0].name.upper(), windows[0].expressions)
    size = interval_ms(args["SIZE"])
    slide = interval_ms(args["SLIDE"]) if "SLIDE" in args else size
    offset = interval_ms(args["OFFSET"]) if "OFFSET" in args else 0
    return windows[0].expressions[0].name, size, slide, offset


def with_window_columns(frame: Any, ts: str, size: int, slide: int, offset: int) -> Any:
    """``frame`` (the updating query's rows) with :data:`WINDOW_COLUMNS` of its ``ts``: the
    windows of ``size`` ms every ``slide`` ms assigned by the planner's Spark ``window(...)``
    (a row once per window; a row whose time is NULL left out: in no window)."""
    from pyspark.sql import functions as F

    time = f"CAST(`{ts}` AS TIMESTAMP)"
    window = F.expr(fixed_window(time, size, slide, offset))
    return frame.select(
        "*", F.expr(f"unix_millis({time})").alias(WINDOW_COLUMNS[0]),
        F.unix_millis(window.getField("start")).alias(WINDOW_COLUMNS[1]),
        F.unix_millis(window.getField("end")).alias(WINDOW_COLUMNS[2]))
