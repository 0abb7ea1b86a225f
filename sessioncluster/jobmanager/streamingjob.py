"""A STREAMING job: its JobGraph as Structured Streaming queries (one per group of sinks that
share upstream vertices), owned by one
:class:`StreamingJob` that stays RUNNING until the job is cancelled, stopped with a savepoint,
fails past its restart strategy, or its bounded sources are consumed (FINISHED).

A checkpoint is one committed micro-batch (Spark's offsets, commit log and state-store version);
its statistics come from the queries' progress reports. A savepoint is a copy of the queries'
checkpoints taken between two micro-batches, with a manifest (:mod:`.savepoint`).

Threads: the job's thread starts the queries and watches them (every ``WATCH_SECONDS``); the
sinks run on Spark's stream threads (``foreachBatch``); every change of the job's state goes to
the JobManager's loop with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import glob
import itertools
import logging
import os
import shutil
import socket
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import psutil

from ..accumulators import Accumulator
from ..graph.jobgraph import JobGraph
from ..graph.states import ExecutionState, JobStatus
from ..graph.streamgraph import OperatorKind
from ..protocol.messages import (
    AccumulatorsUpdated,
    CheckpointInfo,
    JobDetails,
    JobResultReply,
    StreamResults,
    TaskError,
    TaskEvent,
    VertexInfo,
)
from ..restart import RestartBackoff, RestartStrategyConfiguration
from ..spark.sql import spark_error_text
from ..spark.streaming import (
    DEFAULT_TRIGGER_MS,
    END_OF_INPUT_MS,
    MAX_TS,
    RecordCounts,
    StreamQuery,
    build_queries,
    compute_counts,
    controlled_watermarks,
    is_bounded,
    socket_peers,
    streaming_session,
    write_control,
    write_text_batch,
)
from ..streaming.runtime import is_keyed_head
from . import savepoint as savepoints
from .resourcemanager import ResourceManager
from .runner import JobRunner, Publish, SparkJobRunner, execution_infos, plain_values
from .streamingsubtasks import StreamingSubtasks

log = logging.getLogger("sessioncluster.streaming")
printed_log = logging.getLogger("sessioncluster.print")

#: how often the job's thread looks at its queries
WATCH_SECONDS = 0.25
#: results a collect or print sink keeps for its client, in bytes, before it drops the oldest
RESULT_BUFFER_BYTES = 64 * 1024 * 1024
#: how long a savepoint waits for the micro-batch in flight to end
QUIESCE_SECONDS = 60.0
#: how long the batch that runs with a socket job's final watermark is waited for (s)
FINAL_WATERMARK_SECONDS = 60.0
#: checkpoint statistics kept per job (Flink's web.checkpoints.history default is 10)
CHECKPOINT_HISTORY = 10


@dataclass(slots=True)
class ResultBuffer:
    """What one collect or print sink produced, by sequence number, for the client to fetch."""

    items: deque[tuple[int, bytes]] = field(default_factory=deque)
    next_seq: int = 0
    size: int = 0
    dropped: int = 0
    delivered_batches: set[tuple[str, int]] = field(default_factory=set)

    def add(self, batch_key: tuple[str, int], values: list[bytes]) -> bool:
        if batch_key in self.delivered_batches:
            return False  # foreachBatch ran a batch again after a restart: delivered already
        self.delivered_batches.add(batch_key)
        for v in values:
            self.items.append((self.next_seq, v))
            self.next_seq += 1
            self.size += len(v)
        while self.size > RESULT_BUFFER_BYTES and self.items:
            _, old = self.items.popleft()
            self.size -= len(old)
            self.dropped += 1
        return True

    def since(self, seq: int, limit: int) -> tuple[list[bytes], int]:
        """Up to ``limit`` values from sequence number ``seq`` on (the ones before it are
        acknowledged: dropped), and the sequence number to ask for next."""
        while self.items and self.items[0][0] < seq:
            _, old = self.items.popleft()
            self.size -= len(old)
        taken = list(itertools.islice(self.items, limit))
        if taken:
            return [v for _, v in taken], taken[-1][0] + 1
        return [], max(seq, self.next_seq)


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
        #: the watermarks fed by control records (``spark/streaming.py``): their delay and idle
        #: timeout, and the directory of each
        self.controlled = controlled_watermarks(job_graph)
        self.control_dir = self.work_dir / "watermarks"
        #: per idle-capable watermark: (its records out, since when (monotonic), the watermark it
        #: was last brought up to)
        self._idle: dict[str, tuple[int, float, int]] = {}
        #: the socket sources, when they are the job's only unbounded ones
        self._sockets = SocketPeers.of(job_graph)
        self.queries: dict[str, Any] = {}
        self.stream_queries: list[StreamQuery] = []
        self.results: dict[str, ResultBuffer] = {}
        self.checkpoints: deque[CheckpointInfo] = deque(maxlen=CHECKPOINT_HISTORY)
        self.checkpoint_counts = {"completed": 0, "failed": 0}
        self.restored: CheckpointInfo | None = None
        self.savepoints: list[str] = []
        self._seen_batches: set[tuple[str, int, Any]] = set()
        self.records_per_second = 0.0
        self.counter: Any = None
        #: how many times each vertex runs in the job's queries (its records are counted that often)
        self.paths = compute_counts(job_graph)
        self.watermark: int | None = None
        self.source_records = 0
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
                                            self.control_dir)
        self.results = {v.vertex_id: ResultBuffer() for q in self.stream_queries for v in q.sinks
                        if v.operators[-1].kind in (OperatorKind.SINK_COLLECT, OperatorKind.SINK_PRINT)}
        if self.bounded and self.controlled:
            # a bounded job's sources are read whole by its first micro-batch: Flink's final
            # watermark is read by it too, and moves the watermark once the batch is through
            # (then Spark's no-data batch fires the windows and event-time timers)
            self._write_final_watermark()
        restore = self.config.get("execution.savepoint.path")
        if restore and any((self.checkpoint_dir / q.key).exists() for q in self.stream_queries):
            # recovered by a new leader (HA): its latest checkpoint is newer than the savepoint
            log.info("streaming job %s resumes from its latest checkpoint in %s", self.job_id,
                     self.checkpoint_dir)
            restore = None
        if restore:
            info = savepoints.restore(Path(str(restore).removeprefix("file://")), self.stream_queries,
                                      self.checkpoint_dir,
                                      bool(self.config.get("execution.savepoint.ignore-unclaimed-state")))
            self.restored = CheckpointInfo(info.checkpoint_id, "COMPLETED", info.created_ms,
                                           info.created_ms, 0, info.state_size, 0,
                                           is_savepoint=True, external_path=str(restore))

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
            writer = (query.frame.writeStream.foreachBatch(self._sink_function(query))
                      .option("checkpointLocation", str(self.checkpoint_dir / query.key))
                      .queryName(f"{self.name} [{query.key}] {self.job_id[:8]}"))
            if self.bounded:
                writer = writer.trigger(availableNow=True)
            else:
                interval = self.interval_ms or DEFAULT_TRIGGER_MS
                writer = writer.trigger(processingTime=f"{interval} milliseconds")
            self.queries[query.key] = writer.start()

    def _sink_function(self, query: StreamQuery) -> Callable[[Any, int], None]:
        """The query's ``foreachBatch``: each sink gets its rows of the micro-batch (the batch
        is computed once, cached, when the query feeds several sinks)."""
        job = self
        key = query.key
        sinks = [(v.vertex_id, v.operators[-1].kind, str(v.operators[-1].config.get("path")))
                 for v in query.sinks]

        def deliver(rows: Any, batch_id: int, vertex_id: str, kind: OperatorKind, path: str) -> None:
            if kind is OperatorKind.SINK_TEXT:
                write_text_batch(rows, batch_id, path)
                return
            values = rows.select("v").toArrow().column(0).to_pylist()
            if kind is OperatorKind.SINK_PRINT:
                for v in values:
                    printed_log.info("%s", v.decode("utf-8", "replace"))
            job.results[vertex_id].add((key, batch_id), values)

        def write(batch_df: Any, batch_id: int) -> None:
            if len(sinks) == 1:
                deliver(batch_df, batch_id, *sinks[0])
                return
            from pyspark.sql.functions import col

            batch_df.persist()
            try:
                for i, sink in enumerate(sinks):
                    deliver(batch_df.filter(col("sink") == i), batch_id, *sink)
            finally:
                batch_df.unpersist()

        return write

    def _watch(self) -> None:
        """Until the job ends: progress into checkpoint statistics, a savepoint when one is
        asked for, and the queries' end (finished, failed, stopped)."""
        while True:
            self._collect_progress()
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
            if not self.bounded and self.controlled:
                self._idle_watermarks()
            gone = self._missing_source_directories()
            if gone:  # Spark's file source would go on listing nothing; restarting cannot help
                self._stop_queries()
                self.loop.call_soon_threadsafe(
                    self._failed, f"FileNotFoundError: the source directory {gone[0]} "
                                  "disappeared while the job ran", False)
                return
            if self._sockets and self._sockets.all_closed():
                # Flink's socket source ends when its peer closes: once Spark has read what was
                # sent, the job ends like a bounded one (FINISHED) if its other sources are
                # bounded, after its final watermark
                for query in self.queries.values():
                    query.processAllAvailable()
                self._final_watermark_while_running()
                self._stop_queries()
                self._collect_progress()
                self.loop.call_soon_threadsafe(self._finished, JobStatus.FINISHED)
                return
            ended = {k: q for k, q in self.queries.items() if not q.isActive}
            failed = [(k, q.exception()) for k, q in ended.items() if q.exception() is not None]
            if failed:
                self._stop_queries()
                self._collect_progress()
                self.loop.call_soon_threadsafe(self._failed, _query_error(failed[0][1]))
                return
            if ended and len(ended) == len(self.queries):
                self._collect_progress()
                self.loop.call_soon_threadsafe(self._finished, JobStatus.FINISHED)
                return
            time.sleep(WATCH_SECONDS)

    def _write_final_watermark(self) -> None:
        """Flink's final watermark: the end-of-input record into every controlled watermark
        (once per run)."""
        if not (self.control_dir / next(iter(self.controlled)) / "end.parquet").exists():
            for vid in self.controlled:
                write_control(self.control_dir / vid, END_OF_INPUT_MS, "end")

    def _final_watermark_while_running(self) -> None:
        """The final watermark of a job whose sockets have ended: its queries keep running (a
        socket source started again would connect again), read the end-of-input record, and
        run the batch that fires the event-time timers and windows it passes."""
        if not self.controlled:
            return
        self._write_final_watermark()
        log.info("streaming job %s: sockets closed, final watermark", self.job_id)
        final = END_OF_INPUT_MS - max(delay for delay, _ in self.controlled.values())
        waiting = {q.key for q in self.stream_queries if q.event_time}
        deadline = time.monotonic() + FINAL_WATERMARK_SECONDS
        for query in self.queries.values():
            query.processAllAvailable()  # the batch that reads the record and moves the watermark
        while waiting and time.monotonic() < deadline and not self._stop.is_set():
            for key in list(waiting):
                query = self.queries[key]
                # the batch after it runs with the final watermark (and reports it)
                marks = [(p.get("eventTime") or {}).get("watermark") for p in query.recentProgress]
                if not query.isActive or any(m and _watermark_ms(m) >= final for m in marks):
                    waiting.discard(key)
            time.sleep(WATCH_SECONDS)
        if waiting:
            log.warning("streaming job %s: no batch ran with the final watermark within %d s",
                        self.job_id, FINAL_WATERMARK_SECONDS)

    def _idle_watermarks(self) -> None:
        """``with_idleness``: a watermark whose vertex has put out nothing for its idle timeout
        is brought up to the latest of the others (from their largest output timestamps), so
        that Spark's minimum over a query's watermarks does not wait for it; Flink leaves an
        idle input out of the minimum, and takes the largest once all are idle."""
        try:
            counts = dict(self.counter.value) if self.counter is not None else {}
        except RuntimeError:  # Spark's scheduler thread was merging a task's counts: next round
            return
        now = time.monotonic()
        marks = {vid: counts[(vid, -1, MAX_TS)] - delay
                 for vid, (delay, _) in self.controlled.items() if (vid, -1, MAX_TS) in counts}
        for vid, (delay, idleness) in self.controlled.items():
            if idleness is None or vid not in marks:
                continue  # a watermark with no record yet does not hold Spark's back
            out = _records(counts, vid, "out")
            seen, since, raised = self._idle.get(vid, (-1, now, marks[vid]))
            if out != seen:
                self._idle[vid] = (out, now, max(raised, marks[vid]))
                continue
            target = max((m for v, m in marks.items() if v != vid), default=None)
            if now - since < idleness / 1000 or target is None or target <= max(raised, marks[vid]):
                continue
            write_control(self.control_dir / vid, target + delay, f"idle-{target}")
            self._idle[vid] = (out, since, target)
            log.info("streaming job %s: watermark of %s idle, brought up to %d", self.job_id,
                     vid[:8], target)

    def _missing_source_directories(self) -> list[str]:
        """The watched local directories (not globs) that no longer exist."""
        paths = [p for v in self.job_graph.vertices if v.operators[0].kind is OperatorKind.SOURCE_TEXT_FILE
                 for p in v.operators[0].config.get("path", "").split(",")
                 if p and "://" not in p and not glob.has_magic(p)]
        return [p for p in paths if not Path(p).exists()]

    def _collect_progress(self) -> None:
        for key, query in list(self.queries.items()):
            try:
                progress = query.recentProgress
            except Exception:  # noqa: BLE001 - the query is gone: nothing more to read
                continue
            for p in progress:
                batch = (key, int(p["batchId"]), p.get("timestamp"))
                if batch in self._seen_batches:
                    continue
                self._seen_batches.add(batch)
                self._on_progress(key, p)

    def _on_progress(self, key: str, p: dict[str, Any]) -> None:
        rows = int(p.get("numInputRows") or 0)
        watermark = (p.get("eventTime") or {}).get("watermark")
        if rows == 0 and (not watermark or _watermark_ms(watermark) == self.watermark):
            return  # a batch that read nothing and moved no watermark: no new checkpoint
        trigger = _epoch_ms(p.get("timestamp"))
        duration = int((p.get("durationMs") or {}).get("triggerExecution", 0))
        state_size = sum(int(op.get("memoryUsedBytes") or 0) for op in p.get("stateOperators") or [])
        self.source_records += rows
        self.records_per_second = float(p.get("processedRowsPerSecond") or 0.0)
        if watermark:
            self.watermark = _watermark_ms(watermark)
        self.checkpoint_counts["completed"] += 1
        info = CheckpointInfo(self.checkpoint_counts["completed"], "COMPLETED", trigger,
                              trigger + duration, duration, state_size, rows,
                              batch_id=int(p["batchId"]), query=key)
        self.checkpoints.append(info)

    def _stop_queries(self) -> None:
        for query in list(self.queries.values()):
            try:
                _quiesce(query)
                query.stop()
            except Exception:  # noqa: BLE001 - stopping anyway
                log.warning("job %s: stopping a query failed", self.job_id, exc_info=True)

    def _take_savepoint(self, path: str, stop: bool, future: Future[str]) -> None:
        """Stop the queries between two micro-batches, copy their checkpoints, and start them
        again on the same checkpoints unless the job stops here."""
        try:
            self._stop_queries()
            self._collect_progress()
            location = savepoints.write(Path(path), self.job_id, self.job_graph, self.stream_queries,
                                        self.checkpoint_dir, self.checkpoint_counts["completed"])
            self.savepoints.append(str(location))
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
            self.final_accumulators = self.graph.final_accumulators()
        self.end(status)

    def _failed(self, text: str, restartable: bool = True) -> None:
        if self.status.is_globally_terminal:
            return
        self.error_text = text
        if self.cancel_requested:
            self._finished(JobStatus.CANCELED)
            return
        if restartable and self.backoff.can_restart(time.time()):
            self.backoff.restarts += 1
            log.info("streaming job %s failed; restart %d from its latest checkpoint in %.1f s",
                     self.job_id, self.backoff.restarts, self.backoff.delay_seconds)
            self._set_status(JobStatus.RESTARTING)
            self.background.start(self._run_again())
            return
        self._set_status(JobStatus.FAILING)
        self.graph.fail_pending()
        self.end(JobStatus.FAILED)

    async def _run_again(self) -> None:
        await asyncio.sleep(self.backoff.delay_seconds)
        if self.cancel_requested or self.status is not JobStatus.RESTARTING:
            return
        self.graph.new_attempts()
        self.subtasks.carry_over()
        self.queries.clear()
        self._set_status(JobStatus.RUNNING)
        threading.Thread(target=self._spark_thread, name=f"StreamingJob-{self.job_id[:8]}-restart",
                         daemon=True).start()

    def cancel(self) -> None:
        if self.status.is_globally_terminal or self.cancel_requested:
            return
        self.cancel_requested = True
        self._set_status(JobStatus.CANCELLING)
        self.graph.start_canceling()
        if self.status is JobStatus.RESTARTING or not self.queries:
            self._finished(JobStatus.CANCELED)
            return
        self._stop.set()

    def on_end(self) -> None:
        shutil.rmtree(self.work_dir, ignore_errors=True)
        self.publish(self.job_id, AccumulatorsUpdated(
            self.job_id, plain_values(self.final_accumulators), final=True))

    def result(self) -> JobResultReply:
        if not self.status.is_globally_terminal:
            return JobResultReply(self.job_id, False, self.status)
        return JobResultReply(
            self.job_id, True, self.status, accumulators={
                name: acc.to_wire() for name, acc in self.final_accumulators.items()},
            net_runtime_ms=self.runtime_ms(), error_text=self.error_text)

    # -- what clients ask ------------------------------------------------------------------------
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
        buffers = self.results
        sink_id = sink_id or None
        if not buffers and not self.stream_queries:  # not built yet, or the job failed before
            return StreamResults(self.job_id, sink_id or "", [], after,
                                 self.status.is_globally_terminal, self.status, self.error_text)
        if sink_id is None and len(buffers) == 1:
            sink_id = next(iter(buffers))
        buffer = buffers.get(sink_id or "")
        if buffer is None:
            raise LookupError(f"job {self.job_id} has no collect or print sink {sink_id!r}")
        if peek:
            latest = [v for _, v in list(buffer.items)[-limit:]]
            return StreamResults(self.job_id, sink_id or "", latest, after, False, self.status,
                                 self.error_text)
        values, next_seq = buffer.since(after, limit)
        return StreamResults(self.job_id, sink_id or "", values, next_seq,
                             self.status.is_globally_terminal and next_seq >= buffer.next_seq,
                             self.status, self.error_text)

    def details(self) -> JobDetails:
        vertices = []
        for vid, ejv in self.graph.job_vertices.items():
            jv = ejv.job_vertex
            rin, rout = self.graph.vertex_records(vid)
            vertices.append(VertexInfo(vid, jv.name, [op.name for op in jv.operators],
                                       jv.parallelism, ejv.aggregate_state, rin, rout))
        accs = (self.final_accumulators if self.status.is_globally_terminal
                else self.graph.live_accumulators())
        return JobDetails(self.summary(), self.job_graph, vertices, execution_infos(self.graph),
                          plain_values(accs), self._user_error(), self.error_text,
                          self.spark_jobs, dict(self.graph.status_times),
                          streaming=self.streaming_info())

    def _user_error(self) -> TaskError | None:
        """The error of the last failed attempt that reported one (the user's traceback)."""
        failed = [ex for ex in self.graph.all_executions()
                  if ex.state is ExecutionState.FAILED and ex.error is not None]
        return max(failed, key=lambda ex: ex.state_times.get("FAILED", 0.0)).error if failed else None

    def streaming_info(self) -> dict[str, Any]:
        return {"checkpoints": list(self.checkpoints), "counts": dict(self.checkpoint_counts),
                "restored": self.restored, "savepoints": list(self.savepoints),
                "interval_ms": self.interval_ms, "records_per_second": self.records_per_second,
                "watermark": self.watermark, "checkpoint_dir": str(self.checkpoint_dir),
                "restarts": self.backoff.restarts}


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


def _records(counts: dict[Any, int], vertex_id: str, direction: str) -> int:
    """A vertex's records in or out over all its subtasks, from ``RecordCounts``."""
    return sum(n for (v, _, d), n in counts.items() if v == vertex_id and d == direction)


def _epoch_ms(iso: str | None) -> int:
    if not iso:
        return int(time.time() * 1000)
    from datetime import datetime

    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def _watermark_ms(iso: str) -> int:
    """A progress report's watermark in ms; the final watermark (end of input) is beyond the
    years Python reads, and is Flink's MAX watermark, Long.MAX_VALUE."""
    try:
        return _epoch_ms(iso)
    except ValueError:
        return 2**63 - 1


class SocketPeers:
    """The peers of a job's socket sources, as the Spark driver's connections to them show.

    Spark's socket source stops reading when its peer closes and waits for more, forever; Flink's
    ends. A connection seen once that is now CLOSE_WAIT (the peer closed, Spark did not) or gone
    means that source has ended."""

    def __init__(self, peers: list[tuple[str, int]]) -> None:
        self.peers = {(_resolve(host), port) for host, port in peers}
        self.seen: set[tuple[str, int]] = set()
        self.closed_checks = 0

    @classmethod
    def of(cls, graph: JobGraph) -> "SocketPeers | None":
        """The job's socket peers, or None when it has none or another unbounded source."""
        peers = socket_peers(graph)
        return cls(peers) if peers else None

    def all_closed(self) -> bool:
        open_now: set[tuple[str, int]] = set()
        for proc in psutil.Process().children(recursive=True):
            try:
                connections = proc.net_connections(kind="tcp")
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            for c in connections:
                # a Java socket is often IPv6 with the IPv4 address mapped in
                peer = (c.raddr.ip.removeprefix("::ffff:"), c.raddr.port) if c.raddr else None
                if peer in self.peers:
                    self.seen.add(peer)  # connected, whether or not the peer has closed since
                    if c.status == psutil.CONN_ESTABLISHED:
                        open_now.add(peer)
        closed = self.seen == self.peers and not open_now
        # twice in a row: Spark's reader thread has read what the peer sent before closing
        self.closed_checks = self.closed_checks + 1 if closed else 0
        return self.closed_checks >= 2


def _resolve(host: str) -> str:
    try:
        return socket.gethostbyname(host)
    except OSError:
        return host
