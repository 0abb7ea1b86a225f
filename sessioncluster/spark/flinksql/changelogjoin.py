"""Flink's regular join of two changelogs (``StreamingJoinOperator``), per key of its equality
conditions: the algorithm, and the ``transformWithStateInPandas`` processor that runs it.

Each side's rows of a key are a multiset (row -> count). A change of one side (``+I``/``+U``
accumulate, ``-U``/``-D`` retract) is joined with the other side's rows of its key and emits the
join's changes as Flink 2.3 does (probed with PyFlink, see the module's tests): an inner join
keeps the input's RowKind (``+U`` in, ``+U`` out per match); an outer side emits ``+I``/``-D``
only, with its null-padded row ``+I`` while it has no match, retracted (``-D``) by the first
match of the other side and emitted again when the last match goes. A pair of rows of a key
joins when the ON condition's non-equality part (:mod:`.joincondition`), if any, is TRUE; a
row's number of matches (Flink's ``numOfAssociations``) is counted from the other side's rows.
A row whose key has a null matches nothing (SQL's ``=``).
"""

from __future__ import annotations

import pickle
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

Row = tuple[Any, ...]
ACCUMULATE = ("+I", "+U")


@dataclass(slots=True)
class KeyRows:
    """One key's rows of both sides (row -> count)."""

    left: Counter[Row] = field(default_factory=Counter)
    right: Counter[Row] = field(default_factory=Counter)


@dataclass(frozen=True, slots=True)
class JoinSpec:
    """What is joined: the widths of both sides' rows, which sides are outer and the join's
    non-equality condition on a pair (left row, right row) of matching keys (None: none)."""

    left_width: int
    right_width: int
    left_outer: bool = False
    right_outer: bool = False
    condition: Callable[[Row, Row], bool] | None = None

    def joined(self, row: Row, other: Row | None, from_left: bool) -> Row:
        """The join's row of ``row`` (of the left side when ``from_left``) and ``other``
        (None: null padding)."""
        if other is None:
            other = (None,) * (self.right_width if from_left else self.left_width)
        return row + other if from_left else other + row

    def matches(self, row: Row, other: Row, from_left: bool) -> bool:
        """The pair of ``row`` (of the left side when ``from_left``) and ``other`` joins."""
        if self.condition is None:
            return True
        return self.condition(row, other) if from_left else self.condition(other, row)


def join_change(spec: JoinSpec, state: KeyRows, kind: str, row: Row, from_left: bool,
                null_key: bool = False) -> list[tuple[str, Row]]:
    """The join's changes for one change ``(kind, row)`` of one side; ``state`` brought up to
    date. ``null_key``: the row's key has a null (it matches nothing and is not kept). An
    outer other side's row is padded while no row of this side joins it (Flink's
    ``numOfAssociations``, counted here from the state)."""
    own, other = (state.left, state.right) if from_left else (state.right, state.left)
    own_outer = spec.left_outer if from_left else spec.right_outer
    other_outer = spec.right_outer if from_left else spec.left_outer
    matches = [] if null_key else [o for o in other.elements()
                                   if spec.matches(row, o, from_left)]
    out: list[tuple[str, Row]] = []

    def associations(o: Row) -> int:  # this side's rows that join the other side's row o
        return sum(c for r, c in own.items() if spec.matches(o, r, not from_left))

    if kind in ACCUMULATE:
        unmatched = [o for o in matches if associations(o) == 0] if other_outer else []
        if not null_key:
            own[row] += 1
        if not matches:
            if own_outer:
                out.append(("+I", spec.joined(row, None, from_left)))
            return out
        out.extend(("-D", spec.joined(o, None, not from_left)) for o in unmatched)
        out_kind = "+I" if own_outer or other_outer else kind
        out.extend((out_kind, spec.joined(row, o, from_left)) for o in matches)
        return out
    if not null_key:
        own[row] -= 1
        if own[row] <= 0:
            del own[row]
    if not matches:
        if own_outer:
            out.append(("-D", spec.joined(row, None, from_left)))
        return out
    out_kind = "-D" if own_outer else kind
    out.extend((out_kind, spec.joined(row, o, from_left)) for o in matches)
    if other_outer:
        out.extend(("+I", spec.joined(o, None, not from_left)) for o in matches
                   if associations(o) == 0)
    return out


def join_changes(spec: JoinSpec, state: KeyRows,
                 changes: list[tuple[bool, str, Row]], null_key: bool = False
                 ) -> list[tuple[str, Row]]:
    """The join's changes for a key's changes ``(from_left, kind, row)``, in their order."""
    out: list[tuple[str, Row]] = []
    for from_left, kind, row in changes:
        out += join_change(spec, state, kind, row, from_left, null_key)
    return out


#: the columns of the processor's input besides the sides' (``flink_l<i>``, ``flink_r<j>``)
SIDE, KIND, SEQUENCE = "flink_side", "flink_kind", "flink_seq"


#: a key's changes ``(from_left, kind, row)`` applied to its state: the output's changes
KeyStep = Callable[[KeyRows, list[tuple[bool, str, Row]]], list[tuple[str, Row]]]


def changelog_join_processor(spec: JoinSpec, left: list[str], right: list[str],
                             timestamps: list[str], row_kind: str,
                             step: KeyStep | None = None) -> Any:
    """The StatefulProcessor of ``transformWithStateInPandas`` running :func:`join_changes` per
    key, the key's rows of both sides in Spark's state store (one value: RocksDB, checkpointed
    with the query). Its input rows: :data:`SIDE` (0 left, 1 right), :data:`KIND`,
    :data:`SEQUENCE` (a side's changes in order) and both sides' columns; its output: both
    sides' columns and ``row_kind``. ``step``: another operation of a key's changes (a set
    operation's, keyed by the whole row, ``left`` its columns, no ``right``: a null key is a
    key, a change's row is all the columns whichever its side)."""
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    columns = left + right

    class ChangelogJoinProcessor(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.state = handle.getValueState("rows", "s binary")

        def handleInputRows(self, key: Any, rows: Iterator[Any],  # noqa: N802
                            timerValues: Any) -> Iterator[Any]:  # noqa: N803
            frame = pd.concat(list(rows), ignore_index=True).sort_values(SEQUENCE, kind="stable")
            null_key = step is None and any(k is None or k != k for k in key)  # NaN: null
            stored = None if null_key else self.state.get()
            state = pickle.loads(stored[0]) if stored is not None else KeyRows()
            # a set operation's rows are all the columns, of either side
            changes = [(side == 0, kind, tuple(values) if step is not None
                        else tuple(values[:len(left)]) if side == 0
                        else tuple(values[len(left):]))
                       for side, kind, values in zip(
                           frame[SIDE].tolist(), frame[KIND].tolist(),
                           frame[columns].astype(object).where(frame[columns].notna(), None)
                           .itertuples(index=False, name=None))]
            out = step(state, changes) if step is not None \
                else join_changes(spec, state, changes, null_key)
            if not null_key:
                self.state.update((pickle.dumps(state),))
            if out:
                result = pd.DataFrame([row for _, row in out], columns=columns)
                for name in timestamps:
                    result[name] = pd.to_datetime(result[name])
                result[row_kind] = [kind for kind, _ in out]
                yield result

        def close(self) -> None:
            pass

    return ChangelogJoinProcessor()
