"""Hand-made JobDetails and ClusterOverview for the unit tests (no Spark, no kernel)."""

from __future__ import annotations

from typing import Any

from sessioncluster.graph.jobgraph import JobEdge, JobGraph, JobVertex, OperatorSpec
from sessioncluster.graph.lifecycle import ExecutionState as E
from sessioncluster.graph.lifecycle import JobStatus as J
from sessioncluster.graph.streamgraph import OperatorKind as K
from sessioncluster.graph.streamgraph import Partitioning as P
from sessioncluster.protocol.messages import (
    ClusterOverview,
    ExecutionInfo,
    JobDetails,
    JobSummary,
    LibraryCacheStats,
    TaskError,
    TaskManagerInfo,
    VertexInfo,
)

JOB_ID = "0123456789abcdef0123456789abcdef"
ACCUMULATORS: dict[str, Any] = {"lines": 4242, "mean length": 12.5, "lengths": {1: 3, 2: 7, 5: 1},
                                "seen": ["a", "b"]}


def job_graph() -> JobGraph:
    """[collection -> tokenize] and [text file] feed [count -> sink] (HASH and REBALANCE)."""
    src = JobVertex("v-src", "Source: Collection Source -> tokenize <words> & 'more'",
                    [OperatorSpec(1, K.SOURCE_COLLECTION, "Source: Collection Source"),
                     OperatorSpec(2, K.FLAT_MAP, "tokenize <words> & 'more'")], 2)
    text = JobVertex("v-text", "Source: Text File", [OperatorSpec(3, K.SOURCE_TEXT_FILE,
                                                                  "Source: Text File")], 1)
    count = JobVertex("v-count", "Keyed Aggregation -> Sink: Collect",
                      [OperatorSpec(4, K.REDUCE, "Keyed Aggregation"),
                       OperatorSpec(5, K.SINK_COLLECT, "Sink: Collect")], 2)
    for source, strategy in ((src, P.HASH), (text, P.REBALANCE)):
        edge = JobEdge(source.vertex_id, count.vertex_id, strategy)
        source.outputs.append(edge)
        count.inputs.append(edge)
    return JobGraph("word count", [src, text, count])


def job_details(status: J = J.FAILED) -> JobDetails:
    graph = job_graph()
    execs = [
        ExecutionInfo("v-src", 0, 0, E.FINISHED, "1", 0, 11, {}),
        ExecutionInfo("v-src", 1, 0, E.FAILED, "2", 0, 12, {}),
        ExecutionInfo("v-src", 1, 1, E.FINISHED, "1", 0, 15, {}),
        ExecutionInfo("v-text", 0, 0, E.FINISHED, "2", 0, 13, {}),
        ExecutionInfo("v-count", 0, 0, E.RUNNING, "1", 0, 16, {}),
        ExecutionInfo("v-count", 1, 0, E.FAILED, "2", 0, 17, {}),
    ]
    vertices = [VertexInfo(v.vertex_id, v.name, [op.name for op in v.operators], v.parallelism,
                           E.FINISHED, 100 + i, 200 + i) for i, v in enumerate(graph.vertices)]
    error = TaskError("ValueError", "bad record 'x'",
                      [("/home/me/job.py", 7, "tokenize", "raise ValueError(line)")],
                      "Keyed Aggregation", "2/2")
    return JobDetails(JobSummary(JOB_ID, "word count", status, 1000.0, 1003.5, 5, 4), graph,
                      vertices, execs, dict(ACCUMULATORS), error, error.format())


def taskmanager(tm_id: str, state: str = "REGISTERED") -> TaskManagerInfo:
    return TaskManagerInfo(tm_id, "host-a", 4000 + int(tm_id), 3000, 2000, 2, 1, state,
                           last_heartbeat=99.5, registered_at=90.0,
                           library_cache=LibraryCacheStats(entries=3, bytes=100, hits=5, misses=3))


def overview() -> ClusterOverview:
    jobs = [JobSummary("j-done", "old job", J.FINISHED, 10.0, 12.0, 2, 2),
            JobSummary("j-run", "live job", J.RUNNING, 50.0, None, 4, 1)]
    return ClusterOverview("dev", True, "local-cluster[2,2,1024]", 1234,
                           [taskmanager("1"), taskmanager("2")], jobs, 2)
