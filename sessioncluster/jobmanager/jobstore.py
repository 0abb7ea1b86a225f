"""The job store: finished jobs on disk, so that job history, final states and accumulators
survive a JobManager restart (Flink's JobManager HA keeps JobGraphs and results the same way).

One file per job, ``<job id>.job``, written atomically in the session directory (0700); read back
with the protocol's restricted unpickler. Results (collected records) are not kept.
"""

from __future__ import annotations

import asyncio
import io
import logging
import pickle
from dataclasses import dataclass
from pathlib import Path

from ..files import write_private
from ..graph.states import JobStatus
from ..protocol.messages import JobDetails, JobResultReply, JobSummary
from ..protocol.wire import ProtocolError, RestrictedUnpickler
from .runner import JobRunner

log = logging.getLogger("sessioncluster.jobstore")


@dataclass(slots=True)
class ArchivedJob:
    details: JobDetails
    #: the final outcome, without the collected records
    result: JobResultReply

    @property
    def summary(self) -> JobSummary:
        return self.details.summary


class StoredJob(JobRunner):
    """A finished job read back from the store, answering as a running job does."""

    def __init__(self, job: ArchivedJob) -> None:
        self._job = job
        self.job_id = job.summary.job_id
        self.name = job.summary.name
        self.done = asyncio.Event()
        self.done.set()

    @property
    def status(self) -> JobStatus:
        return self._job.summary.status

    def start(self) -> None:
        raise RuntimeError(f"job {self.job_id} has ended; it cannot start again")

    def cancel(self) -> None:
        """A finished job has nothing to cancel."""

    def summary(self) -> JobSummary:
        return self._job.summary

    def details(self) -> JobDetails:
        return self._job.details

    def result(self) -> JobResultReply:
        return self._job.result


class _StoreUnpickler(RestrictedUnpickler):
    """The protocol's restricted unpickler, plus :class:`ArchivedJob`."""

    def find_class(self, module: str, name: str) -> object:
        if module == __name__ and name == "ArchivedJob":
            return ArchivedJob
        return super().find_class(module, name)


class JobStore:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._summaries: dict[str, JobSummary] = {}
        for path in sorted(directory.glob("*.job"), key=lambda p: p.stat().st_mtime):
            job = self._read(path)
            if job is not None:
                self._summaries[job.summary.job_id] = job.summary

    def put(self, details: JobDetails, result: JobResultReply) -> None:
        result = JobResultReply(result.job_id, result.done, result.status, [], [],
                                result.accumulators, result.net_runtime_ms, result.error,
                                result.error_text)
        write_private(self.directory / f"{details.summary.job_id}.job",
                      pickle.dumps(ArchivedJob(details, result), protocol=5))
        self._summaries[details.summary.job_id] = details.summary

    def get(self, job_id: str) -> StoredJob | None:
        if job_id not in self._summaries:
            return None
        job = self._read(self.directory / f"{job_id}.job")
        return StoredJob(job) if job is not None else None

    def summaries(self) -> list[JobSummary]:
        """Every stored job, oldest first."""
        return list(self._summaries.values())

    def _read(self, path: Path) -> ArchivedJob | None:
        try:
            with open(path, "rb") as f:
                job = _StoreUnpickler(io.BytesIO(f.read())).load()
        except (OSError, ProtocolError, pickle.UnpicklingError, EOFError) as exc:
            log.warning("skipping unreadable job file %s: %s", path.name, exc)
            return None
        return job if isinstance(job, ArchivedJob) else None
