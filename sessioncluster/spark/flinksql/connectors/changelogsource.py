"""A ``filesystem`` table of a changelog JSON format (:mod:`.changelogjson`) read in STREAMING
mode: Flink's changelog source, its records in the order of its files and lines (``+I``,
``-U``/``+U`` of an update, ``-D``), applied as Flink applies them (an aggregation over them
retracts, as Flink's ``SUM_RETRACT``; recorded in /work/briefs/data/lead30/cdcjson_probe.out).

A bounded table's records become a changelog table as a bounded ``from_changelog_stream``'s do:
a temporary view whose rows carry their position and RowKind (``api.table.changelog_mode``),
which the planner of bounded STREAMING queries reads record by record. A monitored table is an
unbounded changelog table as an unbounded ``from_changelog_stream``'s is (:mod:`..streamchangelog`):
read by a changelog table's name (:func:`stream_name`), its file stream's records carry their
RowKind and position. :func:`changelog_sources` puts either in the place of each such table a
query reads.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

from sqlglot import exp

from ....api.table.changelog_mode import (
    CHANGELOG_VIEW_PREFIX,
    ROW_KIND_COLUMN,
    SEQ_COLUMN,
    SUB_COLUMN,
)
from ....api.table.typeparser import parse_type
from ..dialect import cte_names
from ..model import DEFAULT_PATH, CatalogTable, FlinkSqlError
from .changelogjson import file_records, is_changelog_table
from .filesystem import file_signature, list_files
from .formats import file_row_type, json_row_decoder


def _monitored(table: CatalogTable) -> bool:
    return "source.monitor-interval" in table.options


def stream_name(name: str) -> str:
    """The name a query reads a monitored changelog-format table by (a changelog table's
    name, as the planner tells them: :func:`..boundedchangelog.is_changelog_table`)."""
    return f"{CHANGELOG_VIEW_PREFIX}t_{name.lower()}"


def with_changelog_streams(tables: dict[str, CatalogTable]) -> dict[str, CatalogTable]:
    """``tables`` and, for each monitored changelog-format table, the same table under its
    :func:`stream_name`: the source of a changelog stream, its records' RowKind and position
    after its columns (``filesystem.read_filesystem``)."""
    streams = {stream_name(k): dataclasses.replace(t, name=stream_name(k))
               for k, t in tables.items() if is_changelog_table(t) and _monitored(t)}
    return {**tables, **streams} if streams else tables


def changelog_sources(spark: Any, query: Any, tables: dict[str, CatalogTable]) -> Any:
    """``query`` reading, in place of each changelog-format table it reads, that table's
    changelog: a bounded one's view (:func:`changelog_view`), a monitored one by its
    :func:`stream_name` (:func:`with_changelog_streams`); ``query`` itself when it reads none."""
    ctes = {n.lower() for n in cte_names(query)}

    def changelog_table(node: exp.Table) -> CatalogTable | None:
        table = tables.get(node.name.lower()) if isinstance(node.this, exp.Identifier) \
            and not node.args.get("db") and node.name.lower() not in ctes else None
        return table if table is not None and is_changelog_table(table) else None

    if not any(changelog_table(t) for t in query.find_all(exp.Table)):
        return query
    query = query.copy()
    for node in list(query.find_all(exp.Table)):
        table = changelog_table(node)
        if table is None:
            continue
        _check_columns(table)
        if node.args.get("alias") is None:
            node.set("alias", exp.TableAlias(this=exp.to_identifier(node.name)))
        name = stream_name(node.name) if _monitored(table) else changelog_view(spark, table)
        node.set("this", exp.to_identifier(name))
    return query


def _check_columns(table: CatalogTable) -> None:
    if table.partition_keys or any(not c.is_physical for c in table.columns) \
            or table.watermark is not None:
        raise FlinkSqlError(
            f"A partitioned table, or one with computed columns or a watermark, of a changelog "
            f"format ('{DEFAULT_PATH}.{table.name}', format '{table.options['format']}') is not "
            "supported by sessioncluster yet: it reads a changelog format's physical columns")


def changelog_view(spark: Any, table: CatalogTable) -> str:
    """The name of a temporary view of the table's records (its physical columns, then their
    position and RowKind), made anew when its files changed."""
    fields = [(c.name, parse_type(c.type or "")) for c in table.physical_columns]
    key = repr((table.name, sorted(table.options.items()), fields, file_signature(table)))
    name = f"{CHANGELOG_VIEW_PREFIX}{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    if spark.catalog.tableExists(name):
        return name
    fmt, options = table.options["format"], table.options
    row = json_row_decoder(file_row_type(fields))
    ignore = options.get(f"{fmt}.ignore-parse-errors", "false").lower() == "true"
    records = [(*values, seq, 0, kind) for seq, (kind, values) in enumerate(
        r for path in list_files(options["path"], options.get("source.path.regex-pattern"))
        for r in file_records(path, fmt, row, ignore))]
    ddl = ", ".join([f"`{n}` {t.spark_ddl()}" for n, t in fields]
                    + [f"`{SEQ_COLUMN}` BIGINT", f"`{SUB_COLUMN}` BIGINT",
                       f"`{ROW_KIND_COLUMN}` STRING"])
    spark.createDataFrame(records, ddl).createOrReplaceTempView(name)
    return name
