"""CREATE TABLE ... AS SELECT and [CREATE OR] REPLACE TABLE ... AS SELECT against Flink 2.3's
recorded answers (``/work/briefs/data/ctas/probe_ctas*.py`` and their ``.out``): the statement
read, the table's schema derived from the query's Flink columns, the INSERT job into it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sessioncluster.jobmanager.catalog_log import live_entries, replay
from sessioncluster.protocol.messages import ExecuteSql
from sessioncluster.spark.flinksql.ctas import (
    CREATE_OR_REPLACE,
    RECOVERED,
    REPLACE,
    CreateTableAs,
    derived_table,
)
from sessioncluster.spark.flinksql.executor import FlinkSqlPlanner
from sessioncluster.spark.flinksql.model import FlinkSqlError
from sessioncluster.spark.flinksql.statements import parse_statement

BLACKHOLE = "WITH ('connector'='blackhole')"
VALUES = "CREATE TEMPORARY VIEW v AS SELECT * FROM (VALUES ('a', 1), ('b', 2), ('a', 3)) AS x(word, k)"
#: the query columns Flink types ``SELECT word, k FROM v`` with
WORD_K = [("word", "CHAR(1) NOT NULL"), ("k", "INT NOT NULL")]


def ctas(text: str) -> CreateTableAs:
    statement = parse_statement(text)
    assert isinstance(statement, CreateTableAs)
    return statement


def test_ctas_and_rtas_are_read_with_their_heads() -> None:
    plain = ctas(f"CREATE TABLE t {BLACKHOLE} AS SELECT word FROM v")
    assert (plain.table.name, plain.table.options, plain.replace, plain.if_not_exists) == (
        "t", {"connector": "blackhole"}, "", False)
    head = ctas("CREATE TABLE IF NOT EXISTS t (x INT, c AS k + 1, PRIMARY KEY (word) NOT "
                "ENFORCED, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) COMMENT 'hi' "
                f"PARTITIONED BY (word) {BLACKHOLE} AS SELECT word, k, ts FROM v")
    assert [(c.name, c.type, c.expression) for c in head.table.columns] == [
        ("x", "INT", None), ("c", None, "k + 1")]
    assert (head.table.primary_key, head.table.partition_keys, head.table.comment,
            head.table.watermark.rowtime if head.table.watermark else None,
            head.if_not_exists) == (["word"], ["word"], "hi", "ts", True)
    assert ctas(f"CREATE TABLE t (k, word) {BLACKHOLE} AS SELECT word, k FROM v").order == [
        "k", "word"]
    assert ctas(f"CREATE OR REPLACE TABLE t {BLACKHOLE} AS SELECT 1").replace == \
        CREATE_OR_REPLACE
    assert ctas(f"REPLACE TABLE t {BLACKHOLE} AS SELECT 1").replace == REPLACE


@pytest.mark.parametrize("text, message", [
    (f"CREATE TEMPORARY TABLE t {BLACKHOLE} AS SELECT 1",
     "CREATE TABLE AS SELECT syntax does not support to create temporary table yet."),
    (f"CREATE OR REPLACE TABLE IF NOT EXISTS t {BLACKHOLE} AS SELECT 1",
     "CREATE OR REPLACE TABLE AS SELECT syntax does not support IF NOT EXISTS statements yet."),
])
def test_flinks_refusals_of_the_statement(text: str, message: str) -> None:
    with pytest.raises(FlinkSqlError, match="^" + message.replace("(", r"\(")):
        parse_statement(text)


def test_declared_columns_the_query_has_not_come_first() -> None:
    # probe_ctas2.out: (k BIGINT, extra STRING) AS SELECT word, k -> extra, word, k BIGINT
    typed = derived_table(ctas(f"CREATE TABLE t3 (k BIGINT, extra STRING) {BLACKHOLE} AS "
                               "SELECT word, k FROM v"), WORD_K)
    assert [(c.name, c.type) for c in typed.columns] == [
        ("extra", "STRING"), ("word", "CHAR(1) NOT NULL"), ("k", "BIGINT")]
    computed = derived_table(ctas(f"CREATE TABLE t7 (c AS k + 1) {BLACKHOLE} AS "
                                  "SELECT word, k FROM v"), WORD_K)
    assert [(c.name, c.expression) for c in computed.columns] == [
        ("c", "k + 1"), ("word", None), ("k", None)]
    ordered = derived_table(ctas(f"CREATE TABLE t3b (k, word) {BLACKHOLE} AS "
                                 "SELECT word, k FROM v"), WORD_K)
    assert [(c.name, c.type) for c in ordered.columns] == [
        ("k", "INT NOT NULL"), ("word", "CHAR(1) NOT NULL")]


@pytest.mark.parametrize("head, columns, message", [
    ("(k)", WORD_K, "The number of columns in the column list must match the number of "
                    "columns in the source schema."),
    ("(k, word, zz)", WORD_K, "The number of columns in the column list must match"),
    ("(k, zz)", WORD_K, "Column 'zz' not found in the source schema."),
    ("(PRIMARY KEY (zz) NOT ENFORCED)", WORD_K,
     "Primary key column 'zz' is not defined in the schema"),
    ("(PRIMARY KEY (s) NOT ENFORCED)", [("word", "CHAR(1) NOT NULL"), ("s", "STRING")],
     "Invalid primary key 'PK_s'. Column 's' is nullable."),
])
def test_flinks_refusals_of_the_derived_schema(head: str, columns: list[tuple[str, str]],
                                               message: str) -> None:
    statement = ctas(f"CREATE TABLE t {head} {BLACKHOLE} AS SELECT word, k FROM v")
    with pytest.raises(FlinkSqlError, match="^" + message.replace("(", r"\(")):
        derived_table(statement, columns)


@pytest.fixture
def planner(local_spark: Any) -> FlinkSqlPlanner:
    p = FlinkSqlPlanner(local_spark)
    p.plan(VALUES)
    return p


def show_create(planner: FlinkSqlPlanner, name: str) -> str:
    return planner.plan(f"SHOW CREATE TABLE {name}").rows[0][0]


def csv_lines(path: Path) -> list[str]:
    return sorted(line for f in path.rglob("*") if f.is_file() and not f.name.startswith((".", "_"))
                  for line in f.read_text().splitlines())


def test_batch_ctas_creates_the_table_then_runs_its_insert(planner, tmp_path: Path) -> None:
    sink = tmp_path / "t"
    outcome = planner.plan(f"CREATE TABLE t WITH ('connector'='filesystem','path'='{sink}',"
                           "'format'='csv') AS SELECT word, COUNT(*) AS n FROM v GROUP BY word")
    # Flink's TableResult: the INSERT's, one BIGINT column named by the sink, row -1
    assert (outcome.columns, outcome.column_types, outcome.changes_catalog) == (
        ["default_catalog.default_database.t"], ["BIGINT"], True)
    assert outcome.job is not None
    assert outcome.job.name == "insert-into_default_catalog.default_database.t"
    # probe_ctas.out, BATCH: the schema exists before the job runs
    assert show_create(planner, "t") == (
        "CREATE TABLE `default_catalog`.`default_database`.`t` (\n  `word` CHAR(1) NOT NULL,\n"
        "  `n` BIGINT NOT NULL\n)\nWITH (\n  'connector' = 'filesystem',\n  'format' = 'csv',\n"
        f"  'path' = '{sink}'\n)\n")
    assert [tuple(r) for r in outcome.job.run().collect()] == [(-1,)]
    assert planner.plan("DESCRIBE t").rows == [
        ("word", "CHAR(1)", False, None, None, None), ("n", "BIGINT", False, None, None, None)]
    assert csv_lines(sink) == ["a,2", "b,1"]  # probe_ctas2.out's file: 'a,2\nb,1\n'


def test_head_keys_and_partitions_are_flinks(planner, tmp_path: Path) -> None:
    planner.plan(f"CREATE TABLE t4 (PRIMARY KEY (word) NOT ENFORCED) {BLACKHOLE} AS "
                 "SELECT word, k FROM v")
    assert show_create(planner, "t4") == (
        "CREATE TABLE `default_catalog`.`default_database`.`t4` (\n  `word` CHAR(1) NOT NULL,\n"
        "  `k` INT NOT NULL,\n  CONSTRAINT `PK_word` PRIMARY KEY (`word`) NOT ENFORCED\n)\n"
        "WITH (\n  'connector' = 'blackhole'\n)\n")
    planner.plan(f"CREATE TABLE t5 (WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) {BLACKHOLE} "
                 "AS SELECT word, CAST(TIMESTAMP '2024-01-01 00:00:00' AS TIMESTAMP(3)) AS ts "
                 "FROM v")
    assert "  `ts` TIMESTAMP(3) NOT NULL,\n  WATERMARK FOR `ts` AS `ts` - INTERVAL '1' SECOND\n" \
        in show_create(planner, "t5")
    planner.plan(f"CREATE TABLE bh {BLACKHOLE} AS SELECT word, COUNT(*) AS n, SUM(k) AS s, "
                 "MAX(k) AS mx, CAST(NULL AS STRING) AS z FROM v GROUP BY word")
    assert "`n` BIGINT NOT NULL,\n  `s` INT NOT NULL,\n  `mx` INT NOT NULL,\n" \
        "  `z` VARCHAR(2147483647)\n" in show_create(planner, "bh")
    sink = tmp_path / "t6"
    planner.plan(f"CREATE TABLE t6 PARTITIONED BY (word) WITH ('connector'='filesystem',"
                 f"'path'='{sink}','format'='csv') AS SELECT k, word FROM v").job.run()
    assert "\n)\nPARTITIONED BY (`word`)\nWITH (" in show_create(planner, "t6")
    assert sorted(tuple(r) for r in planner.plan("SELECT * FROM t6").job.run().collect()) == [
        (1, "a"), (2, "b"), (3, "a")]


def test_if_not_exists_still_inserts_and_rtas_replaces(planner, tmp_path: Path) -> None:
    sink = tmp_path / "t2"
    fs = f"WITH ('connector'='filesystem','path'='{sink}','format'='csv')"
    planner.plan(f"CREATE TABLE t2 {fs} AS SELECT word, k FROM v WHERE k > 1").job.run()
    again = planner.plan(f"CREATE TABLE IF NOT EXISTS t2 {fs} AS SELECT word, k * 10 FROM v")
    again.job.run()  # Flink runs it into the existing table, by position
    assert csv_lines(sink) == ["a,10", "a,3", "a,30", "b,2", "b,20"]
    with pytest.raises(FlinkSqlError, match="Could not execute CreateTable in path "
                                            "`default_catalog`.`default_database`.`t2`"):
        planner.plan(f"CREATE TABLE t2 {fs} AS SELECT word FROM v")
    planner.plan(f"CREATE OR REPLACE TABLE t2 {BLACKHOLE} AS SELECT word, k + 10 AS k FROM v")
    assert "`k` INT NOT NULL\n)\nWITH (\n  'connector' = 'blackhole'" in show_create(planner, "t2")
    planner.plan(f"REPLACE TABLE t2 {BLACKHOLE} AS SELECT word FROM v")
    assert "(\n  `word` CHAR(1) NOT NULL\n)" in show_create(planner, "t2")
    with pytest.raises(FlinkSqlError, match="^The table `default_catalog`.`default_database`."
                                            "`missing` to be replaced doesn't exist. You can "
                                            "try to use CREATE TABLE AS statement or CREATE OR "
                                            "REPLACE TABLE AS statement.$"):
        planner.plan(f"REPLACE TABLE missing {BLACKHOLE} AS SELECT word FROM v")


def test_a_recovered_ctas_inserts_into_the_table_the_log_made(planner) -> None:
    text = f"CREATE TABLE r {BLACKHOLE} AS SELECT word, k FROM v"
    planner.plan(text)  # the catalog log's replay
    recovered = planner.plan(text, configuration={RECOVERED: "true"})
    assert recovered.job is not None and not recovered.changes_catalog


def test_streaming_ctas_plans_its_insert_and_refuses_an_updating_one(planner,
                                                                      tmp_path: Path) -> None:
    append = planner.plan(f"CREATE TABLE s2 WITH ('connector'='filesystem','path'="
                          f"'{tmp_path / 's2'}','format'='csv') AS SELECT word, k FROM v "
                          "WHERE k > 1", "STREAMING")
    assert append.job is not None and append.changes_catalog
    assert "(\n  `word` CHAR(1) NOT NULL,\n  `k` INT NOT NULL\n)" in show_create(planner, "s2")
    # probe_ctas.out, STREAMING: Flink's message, and the table stays in the catalog
    with pytest.raises(FlinkSqlError, match="^Table sink 'default_catalog.default_database.s1' "
                                            "doesn't support consuming update changes"):
        planner.plan(f"CREATE TABLE s1 WITH ('connector'='filesystem','path'="
                     f"'{tmp_path / 's1'}','format'='csv') AS SELECT word, COUNT(*) AS n "
                     "FROM v GROUP BY word", "STREAMING")
    assert "`n` BIGINT NOT NULL" in show_create(planner, "s1")


def test_the_catalog_log_keeps_the_last_ctas_or_rtas_of_a_table() -> None:
    texts = [f"CREATE TABLE t {BLACKHOLE} AS SELECT 1 AS a",
             f"CREATE TABLE IF NOT EXISTS t {BLACKHOLE} AS SELECT 2 AS a",
             f"CREATE OR REPLACE TABLE t {BLACKHOLE} AS SELECT 3 AS a",
             f"CREATE TABLE u {BLACKHOLE} AS SELECT 4 AS a", "DROP TABLE u"]
    entries = [(b"", ExecuteSql(query=q, dialect="flink")) for q in texts]
    assert [m.query for _, m in live_entries(entries)] == [texts[2]]


def test_a_ctas_table_survives_a_failover(local_spark: Any, tmp_path: Path) -> None:
    """HA: the statements that changed the catalog (the CTAS and RTAS among them) planned again
    by a new leader's planner make the same table."""
    leader = FlinkSqlPlanner(local_spark)
    logged = []
    for text in (VALUES,
                 f"CREATE TABLE h WITH ('connector'='filesystem','path'='{tmp_path / 'h'}',"
                 "'format'='csv') AS SELECT word, COUNT(*) AS n FROM v GROUP BY word",
                 f"CREATE OR REPLACE TABLE h (PRIMARY KEY (word) NOT ENFORCED) {BLACKHOLE} AS "
                 "SELECT word, MAX(k) AS k FROM v GROUP BY word",
                 f"CREATE TABLE g {BLACKHOLE} AS SELECT k FROM v"):
        msg = ExecuteSql(text, dialect="flink")
        if leader.plan(msg.query).changes_catalog:
            logged.append(msg)
    assert len(logged) == 4
    successor = FlinkSqlPlanner(local_spark)
    entries = live_entries([(b"", m) for m in logged])
    assert len(entries) == 3  # the RTAS replaced the CTAS of h
    assert replay([m for _, m in entries], lambda m: successor.plan(
        m.query, m.runtime_mode, m.configuration)) == 0
    for name in ("h", "g"):
        assert show_create(successor, name) == show_create(leader, name)
    assert "CONSTRAINT `PK_word` PRIMARY KEY (`word`)" in show_create(successor, "h")


def test_explain_of_a_ctas_is_its_inserts_and_makes_no_table(planner) -> None:
    text = planner.plan(f"EXPLAIN CREATE TABLE ex {BLACKHOLE} AS SELECT word FROM v").rows[0][0]
    # probe_ctas.out: Flink's sink lines of the same statement
    assert "== Abstract Syntax Tree ==\nLogicalSink(table=[default_catalog.default_database.ex]" \
        ", fields=[word])\n+- LogicalProject(word=[$0])\n" in text
    assert "== Optimized Physical Plan ==\nSink(table=[default_catalog.default_database.ex], " \
        "fields=[word])\n" in text
    assert planner.plan("SHOW TABLES").rows == [("v",)]


def test_a_ctas_without_a_connector_fails_with_flinks_cause(planner) -> None:
    # probe_ctas.out: "... Caused by: ... Table options do not contain an option key
    # 'connector' for discovering a connector." (the CREATE TABLE checks it here)
    with pytest.raises(FlinkSqlError, match="Table options do not contain an option key "
                                            "'connector' for discovering a connector"):
        planner.plan("CREATE TABLE nc AS SELECT word FROM v")
