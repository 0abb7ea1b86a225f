"""The table of an unbounded DataStream (``StreamTableEnvironment.from_data_stream``): the
DataStream's JobGraph, sent with the table's ``CREATE TEMPORARY TABLE``, planned by the planner
of DataStream jobs (``spark/streaming.py``) into the streaming DataFrame of its records
(``RECORD_SCHEMA``), whose records become the table's columns in one ``mapInArrow``. A query of
the table is then one Structured Streaming query: the DataStream's operators and the SQL on top,
pipelined as Flink runs them in one job. The table of a changelog DataStream
(``from_changelog_stream``) has each record's RowKind and its position too, as a bounded
changelog table has (:mod:`~sessioncluster.api.table.changelog_mode`), which its queries apply
(:mod:`..streamchangelog`).

The JobManager unpickles no user code here: the JobGraph comes through the protocol's restricted
unpickler (graph dataclasses and builtins only); the records are unpickled in the workers.
"""

from __future__ import annotations

import hashlib
import io
import tempfile
from pathlib import Path
from typing import Any, Iterator

from ....api.table.changelog_mode import ROW_KIND_COLUMN, SEQ_COLUMN, SUB_COLUMN
from ....api.table.conversion import (
    CHANGELOG_OPTION,
    CHANGELOG_UPSERT,
    ROWTIME_OPTION,
    changelog_record_values,
    record_values,
)
from ....api.table.typeparser import parse_type
from ....protocol.messages import SubmitJob
from ....protocol.wire import RestrictedUnpickler
from ....streaming.runtime import is_keyed_head
from ...streaming import ROCKSDB_PROVIDER, TIMER_OPERATORS, build_queries, timestamped_input
from ..model import CatalogTable, FlinkSqlError

#: the column of each record's timestamp (epoch ms) between the records and the rowtime
_TS = "__datastream_ts"


def read_datastream(spark: Any, table: CatalogTable, streaming: bool) -> Any:
    """The table's physical columns: in STREAMING, the DataStream's records as they come; in
    BATCH, a frame of the same columns that fails when read (planning a query works, e.g. its
    schema; running it names the cause)."""
    import pyspark.sql.functions as F
    from pyspark.sql.types import DataType

    rowtime = table.options.get(ROWTIME_OPTION)
    columns = [c for c in table.physical_columns if c.name != rowtime]
    ddl = ", ".join(f"`{c.name.replace('`', '``')}` {parse_type(c.type or '').spark_ddl()}"
                    for c in columns)
    if not streaming:
        return _unreadable(spark, table, ddl, rowtime)
    submission = _submission(table)
    graph, blobs = submission.job_graph, submission.blobs
    if table.watermark is not None:
        _hand_over_watermark(table, graph)
    # the DataStream's keyed operators keep their state as the DataStream jobs' do (their
    # transformWithStateInPandas needs RocksDB)
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
    job_id = submission.job_id or hashlib.sha256(table.payload).hexdigest()[:32]
    # made only by a bounded source of the stream (a collection's one Parquet file)
    inputs = Path(tempfile.gettempdir()) / f"sessioncluster-datastream-{job_id}"
    queries = build_queries(spark, job_id, graph, lambda keys: {k: blobs[k] for k in keys},
                            inputs)
    records = queries[0].frame
    changelog = bool(table.options.get(CHANGELOG_OPTION))
    # an upsert changelog's records come numbered from its normalize (UpsertNormalize)
    numbered = table.options.get(CHANGELOG_OPTION) == CHANGELOG_UPSERT
    extra = f"`{_TS}` BIGINT" + (
        f", `{ROW_KIND_COLUMN}` STRING, `{SEQ_COLUMN}` BIGINT, `{SUB_COLUMN}` BIGINT"
        if changelog else "")
    schema = DataType.fromDDL(f"{ddl}, {extra}" if ddl else extra)
    frame = records.mapInArrow(RecordColumns(len(columns), schema, changelog, numbered), schema)
    if rowtime is not None:
        frame = frame.withColumn(rowtime, F.timestamp_millis(F.col(_TS)))
    return frame.drop(_TS)


def _hand_over_watermark(table: CatalogTable, graph: Any) -> None:
    """The table's watermark (``SOURCE_WATERMARK()``: the DataStream's, on its rowtime) is the
    query's only one: Spark refuses a watermark over another ("Redefining watermark is
    disallowed"), so the DataStream's strategies only stamp the records here. An event-time
    operator of the DataStream would need its own watermark: refused, naming it."""
    for v in graph.vertices:
        head = v.operators[0]
        if is_keyed_head(v) and head.config.get("operator_class") in TIMER_OPERATORS \
                and timestamped_input(v, graph):
            raise FlinkSqlError(
                f"the DataStream of table '{table.name}' has the event-time operator "
                f"'{head.name}' and the table a watermark: Spark keeps one watermark per "
                "query (no watermark over another); convert the stream to a table before "
                "its event-time windows and timers, or declare no watermark in the Schema")
    for v in graph.vertices:
        for op in v.operators:
            op.config.pop("watermark_delay_ms", None)
            op.config.pop("watermark_idleness_ms", None)


def _submission(table: CatalogTable) -> SubmitJob:
    try:
        submission = RestrictedUnpickler(io.BytesIO(table.payload)).load()
    except Exception as exc:  # noqa: BLE001 - any unreadable payload is the same error
        raise FlinkSqlError(f"the DataStream of table '{table.name}' is unreadable: {exc}") \
            from exc
    if not isinstance(submission, SubmitJob):
        raise FlinkSqlError(f"the DataStream of table '{table.name}' is unreadable")
    if sum(1 for v in submission.job_graph.vertices if v.is_sink) != 1:
        raise FlinkSqlError(f"the DataStream of table '{table.name}' needs one sink")
    return submission


def _unreadable(spark: Any, table: CatalogTable, ddl: str, rowtime: str | None) -> Any:
    """One row whose every column fails when computed: a BATCH query can be planned (its
    ``LIMIT 0`` schema is never computed), not run."""
    import pyspark.sql.functions as F

    message = (f"the table '{table.name}' is an unbounded DataStream: query it in STREAMING "
               "mode (EnvironmentSettings.in_streaming_mode())")
    empty = spark.createDataFrame([], ddl) if ddl else spark.range(0).select()
    cols = [F.raise_error(F.lit(message)).cast(f.dataType).alias(f.name)
            for f in empty.schema.fields]
    if rowtime is not None:
        cols.append(F.raise_error(F.lit(message)).cast("timestamp").alias(rowtime))
    return spark.range(1).select(*cols)


class RecordColumns:
    """``mapInArrow`` of a DataStream's records (``RECORD_SCHEMA``) into the table's columns
    (``schema``: the ``width`` physical columns, then the record's timestamp and, for a
    ``changelog``, its RowKind and its position and sub-position: increasing in the order the
    records come within a partition, sub-position 0; when ``numbered``, the record's own two
    last fields, its number in the order the records came before a normalize regrouped them
    and its place among that record's changes)."""

    def __init__(self, width: int, schema: Any, changelog: bool = False,
                 numbered: bool = False) -> None:
        self.width, self.schema, self.changelog = width, schema, changelog
        self.numbered = numbered

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pickle
        import time

        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        arrow = to_arrow_schema(self.schema, timezone="UTC")
        names = arrow.names
        position = time.time_ns()  # Spark's monotonically_increasing_id is no streaming one
        for batch in batches:
            data = batch.to_pydict()
            columns: list[list[Any]] = [[] for _ in names]
            for v, ts in zip(data["v"], data["ts"]):
                if v is None:  # not a record (a control record of a watermark)
                    continue
                record = pickle.loads(v)
                if self.numbered:
                    values, kind = changelog_record_values(record, self.width + 2)
                    values = (*values[:-2], ts, kind, *values[-2:])
                elif self.changelog:
                    values, kind = changelog_record_values(record, self.width)
                    values, position = (*values, ts, kind, position, 0), position + 1
                else:
                    values = (*record_values(record, self.width), ts)
                for column, value in zip(columns, values):
                    column.append(value)
            yield pa.RecordBatch.from_arrays(
                [pa.array(c, type=t) for c, t in zip(columns, arrow.types)], schema=arrow)
