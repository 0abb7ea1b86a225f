"""``GROUPING SETS``, ``ROLLUP`` and ``CUBE`` as Flink's planner expands them.

Flink (Calcite) runs a group aggregation with grouping sets as an ``Expand`` of each input row
into one row per grouping set, the keys outside the set NULL, in the order of Calcite's
``ImmutableBitSet.COMPARATOR`` over the sets (each a set of the keys' positions in the
aggregation's input): a set before the sets it contains, else by its smallest differing key.
A STREAMING changelog over bounded input follows that order, record by record (PyFlink 2.3:
``GROUPING SETS ((), (v), (k))`` over ``(k, v)`` emits the ``k`` set's record first, then
``v``'s, then the empty set's).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable

from sqlglot import exp

#: a grouping set: the positions of its keys in :func:`grouping_sets`'s list of keys
GroupingSet = tuple[int, ...]


def grouping_sets(group: exp.Group) -> tuple[list[exp.Expr], list[GroupingSet]] | None:
    """The distinct keys of a ``GROUP BY`` (in the order written) and its grouping sets, in
    the order written (a ``ROLLUP`` from all its keys down, a ``CUBE``'s subsets from all);
    None for a plain ``GROUP BY``, or nested grouping constructs, or a set written twice."""
    keys: list[exp.Expr] = []

    def position(key: exp.Expr) -> int:
        key = key.unnest()
        for i, known in enumerate(keys):
            if known == key:
                return i
        keys.append(key)
        return len(keys) - 1

    options: list[list[GroupingSet]] = []
    constructs = 0
    for item in group.expressions:
        if isinstance(item, (exp.Rollup, exp.Cube, exp.GroupingSets)):
            constructs += 1
            found = _item_sets(item, position)
            if found is None:
                return None
            options.append(found)
        else:
            options.append([(position(item),)])
    sets = [tuple(sorted(set(itertools.chain(*combination))))
            for combination in itertools.product(*options)]
    if not constructs or len(set(sets)) != len(sets):
        return None
    return keys, sets


def _item_sets(item: exp.Expr, at: Callable[[exp.Expr], int]
               ) -> list[GroupingSet] | None:
    """The sets of one ``ROLLUP``, ``CUBE`` or ``GROUPING SETS`` (``at``: a key's position)."""
    parts = list(item.expressions)
    if isinstance(item, exp.Rollup):
        return [tuple(at(p) for p in parts[:n]) for n in range(len(parts), -1, -1)]
    if isinstance(item, exp.Cube):
        bits = len(parts)
        return [tuple(at(p) for j, p in enumerate(parts) if mask >> (bits - 1 - j) & 1)
                for mask in range(2 ** bits - 1, -1, -1)]
    sets: list[GroupingSet] = []
    for part in parts:
        if isinstance(part, (exp.Rollup, exp.Cube, exp.GroupingSets)):
            return None
        members = part.expressions if isinstance(part, exp.Tuple) else [part]
        sets.append(tuple(at(m) for m in members))
    return sets


def flink_order(sets: list[GroupingSet], positions: list[int]) -> list[GroupingSet]:
    """``sets`` in the order Flink expands them, ``positions[i]`` being key ``i``'s column
    position in the aggregation's input (Calcite's ``ImmutableBitSet.COMPARATOR``)."""
    def bits(s: GroupingSet) -> list[int]:
        return sorted(positions[i] for i in s)

    def compare(a: GroupingSet, b: GroupingSet) -> int:
        x, y = set(bits(a)), set(bits(b))
        if x == y:
            return 0
        if x > y:
            return -1
        if y > x:
            return 1
        for p, q in itertools.zip_longest(sorted(x), sorted(y), fillvalue=-1):
            if p != q:  # Calcite: the set whose next bit is missing (-1) or smaller first
                return -1 if p < q else 1
        return 0

    return sorted(sets, key=functools.cmp_to_key(compare))
