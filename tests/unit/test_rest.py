"""The REST API's pure parts with a fake job: Flink's shapes, the latest attempt of each subtask,
the bearer token, 404 bodies. A real tornado server on 127.0.0.1; no Spark."""

from __future__ import annotations

import json
from typing import Any

import pytest
import tornado.testing

from sessioncluster.cluster.connection import rest_token
from sessioncluster.graph.jobgraph import JobEdge, JobGraph, JobVertex, OperatorSpec
from sessioncluster.graph.lifecycle import ExecutionState, JobStatus
from sessioncluster.graph.streamgraph import OperatorKind, Partitioning
from sessioncluster.jobmanager.rest import RestServer, RestServices, job_details_info
from sessioncluster.protocol.messages import (
    ExecutionInfo,
    JobDetails,
    JobResultReply,
    JobSummary,
    TaskError,
    TaskManagerInfo,
    VertexInfo,
)

KEY = "k" * 64
JOB = "a" * 32
T0 = 1_700_000_000.0


def details() -> JobDetails:
    edge = JobEdge("src", "sum", Partitioning.HASH)
    graph = JobGraph("fake", [
        JobVertex("src", "Source: Collection -> Map", [
            OperatorSpec(1, OperatorKind.SOURCE_COLLECTION, "Source: Collection"),
            OperatorSpec(2, OperatorKind.MAP, "Map")], 1, outputs=[edge]),
        JobVertex("sum", "Keyed Reduce -> Sink: Collect", [
            OperatorSpec(3, OperatorKind.REDUCE, "Keyed Reduce"),
            OperatorSpec(4, OperatorKind.SINK_COLLECT, "Sink: Collect")], 1, inputs=[edge])])
    times = {"CREATED": T0, "DEPLOYING": T0 + 1, "RUNNING": T0 + 2}
    failed = ExecutionInfo("src", 0, 0, ExecutionState.FAILED, "0", 0, 7,
                           dict(times, FAILED=T0 + 3),
                           TaskError("ValueError", "bad", [("prog.py", 3, "f", "raise")], "Map", "1/1"))
    retried = ExecutionInfo("src", 0, 1, ExecutionState.FINISHED, "1", 0, 9,
                            {"CREATED": T0 + 4, "DEPLOYING": T0 + 5, "RUNNING": T0 + 6,
                             "FINISHED": T0 + 8},
                            accumulators={"numRecordsIn": ("int", 5), "numRecordsOut": ("int", 5),
                                          "seen": ("int", 5)})
    running = ExecutionInfo("sum", 0, 0, ExecutionState.RUNNING, "1", 0, 10,
                            {"CREATED": T0 + 4, "DEPLOYING": T0 + 8, "RUNNING": T0 + 9})
    return JobDetails(
        JobSummary(JOB, "fake", JobStatus.RUNNING, T0, None, 2, 1), graph,
        [VertexInfo("src", graph.vertices[0].name, ["Source: Collection", "Map"], 1,
                    ExecutionState.FINISHED, 5, 5),
         VertexInfo("sum", graph.vertices[1].name, ["Keyed Reduce", "Sink: Collect"], 1,
                    ExecutionState.RUNNING, 2, 0)],
        [failed, retried, running], {"seen": 5},
        status_times={"INITIALIZING": T0, "CREATED": T0, "RUNNING": T0 + 0.5, "RESTARTING": T0 + 3})


class FakeJob:
    def __init__(self) -> None:
        self.status = JobStatus.RUNNING
        self.cancelled = False

    def details(self) -> JobDetails:
        d = details()
        d.summary.status = self.status
        return d

    def cancel(self) -> None:
        self.cancelled = True
        self.status = JobStatus.CANCELED

    def result(self) -> JobResultReply:
        return JobResultReply(JOB, True, self.status, net_runtime_ms=8000)


def test_job_details_take_each_subtasks_latest_attempt() -> None:
    d = job_details_info(details())
    assert d["state"] == "RUNNING" and d["end-time"] == -1 and d["duration"] > 0
    assert d["status-counts"]["FINISHED"] == 1 and d["status-counts"]["RUNNING"] == 1
    assert d["status-counts"]["FAILED"] == 0  # the failed attempt was retried
    assert d["timestamps"]["RESTARTING"] == int((T0 + 3) * 1000) and d["timestamps"]["FAILED"] == 0
    assert set(d["timestamps"]) == {"INITIALIZING", "CREATED", "RUNNING", "FAILING", "FAILED",
                                    "CANCELLING", "CANCELED", "FINISHED", "RESTARTING", "SUSPENDED",
                                    "RECONCILING"}
    src, total = d["vertices"]
    assert src["start-time"] == int((T0 + 1) * 1000) and src["end-time"] == int((T0 + 8) * 1000)
    assert total["end-time"] == -1 and total["tasks"]["RUNNING"] == 1
    assert src["metrics"]["write-records"] == 5 and total["metrics"]["read-records"] == 2
    assert d["plan"]["nodes"][1]["inputs"] == [{"num": 0, "id": "src", "ship_strategy": "HASH",
                                                "exchange": "pipelined_bounded"}]
    assert d["plan"]["nodes"][0]["description"] == "Source: Collection -> Map"


class RestApiTest(tornado.testing.AsyncHTTPTestCase):
    def get_app(self) -> Any:
        self.job = FakeJob()
        tm = TaskManagerInfo("1", "worker-a", 11, 12, 0, 1, 1, last_heartbeat=T0)
        services = RestServices("unit", lambda job_id: self.job if job_id == JOB else None,
                                lambda: [self.job.details().summary], lambda: [tm],
                                lambda: {"sessioncluster.answer": "42",
                                         "spark.authenticate.secret": "hidden"})
        return RestServer(services, KEY).app

    def call(self, path: str, method: str = "GET", token: str | None = None) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {token or rest_token(KEY)}"}
        body = "" if method in ("PATCH", "POST") else None
        resp = self.fetch(path, method=method, headers=headers, body=body, raise_error=False)
        return resp.code, json.loads(resp.body)

    def test_token(self) -> None:
        resp = self.fetch("/jobs", raise_error=False)
        assert resp.code == 401 and set(json.loads(resp.body)) == {"errors"}
        assert self.call("/jobs", token=KEY)[0] == 401
        assert self.call("/jobs") == (200, {"jobs": [{"id": JOB, "status": "RUNNING"}]})

    def test_vertex_shows_the_retry_on_another_taskmanager(self) -> None:
        code, v = self.call(f"/jobs/{JOB}/vertices/src")
        assert code == 200
        (sub,) = v["subtasks"]
        assert sub["attempt"] == 1 and sub["taskmanager-id"] == "1" and sub["host"] == "worker-a"
        assert sub["status-duration"]["RUNNING"] == 2000 and sub["status-duration"]["FINISHED"] == 0
        code, accs = self.call(f"/jobs/{JOB}/vertices/src/subtasks/accumulators")
        assert accs["subtasks"][0]["user-accumulators"] == [{"name": "seen", "type": "int", "value": "5"}]

    def test_exceptions_keep_the_failed_attempt(self) -> None:
        code, exc = self.call(f"/jobs/{JOB}/exceptions")
        (entry,) = exc["exceptionHistory"]["entries"]
        assert entry["exceptionName"] == "ValueError" and entry["taskManagerId"] == "0"
        assert 'File "prog.py", line 3, in f' in entry["stacktrace"]
        assert exc["root-exception"] == entry["stacktrace"]

    def test_cancel_then_conflict(self) -> None:
        assert self.call(f"/jobs/{JOB}/execution-result")[1] == {"status": {"id": "IN_PROGRESS"}}
        assert self.call(f"/jobs/{JOB}?mode=cancel", "PATCH") == (202, {})
        assert self.job.cancelled
        code, body = self.call(f"/jobs/{JOB}?mode=cancel", "PATCH")
        assert code == 409 and body["errors"]
        code, body = self.call(f"/jobs/{JOB}?mode=stop", "PATCH")
        assert code == 400 and "mode=cancel" in body["errors"][0]
        result = self.call(f"/jobs/{JOB}/execution-result")[1]["job-execution-result"]
        assert result["application-status"] == "CANCELED" and result["net-runtime"] == 8000

    def test_404s(self) -> None:
        for path in ("/nope", "/jobs/" + "b" * 32, f"/jobs/{JOB}/vertices/nope", "/taskmanagers/9",
                     f"/jobs/{JOB}/checkpoints"):
            code, body = self.call(path)
            assert code == 404 and set(body) == {"errors"} and body["errors"][0], path

    def test_overview_counts(self) -> None:
        code, o = self.call("/overview")
        assert o["taskmanagers"] == 1 and o["slots-total"] == 1 and o["slots-available"] == 0
        assert o["jobs-running"] == 1 and o["jobs-finished"] == 0


    def test_the_jobmanagers_paths(self) -> None:
        code, config = self.call("/jobmanager/config")
        assert code == 200 and config == [{"key": "sessioncluster.answer", "value": "42"},
                                          {"key": "spark.authenticate.secret", "value": "******"}]
        code, env = self.call("/jobmanager/environment")
        assert set(env) == {"jvm", "classpath"} and set(env["jvm"]) == {"version", "arch", "options"}
        code, dump = self.call("/jobmanager/thread-dump")
        main = next(t for t in dump["threadInfos"] if t["threadName"] == "MainThread")
        assert "test_the_jobmanagers_paths" in main["stringifiedThreadInfo"]
        code, available = self.call("/jobmanager/metrics")
        assert {"id": "numRegisteredTaskManagers"} in available and {"id": "Status.JVM.CPU.Load"} in available
        code, values = self.call("/jobmanager/metrics?get=numRegisteredTaskManagers,taskSlotsTotal,nope")
        assert values == [{"id": "numRegisteredTaskManagers", "value": "1"},
                          {"id": "taskSlotsTotal", "value": "1"}]

    def test_a_jobs_config_status_and_metrics(self) -> None:
        code, config = self.call(f"/jobs/{JOB}/config")
        assert code == 200 and config["jid"] == JOB and config["name"] == "fake"
        assert set(config["execution-config"]) == {"execution-mode", "restart-strategy",
                                                   "job-parallelism", "object-reuse-mode", "user-config"}
        assert self.call(f"/jobs/{JOB}/status") == (200, {"status": "RUNNING"})
        code, req = self.call(f"/jobs/{JOB}/resource-requirements")
        assert req["src"] == {"parallelism": {"lowerBound": 1, "upperBound": 1}}
        code, values = self.call(f"/jobs/{JOB}/metrics?get=numRestarts")
        assert values == [{"id": "numRestarts", "value": "1"}]
        code, agg = self.call("/jobs/metrics?get=numRestarts&agg=max,sum")
        assert agg == [{"id": "numRestarts", "max": 1.0, "sum": 1.0}]
        code, body = self.call("/jobs/metrics?get=numRestarts&agg=median")
        assert code == 400 and "median" in body["errors"][0]
        code, url = self.call(f"/jobs/{JOB}/jobmanager/log-url")
        assert url["url"].endswith("/jobmanager/log")

    def test_a_vertexs_subtasks_times_taskmanagers_and_watermarks(self) -> None:
        code, sub = self.call(f"/jobs/{JOB}/vertices/src/subtasks/0")
        assert code == 200 and sub["attempt"] == 1 and sub["other-concurrent-attempts"] == []
        code, first = self.call(f"/jobs/{JOB}/vertices/src/subtasks/0/attempts/0")
        assert first["status"] == "FAILED" and first["taskmanager-id"] == "0"
        code, accs = self.call(f"/jobs/{JOB}/vertices/src/subtasks/0/attempts/1/accumulators")
        assert accs["user-accumulators"] == [{"name": "seen", "type": "int", "value": "5"}]
        code, times = self.call(f"/jobs/{JOB}/vertices/src/subtasktimes")
        assert times["subtasks"][0]["timestamps"]["FINISHED"] == int((T0 + 8) * 1000)
        code, tms = self.call(f"/jobs/{JOB}/vertices/sum/taskmanagers")
        (tm,) = tms["taskmanagers"]
        assert tm["taskmanager-id"] == "1" and tm["host"] == "worker-a" and tm["status"] == "RUNNING"
        assert tm["status-counts"]["RUNNING"] == 1
        assert self.call(f"/jobs/{JOB}/vertices/src/watermarks")[1] == [
            {"id": "0.currentInputWatermark", "value": str(2**63 - 1)}]
        code, bp = self.call(f"/jobs/{JOB}/vertices/sum/backpressure")
        assert bp["status"] == "ok" and bp["backpressure-level"] == "ok" and len(bp["subtasks"]) == 1
        code, agg = self.call(f"/jobs/{JOB}/vertices/src/subtasks/metrics?get=numRecordsOut&agg=sum")
        assert agg == [{"id": "numRecordsOut", "sum": 5.0}]
        code, vm = self.call(f"/jobs/{JOB}/vertices/src/metrics?get=0.numRecordsIn")
        assert vm == [{"id": "0.numRecordsIn", "value": "5"}]

    def test_unknown_ids_and_paths_that_do_not_apply(self) -> None:
        for path in (f"/jobs/{JOB}/vertices/src/subtasks/7", f"/jobs/{JOB}/vertices/src/subtasks/x",
                     f"/jobs/{JOB}/vertices/src/subtasks/0/attempts/5", "/jobmanager/logs/../x",
                     f"/jobs/{JOB}/checkpoints/details/1", "/taskmanagers/9/metrics"):
            code, body = self.call(path)
            assert code == 404 and set(body) == {"errors"}, path
        for path in ("/jars", f"/jobs/{JOB}/vertices/src/flamegraph", "/taskmanagers/1/thread-dump",
                     "/v1/datasets"):
            code, body = self.call(path)
            assert code == 404 and "does not apply" in body["errors"][0], path


class DashboardAuthTest(tornado.testing.AsyncHTTPTestCase):
    """The dashboard's sign-in: ``/?token=`` → an HttpOnly, SameSite=Strict cookie; the cookie
    reads the API, and changes it only with the custom request header."""

    def get_app(self) -> Any:
        self.job = FakeJob()
        services = RestServices("unit", lambda job_id: self.job if job_id == JOB else None,
                                lambda: [self.job.details().summary], lambda: [])
        return RestServer(services, KEY).app

    def sign_in(self) -> str:
        resp = self.fetch(f"/?token={rest_token(KEY)}", follow_redirects=False, raise_error=False)
        assert resp.code == 302 and resp.headers["Location"] == "./"
        set_cookie = resp.headers["Set-Cookie"]
        assert "HttpOnly" in set_cookie and "SameSite=Strict" in set_cookie and "Path=/" in set_cookie
        return set_cookie.split(";")[0]

    def test_the_page_and_its_files_need_no_token_and_hold_no_data(self) -> None:
        page = self.fetch("/")
        assert page.code == 200 and b"web/app.js" in page.body and JOB.encode() not in page.body
        assert self.fetch("/web/app.js").code == 200 and self.fetch("/web/style.css").code == 200
        for other in ("/web/%2e%2e/dashboard.py", "/web/dashboard.py", "/web/"):
            resp = self.fetch(other, raise_error=False)
            assert resp.code == 401 and b"import" not in resp.body, other  # only the two files
        assert self.fetch("/jobs", raise_error=False).code == 401

    def test_a_wrong_token_in_the_link_sets_no_cookie(self) -> None:
        resp = self.fetch(f"/?token={KEY}", follow_redirects=False, raise_error=False)
        assert resp.code == 401 and "Set-Cookie" not in resp.headers

    def test_the_cookie_reads_and_cancels_only_with_the_request_header(self) -> None:
        cookie = self.sign_in()
        resp = self.fetch("/jobs", headers={"Cookie": cookie})
        assert json.loads(resp.body) == {"jobs": [{"id": JOB, "status": "RUNNING"}]}
        refused = self.fetch(f"/jobs/{JOB}?mode=cancel", method="PATCH", body="",
                             headers={"Cookie": cookie}, raise_error=False)
        assert refused.code == 403 and "X-Sessioncluster-Request" in json.loads(refused.body)["errors"][0]
        assert not self.job.cancelled
        done = self.fetch(f"/jobs/{JOB}?mode=cancel", method="PATCH", body="",
                          headers={"Cookie": cookie, "X-Sessioncluster-Request": "1"})
        assert done.code == 202 and self.job.cancelled
        wrong = self.fetch("/jobs", headers={"Cookie": "sessioncluster-token=nope"}, raise_error=False)
        assert wrong.code == 401


# -- our answers parsed by a Flink REST client ----------------------------------------------------
# The models of ``flink-job-manager-api`` (generated from Flink's OpenAPI spec,
# ``rest_v1_dispatcher.yml``): a model takes every field it knows, checks enum values
# (ExecutionState, JobStatus, back-pressure levels, ...) and nested bodies, and keeps the fields it
# does not know aside: those must be ours (documented beside Flink's) or places where Flink's spec
# names a field otherwise than Flink's wire format. The client is not a dependency of the
# project: without it these tests are skipped.

#: fields the spec does not list: ours, Flink 1.x fields the spec dropped, and the spec's quirks
#: (Flink serializes JobConfigInfo and the back-pressure level under other names than the spec's)
NOT_IN_THE_SPEC = {
    "/jobs/{job}/config": {"jid", "name", "execution-config"},
    "/jobs/{job}/exceptions": {"all-exceptions", "root-exception", "timestamp", "truncated"},
    "/jobs/{job}/vertices/sum/backpressure": {"backpressure-level"},
    "/jobs/{job}/vertices/src/subtasks/0": {"host", "slot", "spark-task-id", "start_time"},
    "/jobs/{job}/vertices/src/subtasks/0/attempts/0": {"host", "slot", "spark-task-id",
                                                       "start_time"},
    "/taskmanagers/1": {"libraryCache", "state"},
    "/jobs/{job}/resource-requirements": {"src", "sum"},  # a map by vertex id
}


def _cases() -> list[tuple[str, str]]:
    return [
        ("/config", "DashboardConfiguration"), ("/overview", "ClusterOverviewWithVersion"),
        ("/jobs", "JobIdsWithStatusOverview"), ("/jobs/overview", "MultipleJobsDetails"),
        ("/jobs/{job}", "JobDetailsInfo"), ("/jobs/{job}/plan", "JobPlanInfo"),
        ("/jobs/{job}/config", "JobConfigInfo"), ("/jobs/{job}/status", "JobStatusInfo"),
        ("/jobs/{job}/exceptions", "JobExceptionsInfoWithHistory"),
        ("/jobs/{job}/accumulators", "JobAccumulatorsInfo"),
        ("/jobs/{job}/execution-result", "JobExecutionResultResponseBody"),
        ("/jobs/{job}/resource-requirements", "JobResourceRequirementsBody"),
        ("/jobs/{job}/jobmanager/log-url", "LogUrlResponse"),
        ("/jobs/{job}/vertices/src", "JobVertexDetailsInfo"),
        ("/jobs/{job}/vertices/src/subtasktimes", "SubtasksTimesInfo"),
        ("/jobs/{job}/vertices/sum/taskmanagers", "JobVertexTaskManagersInfo"),
        ("/jobs/{job}/vertices/sum/backpressure", "JobVertexBackPressureInfo"),
        ("/jobs/{job}/vertices/src/accumulators", "JobVertexAccumulatorsInfo"),
        ("/jobs/{job}/vertices/src/subtasks/accumulators", "SubtasksAllAccumulatorsInfo"),
        ("/jobs/{job}/vertices/src/subtasks/0", "SubtaskExecutionAttemptDetailsInfo"),
        ("/jobs/{job}/vertices/src/subtasks/0/attempts/0", "SubtaskExecutionAttemptDetailsInfo"),
        ("/jobs/{job}/vertices/src/subtasks/0/attempts/1/accumulators",
         "SubtaskExecutionAttemptAccumulatorsInfo"),
        ("/jobmanager/environment", "EnvironmentInfo"), ("/jobmanager/thread-dump", "ThreadDumpInfo"),
        ("/jobmanager/logs", "LogListInfo"),
        ("/taskmanagers", "TaskManagersInfo"), ("/taskmanagers/1", "TaskManagerDetailsInfo"),
    ]


class FlinkClientParsesOurAnswers(tornado.testing.AsyncHTTPTestCase):
    def get_app(self) -> Any:
        job = FakeJob()
        tm = TaskManagerInfo("1", "worker-a", 11, 12, 0, 1, 1, last_heartbeat=T0)
        services = RestServices("unit", lambda job_id: job if job_id == JOB else None,
                                lambda: [job.details().summary], lambda: [tm],
                                lambda: {"parallelism.default": "1"})
        return RestServer(services, KEY).app

    def body(self, path: str) -> Any:
        resp = self.fetch(path.format(job=JOB),
                          headers={"Authorization": f"Bearer {rest_token(KEY)}"})
        assert resp.code == 200, (path, resp.body)
        return json.loads(resp.body)

    def test_every_body_parses_into_its_model(self) -> None:
        models = pytest.importorskip("flink_job_manager_api.models")
        for path, name in _cases():
            parsed = getattr(models, name).from_dict(self.body(path))
            unknown = set(parsed.additional_properties)
            assert unknown <= NOT_IN_THE_SPEC.get(path, set()), (path, unknown)

    def test_the_jobs_overview_has_every_field_flinks_java_client_needs(self) -> None:
        """Flink 2.3's JobDetails (what ``flink list`` reads) takes ``pending-operators`` as an
        int, which a missing field cannot be (the Python model above allows it)."""
        (job,) = self.body("/jobs/overview")["jobs"]
        assert isinstance(job["pending-operators"], int)
        assert job["jobType"] in ("BATCH", "STREAMING")
        assert job["schedulerType"] in ("Default", "AdaptiveBatch")
        assert {"jid", "name", "start-time", "end-time", "duration", "state",
                "last-modification", "tasks"} <= set(job)

    def test_configuration_entries_and_metrics(self) -> None:
        models = pytest.importorskip("flink_job_manager_api.models")
        for path in ("/jobmanager/config", "/jobs/{job}/jobmanager/config"):
            for entry in self.body(path):
                parsed = models.ConfigurationInfoEntry.from_dict(entry)
                assert isinstance(parsed.key, str) and isinstance(parsed.value, str)
                assert not parsed.additional_properties
        for path in ("/jobmanager/metrics?get=taskSlotsTotal", "/jobs/{job}/metrics?get=uptime",
                     "/jobs/{job}/vertices/src/watermarks",
                     "/taskmanagers/1/metrics?get=Status.Slots.Total"):
            metrics = [models.Metric.from_dict(m) for m in self.body(path)]
            assert metrics and all(isinstance(m.value, str) for m in metrics), path

