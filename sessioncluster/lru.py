"""One least-recently-used map, bounded by a size function: the BlobServer's memory and each
TaskManager's library cache (bytes), a slot worker's unpickled user code (entries), and the
signer's replay window (entries)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Generic, Hashable, Iterator, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def _one(_: object) -> int:
    return 1


class Lru(Generic[K, V]):
    """Values by key, at most ``capacity`` in total ``size_of`` (default: one per entry); the
    least recently used go first. The entry just put is never evicted, even when it alone is
    larger than the capacity."""

    def __init__(self, capacity: int, size_of: Callable[[V], int] = _one) -> None:
        self.capacity = capacity
        self.size_of = size_of
        self.size = 0
        self._items: OrderedDict[K, V] = OrderedDict()

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def get(self, key: K) -> V | None:
        """The value (now the most recently used), or ``None``."""
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def peek(self, key: K) -> V | None:
        """The value without making it recently used."""
        return self._items.get(key)

    def put(self, key: K, value: V) -> None:
        """Add (or refresh) ``key``; evict the oldest entries while over capacity."""
        old = self._items.pop(key, None)
        if old is not None:
            self.size -= self.size_of(old)
        self._items[key] = value
        self.size += self.size_of(value)
        while self.size > self.capacity and len(self._items) > 1:
            self.pop_oldest()

    def pop_oldest(self) -> tuple[K, V]:
        key, value = self._items.popitem(last=False)
        self.size -= self.size_of(value)
        return key, value

    def oldest(self) -> tuple[K, V] | None:
        for key in self._items:
            return key, self._items[key]
        return None


class LruBytes(Lru[str, bytes]):
    """Byte strings by key, bounded by their total length."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity, len)

    @property
    def nbytes(self) -> int:
        return self.size
