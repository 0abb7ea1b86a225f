"""Flink's REST API on the shared session, field by field against Flink's documented shapes
(``rest_v1_dispatcher.yml``), through plain HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

import sessioncluster
from sessioncluster import IntCounter, MapFunction, cli
from sessioncluster.client.restclient import RestClient, RestError
from sessioncluster.graph.lifecycle import JobStatus
from sessioncluster.pyflink.common import Duration, WatermarkStrategy
from sessioncluster.pyflink.common.watermark_strategy import TimestampAssigner
from sessioncluster.pyflink.datastream import RuntimeExecutionMode
from sessioncluster.pyflink.datastream.connectors.file_system import FileSource, StreamFormat

pytestmark = pytest.mark.integration

FLINK_EXECUTION_STATES = {"CREATED", "SCHEDULED", "DEPLOYING", "RUNNING", "FINISHED", "CANCELING",
                          "CANCELED", "FAILED", "RECONCILING", "INITIALIZING"}
IO_METRICS = {"read-bytes", "read-bytes-complete", "write-bytes", "write-bytes-complete",
              "read-records", "read-records-complete", "write-records", "write-records-complete",
              "accumulated-backpressured-time", "accumulated-idle-time", "accumulated-busy-time"}


def call(session: sessioncluster.Session, path: str, method: str = "GET",
         token: str | None = "session") -> tuple[int, Any, str]:
    """(status, JSON body or None, content type) of one request."""
    req = urllib.request.Request(session.rest_url + path, method=method)
    if token is not None:
        req.add_header("Authorization", f"Bearer {session.rest_token if token == 'session' else token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            status, body, ctype = resp.status, resp.read(), resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError as err:
        status, body, ctype = err.code, err.read(), err.headers.get("Content-Type", "")
    data = json.loads(body) if ctype.startswith("application/json") and body else body.decode()
    return status, data, ctype


def get(session: sessioncluster.Session, path: str) -> Any:
    status, body, _ = call(session, path)
    assert status == 200, (path, status, body)
    return body


class Counted(MapFunction):
    def open(self, runtime_context: Any) -> None:
        self.seen = IntCounter()
        runtime_context.add_accumulator("seen", self.seen)

    def map(self, value: int) -> int:
        self.seen.add(1)
        return value * 10


def fails(x: int) -> int:
    if x == 3:
        raise ArithmeticError(f"no threes here: {x}")
    return x


@pytest.fixture(scope="module")
def finished_job(session: sessioncluster.Session) -> str:
    env = session.get_execution_environment()
    env.set_parallelism(2)
    out = (env.from_collection(list(range(100))).map(Counted()).key_by(lambda x: x % 3)
           .reduce(lambda a, b: a + b).execute_and_collect("rest finished job"))
    assert sorted(out) == sorted(sum(x * 10 for x in range(100) if x % 3 == k) for k in range(3))
    return next(j.job_id for j in session.jobs() if j.name == "rest finished job")


def test_the_url_and_token_come_from_the_connection_file(session: sessioncluster.Session) -> None:
    assert session.rest_url.startswith("http://127.0.0.1:")
    assert session.rest_token and session.info.key not in session.rest_token
    from sessioncluster.cli import format_overview

    assert f"REST API        {session.rest_url}" in format_overview(session.status(), session.info)


@pytest.mark.parametrize("path", ["/config", "/overview", "/jobs", "/taskmanagers", "/nowhere"])
def test_without_the_token_only_401(session: sessioncluster.Session, path: str) -> None:
    for token in (None, "wrong", session.info.key):
        status, body, _ = call(session, path, token=token)
        assert status == 401
        assert set(body) == {"errors"} and "Unauthorized" in body["errors"][0]


def test_config_and_overview(session: sessioncluster.Session, finished_job: str) -> None:
    config = get(session, "/config")
    assert {"refresh-interval", "timezone-name", "timezone-offset", "flink-version",
            "flink-revision", "features"} <= set(config)
    assert config["features"] == {"web-submit": False, "web-cancel": True, "web-rescale": False,
                                  "web-history": False}
    overview = get(session, "/overview")
    assert overview["taskmanagers"] == 2 and overview["slots-total"] == 2
    assert 0 <= overview["slots-available"] <= 2
    assert overview["jobs-finished"] >= 1
    assert {"jobs-running", "jobs-cancelled", "jobs-failed", "flink-version",
            "flink-commit"} <= set(overview)
    assert get(session, "/v1/overview")["taskmanagers"] == 2


def test_jobs_and_jobs_overview(session: sessioncluster.Session, finished_job: str) -> None:
    jobs = get(session, "/jobs")["jobs"]
    assert {"id": finished_job, "status": "FINISHED"} in jobs
    entry = next(j for j in get(session, "/jobs/overview")["jobs"] if j["jid"] == finished_job)
    assert entry["name"] == "rest finished job" and entry["state"] == "FINISHED"
    assert entry["end-time"] >= entry["start-time"] > 0
    assert entry["duration"] == entry["end-time"] - entry["start-time"]
    assert entry["last-modification"] >= entry["start-time"]
    tasks = entry["tasks"]
    assert set(tasks) == {"total"} | {s.lower() for s in FLINK_EXECUTION_STATES}
    assert tasks["total"] == tasks["finished"] == 4  # two vertices of parallelism 2


def test_job_details(session: sessioncluster.Session, finished_job: str) -> None:
    d = get(session, f"/jobs/{finished_job}")
    assert d["jid"] == finished_job and d["name"] == "rest finished job" and d["state"] == "FINISHED"
    assert d["isStoppable"] is False and d["job-type"] == "BATCH"
    assert d["now"] >= d["end-time"] >= d["start-time"] > 0
    assert d["timestamps"]["FINISHED"] >= d["timestamps"]["RUNNING"] >= d["timestamps"]["CREATED"] > 0
    assert d["timestamps"]["FAILED"] == 0
    assert d["status-counts"]["FINISHED"] == 4
    assert set(d["status-counts"]) == FLINK_EXECUTION_STATES
    source, reduce = d["vertices"]
    for v in d["vertices"]:
        assert {"id", "name", "maxParallelism", "parallelism", "status", "start-time", "end-time",
                "duration", "tasks", "metrics"} <= set(v)
        assert v["parallelism"] == 2 and v["status"] == "FINISHED"
        assert v["tasks"]["FINISHED"] == 2 and set(v["metrics"]) == IO_METRICS
        assert v["end-time"] >= v["start-time"] > 0
    assert source["metrics"]["write-records"] == 100
    # key_by(...).reduce combines on the map side: each source subtask sends one record per key
    assert reduce["metrics"]["read-records"] == 6
    assert reduce["metrics"]["write-records"] == 3
    plan = d["plan"]
    assert plan["jid"] == finished_job and plan["type"] == "BATCH"
    nodes = {n["id"]: n for n in plan["nodes"]}
    assert set(nodes) == {source["id"], reduce["id"]}
    assert "inputs" not in nodes[source["id"]]
    assert nodes[reduce["id"]]["inputs"] == [{"num": 0, "id": source["id"], "ship_strategy": "HASH",
                                              "exchange": "pipelined_bounded"}]
    assert get(session, f"/jobs/{finished_job}/plan") == {"plan": plan}


def test_vertex_subtasks_and_accumulators(session: sessioncluster.Session, finished_job: str) -> None:
    d = get(session, f"/jobs/{finished_job}")
    source = d["vertices"][0]
    tm_hosts = {tm.tm_id: tm.host for tm in session.status().taskmanagers}
    v = get(session, f"/jobs/{finished_job}/vertices/{source['id']}")
    assert v["id"] == source["id"] and v["parallelism"] == 2 and v["name"] == source["name"]
    assert [s["subtask"] for s in v["subtasks"]] == [0, 1]
    for s in v["subtasks"]:
        assert s["status"] == "FINISHED" and s["attempt"] == 0
        assert s["host"] == tm_hosts[s["taskmanager-id"]]
        assert s["end-time"] >= s["start-time"] > 0 and s["duration"] >= 0
        assert set(s["metrics"]) == IO_METRICS
        assert set(s["status-duration"]) == FLINK_EXECUTION_STATES
    assert sum(s["metrics"]["write-records"] for s in v["subtasks"]) == 100

    accs = get(session, f"/jobs/{finished_job}/vertices/{source['id']}/subtasks/accumulators")
    assert accs["id"] == source["id"] and accs["parallelism"] == 2
    seen = [a for s in accs["subtasks"] for a in s["user-accumulators"] if a["name"] == "seen"]
    assert sum(int(a["value"]) for a in seen) == 100
    assert all(set(a) == {"name", "type", "value"} for a in seen)

    job_accs = get(session, f"/jobs/{finished_job}/accumulators")
    assert job_accs["job-accumulators"] == []
    assert {"name": "seen", "type": "int", "value": "100"} in job_accs["user-task-accumulators"]

    result = get(session, f"/jobs/{finished_job}/execution-result")
    assert result["status"] == {"id": "COMPLETED"}
    r = result["job-execution-result"]
    assert r["id"] == finished_job and r["application-status"] == "SUCCEEDED"
    assert r["accumulator-results"] == {"seen": "100"} and r["net-runtime"] > 0
    assert "failure-cause" not in r


def test_a_failed_job_shows_the_users_traceback(session: sessioncluster.Session) -> None:
    env = session.get_execution_environment()
    env.set_parallelism(1)
    with pytest.raises(sessioncluster.JobExecutionException):
        env.from_collection([1, 2, 3]).map(fails).execute_and_collect("rest failing job")
    job_id = next(j.job_id for j in session.jobs() if j.name == "rest failing job")
    exc = get(session, f"/jobs/{job_id}/exceptions")
    assert "ArithmeticError: no threes here: 3" in exc["root-exception"]
    assert "in fails" in exc["root-exception"]
    entries = exc["exceptionHistory"]["entries"]
    assert entries and entries[0]["exceptionName"] == "ArithmeticError"
    assert "no threes here" in entries[0]["stacktrace"] and entries[0]["timestamp"] > 0
    assert {"exceptionName", "stacktrace", "timestamp", "taskName", "location", "taskManagerId",
            "failureLabels", "concurrentExceptions"} <= set(entries[0])
    assert exc["truncated"] is False and exc["exceptionHistory"]["truncated"] is False
    result = get(session, f"/jobs/{job_id}/execution-result")["job-execution-result"]
    assert result["application-status"] == "FAILED"
    assert "no threes here" in result["failure-cause"]["stack-trace"]
    assert get(session, f"/jobs/{job_id}")["state"] == "FAILED"


def test_cancel_with_patch(session: sessioncluster.Session) -> None:
    def slow(x: int) -> int:
        time.sleep(0.5)
        return x

    env = session.get_execution_environment()
    env.set_parallelism(2)
    client = env.from_collection(list(range(200))).map(slow).execute_and_collect_async("rest cancel")
    job_id = client.get_job_id()
    deadline = time.monotonic() + 60
    while get(session, f"/jobs/{job_id}")["status-counts"]["RUNNING"] == 0:
        assert time.monotonic() < deadline, "the job never ran"
        time.sleep(0.1)
    assert get(session, f"/jobs/{job_id}/execution-result") == {"status": {"id": "IN_PROGRESS"}}
    status, body, _ = call(session, f"/jobs/{job_id}?mode=cancel", method="PATCH")
    assert (status, body) == (202, {})
    client.wait(timeout=60)
    assert get(session, f"/jobs/{job_id}")["state"] == "CANCELED"
    r = get(session, f"/jobs/{job_id}/execution-result")["job-execution-result"]
    assert r["application-status"] == "CANCELED"
    status, body, _ = call(session, f"/jobs/{job_id}?mode=cancel", method="PATCH")
    assert status == 409 and "already CANCELED" in body["errors"][0]


@pytest.mark.parametrize("path", [
    "/nowhere", "/jobs/" + "0" * 32, "/jobs/" + "0" * 32 + "/exceptions", "/jobs/not-a-job-id",
    "/taskmanagers/nosuch", "/taskmanagers/nosuch/log",
])
def test_unknown_paths_and_ids_are_404_with_flinks_body(session: sessioncluster.Session,
                                                         path: str) -> None:
    status, body, ctype = call(session, path)
    assert status == 404 and ctype.startswith("application/json")
    assert set(body) == {"errors"} and body["errors"] and all(isinstance(e, str) for e in body["errors"])


def test_a_batch_job_has_no_checkpoints(session: sessioncluster.Session, finished_job: str) -> None:
    for path, method in ((f"/jobs/{finished_job}/checkpoints", "GET"),
                         (f"/jobs/{finished_job}/savepoints", "POST"),
                         (f"/jobs/{finished_job}/stop", "POST")):
        status, body, _ = call(session, path, method=method)
        assert status == 404 and "BATCH job" in body["errors"][0]
    status, body, _ = call(session, f"/jobs/{finished_job}/vertices/nosuch")
    assert status == 404 and "nosuch" in body["errors"][0]


def test_taskmanagers(session: sessioncluster.Session) -> None:
    tms = get(session, "/taskmanagers")["taskmanagers"]
    assert len(tms) == 2
    for tm in tms:
        assert {"id", "path", "dataPort", "jmxPort", "timeSinceLastHeartbeat", "slotsNumber",
                "freeSlots", "totalResource", "freeResource", "hardware",
                "memoryConfiguration"} <= set(tm)
        assert tm["slotsNumber"] == 1 and 0 <= tm["freeSlots"] <= 1
        assert tm["hardware"]["cpuCores"] >= 1 and tm["hardware"]["physicalMemory"] > 0
        assert time.time() * 1000 - tm["timeSinceLastHeartbeat"] < 60_000
        one = get(session, f"/taskmanagers/{tm['id']}")
        assert one["id"] == tm["id"] and "metrics" in one and one["slotsNumber"] == 1
        assert "libraryCache" in one and one["libraryCache"]["entries"] >= 0
        status, log, ctype = call(session, f"/taskmanagers/{tm['id']}/log")
        assert status == 200 and ctype.startswith("text/plain") and isinstance(log, str)


def test_cli_job_commands_go_through_the_rest_api(session: sessioncluster.Session, finished_job: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    name = session.info.name
    assert cli.main(["list-jobs", name]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(finished_job))
    assert " FINISHED " in line and "subtasks" in line
    assert cli.main(["jobs", name, "--running"]) == 0
    assert finished_job not in capsys.readouterr().out
    # Flink's answers, one clear line and exit code 1
    assert cli.main(["cancel", name, finished_job]) == 1
    assert f"Job {finished_job} is already FINISHED" in capsys.readouterr().err
    assert cli.main(["cancel", name, "f" * 32]) == 1
    assert "not found" in capsys.readouterr().err.lower()
    assert cli.main(["savepoint", name, finished_job]) == 1
    assert "BATCH job" in capsys.readouterr().err
    rest = RestClient.of(session)
    with pytest.raises(RestError) as info:
        rest.get("/jobs/not-a-job-id")
    assert info.value.status == 404 and info.value.errors


# -- Flink's remaining GET paths, for a finished BATCH job and a running STREAMING job ----------

MAX_WATERMARK = str(2**63 - 1)
SUBTASK_DETAILS = {"subtask", "status", "attempt", "endpoint", "start-time", "end-time", "duration",
                   "metrics", "taskmanager-id", "status-duration"}


class Seconds(TimestampAssigner):
    """Event time from a line ``<seconds>,<word>``."""

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value.split(",")[0]) * 1000


def _drop(directory: Path, name: str, lines: list[str]) -> None:
    """A file appears whole (written aside, then renamed), as a file source needs."""
    tmp = directory.parent / f".{name}"
    tmp.write_text("\n".join(lines) + "\n")
    tmp.rename(directory / name)


@pytest.fixture(scope="module")
def streaming_job(session: sessioncluster.Session,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A STREAMING job over a monitored directory, running (a checkpoint completed and the
    watermark past 7 s) until the module's tests are done."""
    src = tmp_path_factory.mktemp("rest-stream") / "in"
    src.mkdir()
    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)
    env.enable_checkpointing(300)
    source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(src))
              .monitor_continuously(Duration.of_millis(200)).build())
    strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(2))
                .with_timestamp_assigner(Seconds()))
    _drop(src, "1.txt", ["1,a", "9,b", "3,a"])
    results = (env.from_source(source, strategy, "events")
               .map(lambda line: (line.split(",")[1], 1))
               .key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
               .execute_and_collect("rest streaming job"))
    try:
        got = [next(results) for _ in range(3)]
        assert sorted(got) == [("a", 1), ("a", 2), ("b", 1)]
        _drop(src, "2.txt", ["13,a"])
        assert next(results) == ("a", 3)
        job_id = results.client.job_id
        deadline = time.monotonic() + 180
        while True:
            info = results.client.details().streaming or {}
            if info.get("counts", {}).get("completed") and (info.get("watermark") or 0) >= 7000:
                break
            assert time.monotonic() < deadline, f"no checkpoint or watermark yet: {info}"
            time.sleep(0.2)
        yield job_id
    finally:
        results.close()
    assert results.client.wait(60).status is JobStatus.CANCELED


@pytest.fixture(scope="module", params=["batch", "streaming"])
def any_job(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(kind, job id) of the finished BATCH job, then of the running STREAMING job."""
    fixture = "finished_job" if request.param == "batch" else "streaming_job"
    return request.param, request.getfixturevalue(fixture)


def test_the_jobmanagers_config_environment_and_logs(session: sessioncluster.Session) -> None:
    config = {e["key"]: e["value"] for e in get(session, "/jobmanager/config")}
    assert all(isinstance(v, str) for v in config.values())
    assert config["taskmanager.numberOfTaskSlots"] == "1" and config["parallelism.default"] == "2"
    assert config["rest.port"] == session.rest_url.rsplit(":", 1)[1]
    assert config["sessioncluster.session-name"] == session.info.name
    assert config["spark.app.id"] and "spark.master" in config
    env = get(session, "/jobmanager/environment")
    assert set(env) == {"jvm", "classpath"} and set(env["jvm"]) == {"version", "arch", "options"}
    assert env["jvm"]["version"].startswith(("CPython", "PyPy")) and env["classpath"]
    logs = get(session, "/jobmanager/logs")["logs"]
    main = next(entry for entry in logs if entry["name"] == "jobmanager.log")
    assert set(main) == {"name", "size", "mtime"} and main["size"] > 0 and main["mtime"] > 0
    for path in ("/jobmanager/log", "/jobmanager/stdout", "/jobmanager/logs/jobmanager.log"):
        status, text, ctype = call(session, path)
        assert status == 200 and ctype.startswith("text/plain") and "REST API at" in text
    dump = get(session, "/jobmanager/thread-dump")["threadInfos"]
    assert all(set(t) == {"threadName", "stringifiedThreadInfo"} for t in dump)
    assert any(t["threadName"] == "MainThread" for t in dump)


def test_the_jobmanagers_metrics(session: sessioncluster.Session) -> None:
    available = {m["id"] for m in get(session, "/jobmanager/metrics")}
    assert {"numRegisteredTaskManagers", "numRunningJobs", "taskSlotsTotal", "taskSlotsAvailable",
            "Status.JVM.CPU.Load", "Status.JVM.Threads.Count"} <= available
    values = get(session, "/jobmanager/metrics?get=numRegisteredTaskManagers,taskSlotsTotal,nosuch")
    assert values == [{"id": "numRegisteredTaskManagers", "value": "2"},
                      {"id": "taskSlotsTotal", "value": "2"}]
    (threads,) = get(session, "/v1/jobmanager/metrics?get=Status.JVM.Threads.Count")
    assert int(threads["value"]) >= 2


def test_the_taskmanagers_metrics_and_logs(session: sessioncluster.Session) -> None:
    tms = [tm["id"] for tm in get(session, "/taskmanagers")["taskmanagers"]]
    for tm_id in tms:
        available = {m["id"] for m in get(session, f"/taskmanagers/{tm_id}/metrics")}
        assert {"Status.JVM.CPU.Load", "Status.JVM.CPU.Time", "Status.JVM.Threads.Count"} <= available
        (cpu,) = get(session, f"/taskmanagers/{tm_id}/metrics?get=Status.JVM.CPU.Time")
        assert int(cpu["value"]) > 0
        logs = {entry["name"]: entry for entry in get(session, f"/taskmanagers/{tm_id}/logs")["logs"]}
        assert "stderr" in logs and set(logs["stderr"]) == {"name", "size", "mtime"}
        for path in ("logs/stderr", "stdout"):
            status, text, ctype = call(session, f"/taskmanagers/{tm_id}/{path}")
            assert status == 200 and ctype.startswith("text/plain") and isinstance(text, str)
    agg = get(session, "/taskmanagers/metrics?get=Status.JVM.Threads.Count&agg=min,max,sum")
    assert [set(a) for a in agg] == [{"id", "min", "max", "sum"}]
    assert agg[0]["min"] <= agg[0]["max"] and agg[0]["sum"] >= agg[0]["max"] > 0
    one = get(session, f"/taskmanagers/metrics?get=Status.Slots.Total&taskmanagers={tms[0]}")
    assert one == [{"id": "Status.Slots.Total", "min": 1.0, "max": 1.0, "avg": 1.0, "sum": 1.0,
                    "skew": 0.0}]
    status, body, _ = call(session, "/taskmanagers/metrics?get=Status.Slots.Total&agg=median")
    assert status == 400 and "median" in body["errors"][0]


def test_a_jobs_config_status_and_jobmanager(session: sessioncluster.Session,
                                            any_job: tuple[str, str]) -> None:
    kind, job_id = any_job
    config = get(session, f"/jobs/{job_id}/config")
    assert config["jid"] == job_id and config["name"].startswith("rest ")
    assert set(config["execution-config"]) == {"execution-mode", "restart-strategy", "job-parallelism",
                                               "object-reuse-mode", "user-config"}
    details = get(session, f"/jobs/{job_id}")
    assert config["execution-config"]["job-parallelism"] == max(v["parallelism"]
                                                                for v in details["vertices"])
    state = "FINISHED" if kind == "batch" else "RUNNING"
    assert get(session, f"/jobs/{job_id}/status") == {"status": state}
    job_config = {e["key"]: e["value"] for e in get(session, f"/jobs/{job_id}/jobmanager/config")}
    assert job_config["taskmanager.numberOfTaskSlots"] == "1"
    if kind == "streaming":  # the job's own settings, by Flink's option names
        assert job_config["execution.checkpointing.interval"] == "300"
    assert set(get(session, f"/jobs/{job_id}/jobmanager/environment")) == {"jvm", "classpath"}
    url = get(session, f"/jobs/{job_id}/jobmanager/log-url")["url"]
    assert url == session.rest_url + "/jobmanager/log"
    tm_id = session.status().taskmanagers[0].tm_id
    assert get(session, f"/jobs/{job_id}/taskmanagers/{tm_id}/log-url") == {
        "url": f"{session.rest_url}/taskmanagers/{tm_id}/log"}
    requirements = get(session, f"/jobs/{job_id}/resource-requirements")
    assert requirements == {v["id"]: {"parallelism": {"lowerBound": v["parallelism"],
                                                      "upperBound": v["parallelism"]}}
                            for v in details["vertices"]}


def test_a_jobs_metrics(session: sessioncluster.Session, any_job: tuple[str, str]) -> None:
    kind, job_id = any_job
    available = {m["id"] for m in get(session, f"/jobs/{job_id}/metrics")}
    assert {"uptime", "downtime", "numRestarts"} <= available
    assert get(session, f"/jobs/{job_id}/metrics?get=numRestarts") == [{"id": "numRestarts",
                                                                        "value": "0"}]
    if kind == "streaming":
        (done,) = get(session, f"/jobs/{job_id}/metrics?get=numberOfCompletedCheckpoints")
        assert int(done["value"]) >= 1
        (uptime,) = get(session, f"/jobs/{job_id}/metrics?get=uptime")
        assert int(uptime["value"]) > 0
    else:
        assert "numberOfCompletedCheckpoints" not in available
    agg = get(session, f"/jobs/metrics?get=numRestarts&jobs={job_id}")
    assert agg == [{"id": "numRestarts", "min": 0.0, "max": 0.0, "avg": 0.0, "sum": 0.0, "skew": 0.0}]


def test_a_vertexs_subtasks_and_attempts(session: sessioncluster.Session,
                                         any_job: tuple[str, str]) -> None:
    kind, job_id = any_job
    source = get(session, f"/jobs/{job_id}")["vertices"][0]
    base = f"/jobs/{job_id}/vertices/{source['id']}"
    indexes = list(range(source["parallelism"]))
    same = ("subtask", "attempt", "status", "taskmanager-id", "start-time")
    statuses = []
    for index in indexes:
        latest = get(session, f"{base}/subtasks/{index}")
        assert SUBTASK_DETAILS | {"other-concurrent-attempts"} <= set(latest)
        assert latest["subtask"] == index and latest["attempt"] == 0
        statuses.append(latest["status"])
        first = get(session, f"{base}/subtasks/{index}/attempts/0")
        assert {k: first[k] for k in same} == {k: latest[k] for k in same}
        accs = get(session, f"{base}/subtasks/{index}/attempts/0/accumulators")
        assert set(accs) == {"subtask", "attempt", "id", "user-accumulators"}
    if kind == "batch":
        assert set(statuses) == {"FINISHED"}
    else:  # subtask i is partition i of each micro-batch: one that no micro-batch ran yet is CREATED
        assert "RUNNING" in statuses and set(statuses) <= {"RUNNING", "CREATED"}
    times = get(session, f"{base}/subtasktimes")
    assert set(times) == {"id", "name", "now", "subtasks"} and times["id"] == source["id"]
    assert [s["subtask"] for s in times["subtasks"]] == indexes
    for s in times["subtasks"]:
        assert set(s) >= {"subtask", "host", "duration", "timestamps"}
        assert s["timestamps"]["CREATED"] > 0
        if s["timestamps"].get("RUNNING"):
            assert s["timestamps"]["RUNNING"] >= s["timestamps"]["CREATED"]
        if kind == "batch":
            assert s["timestamps"]["FINISHED"] >= s["timestamps"]["RUNNING"]
    by_tm = get(session, f"{base}/taskmanagers")
    assert set(by_tm) == {"id", "name", "now", "taskmanagers"}
    assert sum(sum(tm["status-counts"].values()) for tm in by_tm["taskmanagers"]) == len(indexes)
    for tm in by_tm["taskmanagers"]:
        assert {"endpoint", "status", "start-time", "end-time", "duration", "metrics",
                "status-counts", "taskmanager-id"} <= set(tm)
        assert set(tm["metrics"]) == IO_METRICS and set(tm["status-counts"]) == FLINK_EXECUTION_STATES
    if kind == "batch":
        tm_ids = {tm.tm_id for tm in session.status().taskmanagers}
        assert {tm["taskmanager-id"] for tm in by_tm["taskmanagers"]} <= tm_ids
        assert sum(tm["metrics"]["write-records"] for tm in by_tm["taskmanagers"]) == 100


def test_a_vertexs_watermarks_backpressure_accumulators_and_metrics(
        session: sessioncluster.Session, any_job: tuple[str, str]) -> None:
    kind, job_id = any_job
    source = get(session, f"/jobs/{job_id}")["vertices"][0]
    base = f"/jobs/{job_id}/vertices/{source['id']}"
    marks = get(session, f"{base}/watermarks")
    assert [m["id"] for m in marks] == [f"{i}.currentInputWatermark"
                                        for i in range(source["parallelism"])]
    if kind == "batch":  # the end of input: Flink's MAX_WATERMARK
        assert {m["value"] for m in marks} == {MAX_WATERMARK}
    else:  # the job's watermark: past 13 s - 2 s of out-of-orderness once 2.txt was read
        # (a subtask that no micro-batch ran yet has seen no watermark: Long.MIN_VALUE)
        values = [int(m["value"]) for m in marks]
        assert any(7000 <= v <= 11000 for v in values)
        assert all(7000 <= v <= 11000 or v == -2**63 for v in values)
    bp = get(session, f"{base}/backpressure")
    assert set(bp) == {"status", "backpressure-level", "end-timestamp", "subtasks"}
    assert bp["status"] == ("deprecated" if kind == "batch" else "ok")
    assert bp["backpressure-level"] == "ok" and bp["end-timestamp"] > 0
    assert [s["subtask"] for s in bp["subtasks"]] == list(range(source["parallelism"]))
    assert all({"subtask", "attempt-number", "backpressure-level", "ratio", "idleRatio",
                "busyRatio"} <= set(s) for s in bp["subtasks"])
    accs = get(session, f"{base}/accumulators")
    assert set(accs) == {"id", "user-accumulators"} and accs["id"] == source["id"]
    if kind == "batch":
        assert accs["user-accumulators"] == [{"name": "seen", "type": "IntCounter", "value": "100"}]
    available = {m["id"] for m in get(session, f"{base}/metrics")}
    assert {"0.numRecordsIn", "1.numRecordsOut", "0.currentInputWatermark"} <= available
    per_subtask = get(session, f"{base}/subtasks/0/metrics?get=numRecordsOut,currentInputWatermark")
    assert [m["id"] for m in per_subtask] == ["numRecordsOut", "currentInputWatermark"]
    if kind == "batch":
        assert per_subtask[1]["value"] == MAX_WATERMARK
    agg = get(session, f"{base}/subtasks/metrics?get=numRecordsOut&agg=sum,max")
    assert [set(a) for a in agg] == [{"id", "sum", "max"}]
    if kind == "batch":
        assert agg[0]["sum"] == 100.0
    status, body, _ = call(session, f"{base}/flamegraph")
    assert status == 404 and "does not apply" in body["errors"][0]


def test_a_streaming_jobs_checkpoint_details(session: sessioncluster.Session,
                                             streaming_job: str) -> None:
    stats = get(session, f"/jobs/{streaming_job}/checkpoints")
    latest = stats["latest"]["completed"]
    assert latest is not None and stats["counts"]["completed"] >= 1
    config = get(session, f"/jobs/{streaming_job}/checkpoints/config")
    assert config["mode"] == "exactly_once" and config["interval"] == 300
    details = get(session, f"/jobs/{streaming_job}/checkpoints/details/{latest['id']}")
    assert {"id", "status", "is_savepoint", "trigger_timestamp", "latest_ack_timestamp",
            "state_size", "end_to_end_duration", "num_subtasks", "num_acknowledged_subtasks",
            "tasks"} <= set(details)
    vertices = [v["id"] for v in get(session, f"/jobs/{streaming_job}")["vertices"]]
    assert details["id"] == latest["id"] and set(details["tasks"]) == set(vertices)
    task = get(session, f"/jobs/{streaming_job}/checkpoints/details/{latest['id']}/subtasks/"
                        f"{vertices[0]}")
    assert {"id", "status", "latest_ack_timestamp", "num_subtasks", "summary", "subtasks"} <= set(task)
    assert [s["index"] for s in task["subtasks"]] == [0, 1]
    for path in (f"/checkpoints/details/{latest['id'] + 10_000}", "/checkpoints/details/x",
                 f"/checkpoints/details/{latest['id']}/subtasks/nosuch"):
        status, body, _ = call(session, f"/jobs/{streaming_job}{path}")
        assert status == 404 and set(body) == {"errors"}, path


@pytest.mark.parametrize("path", [
    "/jars", "/jars/upload", "/datasets", "/jobmanager/profiler", "/v1/datasets",
])
def test_paths_that_do_not_apply_answer_flinks_errors_body(session: sessioncluster.Session,
                                                            path: str) -> None:
    status, body, ctype = call(session, path)
    assert status == 404 and ctype.startswith("application/json")
    assert set(body) == {"errors"} and "does not apply" in body["errors"][0]


def _every_path(session: sessioncluster.Session, job_id: str) -> list[str]:
    """Every GET path of the table with this job's real ids (and some unknown ones)."""
    job = get(session, f"/jobs/{job_id}")
    tm = session.status().taskmanagers[0].tm_id
    cid = ((get(session, f"/jobs/{job_id}/checkpoints")["latest"]["completed"] or {}).get("id", 1)
           if job["job-type"] == "STREAMING" else 1)
    paths = ["/config", "/overview", "/jobs", "/jobs/overview", "/jobs/metrics",
             "/jobs/metrics?get=uptime", "/taskmanagers", "/taskmanagers/metrics?get=Status.JVM.CPU.Load",
             "/jobmanager/config", "/jobmanager/environment", "/jobmanager/logs", "/jobmanager/log",
             "/jobmanager/stdout", "/jobmanager/metrics", "/jobmanager/thread-dump",
             "/jobmanager/logs/nosuch.log", f"/taskmanagers/{tm}", f"/taskmanagers/{tm}/metrics",
             f"/taskmanagers/{tm}/logs", f"/taskmanagers/{tm}/log", f"/taskmanagers/{tm}/stdout",
             f"/taskmanagers/{tm}/logs/nosuch", f"/taskmanagers/{tm}/thread-dump"]
    j = f"/jobs/{job_id}"
    paths += [j] + [f"{j}/{p}" for p in (
        "status", "plan", "config", "resource-requirements", "exceptions", "accumulators", "metrics",
        "execution-result", "checkpoints", "checkpoints/config", f"checkpoints/details/{cid}",
        f"checkpoints/details/{cid}/subtasks/{job['vertices'][0]['id']}", "savepoints/nosuch",
        "jobmanager/config", "jobmanager/environment", "jobmanager/log-url",
        f"taskmanagers/{tm}/log-url", "rescaling")]
    for v in [vertex["id"] for vertex in job["vertices"]] + ["nosuch"]:
        vb = f"{j}/vertices/{v}"
        paths += [vb] + [f"{vb}/{p}" for p in (
            "subtasktimes", "taskmanagers", "watermarks", "backpressure", "accumulators", "metrics",
            "metrics?get=0.numRecordsIn", "subtasks/metrics", "subtasks/metrics?get=numRecordsIn",
            "subtasks/accumulators", "flamegraph", "subtasks/0", "subtasks/1", "subtasks/9",
            "subtasks/0/metrics", "subtasks/0/accumulators", "subtasks/0/attempts/0",
            "subtasks/0/attempts/0/accumulators", "subtasks/0/attempts/0/metrics",
            "subtasks/0/attempts/7")]
    return paths


def test_no_path_answers_a_server_error(session: sessioncluster.Session,
                                        any_job: tuple[str, str]) -> None:
    """Every path of the table, also under /v1: 200, or 404 with Flink's errors body."""
    for path in _every_path(session, any_job[1]):
        for prefix in ("", "/v1"):
            status, body, ctype = call(session, prefix + path)
            assert status in (200, 404), (path, status, body)
            if status == 404:
                assert ctype.startswith("application/json") and set(body) == {"errors"}, path
                assert body["errors"] and all(isinstance(e, str) for e in body["errors"]), path
