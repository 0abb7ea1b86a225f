"""PyFlink's ``ChangelogMode`` (the kinds of changes a changelog holds) and what
``from_changelog_stream`` does with a bounded DataStream's records before they are a table:
Flink's input conversion (an insert-only mode refuses other kinds at runtime) and, for an
upsert changelog, its ``ChangelogNormalize`` (a ``-U`` before each update of a known key, an
update of an unknown key an ``+I``, a delete's row the key's last one).

>>> sorted(k.short_string() for k in ChangelogMode.upsert().contained_kinds)
['+I', '+U', '-D']
>>> [str(r.get_row_kind()) for r in changelog_records(
...     [Row.of_kind(RowKind.INSERT, 'a', 1), Row.of_kind(RowKind.UPDATE_AFTER, 'a', 2)],
...     ChangelogMode.upsert(), [0])]
['+I', '-U', '+U']
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from ...common.typeinfo import Types
from ...common.types import Row, RowKind
from ..functions import KeyedProcessFunction
from ..state import ValueStateDescriptor

__all__ = ["ChangelogMode"]

#: the columns a bounded changelog table (``from_changelog_stream``) carries after its own,
#: read by the planner of bounded STREAMING queries: a record's position in the changelog, its
#: place within that position (0 for a source; an aggregation's ``-U`` and ``+U`` share one),
#: and its RowKind (``+I``/``-U``/``+U``/``-D``)
SEQ_COLUMN, SUB_COLUMN, ROW_KIND_COLUMN = "__cl_seq", "__cl_sub", "__flink_rowkind"
#: the start of the name of such a table's temporary view
CHANGELOG_VIEW_PREFIX = "__flink_changelog_"
#: the name Flink's planner gives the table of a DataStream (``from_changelog_stream``), in
#: its messages
DATASTREAM_SOURCE = "*anonymous_datastream_source$1*"


class ChangelogMode:
    """The set of changes contained in a changelog (PyFlink's ``ChangelogMode``)."""

    def __init__(self, contained_kinds: frozenset[RowKind], key_only_deletes: bool = False
                 ) -> None:
        #: the RowKinds a changelog of this mode may contain
        self.contained_kinds = contained_kinds
        self._key_only_deletes = key_only_deletes

    @staticmethod
    def insert_only() -> "ChangelogMode":
        """Shortcut for a simple INSERT-only changelog."""
        return ChangelogMode(frozenset({RowKind.INSERT}))

    @staticmethod
    def upsert() -> "ChangelogMode":
        """Shortcut for an upsert changelog: idempotent updates on a key, no UPDATE_BEFORE."""
        return ChangelogMode(frozenset({RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.DELETE}),
                             key_only_deletes=True)

    @staticmethod
    def all() -> "ChangelogMode":
        """Shortcut for a changelog that can contain all RowKinds."""
        return ChangelogMode(frozenset(RowKind))

    def contains_only_inserts(self) -> bool:
        """Only INSERT (Java's ``containsOnly(RowKind.INSERT)``)."""
        return self.contained_kinds == {RowKind.INSERT}

    def is_upsert(self) -> bool:
        """Updates without UPDATE_BEFORE (a key is needed to apply them)."""
        return RowKind.UPDATE_AFTER in self.contained_kinds \
            and RowKind.UPDATE_BEFORE not in self.contained_kinds

    def key_only_deletes(self) -> bool:
        """A DELETE carries only the key's values (an upsert changelog's)."""
        return self._key_only_deletes

    def to_string(self) -> str:
        """Flink's ``toString()``: the kinds in RowKind's order (``~DELETE`` for key-only
        deletes), ``[INSERT, UPDATE_AFTER, ~DELETE]``."""
        names = [("~" if k is RowKind.DELETE and self._key_only_deletes else "") + k.name
                 for k in RowKind if k in self.contained_kinds]
        return "[" + ", ".join(names) + "]"


def kind_of(record: Any) -> RowKind:
    """A DataStream record's RowKind (a value that is not a Row is an insertion)."""
    return record.get_row_kind() if isinstance(record, Row) else RowKind.INSERT


def check_insert_only(records: Sequence[Any]) -> None:
    """Fail as Flink's input conversion does for a record that is not an insertion when the
    table's changelog mode is insert-only."""
    for record in records:
        if kind_of(record) is not RowKind.INSERT:
            raise RuntimeError("Error during input conversion. Conversion expects insert-only "
                               f"records but DataStream API record contains: "
                               f"{kind_of(record).name}")


def upsert_refusal(source: str) -> str:
    """Flink's refusal of an upsert changelog without a primary key."""
    return (f"Table '{source}' produces a changelog stream that contains UPDATE_AFTER but no "
            "UPDATE_BEFORE. This requires defining a primary key constraint on the table.")


def batch_refusal(source: str) -> str:
    """Flink's refusal of a changelog that is not insert-only in BATCH mode."""
    return ("Querying a table in batch mode is currently only possible for INSERT-only table "
            f"sources. But the source for table '{source}' produces other changelog messages "
            "than just INSERT.")


def changelog_records(records: Sequence[Any], mode: ChangelogMode,
                      key: Sequence[int] | None) -> list[Row]:
    """The records as the table's changelog: their RowKinds as they are, or, for an upsert
    ``mode`` (``key``: the primary key's positions), as Flink's ``ChangelogNormalize`` emits
    them: a key's first row ``+I``, a changed row ``-U`` (the row before) then ``+U``, an
    unchanged one nothing, a delete ``-D`` of the key's last row (nothing for an unknown
    key)."""
    if mode.contains_only_inserts():
        check_insert_only(records)
    if not mode.is_upsert():
        return [_row(kind_of(r), r) for r in records]
    assert key is not None
    last: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    return [row for record in records for row in upsert_change(record, key, last)]


def upsert_change(record: Any, key: Sequence[int], last: dict[tuple[Any, ...], tuple[Any, ...]]
                  ) -> list[Row]:
    """One record of an upsert changelog as ``ChangelogNormalize`` emits it (see
    :func:`changelog_records`), ``last`` (each key's last row) updated."""
    values = tuple(record) if isinstance(record, (Row, tuple, list)) else (record,)
    k = tuple(values[i] for i in key)
    before = last.get(k)
    if kind_of(record) in (RowKind.INSERT, RowKind.UPDATE_AFTER):
        last[k] = values
        if before is None:
            return [_row(RowKind.INSERT, values)]
        if before != values:
            return [_row(RowKind.UPDATE_BEFORE, before), _row(RowKind.UPDATE_AFTER, values)]
        return []
    if before is None:
        return []
    del last[k]
    return [_row(RowKind.DELETE, before)]


class NumberRecords:
    """The map numbering an unbounded upsert changelog's records in their arrival order (a
    record becomes ``(number, record)``) before :class:`UpsertNormalize` regroups them by key:
    the number is then the table's position. The numbers start at the clock's nanoseconds
    when a task first maps (later tasks start later) and increase by one a record."""

    def __init__(self) -> None:
        self.next: int | None = None

    def __call__(self, record: Any) -> tuple[int, Any]:
        import time

        if self.next is None:
            self.next = time.time_ns()
        number, self.next = self.next, self.next + 1
        return number, record


class UpsertKey:
    """The key of an upsert changelog's record (of a ``(number, record)`` pair when
    ``numbered``): its values at the primary key's positions."""

    def __init__(self, key: Sequence[int], numbered: bool = False) -> None:
        self.key = list(key)
        self.numbered = numbered

    def __call__(self, record: Any) -> tuple[Any, ...]:
        if self.numbered:
            record = record[1]
        values = tuple(record) if isinstance(record, (Row, tuple, list)) else (record,)
        return tuple(values[i] for i in self.key)


class UpsertNormalize(KeyedProcessFunction):
    """Flink's ``ChangelogNormalize`` of an unbounded upsert changelog, keyed by its primary
    key (:class:`UpsertKey`): the key's last row in keyed state, each record's changes as
    :func:`upsert_change` gives them. ``numbered``: the records are :class:`NumberRecords`'
    pairs, and each change carries the record's number and its place among the record's
    changes (``-U`` 0, ``+U`` 1) as two last fields."""

    def __init__(self, key: Sequence[int], numbered: bool = False) -> None:
        self.key = list(key)
        self.numbered = numbered
        self.state: Any = None

    def open(self, runtime_context: Any) -> None:
        self.state = runtime_context.get_state(
            ValueStateDescriptor("changelog-normalize", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        values = self.state.value()
        last = {} if values is None else {tuple(values[i] for i in self.key): tuple(values)}
        number, record = value if self.numbered else (None, value)
        out = upsert_change(record, self.key, last)
        if last:
            self.state.update(next(iter(last.values())))
        else:
            self.state.clear()
        if number is None:
            return out
        return [_row(row.get_row_kind(), (*row, number, sub)) for sub, row in enumerate(out)]


def _row(kind: RowKind, values: Any) -> Row:
    row = Row(*(tuple(values) if isinstance(values, (Row, tuple, list)) else (values,)))
    row.set_row_kind(kind)
    return row


def positioned(rows: Sequence[Row]) -> list[tuple[Any, ...]]:
    """The changelog's rows with their position (:data:`SEQ_COLUMN`, :data:`SUB_COLUMN` 0)
    and RowKind (:data:`ROW_KIND_COLUMN`)."""
    return [(*row, seq, 0, row.get_row_kind().short_string()) for seq, row in enumerate(rows)]
