"""How one SQL Gateway operation runs its statement: through the Dispatcher, as any client's
Flink SQL statement (:class:`ExecuteSql`), then its result as Flink's gateway gives it: a
DDL's ``OK``, ``SHOW``'s rows, a query's rows (a streaming query's as they come), an INSERT's
job id as soon as its job runs (Flink's ``table.dml-sync`` = false)."""

from __future__ import annotations

import asyncio
import logging
import pickle
import uuid
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from ...api.table.environment import DML_SYNC, RUNTIME_MODE
from ...api.table.result import arrow_rows
from ...common.sqlscript import RESULT_MODE, split_statements
from ...common.types import RowKind
from ...graph.lifecycle import JobStatus
from ...protocol.messages import (
    AwaitJobResult,
    CancelJob,
    ErrorReply,
    ExecuteSql,
    FetchStreamResults,
    JobResultReply,
    Message,
    SqlResult,
    StreamResults,
)
from ...spark.flinksql.ctas import CreateTableAs
from ...spark.flinksql.model import FlinkSqlError
from ...spark.flinksql.statements import (
    Insert,
    Query,
    Reset,
    Set,
    Statement,
    StatementSet,
    parse_statements,
)
from .results import (
    OPERATION_TRANSITIONS,
    Change,
    FetchedBatch,
    GatewayError,
    OperationStatus,
    ResultFetcher,
    ResultSchema,
    ResultType,
)

log = logging.getLogger("sessioncluster.sqlgateway")

#: Flink's column of an INSERT's result
JOB_ID_COLUMN = "job id"
#: how often a waiting operation looks at its job
POLL_SECONDS = 0.05
#: how long one wait for a job's end is held by the Dispatcher (it answers "not done" then)
AWAIT_SECONDS = 30.0
#: how long a fetch waits for a running statement's result, or a running query's rows,
#: before it answers without any
FETCH_WAIT_SECONDS = 1.0
_KINDS = {k.short_string(): k for k in RowKind}


@dataclass(slots=True)
class GatewayServices:
    """What the SQL Gateway works with: the Dispatcher, as an in-process client."""

    #: a request's reply (``Dispatcher.ask``)
    ask: Callable[[Message], Awaitable[Message]]
    #: the status of a job in the JobManager's memory; None when it has none of that id
    job_status: Callable[[str], JobStatus | None]
    #: the options every statement of the session cluster runs with (its ``SET``\\s)
    shared_options: Callable[[], dict[str, str]] = field(default=dict)


def session_configuration(properties: dict[str, str], services: GatewayServices
                          ) -> dict[str, str]:
    """What a gateway session's statements run with: Flink's default runtime mode, the session
    cluster's ``SET`` options, the session's own properties."""
    return {RUNTIME_MODE: "streaming", **services.shared_options(), **properties}


def parsed_statement(statement: str) -> Statement | None:
    """The one statement of ``statement``; None when it does not parse or is several (the
    planner then says what is wrong with it)."""
    try:
        parsed = parse_statements(statement)
    except (FlinkSqlError, ValueError):
        return None
    return parsed[0] if len(parsed) == 1 else None


def statement_kind(parsed: Statement | None) -> str:
    """``query``, ``modify`` (an INSERT, a statement set, CREATE TABLE AS), ``option`` (``SET``,
    ``RESET``) or ``other``."""
    if isinstance(parsed, Query):
        return "query"
    if isinstance(parsed, (Insert, StatementSet, CreateTableAs)):
        return "modify"
    return "option" if isinstance(parsed, (Set, Reset)) else "other"


class Operation:
    """One statement of a gateway session, run in a task of the JobManager's loop."""

    def __init__(self, statement: str, properties: dict[str, str],
                 execution_config: dict[str, str], timeout_s: float | None,
                 services: GatewayServices) -> None:
        self.handle = str(uuid.uuid4())
        self.statement = statement
        #: the session's properties: a ``SET`` or ``RESET`` changes them, for this session only
        self.properties = properties
        #: what the statement runs with
        self.configuration = {**properties, **execution_config}
        self.timeout_s = timeout_s
        self.services = services
        self.status = OperationStatus.INITIALIZED
        self.error: str | None = None
        self.fetcher: ResultFetcher | None = None
        #: the job it runs, if the statement makes one (a query or an INSERT)
        self.job_id = uuid.uuid4().hex
        self.parsed = parsed_statement(statement)
        self.kind = statement_kind(self.parsed)
        self._task: asyncio.Task[None] | None = None
        #: the Dispatcher's reply to the statement (never cancelled: a job it starts late is
        #: still found and cancelled when the operation is)
        self._reply: asyncio.Future[Message] | None = None
        self._cancelling: asyncio.Task[None] | None = None
        self._seq = 0

    def started_job(self) -> str | None:
        """The id of the job the statement started; None while there is none (a DDL, or a
        statement still being planned)."""
        if self.fetcher is not None and self.fetcher.schema.job_id:
            return self.fetcher.schema.job_id
        return self.job_id if self.services.job_status(self.job_id) is not None else None

    def _to(self, status: OperationStatus) -> bool:
        """Move to ``status`` if the transition table allows it."""
        if status not in OPERATION_TRANSITIONS[self.status]:
            return False
        self.status = status
        return True

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def wait(self) -> None:
        """Until the operation has its result or has ended."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def _run(self) -> None:
        self._to(OperationStatus.PENDING)
        self._to(OperationStatus.RUNNING)
        try:
            await asyncio.wait_for(self._execute(), self.timeout_s)
        except asyncio.TimeoutError:
            if self._to(OperationStatus.TIMEOUT):
                self.error = f"the statement did not end within {self.timeout_s:g} s"
                self._cancel_job()
        except GatewayError as exc:
            self._fail(str(exc))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the operation fails, the gateway goes on
            log.exception("SQL Gateway operation %s failed", self.handle)
            self._fail(f"{type(exc).__name__}: {exc}")

    def _fail(self, error: str) -> None:
        if self._to(OperationStatus.ERROR):
            self.error = error

    def _finish(self, fetcher: ResultFetcher) -> None:
        self.fetcher = fetcher
        self._to(OperationStatus.FINISHED)

    async def _execute(self) -> None:
        count = len(split_statements(self.statement))
        if count > 1:
            raise GatewayError(f"the SQL Gateway runs one statement per request; this text has "
                               f"{count} (send them one at a time, as the SQL client does with "
                               "a script: sessioncluster sql-client SESSION -f script.sql)")
        if isinstance(self.parsed, (Set, Reset)):
            self._finish(self._session_option(self.parsed))
            return
        mode = self.configuration.get(RUNTIME_MODE, "streaming").upper()
        # the gateway reads a streaming query's changes (never the SQL client's table mode)
        config = {**self.configuration, RESULT_MODE: "changelog"}
        msg = ExecuteSql(self.statement, self.job_id, "flink", mode, config)
        self._reply = reply_future = asyncio.ensure_future(self.services.ask(msg))
        sync = self.configuration.get(DML_SYNC, "false").lower() == "true"
        if self.kind == "modify" and not sync:
            reply = await self._reply_or_running(reply_future)
            if reply is None:  # the INSERT's job runs: its id is the result
                self._finish(ResultFetcher.of_rows(self._job_id_schema(),
                                                   [(RowKind.INSERT, [self.job_id])]))
                return
        else:
            reply = await asyncio.shield(reply_future)
        self._finish(await self._fetcher_of(reply, sync))

    async def _reply_or_running(self, reply: asyncio.Future[Message]) -> Message | None:
        """The statement's reply, or None once its job runs (whichever comes first)."""
        while True:
            done, _ = await asyncio.wait({reply}, timeout=POLL_SECONDS)
            if done:
                return reply.result()
            status = self.services.job_status(self.job_id)
            if status is not None and status not in (JobStatus.INITIALIZING, JobStatus.CREATED):
                return None

    def _session_option(self, statement: Set | Reset) -> ResultFetcher:
        """``SET``/``RESET`` of this session's properties (Flink's gateway sessions each have
        their own configuration; a notebook's ``SET`` is the session cluster's)."""
        if isinstance(statement, Set) and statement.key is None:
            listed = session_configuration(self.properties, self.services)
            return ResultFetcher.of_rows(
                ResultSchema(["key", "value"], ["STRING", "STRING"]),
                [(RowKind.INSERT, [k, v]) for k, v in sorted(listed.items())])
        if isinstance(statement, Set):
            self.properties[str(statement.key)] = statement.value or ""
        elif statement.key is None:
            self.properties.clear()
        else:
            self.properties.pop(statement.key, None)
        return ResultFetcher.of_rows(ResultSchema(["result"], ["STRING"], "SUCCESS"),
                                     [(RowKind.INSERT, ["OK"])])

    def _job_id_schema(self) -> ResultSchema:
        return ResultSchema([JOB_ID_COLUMN], ["STRING"], "SUCCESS_WITH_CONTENT", False,
                            self.job_id)

    async def _fetcher_of(self, reply: Message, sync: bool) -> ResultFetcher:
        """The result of a statement's reply (an error raises GatewayError)."""
        import pyarrow as pa

        if isinstance(reply, ErrorReply):
            raise GatewayError(reply.error)
        if not isinstance(reply, SqlResult):
            raise GatewayError(f"unexpected reply {reply.type!r} to a statement")
        if reply.status not in (JobStatus.FINISHED, JobStatus.RUNNING):
            if self.services.job_status(self.job_id) is None:  # refused before a job ran
                raise GatewayError(str(reply.error_text))
            verb = "was cancelled" if reply.status is JobStatus.CANCELED else "failed"
            raise GatewayError(f"SQL job {self.job_id} {verb}: {reply.error_text}")
        if self.kind == "modify":
            if sync and reply.status is JobStatus.RUNNING:
                await self._until_job_ends()
            return ResultFetcher.of_rows(self._job_id_schema(), [(RowKind.INSERT, [self.job_id])])
        table = pa.ipc.open_stream(reply.arrow).read_all()
        schema = ResultSchema(list(table.column_names), list(reply.column_types),
                              reply.result_kind, self.kind == "query", reply.job_id)
        if reply.live_result:
            return ResultFetcher(schema, self._pull_changes)
        kinds = [RowKind(b) for b in reply.row_kinds] if reply.row_kinds else None
        rows: list[Change] = [(kinds[i] if kinds else RowKind.INSERT, values)
                              for i, values in enumerate(arrow_rows(table))]
        return ResultFetcher.of_rows(schema, rows)

    async def _until_job_ends(self) -> None:
        """The Dispatcher's answer to :class:`AwaitJobResult`, until the job has ended."""
        while True:
            reply = await self.services.ask(AwaitJobResult(self.job_id, AWAIT_SECONDS))
            if isinstance(reply, ErrorReply):
                raise GatewayError(reply.error)
            if isinstance(reply, JobResultReply) and reply.done:
                if reply.status in (JobStatus.FAILED, JobStatus.CANCELED):
                    raise GatewayError(f"SQL job {self.job_id} is {reply.status.value}")
                return

    async def _pull_changes(self) -> list[Change] | None:
        """A streaming query's next changes from its job (waiting a little for some)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FETCH_WAIT_SECONDS
        while True:
            reply = await self.services.ask(FetchStreamResults(self.job_id, None, self._seq))
            if isinstance(reply, ErrorReply):
                raise GatewayError(reply.error)
            if not isinstance(reply, StreamResults):
                raise GatewayError(f"unexpected reply {reply.type!r} to a fetch")
            self._seq = reply.next_seq
            # the JobManager's own pickles of (row kind, values): never a client's bytes
            rows: list[Change] = [(_KINDS[kind], values)
                                  for kind, values in map(pickle.loads, reply.values)]
            if reply.done and not rows:
                if reply.status in (JobStatus.FAILED, JobStatus.CANCELED) and \
                        self.status is not OperationStatus.CLOSED:
                    raise GatewayError(f"SQL job {self.job_id} is {reply.status.value}: "
                                       f"{reply.error_text or ''}".rstrip(": "))
                return None
            if rows or reply.done or loop.time() >= deadline:
                return rows
            await asyncio.sleep(POLL_SECONDS * 2)

    async def fetch(self, token: int) -> FetchedBatch:
        """Token ``token``'s rows (Flink's ``fetchResults``); a statement still running is
        waited for a little before the answer is NOT_READY."""
        if self._task is not None and not self._task.done():
            await asyncio.wait({self._task}, timeout=FETCH_WAIT_SECONDS)
        if self.status is OperationStatus.ERROR:
            raise GatewayError(f"Failed to execute the operation {self.handle}.",
                               cause=self.error)
        if self.status in (OperationStatus.INITIALIZED, OperationStatus.PENDING,
                           OperationStatus.RUNNING):
            return FetchedBatch(ResultType.NOT_READY, next_token=token)
        if self.status is not OperationStatus.FINISHED or self.fetcher is None:
            raise GatewayError(f"Can not fetch results from the operation {self.handle} in "
                               f"{self.status.value} status.", 400, cause=self.error)
        return await self.fetcher.fetch(token)

    def cancel(self) -> None:
        """Flink's ``cancelOperation``: a running statement stops (its job is cancelled)."""
        if not self._to(OperationStatus.CANCELED):
            hint = (" (its job goes on: close the operation to cancel it)"
                    if self.status is OperationStatus.FINISHED and self.kind == "query" else "")
            raise GatewayError(f"Failed to convert current status {self.status.value} to target "
                               f"status CANCELED{hint}.", 400)
        self._stop_task()
        self._cancel_job()

    def close(self) -> None:
        """Flink's ``closeOperation``: its resources released; a query's job is cancelled (an
        INSERT's job goes on, as Flink's)."""
        previous = self.status
        if not self._to(OperationStatus.CLOSED):
            return
        self._stop_task()
        if previous is not OperationStatus.FINISHED or self.kind == "query":
            self._cancel_job()

    def _stop_task(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def _cancel_job(self) -> None:
        """Cancel the statement's job, in the background: one still being planned is cancelled
        once it starts."""
        if self._cancelling is None:
            self._cancelling = asyncio.get_running_loop().create_task(self._cancel_when_known())

    async def _cancel_when_known(self) -> None:
        while True:
            status = self.services.job_status(self.job_id)
            if status is not None:
                if not status.is_globally_terminal:
                    await self.services.ask(CancelJob(self.job_id))
                return
            if self._reply is None or self._reply.done():
                return
            await asyncio.sleep(POLL_SECONDS * 4)
