"""The BlobServer's store: user code and data by SHA-256 key, kept on disk in the session
directory (``<session dir>/blobs/<key>``, 0600 files in a 0700 directory). The JobManager's
BlobServer serves it; a task reads a blob it misses straight from here."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..lru import LruBytes
from .connection import session_dir
from .files import write_private


def blob_dir(name: str) -> Path:
    """Where session ``name`` keeps its blobs."""
    return session_dir(name) / "blobs"


class BlobStore:
    """Blobs by SHA-256 key: all on disk, the recently used ones also in memory, at most
    ``memory_bytes`` of them (0: none)."""

    def __init__(self, directory: Path, memory_bytes: int = 0) -> None:
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
