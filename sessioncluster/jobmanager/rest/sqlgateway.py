"""Flink's SQL Gateway REST API (``rest_v1_sql_gateway.yml``, ``rest_v2_sql_gateway.yml``) on
the session's REST server, behind its token: ``/sessions``, ``/sessions/:h/statements``, an
operation's ``status``, ``cancel``, ``close`` and ``result/:token``, ``/info`` and
``/api_versions``. Each path is served under ``/v1`` and ``/v2`` (v2 adds ``rowFormat``,
``configure-session`` and ``complete-statement``) and without a prefix (v2, Flink's default).
"""

from __future__ import annotations

import json
from typing import Any

from ..sqlgateway import GatewayError, ResultType, RowFormat, SqlGatewayService
from ..sqlgateway.serde import result_info
from .base import FlinkHandler, RestServices
from .clusterhandlers import FLINK_VERSION

VERSIONS = ("V1", "V2")
#: the version of a path without a version prefix
DEFAULT_VERSION = "V2"

_SESSION = r"/sessions/(?P<session>[^/]+)"
_OPERATION = _SESSION + r"/operations/(?P<operation>[^/]+)"


class GatewayHandler(FlinkHandler):
    """A SQL Gateway request: its API version, its JSON body; a GatewayError it raises is
    answered with its status and Flink's errors body."""

    version: str

    def initialize(self, services: RestServices, token: str,
                   version: str = DEFAULT_VERSION) -> None:
        super().initialize(services, token)
        self.version = version

    @property
    def gateway(self) -> SqlGatewayService:
        gateway = self.services.sql_gateway
        if gateway is None:
            raise GatewayError("this JobManager has no SQL Gateway", 404)
        return gateway

    def body(self) -> dict[str, Any]:
        try:
            data = json.loads(self.request.body or b"{}")
        except ValueError as exc:
            raise GatewayError(f"the request body is not JSON: {exc}", 400) from exc
        if not isinstance(data, dict):
            raise GatewayError("the request body must be a JSON object", 400)
        return data

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """A GatewayError raised by a handler: its status and Flink's errors body."""
        exc = kwargs.get("exc_info", (None, None))[1]
        if isinstance(exc, GatewayError):
            self.fail(exc.status, *exc.errors)
            return
        super().write_error(status_code, **kwargs)

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if not isinstance(value, GatewayError):  # a client's bad request is answered, not logged
            super().log_exception(typ, value, tb)


class ApiVersionsHandler(GatewayHandler):
    def get(self) -> None:
        self.reply({"versions": list(VERSIONS)})


class InfoHandler(GatewayHandler):
    def get(self) -> None:
        self.reply({"productName": "Apache Flink", "version": FLINK_VERSION})


class SessionsHandler(GatewayHandler):
    """``POST /sessions``: open a session."""

    def post(self) -> None:
        data = self.body()
        handle = self.gateway.open_session(data.get("sessionName"), data.get("properties"))
        self.reply({"sessionHandle": handle})


class SessionHandler(GatewayHandler):
    """``GET /sessions/:h``: its configuration; ``DELETE``: close it."""

    def get(self, session: str) -> None:
        self.reply({"properties": self.gateway.configuration(session)})

    def delete(self, session: str) -> None:
        self.gateway.close_session(session)
        self.reply({"status": "CLOSED"})


class HeartbeatHandler(GatewayHandler):
    def post(self, session: str) -> None:
        self.gateway.session(session)
        self.reply({})


class ConfigureSessionHandler(GatewayHandler):
    """``POST /sessions/:h/configure-session`` (v2): run a DDL, USE or SET statement."""

    async def post(self, session: str) -> None:
        data = self.body()
        await self.gateway.configure(session, data.get("statement"), data.get("executionTimeout"))
        self.reply({})


class CompleteStatementHandler(GatewayHandler):
    """``/sessions/:h/complete-statement`` (v2; Flink's is a GET with a body, POST is taken
    too)."""

    async def get(self, session: str) -> None:
        data = self.body()
        candidates = await self.gateway.complete(session, data.get("statement"),
                                                 data.get("position"))
        self.reply({"candidates": candidates})

    post = get


class StatementsHandler(GatewayHandler):
    """``POST /sessions/:h/statements``: start a statement; its operation's handle."""

    def post(self, session: str) -> None:
        data = self.body()
        op = self.gateway.execute(session, data.get("statement"), data.get("executionConfig"),
                                  data.get("executionTimeout"))
        self.reply({"operationHandle": op.handle})


class OperationStatusHandler(GatewayHandler):
    def get(self, session: str, operation: str) -> None:
        self.reply({"status": self.gateway.operation(session, operation).status.value})


class OperationCancelHandler(GatewayHandler):
    def post(self, session: str, operation: str) -> None:
        op = self.gateway.operation(session, operation)
        op.cancel()
        self.reply({"status": op.status.value})


class OperationCloseHandler(GatewayHandler):
    def delete(self, session: str, operation: str) -> None:
        self.reply({"status": self.gateway.close_operation(session, operation).status.value})


class FetchResultsHandler(GatewayHandler):
    """``GET /sessions/:h/operations/:o/result/:token[?rowFormat=JSON|PLAIN_TEXT]``."""

    async def get(self, session: str, operation: str, token: str) -> None:
        row_format = self._row_format()
        if not token.isdigit():
            raise GatewayError(f"token {token!r}: a number is expected", 400)
        op = self.gateway.operation(session, operation)
        batch = await op.fetch(int(token))
        body: dict[str, Any] = {"resultType": batch.result_type.value}
        if batch.result_type is not ResultType.NOT_READY and op.fetcher is not None:
            schema = op.fetcher.schema
            payload = batch.result_type is ResultType.PAYLOAD  # Flink's EOS tells nothing more
            body["isQueryResult"] = schema.is_query and payload
            if schema.job_id and payload:
                body["jobID"] = schema.job_id
            body["resultKind"] = schema.result_kind if payload else None
            body["results"] = result_info(schema.names, schema.types, batch.rows, row_format)
        if batch.next_token is not None:
            body["nextResultUri"] = self._uri(session, operation, batch.next_token, row_format)
        self.reply(body)

    def _row_format(self) -> RowFormat:
        text = self.get_query_argument("rowFormat", None)
        if text is None:
            if self.version == "V1":
                return RowFormat.JSON
            raise GatewayError("the query parameter rowFormat (JSON or PLAIN_TEXT) is "
                               "required", 400)
        try:
            return RowFormat(text.upper())
        except ValueError:
            raise GatewayError(f"rowFormat={text!r}: JSON or PLAIN_TEXT", 400) from None

    def _uri(self, session: str, operation: str, token: int, row_format: RowFormat) -> str:
        path = f"/{self.version.lower()}/sessions/{session}/operations/{operation}/result/{token}"
        return path if self.version == "V1" else f"{path}?rowFormat={row_format.value}"


def _table() -> list[tuple[str, type, set[str]]]:
    """(path, handler, the versions that have it)."""
    both = set(VERSIONS)
    return [
        (r"/api_versions", ApiVersionsHandler, both),
        (r"/info", InfoHandler, both),
        (r"/sessions", SessionsHandler, both),
        (_SESSION, SessionHandler, both),
        (_SESSION + r"/heartbeat", HeartbeatHandler, both),
        (_SESSION + r"/configure-session", ConfigureSessionHandler, {"V2"}),
        (_SESSION + r"/complete-statement", CompleteStatementHandler, {"V2"}),
        (_SESSION + r"/statements/?", StatementsHandler, both),
        (_OPERATION + r"/status", OperationStatusHandler, both),
        (_OPERATION + r"/cancel", OperationCancelHandler, both),
        (_OPERATION + r"/close", OperationCloseHandler, both),
        (_OPERATION + r"/result/(?P<token>[^/]+)", FetchResultsHandler, both),
    ]


def gateway_routes(args: dict[str, Any]) -> list[tuple[str, type, dict[str, Any]]]:
    """The SQL Gateway's paths under each version's prefix, and without one (v2)."""
    out: list[tuple[str, type, dict[str, Any]]] = []
    for path, handler, versions in _table():
        for version in sorted(versions):
            out.append((f"/{version.lower()}{path}", handler, dict(args, version=version)))
        if DEFAULT_VERSION in versions:
            out.append((path, handler, dict(args, version=DEFAULT_VERSION)))
    return out
