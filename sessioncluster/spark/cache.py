"""Cached streams (PyFlink's ``DataStream.cache()``, Flink's cluster partitions): the records of
a stream that a job computed, kept in Spark's storage so that later jobs read them instead of
running the stream's upstream again. Released by ``invalidate()`` or when the session stops."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..protocol.messages import CachedStreamInfo

log = logging.getLogger("sessioncluster.cache")


@dataclass(slots=True)
class CachedStream:
    cache_id: str
    name: str
    job_id: str
    #: the persisted RDD of the stream's plain records (``(timestamp, value)`` if timestamped)
    rdd: Any
    partitions: int
    timestamped: bool


class CacheRegistry:
    """The session's cached streams, by cache id."""

    def __init__(self) -> None:
        self.streams: dict[str, CachedStream] = {}

    def get(self, cache_id: str) -> CachedStream | None:
        return self.streams.get(cache_id)

    def add(self, stream: CachedStream) -> None:
        old = self.streams.pop(stream.cache_id, None)
        if old is not None and old.rdd is not stream.rdd:
            _unpersist(old.rdd)
        self.streams[stream.cache_id] = stream

    def invalidate(self, cache_id: str) -> bool:
        """Release a cached stream; False when there is none of that id."""
        stream = self.streams.pop(cache_id, None)
        if stream is None:
            return False
        _unpersist(stream.rdd)
        log.info("released cached stream %s (%s)", cache_id, stream.name)
        return True

    def infos(self, sc: Any) -> list[CachedStreamInfo]:
        """Every cached stream with its size in Spark's storage."""
        sizes: dict[int, int] = {}
        if self.streams and sc is not None:
            try:
                for info in sc._jsc.sc().getRDDStorageInfo():
                    sizes[int(info.id())] = int(info.memSize()) + int(info.diskSize())
            except Exception:  # noqa: BLE001 - sizes are informative only
                log.warning("could not read Spark's storage info", exc_info=True)
        return [CachedStreamInfo(s.cache_id, s.name, s.job_id, s.partitions,
                                 sizes.get(s.rdd.id(), 0), s.timestamped)
                for s in self.streams.values()]


def _unpersist(rdd: Any) -> None:
    try:
        rdd.unpersist(blocking=False)
    except Exception:  # noqa: BLE001 - Spark stopping: nothing left to free
        pass
