"""A bounded ``filesystem`` table of a changelog JSON format (:mod:`.changelogjson`) read in
STREAMING mode: Flink's changelog source, its records in the order of its files and lines
(``+I``, ``-U``/``+U`` of an update, ``-D``).

The records become a changelog table as ``from_changelog_stream``'s does: a temporary view whose
rows carry their position and RowKind (``api.table.changelog_mode``), which the planner of
bounded STREAMING queries reads record by record (an aggregation over it retracts, as Flink's
``SUM_RETRACT``; recorded in /work/briefs/data/lead30/cdcjson_probe.out). :func:`changelog_sources`
puts such a view in the place of each such table a query reads. A monitored table (an unbounded
changelog source) is refused by name when it is read (:func:`.changelogjson.streaming_source_refusal`).
"""

from __future__ import annotations

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
from .changelogjson import file_records, is_changelog_format
from .filesystem import file_signature, list_files
from .formats import file_row_type, json_row_decoder


def _reads_changelog(table: CatalogTable) -> bool:
    return table.connector == "filesystem" and is_changelog_format(table.options.get("format", "")) \
        and "source.monitor-interval" not in table.options


def changelog_sources(spark: Any, query: Any, tables: dict[str, CatalogTable]) -> Any:
    """``query`` reading, in place of each bounded changelog-format table it reads, that
    table's changelog view (:func:`changelog_view`); ``query`` itself when it reads none."""
    ctes = {n.lower() for n in cte_names(query)}
    found = [t for t in query.find_all(exp.Table) if isinstance(t.this, exp.Identifier)
             and not t.args.get("db") and t.name.lower() not in ctes
             and t.name.lower() in tables and _reads_changelog(tables[t.name.lower()])]
    if not found:
        return query
    query = query.copy()
    for node in query.find_all(exp.Table):
        table = tables.get(node.name.lower()) if isinstance(node.this, exp.Identifier) \
            and not node.args.get("db") and node.name.lower() not in ctes else None
        if table is None or not _reads_changelog(table):
            continue
        if node.args.get("alias") is None:
            node.set("alias", exp.TableAlias(this=exp.to_identifier(node.name)))
        node.set("this", exp.to_identifier(changelog_view(spark, table)))
    return query


def changelog_view(spark: Any, table: CatalogTable) -> str:
    """The name of a temporary view of the table's records (its physical columns, then their
    position and RowKind), made anew when its files changed."""
    if table.partition_keys or any(not c.is_physical for c in table.columns) \
            or table.watermark is not None:
        raise FlinkSqlError(
            f"A partitioned table, or one with computed columns or a watermark, of a changelog "
            f"format ('{DEFAULT_PATH}.{table.name}', format '{table.options['format']}') is not "
            "supported by sessioncluster yet: it reads a changelog format's physical columns")
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
