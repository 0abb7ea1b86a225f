"""The Spark views a BATCH query reads a catalog table through, made again only when the table
or its source changed.

Making a table's view costs a statement about 100-250 ms of Py4J calls (the files' DataFrame,
the types' metadata, the view), more than the rest of its planning; a query reads the same
files again and again. So a view is kept with the table's definition and its
:func:`~.connectors.source_signature` (a ``filesystem`` table's files, sizes and modification
times) and made anew only when either differs: a file added, removed or rewritten since is read
as Flink's bounded source would read it, at the query's start.
"""

from __future__ import annotations

import copy
from typing import Any, Hashable

from . import connectors
from .model import CatalogTable
from .planner import to_spark_sql
from .statements import Query, parse_statements

#: Spark column metadata holding a column's declared Flink SQL type where Spark's type loses
#: what Flink prints (a timestamp's precision); Spark keeps it through column references
FLINK_TYPE = "flink.type"


class SourceViews:
    """The hidden Spark views of the catalog tables, on one SparkSession (the planner's lock
    serialises the calls)."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        #: Spark view name -> the table it was made for, and its source's signature then
        self._made: dict[str, tuple[CatalogTable, Hashable]] = {}

    def register(self, table: CatalogTable, spark_name: str) -> str:
        """Make ``spark_name`` the Spark view of ``table`` (over its connector, computed columns
        and all), unless it is already, for the same definition and source; ``spark_name``."""
        signature = connectors.source_signature(table)
        made = self._made.pop(spark_name, None)
        if signature is not None and made == (table, signature):
            self._made[spark_name] = made
            return spark_name
        self._make(table, spark_name)
        if signature is not None:
            self._made[spark_name] = (copy.deepcopy(table), signature)
        return spark_name

    def drop(self, spark_name: str) -> None:
        """Drop the Spark temporary view ``spark_name`` (one of these, or a client's)."""
        self._made.pop(spark_name, None)
        self.spark.catalog.dropTempView(spark_name)

    def _make(self, table: CatalogTable, spark_name: str) -> None:
        frame = with_flink_types(connectors.read_table(self.spark, table, streaming=False), table)
        if all(c.is_physical for c in table.columns):
            frame.createOrReplaceTempView(spark_name)
            return
        physical = f"{spark_name}__physical"
        frame.createOrReplaceTempView(physical)
        select = ", ".join(f"`{c.name}`" if c.is_physical else f"{c.expression} AS `{c.name}`"
                           for c in table.columns)
        query = parse_statements(f"SELECT {select} FROM `{physical}`")[0]
        assert isinstance(query, Query)
        self.spark.sql(to_spark_sql(query.ast, {})).createOrReplaceTempView(spark_name)


def with_flink_types(frame: Any, table: CatalogTable) -> Any:
    """``frame`` (a table's physical columns) with each declared timestamp type in the column's
    metadata, so that a query reading it answers ``TIMESTAMP(3)`` as Flink does, not Spark's
    microsecond ``TIMESTAMP(6)``."""
    for c in table.physical_columns:
        if c.type and c.type.upper().startswith("TIMESTAMP") and "(" in c.type:
            frame = frame.withMetadata(c.name, {FLINK_TYPE: c.type.upper()})
    return frame
