"""PyFlink's ``Row`` and ``RowKind`` (``pyflink.common.types``)."""

from __future__ import annotations

from enum import Enum
from typing import Any, Iterator


class RowKind(Enum):
    """The kind of change a row stands for in a changelog."""

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    def short_string(self) -> str:
        return ("+I", "-U", "+U", "-D")[self.value]

    def __str__(self) -> str:
        return self.short_string()


_SLOTS = ("_fields", "_values", "_row_kind", "_from_dict")


class Row:
    """A record of positional or named fields, as PyFlink's ``Row``.

    >>> Row(1, 'a')[1], Row(name='a', n=1).n, Row(name='a', n=1).as_dict()
    ('a', 1, {'name': 'a', 'n': 1})
    >>> Person = Row('name', 'age')   # a row factory, as in PyFlink
    >>> Person('Alice', 11)
    Row(name='Alice', age=11)

    As in PyFlink, a Row is not a tuple: it never equals one, and two Rows are equal when their
    kinds and fields are (named rows: by name).
    """

    _fields: list[str]
    _values: list[Any]
    _row_kind: RowKind

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args and kwargs:
            raise ValueError("Can not use both args and kwargs to create Row")
        if kwargs:
            object.__setattr__(self, "_fields", list(kwargs))
            object.__setattr__(self, "_values", list(kwargs.values()))
            object.__setattr__(self, "_from_dict", True)
        else:
            object.__setattr__(self, "_values", list(args))
        object.__setattr__(self, "_row_kind", RowKind.INSERT)

    # -- PyFlink's methods ---------------------------------------------------------------------
    def as_dict(self, recursive: bool = False) -> dict[str, Any]:
        """The named fields as a dict (nested Rows, lists and dicts too when ``recursive``)."""
        if not hasattr(self, "_fields"):
            raise TypeError("Cannot convert a Row class into dict")

        def conv(obj: Any) -> Any:
            if isinstance(obj, Row):
                return obj.as_dict(True)
            if isinstance(obj, list):
                return [conv(o) for o in obj]
            if isinstance(obj, dict):
                return {k: conv(v) for k, v in obj.items()}
            return obj

        if recursive:
            return dict(zip(self._fields, (conv(v) for v in self._values)))
        return dict(zip(self._fields, self._values))

    def get_row_kind(self) -> RowKind:
        return self._row_kind

    def set_row_kind(self, row_kind: RowKind) -> None:
        if not isinstance(row_kind, RowKind):
            raise TypeError(f"set_row_kind takes a RowKind, not {row_kind!r}")
        object.__setattr__(self, "_row_kind", row_kind)

    @staticmethod
    def of_kind(row_kind: RowKind, *args: Any, **kwargs: Any) -> "Row":
        """A Row of the values with the RowKind ``row_kind`` (a changelog's record)."""
        row = Row(*args, **kwargs)
        row.set_row_kind(row_kind)
        return row

    def set_field_names(self, field_names: list[str]) -> None:
        object.__setattr__(self, "_fields", list(field_names))

    def get_fields_by_names(self, names: list[str]) -> list[Any]:
        if not hasattr(self, "_fields") or any(n not in self._fields for n in names):
            raise ValueError(f"the field names {names} are not all in {getattr(self, '_fields', [])}")
        return [self._values[self._fields.index(n)] for n in names]

    # -- sequence and attribute access ---------------------------------------------------------
    def __call__(self, *args: Any) -> "Row":
        """A row of this factory's field names (``Row('name', 'age')('Alice', 11)``)."""
        if len(args) > len(self):
            raise ValueError(f"Can not create Row with fields {self}, expected {len(self)} values "
                             f"but got {args}")
        row = Row(*args)
        row.set_field_names(list(self._values))
        return row

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, (int, slice)):
            return self._values[item]
        try:
            return self._values[self._fields.index(item)]
        except (AttributeError, ValueError):
            raise KeyError(item) from None

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, (int, slice)):
            self._values[key] = value
            return
        try:
            self._values[self._fields.index(key)] = value
        except (AttributeError, ValueError):
            raise KeyError(key) from None

    def __getattr__(self, item: str) -> Any:
        if item.startswith("_"):
            raise AttributeError(item)
        try:
            return self._values[self._fields.index(item)]
        except (AttributeError, ValueError):
            raise AttributeError(item) from None

    def __setattr__(self, key: str, value: Any) -> None:
        if key in _SLOTS:
            object.__setattr__(self, key, value)
        else:
            raise RuntimeError("Row is read-only")

    def __contains__(self, item: Any) -> bool:
        if hasattr(self, "_fields"):
            return item in self._fields
        return item in self._values

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Row) or self._row_kind != other._row_kind:
            return False
        if hasattr(self, "_fields"):
            if not hasattr(other, "_fields") or sorted(self._fields) != sorted(other._fields):
                return False
            return all(self[f] == other[f] for f in self._fields)
        return not hasattr(other, "_fields") and self._values == other._values

    def __hash__(self) -> int:
        if hasattr(self, "_fields"):
            return hash((self._row_kind, tuple(sorted(zip(self._fields, map(repr, self._values))))))
        return hash((self._row_kind, tuple(map(repr, self._values))))

    def __reduce__(self) -> Any:
        return (_make_row, (getattr(self, "_fields", None), self._values, self._row_kind))

    def __repr__(self) -> str:
        if hasattr(self, "_fields"):
            return "Row(%s)" % ", ".join(f"{k}={v!r}" for k, v in zip(self._fields, self._values))
        return "<Row(%s)>" % ", ".join(repr(v) for v in self._values)


def _make_row(fields: list[str] | None, values: list[Any], row_kind: RowKind) -> Row:
    row = Row(*values)
    if fields is not None:
        row.set_field_names(fields)
    row.set_row_kind(row_kind)
    return row


def rows_as_tuples(value: Any) -> Any:
    """``value`` with every :class:`Row` in it (nested in rows and lists too) as a tuple, as
    Arrow and Spark take a struct."""
    if isinstance(value, Row):
        return tuple(rows_as_tuples(v) for v in value)
    if isinstance(value, list):
        return [rows_as_tuples(v) for v in value]
    return value


def pyflink_value(value: Any) -> Any:
    """A value as Spark gives it (a struct a pyspark ``Row``, a MAP a dict, an ARRAY a list)
    as PyFlink gives it: a struct a :class:`Row` of its field names, through lists and maps.
    The inverse of :func:`rows_as_tuples`; pyspark's Row is told by its ``asDict``, so that
    this imports no pyspark."""
    if isinstance(value, tuple) and hasattr(value, "asDict"):
        fields = getattr(value, "__fields__", None)
        row = Row(*(pyflink_value(v) for v in value))
        if fields:
            row.set_field_names(list(fields))
        return row
    if isinstance(value, list):
        return [pyflink_value(v) for v in value]
    if isinstance(value, dict):
        return {k: pyflink_value(v) for k, v in value.items()}
    return value


def frozen(value: Any) -> Any:
    """A hashable stand-in for a value of a row (lists, dicts and ROWs inside made tuples), to
    find equal rows of a changelog by."""
    if isinstance(value, dict):
        return tuple((k, frozen(v)) for k, v in value.items())
    if isinstance(value, (list, tuple, Row)):
        return tuple(frozen(v) for v in value)
    return value
