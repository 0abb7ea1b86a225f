"""Flink's ``UpdatableTopNFunction`` replayed over one partition key's records.

Flink's planner runs a Top-N over a group aggregation with its ``UpdateFastStrategy`` when the
aggregation's keys (the input's unique key) hold the partition key and every order key only
improves as rows come (a ``COUNT`` or ``MAX`` ordered descending, a ``MIN`` ascending, a group
key): the aggregation then sends only ``+I``/``+U`` (no ``-U``), and the function keeps the top
N row keys per sort key (ties in arrival order) with each one's row:

- a kept row key's new row, with ``rn``: its old rank ``-U`` and the rows it moves over shift
  down a rank (each ``-U`` the row there before, ``+U`` the row there now); without ``rn``,
  ``-U`` old / ``+U`` new;
- a new row key within the buffer's range (before its worst key, or the buffer not full): as
  ``AppendOnlyTopNFunction`` (:mod:`.rankfunctions`), with ``rn`` the entries past the end
  dropped except one visited (Flink's iterator has passed it), without ``rn`` ``-D`` of the
  buffer's last row then ``+I``;
- a top 1 is ``FastTop1Function``: ``-U``/``+U`` for a row strictly before the current one.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterable, Iterator
from typing import Any

from .rankfunctions import RankRange, Record, compare_keys, top1


def replay_updatable(records: Iterable[tuple[Any, tuple[Any, ...], tuple[Any, ...]]],
                     ranks: RankRange) -> Iterator[Record]:
    """Flink's Top-N records of one partition's upsert changelog (``(row key, sort key, row)``
    each, its ``+I``/``+U`` records in arrival order; a key's sort key only improves), the
    rules of ``UpdatableTopNFunction`` (``FastTop1Function``, with ``-U``, for rank 1 alone)."""
    compare = functools.cmp_to_key(functools.partial(compare_keys, ranks.order))
    if ranks.start == ranks.end == 1:
        yield from top1(((key, row) for _, key, row in records), compare, True)
        return
    top = _UpdatableTop(ranks)
    numbered = ranks.output_number or ranks.start > 1
    for index, (row_key, key, row) in enumerate(records):
        emitted = top.with_number(row_key, compare(key), row) if numbered else \
            top.without_number(row_key, compare(key), row)
        for sub, (kind, out, rank) in enumerate(emitted):
            yield index, sub, kind, out, rank


class _UpdatableTop:
    """``UpdatableTopNFunction``'s buffer: the row keys per sort key (best first, ties in
    arrival order) and each row key's row and sort key."""

    def __init__(self, ranks: RankRange) -> None:
        self.ranks = ranks
        self.entries: list[tuple[Any, list[Any]]] = []
        self.rows: dict[Any, tuple[Any, tuple[Any, ...]]] = {}  # row key: (sort key, row)
        self.out: list[tuple[str, tuple[Any, ...], int]] = []

    def _put(self, key: Any, row_key: Any) -> None:
        at = bisect.bisect_left([k for k, _ in self.entries], key)
        if at == len(self.entries) or self.entries[at][0] != key:
            self.entries.insert(at, (key, []))
        self.entries[at][1].append(row_key)

    def _remove(self, key: Any, row_key: Any) -> None:
        at = next(i for i, (k, _) in enumerate(self.entries) if k == key)
        self.entries[at][1].remove(row_key)
        if not self.entries[at][1]:
            del self.entries[at]

    def _in_range(self, key: Any) -> bool:
        """``checkSortKeyInBufferRange``: before the worst key, or the buffer not full."""
        return not self.entries or key < self.entries[-1][0] \
            or sum(len(r) for _, r in self.entries) < self.ranks.end

    def _rank(self, key: Any, row_key: Any) -> int:
        rank = 1
        for k, row_keys in self.entries:
            if k == key:
                return rank + row_keys.index(row_key)
            rank += len(row_keys)
        raise KeyError(row_key)

    def _emit(self, kind: str, row: tuple[Any, ...], rank: int) -> None:
        if self.ranks.start <= rank <= self.ranks.end:
            self.out.append((kind, row, rank))

    def without_number(self, row_key: Any, key: Any, row: tuple[Any, ...]
                       ) -> list[tuple[str, tuple[Any, ...], int]]:
        """``processElementWithoutRowNumber``: ``-U``/``+U`` of a kept row, or ``-D`` of the
        row pushed past the end and ``+I``."""
        out: list[tuple[str, tuple[Any, ...], int]] = []
        if row_key in self.rows:
            old_key, old_row = self.rows[row_key]
            if old_key != key:
                self._remove(old_key, row_key)
                self._put(key, row_key)
            self.rows[row_key] = (key, row)
            return [("-U", old_row, 0), ("+U", row, 0)]
        if self._in_range(key):
            self._put(key, row_key)
            self.rows[row_key] = (key, row)
            if sum(len(r) for _, r in self.entries) > self.ranks.end:
                last = self.entries[-1][1].pop()
                if not self.entries[-1][1]:
                    self.entries.pop()
                out.append(("-D", self.rows.pop(last)[1], 0))
            out.append(("+I", row, 0))
        return out

    def with_number(self, row_key: Any, key: Any, row: tuple[Any, ...]
                    ) -> list[tuple[str, tuple[Any, ...], int]]:
        """``processElementWithRowNumber``: the records of the ranks the row moves over."""
        self.out = []
        if row_key in self.rows:
            old_key, old_row = self.rows[row_key]
            old_rank = self._rank(old_key, row_key)
            if key == old_key:
                self.rows[row_key] = (key, row)
                self._emit("-U", old_row, old_rank)
                self._emit("+U", row, old_rank)
                return self.out
            self._remove(old_key, row_key)
            self._put(key, row_key)
            self.rows[row_key] = (key, row)
            if key < old_key:
                self._shift(key, row, (old_key, old_row, old_rank))
            else:  # Flink's lenient path for a key that got worse (state lost upstream)
                self._shift_back(row, self._rank(key, row_key), old_row, old_rank)
        elif self._in_range(key):
            self._put(key, row_key)
            self.rows[row_key] = (key, row)
            self._shift(key, row, None)
        return self.out

    def _shift(self, key: Any, row: tuple[Any, ...],
               old: tuple[Any, tuple[Any, ...], int] | None) -> None:
        """``emitRecordsWithRowNumber``: the rows after the new (or moved up) row shift down a
        rank, up to the end (or the row's old rank); past the end the entries are dropped
        (those not visited: a visited one past it stays, as Flink's does)."""
        end, rank, current, found, retracted = self.ranks.end, 0, row, False, False
        visited = 0
        for entry_key, row_keys in self.entries:
            if rank > end:
                break
            visited += 1
            if not found and entry_key == key:
                rank, current, found = rank + len(row_keys), row, True
            elif not found:
                rank += len(row_keys)
            elif old is not None and not (entry_key <= old[0]):
                break
            else:
                limit = (lambda r: r <= end) if old is None else (lambda r: r < old[2])
                for row_key in row_keys:
                    if not limit(rank):
                        break
                    previous = self.rows[row_key][1]
                    self._emit("-U", previous, rank)
                    if current is row and old is not None and not retracted:
                        self._emit("-U", old[1], old[2])  # the same row key's old row first
                        retracted = True
                    self._emit("+U", current, rank)
                    current, rank = previous, rank + 1
        if rank <= end:
            if old is None:
                self._emit("+I", current, rank)
            else:
                if not retracted:
                    self._emit("-U", old[1], old[2])
                self._emit("+U", current, rank)
            return
        for _, row_keys in self.entries[visited:]:
            for row_key in row_keys:
                del self.rows[row_key]
        del self.entries[visited:]

    def _shift_back(self, row: tuple[Any, ...], new_rank: int, old_row: tuple[Any, ...],
                    old_rank: int) -> None:
        """``emitRecordsWithRowNumberIgnoreStateError``: the ranks from the old to the new."""
        rank, previous = 0, old_row
        for _, row_keys in self.entries:
            if rank > new_rank:
                break
            for row_key in row_keys:
                rank += 1
                current = self.rows[row_key][1]
                if rank == old_rank:
                    self._emit("-U", old_row, old_rank)
                elif rank > old_rank:
                    self._emit("-U", previous, rank)
                    self._emit("+U", previous, rank - 1)
                    if rank == new_rank:
                        self._emit("+U", row, rank)
                previous = current
