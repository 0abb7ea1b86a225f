"""The session's own REST paths for Flink SQL (``/jobs/:jid/sql-result``, ``/sql/tables``) on a
real tornado server with fake jobs and a fake planner: the bodies, 404 for an unknown job or one
that is no streaming SELECT, 400 for a bad limit. The real job and catalog behind them:
tests/integration/test_dashboard_sql.py."""

from __future__ import annotations

import datetime
import decimal
import json
from typing import Any

import tornado.testing

from sessioncluster.cluster.connection import rest_token
from sessioncluster.common.types import Row
from sessioncluster.graph.lifecycle import JobStatus
from sessioncluster.jobmanager.rest import RestServer, RestServices
from sessioncluster.jobmanager.rest.sql import catalog_listing, json_value, sql_result_body
from sessioncluster.spark.flinksql.outcome import StatementOutcome

KEY = "k" * 64
JOB = "b" * 32


def test_values_as_json_carries_them() -> None:
    assert json_value(datetime.datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02 03:04:05"
    assert json_value(datetime.date(2026, 1, 2)) == "2026-01-02"
    assert json_value(decimal.Decimal("1.50")) == "1.50"
    assert json_value({"a": [1, (2, None)]}) == {"a": [1, [2, None]]}
    assert json_value(b"\x01\xff") == "01ff"
    named = Row(1, [Row(2)])  # a streaming result's ROW values come as PyFlink's Rows
    named.set_field_names(["a", "b"])
    assert json_value(named) == {"a": 1, "b": [[2]]}


def test_the_sql_result_body() -> None:
    body = sql_result_body(JOB, "RUNNING", ["word", "cnt"], ["STRING", "BIGINT"],
                           [("+I", ("x", 1)), ("-U", ("x", 1)), ("+U", ("x", 2))], 7)
    assert body == {"jid": JOB, "status": "RUNNING",
                    "columns": [{"name": "word", "type": "STRING"},
                                {"name": "cnt", "type": "BIGINT"}],
                    "rows": [{"kind": "+I", "fields": ["x", 1]}, {"kind": "-U", "fields": ["x", 1]},
                             {"kind": "+U", "fields": ["x", 2]}],
                    "total": 7}


class FakePlanner:
    """Answers SHOW as the session's planner does: SHOW TABLES lists views too."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    def plan(self, text: str) -> StatementOutcome:
        self.shown.append(text)
        rows = {"SHOW TABLES": ["words", "counts", "recent"], "SHOW VIEWS": ["recent"],
                "SHOW USER FUNCTIONS": ["plus_one"]}[text]
        return StatementOutcome("SUCCESS_WITH_CONTENT", ["name"], ["STRING"], [(r,) for r in rows])


def test_the_catalog_listing_has_each_objects_kind() -> None:
    assert catalog_listing(FakePlanner()) == [  # type: ignore[arg-type]
        {"name": "counts", "kind": "TABLE"}, {"name": "words", "kind": "TABLE"},
        {"name": "recent", "kind": "VIEW"}, {"name": "plus_one", "kind": "FUNCTION"}]


class NotSqlJob:
    status = JobStatus.RUNNING


class SqlRestTest(tornado.testing.AsyncHTTPTestCase):
    def get_app(self) -> Any:
        self.planner: FakePlanner | None = None
        services = RestServices("unit", lambda job_id: NotSqlJob() if job_id == JOB else None,
                                lambda: [], lambda: [], sql_planner=lambda: self.planner)
        return RestServer(services, KEY).app

    def call(self, path: str) -> tuple[int, Any]:
        resp = self.fetch(path, headers={"Authorization": f"Bearer {rest_token(KEY)}"},
                          raise_error=False)
        return resp.code, json.loads(resp.body)

    def test_sql_result_of_an_unknown_job_or_one_that_is_no_query(self) -> None:
        code, body = self.call(f"/jobs/{'0' * 32}/sql-result")
        assert code == 404 and body == {"errors": [f"Job {'0' * 32} not found"]}
        code, body = self.call(f"/jobs/{JOB}/sql-result")
        assert code == 404 and "is not a streaming SQL query" in body["errors"][0]
        code, body = self.call(f"/v1/jobs/{JOB}/sql-result?limit=ten")
        assert code == 400 and "limit='ten'" in body["errors"][0]

    def test_the_tables_before_and_after_the_catalog_is_made(self) -> None:
        assert self.call("/sql/tables") == (200, {"tables": []})
        self.planner = FakePlanner()
        code, body = self.call("/sql/tables")
        assert code == 200 and [t["kind"] for t in body["tables"]] == ["TABLE", "TABLE", "VIEW",
                                                                        "FUNCTION"]
        assert self.call("/sql/tables/x")[0] == 404
