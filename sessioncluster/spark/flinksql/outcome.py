"""What planning one Flink SQL statement gives the JobManager: rows to answer with at once (DDL,
``SHOW``, ``DESCRIBE``, ``SET``, ``EXPLAIN``), or a job to run (a query, an ``INSERT``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .connectors.printing import PrintedLines


@dataclass(slots=True)
class StatementJob:
    """The Spark work of a query or an ``INSERT``, run as a job of the session."""

    #: the job's name, as Flink names it (``collect``, ``insert-into_default_catalog...``)
    name: str
    #: runs the work (in the job's thread, in its Spark job group) and gives the result's
    #: DataFrame, which the job collects
    run: Callable[[], Any]
    #: the result columns' Flink SQL types
    column_types: list[str] = field(default_factory=list)
    #: what its ``print`` sinks printed, filled by ``run``
    printed: PrintedLines = field(default_factory=PrintedLines, kw_only=True)


@dataclass(slots=True)
class StatementOutcome:
    """A planned statement: ``rows`` now (with ``columns``), or a ``job``."""

    result_kind: str = "SUCCESS"
    columns: list[str] = field(default_factory=list)
    column_types: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    job: StatementJob | None = None
    #: ``STOP JOB``: the job's id and the savepoint directory (None: no savepoint), for the
    #: Dispatcher, which owns the jobs
    stop_job: tuple[str, str | None] | None = None
    #: the statement changed the session's catalog or its options (CREATE, DROP, SET, RESET):
    #: what a JobManager keeps in its HA store, for a new leader to plan again
    changes_catalog: bool = False

    @classmethod
    def ok(cls, changes_catalog: bool = False) -> "StatementOutcome":
        """Flink's answer to a DDL statement: one row ``OK`` in a column ``result``."""
        return cls("SUCCESS", ["result"], ["STRING"], [("OK",)],
                   changes_catalog=changes_catalog)


def rows_as_arrow_ipc(columns: list[str], rows: list[tuple[Any, ...]]) -> bytes:
    """Rows computed while planning (``SHOW TABLES``, ``DESCRIBE``) as Arrow IPC stream bytes."""
    import pyarrow as pa

    table = pa.table({name: [row[i] for row in rows] for i, name in enumerate(columns)})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()
