"""One statement of a SQL Gateway session: its status, and its result fetched by token.

:class:`OperationStatus` has Flink's names and transitions (``OperationStatus``)::

    INITIALIZED --> PENDING --> RUNNING --> FINISHED
         |             |           |
         +-------------+-----------+--> CANCELED | TIMEOUT | ERROR
    every state --> CLOSED  (CLOSED is the end)

:class:`ResultFetcher` is Flink's token protocol: token ``n`` returns the next batch and moves
on to ``n + 1``; the last token may be asked again (the same batch: a lost answer is asked for
again); any other token is an error. ``EOS`` once the result has no more rows.
"""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Sequence

from ...common.types import RowKind

#: one row of a result: its kind and its values
Change = tuple[RowKind, Sequence[Any]]
#: the most rows one fetch of a result that is all here answers with
MAX_FETCH_ROWS = 10_000


class GatewayError(Exception):
    """A request the SQL Gateway cannot answer; ``status`` is the HTTP status it is answered
    with (404: no such session or operation), ``cause`` the reason under the message (a failed
    statement's error), the last of the answer's ``errors`` as in Flink's."""

    def __init__(self, message: str, status: int = 500, cause: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.cause = cause

    @property
    def errors(self) -> list[str]:
        return [str(self)] + ([self.cause] if self.cause else [])


class OperationStatus(str, enum.Enum):
    """The status of an operation, with Flink's names."""

    INITIALIZED = "INITIALIZED"
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    CANCELED = "CANCELED"
    CLOSED = "CLOSED"
    ERROR = "ERROR"
    TIMEOUT = "TIMEOUT"

    @property
    def is_terminal(self) -> bool:
        return self in (OperationStatus.FINISHED, OperationStatus.CANCELED,
                        OperationStatus.CLOSED, OperationStatus.ERROR, OperationStatus.TIMEOUT)


_ENDS = {OperationStatus.CANCELED, OperationStatus.CLOSED, OperationStatus.TIMEOUT,
         OperationStatus.ERROR}
#: the legal transitions (Flink's ``OperationStatus.isValidStatusTransition``)
OPERATION_TRANSITIONS: dict[OperationStatus, set[OperationStatus]] = {
    OperationStatus.INITIALIZED: {OperationStatus.PENDING} | _ENDS,
    OperationStatus.PENDING: {OperationStatus.RUNNING} | _ENDS,
    OperationStatus.RUNNING: {OperationStatus.FINISHED} | _ENDS,
    OperationStatus.FINISHED: {OperationStatus.CLOSED},
    OperationStatus.CANCELED: {OperationStatus.CLOSED},
    OperationStatus.TIMEOUT: {OperationStatus.CLOSED},
    OperationStatus.ERROR: {OperationStatus.CLOSED},
    OperationStatus.CLOSED: set(),
}


class ResultType(str, enum.Enum):
    """What a fetch returns: not ready yet, rows, or the end of the rows."""

    NOT_READY = "NOT_READY"
    PAYLOAD = "PAYLOAD"
    EOS = "EOS"


@dataclass(slots=True)
class ResultSchema:
    """A result's columns, and what Flink says of it besides its rows."""

    names: list[str]
    types: list[str]
    #: SUCCESS (a DDL statement's ``OK``) or SUCCESS_WITH_CONTENT
    result_kind: str = "SUCCESS_WITH_CONTENT"
    #: a SELECT's rows (not a DDL's, SHOW's or an INSERT's job id)
    is_query: bool = False
    #: the statement's job (a query or an INSERT); "" for the rest
    job_id: str = ""


@dataclass(slots=True)
class FetchedBatch:
    """One fetch's answer: ``next_token`` None at the end."""

    result_type: ResultType
    rows: list[Change] = field(default_factory=list)
    next_token: int | None = None


#: gives the result's next rows (possibly none yet), or None when it has no more
Pull = Callable[[], Awaitable["list[Change] | None"]]


class ResultFetcher:
    """A result's rows, fetched by token (Flink's ``ResultFetcher``): each fetch takes the
    rows its pull gives."""

    def __init__(self, schema: ResultSchema, pull: Pull) -> None:
        self.schema = schema
        self._pull = pull
        self._token = 0
        self._previous: list[Change] = []
        self._no_more = False
        self._lock = asyncio.Lock()

    @classmethod
    def of_rows(cls, schema: ResultSchema, rows: list[Change]) -> "ResultFetcher":
        """A result that is all here: batches of at most :data:`MAX_FETCH_ROWS`, then the
        end."""
        pending = [rows[i:i + MAX_FETCH_ROWS] for i in range(0, len(rows), MAX_FETCH_ROWS)]
        pending = pending or [[]]
        pending.reverse()

        async def pull() -> list[Change] | None:
            return pending.pop() if pending else None

        return cls(schema, pull)

    async def fetch(self, token: int) -> FetchedBatch:
        async with self._lock:  # two fetches of one token: one moves on, the other repeats
            if token == self._token:
                if not self._no_more:
                    rows = await self._pull()
                    if rows is not None:
                        self._token += 1
                        self._previous = rows
                        return FetchedBatch(ResultType.PAYLOAD, rows, self._token)
                    self._no_more = True
                return FetchedBatch(ResultType.EOS)
            if token == self._token - 1 and token >= 0:
                return FetchedBatch(ResultType.PAYLOAD, self._previous, self._token)
            expected = ("0" if self._token == 0
                        else f"{self._token} or {self._token - 1}")
            raise GatewayError(f"Expecting token to be {expected}, but found {token}.", 400)
