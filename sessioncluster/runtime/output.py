"""An operator's output collector (Flink's Output): the main output and side outputs."""

from __future__ import annotations

from typing import Any, Iterable

from ..api.functions import OutputTag

#: one output record: (side output's tag_id or None for the main output, timestamp or None, value)
Record = tuple[str | None, int | None, Any]


class Output:
    """Collects the records an operator emits, in order; a driver drains them."""

    __slots__ = ("records",)

    def __init__(self) -> None:
        self.records: list[Record] = []

    def collect(self, value: Any, timestamp: int | None = None) -> None:
        self.records.append((None, timestamp, value))

    def collect_side(self, tag: OutputTag, value: Any, timestamp: int | None = None) -> None:
        self.records.append((tag.tag_id, timestamp, value))

    def collect_all(self, produced: Iterable[Any] | None, timestamp: int | None,
                    side: list[tuple[OutputTag, Any]]) -> None:
        """A user function's outputs: the values it yields (an ``(OutputTag, value)`` pair goes to
        that side output) and those it gave ``ctx.output``, in the order they were produced."""
        if produced is not None:
            append = self.records.append
            for item in produced:
                if side:
                    self._side(side, timestamp)
                if type(item) is tuple and len(item) == 2 and isinstance(item[0], OutputTag):
                    append((item[0].tag_id, timestamp, item[1]))
                else:
                    append((None, timestamp, item))
        if side:
            self._side(side, timestamp)

    def _side(self, side: list[tuple[OutputTag, Any]], timestamp: int | None) -> None:
        items = side[:]
        side.clear()
        for tag, value in items:
            self.records.append((tag.tag_id, timestamp, value))

    def drain(self) -> list[Record]:
        """The records collected since the last drain."""
        records = self.records
        self.records = []
        return records
