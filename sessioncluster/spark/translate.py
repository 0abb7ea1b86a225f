"""JobGraph -> Spark plan: one ``mapPartitionsWithIndex`` per JobVertex.

A FORWARD edge stays inside one Spark stage (pyspark pipelines the vertices in one Python
worker); HASH and REBALANCE edges are shuffles (``partitionBy`` on the target partition the
sending subtask chose). So a Spark stage is a pipelined region of the JobGraph. Which
JobVertices a Spark stage runs, the JobMaster learns from the tasks' own reports (pyspark
pipelines Python RDDs into one JVM RDD, so RDD names cannot tell).

A vertex read by several consumers (a stream feeding several operators, or side outputs)
yields ``(output index, item)``; its RDD is persisted for the job, so it runs once however
many consumers read it, and each consumer reads its own items.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field
from typing import Any, Callable

from ..graph.jobgraph import JobEdge, JobGraph, JobVertex, OperatorSpec
from ..graph.streamgraph import OperatorKind, Partitioning
from ..runtime import textsplits
from ..taskmanager.task import InputKind, VertexTask
from ..taskmanager.writer import (
    OutputKind,
    RelayTask,
    VertexOutput,
    edge_output,
    identity_partitioner,
    output_for,
)
from .cache import CachedStream, CacheRegistry
from .files import file_listing


@dataclass(slots=True)
class SparkPlan:
    """The RDD of every sink vertex, in the graph's order (one Spark action each), the
    persisted RDDs of vertices read by several consumers (unpersisted when the job ends), and
    the streams this job caches (``cache()``: kept when it succeeds)."""

    sinks: list[tuple[JobVertex, Any]]
    persisted: list[Any] = field(default_factory=list)
    caches: list[CachedStream] = field(default_factory=list)

    def __iter__(self) -> Any:
        return iter(self.sinks)

    def release(self) -> None:
        for rdd in self.persisted:
            try:
                rdd.unpersist(blocking=False)
            except Exception:  # noqa: BLE001, S110 - Spark stopping: nothing left to free
                pass


def _task_factory(sc: Any, job_id: str, graph: JobGraph) -> Callable[..., VertexTask]:
    """The VertexTask of a vertex of ``graph``, with what every task of the job shares."""
    return functools.partial(VertexTask, job_id, dependencies=tuple(graph.python_dependencies),
                             sort_memory_mb=python_worker_memory_mb(sc),
                             job_parameters=dict(graph.job_parameters))


def translate(sc: Any, job_id: str, graph: JobGraph, caches: CacheRegistry | None = None) -> SparkPlan:
    """The Spark plan of ``graph``: RDDs built, nothing run yet. A vertex that starts from a
    cached stream reads it from ``caches``."""
    plan = SparkPlan([])
    rdds: dict[str, Any] = {}
    #: for a vertex with several outputs: its persisted RDD of (output index, item)
    shared: dict[str, Any] = {}

    def input_rdd(edge: JobEdge) -> Any:
        source = graph.vertex(edge.source)
        if edge.source not in shared:
            return rdds[edge.source]
        index = next(i for i, e in enumerate(source.outputs) if e is edge)
        return shared[edge.source].filter(_OutputFilter(index)).map(operator.itemgetter(1))

    make_task = _task_factory(sc, job_id, graph)

    for vertex in graph.vertices:
        many = _reads_by_index(vertex)
        outputs = [edge_output(e, graph.vertex(e.target).parallelism, vertex.parallelism)
                   for e in vertex.outputs] if many else None
        consumer_p = graph.vertex(vertex.outputs[0].target).parallelism if vertex.outputs else 1
        output = output_for(vertex, consumer_p) if not many else outputs[0]  # type: ignore[index]
        head = vertex.operators[0]
        cache_id = vertex.operators[-1].config.get("cache_id")
        if head.config.get("from_cache"):
            cached = caches.get(head.config["cache_id"]) if caches is not None else None
            if cached is None:
                raise LookupError(f"the cached stream '{head.name}' is gone from the session "
                                  "(invalidated, or the session restarted): build it again")
            task = make_task(vertex, InputKind.FORWARD, output, outputs=outputs,
                              timestamped_input=cached.timestamped)
            rdds[vertex.vertex_id] = cached.rdd.mapPartitionsWithIndex(task)
            if many:
                rdds[vertex.vertex_id] = shared[vertex.vertex_id] = _persisted(
                    rdds[vertex.vertex_id], plan)
            continue
        if head.kind is OperatorKind.SOURCE_COLLECTION:
            parent = sc.parallelize(range(vertex.parallelism), vertex.parallelism)
            task = make_task(vertex, InputKind.COLLECTION, output,
                              data_key=head.function_key, outputs=outputs)
        elif head.kind is OperatorKind.SOURCE_STREAM:
            if head.config.get("format") != "sequence":
                raise ValueError(f"the source '{head.name}' is unbounded: it runs in STREAMING mode only")
            parent = sc.range(int(head.config["start"]), int(head.config["end"]) + 1,
                              numSlices=vertex.parallelism)
            task = make_task(vertex, InputKind.SPARK_RECORDS, output, outputs=outputs)
        elif head.kind is OperatorKind.SOURCE_TEXT_FILE and head.config.get("file_source"):
            # a FileSource: Spark lists its files, each subtask reads whole files with the format
            parent = _fit(file_listing(sc, head.config["path"].split(",")).rdd, vertex.parallelism)
            task = make_task(vertex, InputKind.FILES, output, data_key=head.function_key,
                              outputs=outputs)
        elif (splits := _text_splits(head, vertex.parallelism)) is not None:
            parent = sc.parallelize(splits, vertex.parallelism)
            task = make_task(vertex, InputKind.TEXT_SPLITS, output, outputs=outputs)
        elif head.kind in (OperatorKind.SOURCE_TEXT_FILE, OperatorKind.SOURCE_SPARK):
            parent = _fit(_source_rdd(sc, head.kind, head.config, vertex.parallelism),
                          vertex.parallelism)
            task = make_task(vertex, InputKind.SPARK_RECORDS, output, outputs=outputs)
        else:
            parent, input_kind = _vertex_input(sc, vertex, input_rdd)
            task = make_task(vertex, input_kind, output, outputs=outputs,
                              timestamped_input=_timestamped_input(graph, vertex))
        # not preservesPartitioning: pyspark would then skip the next exchange's partitionBy
        # (same partitioner), and a HASH after a REBALANCE of equal parallelism would not shuffle
        if cache_id:
            # the cached stream's plain records are kept; its consumers get them through a relay
            plain_task = make_task(vertex, task.input_kind, VertexOutput(OutputKind.FORWARD),
                                    data_key=task.data_key,
                                    timestamped_input=task.timestamped_input)
            rdd = _cached(plan, job_id, cache_id, vertex, parent.mapPartitionsWithIndex(plain_task),
                          task)
        else:
            rdd = parent.mapPartitionsWithIndex(task)
        if many:
            rdd = shared[vertex.vertex_id] = _persisted(rdd, plan)
        rdds[vertex.vertex_id] = rdd
    plan.sinks = [(v, rdds[v.vertex_id]) for v in graph.vertices if v.is_sink]
    return plan


def python_worker_memory_mb(sc: Any) -> float:
    """``spark.python.worker.memory`` in MB: PySpark's bound for a Python worker's aggregation
    before it spills (its sorts and groupByKey), here a keyed BATCH operator's input's."""
    value = sc.getConf().get("spark.python.worker.memory", "512m").strip().lower().rstrip("b")
    scale = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1 << 20}
    if value and value[-1] in scale:
        return float(value[:-1]) * scale[value[-1]]
    return float(value)  # Spark's default unit here: MB


def _vertex_input(sc: Any, vertex: JobVertex,
                  input_rdd: Callable[[JobEdge], Any]) -> tuple[Any, InputKind]:
    """The RDD a non-source vertex reads (its inputs exchanged as their edges say), and how."""
    edges = vertex.inputs
    strategies = {e.ship_strategy for e in edges}
    if strategies == {Partitioning.FORWARD}:
        return input_rdd(edges[0]), InputKind.FORWARD
    if Partitioning.FORWARD in strategies or len(strategies) > 1:
        raise NotImplementedError(
            f"'{vertex.name}' mixes {sorted(s.value for s in strategies)} inputs")
    parents = [input_rdd(e) for e in edges]
    parent = parents[0] if len(parents) == 1 else sc.union(parents)
    parent = parent.partitionBy(vertex.parallelism, identity_partitioner)
    return parent, InputKind.KEYED if Partitioning.HASH in strategies else InputKind.EXCHANGE


def _timestamped_input(graph: JobGraph, vertex: JobVertex) -> bool:
    """True when the vertex's input records carry event time (all or none of its inputs)."""
    timestamped = {bool(graph.vertex(e.source).operators[-1].config.get("timestamped"))
                   for e in vertex.inputs}
    if len(timestamped) > 1:
        raise ValueError(f"'{vertex.name}' reads streams with and without event-time "
                         "timestamps: assign timestamps to each of them")
    return timestamped.pop()


def _cached(plan: SparkPlan, job_id: str, cache_id: str, vertex: JobVertex, plain: Any,
            task: VertexTask) -> Any:
    """The vertex's records kept as cached stream ``cache_id`` (its plain records, persisted),
    relayed to its consumers by ``task``."""
    from pyspark import StorageLevel

    plain = plain.persist(StorageLevel.MEMORY_AND_DISK)
    stamped = bool(vertex.operators[-1].config.get("timestamped"))
    plan.caches.append(CachedStream(cache_id, vertex.operators[-1].name, job_id, plain,
                                    vertex.parallelism, stamped))
    return plain.mapPartitionsWithIndex(RelayTask(task, stamped))


def _persisted(rdd: Any, plan: SparkPlan) -> Any:
    from pyspark import StorageLevel

    rdd = rdd.persist(StorageLevel.MEMORY_AND_DISK)
    plan.persisted.append(rdd)
    return rdd


def _reads_by_index(vertex: JobVertex) -> bool:
    """True when the vertex's consumers read it by output index: several of them, or a side
    output."""
    return len(vertex.outputs) > 1 or any(e.side_output is not None for e in vertex.outputs)


class _OutputFilter:
    """Keeps the items of one output of a vertex read by several consumers (picklable)."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __call__(self, item: tuple[int, Any]) -> bool:
        return item[0] == self.index


def _text_splits(head: OperatorSpec, parallelism: int) -> list[list[textsplits.Split]] | None:
    """For ``read_text_file`` of local files: the byte ranges each subtask reads itself."""
    if head.kind is not OperatorKind.SOURCE_TEXT_FILE or head.config.get("file_source"):
        return None
    return textsplits.plan(head.config["path"], parallelism)


def _source_rdd(sc: Any, kind: OperatorKind, config: dict[str, Any], parallelism: int) -> Any:
    if kind is OperatorKind.SOURCE_TEXT_FILE:
        rdd = sc.textFile(config["path"], parallelism)
        rdd.getNumPartitions()  # lists the input now: a missing path fails here, by name
        return rdd
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    query = config["query"].strip()
    df = spark.table(query) if query.replace(".", "").replace("_", "").isalnum() else spark.sql(query)
    return df.rdd


def _fit(rdd: Any, parallelism: int) -> Any:
    """Exactly ``parallelism`` partitions: one per ExecutionVertex of the source."""
    n = rdd.getNumPartitions()
    if n > parallelism:
        return rdd.coalesce(parallelism)
    if n < parallelism:
        return rdd.repartition(parallelism)
    return rdd
