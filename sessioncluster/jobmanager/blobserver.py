"""The BlobServer: the JobManager's side of the session's blob store (user code and data by
SHA-256 key), with the recently used blobs kept in memory."""

from __future__ import annotations

import os
from pathlib import Path

from ..cluster.blobstore import BlobStore

#: blobs also kept in memory (all of them are on disk); least recently used go first
MEMORY_BYTES = int(os.environ.get("SESSIONCLUSTER_BLOB_MEMORY_BYTES", 256 * 1024 * 1024))


class BlobServer(BlobStore):
    """The session's :class:`BlobStore` as the JobManager serves it: up to ``memory_bytes``
    of the recently used blobs in memory."""

    def __init__(self, directory: Path, memory_bytes: int = MEMORY_BYTES) -> None:
        super().__init__(directory, memory_bytes)
