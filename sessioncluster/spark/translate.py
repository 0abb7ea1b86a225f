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
from ..taskmanager.task import VertexTask, identity_partitioner, output_for


def translate(sc: Any, job_id: str, graph: JobGraph) -> list[tuple[JobVertex, Any]]:
    """The RDD of every sink vertex, in the graph's order: one Spark action each."""
    rdds: dict[str, Any] = {}
    for vertex in graph.vertices:
        if len(vertex.inputs) > 1:
            raise NotImplementedError(f"'{vertex.name}' has {len(vertex.inputs)} inputs: "
                                      "union is not supported yet")
        consumer_p = graph.vertex(vertex.outputs[0].target).parallelism if vertex.outputs else 1
        output = output_for(vertex, consumer_p)
        head = vertex.operators[0]
        if head.kind is OperatorKind.SOURCE_COLLECTION:
            parent = sc.parallelize(range(vertex.parallelism), vertex.parallelism)
            task = VertexTask(job_id, vertex, "source", output, data_key=head.function_key)
        else:
            edge = vertex.inputs[0]
            parent = rdds[edge.source]
            if edge.ship_strategy is Partitioning.FORWARD:
                input_kind = "forward"
            else:
                parent = parent.partitionBy(vertex.parallelism, identity_partitioner)
                input_kind = "keyed" if edge.ship_strategy is Partitioning.HASH else "exchange"
            task = VertexTask(job_id, vertex, input_kind, output)
        rdd = parent.mapPartitionsWithIndex(task, preservesPartitioning=True)
        rdds[vertex.vertex_id] = rdd
    return [(v, rdds[v.vertex_id]) for v in graph.vertices if v.is_sink]
