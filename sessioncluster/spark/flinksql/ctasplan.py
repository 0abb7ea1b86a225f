"""A CTAS/RTAS (:mod:`.ctas`) against the session's catalog: the table it makes or replaces,
and the ``INSERT INTO`` that is its job, planned as an INSERT is."""

from __future__ import annotations

from typing import Callable

from ...api.table.result import without_marker
from .catalog import Catalog
from .ctas import REPLACE, CreateTableAs, derived_table
from .model import DEFAULT_CATALOG, DEFAULT_DATABASE, FlinkSqlError
from .statements import CreateTable, Insert


def ctas_insert(statement: CreateTableAs, columns: list[str], types: list[str],
                catalog: Catalog, create: Callable[[CreateTable], object],
                recovered: bool = False) -> Insert:
    """The INSERT of a CTAS whose query has ``columns`` of Flink ``types``, after its table is
    made with ``create`` (the planner's CREATE TABLE); ``recovered``: the job of a CTAS a new
    leader recovers, whose table the catalog log made again."""
    name, key = statement.table.name, statement.table.name.lower()
    exists = key in catalog.tables or key in catalog.views
    if statement.replace == REPLACE and not exists:
        raise FlinkSqlError(f"The table `{DEFAULT_CATALOG}`.`{DEFAULT_DATABASE}`.`{name}` to be "
                            "replaced doesn't exist. You can try to use CREATE TABLE AS "
                            "statement or CREATE OR REPLACE TABLE AS statement.")
    if exists and recovered:
        return Insert(name, statement.query, columns=list(columns))
    if exists and statement.if_not_exists:  # Flink still runs the INSERT, by position
        return Insert(name, statement.query)
    # a time attribute's column is stored as its type; the head's WATERMARK makes one
    table = derived_table(statement, [(c, without_marker(t)) for c, t in zip(columns, types)])
    if statement.replace:
        catalog.tables.pop(key, None)
    create(CreateTable(table))
    return Insert(name, statement.query, columns=list(columns))
