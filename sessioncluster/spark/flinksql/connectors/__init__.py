"""Flink's table connectors (``WITH ('connector' = ...)``) on Spark: ``filesystem`` (formats
csv, json, parquet, avro, raw), ``datagen``, ``print`` and ``blackhole``.

For the planner and the executor:

- :func:`validate` a table's options as Flink does (its messages);
- :func:`read_table` a table's physical columns as a DataFrame (streaming or not);
- :func:`write_table` a DataFrame into a table (BATCH ``INSERT INTO`` / ``INSERT OVERWRITE``);
- :func:`print_lines` / :func:`format_row` the lines a ``print`` table shows;
- :func:`sink_is_append_only`, :func:`is_bounded`;
- :func:`source_signature`: when a BATCH read of a table can be reused.
"""

from __future__ import annotations

from typing import Any, Hashable

from ....api.table.conversion import DATASTREAM_CONNECTOR
from ..model import CatalogTable, FlinkSqlError
from .changelogjson import is_changelog_table
from .datagen import read_datagen
from .datastream import read_datastream
from .filesystem import (
    StagedBatch,
    file_signature,
    read_filesystem,
    staged_sink,
    write_filesystem,
)
from .options import CONNECTORS, validate
from .printing import PrintedLines, format_row, print_lines, write_blackhole, write_print

__all__ = ["CONNECTORS", "StagedBatch", "format_row", "is_bounded", "print_lines", "read_table",
           "sink_is_append_only", "source_signature", "staged_sink", "validate", "write_table",
           "is_changelog_table"]


def read_table(spark: Any, table: CatalogTable, streaming: bool) -> Any:
    """The table's PHYSICAL columns, named and typed as declared, as a Spark DataFrame; a
    streaming DataFrame when ``streaming`` and the source is unbounded (``datagen``, a
    ``filesystem`` table with ``source.monitor-interval``). Computed columns and watermarks are
    the planner's."""
    validate(table)
    if table.connector == "filesystem":
        return read_filesystem(spark, table, streaming)
    if table.connector == "datagen":
        return read_datagen(spark, table, streaming)
    if table.connector == DATASTREAM_CONNECTOR:
        return read_datastream(spark, table, streaming)
    raise FlinkSqlError(f"Connector '{table.connector}' can only be used as a sink. It cannot be "
                        f"used as a source. (table '{table.name}')")


def write_table(df: Any, table: CatalogTable, overwrite: bool = False,
                printed: PrintedLines | None = None, staged: StagedBatch | None = None) -> int:
    """Write ``df`` (the table's physical columns, by position) into the table: a
    ``filesystem`` table's part files (committed at the end, or of a STREAMING micro-batch
    left ``staged``; ``overwrite`` replaces the table's, or the written partitions', files), a
    ``print`` table's lines on standard out/err (and into ``printed``, for the client that
    waits for the statement), a ``blackhole`` discarding everything. Returns the number of rows
    written."""
    validate(table)
    if table.connector == "filesystem":
        return write_filesystem(df, table, overwrite, staged)
    if overwrite:
        raise FlinkSqlError(f"INSERT OVERWRITE requires that the underlying DynamicTableSink of "
                            f"table '{table.name}' implements the SupportsOverwrite interface.")
    if table.connector == "print":
        lines = write_print(df, table)
        if printed is not None:
            printed.add(table, lines)
        return len(lines)
    if table.connector == "blackhole":
        return write_blackhole(df)
    raise FlinkSqlError(f"Connector '{table.connector}' can only be used as a source. It cannot "
                        f"be used as a sink. (table '{table.name}')")


def sink_is_append_only(table: CatalogTable) -> bool:
    """True when the table's sink takes inserts only (Flink's ``filesystem`` but of a changelog
    format): an updating query into it fails ("Table sink ... doesn't support consuming update
    changes"); ``print``, ``blackhole`` and a changelog format's files take a whole changelog."""
    return table.connector not in ("print", "blackhole") and not is_changelog_table(table)


def is_bounded(table: CatalogTable) -> bool:
    """True when the table's source ends: a ``filesystem`` table without
    ``source.monitor-interval``, a ``datagen`` one with ``number-of-rows`` or a sequence."""
    if table.connector == "filesystem":
        return "source.monitor-interval" not in table.options
    if table.connector == "datagen":
        return "number-of-rows" in table.options or any(
            v == "sequence" for k, v in table.options.items() if k.endswith(".kind"))
    return table.connector != DATASTREAM_CONNECTOR


def source_signature(table: CatalogTable) -> Hashable | None:
    """What a BATCH read of ``table`` (:func:`read_table`, not streaming) depends on besides
    the table's definition: for a bounded ``filesystem`` table, its files with their sizes and
    modification times (a read made for the same files reads what a new one would). None when
    the read is made anew at each query: another connector, or an unbounded table."""
    if table.connector != "filesystem" or not is_bounded(table):
        return None
    return file_signature(table)
