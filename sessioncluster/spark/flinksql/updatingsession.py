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
MergingWindowSet`, DataStream's session windows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...api.state import KeyedStateStore, ValueState
from ...api.window import TimeWindow
from ...runtime.operators.windowcontext import MergingWindowSet

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
    applied to ``sessions`` in their order, keyed by the row's columns at ``key_positions``,
    then the watermark moved to the highest time accumulated less ``delay_ms`` (as
    :func:`~.updatingwindow.window_step`): the sessions that fire, their rows without the
    time. A row without a time (NULL) is in no session."""
    highest = None
    for kind, row in changes:
        time = row[-1]
        if time is None:
            continue
        sessions.apply(kind, tuple(row[i] for i in key_positions), row[:-1], time)
        if kind in ACCUMULATE:
            highest = time if highest is None else max(highest, time)
    return [] if highest is None else sessions.advance(highest - delay_ms)
