"""An unbounded Table as the source of a DataStream (``StreamTableEnvironment.to_data_stream``
and ``to_changelog_stream`` in STREAMING): the mirror of the ``datastream`` connector
(:mod:`.connectors.datastream`). The DataStream's JobGraph has a ``SOURCE_TABLE`` vertex whose
config carries the Table's query and the TableEnvironment's configuration; the JobManager's
runner hands the DataStream planner (``spark/streaming.py``) a :class:`TableSources`, which
plans the query with the session's Flink SQL planner (its catalog, temporary views and Python
functions) into a streaming DataFrame and turns its rows into the DataStream's records
(``RECORD_SCHEMA``: a pickled ``Row`` with the column names and its RowKind, the rowtime as the
record's timestamp) with one ``mapInArrow``. The query and the DataStream's operators are then
one Structured Streaming query, pipelined as Flink runs them in one job.

An updating query (a non-windowed GROUP BY) runs in Spark's ``update`` output mode, after which
Spark chains no stateful operator (its UnsupportedOperationChecker), and Flink's ``-U`` needs the
row emitted before (:class:`~.microbatch.ChangelogState`). Its changelog is therefore a query of
its own (a :class:`Feeder`, started by the job beside the DataStream's query, stopped with it):
``foreachBatch`` writes each micro-batch's changes as records into a directory the DataStream's
query reads as a file stream.

A window aggregation's result (a window TVF's GROUP BY) is fed the same way, each window once
(``append``): Spark judges a record late against the watermark of the micro-batch that carries
it, and a window's row leaves Spark's aggregation in the micro-batch whose watermark has just
passed its end, so a window after it in the same query would drop it, where Flink's watermark
reaches the DataStream's windows after the rows it closed. Read as a file stream, its rows
carry their rowtime ``window_time`` under a watermark of their own (the largest window_time
read, Flink's bounded out-of-orderness of 0: windows close in order), so the DataStream's
event-time windows and timers fire by it.

The feeder's directory (``<checkpoint dir>/table-<vertex id>``)
is its Spark checkpoint, its changelog state and those files (its ``outbox``): a savepoint holds
it, with the files the DataStream's query has not read yet (``jobmanager/savepoint.py``).
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from ...api.table.conversion import (
    TABLE_CONFIGURATION,
    TABLE_CONVERSION,
    TABLE_QUERY,
    TABLE_ROWTIME,
    TO_DATASTREAM,
    WINDOW_TIME,
    insert_only_table,
    row_record,
    rowtime_millis,
)
from ...common.types import pyflink_value
from ...graph.jobgraph import JobVertex, PythonDependency
from ...streaming.runtime import RECORD_SCHEMA
from ..streaming import ROCKSDB_PROVIDER
from .feeds import OutboxFeed
from .microbatch import batch_changelog
from .model import FlinkSqlError
from .outcome import StatementOutcome
from .statements import Query, parse_statements
from .streamingjob import StreamingInsert, StreamingStatementJob, is_updating
from .updating import updating_node

#: Spark's metadata key of an event-time column (``withWatermark``): the Table's rowtime
WATERMARK_DELAY = "spark.watermarkDelayMs"


def probe(planner: Any, text: str, configuration: dict[str, str],
          runtime_mode: str = "STREAMING",
          dependencies: tuple[PythonDependency, ...] = ()) -> StatementOutcome:
    """What the client needs to convert the query into a DataStream (nothing runs): one row
    ``(bounded, updating, rowtime)``; ``dependencies``: the Table's Python files... (its
    functions load with them). An unbounded updating query fails for ``to_data_stream``
    with Flink's message. In BATCH the query is read to its end: only its rowtime is told
    (a window TVF's ``window_time``, if the Table's rows have one)."""
    columns, types = ["bounded", "updating", "rowtime"], ["BOOLEAN", "BOOLEAN", "STRING"]
    if runtime_mode == "BATCH":
        statement = parse_statements(text)[0]
        rowtime = (window_rowtime(statement.ast) if isinstance(statement, Query) else None) or ""
        return StatementOutcome("SUCCESS_WITH_CONTENT", columns, types, [(True, False, rowtime)])
    job = planned(planner, text, configuration, dependencies)
    updating = is_updating(job)
    if updating and not job.bounded and configuration.get(TO_DATASTREAM) == "data":
        refuse_updates(text)
    return StatementOutcome("SUCCESS_WITH_CONTENT", columns, types,
                            [(job.bounded, updating, rowtime_column(job.inserts[0], text) or "")])


def planned(planner: Any, text: str, configuration: dict[str, str],
            dependencies: tuple[PythonDependency, ...] = ()) -> StreamingStatementJob:
    """The query planned in STREAMING by the session's Flink SQL planner (a job not run), its
    Python functions run with ``dependencies``."""
    own = {k: v for k, v in configuration.items() if k != TO_DATASTREAM}
    job = planner.plan(text, "STREAMING", own, dependencies=dependencies).job
    if not isinstance(job, StreamingStatementJob) or not job.collects:
        raise FlinkSqlError("to_data_stream() / to_changelog_stream() take a query's Table")
    return job


def refuse_updates(text: str) -> None:
    """Flink's error for an updating query converted by ``to_data_stream``."""
    statement = parse_statements(text)[0]
    node = updating_node(statement.ast) if isinstance(statement, Query) else None
    try:
        insert_only_table(node or "GroupAggregate")
    except ValueError as exc:
        raise FlinkSqlError(str(exc)) from None


def rowtime_column(insert: StreamingInsert, text: str = "") -> str | None:
    """The query's rowtime column: a window TVF's ``window_time`` (Flink's time attribute of
    its result: the TVF's time column is a plain TIMESTAMP after it), else the column its
    watermark is on (Spark's event time)."""
    names = [f.name for f in insert.result_fields]
    statement = parse_statements(text)[0] if text else None
    window_time = window_rowtime(statement.ast) if isinstance(statement, Query) else None
    if window_time in names:
        return window_time
    return next((f.name for f in insert.result_fields if WATERMARK_DELAY in f.metadata), None)


def window_aggregation(text: str) -> bool:
    """True for a window TVF's aggregation (``... FROM TABLE(TUMBLE(...)) GROUP BY ...``)."""
    statement = parse_statements(text)[0]
    return (isinstance(statement, Query) and windowed(statement.ast)
            and statement.ast.args.get("group") is not None)


def window_rowtime(query: Any) -> str | None:
    """The query's output column that is a window TVF's ``window_time`` (kept a time attribute
    under an alias, plus an INTERVAL, by ``SELECT *`` and through a subquery in FROM, as
    Flink 2.3's schema marks it ``*ROWTIME*``); None when none is."""
    from sqlglot import exp

    if not isinstance(query, exp.Select) or query.args.get("from_") is None:
        return None
    source = query.args["from_"].this
    if isinstance(source, exp.Table) and isinstance(source.this, exp.Anonymous) \
            and source.this.name.upper() == "TABLE":
        inner: str | None = WINDOW_TIME
    elif isinstance(source, exp.Subquery):
        inner = window_rowtime(source.this)
    else:
        return None
    for projection in query.selects if inner else []:
        if isinstance(projection, exp.Star) or (isinstance(projection, exp.Column)
                                                and projection.is_star):
            return inner
        column = projection.unalias()
        if isinstance(column, (exp.Add, exp.Sub)) and isinstance(column.expression, exp.Interval):
            column = column.this  # Flink keeps the time attribute of window_time + INTERVAL
        if isinstance(column, exp.Column) and column.name.lower() == str(inner).lower():
            return projection.alias_or_name
    return None


def rowtime_watermark(records: Any) -> Any:
    """Records with Spark's watermark on their timestamps (``ts``), with no delay."""
    import pyspark.sql.functions as F

    return (records.withColumn("et", F.timestamp_millis(F.col("ts")))
            .withWatermark("et", "0 milliseconds").drop("et"))


def windowed(query: Any) -> bool:
    """True for a query over a window table-valued function (``TABLE(TUMBLE(...))``)."""
    from sqlglot import exp

    return any(isinstance(t.this, exp.Anonymous) and t.this.name.upper() == "TABLE"
               for t in query.find_all(exp.Table))


class TableSources:
    """The ``SOURCE_TABLE`` vertices' frames of one DataStream job (given to ``build_queries``),
    and the :class:`Feeder` of each updating one, for the job to start with its queries.
    ``dependencies``: the job's Python files... (the Table's among them), with which the
    queries' Python functions run."""

    def __init__(self, planner: Any, checkpoint_dir: Path,
                 dependencies: tuple[PythonDependency, ...] = ()) -> None:
        self.planner, self.checkpoint_dir = planner, checkpoint_dir
        self.dependencies = dependencies
        self.feeders: list[OutboxFeed] = []

    def __call__(self, vertex: JobVertex) -> Any:
        config = vertex.operators[0].config
        text = str(config[TABLE_QUERY])
        job = planned(self.planner, text, dict(config[TABLE_CONFIGURATION]), self.dependencies)
        insert = job.inserts[0]
        session = insert.frame.sparkSession
        # the DataStream's keyed operators keep their state as DataStream jobs do (their
        # transformWithStateInPandas needs RocksDB)
        session.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
        names = [f.name for f in insert.result_fields]
        rowtime = str(config.get(TABLE_ROWTIME) or "") or None
        if insert.output_mode == "update" and config.get(TABLE_CONVERSION) != "changelog":
            refuse_updates(text)
        statement = parse_statements(text)[0]
        windows = rowtime is not None and window_aggregation(text) and isinstance(
            statement, Query) and rowtime == window_rowtime(statement.ast)
        if insert.replan is not None:  # a join of an updating query with a stream: its feeds
            insert.frame, feeds = insert.replan(self.checkpoint_dir,
                                                f"table-{vertex.vertex_id}-")
            self.feeders += feeds
        # (a query over a join's changes: the outer query's changes, made per micro-batch)
        if insert.output_mode == "update" or windows or insert.outer is not None:
            key = f"table-{vertex.vertex_id}"
            feeder = Feeder(key, insert, names, rowtime, self.checkpoint_dir / key)
            self.feeders.append(feeder)
            records = feeder.reader(session, RECORD_SCHEMA)
            return rowtime_watermark(records) if windows else records
        return insert.frame.mapInArrow(TableRecords(names, rowtime, insert.row_kinds),
                                       RECORD_SCHEMA)


def record_columns(changes: Iterable[tuple[str, Sequence[Any]]], names: list[str],
                   rowtime: str | None) -> dict[str, list[Any]]:
    """A Table's changes ``(row kind, values)`` as the columns of ``RECORD_SCHEMA``: each a
    pickled ``Row`` of the column names with its RowKind, stamped with its rowtime (epoch ms)."""
    index = names.index(rowtime) if rowtime in names else None
    columns: dict[str, list[Any]] = {"out": [], "k": [], "ts": [], "v": []}
    for kind, values in changes:
        columns["out"].append(0)
        columns["k"].append(None)
        columns["ts"].append(None if index is None else rowtime_millis(values[index]))
        columns["v"].append(pickle.dumps(row_record(values, names, kind), protocol=5))
    return columns


def record_batch(columns: dict[str, list[Any]]) -> Any:
    """The columns of :func:`record_columns` as an Arrow RecordBatch of ``RECORD_SCHEMA``."""
    import pyarrow as pa

    types = {"out": pa.int32(), "k": pa.binary(), "ts": pa.int64(), "v": pa.binary()}
    return pa.RecordBatch.from_arrays([pa.array(columns[n], type=t) for n, t in types.items()],
                                      names=list(types))


class TableRecords:
    """``mapInArrow`` of an insert-only (or RowKind-carrying) query's rows into records."""

    def __init__(self, names: list[str], rowtime: str | None, row_kinds: bool) -> None:
        self.names, self.rowtime, self.row_kinds = names, rowtime, row_kinds

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        width = len(self.names)
        for batch in batches:
            columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
            rows = list(zip(*columns)) if columns else []
            changes = ((str(r[width]) if self.row_kinds else "+I", r[:width]) for r in rows)
            yield record_batch(record_columns(changes, self.names, self.rowtime))


class Feeder(OutboxFeed):
    """The feed of an updating Table's changelog (``+I``, ``-U``, ``+U``, ``-D``, from the rows
    Spark's ``update`` mode gives and the rows emitted before; ``+I`` of the windows an
    ``append`` window aggregation closed) as records, which the DataStream's query reads."""

    def __init__(self, key: str, insert: StreamingInsert, names: list[str],
                 rowtime: str | None, directory: Path) -> None:
        super().__init__(key, insert.frame, insert.output_mode, directory)
        self.insert, self.names, self.rowtime = insert, names, rowtime

    def changes_table(self, df: Any, batch_id: int) -> Any:
        import pyarrow as pa

        changes = batch_changelog(self.insert, df, batch_id, self.state_dir)
        if not changes:
            return None
        changes = [(kind, tuple(pyflink_value(v) for v in row)) for kind, row in changes]
        return pa.Table.from_batches([record_batch(record_columns(changes, self.names,
                                                                  self.rowtime))])

