"""Flink's SQL Gateway REST API on the shared session, as an HTTP client of Flink's gateway uses
it (``rest_v2_sql_gateway.yml``): open a session, execute statements, fetch their results by
token, in BATCH and in STREAMING (a changelog over files dropped into a monitored directory),
compared with plain Python."""

from __future__ import annotations

import collections
import io
import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

import sessioncluster
from sessioncluster import cli
from sessioncluster.client.restclient import RestClient
from sessioncluster.client.sqlclient import SqlClient, SqlGatewayClient
from sessioncluster.graph.lifecycle import JobStatus

pytestmark = pytest.mark.integration

WORDS = ["flink", "spark", "flink", "jupyter", "flink", "spark"]


class Gateway:
    """A plain HTTP client of the SQL Gateway endpoint, as the SQL Client's gateway mode."""

    def __init__(self, session: sessioncluster.Session) -> None:
        self.base, self.token = session.rest_url, session.rest_token

    def call(self, path: str, method: str = "GET", body: Any = None,
             token: str | None = "session") -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if token is not None:
            req.add_header("Authorization",
                           f"Bearer {self.token if token == 'session' else token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"null")

    def ok(self, path: str, method: str = "GET", body: Any = None) -> Any:
        status, data = self.call(path, method, body)
        assert status == 200, (path, status, data)
        return data

    def open(self, **properties: str) -> str:
        return self.ok("/v2/sessions", "POST", {"properties": properties})["sessionHandle"]

    def submit(self, handle: str, statement: str, **config: str) -> str:
        body: dict[str, Any] = {"statement": statement}
        if config:
            body["executionConfig"] = config
        return self.ok(f"/v2/sessions/{handle}/statements", "POST", body)["operationHandle"]

    def first_result(self, handle: str, op: str, row_format: str = "JSON") -> dict[str, Any]:
        """Token 0's answer once the operation has its result (NOT_READY until then)."""
        path = f"/v2/sessions/{handle}/operations/{op}/result/0?rowFormat={row_format}"
        deadline = time.monotonic() + 120
        while True:
            body = self.ok(path)
            if body["resultType"] != "NOT_READY":
                return body
            assert body["nextResultUri"] == path  # the same token again
            assert time.monotonic() < deadline, "the statement's result never came"
            time.sleep(0.1)

    def rows(self, handle: str, statement: str, row_format: str = "JSON",
             **config: str) -> tuple[dict[str, Any], list[tuple[str, list[Any]]]]:
        """Every row of a statement whose result ends, following ``nextResultUri``."""
        op = self.submit(handle, statement, **config)
        body = self.first_result(handle, op, row_format)
        head, rows = body, []
        while True:
            rows += [(d["kind"], d["fields"]) for d in body.get("results", {}).get("data", [])]
            if "nextResultUri" not in body:
                assert body["resultType"] == "EOS"
                return head, rows
            body = self.ok(body["nextResultUri"])


@pytest.fixture
def gateway(session: sessioncluster.Session) -> Gateway:
    return Gateway(session)


@pytest.fixture
def handle(gateway: Gateway) -> Iterator[str]:
    h = gateway.open(**{"execution.runtime-mode": "batch"})
    yield h
    gateway.call(f"/v2/sessions/{h}", "DELETE")


@pytest.fixture
def words_table(gateway: Gateway, handle: str, tmp_path: Path,
                drop_new_tables: None) -> str:
    (tmp_path / "words.csv").write_text("".join(f"{w},{i}\n" for i, w in enumerate(WORDS)))
    gateway.rows(handle, f"CREATE TABLE gw_words (word STRING, pos INT) WITH ('connector' = "
                         f"'filesystem', 'path' = '{tmp_path / 'words.csv'}', 'format' = 'csv')")
    return "gw_words"


def fold(changes: list[tuple[str, list[Any]]]) -> dict[Any, Any]:
    """A changelog of (key, value) rows applied to a table."""
    table: dict[Any, Any] = {}
    for kind, (key, value) in changes:
        if kind in ("INSERT", "UPDATE_AFTER"):
            table[key] = value
        else:
            assert table.pop(key) == value, (kind, key, value)
    return table


def test_versions_info_and_a_session_s_properties(gateway: Gateway) -> None:
    assert gateway.ok("/v1/api_versions") == {"versions": ["V1", "V2"]}
    assert gateway.ok("/v2/info")["productName"] == "Apache Flink"
    h = gateway.open(**{"execution.runtime-mode": "batch", "pipeline.name": "mine"})
    props = gateway.ok(f"/v1/sessions/{h}")["properties"]
    assert props["execution.runtime-mode"] == "batch" and props["pipeline.name"] == "mine"
    assert gateway.ok(f"/v2/sessions/{h}/heartbeat", "POST") == {}
    assert gateway.ok(f"/v2/sessions/{h}", "DELETE") == {"status": "CLOSED"}
    status, body = gateway.call(f"/v2/sessions/{h}")
    assert status == 404 and body["errors"] == [f"Session '{h}' does not exist."]


def test_the_endpoint_is_behind_the_session_s_token(gateway: Gateway) -> None:
    assert gateway.call("/v2/sessions", "POST", {}, token=None)[0] == 401
    assert gateway.call("/v1/info", token="not-the-token")[0] == 401


def test_a_batch_aggregation_with_its_columns_types_and_tokens(gateway: Gateway, handle: str,
                                                                 words_table: str) -> None:
    op = gateway.submit(handle, f"SELECT word, COUNT(*) AS n FROM {words_table} GROUP BY word")
    first = gateway.first_result(handle, op)
    assert first["resultType"] == "PAYLOAD" and first["isQueryResult"] is True
    assert first["resultKind"] == "SUCCESS_WITH_CONTENT" and len(first["jobID"]) == 32
    assert first["results"]["columns"] == [
        {"name": "word", "logicalType": {"type": "VARCHAR", "nullable": True,
                                         "length": 2147483647}, "comment": None},
        {"name": "n", "logicalType": {"type": "BIGINT", "nullable": False}, "comment": None}]
    assert first["results"]["rowFormat"] == "JSON"
    data = first["results"]["data"]
    assert {d["kind"] for d in data} == {"INSERT"}
    assert {w: n for w, n in (d["fields"] for d in data)} == collections.Counter(WORDS)
    base = f"/v2/sessions/{handle}/operations/{op}/result"
    assert first["nextResultUri"] == f"{base}/1?rowFormat=JSON"
    # the last token again gives the same rows (a lost answer is asked for again)
    assert gateway.ok(f"{base}/0?rowFormat=JSON")["results"]["data"] == data
    status, body = gateway.call(f"{base}/5?rowFormat=JSON")
    assert status == 400 and body["errors"] == ["Expecting token to be 1 or 0, but found 5."]
    end = gateway.ok(f"{base}/1?rowFormat=JSON")  # as Flink's EOS: no job, no kind, no rows
    assert end == {"resultType": "EOS", "isQueryResult": False, "resultKind": None,
                   "results": {"columns": first["results"]["columns"], "rowFormat": "JSON",
                               "data": []}}
    assert gateway.ok(f"/v2/sessions/{handle}/operations/{op}/status") == {"status": "FINISHED"}
    assert gateway.ok(f"/v2/sessions/{handle}/operations/{op}/close", "DELETE") == {
        "status": "CLOSED"}


def test_json_and_plain_text_values(gateway: Gateway, handle: str) -> None:
    statement = ("SELECT CAST('2024-02-29 08:30:00.125' AS TIMESTAMP(3)) AS ts, "
                 "DATE '2024-02-29' AS d, CAST(12.50 AS DECIMAL(6, 2)) AS m, TRUE AS b, "
                 "CAST(NULL AS STRING) AS s, ARRAY[1, 2] AS a, ROW(1, 'x') AS r")
    head, rows = gateway.rows(handle, statement)
    assert [c["logicalType"]["type"] for c in head["results"]["columns"]] == [
        "TIMESTAMP_WITHOUT_TIME_ZONE", "DATE", "DECIMAL", "BOOLEAN", "VARCHAR", "ARRAY", "ROW"]
    fields = rows[0][1]
    assert fields[:6] == ["2024-02-29T08:30:00.125", "2024-02-29", 12.5, True, None, [1, 2]]
    assert list(fields[6].values()) == [1, "x"]
    _, text = gateway.rows(handle, statement, "PLAIN_TEXT")
    assert text[0][1][:5] == ["2024-02-29 08:30:00.125", "2024-02-29", "12.50", "TRUE", None]


def test_ddl_show_and_an_insert_s_job_id(gateway: Gateway, handle: str, words_table: str,
                                         tmp_path: Path, session: sessioncluster.Session) -> None:
    out = tmp_path / "out"
    head, rows = gateway.rows(handle, f"CREATE TABLE gw_counts (word STRING, n BIGINT) WITH ("
                                      f"'connector' = 'filesystem', 'path' = '{out}', "
                                      "'format' = 'csv')")
    assert head["resultKind"] == "SUCCESS" and rows == [("INSERT", ["OK"])]
    assert head["isQueryResult"] is False and "jobID" not in head
    _, shown = gateway.rows(handle, "SHOW TABLES")
    assert {"gw_words", "gw_counts"} <= {fields[0] for _, fields in shown}
    head, rows = gateway.rows(handle, f"INSERT INTO gw_counts SELECT word, COUNT(*) FROM "
                                      f"{words_table} GROUP BY word")
    job_id = head["jobID"]
    assert head["isQueryResult"] is False and rows == [("INSERT", [job_id])]
    assert head["results"]["columns"][0]["name"] == "job id"
    assert session.job(job_id).wait(120).status is JobStatus.FINISHED
    written = [line.split(",") for f in sorted(out.rglob("*")) if f.is_file()
               and not f.name.startswith(".") for line in f.read_text().splitlines()]
    assert {w: int(n) for w, n in written} == collections.Counter(WORDS)


def test_bad_sql_is_the_operation_s_error_and_the_session_goes_on(gateway: Gateway,
                                                                  handle: str) -> None:
    op = gateway.submit(handle, "SELEC 1")
    path = f"/v2/sessions/{handle}/operations/{op}/result/0?rowFormat=JSON"
    deadline = time.monotonic() + 60
    while gateway.ok(f"/v2/sessions/{handle}/operations/{op}/status")["status"] != "ERROR":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    status, body = gateway.call(path)
    assert status == 500 and body["errors"][0] == f"Failed to execute the operation {op}."
    assert body["errors"][1].startswith("SQL parse failed.")
    status, body = gateway.call(f"/v2/sessions/{handle}/operations/{op}/result/0")
    assert status == 400 and "rowFormat" in body["errors"][0]  # v2 asks for it
    assert gateway.call(f"/v2/sessions/{handle}/operations/nope/status")[0] == 404
    assert gateway.call(f"/v2/sessions/{handle}/statements", "POST", {"statement": ""})[0] == 400
    op = gateway.submit(handle, "SELECT 1; SELECT 2")
    status, body = gateway.call(f"/v2/sessions/{handle}/operations/{op}/result/0?rowFormat=JSON")
    assert status == 500 and "one statement per request; this text has 2" in body["errors"][1]
    assert gateway.rows(handle, "SELECT 41 + 1")[1] == [("INSERT", [42])]


def test_set_and_reset_are_the_gateway_session_s_own(gateway: Gateway, handle: str) -> None:
    other = gateway.open()
    try:
        assert gateway.ok(f"/v2/sessions/{handle}/configure-session", "POST",
                          {"statement": "SET 'pipeline.name' = 'gw-job'"}) == {}
        _, listed = gateway.rows(handle, "SET")
        assert ("INSERT", ["pipeline.name", "gw-job"]) in listed
        assert "pipeline.name" not in gateway.ok(f"/v2/sessions/{other}")["properties"]
        gateway.rows(handle, "RESET 'pipeline.name'")
        assert "pipeline.name" not in gateway.ok(f"/v2/sessions/{handle}")["properties"]
        status, body = gateway.call(f"/v2/sessions/{handle}/configure-session", "POST",
                                    {"statement": "SELECT 1"})
        assert status == 400 and "not a query" in body["errors"][0]
    finally:
        gateway.call(f"/v2/sessions/{other}", "DELETE")


def test_completion_offers_keywords_and_the_catalog_s_tables(gateway: Gateway, handle: str,
                                                              words_table: str) -> None:
    body = gateway.ok(f"/v2/sessions/{handle}/complete-statement", "POST",
                      {"statement": "SELECT * FROM gw_w", "position": 18})
    assert body == {"candidates": ["gw_words"]}
    assert "SELECT" in gateway.ok(f"/v2/sessions/{handle}/complete-statement", "POST",
                                  {"statement": "SEL", "position": 3})["candidates"]


def test_a_streaming_changelog_over_a_monitored_directory(gateway: Gateway, tmp_path: Path,
                                                          session: sessioncluster.Session,
                                                          drop_new_tables: None) -> None:
    """A STREAMING group aggregate fetched as Flink's gateway gives it: +I, then -U/+U per
    update, as files arrive (one micro-batch each); closing the operation cancels the job."""
    source = tmp_path / "live"
    source.mkdir()
    h = gateway.open()  # Flink's default runtime mode: STREAMING
    try:
        gateway.rows(h, f"CREATE TABLE gw_live (word STRING) WITH ('connector' = 'filesystem', "
                        f"'path' = '{source}', 'format' = 'csv', "
                        "'source.monitor-interval' = '1s')")
        op = gateway.submit(h, "SELECT word, COUNT(*) AS n FROM gw_live GROUP BY word")
        body = gateway.first_result(h, op)
        job_id = body["jobID"]
        assert body["isQueryResult"] is True
        assert session.job(job_id).get_job_status() is JobStatus.RUNNING
        changes: list[tuple[str, list[Any]]] = []
        changes += [(d["kind"], d["fields"]) for d in body["results"]["data"]]
        counts: collections.Counter[str] = collections.Counter()
        for k, words in enumerate([["x", "y", "x"], ["x"], ["z", "y", "x"]]):
            tmp = source / f".f{k}.csv"
            tmp.write_text("".join(f"{w}\n" for w in words))
            tmp.rename(source / f"f{k}.csv")
            counts.update(words)
            deadline = time.monotonic() + 120
            while fold(changes) != dict(counts):
                assert time.monotonic() < deadline, (changes, counts)
                body = gateway.ok(body["nextResultUri"])
                assert body["resultType"] == "PAYLOAD"  # a running query: never EOS
                changes += [(d["kind"], d["fields"]) for d in body["results"]["data"]]
        assert {kind for kind, _ in changes} == {"INSERT", "UPDATE_BEFORE", "UPDATE_AFTER"}
        assert changes[:2] == [("INSERT", ["x", 2]), ("INSERT", ["y", 1])] or \
            changes[:2] == [("INSERT", ["y", 1]), ("INSERT", ["x", 2])]
        assert gateway.ok(f"/v2/sessions/{h}/operations/{op}/close", "DELETE") == {
            "status": "CLOSED"}
        assert session.job(job_id).wait(60).status is JobStatus.CANCELED
    finally:
        gateway.call(f"/v2/sessions/{h}", "DELETE")


# -- the SQL Client (sessioncluster sql-client), on the gateway ---------------------------------
def test_the_sql_client_runs_a_script_as_flink_s_client(session: sessioncluster.Session,
                                                        tmp_path: Path, drop_new_tables: None,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    """``sessioncluster sql-client NAME -f script.sql``: each statement echoed at the prompt,
    answered as Flink's SQL Client answers it (tableau mode); the first failure ends the
    script with status 1."""
    (tmp_path / "words.csv").write_text("".join(f"{w},{i}\n" for i, w in enumerate(WORDS)))
    script = tmp_path / "script.sql"
    script.write_text(f"""SET 'execution.runtime-mode' = 'batch';
CREATE TABLE cli_words (word STRING, pos INT) WITH ('connector' = 'filesystem',
  'path' = '{tmp_path / "words.csv"}', 'format' = 'csv');
SELECT word, COUNT(*) AS n FROM cli_words WHERE word <> 'jupyter' GROUP BY word ORDER BY word;
SET 'execution.runtime-mode' = 'streaming';
SELECT word, COUNT(*) AS n FROM cli_words WHERE pos < 3 GROUP BY word;
CREATE TABLE cli_sink (word STRING, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO cli_sink SELECT word, COUNT(*) FROM cli_words GROUP BY word;
SELEC 1;
SELECT 'never run';
""")
    assert cli.main(["sql-client", session.info.name, "-f", str(script)]) == 1
    out = capsys.readouterr().out
    blocks = out.split("Flink SQL> ")[1:]
    assert len(blocks) == 8  # the statement after the failure is not run
    assert blocks[0] == ("SET 'execution.runtime-mode' = 'batch';\n"
                         "[INFO] Execute statement succeeded.\n\n")
    assert blocks[2].split(";\n", 1)[1] == (  # widths from the data, as Flink's batch tableau
        "+-------+---+\n"
        "|  word | n |\n"
        "+-------+---+\n"
        "| flink | 3 |\n"
        "| spark | 2 |\n"
        "+-------+---+\n"
        "2 rows in set\n\n")
    # STREAMING: the changes with their op (widths from the types), each key's in order
    lines = blocks[4].split(";\n", 1)[1].splitlines()
    border = "+----+--------------------------------+----------------------+"
    assert lines[:3] == [border, "| op |                           word |                    n |",
                         border]
    assert lines[-3:] == [border, "Received a total of 4 rows", ""]
    changes = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[3:-3]]
    assert [c for c in changes if c[1] == "flink"] == [
        ["+I", "flink", "1"], ["-U", "flink", "1"], ["+U", "flink", "2"]]
    assert [c for c in changes if c[1] == "spark"] == [["+I", "spark", "1"]]
    job_line = blocks[6].splitlines()[3]
    assert blocks[6].splitlines()[1:3] == [
        "[INFO] Submitting SQL update statement to the cluster...",
        "[INFO] SQL update statement has been successfully submitted to the cluster:"]
    assert session.job(job_line.removeprefix("Job ID: ")).wait(120).status is JobStatus.FINISHED
    assert blocks[7].startswith("SELEC 1;\n[ERROR] Could not execute SQL statement. Reason:\n"
                                "SQL parse failed.")


def test_the_sql_client_reads_statements_typed_at_its_prompt(session: sessioncluster.Session
                                                             ) -> None:
    """Statements over several lines, two on one line, HELP and QUIT, from a (non-terminal)
    input; the session stays usable after an error."""
    out = io.StringIO()
    client = SqlGatewayClient(RestClient.of(session), {"execution.runtime-mode": "batch"})
    try:
        SqlClient(client, out).interactive(io.StringIO(
            "SELECT 1 + 1\n  AS two;  SELECT * FROM no_such_table;\nHELP;\n"
            "SELECT CAST(NULL AS STRING) AS s;\nQUIT;\nSELECT 'after quit';\n"))
    finally:
        client.close()
    text = out.getvalue()
    assert "| two |\n+-----+\n|   2 |\n" in text
    assert "[ERROR] Could not execute SQL statement. Reason:\n" in text and "no_such_table" in text
    assert "QUIT;      Quits the SQL CLI client" in text
    assert "|      s |\n+--------+\n| <NULL> |\n" in text
    assert "after quit" not in text


def test_the_sql_client_opens_a_lost_session_again(session: sessioncluster.Session) -> None:
    """A gateway session the endpoint no longer has (closed idle, or a new leader) is opened
    again with the properties it had, its SETs too, and the statement runs in it."""
    client = SqlGatewayClient(RestClient.of(session), {"execution.runtime-mode": "batch"},
                              reconnect=lambda: RestClient.of(session))
    out = io.StringIO()
    cli_client = SqlClient(client, out)
    try:
        assert cli_client.run_statement("SET 'table.display.max-column-width' = '12'")
        first = client.handle
        client.rest.request("DELETE", f"/v2/sessions/{first}")  # the endpoint forgets it
        assert cli_client.run_statement("SELECT 'a fairly long text value' AS t")
        assert client.handle != first
        assert client.configuration()["table.display.max-column-width"] == "12"
        assert "| a fairly ... |" in out.getvalue()  # the width kept: the SET was not lost
    finally:
        client.close()


def test_a_statement_past_its_execution_timeout_is_stopped(gateway: Gateway, handle: str,
                                                           session: sessioncluster.Session,
                                                           drop_new_tables: None) -> None:
    """``executionTimeout``: the operation is TIMEOUT, its fetch says why, and its job is
    cancelled (Flink's ``OperationStatus.TIMEOUT``)."""
    gateway.rows(handle, "CREATE TABLE gw_many (n BIGINT) WITH ('connector' = 'datagen', "
                         "'number-of-rows' = '200000000')")
    op = gateway.ok(f"/v2/sessions/{handle}/statements", "POST",
                    {"statement": "SELECT COUNT(DISTINCT n) FROM gw_many",
                     "executionTimeout": 3000})["operationHandle"]
    deadline = time.monotonic() + 60
    while gateway.ok(f"/v2/sessions/{handle}/operations/{op}/status")["status"] != "TIMEOUT":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    status, body = gateway.call(f"/v2/sessions/{handle}/operations/{op}/result/0?rowFormat=JSON")
    assert status == 400 and "TIMEOUT" in body["errors"][0]
    assert body["errors"][1] == "the statement did not end within 3 s"
    listed = {o["operationHandle"]: o for s in gateway.ok("/sql/gateway")["sessions"]
              for o in s["operations"]}
    job_id = listed[op]["jobID"]
    assert job_id is not None and session.job(job_id).wait(60).status is JobStatus.CANCELED


def test_with_dml_sync_an_insert_answers_once_its_job_ended(gateway: Gateway, handle: str,
                                                            words_table: str, tmp_path: Path,
                                                            session: sessioncluster.Session
                                                            ) -> None:
    """``SET 'table.dml-sync' = 'true'``: the INSERT's operation ends with its job (Flink's
    option), and the SQL client says so as Flink's does."""
    gateway.rows(handle, f"CREATE TABLE gw_synced (word STRING, n BIGINT) WITH ("
                         f"'connector' = 'filesystem', 'path' = '{tmp_path / 'synced'}', "
                         "'format' = 'csv')")
    gateway.rows(handle, "SET 'table.dml-sync' = 'true'")
    head, rows = gateway.rows(handle, f"INSERT INTO gw_synced SELECT word, COUNT(*) FROM "
                                      f"{words_table} GROUP BY word")
    assert rows == [("INSERT", [head["jobID"]])]
    assert session.job(head["jobID"]).get_job_status() is JobStatus.FINISHED
    out = io.StringIO()
    client = SqlGatewayClient(RestClient.of(session), {"execution.runtime-mode": "batch",
                                                       "table.dml-sync": "true"})
    try:
        assert SqlClient(client, out).run_statement(
            f"INSERT INTO gw_synced SELECT word, 1 FROM {words_table}")
    finally:
        client.close()
    assert out.getvalue() == "[INFO] Complete execution of the SQL update statement.\n\n"
