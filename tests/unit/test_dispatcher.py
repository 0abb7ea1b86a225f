"""The Dispatcher driven with real messages and fake runners: no Spark, no sockets."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pytest

from sessioncluster.graph.jobgraph import JobGraph, JobVertex, OperatorSpec
from sessioncluster.graph.lifecycle import JobStatus
from sessioncluster.graph.streamgraph import OperatorKind
from sessioncluster.jobmanager.blobserver import BlobServer
from sessioncluster.jobmanager.dispatcher import Dispatcher, DispatcherServices
from sessioncluster.jobmanager.jobstore import JobStore
from sessioncluster.jobmanager.runner import JobRunner
from sessioncluster.protocol.messages import (
    Ack,
    AwaitJobResult,
    CancelJob,
    ClusterOverview,
    CreateTemporaryView,
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
    RequestJobDetails,
    RequestOverview,
    SqlResult,
    StopCluster,
    SubmitJob,
)
from sessioncluster.spark.flinksql.outcome import StatementJob, StatementOutcome

IDENT = [b"client-1"]


class FakeRunner(JobRunner):
    """A job whose end the test decides."""

    def __init__(self, job_id: str, submission: Message, on_done: Callable[[JobRunner], None]) -> None:
        self.job_id = job_id
        self.name = "fake"
        self.submission = submission
        self.on_done = on_done
        self.done = asyncio.Event()
        self._status = JobStatus.CREATED
        self.started = self.cancelled = False

    @property
    def status(self) -> JobStatus:
        return self._status

    def start(self) -> None:
        self.started = True
        self._status = JobStatus.RUNNING

    def cancel(self) -> None:
        if not self._status.is_globally_terminal:
            self.cancelled = True
            self.finish(JobStatus.CANCELED)

    def finish(self, status: JobStatus) -> None:
        self._status = status
        self.done.set()
        self.on_done(self)

    def summary(self) -> JobSummary:
        return JobSummary(self.job_id, self.name, self._status, 0.0, None, 1, 0)

    def details(self) -> JobDetails:
        return JobDetails(self.summary(), JobGraph(self.name, []), [], [], {})

    def result(self) -> JobResultReply:
        return JobResultReply(self.job_id, self._status.is_globally_terminal, self._status)

    def final_reply(self) -> Message:
        if isinstance(self.submission, ExecuteSql):
            return SqlResult(self.job_id, b"rows", 1, self._status)
        return self.result()


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    loop.close()
    asyncio.set_event_loop(None)


class Harness:
    def __init__(self, tmp_path: Path) -> None:
        self.replies: list[tuple[list[bytes], Message]] = []
        self.runners: list[FakeRunner] = []
        self.ready = True
        self.stopped = False
        self.views: list[tuple[str, bytes]] = []
        self.blobs = BlobServer(tmp_path / "blobs")

        def new_runner(job_id: str, submission: Message, on_done: Any,
                       statement: Any = None) -> JobRunner:
            runner = FakeRunner(job_id, submission, on_done)
            runner.statement = statement
            self.runners.append(runner)
            return runner

        def create_view(name: str, arrow: bytes, done: Callable[[int, str | None], None]) -> None:
            self.views.append((name, arrow))
            done(3, None) if arrow else done(0, "ArrowInvalid: empty")

        def overview(jobs: list[JobSummary], in_memory: int) -> ClusterOverview:
            return ClusterOverview("s", self.ready, "local[2]", 1, [], jobs, 1, None, in_memory)

        def shutdown() -> None:
            self.stopped = True

        self.dispatcher = Dispatcher(DispatcherServices(
            "s", self.blobs, JobStore(tmp_path / "jobs"), new_runner,
            lambda ident, msg: self.replies.append((ident, msg)), lambda: self.ready, create_view,
            overview, shutdown))

    def ask(self, msg: Message) -> Message:
        self.dispatcher.handle(IDENT, msg)
        return self.replies[-1][1]


@pytest.fixture
def h(tmp_path: Path, loop) -> Harness:
    return Harness(tmp_path)


def a_job_graph(h: Harness) -> tuple[JobGraph, dict[str, bytes]]:
    data = b"user code"
    key = h.blobs.key_of(data)
    vertex = JobVertex("v1", "Source: Collection", [OperatorSpec(0, OperatorKind.SOURCE_COLLECTION,
                                                                 "Source", key)], 1)
    return JobGraph("job", [vertex]), {key: data}


def test_submit_starts_a_runner_and_answers_its_job_id(h: Harness) -> None:
    graph, blobs = a_job_graph(h)
    reply = h.ask(SubmitJob(graph, blobs))
    assert isinstance(reply, JobSubmitted)
    (runner,) = h.runners
    assert runner.job_id == reply.job_id and runner.started
    assert isinstance(h.ask(ListJobs()), JobList)
    assert [j.job_id for j in h.replies[-1][1].jobs] == [reply.job_id]


def test_submit_with_a_missing_blob_is_refused(h: Harness) -> None:
    graph, _ = a_job_graph(h)
    reply = h.ask(SubmitJob(graph, {}))
    assert isinstance(reply, ErrorReply) and reply.kind == "missing_blob" and not h.runners


def test_submit_without_operators_is_a_bad_request(h: Harness) -> None:
    reply = h.ask(SubmitJob(JobGraph("empty", []), {}))
    assert isinstance(reply, ErrorReply) and reply.kind == "bad_request"


def test_not_ready_refuses_jobs_and_queries(h: Harness) -> None:
    h.ready = False
    graph, blobs = a_job_graph(h)
    for msg in (SubmitJob(graph, blobs), ExecuteSql("SELECT 1"), CreateTemporaryView("v", b"x")):
        reply = h.ask(msg)
        assert isinstance(reply, ErrorReply) and reply.kind == "not_ready"
    assert not h.runners


def test_unknown_job_id_is_a_clear_error(h: Harness) -> None:
    for msg in (RequestJobDetails("0" * 32), CancelJob("0" * 32), AwaitJobResult("0" * 32, 1.0)):
        reply = h.ask(msg)
        assert isinstance(reply, ErrorReply) and reply.kind == "unknown_job"
        assert "0" * 32 in reply.error and "'s'" in reply.error


def test_cancel_of_a_running_and_of_a_finished_job(h: Harness) -> None:
    graph, blobs = a_job_graph(h)
    job_id = h.ask(SubmitJob(graph, blobs)).job_id
    reply = h.ask(CancelJob(job_id))
    assert isinstance(reply, Ack) and reply.text == f"cancelling job {job_id}"
    assert h.runners[0].cancelled
    reply = h.ask(CancelJob(job_id))
    assert isinstance(reply, Ack) and reply.text == f"job {job_id} is already CANCELED"


def test_await_answers_at_the_end_or_after_its_timeout(h: Harness, loop) -> None:
    graph, blobs = a_job_graph(h)
    job_id = h.ask(SubmitJob(graph, blobs)).job_id
    n = len(h.replies)
    h.dispatcher.handle(IDENT, AwaitJobResult(job_id, 0.05))
    assert len(h.replies) == n  # held
    loop.run_until_complete(asyncio.sleep(0.2))
    reply = h.replies[-1][1]
    assert isinstance(reply, JobResultReply) and not reply.done and reply.status is JobStatus.RUNNING
    h.dispatcher.handle(IDENT, AwaitJobResult(job_id, 10.0))
    h.runners[0].finish(JobStatus.FINISHED)
    loop.run_until_complete(asyncio.sleep(0.05))
    reply = h.replies[-1][1]
    assert isinstance(reply, JobResultReply) and reply.done and reply.status is JobStatus.FINISHED
    # a finished job answers at once, and from the store too
    assert h.ask(AwaitJobResult(job_id, 10.0)).done
    assert isinstance(h.ask(RequestJobDetails(job_id)), JobDetailsReply)


def test_finished_jobs_go_to_the_store_and_memory_is_bounded(h: Harness, monkeypatch) -> None:
    monkeypatch.setattr("sessioncluster.jobmanager.dispatcher.MAX_FINISHED_JOBS", 2)
    graph, blobs = a_job_graph(h)
    ids = [h.ask(SubmitJob(graph, blobs)).job_id for _ in range(4)]
    for runner in h.runners:
        runner.finish(JobStatus.FINISHED)
    assert list(h.dispatcher.jobs) == ids[2:]
    assert [s.job_id for s in h.dispatcher.store.summaries()] == ids
    assert isinstance(h.ask(RequestJobDetails(ids[0])), JobDetailsReply)  # read back from disk
    overview = h.ask(RequestOverview())
    assert isinstance(overview, ClusterOverview) and overview.jobs_in_memory == 2
    assert [j.job_id for j in overview.jobs] == ids


def test_sql_is_answered_with_its_rows_when_it_ends(h: Harness, loop) -> None:
    h.dispatcher.handle(IDENT, ExecuteSql("SELECT 1", "a" * 32))
    (runner,) = h.runners
    assert runner.job_id == "a" * 32 and isinstance(runner.submission, ExecuteSql)
    assert not h.replies
    runner.finish(JobStatus.FINISHED)
    loop.run_until_complete(asyncio.sleep(0.05))
    reply = h.replies[-1][1]
    assert isinstance(reply, SqlResult) and reply.arrow == b"rows"


def test_a_flink_ddl_statement_is_answered_at_once_and_a_query_runs_as_a_job(h: Harness,
                                                                              loop) -> None:
    def plan(msg: ExecuteSql) -> StatementOutcome:
        if msg.query.startswith("CREATE"):
            return StatementOutcome.ok()
        if "FROMM" not in msg.query:
            return StatementOutcome("SUCCESS_WITH_CONTENT", ["n"], ["INT"],
                                    job=StatementJob("collect", lambda: None, ["INT"]))
        raise ValueError("SQL parse failed. Encountered \"FROMM\" at line 1, column 10.")

    h.dispatcher.services.plan_statement = plan
    h.dispatcher.handle(IDENT, ExecuteSql("CREATE TABLE t (n INT)", "b" * 32, "flink"))
    loop.run_until_complete(asyncio.sleep(0.1))
    reply = h.replies[-1][1]
    assert isinstance(reply, SqlResult) and (reply.job_id, reply.result_kind) == ("", "SUCCESS")
    assert pa.ipc.open_stream(reply.arrow).read_all().to_pylist() == [{"result": "OK"}]
    assert not h.runners  # no job

    h.dispatcher.handle(IDENT, ExecuteSql("SELECT n FROMM t", "c" * 32, "flink"))
    loop.run_until_complete(asyncio.sleep(0.1))
    reply = h.replies[-1][1]
    assert reply.status is JobStatus.FAILED and "FROMM" in reply.error_text and not h.runners

    h.dispatcher.handle(IDENT, ExecuteSql("SELECT n FROM t", "d" * 32, "flink"))
    loop.run_until_complete(asyncio.sleep(0.1))
    (runner,) = h.runners
    assert runner.job_id == "d" * 32 and runner.statement.name == "collect"


@pytest.mark.parametrize("msg", [ExecuteSql("  "), ExecuteSql("SELECT 1", "not-an-id"),
                                 ExecuteSql("SELECT 1", "e" * 32, "oracle"),
                                 CreateTemporaryView("", b"x")])
def test_bad_sql_requests(h: Harness, msg: Message) -> None:
    reply = h.ask(msg)
    assert isinstance(reply, ErrorReply) and reply.kind == "bad_request"


def test_temporary_view_answers_ack_or_the_error(h: Harness) -> None:
    assert isinstance(h.ask(CreateTemporaryView("v", b"arrow")), Ack)
    reply = h.ask(CreateTemporaryView("w", b""))
    assert isinstance(reply, ErrorReply) and reply.kind == "sql_error"
    assert h.views == [("v", b"arrow"), ("w", b"")]


def test_a_handler_that_raises_is_answered_internal(h: Harness, monkeypatch) -> None:
    def broken(jobs: Any, in_memory: int) -> ClusterOverview:
        raise RuntimeError("boom")

    h.dispatcher.services.overview = broken
    reply = h.ask(RequestOverview())
    assert isinstance(reply, ErrorReply) and reply.kind == "internal" and "boom" in reply.error
    assert isinstance(h.ask(ListJobs()), JobList)  # and it keeps serving


def test_a_message_for_another_endpoint_is_a_bad_request(h: Harness) -> None:
    reply = h.ask(JobSubmitted("x"))
    assert isinstance(reply, ErrorReply) and reply.kind == "bad_request"


def test_stop_answers_then_shuts_down(h: Harness) -> None:
    assert isinstance(h.ask(StopCluster()), Ack) and h.stopped


def test_finished_jobs_records_are_bounded_in_bytes_in_memory(h: Harness, monkeypatch) -> None:
    import cloudpickle

    monkeypatch.setattr("sessioncluster.jobmanager.dispatcher.MAX_FINISHED_RECORDS_BYTES", 1)
    graph, blobs = a_job_graph(h)
    job_id = h.ask(SubmitJob(graph, blobs)).job_id
    runner = h.runners[0]
    batch = cloudpickle.dumps(list(range(50)))
    runner.result = lambda: JobResultReply(job_id, True, JobStatus.FINISHED, [batch])  # type: ignore[method-assign]
    runner.finish(JobStatus.FINISHED)
    assert job_id not in h.dispatcher.jobs  # out of memory at once: over the byte bound
    reply = h.ask(AwaitJobResult(job_id, 1.0))
    assert isinstance(reply, JobResultReply) and reply.batches == [batch]  # from the job store
