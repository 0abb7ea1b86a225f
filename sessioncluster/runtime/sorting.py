"""A BATCH keyed operator's input, one key at a time, in bounded memory (Flink's SortingDataInput
over its external sorter; PySpark's ``ExternalSorter``).

Records are sorted on a total order of our own, ``(hash of the key, timestamp)`` with no
timestamp first (Flink's Long.MIN_VALUE) and arrival order between equal ones (the sorts and the
merge are stable), so keys of any type sort. While the worker's memory (RSS) stays under the
limit, the subtask's input is grouped in a dict (keys in the order they first came); past it,
the records read so far are sorted and spilled to a file (a run), and so on until the input
ends; the runs are then merged and streamed key by key (keys in the order of their hashes). Both
ways give each key the same records in the same order; only the order of the keys differs, which
Flink leaves undefined too (it sorts on the keys' serialized bytes). Distinct keys of equal hash
are each their own key: the first one met streams on, the others wait for it to end.
"""

from __future__ import annotations

import heapq
import itertools
import operator as _op
import os
import pickle
import tempfile
from typing import IO, Any, Callable, Iterable, Iterator

import cloudpickle

from ..api.functions import MIN_WATERMARK

#: PySpark's default ``spark.python.worker.memory`` (MB)
DEFAULT_MEMORY_MB = 512
#: the share of the memory limit the records read may take: sorting a run takes the rest (a
#: key per record)
RECORDS_SHARE = 0.8
#: records read between two looks at the worker's memory
CHECK_EVERY = 4096
#: records per pickle in a spilled run (what a run costs in memory while merged)
SPILL_BATCH = 4096


def used_memory_mb() -> float:
    """The worker's resident memory (PySpark's measure for its own spilling)."""
    from pyspark.shuffle import get_used_memory

    return float(get_used_memory())


class KeyedInput:
    """The records of a keyed operator, ``(..., key, timestamp, ...)`` with the key at
    ``key_at``, as ``(key, records)`` per key, each key's records in timestamp order.

    ``memory_mb``: the memory past which the records spill to disk (the worker's RSS; PySpark's
    ``spark.python.worker.memory``); ``run_records``: spill every so many records as well.
    The records of a key are a list when the input fit in memory, else an iterator to read before
    the next key's."""

    #: spill every so many records whatever the memory (None: by memory only)
    run_records: int | None = None

    def __init__(self, key_at: int, ts_at: int, memory_mb: float,
                 run_records: int | None = None) -> None:
        self.key_at, self.ts_at = key_at, ts_at
        self.memory_mb = memory_mb
        if run_records is not None:
            self.run_records = run_records
        #: runs spilled by the last ``groups`` (a figure for tests and benchmarks)
        self.spilled_runs = 0

    # -- the total order -------------------------------------------------------------------
    def _hash_key(self) -> Callable[[Any], int]:
        key_at = self.key_at
        return lambda r: hash(r[key_at])

    def sort(self, records: list[Any]) -> None:
        """Sort in place on (hash of key, timestamp), stably: two sorts, so that no (hash,
        timestamp) pair is made per record."""
        ts_at = self.ts_at
        timed = untimed = False
        for r in records:
            if r[ts_at] is None:
                untimed = True
            else:
                timed = True
            if timed and untimed:
                break
        if timed:
            records.sort(key=timestamp_order(self.ts_at, untimed))
        records.sort(key=self._hash_key())

    # -- grouping --------------------------------------------------------------------------
    def groups(self, records: Iterable[Any]) -> Iterator[tuple[Any, Iterable[Any]]]:
        """Each key and its records."""
        self.spilled_runs = 0
        it = iter(records)
        buffer: list[Any] = []
        bound = self.memory_mb * RECORDS_SHARE
        limit = max(bound, used_memory_mb() * 1.05)
        runs: list[IO[bytes]] = []
        run_records = self.run_records
        while True:
            chunk = list(itertools.islice(it, CHECK_EVERY if run_records is None
                                          else min(CHECK_EVERY, run_records - len(buffer))))
            buffer.extend(chunk)
            if not chunk:
                break
            if (run_records is not None and len(buffer) >= run_records) or \
                    used_memory_mb() > limit:
                self.sort(buffer)
                runs.append(_spill(buffer))
                self.spilled_runs += 1
                # freed memory stays with the process (its RSS does not fall): the next runs
                # are as long as the first one, or end when the RSS grows past it after all
                if run_records is None:
                    run_records = len(buffer)
                buffer.clear()
                limit = max(bound, used_memory_mb() * 1.05)
        if not runs:
            return self._in_memory(buffer)
        self.sort(buffer)
        ts_key = timestamp_order(self.ts_at, True)
        hash_key = self._hash_key()
        merged = heapq.merge(*[_read(f) for f in runs], buffer,
                             key=lambda r: (hash_key(r), ts_key(r)))
        return self._stream(merged)

    def _in_memory(self, records: list[Any]) -> Iterator[tuple[Any, Iterable[Any]]]:
        """The dict's way: keys in the order they first came."""
        return iter(group_by_key(records, self.key_at, self.ts_at).items())

    def _stream(self, ordered: Iterator[Any]) -> Iterator[tuple[Any, Iterator[Any]]]:
        """Key by key from records sorted on (hash, timestamp). Within one hash the first key
        met goes on; records of other keys of that hash wait (in order) until it ends."""
        key_at = self.key_at
        for _, same_hash in itertools.groupby(ordered, self._hash_key()):
            pending: Iterator[Any] = same_hash
            while True:
                first: Any = next(pending, _END)
                if first is _END:
                    break
                others: list[Any] = []
                own = _own_records(first, pending, key_at, others)
                yield first[key_at], own
                for _ in own:  # what the operator left unread
                    pass
                pending = iter(others)


_END = object()


def _own_records(first: Any, records: Iterator[Any], key_at: int,
                 others: list[Any]) -> Iterator[Any]:
    key = first[key_at]
    yield first
    for r in records:
        k = r[key_at]
        if k is key or k == key:  # a dict's equality
            yield r
        else:
            others.append(r)


def _spill(records: list[Any]) -> IO[bytes]:
    """The records in a temporary file (deleted when closed), a pickle per batch."""
    dirs = os.environ.get("SPARK_LOCAL_DIRS")
    f = tempfile.TemporaryFile(prefix="sessioncluster-sort-",
                               dir=dirs.split(",")[0] if dirs else None)
    for i in range(0, len(records), SPILL_BATCH):
        batch = records[i:i + SPILL_BATCH]
        try:
            data = pickle.dumps(batch, pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, AttributeError, TypeError):
            data = cloudpickle.dumps(batch)  # values of classes pickled by value
        f.write(len(data).to_bytes(8, "little"))
        f.write(data)
    f.seek(0)
    return f


def _read(f: IO[bytes]) -> Iterator[Any]:
    with f:
        while True:
            head = f.read(8)
            if not head:
                return
            yield from pickle.loads(f.read(int.from_bytes(head, "little")))


def group_by_key(records: Iterable[Any], key_at: int, ts_at: int) -> dict[Any, list[Any]]:
    """The records of each key, each key's list sorted by timestamp (stable, None first)."""
    groups: dict[Any, list[Any]] = {}
    get = groups.get
    timed = untimed = False
    for rec in records:
        lst = get(rec[key_at])
        if lst is None:
            groups[rec[key_at]] = [rec]
        else:
            lst.append(rec)
        if rec[ts_at] is None:
            untimed = True
        else:
            timed = True
    if timed:
        sort_key = timestamp_order(ts_at, untimed)
        for lst in groups.values():
            if len(lst) > 1:
                lst.sort(key=sort_key)
    return groups


def timestamp_order(ts_at: int, untimed: bool) -> Callable[[Any], Any]:
    """The sort key of a record's timestamp: no timestamp (only if ``untimed``) is
    Long.MIN_VALUE."""
    if not untimed:
        return _op.itemgetter(ts_at)

    def ts_or_min(r: Any) -> Any:
        t = r[ts_at]
        return MIN_WATERMARK if t is None else t
    return ts_or_min
