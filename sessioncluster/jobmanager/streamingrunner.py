"""What every STREAMING job does with its Structured Streaming queries, whatever made them: a
DataStream JobGraph (:class:`~.streamingjob.StreamingJob`) or a Flink SQL ``INSERT INTO``
(:class:`~.streamingsqljob.StreamingSqlJob`).

:class:`StreamingRunner` owns the queries' lifecycle: their checkpoint directory and the restore
of a savepoint into it (``execution.savepoint.path``), watching them (progress into checkpoint
statistics, a savepoint or a stop with a savepoint when one is asked for, their end), the
restart strategy when one fails (Flink's restart of the whole job, from its latest checkpoint),
and cancel. A subclass makes the queries (:meth:`StreamingRunner.set_up`) and starts them
(:meth:`StreamingRunner.start_queries`), and may watch more (:meth:`StreamingRunner.sources_ended`)
or commit what its sinks wrote (:meth:`StreamingRunner.commit_outputs`).

A checkpoint is one committed micro-batch (Spark's offsets, commit log and state-store version);
a savepoint is a copy of the queries' checkpoints taken between two micro-batches, with a
manifest (:mod:`.savepoint`).

Threads: the job's thread starts the queries and watches them (every ``WATCH_SECONDS``); the
sinks run on Spark's stream threads (``foreachBatch``); every change of the job's state goes to
the JobManager's loop with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable, Sequence

from ..api.formats.base import local_path
from ..api.restart import RestartBackoff, RestartStrategyConfiguration
from ..graph.jobgraph import JobGraph
from ..graph.lifecycle import ExecutionState, JobStatus
from ..spark.sql import spark_error_text
from ..spark.streaming import StreamQuery
from . import savepoint as savepoints
from .checkpointstats import CheckpointStatistics
from .resourcemanager import ResourceManager
from .runner import JobRunner, Publish, SparkJobRunner

log = logging.getLogger("sessioncluster.streaming")

#: how often the job's thread looks at its queries
WATCH_SECONDS = 0.25
#: how long a savepoint waits for the micro-batch in flight to end
QUIESCE_SECONDS = 60.0


class StreamingRunner(SparkJobRunner):
    """A STREAMING job run as Structured Streaming queries (``queries``, by their savepoint
    keys) that stays RUNNING until it is cancelled, stopped with a savepoint, fails past its
    restart strategy, or its queries end."""

    def __init__(self, job_id: str, name: str, job_graph: JobGraph, sc: Any, rm: ResourceManager,
                 loop: asyncio.AbstractEventLoop, publish: Publish,
                 on_done: Callable[[JobRunner], None], config: dict[str, Any],
                 interval_ms: int, session_dir: Path,
                 strategy: RestartStrategyConfiguration | None) -> None:
        super().__init__(job_id, name, job_graph, sc, rm, loop, publish, on_done)
        self.config = dict(config)
        self.interval_ms = interval_ms
        root = str(self.config.get("state.checkpoints.dir") or session_dir / "checkpoints")
        self.checkpoint_dir = Path(local_path(root)) / job_id
        #: the running queries by their keys (a query's key names its checkpoint directory)
        self.queries: dict[str, Any] = {}
        self.stream_queries: list[StreamQuery] = []
        self.stats = CheckpointStatistics()
        if (strategy is None or strategy.kind == "fallback") and interval_ms:
            # Flink: with checkpointing and no strategy of its own, a job restarts without end
            strategy = RestartStrategyConfiguration("fixed-delay", 2**31 - 1, 1000)
        self.backoff = RestartBackoff(strategy)
        self._request: tuple[str, bool, Future[str]] | None = None
        #: the stop-with-savepoint's answer, once the job has ended
        self._answer: asyncio.Task[None] | None = None
        self._stop = threading.Event()

    # -- what a subclass does -----------------------------------------------------------------
    @abc.abstractmethod
    def set_up(self) -> None:
        """Once per job, in its thread: make ``stream_queries`` (and whatever they need)."""

    @abc.abstractmethod
    def start_queries(self) -> None:
        """Start every query of ``stream_queries`` on its checkpoint, into ``queries``."""

    def feeds(self) -> Sequence[savepoints.Feed]:
        """Hook: the queries beside ``stream_queries`` that feed them (a savepoint holds them)."""
        return ()

    def commit_outputs(self) -> None:
        """Hook: make visible what the sinks wrote in the micro-batches Spark committed."""

    def sources_ended(self) -> tuple[Any, ...] | None:
        """Hook: what the loop is told when a source ended that Spark does not see end."""
        return None

    def finished(self, status: JobStatus) -> None:
        """On the loop: the queries ended (FINISHED) or were stopped (CANCELED)."""
        self.end_as(status)

    def on_finished(self) -> None:
        """Hook, on the loop: the job FINISHED (before its end is published)."""

    # -- the job's thread -----------------------------------------------------------------------
    def run_on_spark(self) -> None:
        try:
            if not self.stream_queries:
                self.check_checkpoint_dir()
                self.set_up()
                self.restore_savepoint()
        except Exception as exc:  # noqa: BLE001 - a program or savepoint that cannot run
            # fails at once: restarting would not change it
            log.info("streaming job %s cannot start: %s", self.job_id, exc)
            self.loop.call_soon_threadsafe(self.failed, f"{type(exc).__name__}: {exc}", False)
            return
        try:
            self.start_queries()
            self.watch()
        except Exception as exc:  # noqa: BLE001 - the job fails, the JobManager goes on
            log.exception("streaming job %s failed", self.job_id)
            self.stop_queries()
            self.loop.call_soon_threadsafe(self.failed, spark_error_text(exc))

    def check_checkpoint_dir(self) -> None:
        """The checkpoint directory made, and writable (else PermissionError saying so)."""
        try:
            self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
            probe = self.checkpoint_dir / ".write-test"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise PermissionError(f"the checkpoint directory {self.checkpoint_dir.parent} is not "
                                  f"writable: {exc.strerror or exc}") from None

    def restore_savepoint(self) -> None:
        """The savepoint the job starts from (``execution.savepoint.path``), into its
        checkpoint directory, unless a checkpoint of its own is there already."""
        restore = self.config.get("execution.savepoint.path")
        if restore and any((self.checkpoint_dir / q.key).exists() for q in self.stream_queries):
            # recovered by a new leader (HA): its latest checkpoint is newer than the savepoint
            log.info("streaming job %s resumes from its latest checkpoint in %s", self.job_id,
                     self.checkpoint_dir)
            return
        if restore:
            ignore = str(self.config.get("execution.savepoint.ignore-unclaimed-state",
                                         "false")).lower() in ("true", "1")
            info = savepoints.restore(Path(local_path(str(restore))),
                                      self.stream_queries, self.checkpoint_dir, ignore,
                                      self.feeds())
            self.stats.restored_from(info.checkpoint_id, info.created_ms, info.state_size,
                                     str(restore))

    def watch(self) -> None:
        """Until the job ends: progress into checkpoint statistics, a savepoint when one is
        asked for, and the queries' end (finished, failed, stopped)."""
        while True:
            self.stats.collect(self.queries)
            self.commit_outputs()
            request = self._request
            if request is not None:
                self._request = None
                location = self.take_savepoint(*request)
                if request[1]:
                    self.loop.call_soon_threadsafe(self.stopped_with_savepoint, request[2],
                                                   location)
                    return
                continue
            if self._stop.is_set():
                self.stop_queries()
                self.loop.call_soon_threadsafe(self.finished, JobStatus.CANCELED)
                return
            ended = self.sources_ended() or self.queries_ended()
            if ended is not None:
                self.loop.call_soon_threadsafe(*ended)
                return
            time.sleep(WATCH_SECONDS)

    def queries_ended(self) -> tuple[Any, ...] | None:
        """What the loop is told when the queries failed or all finished; None while they run."""
        ended = {k: q for k, q in self.queries.items() if not q.isActive}
        failed = [(k, q.exception()) for k, q in ended.items() if q.exception() is not None]
        if failed:
            self.stop_queries()
            self.stats.collect(self.queries)
            return (self.failed, query_error(failed[0][1]))
        if ended and len(ended) == len(self.queries):
            self.stats.collect(self.queries)
            self.commit_outputs()
            return (self.finished, JobStatus.FINISHED)
        return None

    def stop_queries(self) -> None:
        """Stop the queries between two micro-batches; what they wrote committed."""
        for query in list(self.queries.values()):
            try:
                quiesce(query)
                query.stop()
            except Exception:  # noqa: BLE001 - stopping anyway
                log.warning("job %s: stopping a query failed", self.job_id, exc_info=True)
        self.commit_outputs()  # what the last micro-batches wrote (before a savepoint's copy)

    def take_savepoint(self, path: str, stop: bool, future: Future[str]) -> str | None:
        """Stop the queries between two micro-batches, copy their checkpoints, and start them
        again on the same checkpoints unless the job stops here. The savepoint's location (the
        future's result, which a stop leaves to :meth:`stopped_with_savepoint`)."""
        try:
            self.stop_queries()
            self.stats.collect(self.queries)
            location = str(savepoints.write(Path(path), self.job_id, self.job_graph,
                                            self.stream_queries, self.checkpoint_dir,
                                            self.stats.completed, self.feeds()))
            self.stats.savepoints.append(location)
        except Exception as exc:  # noqa: BLE001 - the client gets the reason
            future.set_exception(exc)
            location = None
        if not stop:
            self.start_queries()
            if location is not None:
                future.set_result(location)
        return location

    def stopped_with_savepoint(self, future: Future[str], location: str | None) -> None:
        """On the loop: the job FINISHED, and its stop-with-savepoint answered once it has
        ended, as Flink's completes (a client then sees the job FINISHED)."""
        self.finished(JobStatus.FINISHED)
        if location is not None:
            self._answer = self.loop.create_task(self._answer_when_ended(future, location))

    async def _answer_when_ended(self, future: Future[str], location: str) -> None:
        await self.done.wait()
        future.set_result(location)

    # -- the loop thread ------------------------------------------------------------------------
    def end_as(self, status: JobStatus) -> None:
        """The job's end as ``status`` (CANCELED or FINISHED), its subtasks with it."""
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
                    if not tv.current_execution.state.is_terminal:
                        tv.current_execution.transition_to(ExecutionState.FINISHED)
            self.on_finished()
        self.end(status)

    def failed(self, text: str, restartable: bool = True) -> None:
        """A query failed: restart as the strategy allows, else FAILED."""
        if self.status.is_globally_terminal:
            return
        self.error_text = text
        if self.cancel_requested:
            self.end_as(JobStatus.CANCELED)
            return
        if restartable and self.backoff.can_restart(time.time()):
            self.restart(self.backoff, "restarts from its latest checkpoint")
            return
        self._set_status(JobStatus.FAILING)
        self.graph.fail_pending()
        self.end(JobStatus.FAILED)

    def before_run_again(self) -> None:
        self.queries.clear()

    def cancel(self) -> None:
        if self.status.is_globally_terminal or self.cancel_requested:
            return
        self.cancel_requested = True
        self._set_status(JobStatus.CANCELLING)
        self.graph.start_canceling()
        if self.status is JobStatus.RESTARTING or not self.queries:
            self.end_as(JobStatus.CANCELED)
            return
        self._stop.set()

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

    def streaming_info(self) -> dict[str, Any]:
        """The job's checkpoint statistics and settings (REST ``/jobs/:id/checkpoints``)."""
        return {**self.stats.info(), "interval_ms": self.interval_ms,
                "checkpoint_dir": str(self.checkpoint_dir), "restarts": self.backoff.restarts}


def quiesce(query: Any) -> None:
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


def query_error(exc: Any) -> str:
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
