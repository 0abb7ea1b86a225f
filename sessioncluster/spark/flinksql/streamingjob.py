"""A streaming Flink SQL statement as planned: its inserts (each a sink and the DataFrame that
feeds it), for the JobManager's streaming SQL runner to run."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .model import DEFAULT_PATH, CatalogTable
from .outcome import StatementJob
from .updating import OuterQuery
from .updatingjoin import ChangelogFeed

#: the connector of a streaming SELECT's sink: its rows (with their RowKind) go to the client
#: through the job's result buffer, as Flink's collect sink sends them to the SQL client
COLLECT = "collect"


@dataclass(slots=True)
class StreamingInsert:
    """One ``INSERT INTO`` of a streaming statement: its sink, and the DataFrame (the sink's
    physical columns) that feeds it."""

    table: CatalogTable
    frame: Any
    #: ``append`` or ``update`` (Spark's output mode)
    output_mode: str = "append"
    #: an updating query's key columns (by position in ``frame``): its changelog's keys
    key_positions: list[int] = field(default_factory=list)
    #: the catalog tables it reads
    sources: list[str] = field(default_factory=list)
    #: the frame's last column is each row's RowKind (a table aggregation's changelog, made
    #: on keyed state: :mod:`.tableaggregate`)
    row_kinds: bool = False
    #: the query over ``frame``'s current result whose changes the sink gets, when ``frame``
    #: is an updating query that a stateful one reads (:mod:`.updating`)
    outer: OuterQuery | None = None
    #: Flink's name of the query's operator in the job's graph, when its output mode and
    #: ``row_kinds`` do not tell it (a bounded group aggregation's changelog: ``GroupAggregate``)
    operator: str = ""
    #: the feeding queries of a join of an updating query with a stream (:mod:`.updatingjoin`)
    feeds: list[ChangelogFeed] = field(default_factory=list)
    #: ``(checkpoint dir, feed key prefix)`` -> ``(frame, feeds)``: the query planned again to
    #: read its feeds under a job's checkpoint directory (None: it has no feeds)
    replan: Callable[[Path, str], tuple[Any, list[ChangelogFeed]]] | None = None

    @property
    def result_fields(self) -> list[Any]:
        """The Spark fields of the rows the sink gets (a RowKind column left out)."""
        if self.outer is not None:
            return list(self.outer.schema.fields)
        fields = list(self.frame.schema.fields)
        return fields[:-1] if self.row_kinds else fields

    @property
    def sink_name(self) -> str:
        return f"{DEFAULT_PATH}.{self.table.name}"


@dataclass(slots=True)
class StreamingStatementJob(StatementJob):
    """A planned streaming INSERT (or statement set): run by the JobManager's streaming SQL
    runner, not by ``run``."""

    inserts: list[StreamingInsert] = field(default_factory=list)
    #: every source ends: the statement is read once and the job FINISHES
    bounded: bool = False
    #: the statement's configuration (``execution.checkpointing.interval``, ...)
    configuration: dict[str, str] = field(default_factory=dict)

    @property
    def collects(self) -> bool:
        """True for a SELECT: its one sink is the client (:data:`COLLECT`)."""
        return len(self.inserts) == 1 and self.inserts[0].table.connector == COLLECT

    def columns(self) -> list[str]:
        """Flink's result columns of an INSERT: the sinks' full names."""
        return [insert.sink_name for insert in self.inserts]



def is_updating(job: StreamingStatementJob) -> bool:
    """True when the statement's (first) query emits updates (-U/+U) or deletions, not only
    +I."""
    return any(insert.output_mode == "update" or insert.row_kinds for insert in job.inserts)

