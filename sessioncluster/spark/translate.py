"""JobGraph -> Spark plan: one ``mapPartitionsWithIndex`` per JobVertex.

A FORWARD edge stays inside one Spark stage (pyspark pipelines the vertices in one Python
worker); HASH and REBALANCE edges are shuffles (``partitionBy`` on the target partition the
sending subtask chose). So a Spark stage is a pipelined region of the JobGraph. Which
JobVertices a Spark stage runs, the JobMaster learns from the tasks' own reports (pyspark
pipelines Python RDDs into one JVM RDD, so RDD names cannot tell).
"""

from __future__ import annotations

from typing import Any

from ..graph.jobgraph import JobGraph, JobVertex
from ..graph.streamgraph import OperatorKind, Partitioning
from ..taskmanager.task import InputKind, VertexTask, identity_partitioner, output_for


def translate(sc: Any, job_id: str, graph: JobGraph) -> list[tuple[JobVertex, Any]]:
    """The RDD of every sink vertex, in the graph's order: one Spark action each."""
    rdds: dict[str, Any] = {}
    for vertex in graph.vertices:
        consumer_p = graph.vertex(vertex.outputs[0].target).parallelism if vertex.outputs else 1
        output = output_for(vertex, consumer_p)
        head = vertex.operators[0]
        if head.kind is OperatorKind.SOURCE_COLLECTION:
            parent = sc.parallelize(range(vertex.parallelism), vertex.parallelism)
            task = VertexTask(job_id, vertex, InputKind.COLLECTION, output, data_key=head.function_key)
        elif head.kind in (OperatorKind.SOURCE_TEXT_FILE, OperatorKind.SOURCE_SPARK):
            parent = _fit(_source_rdd(sc, head.kind, head.config, vertex.parallelism),
                          vertex.parallelism)
            task = VertexTask(job_id, vertex, InputKind.SPARK_RECORDS, output)
        else:
            edges = vertex.inputs
            strategies = {e.ship_strategy for e in edges}
            if strategies == {Partitioning.FORWARD}:
                parent, input_kind = rdds[edges[0].source], InputKind.FORWARD
            elif Partitioning.FORWARD in strategies or len(strategies) > 1:
                raise NotImplementedError(
                    f"'{vertex.name}' mixes {sorted(s.value for s in strategies)} inputs")
            else:
                parents = [rdds[e.source] for e in edges]
                parent = parents[0] if len(parents) == 1 else sc.union(parents)
                parent = parent.partitionBy(vertex.parallelism, identity_partitioner)
                input_kind = InputKind.KEYED if Partitioning.HASH in strategies else InputKind.EXCHANGE
            task = VertexTask(job_id, vertex, input_kind, output)
        # not preservesPartitioning: pyspark would then skip the next exchange's partitionBy
        # (same partitioner), and a HASH after a REBALANCE of equal parallelism would not shuffle
        rdds[vertex.vertex_id] = parent.mapPartitionsWithIndex(task)
    return [(v, rdds[v.vertex_id]) for v in graph.vertices if v.is_sink]


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
