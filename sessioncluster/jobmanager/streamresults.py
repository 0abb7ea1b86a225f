"""A STREAMING job's results: what its collect and print sinks produce, kept by sequence number
for the client to fetch (:class:`ResultBuffer`), and the queries' ``foreachBatch`` that delivers
each micro-batch's rows to its sinks (:func:`sink_function`)."""

from __future__ import annotations

import itertools
import logging
import pickle
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..common.types import frozen
from ..graph.jobgraph import JobVertex
from ..graph.lifecycle import JobStatus
from ..graph.streamgraph import OperatorKind
from ..protocol.messages import StreamResults
from ..spark.filesink import StreamingFileSink
from ..spark.streaming import StreamQuery

printed_log = logging.getLogger("sessioncluster.print")

#: results a collect or print sink keeps for its client, in bytes, before it drops the oldest
RESULT_BUFFER_BYTES = 64 * 1024 * 1024


@dataclass(slots=True)
class ResultBuffer:
    """What one collect or print sink produced, by sequence number, for the client to fetch.

    Bounded in bytes (``max_bytes``) and, for an append-only result, in rows (``max_rows``, a
    cell's ``--max-rows``: the newest are kept); the values sent to the client go first, then
    the oldest unread ones, counted in ``dropped``. The client sees a drop as a gap in the sequence numbers it
    fetches. (An updating result keeps the byte bound only: dropping a change would corrupt
    the table its client materialises.)"""

    items: deque[tuple[int, bytes]] = field(default_factory=deque)
    next_seq: int = 0
    size: int = 0
    #: unread values dropped to stay within the bounds
    dropped: int = 0
    delivered_batches: set[tuple[str, int]] = field(default_factory=set)
    max_rows: int | None = None
    max_bytes: int = RESULT_BUFFER_BYTES
    #: the client has read every value before this sequence number
    acked: int = 0
    #: every value before this sequence number was sent to the client
    sent: int = 0

    def add(self, batch_key: tuple[str, int], values: list[bytes]) -> bool:
        if batch_key in self.delivered_batches:
            return False  # foreachBatch ran a batch again after a restart: delivered already
        self.delivered_batches.add(batch_key)
        for v in values:
            self.items.append((self.next_seq, v))
            self.next_seq += 1
            self.size += len(v)
        self._forget_read()
        while self.items and (self.size > self.max_bytes or (
                self.max_rows is not None and len(self.items) > self.max_rows)):
            seq, old = self.items.popleft()  # the ones sent to the client (no loss) first
            self.size -= len(old)
            self.dropped += seq >= self.sent
        return True

    def _forget_read(self) -> None:
        while self.items and self.items[0][0] < self.acked:
            _, old = self.items.popleft()
            self.size -= len(old)

    def since(self, seq: int, limit: int) -> tuple[list[bytes], int]:
        """Up to ``limit`` values from sequence number ``seq`` on (the ones before it are
        acknowledged: dropped), and the sequence number to ask for next. Values dropped
        unread make the first one's number more than ``seq``."""
        self.acked = max(self.acked, seq)
        self._forget_read()
        taken = list(itertools.islice(self.items, limit))
        if taken:
            self.sent = max(self.sent, taken[-1][0] + 1)
            return [v for _, v in taken], taken[-1][0] + 1
        return [], max(seq, self.next_seq)


class MaterializedResult:
    """An updating query's result materialised on the JobManager, bounded in rows, as Flink's
    SQL client's ``MaterializedCollectStreamResult`` keeps it in table mode: ``+I``/``+U``
    append their row; ``-U``/``-D`` remove the newest equal row (none: the row was evicted);
    a row that would make the table exceed ``max_rows`` evicts the OLDEST one, counted in
    ``dropped``. The client reads snapshots of it (:meth:`snapshot`), never the changes, so
    that its memory and the JobManager's stay bounded in rows whatever the query's rate.

    The changes come from Spark's stream thread, the snapshots are read on the loop: a lock."""

    def __init__(self, max_rows: int) -> None:
        if max_rows < 1:
            raise ValueError(f"max_rows must be at least 1, not {max_rows}")
        self.max_rows = max_rows
        #: position -> (row's key, the pickled ``(kind, values)`` as the job gave it)
        self._table: OrderedDict[int, tuple[Any, bytes]] = OrderedDict()
        #: row's key -> its positions, oldest first (equal rows may be there several times)
        self._positions: dict[Any, list[int]] = {}
        self._next_position = 0
        #: rows evicted to stay within ``max_rows``
        self.dropped = 0
        #: changes applied: the table's version (a snapshot is new when this moved)
        self.changes = 0
        self._batches: set[tuple[str, int]] = set()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._table)

    def add(self, batch_key: tuple[str, int], values: list[bytes]) -> bool:
        """Apply a micro-batch's changes (pickled ``(kind, values)``), once per batch."""
        with self._lock:
            if batch_key in self._batches:
                return False  # foreachBatch ran a batch again after a restart: applied already
            self._batches.add(batch_key)
            for blob in values:
                kind, row = pickle.loads(blob)
                if kind in ("+I", "+U"):
                    self._insert(frozen(row), blob)
                else:
                    self._delete(frozen(row))
                self.changes += 1
        return True

    def _insert(self, key: Any, blob: bytes) -> None:
        if len(self._table) >= self.max_rows:
            oldest, (old_key, _) = self._table.popitem(last=False)
            self._forget(old_key, oldest)
            self.dropped += 1
        position, self._next_position = self._next_position, self._next_position + 1
        self._table[position] = (key, blob)
        self._positions.setdefault(key, []).append(position)

    def _delete(self, key: Any) -> None:
        positions = self._positions.get(key)
        if positions:  # the newest equal row goes, as Flink's search from the newest
            del self._table[positions[-1]]
            self._forget(key, positions[-1])

    def _forget(self, key: Any, position: int) -> None:
        positions = self._positions[key]
        if positions[-1] == position:
            positions.pop()
        else:
            positions.remove(position)  # the oldest (evicted), of a row there several times
        if not positions:
            del self._positions[key]

    def snapshot(self) -> tuple[list[bytes], int, int]:
        """The table's rows (pickled ``(kind, values)``, oldest first), its version and how
        many rows it evicted, read at one instant."""
        with self._lock:
            return [blob for _, blob in self._table.values()], self.changes, self.dropped

    def fetch(self, job_id: str, after: int, limit: int, status: JobStatus,
              error_text: str | None) -> StreamResults:
        """The table's newest ``limit`` rows if it changed since version ``after`` (none if
        not), its version as ``next_seq``, the rows it evicted; done once the job ended (the
        status is read first: a job that ended has applied its last batch)."""
        ended = status.is_globally_terminal
        rows, version, dropped = self.snapshot()
        shown = rows[-limit:] if version != after and limit > 0 else []
        return StreamResults(job_id, "sink-0", shown, version, ended, status, error_text,
                             dropped)


class JobResults:
    """The result buffers of a job's collect and print sinks, by sink vertex id."""

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id
        self.buffers: dict[str, ResultBuffer] = {}
        #: the job's queries are built (before that, or when that failed, there is nothing)
        self.built = False
        #: the FileSinks of each query's current run, by query key
        self.file_sinks: dict[str, list[StreamingFileSink]] = {}

    def build(self, queries: list[StreamQuery]) -> None:
        """A buffer for each collect or print sink of ``queries``."""
        self.buffers = {v.vertex_id: ResultBuffer() for q in queries for v in q.sinks
                        if v.operators[-1].kind in (OperatorKind.SINK_COLLECT, OperatorKind.SINK_PRINT)}
        self.built = True

    def build_sinks(self, sink_ids: list[str], max_rows: int | None = None) -> None:
        """A buffer for each of ``sink_ids`` (a streaming SQL query's collect sink), keeping
        at most ``max_rows`` unread rows (None: the byte bound only)."""
        self.buffers = {sink_id: ResultBuffer(max_rows=max_rows) for sink_id in sink_ids}
        self.built = True

    def fetch(self, sink_id: str | None, after: int, limit: int, peek: bool, status: JobStatus,
              error_text: str | None) -> StreamResults:
        """Results from sequence number ``after`` on (``peek``: the latest ``limit``)."""
        sink_id = sink_id or None
        ended = status.is_globally_terminal
        if not self.buffers and not self.built:  # not built yet, or the job failed before
            return StreamResults(self.job_id, sink_id or "", [], after, ended, status, error_text)
        if sink_id is None and len(self.buffers) == 1:
            sink_id = next(iter(self.buffers))
        buffer = self.buffers.get(sink_id or "")
        if buffer is None:
            raise LookupError(f"job {self.job_id} has no collect or print sink {sink_id!r}")
        if peek:
            latest = [v for _, v in list(buffer.items)[-limit:]]
            return StreamResults(self.job_id, sink_id or "", latest, after, False, status, error_text)
        values, next_seq = buffer.since(after, limit)
        return StreamResults(self.job_id, sink_id or "", values, next_seq,
                             ended and next_seq >= buffer.next_seq, status, error_text)

    def sink_function(self, query: StreamQuery, checkpoint: Path,
                      program: Callable[[JobVertex], Any]) -> Callable[[Any, int], None]:
        """The query's ``foreachBatch`` for a run of it: each sink gets its rows of the
        micro-batch (the batch is computed once, cached, when the query feeds several sinks).
        Its FileSinks recover from ``checkpoint`` (the query's) now, before the run starts;
        ``program``: what the executors need of a FileSink vertex (``sink_program``)."""
        key = query.key
        files: dict[str, StreamingFileSink] = {}
        for i, v in enumerate(query.sinks):
            if v.operators[-1].kind is OperatorKind.SINK_TEXT:
                files[v.vertex_id] = StreamingFileSink(program(v), checkpoint, i)
                files[v.vertex_id].recover()
        self.file_sinks[key] = list(files.values())
        sinks = [(v.vertex_id, v.operators[-1].kind) for v in query.sinks]
        buffers = self.buffers

        def deliver(rows: Any, batch_id: int, vertex_id: str, kind: OperatorKind) -> None:
            if kind is OperatorKind.SINK_TEXT:
                files[vertex_id].write_batch(rows, batch_id)
                return
            values = rows.select("v").toArrow().column(0).to_pylist()
            if kind is OperatorKind.SINK_PRINT:
                for v in values:
                    printed_log.info("%s", v.decode("utf-8", "replace"))
            buffers[vertex_id].add((key, batch_id), values)

        def write(batch_df: Any, batch_id: int) -> None:
            if len(sinks) == 1:
                deliver(batch_df, batch_id, *sinks[0])
                return
            from pyspark.sql.functions import col

            batch_df.persist()
            try:
                for i, sink in enumerate(sinks):
                    deliver(batch_df.filter(col("sink") == i), batch_id, *sink)
            finally:
                batch_df.unpersist()

        return write

    def commit_files(self) -> None:
        """Commit the part files of every micro-batch Spark has committed (the job's thread
        calls this while it watches its queries, and when they stop or end)."""
        for sinks in self.file_sinks.values():
            for sink in sinks:
                sink.commit()
