"""Windows with Flink's semantics: ``TimeWindow`` [start, end), ``CountWindow``, ``GlobalWindow``.

``TimeWindow.get_window_start_with_offset`` follows Flink's Java code (``%`` truncates toward zero),
so negative timestamps and offsets land in the same windows as in Flink. Session windows merge with
``TimeWindow.intersects``, which (as in Flink) counts touching windows as intersecting.
"""

from __future__ import annotations

import operator as _op

from .functions import MAX_WATERMARK


def _java_rem(a: int, b: int) -> int:
    """Java's ``a % b`` for longs: the remainder has the sign of ``a``."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


class Window:
    """A window of elements (Flink's Window)."""

    __slots__ = ()

    def max_timestamp(self) -> int:
        raise NotImplementedError


class TimeWindow(tuple, Window):
    """The window [start, end) in milliseconds (a tuple underneath: hashing and equality in C)."""

    __slots__ = ()

    def __new__(cls, start: int, end: int) -> "TimeWindow":
        return tuple.__new__(cls, (start, end))

    start = property(_op.itemgetter(0), doc="the first millisecond of the window")
    end = property(_op.itemgetter(1), doc="the first millisecond after the window")

    def max_timestamp(self) -> int:
        return self[1] - 1

    def intersects(self, other: "TimeWindow") -> bool:
        """Flink's ``TimeWindow.intersects``: touching windows intersect."""
        return self[0] <= other[1] and self[1] >= other[0]

    def cover(self, other: "TimeWindow") -> "TimeWindow":
        return TimeWindow(min(self[0], other[0]), max(self[1], other[1]))

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """Flink's ``TimeWindow.getWindowStartWithOffset`` (Java ``%`` semantics)."""
        remainder = _java_rem(timestamp - offset, window_size)
        if remainder < 0:
            return timestamp - (remainder + window_size)
        return timestamp - remainder

    def __repr__(self) -> str:
        return f"TimeWindow(start={self[0]}, end={self[1]})"

    def __getnewargs__(self) -> tuple[int, int]:
        return (self[0], self[1])


class CountWindow(Window):
    __slots__ = ("id",)

    def __init__(self, id: int) -> None:
        self.id = id

    def max_timestamp(self) -> int:
        return MAX_WATERMARK

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CountWindow) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"CountWindow(id={self.id})"


class GlobalWindow(Window):
    """The one window of GlobalWindows; its max timestamp is Long.MAX_VALUE."""

    _instance: "GlobalWindow | None" = None

    @staticmethod
    def get() -> "GlobalWindow":
        if GlobalWindow._instance is None:
            GlobalWindow._instance = GlobalWindow()
        return GlobalWindow._instance

    def max_timestamp(self) -> int:
        return MAX_WATERMARK

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GlobalWindow)

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "GlobalWindow"
