"""A Flink SQL ``INSERT INTO`` (or ``EXECUTE STATEMENT SET``) in STREAMING mode, run as a job.

:class:`StreamingSqlJob` runs the planned statement
(:class:`~..spark.flinksql.streaming.StreamingStatementJob`): one Structured Streaming query per
INSERT, its sink written by ``foreachBatch``, its checkpoint under the job's checkpoint
directory. It stays RUNNING until it is cancelled or a query fails; a statement whose every
source is bounded reads them once and FINISHES. Its JobGraph is the statement's shape (a
source vertex per table read, a vertex per INSERT's query and sink); the client gets its answer
(the job id) as soon as the job runs, as Flink's ``execute_sql`` returns for an INSERT.

Savepoints are the DataStream jobs' (:mod:`.savepoint`): the queries stopped between two
micro-batches, their checkpoints (offsets, state store, and the changelog state of an updating
query) copied with a manifest, one query per INSERT keyed ``insert-<i>``; the same statement
run with ``execution.savepoint.path`` resumes from it.

Threads: the job's thread starts the queries and watches them; the sinks run on Spark's stream
threads; every change of the job's state goes to the loop with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable

from ..api.checkpoint_config import parse_duration_ms
from ..graph.jobgraph import JobGraph, JobVertex
from ..graph.lifecycle import ExecutionState, JobStatus
from ..graph.streamgraph import Partitioning
from ..protocol.messages import JobDetails, Message, SqlResult, StreamResults, VertexInfo
from ..spark.flinksql.outcome import rows_as_arrow_ipc
from ..spark.flinksql.streaming import (
    StreamingInsert,
    StreamingStatementJob,
    batch_changelog,
    collected,
    is_updating,
    write_batch,
)
from ..spark.sql import spark_error_text
from ..spark.streaming import DEFAULT_TRIGGER_MS, StreamQuery
from . import savepoint as savepoints
from .resourcemanager import ResourceManager
from .runner import JobRunner, Publish, SparkJobRunner, execution_infos
from .streamresults import JobResults

log = logging.getLogger("sessioncluster.streamingsql")

#: how often the job's thread looks at its queries
WATCH_SECONDS = 0.25


def statement_vertices(statement: StreamingStatementJob
                       ) -> list[tuple[JobVertex, dict[str, Partitioning]]]:
    """The statement's JobVertices and their inputs: ``Source: <table>`` per table read, then
    per INSERT its query and sink (``<operator> -> Sink: <table>``), fed by what it reads."""
    sources = sorted({name for insert in statement.inserts for name in insert.sources})
    out: list[tuple[JobVertex, dict[str, Partitioning]]] = [
        (JobVertex(f"source-{name}", f"Source: {name}", [], 1), {}) for name in sources]
    for i, insert in enumerate(statement.inserts):
        operator = "GroupAggregate" if insert.output_mode == "update" else "Calc"
        vertex = JobVertex(f"sink-{i}", f"{operator} -> Sink: {insert.table.name}", [], 1)
        out.append((vertex, {f"source-{name}": Partitioning.HASH for name in insert.sources}))
    return out


class StreamingSqlJob(SparkJobRunner):
    """One streaming INSERT statement as a job of the session."""

    def __init__(self, job_id: str, statement: StreamingStatementJob, rm: ResourceManager,
                 loop: asyncio.AbstractEventLoop, publish: Publish,
                 on_done: Callable[[JobRunner], None], session_dir: Path) -> None:
        self.spark = statement.inserts[0].frame.sparkSession
        super().__init__(job_id, statement.name, JobGraph(statement.name, []),
                         self.spark.sparkContext, rm, loop, publish, on_done)
        self.statement = statement
        for vertex, inputs in statement_vertices(statement):
            self.graph.add_job_vertex(vertex, inputs)
        config = statement.configuration
        # Flink's Duration text in SQL (SET 'execution.checkpointing.interval' = '10 s')
        self.interval_ms = parse_duration_ms(config.get("execution.checkpointing.interval") or "0")
        root = config.get("state.checkpoints.dir") or str(session_dir / "checkpoints")
        self.checkpoint_dir = Path(root.removeprefix("file://")) / job_id
        self.queries: list[Any] = []
        self._stop = threading.Event()
        #: rows each INSERT wrote into its sink (its vertex's records in)
        self.records = [0] * len(statement.inserts)
        #: a savepoint asked for: (directory, stop the job after it, its future)
        self._request: tuple[str, bool, Future[str]] | None = None
        #: a SELECT's rows, for its client to fetch (the DataStream jobs' result buffers)
        self.results = JobResults(job_id)
        if statement.collects:
            self.results.build_sinks(["sink-0"])

    def started_reply(self) -> Message | None:
        """Flink's answer to an INSERT: the job runs, one ``-1`` per sink; to a SELECT: its
        columns, the rows to come from :meth:`fetch_results`."""
        if self.statement.collects:
            frame = self.statement.inserts[0].frame
            return SqlResult(self.job_id, rows_as_arrow_ipc(list(frame.columns), []), 0,
                             JobStatus.RUNNING, column_types=list(self.statement.column_types),
                             live_result="update" if is_updating(self.statement) else "append")
        columns = [insert.sink_name for insert in self.statement.inserts]
        arrow = rows_as_arrow_ipc(columns, [tuple(-1 for _ in columns)])
        return SqlResult(self.job_id, arrow, 1, JobStatus.RUNNING,
                         column_types=["BIGINT"] * len(columns))

    # -- the job's thread -----------------------------------------------------------------
    def run_on_spark(self) -> None:
        self.loop.call_soon_threadsafe(self._deployed)
        try:
            if self.statement.bounded:
                for i, insert in enumerate(self.statement.inserts):
                    self._write(i, insert, insert.frame, 0)
                self.loop.call_soon_threadsafe(self._ended, JobStatus.FINISHED, None)
                return
            self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
            self._restore_savepoint()
            self._start_queries()
            status, error = self._watch()
        except Exception as exc:  # noqa: BLE001 - the job fails, the JobManager goes on
            log.exception("streaming SQL job %s failed", self.job_id)
            status, error = JobStatus.FAILED, spark_error_text(exc)
        self._stop_queries()
        self.loop.call_soon_threadsafe(self._ended, status, error)

    def _write(self, i: int, insert: StreamingInsert, df: Any, batch_id: int) -> None:
        """One micro-batch into the INSERT's sink, or a SELECT's into its result buffer."""
        if self.statement.collects:
            changes = batch_changelog(insert, df, batch_id, self._state_dir(i))
            self.results.buffers[f"sink-{i}"].add((f"insert-{i}", batch_id), collected(changes))
            self.records[i] += len(changes)
            return
        self.records[i] += write_batch(insert, df, batch_id, self._state_dir(i),
                                       self._printer(insert))

    def fetch_results(self, sink_id: str | None, after: int, limit: int,
                      peek: bool = False) -> StreamResults:
        """A SELECT's rows from sequence number ``after`` on (pickled ``(kind, values)``)."""
        if not self.statement.collects:
            raise LookupError(f"job {self.job_id} is an INSERT: its rows go to its sinks")
        return self.results.fetch(sink_id, after, limit, peek, self.status, self.error_text)

    def _state_dir(self, i: int) -> Path:
        return self.checkpoint_dir / f"insert-{i}" / "changelog"

    @staticmethod
    def _printer(insert: StreamingInsert) -> Callable[[str], None]:
        err = insert.table.options.get("standard-error", "false").lower() == "true"
        out = sys.stderr if err else sys.stdout
        return lambda line: print(line, file=out, flush=True)

    def _start_queries(self) -> None:
        interval = self.interval_ms or DEFAULT_TRIGGER_MS
        for i, insert in enumerate(self.statement.inserts):
            def write(df: Any, batch_id: int, insert: StreamingInsert = insert, i: int = i) -> None:
                self._write(i, insert, df, batch_id)

            query = (insert.frame.writeStream.outputMode(insert.output_mode).foreachBatch(write)
                     .option("checkpointLocation", str(self.checkpoint_dir / f"insert-{i}"))
                     .queryName(f"{self.name} [{i}] {self.job_id[:8]}")
                     .trigger(processingTime=f"{interval} milliseconds"))
            self.queries.append(query.start())

    def _stream_queries(self) -> list[StreamQuery]:
        """The statement's queries as the savepoint format names them (one per INSERT)."""
        return [StreamQuery(f"insert-{i}", [self.graph.job_vertices[f"sink-{i}"].job_vertex],
                            insert.frame, [], [])
                for i, insert in enumerate(self.statement.inserts)]

    def _restore_savepoint(self) -> None:
        """``execution.savepoint.path``: the savepoint's query checkpoints into this job's
        checkpoint directory, unless the job has checkpoints of its own there."""
        path = self.statement.configuration.get("execution.savepoint.path")
        if not path or any(self.checkpoint_dir.glob("insert-*")):
            return
        ignore = str(self.statement.configuration.get(
            "execution.savepoint.ignore-unclaimed-state", "false")).lower() == "true"
        savepoints.restore(Path(path.removeprefix("file://")), self._stream_queries(),
                           self.checkpoint_dir, ignore)

    def _take_savepoint(self, path: str, stop: bool, future: Future[str]) -> None:
        """Stop the queries between two micro-batches, copy their checkpoints, and start them
        again unless the job stops here."""
        self._stop_queries()
        try:
            batches = [q.lastProgress["batchId"] for q in self.queries if q.lastProgress]
            location = savepoints.write(Path(path), self.job_id, self.job_graph,
                                        self._stream_queries(), self.checkpoint_dir,
                                        max(batches, default=0))
            future.set_result(str(location))
        except Exception as exc:  # noqa: BLE001 - the client gets the reason
            future.set_exception(exc)
        self.queries = []
        if not stop:
            self._start_queries()

    def _watch(self) -> tuple[JobStatus, str | None]:
        """Until the job is cancelled, stopped with a savepoint, or a query ends: the job's
        end and its error."""
        while not self._stop.wait(WATCH_SECONDS):
            request, self._request = self._request, None
            if request is not None:
                self._take_savepoint(*request)
                if request[1]:
                    return JobStatus.FINISHED, None
                continue
            for query in self.queries:
                if not query.isActive:
                    error = query.exception()
                    if error is not None:
                        return JobStatus.FAILED, str(getattr(error, "desc", None) or error)
                    return JobStatus.FINISHED, None
        return JobStatus.CANCELED, None

    def _stop_queries(self) -> None:
        for query in self.queries:
            try:
                query.stop()
            except Exception:  # noqa: BLE001 - stopping anyway
                log.warning("job %s: stopping a query failed", self.job_id, exc_info=True)

    # -- the loop thread ------------------------------------------------------------------
    def _deployed(self) -> None:
        if self.status.is_globally_terminal or self.cancel_requested:
            return
        for ex in self.graph.all_executions():
            if ex.state is ExecutionState.CREATED:
                ex.transition_to(ExecutionState.RUNNING)

    def _ended(self, status: JobStatus, error: str | None) -> None:
        if self.status.is_globally_terminal:
            return
        if self.cancel_requested:
            status = JobStatus.CANCELED
        if status is JobStatus.CANCELED:
            self.graph.cancel_pending()
        elif status is JobStatus.FAILED:
            self.error_text = error
            self._set_status(JobStatus.FAILING)
            self.graph.fail_pending()
        else:
            for ex in self.graph.all_executions():
                if not ex.state.is_terminal:
                    ex.transition_to(ExecutionState.FINISHED)
        self.end(status)

    def cancel(self) -> None:
        if self.status.is_globally_terminal or self.cancel_requested:
            return
        self._stop.set()
        super().cancel()  # CANCELLING, and the bounded statement's Spark jobs cancelled

    def trigger_savepoint(self, path: str, stop: bool) -> "Future[str]":
        future: Future[str] = Future()
        if self.status is not JobStatus.RUNNING or self.statement.bounded:
            future.set_exception(RuntimeError(
                f"job {self.job_id} is {self.status.value}: a savepoint needs a RUNNING job "
                "with an unbounded source"))
        elif self._request is not None:
            future.set_exception(RuntimeError(f"a savepoint of job {self.job_id} is in progress"))
        else:
            self._request = (path, stop, future)
        return future

    def final_reply(self) -> Message:
        text = self.error_text or f"the job is {self.status.value}"
        return SqlResult(self.job_id, b"", 0, self.status, text)

    def details(self) -> JobDetails:
        def records_in(vertex_id: str) -> int:
            return self.records[int(vertex_id[5:])] if vertex_id.startswith("sink-") else 0

        vertices = [VertexInfo(vid, ejv.job_vertex.name, [], ejv.parallelism,
                               ejv.aggregate_state, records_in(vid), 0)
                    for vid, ejv in self.graph.job_vertices.items()]
        return JobDetails(self.summary(), self.job_graph, vertices, execution_infos(self.graph), {},
                          None, self.error_text, self.spark_jobs, dict(self.graph.status_times),
                          streaming={"interval_ms": self.interval_ms,
                                     "checkpoint_dir": str(self.checkpoint_dir)})
