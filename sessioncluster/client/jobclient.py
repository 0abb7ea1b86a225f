"""JobClient and JobExecutionResult, with PyFlink's names."""

from __future__ import annotations

import linecache
import os
import pickle
import sys
import time
from collections import deque
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TextIO

import cloudpickle

from ..api.accumulators import Accumulator
from ..graph.lifecycle import JobStatus
from ..protocol.messages import (
    PRINT_SINK,
    PRINT_SINK_ERR,
    Ack,
    AwaitJobResult,
    CancelJob,
    FetchStreamResults,
    JobDetails,
    JobDetailsReply,
    JobResultReply,
    RequestJobDetails,
    SavepointCompleted,
    StreamResults,
    TriggerSavepoint,
)
from . import display

if TYPE_CHECKING:
    from .session import Session


class JobExecutionException(RuntimeError):
    """A job ended FAILED (or CANCELED); the message carries the user's own traceback."""

    def __init__(self, message: str, result: "JobResultReply") -> None:
        super().__init__(message)
        self.job_id = result.job_id
        self.status = result.status
        self.error = result.error


def _source_line(filename: str, lineno: int) -> str:
    """Fill a frame's source from this process (a notebook cell's code lives only here)."""
    return linecache.getline(filename, lineno)


class JobExecutionResult:
    """What a finished job returns: ``job_id``, ``net_runtime`` (ms), accumulators."""

    def __init__(self, reply: JobResultReply, job_name: str, client: "JobClient | None" = None) -> None:
        self._client = client  # for the JobGraph and states in _repr_html_
        self.job_id = reply.job_id
        self.job_name = job_name
        self.net_runtime = reply.net_runtime_ms
        self._accumulators = {name: Accumulator.from_wire(kind, value)
                              for name, (kind, value) in reply.accumulators.items()}
        self._reply = reply

    def get_job_id(self) -> str:
        return self.job_id

    def get_net_runtime(self) -> int:
        """Milliseconds, as PyFlink's ``get_net_runtime``."""
        return self.net_runtime

    def get_accumulator_result(self, name: str) -> Any:
        try:
            return self._accumulators[name].get_local_value()
        except KeyError:
            raise KeyError(f"job {self.job_id} has no accumulator named {name!r}; it has "
                           f"{sorted(self._accumulators)}") from None

    def get_all_accumulator_results(self) -> dict[str, Any]:
        return {name: acc.get_local_value() for name, acc in self._accumulators.items()}

    def __repr__(self) -> str:
        return (f"JobExecutionResult(job_id={self.job_id!r}, net_runtime={self.net_runtime} ms, "
                f"accumulators={self.get_all_accumulator_results()!r})")

    def _repr_html_(self) -> str | None:
        return display.hooks.html_of(self)


class JobClient:
    """A handle on a submitted job (PyFlink's JobClient)."""

    def __init__(self, session: "Session", job_id: str, job_name: str = "") -> None:
        self.session = session
        self.job_id = job_id
        self.job_name = job_name

    def __repr__(self) -> str:
        return f"<JobClient {self.job_name!r} {self.job_id}>"

    def _repr_html_(self) -> str | None:
        return display.hooks.html_of(self)

    def widget(self) -> Any:
        """The live job widget (a notebook shows it when it is a cell's value)."""
        return display.hooks.widget_of(self)

    def get_job_id(self) -> str:
        return self.job_id

    def get_job_status(self) -> JobStatus:
        return self.details().summary.status

    def details(self) -> JobDetails:
        """The JobMaster's view: vertices, every Execution (TaskManager, slot), accumulators."""
        return self.session.gateway.request(RequestJobDetails(self.job_id), JobDetailsReply).details

    def cancel(self) -> None:
        """Cancel the job; its Spark tasks are interrupted."""
        self.session.gateway.request(CancelJob(self.job_id), Ack)

    def wait(self, timeout: float | None = None) -> JobResultReply:
        """Wait for the job's end (no polling of state: the Dispatcher answers when it ends)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            slice_ = 5.0 if deadline is None else max(0.0, min(5.0, deadline - time.monotonic()))
            reply = self.session.gateway.request(AwaitJobResult(self.job_id, slice_),
                                                 JobResultReply, timeout=slice_ + 30.0)
            if reply.done:
                display.hooks.on_job_ended(self)  # a shown widget's final snapshot, in this cell
                return reply
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"job {self.job_id} still {reply.status} after {timeout} s")

    def get_accumulators(self) -> "Future[dict[str, Any]]":
        """The job's accumulators now, by name (while it runs or after it ended), as a future
        as PyFlink's."""
        future: Future[dict[str, Any]] = Future()
        try:
            future.set_result(dict(self.details().accumulators))
        except Exception as exc:  # noqa: BLE001 - PyFlink: the future carries the failure
            future.set_exception(exc)
        return future

    def get_job_execution_result(self, timeout: float | None = None) -> JobExecutionResult:
        """Wait for the job; raise :class:`JobExecutionException` unless it FINISHED."""
        reply = self.wait(timeout)
        check(reply, self.job_name)
        return JobExecutionResult(reply, self.job_name, self)

    # -- STREAMING jobs (PyFlink's JobClient: each answer is a future) ----------------------
    def trigger_savepoint(self, savepoint_directory: str | None = None,
                          formatType: Any = None) -> "Future[str]":
        """Take a savepoint of the running job into ``savepoint_directory`` (default: the
        session's ``savepoints`` directory); the future gives the savepoint's path."""
        return self._savepoint(savepoint_directory, stop=False)

    def stop_with_savepoint(self, advance_to_end_of_event_time: bool = False,
                            savepoint_directory: str | None = None,
                            formatType: Any = None) -> "Future[str]":
        """Take a savepoint, then stop the job (FINISHED); the future gives the savepoint's path.
        ``advance_to_end_of_event_time`` is accepted; the watermark is not advanced."""
        return self._savepoint(savepoint_directory, stop=True)

    def _savepoint(self, directory: str | None, stop: bool) -> "Future[str]":
        if directory is None:
            from ..cluster.connection import session_dir

            directory = str(session_dir(self.session.info.name) / "savepoints")
        if "://" not in directory:
            directory = os.path.abspath(os.path.expanduser(directory))
        future: Future[str] = Future()
        try:
            reply = self.session.gateway.request(TriggerSavepoint(self.job_id, directory, stop),
                                                 SavepointCompleted, timeout=SAVEPOINT_TIMEOUT)
            future.set_result(reply.location)
        except Exception as exc:  # noqa: BLE001 - PyFlink: the future carries the failure
            future.set_exception(exc)
        return future

    def stream(self, sink_id: str | None = None) -> "CloseableIterator":
        """The records of the job's collect sink as they are produced (STREAMING)."""
        return CloseableIterator(self, sink_id)

    def print_lines(self, sinks: dict[str | None, TextIO] | None = None) -> None:
        """Print a STREAMING job's ``print()`` lines here as they come, until it ends (the
        job's result says how): each of ``sinks`` (result sink id: where its lines go; the
        default: the job's one print sink, to standard out). An interrupt cancels the job."""
        streams = [(CloseableIterator(self, sink_id, lines=True), out)
                   for sink_id, out in (sinks or {None: sys.stdout}).items()]
        try:
            while not all(lines.ended for lines, _ in streams):
                printed = False
                for lines, out in streams:
                    for line in lines.poll():
                        print(line, file=out, flush=True)
                        printed = True
                if not printed:
                    time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            self.cancel()
            raise
        except JobExecutionException:
            pass  # the job's own result says why, when waited for

    def print_statement_lines(self) -> None:
        """:meth:`print_lines` of a streaming SQL INSERT's ``print`` sinks: a
        ``'standard-error' = 'true'`` table's lines to standard error, as Flink prints them."""
        self.print_lines({PRINT_SINK: sys.stdout, PRINT_SINK_ERR: sys.stderr})

    def collect(self, timeout: float | None = None) -> list[Any]:
        """The records of the job's collect sink."""
        reply = self.wait(timeout)
        check(reply, self.job_name)
        return records_of(reply)


#: how long a savepoint may take (the micro-batch in flight ends first, then a copy)
SAVEPOINT_TIMEOUT = 300.0
#: how long the iterator waits between two empty fetches
POLL_SECONDS = 0.05


class CloseableIterator:
    """The results of a STREAMING job's collect sink, as they are produced (PyFlink's
    ``CloseableIterator``). Iteration blocks until the next record arrives, and ends when the
    job ends (a failed job raises :class:`JobExecutionException`). ``close()`` cancels the job,
    as closing PyFlink's iterator does; so does leaving a ``with`` block."""

    def __init__(self, client: JobClient, sink_id: str | None = None, lines: bool = False) -> None:
        self.client = client
        self.sink_id = sink_id
        self.lines = lines
        self._next_seq = 0
        #: fetched, not yet returned (a deque: a fetch brings up to 100,000 at once)
        self._pending: deque[Any] = deque()
        self._done = False
        self._closed = False
        #: results the job dropped unread (its result buffer is bounded): gaps in the
        #: sequence numbers fetched
        self.dropped = 0

    def __iter__(self) -> "CloseableIterator":
        return self

    def __next__(self) -> Any:
        while not self._pending:
            if self._done or self._closed:
                raise StopIteration
            self._fetch()
            if not self._pending and not self._done:
                time.sleep(POLL_SECONDS)
        return self._pending.popleft()

    @property
    def ended(self) -> bool:
        """True once the job ended and every result was fetched, or the iterator was closed."""
        return self._done or self._closed

    def poll(self) -> list[Any]:
        """Whatever arrived since the last call, without waiting."""
        if not self._done and not self._closed:
            self._fetch()
        out, self._pending = list(self._pending), deque()
        return out

    def _fetch(self) -> None:
        reply = self.client.session.gateway.request(
            FetchStreamResults(self.client.job_id, self.sink_id, self._next_seq), StreamResults)
        self.sink_id = reply.sink_id or self.sink_id
        if reply.values:  # the values are consecutive: the ones before them were dropped
            self.dropped += max(0, reply.next_seq - len(reply.values) - self._next_seq)
        self._next_seq = reply.next_seq
        decode = (lambda b: b.decode("utf-8")) if self.lines else pickle.loads
        self._pending.extend(map(decode, reply.values))
        if reply.done:
            self._done = True
            if reply.status is JobStatus.FAILED:
                check(self.client.wait(), self.client.job_name)

    def close(self) -> None:
        """Stop reading, and cancel the job."""
        if self._closed:
            return
        self._closed = True
        if not self._done:
            try:
                self.client.cancel()
            except Exception:  # noqa: BLE001 - the job may be gone already
                pass

    def __enter__(self) -> "CloseableIterator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def check(reply: JobResultReply, job_name: str) -> None:
    if reply.status is JobStatus.FINISHED:
        return
    if reply.status is JobStatus.CANCELED:
        raise JobExecutionException(f"Job '{job_name}' ({reply.job_id}) was cancelled.", reply)
    if reply.error is not None:
        err = reply.error
        text = (f"Job '{job_name}' ({reply.job_id}) failed: operator '{err.operator}', subtask "
                f"{err.subtask}:\n{err.format(_source_line)}")
    else:
        text = f"Job '{job_name}' ({reply.job_id}) failed: {reply.error_text}"
    raise JobExecutionException(text, reply)


class RecordsUnavailableError(LookupError):
    """A finished job's records cannot be given back any more (the message says why)."""


def records_of(reply: JobResultReply) -> list[Any]:
    """The records a job collected; a clear error when the session no longer has them."""
    if reply.records_missing:
        raise RecordsUnavailableError(reply.records_missing)
    out: list[Any] = []
    for batch in reply.batches:
        out.extend(cloudpickle.loads(batch))
    return out


def wait_attached(client: JobClient) -> Any:
    """Wait for an attached job; an interrupt (Ctrl-C, the notebook's stop button) cancels it."""
    try:
        return client.wait()
    except KeyboardInterrupt:
        client.cancel()
        raise

