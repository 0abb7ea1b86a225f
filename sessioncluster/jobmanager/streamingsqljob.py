"""A Flink SQL ``INSERT INTO`` (or ``EXECUTE STATEMENT SET``) in STREAMING mode, run as a job.

:class:`StreamingSqlJob` runs the planned statement
(:class:`~..spark.flinksql.streaming.StreamingStatementJob`): one Structured Streaming query per
INSERT, its sink written by ``foreachBatch``, its checkpoint under the job's checkpoint
directory. It stays RUNNING until it is cancelled or a query fails; a statement whose every
source is bounded reads them once and FINISHES. Its JobGraph is the statement's shape (a
source vertex per table read, a vertex per INSERT's query and sink); the client gets its answer
(the job id) as soon as the job runs, as Flink's ``execute_sql`` returns for an INSERT.

The queries' lifecycle is the DataStream job's (:class:`~.streamingrunner.StreamingRunner`):
savepoints (the queries stopped between two micro-batches, their checkpoints, with the
changelog state of an updating query, copied with a manifest, one query per INSERT keyed
``insert-<i>``; the same statement run with ``execution.savepoint.path`` resumes from it), stop
with a savepoint, checkpoint statistics (REST ``/jobs/:id/checkpoints``), and Flink's restart
strategy (``restart-strategy.type`` and its options, or with checkpointing a restart without
end), from the latest checkpoint.

Threads: the job's thread starts the queries and watches them; the sinks run on Spark's stream
threads; every change of the job's state goes to the loop with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import logging
import pickle
import threading
from collections import deque
from pathlib import Path
from typing import Any, Callable

from ..api.checkpoint_config import parse_duration_ms
from ..api.restart import RestartStrategies, RestartStrategyConfiguration
from ..common.sqlscript import MAX_TABLE_RESULT_ROWS, RESULT_MODE
from ..graph.jobgraph import JobGraph, JobVertex
from ..graph.lifecycle import ExecutionState, JobStatus
from ..graph.streamgraph import Partitioning
from ..protocol.messages import (
    PRINT_SINK,
    PRINT_SINK_ERR,
    JobDetails,
    Message,
    SqlResult,
    StreamResults,
    VertexInfo,
)
from ..spark.flinksql.connectors import StagedBatch, staged_sink
from ..spark.flinksql.connectors.printing import PrintedLines
from ..spark.flinksql.microbatch import ChangelogState, batch_changelog, collected, write_batch
from ..spark.flinksql.outcome import rows_as_arrow_ipc
from ..spark.flinksql.streamingjob import StreamingInsert, StreamingStatementJob, is_updating
from ..spark.flinksql.updatingjoin import ChangelogFeed
from ..spark.sql import spark_error_text
from ..spark.streaming import DEFAULT_TRIGGER_MS, StreamQuery
from .resourcemanager import ResourceManager
from .runner import JobRunner, Publish, cancel_job_group, execution_infos
from .streamingrunner import StreamingRunner
from .streamresults import JobResults, MaterializedResult

log = logging.getLogger("sessioncluster.streamingsql")

#: the newest changes of a SELECT the JobManager keeps for its REST API and dashboard
#: (``/jobs/:jid/sql-result``), apart from the client's buffer, which forgets what the client has
#: fetched
LATEST_CHANGES = 1000


def statement_vertices(statement: StreamingStatementJob
                       ) -> list[tuple[JobVertex, dict[str, Partitioning]]]:
    """The statement's JobVertices and their inputs: ``Source: <table>`` per table read, then
    per INSERT its query and sink (``<operator> -> Sink: <table>``), fed by what it reads."""
    sources = sorted({name for insert in statement.inserts for name in insert.sources})
    out: list[tuple[JobVertex, dict[str, Partitioning]]] = [
        (JobVertex(f"source-{name}", f"Source: {name}", [], 1), {}) for name in sources]
    for i, insert in enumerate(statement.inserts):
        operator = insert.operator or (
            "PythonGroupTableAggregate" if insert.row_kinds else
            "GroupAggregate" if insert.output_mode == "update" else "Calc")
        vertex = JobVertex(f"sink-{i}", f"{operator} -> Sink: {insert.table.name}", [], 1)
        out.append((vertex, {f"source-{name}": Partitioning.HASH for name in insert.sources}))
    return out


def restart_strategy(config: dict[str, str]) -> RestartStrategyConfiguration | None:
    """Flink's restart strategy options of a SQL statement (``restart-strategy.type`` =
    ``none``, ``fixed-delay`` or ``failure-rate``, with their options); None (the default)
    otherwise."""
    kind = str(config.get("restart-strategy.type") or config.get("restart-strategy") or "")
    kind = kind.lower().replace("_", "-")
    kind = {"off": "none", "disable": "none", "fixeddelay": "fixed-delay",
            "failurerate": "failure-rate"}.get(kind, kind)

    def option(key: str, default: str) -> str:
        return str(config.get(f"restart-strategy.{kind}.{key}") or default)

    if kind == "none":
        return RestartStrategies.no_restart()
    if kind == "fixed-delay":
        return RestartStrategies.fixed_delay_restart(
            int(option("attempts", "1")), parse_duration_ms(option("delay", "1 s")))
    if kind == "failure-rate":
        return RestartStrategies.failure_rate_restart(
            int(option("max-failures-per-interval", "1")),
            parse_duration_ms(option("failure-rate-interval", "1 min")),
            parse_duration_ms(option("delay", "1 s")))
    return None


def result_rows(statement: StreamingStatementJob) -> int | None:
    """The rows a SELECT's result keeps, ``max-table-result.rows`` (a cell's ``--max-rows``):
    the newest unread ones of an append-only query, or of an updating one shown as a
    changelog (``result-mode`` ``changelog``); the rows of an updating one materialised on
    the JobManager (:func:`materialized`). None (the byte bound only) for an updating query
    read otherwise (``TableResult.collect()``), whose changes cannot be dropped."""
    text = str(statement.configuration.get(MAX_TABLE_RESULT_ROWS) or "").strip()
    mode = str(statement.configuration.get(RESULT_MODE) or "").strip().lower()
    if not text.isdigit() or (is_updating(statement) and mode not in ("table", "changelog")):
        return None  # (the planner refused a value that is not a positive integer)
    return int(text)


def materialized(statement: StreamingStatementJob) -> bool:
    """True when the JobManager materialises the SELECT's result (Flink SQL client's table
    mode, bounded in rows): an updating query with ``result-mode`` ``table`` and
    ``max-table-result.rows`` set, as a ``%%flink_sql`` cell in table mode asks."""
    mode = str(statement.configuration.get(RESULT_MODE) or "").strip().lower()
    return (statement.collects and is_updating(statement) and mode == "table"
            and result_rows(statement) is not None)


class StreamingSqlJob(StreamingRunner):
    """One streaming INSERT statement as a job of the session."""

    def __init__(self, job_id: str, statement: StreamingStatementJob, rm: ResourceManager,
                 loop: asyncio.AbstractEventLoop, publish: Publish,
                 on_done: Callable[[JobRunner], None], session_dir: Path) -> None:
        spark = statement.inserts[0].frame.sparkSession
        config = statement.configuration
        # Flink's Duration text in SQL (SET 'execution.checkpointing.interval' = '10 s')
        interval_ms = parse_duration_ms(config.get("execution.checkpointing.interval") or "0")
        super().__init__(job_id, statement.name, JobGraph(statement.name, []), spark.sparkContext,
                         rm, loop, publish, on_done, config, interval_ms, session_dir,
                         restart_strategy(config))
        self.spark = spark
        self.statement = statement
        for vertex, inputs in statement_vertices(statement):
            self.graph.add_job_vertex(vertex, inputs)
        #: rows each INSERT wrote into its sink (its vertex's records in)
        self.records = [0] * len(statement.inserts)
        #: a SELECT's rows, for its client to fetch (the DataStream jobs' result buffers)
        self.results = JobResults(job_id)
        #: an updating SELECT's result materialised here, bounded in rows (table mode)
        self.table: MaterializedResult | None = None
        if materialized(statement):
            self.table = MaterializedResult(result_rows(statement) or 1)
        if statement.collects:
            self.results.build_sinks(["sink-0"], result_rows(statement))
        elif any(insert.table.connector == "print" for insert in statement.inserts):
            self.results.build_sinks([PRINT_SINK, PRINT_SINK_ERR])
        #: a SELECT's newest changes (pickled ``(kind, values)``), for :meth:`latest_changes`
        self.latest: deque[bytes] = deque(maxlen=LATEST_CHANGES)
        self._result_columns: list[str] | None = None
        #: the unbounded INSERTs' filesystem sinks, by INSERT: files committed with Spark's
        #: commits (a bounded statement is one batch, committed at once)
        self.staged_sinks = {} if statement.collects or statement.bounded else {
            i: staged_sink(insert.table, self.checkpoint_dir / f"insert-{i}")
            for i, insert in enumerate(statement.inserts) if insert.table.connector == "filesystem"}

    def started_reply(self) -> Message | None:
        """Flink's answer to an INSERT: the job runs, one ``-1`` per sink; to a SELECT: its
        columns, the rows to come from :meth:`fetch_results`."""
        if self.statement.collects:
            columns = [f.name for f in self.statement.inserts[0].result_fields]
            return SqlResult(self.job_id, rows_as_arrow_ipc(columns, []), 0,
                             JobStatus.RUNNING, column_types=list(self.statement.column_types),
                             live_result="table" if self.table is not None else
                             "update" if is_updating(self.statement) else "append",
                             unbounded=not self.statement.bounded)
        columns = [insert.sink_name for insert in self.statement.inserts]
        arrow = rows_as_arrow_ipc(columns, [tuple(-1 for _ in columns)])
        return SqlResult(self.job_id, arrow, 1, JobStatus.RUNNING,
                         column_types=["BIGINT"] * len(columns),
                         prints=PRINT_SINK in self.results.buffers)

    # -- the job's thread -----------------------------------------------------------------
    def run_on_spark(self) -> None:
        self.loop.call_soon_threadsafe(self._deployed)
        if not self.statement.bounded:
            super().run_on_spark()
            return
        try:  # every source bounded: read once, as one batch
            for i, insert in enumerate(self.statement.inserts):
                self._write(i, insert, insert.frame, 0)
        except Exception as exc:  # noqa: BLE001 - the job fails, the JobManager goes on
            log.exception("streaming SQL job %s failed", self.job_id)
            self.loop.call_soon_threadsafe(self.failed, spark_error_text(exc), False)
            return
        self.loop.call_soon_threadsafe(self.finished, JobStatus.FINISHED)

    def _write(self, i: int, insert: StreamingInsert, df: Any, batch_id: int) -> None:
        """One micro-batch into the INSERT's sink, or a SELECT's into its result buffer."""
        if self.statement.collects:
            changes = batch_changelog(insert, df, batch_id, self._state_dir(i))
            self._collect((f"insert-{i}", batch_id), collected(changes))
            self.records[i] += len(changes)
            return
        printed = PrintedLines()
        sink = self.staged_sinks.get(i)
        self.records[i] += write_batch(insert, df, batch_id, self._state_dir(i), printed,
                                       None if sink is None else StagedBatch(sink.manifests, batch_id))
        for sink_id, text in ((PRINT_SINK, printed.out), (PRINT_SINK_ERR, printed.err)):
            lines = self.results.buffers.get(sink_id)
            if lines is not None and text:  # for a client that waits
                lines.add((f"insert-{i}", batch_id), [x.encode() for x in text])

    def _collect(self, batch_key: tuple[str, int], values: list[bytes]) -> None:
        """A SELECT's changes into its materialised table or its result buffer."""
        result = self.table if self.table is not None else self.results.buffers["sink-0"]
        if result.add(batch_key, values):
            self.latest.extend(values)

    def fetch_results(self, sink_id: str | None, after: int, limit: int,
                      peek: bool = False) -> StreamResults:
        """A SELECT's rows from sequence number ``after`` on (pickled ``(kind, values)``)."""
        if not self.statement.collects and sink_id not in (PRINT_SINK, PRINT_SINK_ERR):
            raise LookupError(f"job {self.job_id} is an INSERT: its rows go to its sinks")
        if self.table is not None:
            return self.table.fetch(self.job_id, after, limit, self.status, self.error_text)
        return self.results.fetch(sink_id, after, limit, peek, self.status, self.error_text)

    def latest_changes(self, limit: int
                       ) -> tuple[list[str], list[str], list[tuple[str, tuple[Any, ...]]], int]:
        """A SELECT's result columns, their Flink SQL types, its newest ``limit`` changes
        (row kind, values; oldest first) and how many changes it has made: what a client has
        fetched too, and without acknowledging anything (LookupError for an INSERT)."""
        if not self.statement.collects:
            raise LookupError(f"job {self.job_id} is an INSERT: its rows go to its sinks")
        if self._result_columns is None:
            self._result_columns = [f.name for f in self.statement.inserts[0].result_fields]
        newest = list(self.latest)[-limit:] if limit > 0 else []
        total = (self.table.changes if self.table is not None
                 else self.results.buffers["sink-0"].next_seq)
        return (self._result_columns, list(self.statement.column_types),
                [pickle.loads(v) for v in newest], total)

    def _state_dir(self, i: int) -> Path:
        return self.checkpoint_dir / f"insert-{i}" / "changelog"

    def set_up(self) -> None:
        """The statement's queries as the savepoint format names them (one per INSERT); a
        query with feeds planned again to read them under the job's checkpoint directory."""
        for i, insert in enumerate(self.statement.inserts):
            if insert.replan is not None:
                insert.frame, insert.feeds = insert.replan(self.checkpoint_dir, f"insert-{i}-")
        self.stream_queries = [
            StreamQuery(f"insert-{i}", [self.graph.job_vertices[f"sink-{i}"].job_vertex],
                        insert.frame, [], [])
            for i, insert in enumerate(self.statement.inserts)]

    def restore_savepoint(self) -> None:
        """Restore as every streaming job does; a restored updating SELECT then gives its
        client the current result first (``+I`` per row of the restored state), as Flink's SQL
        client shows the restored table, and its changes after that."""
        super().restore_savepoint()
        if not (self.statement.collects and is_updating(self.statement)):
            return
        # a query over an updating one (or over a join's changes): the outer query's result
        outer = self.statement.inserts[0].outer is not None
        current = ChangelogState(self._state_dir(0) / "outer" if outer
                                 else self._state_dir(0)).latest()
        if current:
            self._collect(("restored", -1), collected([("+I", row) for row in current.values()]))

    def commit_outputs(self) -> None:
        for sink in self.staged_sinks.values():
            sink.commit()

    def start_queries(self) -> None:
        interval = self.interval_ms or DEFAULT_TRIGGER_MS
        for sink in self.staged_sinks.values():  # a restart, a restore, a new leader
            sink.recover()
        for i, insert in enumerate(self.statement.inserts):
            def write(df: Any, batch_id: int, insert: StreamingInsert = insert, i: int = i) -> None:
                self._write(i, insert, df, batch_id)

            query = (insert.frame.writeStream.outputMode(insert.output_mode).foreachBatch(write)
                     .option("checkpointLocation", str(self.checkpoint_dir / f"insert-{i}"))
                     .queryName(f"{self.name} [{i}] {self.job_id[:8]}")
                     .trigger(processingTime=f"{interval} milliseconds"))
            self.queries[f"insert-{i}"] = query.start()
        for feed in self.feeds():  # an updating query's changelog, read by a query above
            self.queries[feed.key] = feed.start(interval, f"{self.name} [{feed.key}] "
                                                          f"{self.job_id[:8]}")

    def feeds(self) -> list[ChangelogFeed]:
        """The feeding queries of the statement's joins of updating queries with streams."""
        return [feed for insert in self.statement.inserts for feed in insert.feeds]

    # -- the loop thread ------------------------------------------------------------------
    def _deployed(self) -> None:
        if self.status.is_globally_terminal or self.cancel_requested:
            return
        for ex in self.graph.all_executions():
            if ex.state is ExecutionState.CREATED:
                ex.transition_to(ExecutionState.RUNNING)

    def cancel(self) -> None:
        if self.statement.bounded and not (self.status.is_globally_terminal
                                           or self.cancel_requested):
            threading.Thread(target=cancel_job_group, args=(self.sc, self.spark_group),
                             name=f"cancel-{self.job_id[:8]}", daemon=True).start()
        super().cancel()

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
                          streaming=self.streaming_info())
