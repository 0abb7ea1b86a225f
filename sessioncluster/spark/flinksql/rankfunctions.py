"""Flink's rank functions replayed over one partition key's records, record by record.

A Top-N (``ROW_NUMBER() OVER (PARTITION BY p ORDER BY o) AS rn .. WHERE rn <= N``) in STREAMING
mode keeps, per partition key, the rows ranked so far (sort key to rows, ties in arrival order)
and emits, for each input record, the rules of Flink's functions (``flink-table-runtime``'s
``operators/rank``):

- over insert-only input, a rank range of just 1 (``FastTop1Function``): ``+I`` for the
  partition's first row, then ``-U`` old / ``+U`` new for a row ranked strictly before it; the
  ``-U`` only without ``PARTITION BY`` (with one, the partition key is the result's upsert key
  and Flink's planner asks for no update-before: PyFlink 2.3 prints a bare ``+U``);
- over insert-only input otherwise (``AppendOnlyTopNFunction``), with ``rn`` in the output or a
  rank start after 1: a row ranked within the end shifts the rows after it, each changed rank
  ``-U`` (the row there before) / ``+U`` (the row there now), ``+I`` for the rank that was
  empty, only ranks within the range emitted; without ``rn``: ``-D`` of the row pushed out of
  the top N, then ``+I`` of the new one. A row ranked after the buffer's worst (or equal to it)
  when the buffer is full is dropped, and rows pushed out are forgotten;
- over a changelog (``RetractableTopNFunction``: a Top-N over a group aggregation), every row
  kept: an added row shifts the rows after it as above (``+I`` / ``-D`` without ``rn``), a
  retracted one shifts them back (``-U``/``+U`` per rank, ``-D`` of the rank left empty;
  without ``rn``, ``-D`` of the row and ``+I`` of the one that moves into the top N). A range
  of just rank 1 is planned without ``rn`` (the planner makes it the constant 1).
"""

from __future__ import annotations

import bisect
import functools
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RankRange:
    """A Top-N's ranks kept (``start`` to ``end``, 1-based, inclusive) and its rules."""

    start: int
    end: int
    #: ``rn`` is a column of the result
    output_number: bool
    #: the rank has a PARTITION BY (a top-1 then emits no ``-U``)
    partitioned: bool
    #: per order key: descending, and NULLs first
    order: tuple[tuple[bool, bool], ...]


#: a record of the replay: the input row's index, its number within that row, its kind, the
#: row and its rank
Record = tuple[int, int, str, tuple[Any, ...], int]


def replay(rows: Iterable[tuple[tuple[Any, ...], tuple[Any, ...]]],
           ranks: RankRange) -> Iterator[Record]:
    """Flink's Top-N records of one partition's insert-only rows (``(sort key, row)`` each,
    in arrival order): ``FastTop1Function``'s or ``AppendOnlyTopNFunction``'s rules (module
    docstring)."""
    compare = functools.cmp_to_key(functools.partial(compare_keys, ranks.order))
    if ranks.start == 1 and ranks.end == 1:
        yield from top1(rows, compare, not ranks.partitioned)
        return
    buffer: list[tuple[Any, list[tuple[Any, ...]]]] = []  # (sort key, rows), best first
    for index, (key, row) in enumerate(rows):
        ordered = compare(key)
        size = sum(len(r) for _, r in buffer)
        if buffer and not (ordered < buffer[-1][0]) and size >= ranks.end:
            continue  # not within the buffer's range
        at = next((i for i, (k, _) in enumerate(buffer) if not (k < ordered)), len(buffer))
        if at < len(buffer) and buffer[at][0] == ordered:
            buffer[at][1].append(row)
        else:
            buffer.insert(at, (ordered, [row]))
        emitted = _with_number(buffer, at, row, ranks) \
            if ranks.output_number or ranks.start > 1 else _without_number(buffer, row, ranks)
        for sub, (kind, record, rank) in enumerate(emitted):
            yield index, sub, kind, record, rank


def top1(rows: Iterable[tuple[tuple[Any, ...], tuple[Any, ...]]], compare: Any,
          update_before: bool) -> Iterator[Record]:
    """``FastTop1Function``: the first row, then each one strictly before the current
    (``-U`` of it first with ``update_before``)."""
    current: tuple[Any, tuple[Any, ...]] | None = None
    for index, (key, row) in enumerate(rows):
        ordered = compare(key)
        if current is None:
            current = (ordered, row)
            yield index, 0, "+I", row, 1
        elif ordered < current[0]:
            if update_before:
                yield index, 0, "-U", current[1], 1
            yield index, 1, "+U", row, 1
            current = (ordered, row)


def _with_number(buffer: list[tuple[Any, list[tuple[Any, ...]]]], at: int, row: tuple[Any, ...],
                 ranks: RankRange) -> list[tuple[str, tuple[Any, ...], int]]:
    """``processElementWithRowNumber``: the records of the rows shifted by ``row`` (in the
    buffer's entry ``at``), the entries after the rank end dropped."""
    out: list[tuple[str, tuple[Any, ...], int]] = []
    rank = sum(len(r) for _, r in buffer[:at + 1])
    current, i = row, at + 1
    while i < len(buffer) and rank <= ranks.end:
        for previous in buffer[i][1]:
            if rank > ranks.end:
                break
            if rank >= ranks.start:
                out += [("-U", previous, rank), ("+U", current, rank)]
            current, rank = previous, rank + 1
        i += 1
    if rank <= ranks.end and rank >= ranks.start:
        out.append(("+I", current, rank))
    del buffer[i:]
    return out


def _without_number(buffer: list[tuple[Any, list[tuple[Any, ...]]]], row: tuple[Any, ...],
                    ranks: RankRange) -> list[tuple[str, tuple[Any, ...], int]]:
    """``processElementWithoutRowNumber``: ``-D`` of the row past the rank end, ``+I``."""
    out: list[tuple[str, tuple[Any, ...], int]] = []
    if sum(len(r) for _, r in buffer) > ranks.end:
        last = buffer[-1][1].pop()
        if not buffer[-1][1]:
            buffer.pop()
        if last is row:
            return out
        out.append(("-D", last, 0))
    out.append(("+I", row, 0))
    return out


def compare_keys(order: Sequence[tuple[bool, bool]], a: tuple[Any, ...],
                  b: tuple[Any, ...]) -> int:
    """Flink's sort key comparator: per key its direction and where its NULLs go."""
    for (descending, nulls_first), x, y in zip(order, a, b):
        if x is None or y is None:
            if x is None and y is None:
                continue
            return (-1 if x is None else 1) * (1 if nulls_first else -1)
        if x != y:
            less = x < y
            return (-1 if less else 1) * (-1 if descending else 1)
    return 0




#: the rows kept per sort key (best first): the sort key (its comparator's key) and the rows
#: (each with its sort key, as Flink's equaliser compares the whole input row)
_Entries = list[tuple[Any, list[tuple[Any, ...]]]]


def replay_retractable(records: Iterable[tuple[str, tuple[Any, ...], tuple[Any, ...]]],
                       ranks: RankRange) -> Iterator[Record]:
    """Flink's Top-N records of one partition's changelog (``(kind, sort key, row)`` each, in
    arrival order), ``RetractableTopNFunction``'s rules (module docstring)."""
    compare = functools.cmp_to_key(functools.partial(compare_keys, ranks.order))
    single = ranks.start == ranks.end == 1
    numbered = (ranks.output_number and not single) or ranks.start > 1
    entries: _Entries = []
    keys: list[Any] = []  # the entries' sort keys, for a binary search
    for index, (kind, key, row) in enumerate(records):
        ordered, item = compare(key), (*row, *key)
        at = bisect.bisect_left(keys, ordered)
        if at == len(entries) or keys[at] != ordered:
            entries.insert(at, (ordered, []))
            keys.insert(at, ordered)
        rows = entries[at][1]
        if kind in ("+I", "+U"):
            emitted = _added_numbered(entries, at, item, ranks) if numbered else \
                _added(entries, at, item, ranks)
            rows.append(item)
        else:
            emitted = _retracted_numbered(entries, at, item, ranks) if numbered else \
                _retracted(entries, at, item, ranks)
            if item in rows:  # not reached by the emission (past the rank end)
                rows.remove(item)
        if not rows:
            del entries[at], keys[at]
        width = len(row)
        for sub, (out_kind, out, rank) in enumerate(emitted):
            yield index, sub, out_kind, out[:width], 1 if single else rank


def _added_rank(entries: _Entries, at: int, end: int) -> int:
    """The rank of a row added to the entry ``at`` (after the rows before it and its ties), or
    one past ``end`` when it is past it."""
    rank = 1
    for _, rows in itertools.islice(entries, at + 1):
        rank += len(rows)
        if rank > end:
            return end + 1
    return rank


def _added_numbered(entries: _Entries, at: int, item: tuple[Any, ...],
                    ranks: RankRange) -> list[tuple[str, tuple[Any, ...], int]]:
    """``emitRecordsWithRowNumber``: the rows after ``item`` shift down a rank."""
    out: list[tuple[str, tuple[Any, ...], int]] = []
    rank, current = _added_rank(entries, at, ranks.end), item
    for previous in (row for _, rows in itertools.islice(entries, at + 1, None) for row in rows):
        if rank > ranks.end:
            break
        if rank >= ranks.start:
            out += [("-U", previous, rank), ("+U", current, rank)]
        current, rank = previous, rank + 1
    if ranks.start <= rank <= ranks.end:
        out.append(("+I", current, rank))
    return out


def _added(entries: _Entries, at: int, item: tuple[Any, ...],
           ranks: RankRange) -> list[tuple[str, tuple[Any, ...], int]]:
    """``emitRecordsWithoutRowNumber``: ``-D`` of the row pushed past the end, ``+I``."""
    own = rank = _added_rank(entries, at, ranks.end)
    out: list[tuple[str, tuple[Any, ...], int]] = []
    for _, rows in itertools.islice(entries, at + 1, None) if rank <= ranks.end else []:
        if rank + len(rows) > ranks.end:
            out.append(("-D", rows[ranks.end - rank], 0))
            break
        rank += len(rows)
    if ranks.start <= own <= ranks.end:
        out.append(("+I", item, 0))
    return out


def _retracted_numbered(entries: _Entries, at: int, item: tuple[Any, ...],
                        ranks: RankRange) -> list[tuple[str, tuple[Any, ...], int]]:
    """``retractRecordWithRowNumber``: the rows after ``item`` shift up a rank, the last rank
    left empty ``-D``; removes ``item`` when it reaches it."""
    out: list[tuple[str, tuple[Any, ...], int]] = []
    rank, found = 0, False
    previous: tuple[Any, ...] = ()
    for i, (_, rows) in enumerate(entries):
        if rank > ranks.end:
            break
        if i < at:
            rank += len(rows)
            continue
        j = 0
        while j < len(rows) and rank <= ranks.end:
            current = rows[j]
            if not found and i == at and current == item:
                previous, found = current, True
                del rows[j]
                rank += 1
                continue
            if found:
                if rank >= ranks.start:
                    out += [("-U", previous, rank), ("+U", current, rank)]
                previous = current
            rank, j = rank + 1, j + 1
        if not found:
            break
    if found and ranks.start <= rank <= ranks.end:
        out.append(("-D", previous, rank))
    return out


def _retracted(entries: _Entries, at: int, item: tuple[Any, ...],
               ranks: RankRange) -> list[tuple[str, tuple[Any, ...], int]]:
    """``retractRecordWithoutRowNumber``: ``-D`` of ``item``, ``+I`` of the row that moves
    into the top N; removes ``item`` when it reaches it."""
    out: list[tuple[str, tuple[Any, ...], int]] = []
    rank, found = 1, False  # the next rank
    for i, (_, rows) in enumerate(entries):
        if rank > ranks.end:
            break
        if i < at:
            rank += len(rows)
        elif i == at:
            j = 0
            while j < len(rows) and rank <= ranks.end:
                current = rows[j]
                if not found and current == item:
                    out.append(("-D", current, rank))
                    found = True
                    del rows[j]
                    continue  # the next row takes this rank
                if found and rank == ranks.end:
                    out.append(("+I", current, rank))
                rank, j = rank + 1, j + 1
            if not found:
                break
        elif rank + len(rows) - 1 < ranks.end:
            rank += len(rows)
        else:
            out.append(("+I", rows[ranks.end - rank], 0))
            break
    return out
