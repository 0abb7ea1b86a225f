"""The session's own REST paths for Flink SQL, which Flink's REST API has no resource for (so
their names cannot clash with one of Flink's):

- ``GET /jobs/:jid/sql-result?limit=N``: a streaming SELECT's newest changes (default 100, at
  most :data:`~..streamingsqljob.LATEST_CHANGES`), each with its RowKind, and the result's
  columns. It reads what the JobManager keeps for itself: the rows the client fetches stay
  where they are, and those it has fetched are shown too;
- ``GET /sql/tables``: the session's catalog (tables, views and temporary functions, each with
  its kind), as ``SHOW TABLES``, ``SHOW VIEWS`` and ``SHOW USER FUNCTIONS`` list it;
- ``GET /sql/gateway``: the SQL Gateway endpoint's open sessions and their operations (Flink's
  gateway API lists neither).
"""

from __future__ import annotations

import asyncio
import datetime
import decimal
from typing import Any

from ...common.types import Row
from ...spark.flinksql.executor import FlinkSqlPlanner
from ..streamingsqljob import LATEST_CHANGES, StreamingSqlJob
from .base import FlinkHandler

#: how many changes ``/jobs/:jid/sql-result`` answers when not told
DEFAULT_LIMIT = 100


def json_value(v: Any) -> Any:
    """A result value as JSON can carry it (Flink's SQL Gateway gives temporal and decimal
    values as text)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat(sep=" ") if isinstance(v, datetime.datetime) else v.isoformat()
    if isinstance(v, (decimal.Decimal, datetime.timedelta)):
        return str(v)
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, Row):  # a ROW: an object of its fields when they are named
        try:
            return json_value(v.as_dict())
        except TypeError:  # no names
            return [json_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): json_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_value(x) for x in v]
    return str(v)


def sql_result_body(job_id: str, status: str, columns: list[str], types: list[str],
                    changes: list[tuple[str, tuple[Any, ...]]], total: int) -> dict[str, Any]:
    """The body of ``/jobs/:jid/sql-result``: the changes oldest first, ``total`` the number of
    changes the query has made (more than the rows shown when older ones are not kept)."""
    return {
        "jid": job_id, "status": status,
        "columns": [{"name": n, "type": t} for n, t in zip(columns, types + [""] * len(columns))],
        "rows": [{"kind": kind, "fields": [json_value(v) for v in values]}
                 for kind, values in changes],
        "total": total,
    }


def catalog_listing(planner: FlinkSqlPlanner) -> list[dict[str, str]]:
    """The session catalog's objects, ``{"name", "kind"}`` (``TABLE``, ``VIEW`` or
    ``FUNCTION``, a temporary system function), by kind then name. Plans ``SHOW`` statements:
    call it in a worker thread."""
    def names(what: str) -> list[str]:
        outcome = planner.plan(f"SHOW {what}")
        return [str(row[0]) for row in outcome.rows]

    views = set(names("VIEWS"))
    tables = [n for n in names("TABLES") if n not in views]
    return ([{"name": n, "kind": "TABLE"} for n in sorted(tables)]
            + [{"name": n, "kind": "VIEW"} for n in sorted(views)]
            + [{"name": n, "kind": "FUNCTION"} for n in sorted(names("USER FUNCTIONS"))])


class SqlResultHandler(FlinkHandler):
    """``/jobs/:jid/sql-result``: a streaming SELECT's newest changes."""

    def get(self, job_id: str) -> None:
        job = self.job_or_404(job_id)
        if job is None:
            return
        text = self.get_query_argument("limit", str(DEFAULT_LIMIT))
        if not text.isdigit():
            self.fail(400, f"limit={text!r}: a number of rows is expected")
            return
        if not isinstance(job, StreamingSqlJob):
            self.fail(404, f"Job {job_id} is not a streaming SQL query: it has no SQL result "
                           "(a query's rows are kept only while its job is in the JobManager)")
            return
        try:
            columns, types, changes, total = job.latest_changes(min(int(text), LATEST_CHANGES))
        except LookupError as exc:  # an INSERT
            self.fail(404, str(exc))
            return
        self.reply(sql_result_body(job_id, job.status.value, columns, types, changes, total))


class SqlTablesHandler(FlinkHandler):
    """``/sql/tables``: the session's catalog."""

    async def get(self) -> None:
        planner = self.services.sql_planner()
        if planner is None:
            self.reply({"tables": []})  # no SparkSession yet: no catalog yet
            return
        listing = await asyncio.get_running_loop().run_in_executor(None, catalog_listing, planner)
        self.reply({"tables": listing})


class SqlGatewaySessionsHandler(FlinkHandler):
    """``/sql/gateway``: the SQL Gateway's sessions and their operations."""

    def get(self) -> None:
        gateway = self.services.sql_gateway
        self.reply({"sessions": gateway.listing() if gateway is not None else []})
