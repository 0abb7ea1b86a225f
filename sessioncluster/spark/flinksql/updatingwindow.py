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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
