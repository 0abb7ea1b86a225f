"""Flink's SQL Client in gateway mode, on a session: ``sessioncluster sql-client SESSION``.

:class:`SqlGatewayClient` speaks the session's SQL Gateway REST API (open a session, execute a
statement, follow its results by token, close); :class:`SqlClient` is the terminal client on top
of it, Flink's ``sql-client.sh`` in its ``tableau`` result mode: a script (``-f``) or statements
typed at ``Flink SQL>``, each answered as Flink's client answers it (``[INFO] Execute statement
succeeded.``, an INSERT's job id, a query's rows in Flink's tableau layout, a STREAMING
query's changes with their ``op`` as they come, ``[ERROR] Could not execute SQL statement.``).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, TextIO

from ..api.table.datatype import LOGICAL_TYPE_ROOTS
from ..api.table.environment import DML_SYNC, MAX_COLUMN_WIDTH, RUNTIME_MODE
from ..api.table.result import (
    DEFAULT_MAX_COLUMN_WIDTH,
    NULL_VALUE,
    TableauLayout,
    format_tableau,
)
from ..common.sqlscript import leading_words, split_statements
from ..common.types import RowKind
from .restclient import RestClient, RestError

PROMPT = "Flink SQL> "
#: how long a client looks for the session's leader again when its JobManager stops answering
RECONNECT_SECONDS = 60.0
#: Flink's SQL client option read here (the column width is ``table.display.max-column-width``)
PRINT_TIME_COST = "sql-client.display.print-time-cost"
#: the SQL names of Flink's type roots that differ from them
_SQL_NAMES = {root: name for name, root in LOGICAL_TYPE_ROOTS.items()}


def type_text(logical_type: dict[str, Any]) -> str:
    """A column's logical type (the gateway's JSON) as Flink SQL type text, as far as the
    tableau's column widths need it: ``DECIMAL(10)``, ``TIMESTAMP(3)``, ``BIGINT``."""
    root = _SQL_NAMES.get(logical_type.get("type", ""), logical_type.get("type", ""))
    param = logical_type.get("precision")
    return f"{root}({param})" if param is not None else root


@dataclass(slots=True)
class StatementResult:
    """A statement's result as the gateway gives it: its columns, and its rows to come."""

    is_query: bool
    result_kind: str
    job_id: str | None
    names: list[str]
    types: list[str]
    #: the (op, fields) rows: all of a bounded result's, as they come for a streaming query's
    rows: Iterator[tuple[str, list[Any]]] = field(repr=False)
    operation: str = ""


class SessionReopened(ConnectionError):
    """The JobManager changed (or stopped answering) under a statement: a new gateway session
    is open; what became of the statement is not known."""


class SqlGatewayClient:
    """One session of the SQL Gateway endpoint of a session cluster. With ``reconnect`` (the
    REST client of the session's leader, found again), a gateway session the endpoint lost
    (an HA failover to another JobManager, 10 minutes idle) is opened again with the
    properties it had."""

    def __init__(self, rest: RestClient, properties: dict[str, str] | None = None,
                 reconnect: Callable[[], RestClient] | None = None) -> None:
        self.rest = rest
        self.reconnect = reconnect
        #: the session's properties as last read (its SETs too), for a session opened again
        self.properties = dict(properties or {})
        self.handle = self._open()

    def _open(self) -> str:
        body = {"sessionName": "sql-client", "properties": self.properties}
        return str(self.rest.request("POST", "/v2/sessions", body)["sessionHandle"])

    def reopen(self, timeout: float = RECONNECT_SECONDS) -> None:
        """The session's leader found again (an HA standby takes a few seconds to take over)
        and a gateway session opened on it."""
        assert self.reconnect is not None
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.rest = self.reconnect()
                self.handle = self._open()
                return
            except (ConnectionError, LookupError):
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)

    @property
    def _base(self) -> str:
        return f"/v2/sessions/{self.handle}"

    def configuration(self) -> dict[str, str]:
        self.properties = dict(self.rest.get(self._base)["properties"])
        return dict(self.properties)

    def submit(self, statement: str) -> str:
        """Start one statement; its operation's handle. A session the endpoint does not know
        is opened again and the statement sent to it (nothing ran); a JobManager that does
        not answer is looked for again (with ``reconnect``), and :class:`SessionReopened`
        raised: whether the statement ran is not known."""
        body = {"statement": statement}
        try:
            return str(self.rest.request("POST", f"{self._base}/statements",
                                         body)["operationHandle"])
        except RestError as exc:
            if exc.status != 404 or self.reconnect is None:
                raise
            self.handle = self._open()
        except ConnectionError as exc:
            if self.reconnect is None:
                raise
            self.reopen()
            raise SessionReopened(f"the session's JobManager did not answer ({exc}); a new "
                                  "gateway session is open on its leader, with the same "
                                  "properties: whether the statement ran is not known") from None
        return str(self.rest.request("POST", f"{self._base}/statements",
                                     body)["operationHandle"])

    def result(self, op: str, row_format: str = "PLAIN_TEXT") -> StatementResult:
        """An operation's result once the gateway has it (RestError when it failed); its
        values as text (``PLAIN_TEXT``, Flink's casts) or as JSON values (``JSON``)."""
        body = self.rest.get(f"{self._base}/operations/{op}/result/0?rowFormat={row_format}")
        while body["resultType"] == "NOT_READY":
            body = self.rest.get(body["nextResultUri"])
        results = body["results"]
        columns = results["columns"]

        def rows(body: dict[str, Any] = body) -> Iterator[tuple[str, list[Any]]]:
            while True:
                for d in body.get("results", {}).get("data", []):
                    yield RowKind[d["kind"]].short_string(), d["fields"]
                uri = body.get("nextResultUri")
                if uri is None:
                    return
                body = self.rest.get(uri)

        return StatementResult(bool(body.get("isQueryResult")), str(body.get("resultKind")),
                               body.get("jobID"), [c["name"] for c in columns],
                               [type_text(c["logicalType"]) for c in columns], rows(), op)

    def close_operation(self, operation: str) -> None:
        """Close an operation (a running query's job is cancelled)."""
        self.rest.request("DELETE", f"{self._base}/operations/{operation}/close")

    def close(self) -> None:
        try:
            self.rest.request("DELETE", self._base)
        except (RestError, ConnectionError):
            pass  # the session cluster stopped, or it closed the idle session already


class SqlClient:
    """Flink's SQL Client (tableau result mode) on a :class:`SqlGatewayClient`."""

    def __init__(self, gateway: SqlGatewayClient, out: TextIO | None = None) -> None:
        self.gateway = gateway
        self.out = out if out is not None else sys.stdout

    def info(self, message: str) -> None:
        self.out.write(f"[INFO] {message}\n\n")

    def run_script(self, script: str, echo: bool = True) -> bool:
        """Every statement of ``script`` in turn, stopping at the first that fails (as Flink's
        ``sql-client.sh -f``); False when one failed."""
        for statement in split_statements(script):
            if echo:
                self.out.write(f"{PROMPT}{statement.strip()};\n")
            if not self.run_statement(statement):
                return False
        return True

    def run_statement(self, statement: str) -> bool:
        """One statement and its answer; False when it failed or was interrupted (Ctrl-C:
        its operation is closed, a running query's job cancelled)."""
        started = time.monotonic()
        op = ""
        try:
            op = self.gateway.submit(statement)
            result = self.gateway.result(op)
            config = self.gateway.configuration()  # its SETs too (kept for a session reopened)
            if result.is_query:
                self._print_query(result, config, started)
            elif result.job_id:
                self._print_job(result.job_id, config)
            elif result.result_kind == "SUCCESS":
                list(result.rows)
                self.info("Execute statement succeeded.")
            else:  # SHOW's, DESCRIBE's rows
                self.out.write(self._table(result, config) + "\n")
        except RestError as exc:  # the reason is the last error, as Flink's client shows it
            self.out.write("[ERROR] Could not execute SQL statement. Reason:\n"
                           f"{exc.errors[-1] if exc.errors else exc}\n\n")
            return False
        except SessionReopened as exc:
            self.out.write(f"[ERROR] Could not execute SQL statement. Reason:\n{exc}\n\n")
            return False
        except ConnectionError as exc:  # while its result was read
            reason = f"the session's JobManager stopped answering ({exc})"
            if self.gateway.reconnect is not None:
                self.gateway.reopen()
                reason += "; a new gateway session is open on its leader"
            self.out.write(f"[ERROR] Could not execute SQL statement. Reason:\n{reason}\n\n")
            return False
        except KeyboardInterrupt:
            if op:
                self.gateway.close_operation(op)
            self.out.write("\n[INFO] Result retrieval cancelled.\n\n")
            return False
        self.out.flush()
        return True

    def _print_job(self, job_id: str, config: dict[str, str]) -> None:
        if config.get(DML_SYNC, "false").lower() == "true":
            self.info("Complete execution of the SQL update statement.")
            return
        self.out.write("[INFO] Submitting SQL update statement to the cluster...\n"
                       "[INFO] SQL update statement has been successfully submitted to the "
                       f"cluster:\nJob ID: {job_id}\n\n")

    def _table(self, result: StatementResult, config: dict[str, str]) -> str:
        """A bounded result's rows in the tableau, widths from the data (Flink's batch print)."""
        return format_tableau(result.names, result.types, [cells for _, cells in result.rows],
                              None, max_column_width=_max_width(config), widths_from_data=True)

    def _print_query(self, result: StatementResult, config: dict[str, str],
                     started: float) -> None:
        cost = config.get(PRINT_TIME_COST, "false").lower() == "true"
        if config.get(RUNTIME_MODE, "streaming").lower() == "batch":
            self.out.write(_with_cost(self._table(result, config), cost, started) + "\n")
        else:
            self._print_changes(result, _max_width(config), cost, started)

    def _print_changes(self, result: StatementResult, max_width: int, cost: bool,
                       started: float) -> None:
        """A STREAMING query's changes, each as it comes, until its job ends (or Ctrl-C,
        which cancels it, as Flink's client does)."""
        layout = TableauLayout.of_types(result.names, result.types, max_width, op=True)
        self.out.write(layout.header())
        count = 0
        try:
            for kind, cells in result.rows:
                self.out.write(layout.row([kind, *(NULL_VALUE if c is None else c for c in cells)]))
                self.out.flush()
                count += 1
        except KeyboardInterrupt:
            self.gateway.close_operation(result.operation)
            self.out.write(f"{layout.border}\nQuery terminated, received a total of "
                           f"{_rows(count)}\n\n")
            return
        footer = f"{layout.border}\nReceived a total of {_rows(count)}\n"
        self.out.write(_with_cost(footer, cost, started) + "\n")

    def interactive(self, stdin: TextIO | None = None) -> None:
        """Statements typed at the prompt, each run once its ``;`` is typed; ``QUIT;`` or the
        end of the input ends the session."""
        stdin = stdin if stdin is not None else sys.stdin
        buffer = ""
        tty = stdin.isatty()
        while True:
            if tty:
                self.out.write(PROMPT if not buffer.strip() else "> ")
                self.out.flush()
            line = stdin.readline()
            if not line:
                break
            buffer += line
            statements = split_statements(buffer)
            if not statements or not buffer.rstrip().endswith(";"):
                continue
            buffer = ""
            for statement in statements:
                if leading_words(statement)[:1] in (["QUIT"], ["EXIT"]):
                    return
                if leading_words(statement)[:1] == ["HELP"]:
                    self.out.write(HELP)
                    continue
                self.run_statement(statement)


HELP = """The following commands are available:

HELP;      Prints the available commands.
QUIT;      Quits the SQL CLI client (also EXIT;).

Any Flink SQL statement ends with ';': DDL (CREATE, DROP, ALTER), SHOW, DESCRIBE, EXPLAIN,
SET 'key' = 'value', RESET, queries and INSERT INTO, EXECUTE STATEMENT SET.

"""


def _max_width(config: dict[str, str]) -> int:
    return int(config.get(MAX_COLUMN_WIDTH, DEFAULT_MAX_COLUMN_WIDTH))


def _rows(count: int) -> str:
    return f"{count} {'rows' if count > 1 else 'row'}"


def _with_cost(text: str, cost: bool, started: float) -> str:
    """Flink's ``sql-client.display.print-time-cost``: the last line with the seconds it took."""
    if not cost:
        return text
    return text.rstrip("\n") + f" ({time.monotonic() - started:.2f} seconds)\n"
