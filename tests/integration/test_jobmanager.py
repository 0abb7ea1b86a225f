"""The JobManager's runners on a real session: a cancel between a job's Spark actions."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sessioncluster.graph.states import JobStatus
from sessioncluster.protocol.messages import RequestSparkJobs, SparkJobsReply

from ..helpers import wait_until

pytestmark = pytest.mark.integration


def spark_jobs(session, job_id: str) -> list[int]:  # type: ignore[no-untyped-def]
    """Spark's jobs of the job's group, from Spark's status tracker in the JobManager."""
    return session.gateway.request(RequestSparkJobs(job_id), SparkJobsReply).spark_job_ids


def test_cancel_during_the_first_of_three_sink_actions(session, env, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()

    def slow(x: int) -> int:
        (marks / str(x)).touch()
        time.sleep(0.2)
        return x

    # three pipelines (a stream feeds one operator), one Spark action per sink
    outs = [tmp_path / f"out{i}" for i in range(3)]
    for i, out in enumerate(outs):
        env.from_collection(range(i * 100, i * 100 + 100)).map(slow).sink_to_text(str(out))
    client = env.execute_async("three sinks")
    wait_until(lambda: len(list(marks.iterdir())) >= 2, what="the first sink's action to run")
    first = spark_jobs(session, client.job_id)
    assert len(first) == 1, first  # one Spark action runs: the first sink's
    client.cancel()
    reply = client.wait(timeout=60)
    assert reply.status is JobStatus.CANCELED
    time.sleep(1.0)  # a later action would start right after the first one was cancelled
    assert spark_jobs(session, client.job_id) == first  # no later action started
    assert not any(out.exists() and any(out.glob("part-*")) for out in outs)
    assert len(list(marks.iterdir())) < 100  # the first action was interrupted too
