"""The SparkSession of a streaming statement: a view of each catalog table it reads (a
streaming one over an unbounded source, its watermark as ``withWatermark``), the client's
views of local data, and the statement's configuration."""

from __future__ import annotations

import uuid
from typing import Any

import sqlglot
from sqlglot import exp

from ...common.sqlscript import MAX_TABLE_RESULT_ROWS
from ..driver import incremental_checkpoints
from . import connectors
from .connectors.changelogjson import streaming_source_refusal
from .dialect import Flink, table_names
from .functions import FunctionCatalog
from .model import CatalogTable, Column, FlinkSqlError, table_named
from .planner import interval_ms, to_spark_sql


def streaming_session(spark: Any, tables: dict[str, CatalogTable], queries: list[Any],
                       configuration: dict[str, str], functions: FunctionCatalog | None
                       ) -> tuple[Any, list[set[str]], bool]:
    """A SparkSession of the statement's own with a view of each catalog table the queries
    read (streaming unless every one is bounded) and the catalog's Python functions; per query
    the tables it reads; bounded. Its shuffles have ``parallelism.default`` partitions
    (default: every slot)."""
    session = spark.newSession()
    if functions is not None:
        functions.register_on(session)
    session.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        incremental_checkpoints(session, configuration)
    except ValueError as exc:
        raise FlinkSqlError(str(exc)) from None
    parallelism = str(configuration.get("parallelism.default") or "").strip()
    if parallelism and (not parallelism.isdigit() or int(parallelism) < 1):
        raise FlinkSqlError(f"parallelism.default must be a positive integer, not "
                            f"'{parallelism}'")
    rows = str(configuration.get(MAX_TABLE_RESULT_ROWS) or "").strip()
    if rows and (not rows.isdigit() or int(rows) < 1):
        raise FlinkSqlError(f"{MAX_TABLE_RESULT_ROWS} must be a positive integer, not '{rows}'")
    session.conf.set("spark.sql.shuffle.partitions",
                     parallelism or str(spark.sparkContext.defaultParallelism))
    read = [{name for name in table_names(q) if name.lower() in tables} for q in queries]
    used = {name.lower(): tables[name.lower()] for names in read for name in names}
    bounded = all(connectors.is_bounded(t) for t in used.values())
    for table in used.values():
        source_frame(session, table, streaming=not bounded).createOrReplaceTempView(table.name)
    for query in queries:
        share_client_views(spark, session, table_names(query) - set(tables))
    return session, read, bounded


def share_client_views(spark: Any, session: Any, names: set[str]) -> None:
    """Make the session's temporary views of local data among ``names`` (a client's pandas
    DataFrame, ``from_elements``, ``from_data_stream``: bounded, read as a static table, as
    Flink reads a bounded source in a streaming job) views of the statement's own session too
    (a new SparkSession has no temporary views of its parent's)."""
    for name in sorted(names):
        if "." in name or not spark.catalog.tableExists(name) \
                or session.catalog.tableExists(name):
            continue
        shared = f"__shared_{uuid.uuid4().hex}"
        spark.table(name).createOrReplaceGlobalTempView(shared)
        session.table(f"global_temp.{shared}").createOrReplaceTempView(name)


def source_frame(spark: Any, table: CatalogTable, streaming: bool) -> Any:
    """The table's rows (its computed columns too) as a DataFrame, a streaming one when
    ``streaming`` and the source is unbounded; its watermark as ``withWatermark``."""
    from pyspark.sql import functions as F

    refused = streaming_source_refusal(table)
    if refused is not None:
        raise FlinkSqlError(refused)
    frame = connectors.read_table(spark, table, streaming=streaming)
    if any(not c.is_physical for c in table.columns):
        physical = f"__physical_{table.name}"
        frame.createOrReplaceTempView(physical)
        select = ", ".join(f"`{c.name}`" if c.is_physical else f"{c.expression} AS `{c.name}`"
                           for c in table.columns)
        tree = sqlglot.parse_one(f"SELECT {select} FROM `{physical}`", read=Flink)
        frame = spark.sql(to_spark_sql(tree, {}))
    delay = watermark_delay_ms(table)
    if delay is not None and frame.isStreaming:
        rowtime = table.watermark.rowtime  # type: ignore[union-attr]
        # Spark's event time is a TIMESTAMP (Flink's TIMESTAMP(3) is Spark's TIMESTAMP_NTZ):
        # the same wall-clock value in the session's UTC
        frame = frame.withColumn(rowtime, F.col(f"`{rowtime}`").cast("timestamp"))
        frame = frame.withWatermark(rowtime, f"{delay} milliseconds")
    return frame


def watermark_delay_ms(table: CatalogTable) -> int | None:
    """The delay of the table's ``WATERMARK FOR ts AS ts [- INTERVAL ...]`` (ms); None
    without a watermark. Another strategy fails, naming it."""
    if table.watermark is None:
        return None
    rowtime, text = table.watermark.rowtime, table.watermark.expression
    tree = sqlglot.parse_one(text, read=Flink)
    if isinstance(tree, exp.Paren):
        tree = tree.this
    if isinstance(tree, exp.Column) and tree.name == rowtime:
        return 0
    if isinstance(tree, exp.Sub) and isinstance(tree.this, exp.Column) \
            and tree.this.name == rowtime:
        return interval_ms(tree.expression)
    raise FlinkSqlError(f"WATERMARK FOR {rowtime} AS {text}: sessioncluster supports the bounded "
                        f"out-of-orderness strategy only: {rowtime} - INTERVAL '...' unit "
                        "(Flink docs: CREATE TABLE / WATERMARK)")



def is_static(schemas: dict[str, CatalogTable], name: str) -> bool:
    """True for a table a streaming query reads as a bounded (static) one: a bounded catalog
    table, or the session's temporary view of local data."""
    table = table_named(schemas, name)
    return table is None or connectors.is_bounded(table)



def add_cte_schemas(session: Any, query: Any, schemas: dict[str, CatalogTable],
                    streaming: bool) -> None:
    """Add the columns of each of the query's common table expressions to ``schemas`` (a
    window TVF over a CTE lists them: the Table API's group windows read ``_window_input``),
    analysed by the statement's session in order (nothing runs)."""
    for with_ in query.find_all(exp.With):
        ctes = list(with_.expressions)
        for i, cte in enumerate(ctes):
            probe = exp.select("*").from_(exp.to_identifier(cte.alias))
            for earlier in ctes[: i + 1]:
                probe = probe.with_(exp.to_identifier(earlier.alias), as_=earlier.this.copy())
            fields = session.sql(to_spark_sql(probe, schemas, streaming=streaming)).schema.fields
            # a TVF needs the names only (Spark's type text stands in for Flink's)
            schemas[cte.alias] = CatalogTable(cte.alias, [Column(f.name, f.dataType.simpleString())
                                                          for f in fields])

