"""The SQL Gateway's sessions (Flink's ``SqlGatewayService`` and ``SessionManager``): each
has its own properties and operations, and is closed after it has been idle for
``sql-gateway.session.idle-timeout`` (10 minutes, Flink's default). A session's statements
run against the session cluster's Flink SQL catalog: its tables are those of the notebooks
and scripts of the same session cluster."""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from .operation import (
    GatewayServices,
    Operation,
    session_configuration,
)
from .results import GatewayError

log = logging.getLogger("sessioncluster.sqlgateway")

#: Flink's default of ``sql-gateway.session.idle-timeout``
IDLE_TIMEOUT_SECONDS = 600.0
#: how often idle sessions are looked for (Flink's ``sql-gateway.session.check-interval``)
CHECK_INTERVAL_SECONDS = 60.0
#: the words a completion offers besides the catalog's names
KEYWORDS = sorted({
    "ALTER", "AND", "AS", "ASC", "BETWEEN", "BY", "CASE", "CAST", "CREATE", "CROSS",
    "CUMULATE", "CURRENT_WATERMARK", "DATABASE", "DELETE", "DESC", "DESCRIBE", "DESCRIPTOR",
    "DISTINCT", "DROP", "ELSE", "END", "EXECUTE", "EXPLAIN", "FALSE", "FETCH", "FROM",
    "FULL", "FUNCTION", "FUNCTIONS", "GROUP", "HAVING", "HOP", "IF", "IN", "INNER", "INSERT",
    "INTERVAL", "INTO", "IS", "JOBS", "JOIN", "LANGUAGE", "LEFT", "LIKE", "LIMIT", "MATCH_RECOGNIZE",
    "NOT", "NULL", "ON", "OR", "ORDER", "OUTER", "OVER", "OVERWRITE", "PARTITION", "PRIMARY",
    "PROCTIME", "RESET", "RIGHT", "ROW_NUMBER", "SELECT", "SESSION", "SET", "SHOW", "STATEMENT",
    "STOP", "TABLE", "TABLES", "TEMPORARY", "THEN", "TRUE", "TUMBLE", "UNION", "USE", "VALUES",
    "VIEW", "VIEWS", "WATERMARK", "WHEN", "WHERE", "WINDOW", "WITH"})
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(slots=True)
class GatewaySession:
    """One client's session: its properties (``execution.runtime-mode``...) and operations."""

    handle: str
    name: str
    properties: dict[str, str]
    operations: dict[str, Operation] = field(default_factory=dict)
    last_access: float = field(default_factory=time.monotonic)
    #: when it was opened (epoch ms)
    opened_ms: int = field(default_factory=lambda: int(time.time() * 1000))


class SqlGatewayService:
    """Sessions and their operations, on the JobManager's loop."""

    def __init__(self, services: GatewayServices,
                 catalog_names: Callable[[], list[str]] | None = None,
                 idle_timeout_s: float = IDLE_TIMEOUT_SECONDS) -> None:
        self.services = services
        #: the catalog's table, view and function names (for completion; run in a thread)
        self.catalog_names = catalog_names
        self.idle_timeout_s = idle_timeout_s
        self.sessions: dict[str, GatewaySession] = {}
        self._expiry: asyncio.Task[None] | None = None

    # -- sessions ---------------------------------------------------------------------------
    def open_session(self, name: str | None, properties: dict[str, Any] | None) -> str:
        """A new session's handle (Flink's ``openSession``)."""
        props = properties or {}
        if not isinstance(props, dict):
            raise GatewayError("'properties' must be an object of strings", 400)
        handle = str(uuid.uuid4())
        self.sessions[handle] = GatewaySession(handle, name or handle,
                                               {str(k): str(v) for k, v in props.items()})
        self._watch_idle()
        return handle

    def session(self, handle: str) -> GatewaySession:
        """The session of ``handle``, now accessed (404 when there is none)."""
        session = self.sessions.get(handle)
        if session is None:
            raise GatewayError(f"Session '{handle}' does not exist.", 404)
        session.last_access = time.monotonic()
        return session

    def close_session(self, handle: str) -> None:
        """Close the session and its operations (a running query's job is cancelled)."""
        session = self.session(handle)
        del self.sessions[handle]
        for op in session.operations.values():
            op.close()

    def configuration(self, handle: str) -> dict[str, str]:
        """What a statement of the session runs with (Flink's ``getSessionConfig``)."""
        session = self.session(handle)
        return session_configuration(session.properties, self.services)

    # -- statements -------------------------------------------------------------------------
    def execute(self, handle: str, statement: Any, execution_config: Any = None,
                timeout_ms: Any = None) -> Operation:
        """Start a statement; its operation (Flink's ``executeStatement``)."""
        session, op = self._operation(handle, statement, execution_config, timeout_ms)
        session.operations[op.handle] = op
        op.start()
        return op

    async def configure(self, handle: str, statement: Any, timeout_ms: Any = None) -> None:
        """Run a statement that changes the session (``CREATE``, ``DROP``, ``USE``, ``SET``...)
        and wait for it (Flink's ``configureSession``: an operation of its own, not listed)."""
        _, op = self._operation(handle, statement, None, timeout_ms)
        if op.kind in ("query", "modify"):
            raise GatewayError("configure-session takes a statement that changes the session "
                               "(CREATE, DROP, ALTER, USE, SET...), not a query or an INSERT: "
                               "execute it with /statements", 400)
        op.start()
        await op.wait()
        if op.error is not None:
            raise GatewayError(op.error)

    def _operation(self, handle: str, statement: Any, execution_config: Any,
                   timeout_ms: Any) -> tuple[GatewaySession, Operation]:
        """A request's operation, not started, and its session (400 for a bad request)."""
        session = self.session(handle)
        if not isinstance(statement, str) or not statement.strip():
            raise GatewayError("'statement' must be a non-empty SQL statement", 400)
        if execution_config is not None and not isinstance(execution_config, dict):
            raise GatewayError("'executionConfig' must be an object of strings", 400)
        if timeout_ms is not None and (not isinstance(timeout_ms, int) or timeout_ms < 0):
            raise GatewayError("'executionTimeout' must be a number of milliseconds", 400)
        return session, Operation(statement, session.properties,
                                  {str(k): str(v) for k, v in (execution_config or {}).items()},
                                  timeout_ms / 1000.0 if timeout_ms else None, self.services)

    def operation(self, handle: str, op_handle: str) -> Operation:
        op = self.session(handle).operations.get(op_handle)
        if op is None:
            raise GatewayError(f"Can not find the submitted operation in the OperationManager "
                               f"with the {op_handle}.", 404)
        return op

    def close_operation(self, handle: str, op_handle: str) -> Operation:
        op = self.operation(handle, op_handle)
        op.close()
        del self.sessions[handle].operations[op_handle]
        return op

    async def complete(self, handle: str, statement: Any, position: Any) -> list[str]:
        """Completion hints for the word before ``position``: keywords and the catalog's
        names that start with it."""
        self.session(handle)
        if not isinstance(statement, str) or not isinstance(position, int):
            raise GatewayError("'statement' (text) and 'position' (a number) are required", 400)
        m = _WORD.search(statement[:max(0, position)])
        prefix = m.group(0) if m else ""
        names: list[str] = []
        if self.catalog_names is not None:
            names = await asyncio.to_thread(self.catalog_names)
        upper = prefix.upper()
        return ([k for k in KEYWORDS if k.startswith(upper)]
                + sorted(n for n in names if n.upper().startswith(upper)))

    def listing(self) -> list[dict[str, Any]]:
        """The open sessions and their operations (the session's own ``/sql/gateway``, which
        the dashboard shows): what each client of the endpoint runs."""
        now = time.monotonic()
        return [{"sessionHandle": s.handle, "sessionName": s.name, "opened": s.opened_ms,
                 "idle-ms": int((now - s.last_access) * 1000),
                 "operations": [{"operationHandle": op.handle, "statement": op.statement,
                                 "status": op.status.value, "jobID": op.started_job()}
                                for op in s.operations.values()]}
                for s in self.sessions.values()]

    # -- idle sessions ----------------------------------------------------------------------
    def expire_idle(self, now: float | None = None) -> list[str]:
        """Close the sessions idle for longer than the timeout; their handles."""
        now = time.monotonic() if now is None else now
        idle = [h for h, s in self.sessions.items() if now - s.last_access > self.idle_timeout_s]
        for handle in idle:
            log.info("SQL Gateway session %s closed after %.0f s idle", handle,
                     now - self.sessions[handle].last_access)
            self.close_session(handle)
        return idle

    def _watch_idle(self) -> None:
        if self._expiry is None or self._expiry.done():
            self._expiry = asyncio.get_running_loop().create_task(self._expire_loop())

    async def _expire_loop(self) -> None:
        while self.sessions:
            await asyncio.sleep(min(CHECK_INTERVAL_SECONDS, self.idle_timeout_s))
            self.expire_idle()

    def close(self) -> None:
        """Close every session (the JobManager stops)."""
        for handle in list(self.sessions):
            self.close_session(handle)
        if self._expiry is not None:
            self._expiry.cancel()
