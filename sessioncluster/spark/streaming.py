"""JobGraph -> Spark Structured Streaming: one streaming query per group of sinks that share
an upstream vertex (one per sink when they share nothing).

Each JobVertex becomes a streaming DataFrame of records (``runtime.RECORD_SCHEMA``):
a stateless vertex is a ``mapInArrow`` over its input's rows, a vertex behind a HASH edge is
``groupBy("k").transformWithStateInPandas`` with its keyed state in the state store. An edge is
a filter on the producer's ``out`` column, so a vertex may feed any number of consumers. The
watermark of a stream with event time is Spark's ``withWatermark`` on the records' ``ts``, with
the strategy's bounded out-of-orderness as its delay.

Spark's watermark only follows the data. Where Flink moves a watermark without data, a control
stream does it here: a watermark that needs one also reads a directory of the job into which the
JobManager writes control records (``out`` = ``CONTROL_OUT``); such a record moves the watermark,
and is dropped right behind it. Two uses:

- Flink ends a bounded input with a final MAX watermark, which fires every pending event-time
  timer and window: every watermark of a bounded job gets a record with the largest timestamp
  (``END_OF_INPUT_MS``) before it starts, read by its first micro-batch with all its input
  (Spark moves the watermark once a batch is through, so none of that input is late); every
  watermark of a socket job gets one when its peers close.
- ``with_idleness``: Spark takes the minimum of a query's watermarks, so a stream that has gone
  quiet holds back the others (within one stream, Spark's watermark is the maximum over all
  partitions: an idle partition never holds it back). An input idle for its timeout gets a
  record that brings its watermark up to the others', as Flink leaves an idle input out.

The vertices are in stages (``StagePlan``): a stage's root is its own DataFrame (a source, a
keyed vertex, a watermark, a vertex that reads several stages), and the stateless vertices that
read only that stage are its region, one ``mapInArrow`` after the root whose rows carry the
``node`` of the vertex that made them. Sinks that share an upstream vertex (a stream fanned out
to several sinks) are one query: it reads each stage its sinks are in once, with a ``sink``
column, and ``foreachBatch`` hands each sink its rows. So each source is read once per
micro-batch (one socket connection, one offset log), one checkpoint holds all their state, and
branches within a region compute their stream once. Spark's plans are trees: a DataFrame read
along several paths (a stage read by two keyed vertices) is computed once per path (Spark reuses
no exchange in a streaming query); its records are shown once all the same, because the
JobMaster counts each (micro-batch, partition) of a vertex once
(``jobmanager/streamingsubtasks.py``).

A sink is the query's ``foreachBatch``. ``foreachBatch`` is at least once (after a failure
Spark runs the last uncommitted batch again), so every sink is idempotent by batch id: the
collect and print sinks drop a batch id they have delivered, and the FileSink
(``spark/filesink.py``) writes a batch's in-progress files under names of that batch, committed
once Spark has committed the batch.

Beside this module: the stages and sink groups (:mod:`.stages`), the sources' DataFrames
(:mod:`.sources`), the streaming session and its warm-up (:mod:`.warmup`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..graph.jobgraph import JobEdge, JobGraph, JobVertex
from ..graph.streamgraph import OperatorKind, Partitioning
from ..streaming.keyed import keyed_processor, spark_interface, time_domain
from ..streaming.regions import REGION_SCHEMA, ROOT_NODE, RegionFunction, RegionVertex
from ..streaming.runtime import (
    CONTROL_OUT,
    MAX_TS,
    RECORD_SCHEMA,
    ChainFunction,
    VertexProgram,
    edge_index,
    edge_outs,
    is_keyed_head,
    watermark_delay,
)
from .sources import (
    StreamingPlanError,
    TableSourceFrames,
    is_bounded,
    socket_peers,
    source_frame,
    stamped_table,
)
from .stages import StagePlan, by_stage, generated_uid, sink_groups, upstream

log = logging.getLogger("sessioncluster.streaming")

#: the trigger interval when checkpointing is not enabled (ms)
DEFAULT_TRIGGER_MS = 200

#: keyed operators with timers: their query runs in a time mode (the others in none)
TIMER_OPERATORS = {"KeyedProcessOperator", "KeyedCoProcessOperator", "WindowOperator", "AllWindowOperator"}

#: keyed state's store: RocksDB (checkpointed with each micro-batch)
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def move_timer(handle: Any, registered: int | None, wanted: int | None) -> int | None:
    """A keyed processor's one event-time timer moved from ``registered`` to ``wanted`` (None:
    none) on its ``StatefulProcessorHandle``; the timer registered now."""
    if wanted != registered:
        if registered is not None:
            handle.deleteTimer(registered)
        if wanted is not None:
            handle.registerTimer(wanted)
    return wanted

#: the timestamp of the end-of-input record (ms): Spark's largest timestamp (microseconds in a
#: long), where Flink's final watermark is Long.MAX_VALUE
END_OF_INPUT_MS = (2**63 - 1) // 1000

SINK_KINDS = {OperatorKind.SINK_COLLECT: "record", OperatorKind.SINK_PRINT: "line",
              OperatorKind.SINK_TEXT: "record"}  # a FileSink writes the records themselves


@dataclass(slots=True)
class StreamQuery:
    """One streaming query of the job: sinks that share upstream vertices, and the streaming
    DataFrame that feeds them (with a ``sink`` column, the index in ``sinks``, when several)."""

    #: stable across runs of the same program: the name of its checkpoint directory
    key: str
    sinks: list[JobVertex]
    frame: Any
    #: uids of the stateful operators upstream of the sinks (the query's keyed state)
    stateful_uids: list[str]
    stateful_names: list[str]
    #: a keyed operator of the query has event-time timers (windows fire by the watermark)
    event_time: bool = False

    @property
    def name(self) -> str:
        """The sinks' names."""
        return ", ".join(v.name for v in self.sinks)


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


def watermark_idleness(vertex: JobVertex) -> int | None:
    """The idle timeout (ms) of the vertex's watermark strategy (``with_idleness``)."""
    idle = [op.config["watermark_idleness_ms"] for op in vertex.operators
            if op.config.get("watermark_idleness_ms")]
    return min(idle) if idle else None


def controlled_watermarks(graph: JobGraph) -> dict[str, tuple[int, int | None]]:
    """The vertices whose watermark reads a control stream, with their delay and idle timeout:
    every watermark of a job whose sources end (its final watermark: a bounded job, or one whose
    unbounded sources are sockets); in a job of several watermarks, those with an idle timeout."""
    marks = {v.vertex_id: (d, watermark_idleness(v)) for v in graph.vertices
             if (d := watermark_delay(v)) is not None}
    if is_bounded(graph) or socket_peers(graph):
        return marks
    if len(marks) < 2:
        return {}
    return {vid: m for vid, m in marks.items() if m[1] is not None}


def build_queries(spark: Any, job_id: str, graph: JobGraph, blobs: Callable[[list[str]], dict[str, bytes]],
                  inputs_dir: Path, counter: Any = None,
                  control_dir: Path | None = None,
                  table_sources: TableSourceFrames | None = None) -> list[StreamQuery]:
    """The streaming queries of ``graph`` (``sink_groups``; nothing started yet); the vertices
    count their records into the Spark accumulator ``counter``; bounded sources of collections
    and sequences are files in ``inputs_dir``. The watermarks of ``controlled_watermarks`` also
    read ``control_dir/<vertex id>`` (``write_control``). ``table_sources`` gives the records
    of a Table's query (a ``SOURCE_TABLE`` vertex: ``to_data_stream``), planned by the caller's
    Flink SQL planner, which this module does not know."""
    sinks = [v for v in graph.vertices if v.is_sink]
    if not sinks:
        raise StreamingPlanError("the job has no sink")
    for v in sinks:
        if v.operators[-1].kind not in SINK_KINDS:
            raise StreamingPlanError(f"the sink '{v.name}' is not supported in STREAMING mode")
    for v in graph.vertices:
        for e in v.inputs:
            if e.ship_strategy in (Partitioning.BROADCAST, Partitioning.CUSTOM):
                raise StreamingPlanError(
                    f"'{v.name}' reads a {e.ship_strategy.value} partitioning (broadcast() / "
                    "partition_custom()), which sessioncluster runs in BATCH mode only: a "
                    "STREAMING job's stateless operators run in the partition of their input")
    planner = _QueryPlanner(spark, job_id, graph, blobs, inputs_dir, counter, control_dir,
                            table_sources)
    return [planner.query(index, group) for index, group in sink_groups(graph)]


class _QueryPlanner:
    """The streaming DataFrames of one job's stages (``StagePlan``), each made once and shared
    by the queries that read it: a stage's root (``root_frame``), its region (``region_frame``),
    a vertex's input (``input_frame``) and a query's sinks (``sinks_frame``)."""

    def __init__(self, spark: Any, job_id: str, graph: JobGraph,
                 blobs: Callable[[list[str]], dict[str, bytes]], inputs_dir: Path, counter: Any,
                 control_dir: Path | None, table_sources: TableSourceFrames | None = None) -> None:
        self.spark, self.job_id, self.graph = spark, job_id, graph
        self.table_sources = table_sources
        self.blobs, self.inputs_dir, self.counter = blobs, inputs_dir, counter
        self.control_dir = control_dir
        self.roots: dict[str, Any] = {}
        self.regions: dict[str, Any] = {}
        self.event_time: set[str] = set()  # the keyed vertices with event-time timers
        self.plan = StagePlan.of(graph)
        self.controlled = controlled_watermarks(graph) if control_dir is not None else {}
        self.bounded = is_bounded(graph)

    def query(self, index: int, group: list[JobVertex]) -> StreamQuery:
        """The query of sink group ``index``: its sinks' rows and the keyed state upstream."""
        frame = self.sinks_frame(group)
        stateful = [u for u in upstream(self.graph, *group) if is_keyed_head(u)]
        return StreamQuery(f"sink-{index}", group, frame,
                           [u.operators[0].uid or generated_uid(self.graph, u) for u in stateful],
                           [u.operators[0].name for u in stateful],
                           any(u.vertex_id in self.event_time for u in stateful))

    def program(self, v: JobVertex, **kw: Any) -> VertexProgram:
        """What the tasks of ``v`` run: its functions (from the blobs) and its edges."""
        graph = self.graph
        keys = [op.function_key for op in v.operators if op.function_key]
        keys += [e.key_selector_key for e in v.outputs if e.key_selector_key]
        # a window that pre-aggregates: its operator combines before the shuffle
        keys += [e.combiner_key for e in v.outputs if e.window_partials_streaming and e.combiner_key]
        return VertexProgram(self.job_id, v, self.blobs(keys), edge_outs(v),
                             timestamped_input(v, graph) if v.inputs else stamped_table(v),
                             timestamped_output(v, graph), SINK_KINDS.get(v.operators[-1].kind),
                             counter=self.counter, dependencies=list(graph.python_dependencies),
                             job_parameters=dict(graph.job_parameters), **kw)

    def picked_from_root(self, root: JobVertex, edges: list[JobEdge]) -> Any:
        """The root's records on ``edges`` (and its control records, which must reach its
        watermark)."""
        import pyspark.sql.functions as F

        picked = F.col("out").isin([edge_index(root, e) for e in edges])
        if root.vertex_id in self.controlled:
            # Spark pushes this filter below the root's watermark: a control record must pass
            # it to get there (the filter above the watermark drops it)
            picked = picked | (F.col("out") == CONTROL_OUT)
        return self.root_frame(root).filter(picked)

    def input_frame(self, v: JobVertex) -> Any:
        """The records of ``v``'s input edges: one read of each stage they come from."""
        import pyspark.sql.functions as F

        graph, plan = self.graph, self.plan
        by_stage: dict[str, list[JobEdge]] = {}
        for e in v.inputs:
            by_stage.setdefault(plan.stage_of[e.source], []).append(e)
        parts = []
        for stage, edges in by_stage.items():
            root = graph.vertex(stage)
            from_root = [e for e in edges if e.source == stage]
            if from_root:
                parts.append(self.picked_from_root(root, from_root))
            if len(from_root) < len(edges):
                picked = None
                for e in edges:
                    if e.source != stage:
                        producer = graph.vertex(e.source)
                        cond = ((F.col("node") == plan.node[e.source])
                                & (F.col("out") == edge_index(producer, e)))
                        picked = cond if picked is None else picked | cond
                parts.append(self.region_frame(stage).filter(picked).drop("node"))
        return _union(parts)

    def region_frame(self, stage: str) -> Any:
        """The stateless vertices run after the stage's root, in one ``mapInArrow``."""
        if stage in self.regions:
            return self.regions[stage]
        graph, plan = self.graph, self.plan
        root = graph.vertex(stage)
        members = plan.members[stage]
        inside = {m.vertex_id for m in members}
        vertices = []
        for m in members:
            inputs = [(ROOT_NODE if e.source == stage else plan.node[e.source],
                       edge_index(graph.vertex(e.source), e)) for e in m.inputs]
            internal = frozenset(i for i, e in enumerate(m.outputs) if e.target in inside)
            vertices.append(RegionVertex(plan.node[m.vertex_id], self.program(m), inputs, internal))
        fed = [e for e in root.outputs if e.target in inside]
        df = self.picked_from_root(root, fed).mapInArrow(RegionFunction(vertices), REGION_SCHEMA)
        self.regions[stage] = df
        return df

    def root_frame(self, v: JobVertex) -> Any:
        """The stage root ``v``'s records (its watermark on them, if it has one)."""
        if v.vertex_id in self.roots:
            return self.roots[v.vertex_id]
        head = v.operators[0]
        if head.kind is OperatorKind.SINK_VIEW:
            raise StreamingPlanError("a temporary view is a BATCH sink: in STREAMING mode use "
                                     "print(), execute_and_collect() or a FileSink")
        if head.kind.is_source:
            raw, fmt = source_frame(self.spark, v, self.blobs, self.inputs_dir,
                                    self.table_sources)
            df = raw.mapInArrow(ChainFunction(self.program(v, source_format=fmt)), RECORD_SCHEMA)
        elif is_keyed_head(v):
            df = self.keyed_frame(v)
        else:
            df = self.input_frame(v).mapInArrow(ChainFunction(self.program(v)), RECORD_SCHEMA)
        delay = watermark_delay(v)
        if delay is not None:
            if any(stamped_table(u) for u in upstream(self.graph, v)):
                raise StreamingPlanError(
                    f"'{v.name}' assigns a watermark to the records of a Table that has one (its "
                    "rowtime's WATERMARK FOR, which already drives the event-time operators "
                    "after it): Spark keeps one watermark per query (no watermark over another)")
            df = self.with_watermark(v, df, delay)
        self.roots[v.vertex_id] = df
        return df

    def keyed_frame(self, v: JobVertex) -> Any:
        """A keyed vertex: its input grouped by key into ``transformWithStateInPandas``, in
        the time mode its timers need."""
        if {e.ship_strategy for e in v.inputs} != {Partitioning.HASH}:
            raise StreamingPlanError(f"'{v.name}' mixes keyed and other inputs")
        ts_in = timestamped_input(v, self.graph)
        timers = v.operators[0].config.get("operator_class") in TIMER_OPERATORS
        mode = "None"
        if timers and ts_in and self.upstream_watermark(v):
            mode = "EventTime"
            self.event_time.add(v.vertex_id)
        elif timers and not self.bounded:
            # Spark runs a query with processing-time timers batch after batch, so a bounded
            # job would never end: there, as when Flink's input ends, they do not fire
            mode = "ProcessingTime"
        prog = self.program(v, time_mode=time_domain(mode), bounded=self.bounded)
        interface = spark_interface(v)
        keyed = getattr(self.input_frame(v).groupBy("k"), interface.method)
        return keyed(keyed_processor(prog, interface), RECORD_SCHEMA, "Append", mode)

    def upstream_watermark(self, v: JobVertex) -> bool:
        """True when a watermark is upstream of ``v``: a DataStream's, or a Table's (the
        Spark watermark of its query, on the rowtime that stamps its records)."""
        return any(watermark_delay(u) is not None or stamped_table(u)
                   for u in upstream(self.graph, v) if u is not v)

    def with_watermark(self, v: JobVertex, df: Any, delay: int) -> Any:
        """``df`` with Spark's watermark on its event time; for a controlled watermark, its
        control stream read beside it and dropped right behind the watermark."""
        import pyspark.sql.functions as F

        control = v.vertex_id in self.controlled and self.control_dir is not None
        if control:
            directory = self.control_dir / v.vertex_id  # type: ignore[operator]
            directory.mkdir(parents=True, exist_ok=True)
            df = df.unionByName(self.spark.readStream.schema(RECORD_SCHEMA).parquet(str(directory)))
        df = (df.withColumn("et", F.timestamp_millis(F.coalesce(F.col("ts"), F.lit(0))))
              .withWatermark("et", f"{int(delay)} milliseconds"))
        if control:
            # "or" a comparison no record passes, on the event-time column: Spark pushes a
            # filter below the watermark unless it reads the event time (and folds simpler
            # forms of this one into a filter on ``out``)
            never = F.col("et") < F.timestamp_millis(F.lit(-END_OF_INPUT_MS))
            df = df.filter((F.col("out") != CONTROL_OUT) | never)
        return df.drop("et")

    def sinks_frame(self, group: list[JobVertex]) -> Any:
        """The rows of a query's sinks: one read of each stage they are in (with a ``sink``
        column, their index in ``group``, when there are several)."""
        import pyspark.sql.functions as F

        graph = self.graph
        several = len(group) > 1
        parts = []
        for stage, members in by_stage(self.plan, group).items():
            if stage in members:  # the stage's root is the sink
                df = self.root_frame(graph.vertex(stage))
                parts.append(df.withColumn("sink", F.lit(group.index(graph.vertex(stage))))
                             if several else df)
                continue
            nodes = {self.plan.node[vid]: group.index(graph.vertex(vid)) for vid in members}
            df = self.region_frame(stage).filter(F.col("node").isin(list(nodes)))
            if several:
                index = None
                for node, i in nodes.items():
                    index = (F.when(F.col("node") == node, i) if index is None
                             else index.when(F.col("node") == node, i))
                df = df.withColumn("sink", index)
            parts.append(df.drop("node"))
        return _union(parts)


def _union(parts: list[Any]) -> Any:
    df = parts[0]
    for part in parts[1:]:
        df = df.unionByName(part)
    return df


# -- record counts --------------------------------------------------------------------------


class RecordCounts:
    """The AccumulatorParam of ``{(vertex id, subtask, "in" | "out"): records}`` (summed) and
    ``{(vertex id, -1, "max_ts"): timestamp}`` (the largest)."""

    def zero(self, value: dict[Any, int]) -> dict[Any, int]:
        return {}

    def addInPlace(self, a: dict[Any, int], b: dict[Any, int]) -> dict[Any, int]:  # noqa: N802
        for k, n in b.items():
            if k[2] == MAX_TS:
                a[k] = max(a.get(k, n), n)
            else:
                a[k] = a.get(k, 0) + n
        return a
