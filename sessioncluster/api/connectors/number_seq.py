"""PyFlink's ``NumberSequenceSource``: the numbers ``start`` to ``end`` (both included)."""

from __future__ import annotations


class NumberSequenceSource:
    """A bounded source of the longs ``start`` .. ``end``, split evenly over its subtasks."""

    def __init__(self, start: int, end: int) -> None:
        if end < start:
            raise ValueError(f"the end ({end}) of a number sequence must not be before its start ({start})")
        self.start = int(start)
        self.end = int(end)

    def __repr__(self) -> str:
        return f"NumberSequenceSource({self.start}, {self.end})"
