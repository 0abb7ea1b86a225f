"""A STREAMING job: its JobGraph as Structured Streaming queries (one per group of sinks that
share upstream vertices), owned by one :class:`StreamingJob` that stays RUNNING until the job is
cancelled, stopped with a savepoint, fails past its restart strategy, or its bounded sources are
consumed (FINISHED).

The queries' lifecycle (checkpoints, savepoints, watching, restarts, cancel) is
:class:`~.streamingrunner.StreamingRunner`'s, shared with the streaming Flink SQL job. One idea
each lives beside this runner: its subtasks' reports (:mod:`.streamingsubtasks`), its results
(:mod:`.streamresults`), its watermark control (:mod:`.streamwatermarks`), and the ends of its
sources that Spark does not see (:mod:`.streamsources`). The restart sequence is
:class:`~.runner.SparkJobRunner`'s, shared with the BATCH JobMaster.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from pathlib import Path
from typing import Any, Callable

from ..api.accumulators import Accumulator
from ..graph.jobgraph import JobGraph
from ..graph.lifecycle import ExecutionState, JobStatus
from ..graph.streamgraph import OperatorKind
from ..protocol.messages import (
    AccumulatorsUpdated,
    JobDetails,
    JobResultReply,
    StreamResults,
    TaskError,
    TaskEvent,
    VertexInfo,
)
from ..spark.driver import incremental_checkpoints
from ..spark.filesink import sink_program
from ..spark.flinksql.feeds import OutboxFeed
from ..spark.flinksql.tablestream import TableSources
from ..spark.sources import is_bounded
from ..spark.streaming import DEFAULT_TRIGGER_MS, RecordCounts, build_queries
from ..spark.warmup import streaming_session
from ..streaming.runtime import is_keyed_head
from .resourcemanager import ResourceManager
from .runner import JobRunner, Publish, execution_infos, plain_values
from .streamingrunner import StreamingRunner
from .streamingsubtasks import StreamingSubtasks
from .streamresults import JobResults
from .streamsources import SocketPeers, missing_source_directories
from .streamwatermarks import WatermarkControl

log = logging.getLogger("sessioncluster.streaming")


class StreamingJob(StreamingRunner):
    """Runs one STREAMING JobGraph as Structured Streaming queries on the warm SparkSession."""

    def __init__(self, job_id: str, job_graph: JobGraph, spark: Any, rm: ResourceManager,
                 loop: asyncio.AbstractEventLoop, publish: Publish,
                 on_done: Callable[[JobRunner], None], blobs: Callable[[str], bytes | None],
                 session_dir: Path, sql_planner: Any = None) -> None:
        config = dict(job_graph.configuration)
        super().__init__(job_id, job_graph.job_name, job_graph, spark.sparkContext, rm, loop,
                         publish, on_done, config,
                         int(config.get("execution.checkpointing.interval") or 0), session_dir,
                         job_graph.restart_strategy)
        # a session of its own (same SparkContext): SQL settings per job, e.g. how many state
        # partitions its keyed operators have
        keyed = [v.parallelism for v in job_graph.vertices if is_keyed_head(v)]
        self.spark = streaming_session(spark, max(keyed or [1]))
        retained = job_graph.configuration.get("state.checkpoints.num-retained")
        if retained:  # Flink's retained checkpoints: the micro-batches Spark keeps
            self.spark.conf.set("spark.sql.streaming.minBatchesToRetain", str(int(retained)))
        incremental_checkpoints(self.spark, job_graph.configuration)
        # this run's own (a job run again by a new leader, HA, may overlap a suspended run)
        self.work_dir = session_dir / "streaming" / f"{job_id}-{os.getpid()}-{id(self):x}"
        # the job's code and data, read now on the loop thread (the BlobServer is not shared)
        self._blob_data = {key: blobs(key) for key in job_graph.blob_keys}
        self.bounded = is_bounded(job_graph)
        self.watermarks = WatermarkControl(job_id, job_graph, self.work_dir / "watermarks")
        #: the socket sources, when they are the job's only unbounded ones
        self._sockets = SocketPeers.of(job_graph)
        self.results = JobResults(job_id)
        #: records in and out per subtask, and the watermark vertices' largest timestamps
        self.counter: Any = None
        #: the subtasks' reports, one Spark task per micro-batch, merged into the graph
        self.subtasks = StreamingSubtasks(self.graph, rm, lambda: self.cancel_requested)
        self.final_accumulators: dict[str, Accumulator[Any]] = {}
        #: the session's Flink SQL planner: it plans the queries of the job's Table sources
        self.sql_planner = sql_planner
        self.table_sources: TableSources | None = None

    # -- the job's thread -----------------------------------------------------------------------
    def set_up(self) -> None:
        """Once per job: the queries' DataFrames (the savepoint restored by the runner)."""
        self.counter = self.sc.accumulator({}, RecordCounts())
        if self.sql_planner is not None:
            self.table_sources = TableSources(self.sql_planner, self.checkpoint_dir,
                                              tuple(self.job_graph.python_dependencies))
        self.stream_queries = build_queries(self.spark, self.job_id, self.job_graph, self._blobs,
                                            self.checkpoint_dir / "inputs", self.counter,
                                            self.watermarks.control_dir, self.table_sources)
        self.results.build(self.stream_queries)
        if self.bounded and self.watermarks:
            # a bounded job's sources are read whole by its first micro-batch: Flink's final
            # watermark is read by it too, and moves the watermark once the batch is through
            self.watermarks.write_final()
            if self._fires_in_its_batch():
                self.spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")

    def _fires_in_its_batch(self) -> bool:
        """True when a bounded job's keyed vertices fire every window and event-time timer in
        the micro-batch that reads its input (``KeyedVertex.run``), so that Spark's no-data
        batch after it would only move the watermark: not for a job restored from a savepoint
        (a key with state and no input fires in that batch), nor with a Table's source (its
        query may hold Spark's own windows, which fire there)."""
        return not self.config.get("execution.savepoint.path") and not any(
            v.operators[0].kind is OperatorKind.SOURCE_TABLE for v in self.job_graph.vertices)

    def _blobs(self, keys: list[str]) -> dict[str, bytes]:
        out = {}
        for key in keys:
            data = self._blob_data.get(key)
            if data is None:
                raise LookupError(f"blob {key[:12]} of job {self.job_id} is gone from the BlobServer")
            out[key] = data
        return out

    def start_queries(self) -> None:
        for query in self.stream_queries:
            checkpoint = self.checkpoint_dir / query.key
            write = self.results.sink_function(
                query, checkpoint, lambda v: sink_program(self.job_id, self.job_graph, v, self._blobs))
            writer = (query.frame.writeStream.foreachBatch(write)
                      .option("checkpointLocation", str(checkpoint))
                      .queryName(f"{self.name} [{query.key}] {self.job_id[:8]}"))
            if self.bounded:
                writer = writer.trigger(availableNow=True)
            else:
                interval = self.interval_ms or DEFAULT_TRIGGER_MS
                writer = writer.trigger(processingTime=f"{interval} milliseconds")
            self.queries[query.key] = writer.start()
        for feeder in self.feeds():
            # an updating Table's changelog, read by the queries above
            self.queries[feeder.key] = feeder.start(
                self.interval_ms or DEFAULT_TRIGGER_MS,
                f"{self.name} [{feeder.key}] {self.job_id[:8]}")

    def feeds(self) -> list[OutboxFeed]:
        """The feeding queries of the job's updating Tables."""
        return self.table_sources.feeders if self.table_sources is not None else []

    def commit_outputs(self) -> None:
        self.results.commit_files()  # the FileSinks' files of the batches Spark committed

    def sources_ended(self) -> tuple[Any, ...] | None:
        """What the loop is told when a source ended that Spark does not see end: a watched
        directory gone (restarting cannot help) or every socket's peer closed (then the job ends
        like a bounded one, after its final watermark); None while they have not. Idle sources'
        watermarks are brought up here too."""
        if not self.bounded and self.watermarks:
            self.watermarks.bring_up_idle(self.counter)
        gone = missing_source_directories(self.job_graph)
        if gone:
            self.stop_queries()
            return (self.failed, f"FileNotFoundError: the source directory {gone[0]} "
                                 "disappeared while the job ran", False)
        if self._sockets and self._sockets.all_closed():
            for query in self.queries.values():
                query.processAllAvailable()  # what Spark's reader had read before the close
            self.watermarks.final_while_running(self.queries, self.stream_queries, self._stop)
            self.stop_queries()
            self.stats.collect(self.queries)
            return (self.finished, JobStatus.FINISHED)
        return None

    # -- the loop thread ------------------------------------------------------------------------
    def on_task_event(self, ev: TaskEvent) -> None:
        if self.status in (JobStatus.RESTARTING, JobStatus.CREATED) or self.status.is_globally_terminal:
            return  # a late report of a run that ended
        if self.subtasks.on_report(ev):
            self._schedule_accumulator_publish()
        self.progressed()

    def on_taskmanager_lost(self, tm_id: str) -> None:
        if not self.status.is_globally_terminal:
            self.subtasks.taskmanager_lost(tm_id)

    def finished(self, status: JobStatus) -> None:
        if self.status.is_globally_terminal:
            return
        if status is JobStatus.FINISHED:
            self.background.start(self._finish_when_reported())
            return
        self.end_as(status)

    async def _finish_when_reported(self) -> None:
        """FINISHED once the last micro-batch's reports are in (their accumulators count)."""
        if not await self.wait_for_progress(self.subtasks.settled):
            log.warning("streaming job %s: final reports missing", self.job_id)
        self.end_as(JobStatus.CANCELED if self.cancel_requested else JobStatus.FINISHED)

    def on_finished(self) -> None:
        self.final_accumulators = self.subtasks.accumulators()
        if self.bounded and self.watermarks:
            self.stats.input_ended()

    def before_run_again(self) -> None:
        self.subtasks.carry_over()
        super().before_run_again()

    def on_end(self) -> None:
        shutil.rmtree(self.work_dir, ignore_errors=True)
        self.publish(self.job_id, AccumulatorsUpdated(
            self.job_id, plain_values(self.final_accumulators), final=True))

    # -- what clients ask ------------------------------------------------------------------------
    def result(self) -> JobResultReply:
        if not self.status.is_globally_terminal:
            return JobResultReply(self.job_id, False, self.status)
        return JobResultReply(
            self.job_id, True, self.status, accumulators={
                name: acc.to_wire() for name, acc in self.final_accumulators.items()},
            net_runtime_ms=self.runtime_ms(), error_text=self.error_text)

    def fetch_results(self, sink_id: str | None, after: int, limit: int,
                      peek: bool = False) -> StreamResults:
        return self.results.fetch(sink_id, after, limit, peek, self.status, self.error_text)

    def details(self) -> JobDetails:
        vertices = []
        for vid, ejv in self.graph.job_vertices.items():
            jv = ejv.job_vertex
            rin, rout = self.graph.vertex_records(vid)
            vertices.append(VertexInfo(vid, jv.name, [op.name for op in jv.operators],
                                       jv.parallelism, ejv.aggregate_state, rin, rout))
        accs = (self.final_accumulators if self.status.is_globally_terminal
                else self.live_accumulators())
        return JobDetails(self.summary(), self.job_graph, vertices, execution_infos(self.graph),
                          plain_values(accs), self._user_error(), self.error_text,
                          self.spark_jobs, dict(self.graph.status_times),
                          streaming=self.streaming_info())

    def live_accumulators(self) -> dict[str, Accumulator[Any]]:
        return self.subtasks.accumulators()

    def _user_error(self) -> TaskError | None:
        """The error of the last failed attempt that reported one (the user's traceback)."""
        failed = [ex for ex in self.graph.all_executions()
                  if ex.state is ExecutionState.FAILED and ex.error is not None]
        return max(failed, key=lambda ex: ex.state_times.get("FAILED", 0.0)).error if failed else None
