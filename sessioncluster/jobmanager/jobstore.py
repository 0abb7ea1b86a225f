"""The job store: finished jobs on disk, so that job history, final states and accumulators
survive a JobManager restart (Flink's JobManager HA keeps JobGraphs and results the same way).

One file per job, ``<job id>.job``, written atomically in the session directory (0700); read back
with the protocol's restricted unpickler. A job's collected and printed records go beside it,
``<job id>.records``, within a byte bound for the whole store (the oldest are evicted first), so a
client can read them back after the job left the JobManager's memory or after a restart; when
they are gone, the reply says why.
"""

from __future__ import annotations

import asyncio
import io
import logging
import pickle
from dataclasses import dataclass
from pathlib import Path

from ..cluster.files import write_private
from ..graph.lifecycle import JobStatus
from ..protocol.messages import JobDetails, JobResultReply, JobSummary
from ..protocol.wire import ProtocolError, RestrictedUnpickler
from .runner import JobRunner

log = logging.getLogger("sessioncluster.jobstore")


#: the records of every stored job together, at most (``--result-store-mb``)
RESULT_STORE_BYTES = 256 * 1024 * 1024


@dataclass(slots=True)
class ArchivedJob:
    details: JobDetails
    #: the final outcome, without the collected records
    result: JobResultReply
    #: how many bytes of records the job had (0: none to give back)
    records_bytes: int = 0
    #: why the records were not kept (larger than the whole store), if so
    records_note: str | None = None

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

    def with_records(self, reply: JobResultReply) -> None:
        """Take the records read back from the store."""
        self._job.result = reply


class _StoreUnpickler(RestrictedUnpickler):
    """The protocol's restricted unpickler, plus :class:`ArchivedJob`."""

    def find_class(self, module: str, name: str) -> object:
        if module == __name__ and name == "ArchivedJob":
            return ArchivedJob
        return super().find_class(module, name)


class JobStore:
    """Finished jobs on disk, and their records within ``records_bytes`` in all."""

    def __init__(self, directory: Path, records_bytes: int = RESULT_STORE_BYTES) -> None:
        self.directory = directory
        self.records_bytes = records_bytes
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._summaries: dict[str, JobSummary] = {}
        for path in sorted(directory.glob("*.job"), key=lambda p: p.stat().st_mtime):
            job = self._read(path)
            if job is not None:
                self._summaries[job.summary.job_id] = job.summary
        #: job id -> size of its records file, oldest first
        self._records: dict[str, int] = {
            p.stem: p.stat().st_size
            for p in sorted(directory.glob("*.records"), key=lambda p: p.stat().st_mtime)}

    def put(self, details: JobDetails, result: JobResultReply) -> None:
        """Store a finished job, and its records while the bound allows."""
        job_id = details.summary.job_id
        records = pickle.dumps((result.batches, result.printed), protocol=5)
        size = len(records) if (result.batches or result.printed) else 0
        note = None
        if size > self.records_bytes:
            note = (f"its records ({size / 2**20:.1f} MiB) are larger than the session's result "
                    f"store ({self.records_bytes / 2**20:.0f} MiB, --result-store-mb)")
        elif size:
            self._evict(self.records_bytes - size)
            write_private(self.directory / f"{job_id}.records", records)
            self._records[job_id] = size
        bare = JobResultReply(result.job_id, result.done, result.status, [], [],
                              result.accumulators, result.net_runtime_ms, result.error,
                              result.error_text)
        write_private(self.directory / f"{job_id}.job",
                      pickle.dumps(ArchivedJob(details, bare, size, note), protocol=5))
        self._summaries[job_id] = details.summary

    def _evict(self, room: int) -> None:
        """Remove the oldest records until at most ``room`` bytes are left."""
        while self._records and sum(self._records.values()) > room:
            old = next(iter(self._records))
            del self._records[old]
            (self.directory / f"{old}.records").unlink(missing_ok=True)
            log.info("evicted the records of job %s from the result store", old)

    def get(self, job_id: str) -> StoredJob | None:
        """The stored job, with its records if the store still has them (else the reply says
        why not)."""
        if job_id not in self._summaries:
            return None
        job = self._read(self.directory / f"{job_id}.job")
        if job is None:
            return None
        stored = StoredJob(job)
        stored.with_records(self._with_records(job))
        return stored

    def _with_records(self, job: ArchivedJob) -> JobResultReply:
        reply = job.result
        size = getattr(job, "records_bytes", None)  # None: stored by a version without it
        if reply.status is not JobStatus.FINISHED or size == 0:
            return reply  # no records to give back
        note: str | None = getattr(job, "records_note", None)
        if size is None:
            missing = "the job was stored by an older sessioncluster, which kept no records"
        elif note:
            missing = note
        else:
            path = self.directory / f"{reply.job_id}.records"
            try:
                batches, printed = _StoreUnpickler(io.BytesIO(path.read_bytes())).load()
                return JobResultReply(reply.job_id, reply.done, reply.status, batches, printed,
                                      reply.accumulators, reply.net_runtime_ms, reply.error,
                                      reply.error_text)
            except FileNotFoundError:
                missing = (f"they were evicted from the session's result store (it keeps the "
                           f"newest {self.records_bytes / 2**20:.0f} MiB of records, "
                           "--result-store-mb)")
            except (OSError, ProtocolError, pickle.UnpicklingError, EOFError, ValueError) as exc:
                missing = f"the stored records cannot be read ({exc})"
        return JobResultReply(reply.job_id, reply.done, reply.status, [], [], reply.accumulators,
                              reply.net_runtime_ms, reply.error, reply.error_text,
                              records_missing=f"the records of job {reply.job_id} are gone: {missing}")

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
