"""Flink's REST API on the shared session, field by field against Flink's documented shapes
(``rest_v1_dispatcher.yml``), through plain HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

import sessioncluster
from sessioncluster import IntCounter, MapFunction, cli
from sessioncluster.client.restclient import RestClient, RestError

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
