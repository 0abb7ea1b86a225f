"""The FileSink on Spark, both modes (the writing and committing are ``runtime/filesink``'s).

BATCH: the sink vertex's tasks write their part files in the slot workers and hand back the
pending files; :func:`commit_batch_sink` commits those of the successful attempts once the
Spark action succeeded, and deletes what failed attempts left (:func:`abort_batch_sink`).

STREAMING (:class:`StreamingFileSink`): a micro-batch is a checkpoint. The query's
``foreachBatch`` writes the batch's partitions in the executors into in-progress files, named
by this run's uid of each partition and the batch, so a task run again writes over its own
files; the batch's pending files go into a manifest under the query's checkpoint directory
(``<checkpointLocation>/filesink/<sink>/<batch>.json``). They are committed once Spark has
committed the batch (``commits/<batch>``), by :meth:`StreamingFileSink.commit`, which the job
calls while it watches its queries and when they stop; at the start of each query run,
:meth:`StreamingFileSink.recover` commits what the (restored) checkpoint says is committed and
deletes the in-progress files of batches it does not have.
"""

from __future__ import annotations

import itertools
import json
import logging
import pickle
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

from ..common.checkpoints import committed_batches
from ..graph.jobgraph import JobGraph, JobVertex
from ..runtime.filesink import (
    ManifestLog,
    PendingFile,
    batch_token,
    checkpoint_token,
    commit,
    delete_in_progress,
    write_partition,
)
from ..streaming.runtime import SINK_TABLE_OUT, VertexProgram, tables_of

log = logging.getLogger("sessioncluster.filesink")


def commit_batch_sink(rdd: Any, job_id: str, vertex: JobVertex) -> int:
    """Run the sink vertex's tasks (``rdd``), then commit the pending files they report (Spark
    returns the successful attempts' only) and delete the other attempts' in-progress files.
    Returns the number of part files committed."""
    base_path = vertex.operators[-1].config["path"]
    files = [PendingFile.from_json(text) for text in rdd.collect()]
    Path(base_path).mkdir(parents=True, exist_ok=True)
    commit(files)
    abort_batch_sink(job_id, vertex)
    return len(files)


def abort_batch_sink(job_id: str, vertex: JobVertex) -> int:
    """Delete the in-progress files every attempt of the job's sink ``vertex`` left."""
    token = batch_token(job_id, vertex.vertex_id)
    return delete_in_progress(vertex.operators[-1].config["path"], lambda name: name.endswith(token))


def sink_program(job_id: str, graph: JobGraph, vertex: JobVertex,
                 blobs: Callable[[list[str]], dict[str, bytes]]) -> VertexProgram:
    """What the executors need of a FileSink vertex: its FileSink (the sink operator's code)
    and the job's Python dependencies."""
    keys = [k for k in [vertex.operators[-1].function_key] if k]
    return VertexProgram(job_id, vertex, blobs(keys), [], False, False, "record",
                         dependencies=list(graph.python_dependencies))


class QueryManifests:
    """A STREAMING query's file sink in the query's checkpoint: its micro-batches' manifests
    (``<checkpoint>/filesink/<index>``), committed once Spark has committed their batch
    (:meth:`commit`, which the job calls while it watches its queries and when they stop), and
    recovered when a run of the query starts (:meth:`recover`: the batches Spark committed are
    committed, the in-progress files of the others deleted). The DataStream FileSink's, and a
    streaming SQL INSERT's ``filesystem`` sink's."""

    def __init__(self, checkpoint: Path, index: int, base_path: str) -> None:
        self.checkpoint = checkpoint
        self.manifests = ManifestLog(checkpoint / "filesink" / str(index), base_path)

    def recover(self) -> tuple[list[int], list[int]]:
        """The batches committed, and those undone."""
        return self.manifests.recover(committed_batches(self.checkpoint))

    def commit(self) -> list[int]:
        """Commit the files of every batch Spark has committed; the batches."""
        return self.manifests.commit_committed(committed_batches(self.checkpoint))


class StreamingFileSink:
    """One FileSink of a streaming query: its micro-batches' part files and their commits.

    ``program``: the sink vertex's code and the job's Python dependencies (a streaming
    ``VertexProgram``), used in the executors; ``checkpoint``: the query's checkpoint location;
    ``index``: the sink's place among the query's sinks (its manifests' directory).
    """

    def __init__(self, program: Any, checkpoint: Path, index: int) -> None:
        vertex: JobVertex = program.vertex
        self.program = program
        self.sink_key = vertex.operators[-1].function_key
        self.base_path = str(vertex.operators[-1].config["path"])
        self.batches = QueryManifests(checkpoint, index, self.base_path)
        #: this run's uid of each partition (a subtask): new for every run of the query
        self.uids: list[str] = []
        #: the next part file index of each uid's buckets
        self.next_index: dict[str, dict[str, int]] = {}

    def recover(self) -> None:
        """At the start of a query run (a restart, a restore, a new leader)."""
        done, undone = self.batches.recover()
        if done or undone:
            log.info("FileSink %s: committed batches %s, undid batches %s", self.base_path, done, undone)

    def commit(self) -> list[int]:
        """Commit the files of every batch Spark has committed; the batches."""
        return self.batches.commit()

    def write_batch(self, rows: Any, batch_id: int) -> int:
        """``foreachBatch``: the batch's records (column ``v``, pickled; or Arrow tables of
        them from a FileSource chained to this sink, ``SINK_TABLE_OUT``) into in-progress part
        files, one writer per partition; their pending files into the batch's manifest.

        The rows reach the writers by ``mapInArrow``, in Arrow batches Spark bounds by bytes
        (``spark.sql.execution.arrow.maxBytesPerBatch``): a DataFrame's ``.rdd`` would pickle
        them in the executor JVM, whose heap a micro-batch of large table rows exceeds."""
        frame = rows.select("out", "v")
        n = frame.rdd.getNumPartitions()
        while len(self.uids) < n:
            self.uids.append(str(uuid.uuid4()))
        uids = self.uids[:n]
        self.batches.manifests.begin(batch_id, uids)
        writer = _PartitionWriter(self.program, self.sink_key, uids, batch_id,
                                  {u: self.next_index.get(u, {}) for u in uids})
        files: list[PendingFile] = []
        for row in frame.mapInArrow(writer, "written string").collect():
            written = json.loads(row[0])
            self.next_index[written["uid"]] = written["next"]
            files += [PendingFile(**f) for f in written["files"]]
        self.batches.manifests.complete(batch_id, uids, files)
        return len(files)


class _PartitionWriter:
    """``mapInArrow`` of one micro-batch's sink partition: its records into part files under
    the partition's uid; one row out, the JSON of its pending files and next part indexes."""

    def __init__(self, program: Any, sink_key: str | None, uids: list[str], batch_id: int,
                 starts: dict[str, dict[str, int]]) -> None:
        self.program, self.sink_key = program, sink_key
        self.uids, self.batch_id, self.starts = uids, batch_id, starts

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        from pyspark import TaskContext

        context = TaskContext.get()
        assert context is not None  # a mapInArrow function runs in a Spark task
        uid = self.uids[context.partitionId()]
        env = self.program.environment()
        if env is not None:
            env.__enter__()
        try:
            sink = self.program.load(self.sink_key)
            rows = _rows(batches)
            first = next(rows, None)
            tables = first is not None and first[0] == SINK_TABLE_OUT
            rest = itertools.chain([] if first is None else [first], rows)
            values = (v for _, v in rest)
            elements = tables_of(values) if tables else (pickle.loads(v) for v in values)
            files, next_index = write_partition(sink, uid, checkpoint_token(uid, self.batch_id),
                                                elements, self.starts[uid], tables=tables)
        finally:
            if env is not None:
                env.__exit__(None, None, None)
        text = json.dumps({"uid": uid, "next": next_index,
                           "files": [json.loads(f.to_json()) for f in files]})
        yield pa.RecordBatch.from_pydict({"written": [text]})


def _rows(batches: Iterator[Any]) -> Iterator[tuple[int, bytes]]:
    """The ``(out, v)`` rows of Arrow batches, one batch's columns in memory at a time."""
    for batch in batches:
        yield from zip(batch.column(0).to_pylist(), batch.column(1).to_pylist())
