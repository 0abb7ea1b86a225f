"""The sources of a STREAMING job's queries: the streaming DataFrame each source vertex reads
(:func:`source_frame`: collections and sequences through one Parquet file, files and
directories, rate, socket, and a Table's query through the caller's hook), whether the job's
sources end, and the control records a watermark's control stream reads (:func:`write_control`).
"""

from __future__ import annotations

import glob
import os
import uuid
from pathlib import Path
from typing import Any, Callable

from ..graph.jobgraph import JobGraph, JobVertex
from ..graph.streamgraph import OperatorKind
from ..streaming.runtime import CONTROL_OUT
from .files import file_stream

#: the records of a Table's query for a ``SOURCE_TABLE`` vertex (a streaming DataFrame of
#: ``RECORD_SCHEMA``)
TableSourceFrames = Callable[[JobVertex], Any]


class StreamingPlanError(ValueError):
    """A program STREAMING mode cannot run, with the reason."""


def source_frame(spark: Any, v: JobVertex, blobs: Callable[[list[str]], dict[str, bytes]],
                 inputs_dir: Path, table_sources: TableSourceFrames | None = None) -> tuple[Any, str]:
    """The streaming DataFrame a source vertex reads, and how its rows become records."""
    head = v.operators[0]
    config = head.config
    if head.kind is OperatorKind.SOURCE_TABLE:
        if table_sources is None:
            raise StreamingPlanError(f"the source '{v.name}' is a Table's query: it needs the "
                                     "session's Flink SQL planner")
        return table_sources(v), "records"
    if head.kind is OperatorKind.SOURCE_COLLECTION:
        # the collection's blob goes through a one-row Parquet file: the JobManager never
        # unpickles it; the source's chain does, in a worker
        directory = inputs_dir / f"source-{v.vertex_id}"
        write_rows(directory, {"blob": [blobs([head.function_key or ""])[head.function_key or ""]]})
        return spark.readStream.schema("blob binary").parquet(str(directory)), "blob"
    if head.kind is OperatorKind.SOURCE_TEXT_FILE and config.get("file_source"):
        # no maxFilesPerTrigger: a bounded job's first micro-batch reads every file, and its
        # final watermark with them (``StreamingJob._set_up``)
        return file_stream(spark, config["path"].split(",")), "files"
    if head.kind is OperatorKind.SOURCE_TEXT_FILE:
        paths = [p for p in config["path"].split(",") if p]
        for p in paths:
            if "://" not in p and not glob.has_magic(p) and not os.path.exists(p):
                raise FileNotFoundError(f"the source directory {p} does not exist")
        if len(paths) > 1:
            raise StreamingPlanError("a streaming file source reads one directory")
        # no maxFilesPerTrigger: a bounded job's first micro-batch reads every file, and its
        # final watermark with them (``StreamingJob._set_up``)
        return spark.readStream.format("text").load(paths[0]), "text"
    if head.kind is OperatorKind.SOURCE_STREAM:
        fmt = config["format"]
        if fmt == "sequence":
            start, end, p = int(config["start"]), int(config["end"]), max(v.parallelism, 1)
            bounds = [start + (end - start + 1) * i // p for i in range(p + 1)]
            directory = inputs_dir / f"source-{v.vertex_id}"
            write_rows(directory, {"start": bounds[:-1], "end": [b - 1 for b in bounds[1:]]})
            return spark.readStream.schema("start long, end long").parquet(str(directory)), "sequence"
        if fmt == "rate":
            reader = spark.readStream.format("rate").option("rowsPerSecond", int(config["rows_per_second"]))
            reader = reader.option("numPartitions", max(v.parallelism, 1))
            return reader.load(), "long"
        if fmt == "socket":
            return (spark.readStream.format("socket").option("host", config["host"])
                    .option("port", int(config["port"])).load(), "text")
        raise StreamingPlanError(f"unknown streaming source {fmt!r}")
    raise StreamingPlanError(f"the source '{v.name}' ({head.kind.value}) is not supported in "
                             "STREAMING mode")


def stamped_table(v: JobVertex) -> bool:
    """True for a Table's source whose records carry the Table's rowtime (and its query the
    watermark on it)."""
    head = v.operators[0]
    return head.kind is OperatorKind.SOURCE_TABLE and bool(head.config.get("timestamped"))


def write_rows(directory: Path, columns: dict[str, list[Any]]) -> None:
    """A bounded source's one Parquet file, written once per job: a run of the job again (a
    restart, a new leader) finds the file its checkpoint says it has read, and reads it no more."""
    import pyarrow as pa

    target = directory / "part-0.parquet"
    if not target.exists():
        directory.mkdir(parents=True, exist_ok=True)
        write_whole(target, pa.table(columns))


def write_whole(target: Path, table: Any) -> None:
    """A Parquet file written aside (outside the watched directory), then renamed: Spark's file
    source sees it whole or not at all."""
    import pyarrow.parquet as pq

    staging = target.parent.parent / f".{target.parent.name}-{uuid.uuid4().hex[:8]}.parquet"
    pq.write_table(table, str(staging))
    os.replace(staging, target)


def write_control(directory: Path, timestamp: int, name: str) -> None:
    """A control record of ``timestamp`` for the watermark reading ``directory`` (its watermark
    becomes ``timestamp`` - its delay, if that is later)."""
    import pyarrow as pa

    table = pa.table({"out": pa.array([CONTROL_OUT], pa.int32()), "k": pa.array([None], pa.binary()),
                      "ts": pa.array([timestamp], pa.int64()), "v": pa.array([None], pa.binary())})
    write_whole(directory / f"{name}.parquet", table)


def socket_peers(graph: JobGraph) -> list[tuple[str, int]]:
    """The (host, port) of the job's socket sources when they are its only unbounded sources
    (the job ends when their peers close, as Flink's socket source does); else []."""
    peers = []
    for v in graph.vertices:
        head = v.operators[0]
        if head.kind is OperatorKind.SOURCE_STREAM and head.config.get("format") == "socket":
            peers.append((str(head.config["host"]), int(head.config["port"])))
        elif head.kind.is_source and unbounded(head):
            return []
    return peers


def is_bounded(graph: JobGraph) -> bool:
    """True when every source ends (the job FINISHES once its queries consumed them)."""
    return not any(v.operators[0].kind.is_source and unbounded(v.operators[0]) for v in graph.vertices)


def unbounded(source: Any) -> bool:
    """True for a source operator that does not end: a watched directory, a rate generator, a
    socket."""
    return bool(source.config.get("unbounded")) or (
        source.kind is OperatorKind.SOURCE_STREAM and source.config.get("format") in ("rate", "socket"))

