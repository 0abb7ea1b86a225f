"""The FileSink's writer and committer, as Flink's: buckets, part files and their lifecycle
(in-progress → pending → finished), the same in both modes. No Spark here.

A sink subtask's run (:class:`SubtaskWriter`) writes each bucket's records into an in-progress
file ``<bucket>/.<prefix>-<uid>-<index><suffix>.inprogress.<token>``, rolls it by the rolling
policy, and at a checkpoint (a STREAMING micro-batch) or at the end of input (BATCH) closes every
open one: they become :class:`PendingFile` s, handed to whoever commits (the JobMaster in BATCH,
the query's ``foreachBatch`` bookkeeping in STREAMING). Committing renames a pending file to its
final name, idempotently. ``uid`` is a random UUID of the subtask's run, so a restarted or
restored subtask never writes a name another run wrote; ``token`` tells whose in-progress files
are whose when the leftovers of failed attempts are cleaned up.

:class:`ManifestLog` is STREAMING's bookkeeping, one JSON file per micro-batch under the query's
checkpoint directory: the uids of the batch (written before its files) and its pending files
(after); a batch Spark has committed is committed here too, one Spark has not is undone.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from ..api.connectors.file_system import FileSink

log = logging.getLogger("sessioncluster.filesink")

#: rows of Arrow tables a bulk part file gathers before its writer gets them (``batch_copy``)
WRITE_TABLE_ROWS = 131072
#: the marker between an in-progress file's final name and its token
IN_PROGRESS = ".inprogress."
_TOKEN_NAMESPACE = uuid.UUID("6c0f5a4e-3f0e-4a53-9a77-1b0a1c8f2d11")


def part_file_name(prefix: str, uid: str, index: int, suffix: str) -> str:
    """Flink's part file name: ``<prefix>-<uid>-<partFileIndex><suffix>``."""
    return f"{prefix}-{uid}-{index}{suffix}"


def in_progress_name(final_name: str, token: str) -> str:
    """The hidden name of a part file being written: ``.<final name>.inprogress.<token>``."""
    return f".{final_name}{IN_PROGRESS}{token}"


def batch_token(job_id: str, vertex_id: str) -> str:
    """The in-progress token of a BATCH job's sink: every attempt of every run of the job has
    it, so what failed attempts left is found (and deleted) when the job ends."""
    return str(uuid.uuid5(_TOKEN_NAMESPACE, f"batch/{job_id}/{vertex_id}"))


def checkpoint_token(uid: str, checkpoint_id: int) -> str:
    """The in-progress token of a subtask run's files of one checkpoint (micro-batch): the same
    when the batch's task runs again, so a retried task writes over its own files."""
    return str(uuid.uuid5(_TOKEN_NAMESPACE, f"checkpoint/{uid}/{checkpoint_id}"))


@dataclass(slots=True)
class PendingFile:
    """A closed part file waiting for its commit."""

    in_progress: str
    final: str
    records: int
    size: int

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_json(text: str) -> "PendingFile":
        return PendingFile(**json.loads(text))


class BucketContext:
    """What a BucketAssigner may ask (Flink's ``BucketAssigner.Context``)."""

    __slots__ = ("processing_time", "watermark", "record_timestamp")

    def __init__(self) -> None:
        self.processing_time = 0
        self.watermark = -(2**63)
        self.record_timestamp: int | None = None

    def current_processing_time(self) -> int:
        return self.processing_time

    def current_watermark(self) -> int:
        return self.watermark

    def timestamp(self) -> int | None:
        return self.record_timestamp


class _PartFile:
    """One open in-progress part file and its writer (an encoder, or a bulk writer)."""

    def __init__(self, sink: FileSink, path: Path, final: Path, now_ms: int) -> None:
        self.path, self.final = path, final
        self.stream: BinaryIO = open(path, "wb")  # closed by close_for_commit() or discard()
        self.bulk = sink.writer_factory.create(self.stream) if sink.is_bulk else None
        self.encoder = sink.encoder
        self.size = self.records = 0
        self.created_ms = self.last_write_ms = now_ms
        #: Arrow tables not handed to the bulk writer yet (``write_batch``)
        self.tables: list[Any] = []
        self.table_rows = 0

    def write(self, element: Any, now_ms: int) -> None:
        if self.bulk is not None:
            self.bulk.add_element(element)
        else:
            assert self.encoder is not None
            data = self.encoder.encode(element)
            self.stream.write(data)
            self.size += len(data)
        self.records += 1
        self.last_write_ms = now_ms

    def write_batch(self, table: Any, now_ms: int) -> None:
        """An Arrow table of the bulk writer's row type (``batch_copy``): gathered with the
        next ones up to ``WRITE_TABLE_ROWS`` rows, then handed to the writer in one piece (a
        Parquet row group, an ORC stripe; a file's reader gives small tables)."""
        self.tables.append(table)
        self.table_rows += table.num_rows
        if self.table_rows >= WRITE_TABLE_ROWS:
            self._write_tables()
        self.records += table.num_rows
        self.last_write_ms = now_ms

    def _write_tables(self) -> None:
        import pyarrow as pa

        assert self.bulk is not None
        tables, self.tables, self.table_rows = self.tables, [], 0
        if tables:
            gathered = pa.concat_tables([pa.Table.from_batches([t]) if isinstance(t, pa.RecordBatch)
                                         else t for t in tables])
            self.bulk.add_batch(gathered.combine_chunks())

    def close_for_commit(self) -> PendingFile:
        """Flink's ``closeForCommit``: a bulk writer is flushed and finished, then the stream
        is closed (durable: fsync) and the file is pending."""
        if self.bulk is not None:
            self._write_tables()
            self.bulk.flush()
            self.bulk.finish()
        self.stream.flush()
        os.fsync(self.stream.fileno())
        self.size = self.stream.tell()
        self.stream.close()
        return PendingFile(str(self.path), str(self.final), self.records, self.size)

    def discard(self) -> None:
        try:
            self.stream.close()
        finally:
            Path(self.path).unlink(missing_ok=True)


class SubtaskWriter:
    """The part files of one sink subtask's run (Flink's ``Buckets`` of one ``SinkWriter``).

    ``next_index``: the next part file index of each bucket (this run's, carried from one
    checkpoint to the next in STREAMING); ``clock``: processing time in ms.
    """

    def __init__(self, sink: FileSink, uid: str, token: str,
                 next_index: dict[str, int] | None = None,
                 clock: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.sink, self.uid, self.token, self.clock = sink, uid, token, clock
        self.next_index: dict[str, int] = dict(next_index or {})
        self.open: dict[str, _PartFile] = {}
        self.pending: list[PendingFile] = []
        self.context = BucketContext()
        self.base = Path(sink.base_path)
        self._assign = sink.bucket_assigner.get_bucket_id
        self._policy = sink.rolling_policy

    def write(self, element: Any, timestamp: int | None = None) -> None:
        """Write ``element`` into its bucket's part file (rolling it first if due)."""
        now = self.clock()
        ctx = self.context
        ctx.processing_time, ctx.record_timestamp = now, timestamp
        bucket = self._assign(element, ctx)
        if not isinstance(bucket, str):
            raise TypeError(f"a BucketAssigner's get_bucket_id returns a str, not {bucket!r}")
        self._part_for(bucket, now).write(element, now)

    def write_batch(self, table: Any) -> None:
        """Write an Arrow table of records into one bucket's part file: the bucket of its first
        record (``batch_copy`` takes only assigners that do not look at the record)."""
        if not table.num_rows:
            return
        now = self.clock()
        ctx = self.context
        ctx.processing_time, ctx.record_timestamp = now, None
        bucket = self._assign(None, ctx)
        self._part_for(bucket, now).write_batch(table, now)

    def _part_for(self, bucket: str, now: int) -> _PartFile:
        """The bucket's in-progress part file, rolled first if the rolling policy says so."""
        part = self.open.get(bucket)
        if part is not None and (self._policy.should_roll_on_event(part.size)
                                 or self._policy.should_roll_on_processing_time(
                                     part.created_ms, part.last_write_ms, now)):
            self.pending.append(part.close_for_commit())
            part = None
        return part if part is not None else self._new_part(bucket, now)

    def _new_part(self, bucket: str, now: int) -> _PartFile:
        directory = self.base / bucket if bucket else self.base
        if bucket and (Path(bucket).is_absolute() or ".." in Path(bucket).parts):
            raise ValueError(f"a bucket id is a path inside the base path, not {bucket!r}")
        directory.mkdir(parents=True, exist_ok=True)
        index = self.next_index.get(bucket, 0)
        self.next_index[bucket] = index + 1
        config = self.sink.output_file_config
        final = part_file_name(config.part_prefix, self.uid, index, config.part_suffix)
        part = _PartFile(self.sink, directory / in_progress_name(final, self.token),
                         directory / final, now)
        self.open[bucket] = part
        return part

    def close_for_commit(self) -> list[PendingFile]:
        """A checkpoint, or the end of input: every open part file is closed; all that are
        pending since the last call are returned."""
        for part in self.open.values():
            self.pending.append(part.close_for_commit())
        self.open.clear()
        pending, self.pending = self.pending, []
        return pending

    def abort(self) -> None:
        """A failed attempt: its in-progress files are deleted."""
        for part in self.open.values():
            part.discard()
        self.open.clear()
        for pending in self.pending:
            Path(pending.in_progress).unlink(missing_ok=True)
        self.pending = []


def write_partition(sink: FileSink, uid: str, token: str, elements: Iterable[Any],
                    next_index: dict[str, int] | None = None, tables: bool = False
                    ) -> tuple[list[PendingFile], dict[str, int]]:
    """All of one subtask's ``elements`` into part files: their pending files and the next
    part file index of each bucket (nothing written is left behind when it fails). With
    ``tables`` the elements are Arrow tables of records (``batch_copy``), not records."""
    writer = SubtaskWriter(sink, uid, token, next_index)
    try:
        write = writer.write_batch if tables else writer.write
        for element in elements:
            write(element)
        return writer.close_for_commit(), writer.next_index
    except BaseException:
        writer.abort()
        raise


def batch_copy(source_format: Any, sink: Any) -> Callable[[str], Iterator[Any]] | None:
    """How a FileSource's records go straight into a bulk FileSink as Arrow tables, no Row made
    (a chain of just the two: a copy): a function from a file's path to its records as tables
    of the sink's columns. None when a record has to be a Row: the source format or the sink's
    writer takes Rows only, their columns differ in number or type, or the BucketAssigner is
    the user's (it looks at each record); then the records go one by one, as always."""
    from ..api.connectors.file_system import BucketAssigner
    from ..api.formats.base import arrow_row_type

    if not isinstance(sink, FileSink) or not sink.is_bulk:
        return None
    assigner = sink.bucket_assigner
    if type(assigner) is not BucketAssigner or assigner.kind not in ("base_path", "date_time"):
        return None
    source_type, sink_type = arrow_row_type(source_format), arrow_row_type(sink.writer_factory)
    if source_type is None or sink_type is None:
        return None
    source_fields = source_type.arrow_schema()
    sink_fields = sink_type.arrow_schema()
    if source_fields.types != sink_fields.types:
        return None
    names = sink_fields.names
    read = source_format.read_batches

    def tables(path: str) -> Iterator[Any]:
        for table in read(path):
            yield table.rename_columns(names)

    return tables


def commit(files: Iterable[PendingFile]) -> int:
    """Rename each pending file to its final name; a file committed already is skipped (a
    commit is repeated after a failure). Returns how many were renamed."""
    renamed = 0
    for f in files:
        try:
            os.replace(f.in_progress, f.final)
            renamed += 1
        except FileNotFoundError:
            if not os.path.exists(f.final):
                raise FileNotFoundError(f"the FileSink's pending file {f.in_progress} is gone: "
                                        f"{f.final} cannot be committed") from None
    return renamed


def in_progress_files(base_path: str, keep: Callable[[str], bool]) -> Iterator[Path]:
    """The in-progress files under ``base_path`` (every bucket) whose name ``keep`` accepts."""
    if not os.path.isdir(base_path):
        return
    for directory, _, names in os.walk(base_path):
        for name in names:
            if name.startswith(".") and IN_PROGRESS in name and keep(name):
                yield Path(directory, name)


def delete_in_progress(base_path: str, keep: Callable[[str], bool]) -> int:
    """Delete the in-progress files ``in_progress_files`` finds; how many."""
    n = 0
    for path in list(in_progress_files(base_path, keep)):
        path.unlink(missing_ok=True)
        n += 1
    return n


def _write_json(path: Path, data: Any) -> None:
    """Atomically: a reader sees the old file or the new one, never a part."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


class ManifestLog:
    """The FileSink's part of a STREAMING query's checkpoint: ``<directory>/<batch>.json`` per
    micro-batch whose files are not committed yet. It travels with the checkpoint (savepoints
    copy the query's checkpoint directory)."""

    def __init__(self, directory: Path, base_path: str) -> None:
        self.directory = directory
        self.base_path = base_path

    def _path(self, batch_id: int) -> Path:
        return self.directory / f"{batch_id}.json"

    def begin(self, batch_id: int, uids: list[str]) -> None:
        """Before the batch's files are written: whose they will be."""
        self.directory.mkdir(parents=True, exist_ok=True)
        _write_json(self._path(batch_id), {"batch": batch_id, "uids": uids, "pending": None})

    def complete(self, batch_id: int, uids: list[str], files: list[PendingFile]) -> None:
        """The batch's files are written and pending."""
        _write_json(self._path(batch_id), {"batch": batch_id, "uids": uids,
                                           "pending": [asdict(f) for f in files]})

    def batches(self) -> list[int]:
        if not self.directory.is_dir():
            return []
        return sorted(int(p.stem) for p in self.directory.glob("*.json") if p.stem.isdigit())

    def _read(self, batch_id: int) -> dict[str, Any]:
        return json.loads(self._path(batch_id).read_text())

    def commit_committed(self, committed: Callable[[int], bool]) -> list[int]:
        """Commit the files of every batch Spark has committed (``committed(batch)``), in order;
        their manifests go. Returns the batches committed."""
        done = []
        for batch_id in self.batches():
            if not committed(batch_id):
                break  # later batches cannot be committed before this one
            data = self._read(batch_id)
            files = [PendingFile(**f) for f in data["pending"] or []]
            if data["pending"] is None:
                log.warning("FileSink: batch %d is committed but its files were never recorded",
                            batch_id)
            commit(files)
            self._path(batch_id).unlink(missing_ok=True)
            done.append(batch_id)
        return done

    def recover(self, committed: Callable[[int], bool]) -> tuple[list[int], list[int]]:
        """At the start of a query run: commit what the checkpoint says is committed, and undo
        (delete the in-progress files of) the batches it does not have. Returns both lists."""
        done = self.commit_committed(committed)
        undone = self.batches()
        uids = tuple(u for batch_id in undone for u in self._read(batch_id)["uids"])
        if uids:  # one walk of the base path for all of them
            delete_in_progress(self.base_path, lambda name: any(u in name for u in uids))
        for batch_id in undone:
            self._path(batch_id).unlink(missing_ok=True)
        return done, undone


__all__ = ["BucketContext", "IN_PROGRESS", "ManifestLog", "PendingFile", "SubtaskWriter", "batch_copy",
           "batch_token", "checkpoint_token", "commit", "delete_in_progress", "in_progress_files",
           "in_progress_name", "part_file_name", "write_partition"]
