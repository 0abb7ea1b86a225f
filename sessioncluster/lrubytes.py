"""Byte strings by key, bounded by total size: the BlobServer's memory and each TaskManager's
library cache."""

from __future__ import annotations

from collections import OrderedDict


class LruBytes:
    """Blobs by key, at most ``capacity`` bytes in all; the least recently used go first.

    A single blob larger than the capacity is kept alone (the one just put is never evicted).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.nbytes = 0
        self._blobs: OrderedDict[str, bytes] = OrderedDict()

    def __contains__(self, key: str) -> bool:
        return key in self._blobs

    def __len__(self) -> int:
        return len(self._blobs)

    def get(self, key: str) -> bytes | None:
        data = self._blobs.get(key)
        if data is not None:
            self._blobs.move_to_end(key)
        return data

    def put(self, key: str, data: bytes) -> None:
        if key in self._blobs:
            self._blobs.move_to_end(key)
            return
        self._blobs[key] = data
        self.nbytes += len(data)
        while self.nbytes > self.capacity and len(self._blobs) > 1:
            _, old = self._blobs.popitem(last=False)
            self.nbytes -= len(old)
