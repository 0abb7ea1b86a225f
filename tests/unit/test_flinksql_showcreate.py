"""SHOW CREATE TABLE / VIEW against PyFlink 2.3's own printout of the same statements."""

from __future__ import annotations

import pytest

from sessioncluster.api.table.typeparser import parse_type
from sessioncluster.spark.flinksql.showcreate import (
    serializable_type,
    show_create_table,
    show_create_view,
)
from sessioncluster.spark.flinksql.statements import CreateTable, CreateView, Use, parse_statements

CREATE_T2 = """CREATE TABLE t2 (
  id BIGINT, name STRING COMMENT 'the name', price DECIMAL(10, 2), qty INT NOT NULL,
  total AS price * qty, pt AS PROCTIME(), ts TIMESTAMP(3), b BOOLEAN, d DOUBLE, dt DATE,
  arr ARRAY<INT>, m MAP<STRING, INT>, r ROW<a INT, b STRING>, bts BYTES, ltz TIMESTAMP_LTZ(3),
  c CHAR(3), v VARCHAR(20),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
  PRIMARY KEY (id) NOT ENFORCED
) COMMENT 'a table' PARTITIONED BY (name)
WITH ('connector' = 'filesystem', 'path' = '/tmp/x', 'format' = 'csv')"""

#: PyFlink 2.3, ``SHOW CREATE TABLE t2`` after CREATE_T2
FLINK_T2 = """CREATE TABLE `default_catalog`.`default_database`.`t2` (
  `id` BIGINT NOT NULL,
  `name` VARCHAR(2147483647) COMMENT 'the name',
  `price` DECIMAL(10, 2),
  `qty` INT NOT NULL,
  `total` AS `price` * `qty`,
  `pt` AS PROCTIME(),
  `ts` TIMESTAMP(3),
  `b` BOOLEAN,
  `d` DOUBLE,
  `dt` DATE,
  `arr` ARRAY<INT>,
  `m` MAP<VARCHAR(2147483647), INT>,
  `r` ROW<`a` INT, `b` VARCHAR(2147483647)>,
  `bts` VARBINARY(2147483647),
  `ltz` TIMESTAMP(3) WITH LOCAL TIME ZONE,
  `c` CHAR(3),
  `v` VARCHAR(20),
  WATERMARK FOR `ts` AS `ts` - INTERVAL '5' SECOND,
  CONSTRAINT `PK_id` PRIMARY KEY (`id`) NOT ENFORCED
)
COMMENT 'a table'
PARTITIONED BY (`name`)
WITH (
  'connector' = 'filesystem',
  'format' = 'csv',
  'path' = '/tmp/x'
)
"""


def _table(text: str) -> CreateTable:
    statement = parse_statements(text)[0]
    assert isinstance(statement, CreateTable)
    return statement


def test_show_create_table_prints_flinks_text() -> None:
    assert show_create_table(_table(CREATE_T2).table) == FLINK_T2


def test_show_create_temporary_table() -> None:
    table = _table("CREATE TEMPORARY TABLE t3 (x INT) WITH ('connector' = 'datagen')").table
    assert show_create_table(table) == (
        "CREATE TEMPORARY TABLE `default_catalog`.`default_database`.`t3` (\n  `x` INT\n)\n"
        "WITH (\n  'connector' = 'datagen'\n)\n")


@pytest.mark.parametrize("text, flink", [
    ("STRING NOT NULL", "VARCHAR(2147483647) NOT NULL"),
    ("ARRAY<BYTES>", "ARRAY<VARBINARY(2147483647)>"),
    ("TIMESTAMP_LTZ(6)", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("DECIMAL(38, 18)", "DECIMAL(38, 18)"),
])
def test_serializable_type(text: str, flink: str) -> None:
    assert serializable_type(parse_type(text)) == flink


def test_show_create_view_lists_its_columns() -> None:
    view = parse_statements("CREATE TEMPORARY VIEW v AS SELECT id, name FROM t2 WHERE qty > 1")[0]
    assert isinstance(view, CreateView)
    assert show_create_view(view.name, True, ["id", "name"], view.query) == (
        "CREATE TEMPORARY VIEW `default_catalog`.`default_database`.`v` (\n  `id`,\n  `name`\n)\n"
        "AS SELECT `id`, `name` FROM `t2` WHERE `qty` > 1\n")


@pytest.mark.parametrize("text, use", [
    ("USE CATALOG default_catalog", Use(catalog="default_catalog")),
    ("USE default_database", Use(database="default_database")),
    ("USE default_catalog.default_database", Use("default_catalog", "default_database")),
])
def test_use_parses(text: str, use: Use) -> None:
    assert parse_statements(text) == [use]
