"""The job store keeps finished jobs and their records within a byte bound, and says why
records are gone."""

from __future__ import annotations

import pickle
from pathlib import Path

import cloudpickle
import pytest

from sessioncluster.client.jobclient import RecordsUnavailableError, records_of
from sessioncluster.graph.jobgraph import JobGraph
from sessioncluster.graph.lifecycle import JobStatus
from sessioncluster.jobmanager.jobstore import JobStore
from sessioncluster.protocol.messages import JobDetails, JobResultReply, JobSummary


def finished(job_id: str, records: list[int], status: JobStatus = JobStatus.FINISHED):
    summary = JobSummary(job_id, "job", status, 0.0, 1.0, 1, 1)
    details = JobDetails(summary, JobGraph("job", []), [], [], {})
    reply = JobResultReply(job_id, True, status, [cloudpickle.dumps(records)] if records else [],
                           ["1> x"] if records else [])
    return details, reply


def test_records_are_read_back_after_the_job_left_memory(tmp_path: Path) -> None:
    store = JobStore(tmp_path, records_bytes=1 << 20)
    store.put(*finished("a" * 32, list(range(100))))
    again = JobStore(tmp_path, records_bytes=1 << 20)  # a JobManager restart
    reply = again.get("a" * 32).result()
    assert records_of(reply) == list(range(100)) and reply.printed == ["1> x"]


def test_the_oldest_records_are_evicted_and_the_error_says_so(tmp_path: Path) -> None:
    one = len(pickle.dumps(([cloudpickle.dumps(list(range(1000)))], ["1> x"]), protocol=5))
    store = JobStore(tmp_path, records_bytes=int(one * 2.5))
    for i in range(3):
        store.put(*finished(f"{i}" * 32, list(range(1000))))
    assert records_of(store.get("2" * 32).result()) == list(range(1000))
    assert records_of(store.get("1" * 32).result()) == list(range(1000))
    with pytest.raises(RecordsUnavailableError, match="evicted from the session's result store"):
        records_of(store.get("0" * 32).result())
    assert sum(p.stat().st_size for p in tmp_path.glob("*.records")) <= one * 2.5


def test_records_larger_than_the_store_are_not_kept_and_the_error_says_so(tmp_path: Path) -> None:
    store = JobStore(tmp_path, records_bytes=100)
    store.put(*finished("b" * 32, list(range(1000))))
    with pytest.raises(RecordsUnavailableError, match="larger than the session's result store"):
        records_of(store.get("b" * 32).result())
    assert not list(tmp_path.glob("*.records"))


def test_a_job_without_records_reads_back_empty(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    store.put(*finished("c" * 32, []))
    store.put(*finished("d" * 32, [], JobStatus.FAILED))
    assert records_of(store.get("c" * 32).result()) == []
    assert store.get("d" * 32).result().records_missing is None
