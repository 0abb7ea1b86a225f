"""JobGraph -> Spark Structured Streaming: one streaming query per sink of the job.

Each JobVertex becomes a streaming DataFrame of records (``runtime.RECORD_SCHEMA``):
a stateless vertex is a ``mapInArrow`` over its input's rows, a vertex behind a HASH edge is
``groupBy("k").transformWithStateInPandas`` with its keyed state in the state store. An edge is
a filter on the producer's ``out`` column, so a vertex may feed any number of consumers. The
watermark of a stream with event time is Spark's ``withWatermark`` on the records' ``ts``, with
the strategy's bounded out-of-orderness as its delay.

A sink is the query's ``foreachBatch``. ``foreachBatch`` is at least once (after a failure
Spark runs the last uncommitted batch again), so every sink is idempotent by batch id: the
collect and print sinks drop a batch id they have delivered, and the file sink writes a
batch's part files under their final names (``part-<batch>-<n>``) by an atomic rename, once.
"""

from __future__ import annotations

import glob
import logging
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..graph.jobgraph import JobGraph, JobVertex
from ..graph.streamgraph import OperatorKind, Partitioning
from ..streaming.runtime import (
    RECORD_SCHEMA,
    ChainFunction,
    VertexProgram,
    edge_index,
    edge_outs,
    is_keyed_head,
    keyed_processor,
)

log = logging.getLogger("sessioncluster.streaming")

#: the trigger interval when checkpointing is not enabled (ms)
DEFAULT_TRIGGER_MS = 200

#: keyed operators with timers: their query runs in a time mode (the others in none)
TIMER_OPERATORS = {"KeyedProcessOperator", "KeyedCoProcessOperator", "WindowOperator"}

SINK_KINDS = {OperatorKind.SINK_COLLECT: "record", OperatorKind.SINK_PRINT: "line",
              OperatorKind.SINK_TEXT: "line"}


@dataclass(slots=True)
class SinkQuery:
    """One sink of the job and the streaming DataFrame that feeds it."""

    #: stable across runs of the same program: the name of its checkpoint directory
    key: str
    vertex: JobVertex
    kind: OperatorKind
    frame: Any
    #: uids of the stateful operators upstream of the sink (the query's keyed state)
    stateful_uids: list[str]
    stateful_names: list[str]


class StreamingPlanError(ValueError):
    """A program STREAMING mode cannot run, with the reason."""


def timestamped_output(vertex: JobVertex, graph: JobGraph) -> bool:
    """True when the vertex's output records carry event time."""
    ops = [op for op in vertex.operators if not op.kind.is_sink]
    if ops:
        return bool(ops[-1].config.get("timestamped"))
    return timestamped_input(vertex, graph)


def timestamped_input(vertex: JobVertex, graph: JobGraph) -> bool:
    flags = {timestamped_output(graph.vertex(e.source), graph) for e in vertex.inputs}
    if any(e.input_index is not None for e in vertex.inputs):
        return True in flags  # connect: the input without event time gives records without one
    if len(flags) > 1:
        raise StreamingPlanError(f"'{vertex.name}' reads streams with and without event-time "
                                 "timestamps: assign timestamps to each of them")
    return bool(flags and flags.pop())


def watermark_delay(vertex: JobVertex) -> int | None:
    """The bounded out-of-orderness (ms) of a watermark strategy in the vertex's chain."""
    delays = [op.config["watermark_delay_ms"] for op in vertex.operators
              if "watermark_delay_ms" in op.config]
    return max(delays) if delays else None


def build_queries(spark: Any, job_id: str, graph: JobGraph, blobs: Callable[[list[str]], dict[str, bytes]],
                  work_dir: Path, counter: Any = None) -> list[SinkQuery]:
    """The streaming DataFrame of every sink of ``graph`` (nothing started yet); the vertices
    count their records into the Spark accumulator ``counter``."""
    import pyspark.sql.functions as F

    frames: dict[str, Any] = {}
    bounded = is_bounded(graph)

    def upstream_watermark(v: JobVertex) -> bool:
        return any(watermark_delay(u) is not None for u in _upstream(graph, v) if u is not v)

    def program(v: JobVertex, **kw: Any) -> VertexProgram:
        keys = [op.function_key for op in v.operators if op.function_key]
        keys += [e.key_selector_key for e in v.outputs if e.key_selector_key]
        return VertexProgram(job_id, v, blobs(keys), edge_outs(v),
                             timestamped_input(v, graph) if v.inputs else False,
                             timestamped_output(v, graph), SINK_KINDS.get(v.operators[-1].kind),
                             counter=counter, dependencies=list(graph.python_dependencies), **kw)

    def input_frame(v: JobVertex) -> Any:
        parts = []
        for e in v.inputs:
            producer = graph.vertex(e.source)
            df = frame(producer)
            parts.append(df.filter(F.col("out") == edge_index(producer, e)))
        df = parts[0]
        for p in parts[1:]:
            df = df.unionByName(p)
        return df

    def frame(v: JobVertex) -> Any:
        if v.vertex_id in frames:
            return frames[v.vertex_id]
        head = v.operators[0]
        if head.kind is OperatorKind.SINK_VIEW:
            raise StreamingPlanError("a temporary view is a BATCH sink: in STREAMING mode use "
                                     "print(), execute_and_collect() or a FileSink")
        if head.kind.is_source:
            raw, fmt = source_frame(spark, v, blobs, work_dir)
            df = raw.mapInArrow(ChainFunction(program(v, source_format=fmt)), RECORD_SCHEMA)
        elif is_keyed_head(v):
            if {e.ship_strategy for e in v.inputs} != {Partitioning.HASH}:
                raise StreamingPlanError(f"'{v.name}' mixes keyed and other inputs")
            ts_in = timestamped_input(v, graph)
            timers = head.config.get("operator_class") in TIMER_OPERATORS
            mode = "None"
            if timers and ts_in and upstream_watermark(v):
                mode = "EventTime"
            elif timers and not bounded:
                # Spark runs a query with processing-time timers batch after batch, so a bounded
                # job would never end: there, as when Flink's input ends, they do not fire
                mode = "ProcessingTime"
            prog = program(v, time_mode=mode)
            df = (input_frame(v).groupBy("k")
                  .transformWithStateInPandas(keyed_processor(prog), RECORD_SCHEMA, "Append", mode))
        else:
            df = input_frame(v).mapInArrow(ChainFunction(program(v)), RECORD_SCHEMA)
        delay = watermark_delay(v)
        if delay is not None:
            df = (df.withColumn("et", F.timestamp_millis(F.coalesce(F.col("ts"), F.lit(0))))
                  .withWatermark("et", f"{int(delay)} milliseconds").drop("et"))
        frames[v.vertex_id] = df
        return df

    queries: list[SinkQuery] = []
    sinks = [v for v in graph.vertices if v.is_sink]
    if not sinks:
        raise StreamingPlanError("the job has no sink")
    for i, v in enumerate(sinks):
        kind = v.operators[-1].kind
        if kind not in SINK_KINDS:
            raise StreamingPlanError(f"the sink '{v.name}' is not supported in STREAMING mode")
        stateful = [u for u in _upstream(graph, v) if is_keyed_head(u)]
        queries.append(SinkQuery(f"sink-{i}", v, kind, frame(v),
                                 [u.operators[0].uid or "" for u in stateful],
                                 [u.operators[0].name for u in stateful]))
    return queries


def _upstream(graph: JobGraph, v: JobVertex) -> list[JobVertex]:
    seen: dict[str, JobVertex] = {}

    def walk(x: JobVertex) -> None:
        if x.vertex_id in seen:
            return
        seen[x.vertex_id] = x
        for e in x.inputs:
            walk(graph.vertex(e.source))

    walk(v)
    return [x for x in graph.vertices if x.vertex_id in seen]


def source_frame(spark: Any, v: JobVertex, blobs: Callable[[list[str]], dict[str, bytes]],
                 work_dir: Path) -> tuple[Any, str]:
    """The streaming DataFrame a source vertex reads, and how its rows become records."""
    head = v.operators[0]
    config = head.config
    if head.kind is OperatorKind.SOURCE_COLLECTION:
        # the collection's blob goes through a one-row Parquet file: the JobManager never
        # unpickles it; the source's chain does, in a worker
        directory = work_dir / f"source-{v.vertex_id}"
        _write_rows(directory, {"blob": [blobs([head.function_key or ""])[head.function_key or ""]]})
        return spark.readStream.schema("blob binary").parquet(str(directory)), "blob"
    if head.kind is OperatorKind.SOURCE_TEXT_FILE:
        paths = [p for p in config["path"].split(",") if p]
        for p in paths:
            if "://" not in p and not glob.has_magic(p) and not os.path.exists(p):
                raise FileNotFoundError(f"the source directory {p} does not exist")
        if len(paths) > 1:
            raise StreamingPlanError("a streaming file source reads one directory")
        reader = spark.readStream.format("text")
        if config.get("max_files_per_trigger"):
            reader = reader.option("maxFilesPerTrigger", int(config["max_files_per_trigger"]))
        return reader.load(paths[0]), "text"
    if head.kind is OperatorKind.SOURCE_STREAM:
        fmt = config["format"]
        if fmt == "sequence":
            start, end, p = int(config["start"]), int(config["end"]), max(v.parallelism, 1)
            bounds = [start + (end - start + 1) * i // p for i in range(p + 1)]
            directory = work_dir / f"source-{v.vertex_id}"
            _write_rows(directory, {"start": bounds[:-1], "end": [b - 1 for b in bounds[1:]]})
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


def _write_rows(directory: Path, columns: dict[str, list[Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), str(directory / "part-0.parquet"))


def is_bounded(graph: JobGraph) -> bool:
    """True when every source ends (the job FINISHES once its queries consumed them)."""
    for v in graph.vertices:
        head = v.operators[0]
        if not head.kind.is_source:
            continue
        if head.config.get("unbounded") or (head.kind is OperatorKind.SOURCE_STREAM
                                            and head.config["format"] in ("rate", "socket")):
            return False
    return True


# -- sinks ----------------------------------------------------------------------------------


def write_text_batch(batch_df: Any, batch_id: int, base_path: str) -> int:
    """One micro-batch's lines into ``base_path`` as ``part-<batch>-<n>``, exactly once: Spark
    writes them under ``.inprogress/``, then each is renamed to its final name (a batch run
    again after a failure replaces its own files, never adds to them)."""
    final = Path(base_path)
    staging = final / ".inprogress" / f"{batch_id}-{uuid.uuid4().hex[:8]}"
    final.mkdir(parents=True, exist_ok=True)
    (batch_df.selectExpr("cast(v as string) as value").write.mode("overwrite").text(str(staging)))
    parts = sorted(p for p in staging.iterdir() if p.name.startswith("part-") and p.stat().st_size)
    for old in final.glob(f"part-{batch_id}-*"):
        old.unlink()
    for n, part in enumerate(parts):
        os.replace(part, final / f"part-{batch_id}-{n}")
    shutil.rmtree(staging, ignore_errors=True)
    return len(parts)


class RecordCounts:
    """The AccumulatorParam of ``{(vertex id, subtask, "in" | "out"): records}``."""

    def zero(self, value: dict[Any, int]) -> dict[Any, int]:
        return {}

    def addInPlace(self, a: dict[Any, int], b: dict[Any, int]) -> dict[Any, int]:  # noqa: N802
        for k, n in b.items():
            a[k] = a.get(k, 0) + n
        return a
