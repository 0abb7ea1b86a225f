"""JobClient and JobExecutionResult, with PyFlink's names."""

from __future__ import annotations

import linecache
import time
from typing import TYPE_CHECKING, Any

import cloudpickle

from ..accumulators import Accumulator
from ..graph.states import JobStatus
from ..protocol.messages import (
    Ack,
    AwaitJobResult,
    CancelJob,
    JobDetails,
    JobDetailsReply,
    JobResultReply,
    RequestJobDetails,
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

    def all_accumulator_results(self) -> dict[str, Any]:
        return {name: acc.get_local_value() for name, acc in self._accumulators.items()}

    def __repr__(self) -> str:
        return (f"JobExecutionResult(job_id={self.job_id!r}, net_runtime={self.net_runtime} ms, "
                f"accumulators={self.all_accumulator_results()!r})")

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

    def get_job_execution_result(self, timeout: float | None = None) -> JobExecutionResult:
        """Wait for the job; raise :class:`JobExecutionException` unless it FINISHED."""
        reply = self.wait(timeout)
        check(reply, self.job_name)
        return JobExecutionResult(reply, self.job_name, self)

    def collect(self, timeout: float | None = None) -> list[Any]:
        """The records of the job's collect sink."""
        reply = self.wait(timeout)
        check(reply, self.job_name)
        return records_of(reply)


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
