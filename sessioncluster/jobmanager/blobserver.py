"""The BlobServer: user code and data by SHA-256 key, kept on disk in the session directory."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..files import write_private
from ..lru import LruBytes

#: blobs also kept in memory (all of them are on disk); least recently used go first
MEMORY_BYTES = int(os.environ.get("SESSIONCLUSTER_BLOB_MEMORY_BYTES", 256 * 1024 * 1024))


class BlobServer:
    """Blobs by SHA-256 key: all on disk (0600 files in a 0700 directory), the recently used
    ones also in memory, at most ``memory_bytes`` of them."""

    def __init__(self, directory: Path, memory_bytes: int = MEMORY_BYTES) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._memory = LruBytes(memory_bytes)

    @staticmethod
    def key_of(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``; refuses data whose hash is not the key."""
        if self.key_of(data) != key:
            raise ValueError(f"blob {key[:12]} does not match its SHA-256")
        if key in self._memory:
            return
        self._memory.put(key, data)
        write_private(self.directory / key, data)

    def get(self, key: str) -> bytes | None:
        data = self._memory.get(key)
        if data is None and len(key) == 64 and all(c in "0123456789abcdef" for c in key):
            path = self.directory / key
            if path.exists():
                data = path.read_bytes()
                self._memory.put(key, data)
        return data

    def missing(self, keys: set[str]) -> list[str]:
        return sorted(k for k in keys if self.get(k) is None)
