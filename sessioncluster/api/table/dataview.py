"""PyFlink's data views (``pyflink.table.data_view``): a list or a map inside the accumulator of
an ``AggregateFunction``, declared in its accumulator type as ``DataTypes.LIST_VIEW(...)`` /
``DataTypes.MAP_VIEW(...)``.

Flink backs a view by its state backend, so that a large accumulator is not read whole for each
record. Here an accumulator is one value of the keyed state (Spark's state store), a view
included: the API is Flink's, the storage the accumulator's own.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import ItemsView, Iterable, Iterator, KeysView, ValuesView
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


class DataView(ABC):
    """A view of a collection in an aggregate function's accumulator."""

    @abstractmethod
    def clear(self) -> None:
        """Remove every element."""


class ListView(DataView, Generic[T]):
    """A list in an accumulator (``DataTypes.LIST_VIEW(element_type)``)."""

    def __init__(self) -> None:
        self._list: list[T] = []

    def get(self) -> Iterable[T]:
        """The elements, in the order added."""
        return self._list

    def add(self, value: T) -> None:
        self._list.append(value)

    def add_all(self, values: Iterable[T]) -> None:
        self._list.extend(values)

    def clear(self) -> None:
        self._list = []

    def __iter__(self) -> Iterator[T]:
        return iter(self._list)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ListView) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list

    def __repr__(self) -> str:
        return f"ListView({self._list!r})"


class MapView(DataView, Generic[K, V]):
    """A map in an accumulator (``DataTypes.MAP_VIEW(key_type, value_type)``); iterating it
    gives its keys, as a dict's."""

    def __init__(self) -> None:
        self._dict: dict[K, V] = {}

    def get(self, key: K) -> V:
        """The key's value (KeyError if it has none)."""
        return self._dict[key]

    def put(self, key: K, value: V) -> None:
        self._dict[key] = value

    def put_all(self, dict_value: dict[K, V]) -> None:
        self._dict.update(dict_value)

    def remove(self, key: K) -> None:
        del self._dict[key]

    def contains(self, key: K) -> bool:
        return key in self._dict

    def items(self) -> ItemsView[K, V]:
        return self._dict.items()

    def keys(self) -> KeysView[K]:
        return self._dict.keys()

    def values(self) -> ValuesView[V]:
        return self._dict.values()

    def is_empty(self) -> bool:
        return not self._dict

    def clear(self) -> None:
        self._dict.clear()

    def __getitem__(self, key: K) -> V:
        return self.get(key)

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)

    def __contains__(self, key: Any) -> bool:
        return self.contains(key)

    def __iter__(self) -> Iterator[K]:
        return iter(self._dict.keys())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MapView) and self._dict == other._dict

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"MapView({self._dict!r})"
