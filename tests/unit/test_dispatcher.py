"""The Dispatcher with real messages and fake runners: no Spark, no sockets."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable

import pytest

from sessioncluster.graph.jobgraph import JobGraph, JobVertex, OperatorSpec
from sessioncluster.graph.states import JobStatus
from sessioncluster.graph.streamgraph import OperatorKind
from sessioncluster.jobmanager.blobserver import BlobServer
from sessioncluster.jobmanager.dispatcher import ClusterFacts, Dispatcher, DispatcherServices
from sessioncluster.jobmanager.jobstore import JobStore
from sessioncluster.jobmanager.runner import JobRunner, RunnerFactory
from sessioncluster.protocol.messages import (
    Ack,
    AwaitJobResult,
    CancelJob,
    ClusterOverview,
    ErrorReply,
    ExecuteSql,
    JobDetails,
    JobDetailsReply,
    JobList,
    JobResultReply,
    JobSubmitted,
    JobSummary,
    ListJobs,
    Message,
    RequestBlob,
    RequestJobDetails,
    RequestOverview,
    SqlResult,
    SubmitJob,
    TaskEvent,
)


class FakeRunner:
    """A JobRunner that runs nothing: the test ends it."""

    def __init__(self, job_id: str, submission: Message, on_done: Callable[[JobRunner], None],
                 answers_at_end: bool = False) -> None:
        self.job_id = job_id
        self.name = "fake"
        self.submission = submission
        self.on_done = on_done
        self.answers_at_end = answers_at_end
        self.done = asyncio.Event()
        self._status = JobStatus.INITIALIZING
        self.started = False
        self.cancels = 0

    @property
    def status(self) -> JobStatus:
        return self._status

    def start(self) -> None:
        self.started = True
        self._status = JobStatus.RUNNING

    def cancel(self) -> None:
        self.cancels += 1
        if not self._status.is_globally_terminal:
            self.end(JobStatus.CANCELED)

    def end(self, status: JobStatus) -> None:
        self._status = status
        self.done.set()
        self.on_done(self)

    def summary(self) -> JobSummary:
        return JobSummary(self.job_id, self.name, self._status, 1.0, None)

    def details(self) -> JobDetails:
        return JobDetails(self.summary(), JobGraph(self.name, []), [], [], {})

    def result(self) -> JobResultReply:
        return JobResultReply(self.job_id, self._status.is_globally_terminal, self._status)

    def submitted_reply(self) -> Message | None:
        return None if self.answers_at_end else JobSubmitted(self.job_id)

    def final_reply(self) -> Message | None:
        return SqlResult(self.job_id, b"", 0, self._status) if self.answers_at_end else None

    def on_task_event(self, ev: TaskEvent) -> None:
        pass

    def on_stage_submitted(self, ev: Any) -> None:
        pass

    def on_spark_event(self, ev: Any) -> None:
        pass


class Harness:
    def __init__(self, tmp_path: Path, ready: bool = True) -> None:
        self.replies: list[tuple[list[bytes], Message]] = []
        self.runners: list[FakeRunner] = []
        self.ended: list[str] = []
        self.ready = ready
        self.stopped = 0
        factory = RunnerFactory({"datastream": self._make, "sql": self._make_sql})
        self.dispatcher = Dispatcher(DispatcherServices(
            session="test", blobs=BlobServer(tmp_path / "blobs"), store=JobStore(tmp_path / "jobs"),
            runners=factory, reply=lambda ident, msg: self.replies.append((ident, msg)),
            is_ready=lambda: self.ready,
            cluster_facts=lambda: ClusterFacts("test", self.ready, "local[1]", 7, [], 1),
            stop_cluster=self._stop, create_temporary_view=lambda name, arrow, done: done(3, None),
            spark_job_ids=lambda group: [0, 1], job_ended=self.ended.append))

    def _stop(self) -> None:
        self.stopped += 1

    def _make(self, job_id: str, msg: Message, on_done: Callable[[JobRunner], None]) -> JobRunner:
        runner = FakeRunner(job_id, msg, on_done)
        self.runners.append(runner)
        return runner

    def _make_sql(self, job_id: str, msg: Message, on_done: Callable[[JobRunner], None]) -> JobRunner:
        runner = FakeRunner(job_id, msg, on_done, answers_at_end=True)
        self.runners.append(runner)
        return runner

    def ask(self, msg: Message) -> Message:
        before = len(self.replies)
        self.dispatcher.handle([b"client"], msg)
        assert len(self.replies) == before + 1, f"{msg.type} got {len(self.replies) - before} replies"
        return self.replies[-1][1]


def one_vertex_graph() -> JobGraph:
    op = OperatorSpec(1, OperatorKind.SOURCE_COLLECTION, "Source")
    return JobGraph("job", [JobVertex("v1", "Source", [op], 1)])


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def test_submit_starts_a_runner_and_answers_job_submitted(harness: Harness) -> None:
    reply = harness.ask(SubmitJob(one_vertex_graph(), {}))
    assert isinstance(reply, JobSubmitted)
    [runner] = harness.runners
    assert runner.started and runner.job_id == reply.job_id
    listed = harness.ask(ListJobs())
    assert isinstance(listed, JobList)
    assert [(s.job_id, s.status) for s in listed.jobs] == [(reply.job_id, JobStatus.RUNNING)]
    details = harness.ask(RequestJobDetails(reply.job_id))
    assert isinstance(details, JobDetailsReply) and details.details.summary.job_id == reply.job_id


def test_submit_with_a_missing_blob_or_no_operators_is_refused(harness: Harness) -> None:
    graph = one_vertex_graph()
    graph.vertices[0].operators[0].function_key = "ab" * 32
    reply = harness.ask(SubmitJob(graph, {}))
    assert isinstance(reply, ErrorReply) and reply.kind == "missing_blob"
    assert reply.missing_blobs == ["ab" * 32]
    reply = harness.ask(SubmitJob(JobGraph("empty", []), {}))
    assert isinstance(reply, ErrorReply) and reply.kind == "bad_request"
    assert harness.runners == []


def test_unknown_job_id(harness: Harness) -> None:
    for msg in (RequestJobDetails("f" * 32), CancelJob("f" * 32), AwaitJobResult("f" * 32, 0.1)):
        reply = harness.ask(msg)
        assert isinstance(reply, ErrorReply) and reply.kind == "unknown_job"
        assert "f" * 32 in reply.error and "'test'" in reply.error


def test_cancel_of_a_running_and_of_a_finished_job(harness: Harness) -> None:
    job_id = harness.ask(SubmitJob(one_vertex_graph(), {})).job_id  # type: ignore[attr-defined]
    reply = harness.ask(CancelJob(job_id))
    assert isinstance(reply, Ack) and reply.text == f"cancelling job {job_id}"
    assert harness.runners[0].status is JobStatus.CANCELED
    assert harness.ended == [job_id]
    reply = harness.ask(CancelJob(job_id))
    assert isinstance(reply, Ack) and "already CANCELED" in reply.text


def test_finished_job_is_stored_and_answers_after_it_left_memory(harness: Harness) -> None:
    job_id = harness.ask(SubmitJob(one_vertex_graph(), {})).job_id  # type: ignore[attr-defined]
    harness.runners[0].end(JobStatus.FINISHED)
    del harness.dispatcher.jobs[job_id]
    reply = harness.ask(AwaitJobResult(job_id, 1.0))
    assert isinstance(reply, JobResultReply) and reply.done and reply.status is JobStatus.FINISHED
    reply = harness.ask(CancelJob(job_id))
    assert isinstance(reply, Ack) and "already FINISHED" in reply.text
    assert [s.job_id for s in harness.ask(ListJobs()).jobs] == [job_id]  # type: ignore[attr-defined]


def test_await_with_timeout_then_at_the_end(harness: Harness) -> None:
    loop = asyncio.new_event_loop()
    try:
        job_id = harness.ask(SubmitJob(one_vertex_graph(), {})).job_id  # type: ignore[attr-defined]

        async def scenario() -> tuple[Message, Message]:
            harness.dispatcher.handle([b"a"], AwaitJobResult(job_id, 0.01))
            await asyncio.sleep(0.2)
            timed_out = harness.replies[-1][1]
            harness.dispatcher.handle([b"b"], AwaitJobResult(job_id, 10.0))
            await asyncio.sleep(0)
            harness.runners[0].end(JobStatus.FINISHED)
            for _ in range(100):
                await asyncio.sleep(0.01)
                if harness.replies[-1][0] == [b"b"]:
                    break
            return timed_out, harness.replies[-1][1]

        timed_out, at_end = loop.run_until_complete(scenario())
        assert isinstance(timed_out, JobResultReply) and not timed_out.done
        assert timed_out.status is JobStatus.RUNNING
        assert isinstance(at_end, JobResultReply) and at_end.done and at_end.status is JobStatus.FINISHED
    finally:
        loop.close()


def test_sql_job_answers_at_its_end(harness: Harness) -> None:
    loop = asyncio.new_event_loop()
    try:
        async def scenario() -> Message:
            harness.dispatcher.handle([b"q"], ExecuteSql("SELECT 1"))
            assert harness.replies == []  # no reply before the end
            harness.runners[0].end(JobStatus.FINISHED)
            for _ in range(100):
                await asyncio.sleep(0.01)
                if harness.replies:
                    break
            return harness.replies[-1][1]

        reply = loop.run_until_complete(scenario())
        assert isinstance(reply, SqlResult) and reply.status is JobStatus.FINISHED
    finally:
        loop.close()


def test_sql_job_id_must_be_new_and_well_formed(harness: Harness) -> None:
    reply = harness.ask(ExecuteSql("SELECT 1", job_id="not-hex"))
    assert isinstance(reply, ErrorReply) and reply.kind == "bad_request"
    reply = harness.ask(ExecuteSql("   "))
    assert isinstance(reply, ErrorReply) and reply.kind == "bad_request"


def test_not_ready(tmp_path: Path) -> None:
    harness = Harness(tmp_path, ready=False)
    for msg in (SubmitJob(one_vertex_graph(), {}), ExecuteSql("SELECT 1")):
        reply = harness.ask(msg)
        assert isinstance(reply, ErrorReply) and reply.kind == "not_ready"
    assert harness.runners == []
    overview = harness.ask(RequestOverview())
    assert isinstance(overview, ClusterOverview) and not overview.ready


def test_bad_request_and_a_failing_handler(harness: Harness) -> None:
    reply = harness.ask(RequestBlob("ab" * 32))  # a TaskManager's message
    assert isinstance(reply, ErrorReply) and reply.kind == "bad_request"

    def broken(ident: list[bytes], msg: Message) -> None:
        raise KeyError("boom")

    harness.dispatcher.handlers[ListJobs] = broken
    reply = harness.ask(ListJobs())
    assert isinstance(reply, ErrorReply) and reply.kind == "internal" and "KeyError" in reply.error
    assert isinstance(harness.ask(RequestOverview()), ClusterOverview)  # it keeps serving


def test_overview_counts_jobs_in_memory(harness: Harness) -> None:
    harness.ask(SubmitJob(one_vertex_graph(), {}))
    overview = harness.ask(RequestOverview())
    assert isinstance(overview, ClusterOverview)
    assert overview.name == "test" and overview.jobmanager_pid == 7 and overview.jobs_in_memory == 1


def test_runner_factory_refuses_an_unknown_kind() -> None:
    factory = RunnerFactory()
    with pytest.raises(ValueError, match="does not run datastream jobs"):
        factory.create("a" * 32, SubmitJob(one_vertex_graph(), {}), lambda job: None)
