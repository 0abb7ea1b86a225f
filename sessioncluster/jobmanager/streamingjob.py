"""A STREAMING job: its JobGraph as Structured Streaming queries (one per group of sinks that
share upstream vertices), owned by one :class:`StreamingJob` that stays RUNNING until the job is
cancelled, stopped with a savepoint, fails past its restart strategy, or its bounded sources are
consumed (FINISHED).

The job runner here starts the queries and watches them; one idea each lives beside it: its
subtasks' reports (:mod:`.streamingsubtasks`), its results (:mod:`.streamresults`), its
checkpoint statistics (:mod:`.checkpointstats`), its watermark control (:mod:`.streamwatermarks`),
the ends of its sources that Spark does not see (:mod:`.streamsources`), and its savepoints
(:mod:`.savepoint`). The restart sequence is :class:`~.runner.SparkJobRunner`'s, shared with
the BATCH JobMaster.

A checkpoint is one committed micro-batch (Spark's offsets, commit log and state-store version);
a savepoint is a copy of the queries' checkpoints taken between two micro-batches, with a
manifest.

Threads: the job's thread starts the queries and watches them (every ``WATCH_SECONDS``); the
sinks run on Spark's stream threads (``foreachBatch``); every change of the job's state goes to
the JobManager's loop with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable

from ..api.accumulators import Accumulator
from ..api.restart import RestartBackoff, RestartStrategyConfiguration
from ..graph.jobgraph import JobGraph
from ..graph.lifecycle import ExecutionState, JobStatus
from ..protocol.messages import (
    AccumulatorsUpdated,
    JobDetails,
    JobResultReply,
    StreamResults,
    TaskError,
    TaskEvent,
    VertexInfo,
)
from ..spark.filesink import sink_program
from ..spark.sql import spark_error_text
from ..spark.streaming import (
    DEFAULT_TRIGGER_MS,
    RecordCounts,
    StreamQuery,
    build_queries,
    is_bounded,
    streaming_session,
)
from ..streaming.runtime import is_keyed_head
from . import savepoint as savepoints
from .checkpointstats import CheckpointStatistics
from .resourcemanager import ResourceManager
from .runner import JobRunner, Publish, SparkJobRunner, execution_infos, plain_values
from .streamingsubtasks import StreamingSubtasks
from .streamresults import JobResults
from .streamsources import SocketPeers, missing_source_directories
from .streamwatermarks import WatermarkControl

log = logging.getLogger("sessioncluster.streaming")

#: how often the job's thread looks at its queries
WATCH_SECONDS = 0.25
#: how long a savepoint waits for the micro-batch in flight to end
QUIESCE_SECONDS = 60.0


class StreamingJob(SparkJobRunner):
    """Runs one STREAMING JobGraph as Structured Streaming queries on the warm SparkSession."""

    def __init__(self, job_id: str, job_graph: JobGraph, spark: Any, rm: ResourceManager,
                 loop: asyncio.AbstractEventLoop, publish: Publish,
                 on_done: Callable[[JobRunner], None], blobs: Callable[[str], bytes | None],
                 session_dir: Path) -> None:
        super().__init__(job_id, job_graph.job_name, job_graph, spark.sparkContext, rm, loop,
                         publish, on_done)
        # a session of its own (same SparkContext): SQL settings per job, e.g. how many state
        # partitions its keyed operators have
        keyed = [v.parallelism for v in job_graph.vertices if is_keyed_head(v)]
        self.spark = streaming_session(spark, max(keyed or [1]))
        retained = job_graph.configuration.get("state.checkpoints.num-retained")
        if retained:  # Flink's retained checkpoints: the micro-batches Spark keeps
            self.spark.conf.set("spark.sql.streaming.minBatchesToRetain", str(int(retained)))
        self.config = dict(job_graph.configuration)
        self.interval_ms = int(self.config.get("execution.checkpointing.interval") or 0)
        root = self.config.get("state.checkpoints.dir") or str(session_dir / "checkpoints")
        self.checkpoint_dir = Path(root.removeprefix("file://")) / job_id
        # this run's own (a job run again by a new leader, HA, may overlap a suspended run)
        self.work_dir = session_dir / "streaming" / f"{job_id}-{os.getpid()}-{id(self):x}"
        # the job's code and data, read now on the loop thread (the BlobServer is not shared)
        self._blob_data = {key: blobs(key) for key in job_graph.blob_keys}
        self.bounded = is_bounded(job_graph)
        self.watermarks = WatermarkControl(job_id, job_graph, self.work_dir / "watermarks")
        #: the socket sources, when they are the job's only unbounded ones
        self._sockets = SocketPeers.of(job_graph)
        self.queries: dict[str, Any] = {}
        self.stream_queries: list[StreamQuery] = []
        self.results = JobResults(job_id)
        self.stats = CheckpointStatistics()
        #: records in and out per subtask, and the watermark vertices' largest timestamps
        self.counter: Any = None
        self.error_text = None
        strategy = job_graph.restart_strategy
        if (strategy is None or strategy.kind == "fallback") and self.interval_ms:
            # Flink: with checkpointing and no strategy of its own, a job restarts without end
            strategy = RestartStrategyConfiguration("fixed-delay", 2**31 - 1, 1000)
        self.backoff = RestartBackoff(strategy)
        self._request: tuple[str, bool, Future[str]] | None = None
        self._stop = threading.Event()
        #: the subtasks' reports, one Spark task per micro-batch, merged into the graph
        self.subtasks = StreamingSubtasks(self.graph, rm, lambda: self.cancel_requested)
        self.final_accumulators: dict[str, Accumulator[Any]] = {}

    # -- the job's thread -----------------------------------------------------------------------
    def run_on_spark(self) -> None:
        try:
            if not self.stream_queries:
                self._set_up()
        except Exception as exc:  # noqa: BLE001 - a program or savepoint that cannot run
            # fails at once: restarting would not change it
            log.info("streaming job %s cannot start: %s", self.job_id, exc)
            self.loop.call_soon_threadsafe(self._failed, f"{type(exc).__name__}: {exc}", False)
            return
        try:
            self._start_queries()
            self._watch()
        except Exception as exc:  # noqa: BLE001 - the job fails, the JobManager goes on
            log.exception("streaming job %s failed", self.job_id)
            self._stop_queries()
            self.loop.call_soon_threadsafe(self._failed, spark_error_text(exc))

    def _set_up(self) -> None:
        """Once per job: the queries' DataFrames, the checkpoint directory, and the restore of a
        savepoint into it."""
        self._check_checkpoint_dir()
        self.counter = self.sc.accumulator({}, RecordCounts())
        self.stream_queries = build_queries(self.spark, self.job_id, self.job_graph, self._blobs,
                                            self.checkpoint_dir / "inputs", self.counter,
                                            self.watermarks.control_dir)
        self.results.build(self.stream_queries)
        if self.bounded and self.watermarks:
            # a bounded job's sources are read whole by its first micro-batch: Flink's final
            # watermark is read by it too, and moves the watermark once the batch is through
            # (then Spark's no-data batch fires the windows and event-time timers)
            self.watermarks.write_final()
        self._restore_savepoint()

    def _restore_savepoint(self) -> None:
        """The savepoint the job starts from (``execution.savepoint.path``), into its
        checkpoint directory, unless a checkpoint of its own is there already."""
        restore = self.config.get("execution.savepoint.path")
        if restore and any((self.checkpoint_dir / q.key).exists() for q in self.stream_queries):
            # recovered by a new leader (HA): its latest checkpoint is newer than the savepoint
            log.info("streaming job %s resumes from its latest checkpoint in %s", self.job_id,
                     self.checkpoint_dir)
            return
        if restore:
            info = savepoints.restore(Path(str(restore).removeprefix("file://")), self.stream_queries,
                                      self.checkpoint_dir,
                                      bool(self.config.get("execution.savepoint.ignore-unclaimed-state")))
            self.stats.restored_from(info.checkpoint_id, info.created_ms, info.state_size, str(restore))

    def _blobs(self, keys: list[str]) -> dict[str, bytes]:
        out = {}
        for key in keys:
            data = self._blob_data.get(key)
            if data is None:
                raise LookupError(f"blob {key[:12]} of job {self.job_id} is gone from the BlobServer")
            out[key] = data
        return out

    def _check_checkpoint_dir(self) -> None:
        try:
            self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
            probe = self.checkpoint_dir / ".write-test"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise PermissionError(f"the checkpoint directory {self.checkpoint_dir.parent} is not "
                                  f"writable: {exc.strerror or exc}") from None

    def _start_queries(self) -> None:
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

    def _watch(self) -> None:
        """Until the job ends: progress into checkpoint statistics, a savepoint when one is
        asked for, and the queries' end (finished, failed, stopped)."""
        while True:
            self.stats.collect(self.queries)
            self.results.commit_files()  # the FileSinks' files of the batches Spark committed
            request = self._request
            if request is not None:
                self._request = None
                self._take_savepoint(*request)
                if request[1]:
                    self.loop.call_soon_threadsafe(self._finished, JobStatus.FINISHED)
                    return
                continue
            if self._stop.is_set():
                self._stop_queries()
                self.loop.call_soon_threadsafe(self._finished, JobStatus.CANCELED)
                return
            if not self.bounded and self.watermarks:
                self.watermarks.bring_up_idle(self.counter)
            ended = self._sources_ended() or self._queries_ended()
            if ended is not None:
                self.loop.call_soon_threadsafe(*ended)
                return
            time.sleep(WATCH_SECONDS)

    def _sources_ended(self) -> tuple[Any, ...] | None:
        """What the loop is told when a source ended that Spark does not see end: a watched
        directory gone (restarting cannot help) or every socket's peer closed (then the job ends
        like a bounded one, after its final watermark); None while they have not."""
        gone = missing_source_directories(self.job_graph)
        if gone:
            self._stop_queries()
            return (self._failed, f"FileNotFoundError: the source directory {gone[0]} "
                                  "disappeared while the job ran", False)
        if self._sockets and self._sockets.all_closed():
            for query in self.queries.values():
                query.processAllAvailable()  # what Spark's reader had read before the close
            self.watermarks.final_while_running(self.queries, self.stream_queries, self._stop)
            self._stop_queries()
            self.stats.collect(self.queries)
            return (self._finished, JobStatus.FINISHED)
        return None

    def _queries_ended(self) -> tuple[Any, ...] | None:
        """What the loop is told when the queries failed or all finished; None while they run."""
        ended = {k: q for k, q in self.queries.items() if not q.isActive}
        failed = [(k, q.exception()) for k, q in ended.items() if q.exception() is not None]
        if failed:
            self._stop_queries()
            self.stats.collect(self.queries)
            return (self._failed, _query_error(failed[0][1]))
        if ended and len(ended) == len(self.queries):
            self.stats.collect(self.queries)
            self.results.commit_files()
            return (self._finished, JobStatus.FINISHED)
        return None

    def _stop_queries(self) -> None:
        for query in list(self.queries.values()):
            try:
                _quiesce(query)
                query.stop()
            except Exception:  # noqa: BLE001 - stopping anyway
                log.warning("job %s: stopping a query failed", self.job_id, exc_info=True)
        self.results.commit_files()  # what the last micro-batches wrote (before a savepoint's copy)

    def _take_savepoint(self, path: str, stop: bool, future: Future[str]) -> None:
        """Stop the queries between two micro-batches, copy their checkpoints, and start them
        again on the same checkpoints unless the job stops here."""
        try:
            self._stop_queries()
            self.stats.collect(self.queries)
            location = savepoints.write(Path(path), self.job_id, self.job_graph, self.stream_queries,
                                        self.checkpoint_dir, self.stats.completed)
            self.stats.savepoints.append(str(location))
            future.set_result(str(location))
        except Exception as exc:  # noqa: BLE001 - the client gets the reason
            future.set_exception(exc)
        if not stop:
            self._start_queries()

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

    def _finished(self, status: JobStatus) -> None:
        if self.status.is_globally_terminal:
            return
        if status is JobStatus.FINISHED:
            self.background.start(self._finish_when_reported())
            return
        self._end_as(status)

    async def _finish_when_reported(self) -> None:
        """FINISHED once the last micro-batch's reports are in (their accumulators count)."""
        if not await self.wait_for_progress(self.subtasks.settled):
            log.warning("streaming job %s: final reports missing", self.job_id)
        self._end_as(JobStatus.CANCELED if self.cancel_requested else JobStatus.FINISHED)

    def _end_as(self, status: JobStatus) -> None:
        if self.status.is_globally_terminal:
            return
        if status is JobStatus.CANCELED:
            if self.status is not JobStatus.CANCELLING:
                self._set_status(JobStatus.CANCELLING)
            self.graph.start_canceling()
            self.graph.cancel_pending()
        else:
            for ejv in self.graph.job_vertices.values():
                for tv in ejv.task_vertices:
                    ex = tv.current_execution
                    if not ex.state.is_terminal:
                        ex.transition_to(ExecutionState.FINISHED)
            self.final_accumulators = self.subtasks.accumulators()
        self.end(status)

    def _failed(self, text: str, restartable: bool = True) -> None:
        if self.status.is_globally_terminal:
            return
        self.error_text = text
        if self.cancel_requested:
            self._end_as(JobStatus.CANCELED)
            return
        if restartable and self.backoff.can_restart(time.time()):
            self.restart(self.backoff, "restarts from its latest checkpoint")
            return
        self._set_status(JobStatus.FAILING)
        self.graph.fail_pending()
        self.end(JobStatus.FAILED)

    def before_run_again(self) -> None:
        self.subtasks.carry_over()
        self.queries.clear()

    def cancel(self) -> None:
        if self.status.is_globally_terminal or self.cancel_requested:
            return
        self.cancel_requested = True
        self._set_status(JobStatus.CANCELLING)
        self.graph.start_canceling()
        if self.status is JobStatus.RESTARTING or not self.queries:
            self._end_as(JobStatus.CANCELED)
            return
        self._stop.set()

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

    def trigger_savepoint(self, path: str, stop: bool) -> "Future[str]":
        future: Future[str] = Future()
        if self.status is not JobStatus.RUNNING or not self.queries:
            future.set_exception(RuntimeError(
                f"job {self.job_id} is {self.status.value}: a savepoint needs a RUNNING job"))
        elif self._request is not None:
            future.set_exception(RuntimeError(f"a savepoint of job {self.job_id} is in progress"))
        else:
            self._request = (path, stop, future)
        return future

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

    def streaming_info(self) -> dict[str, Any]:
        return {**self.stats.info(), "interval_ms": self.interval_ms,
                "checkpoint_dir": str(self.checkpoint_dir), "restarts": self.backoff.restarts}


def _quiesce(query: Any) -> None:
    """Wait (bounded) until the query is between two micro-batches: stopping one mid-batch can
    leave Spark's stream thread logging errors."""
    deadline = time.monotonic() + QUIESCE_SECONDS
    while time.monotonic() < deadline:
        try:
            if not query.isActive or not query.status.get("isTriggerActive"):
                return
        except Exception:  # noqa: BLE001 - gone already
            return
        time.sleep(0.02)


def _query_error(exc: Any) -> str:
    """The user's traceback out of a failed query's exception, else Spark's reason."""
    text = str(getattr(exc, "desc", None) or exc)
    marker = "Traceback (most recent call last):"
    if marker in text:
        tail = text[text.rindex(marker):]
        lines = []
        for line in tail.splitlines():
            if line.startswith("\tat ") or line.startswith("\n"):
                break
            lines.append(line)
        return "\n".join(lines).strip()
    return text.strip().splitlines()[0] if text.strip() else repr(exc)
