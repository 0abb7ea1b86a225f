"""Flink SQL statements read by parse_statements: every statement form, Flink's doc examples."""

from __future__ import annotations

import pytest
from sqlglot import exp

from sessioncluster.api.table.types import DataTypes
from sessioncluster.api.table.typeparser import parse_type as data_type
from sessioncluster.spark.flinksql.model import FlinkSqlError
from sessioncluster.spark.flinksql.statements import (
    CreateFunction,
    CreateTable,
    CreateView,
    Describe,
    Drop,
    Explain,
    Insert,
    Query,
    Reset,
    Set,
    Show,
    StatementSet,
    StopJob,
    parse_statement,
    parse_statements,
)

ORDERS_DDL = """
CREATE TEMPORARY TABLE IF NOT EXISTS `Orders` (
    `user` BIGINT NOT NULL COMMENT 'the buyer',
    product STRING,
    amount INT,
    price DECIMAL(10, 2),
    order_time TIMESTAMP(3),
    cost AS price * amount,
    proc AS PROCTIME(),
    WATERMARK FOR order_time AS order_time - INTERVAL '5' SECOND,
    PRIMARY KEY (`user`) NOT ENFORCED
) COMMENT 'orders' PARTITIONED BY (product) WITH (
    'connector' = 'filesystem',
    'path' = '/tmp/orders',
    'format' = 'csv'
)"""


def test_create_table_reads_columns_watermark_key_partitions_and_options() -> None:
    statement = parse_statement(ORDERS_DDL)
    assert isinstance(statement, CreateTable) and statement.if_not_exists
    table = statement.table
    assert table.name == "Orders" and table.temporary and table.comment == "orders"
    assert [(c.name, c.type) for c in table.physical_columns] == [
        ("user", "BIGINT NOT NULL"), ("product", "STRING"), ("amount", "INT"),
        ("price", "DECIMAL(10, 2)"), ("order_time", "TIMESTAMP(3)")]
    assert table.columns[0].comment == "the buyer"
    computed = {c.name: c.expression for c in table.columns if not c.is_physical}
    assert computed == {"cost": "price * amount", "proc": "PROCTIME()"}
    assert table.watermark is not None and table.watermark.rowtime == "order_time"
    assert table.watermark.expression == "order_time - INTERVAL '5' SECOND"
    assert table.primary_key == ["user"] and table.partition_keys == ["product"]
    assert table.options == {"connector": "filesystem", "path": "/tmp/orders", "format": "csv"}
    assert table.connector == "filesystem"


def test_create_table_of_flinks_types() -> None:
    statement = parse_statement(
        "CREATE TABLE t (a ROW<x INT, y STRING>, b MAP<STRING, ARRAY<INT>>, c TIMESTAMP(3) WITH "
        "LOCAL TIME ZONE, d TIMESTAMP_LTZ(3), e BYTES, f VARCHAR(10)) WITH ('connector' = "
        "'datagen')")
    assert isinstance(statement, CreateTable)
    types = [c.type for c in statement.table.columns]
    assert types == ["ROW<x INT, y STRING>", "MAP<STRING, ARRAY<INT>>",
                     "TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP_LTZ(3)", "BYTES",
                     "VARCHAR(10)"]
    assert data_type(types[2]) == DataTypes.TIMESTAMP_LTZ(3)


def test_data_type_reads_flink_type_text() -> None:
    assert data_type("TIMESTAMP(3)") == DataTypes.TIMESTAMP(3)
    assert data_type("BIGINT NOT NULL") == DataTypes.BIGINT().not_null()
    assert data_type("DECIMAL(10, 2)") == DataTypes.DECIMAL(10, 2)
    assert data_type("ARRAY<ROW<a INT, b STRING>>") == DataTypes.ARRAY(DataTypes.ROW(
        [DataTypes.FIELD("a", DataTypes.INT()), DataTypes.FIELD("b", DataTypes.STRING())]))
    assert data_type("TIMESTAMP(3)").spark_ddl() == "TIMESTAMP_NTZ"
    with pytest.raises(ValueError, match="The type INTX is not supported"):
        data_type("INTX")


def test_create_view_and_function() -> None:
    view, function, java = parse_statements(
        "CREATE TEMPORARY VIEW v (n) AS SELECT COUNT(*) FROM Orders;\n"
        "CREATE TEMPORARY SYSTEM FUNCTION IF NOT EXISTS add_one AS 'udfs.add_one' "
        "LANGUAGE PYTHON;\n"
        "CREATE FUNCTION f AS 'com.example.F'")
    assert isinstance(view, CreateView) and view.name == "v" and view.temporary
    assert view.columns == ["n"] and isinstance(view.query, exp.Select)
    assert function == CreateFunction("add_one", "udfs.add_one", "PYTHON", temporary=True,
                                      system=True, if_not_exists=True)
    assert java == CreateFunction("f", "com.example.F")


def test_drop_show_describe() -> None:
    statements = parse_statements(
        "DROP TEMPORARY TABLE IF EXISTS t; DROP VIEW v; DROP TEMPORARY SYSTEM FUNCTION f;"
        "SHOW TABLES; SHOW VIEWS; SHOW FUNCTIONS; SHOW JOBS; SHOW CATALOGS; SHOW DATABASES;"
        "SHOW CREATE TABLE t; DESCRIBE Orders; DESC db.Orders")
    assert statements == [
        Drop("TABLE", "t", if_exists=True, temporary=True), Drop("VIEW", "v"),
        Drop("FUNCTION", "f", temporary=True, system=True), Show("TABLES"), Show("VIEWS"),
        Show("FUNCTIONS"), Show("JOBS"), Show("CATALOGS"), Show("DATABASES"), Show("CREATE TABLE", "t"),
        Describe("Orders"), Describe("db.Orders")]


def test_set_reset_stop_job() -> None:
    statements = parse_statements(
        "SET 'execution.runtime-mode' = 'batch';\nSET;\nRESET 'sql-client.verbose';\nRESET;\n"
        "STOP JOB '228d70913eab60dda85c5e7f78b5782c' WITH SAVEPOINT WITH DRAIN;\n"
        "STOP JOB 'abc'")
    assert statements == [
        Set("execution.runtime-mode", "batch"), Set(), Reset("sql-client.verbose"), Reset(),
        StopJob("228d70913eab60dda85c5e7f78b5782c", with_savepoint=True, with_drain=True),
        StopJob("abc")]


def test_insert_forms() -> None:
    into, overwrite = parse_statements(
        "INSERT INTO country_page_view PARTITION (`date`='2019-8-30', country='China') "
        "(user_id, cnt) SELECT user, cnt FROM page_view_source;"
        "INSERT OVERWRITE students VALUES ('fred flintstone', 35, 1.28), ('barney', 32, 2.32)")
    assert isinstance(into, Insert) and into.target == "country_page_view"
    assert into.partition == {"date": "2019-8-30", "country": "China"}
    assert into.columns == ["user_id", "cnt"] and not into.overwrite
    assert isinstance(into.query, exp.Select)
    assert isinstance(overwrite, Insert) and overwrite.overwrite
    assert isinstance(overwrite.query, exp.Values)


def test_statement_sets_both_forms() -> None:
    execute, begin = parse_statements(
        "EXECUTE STATEMENT SET\nBEGIN\n"
        "INSERT INTO pageviews SELECT page_id, CASE WHEN n > 1 THEN 'x' END FROM views;\n"
        "INSERT INTO uniqueview SELECT page_id, COUNT(*) FROM views GROUP BY page_id;\nEND;\n"
        "BEGIN STATEMENT SET;\nINSERT INTO a SELECT 1;\nINSERT INTO b SELECT 2;\nEND;")
    assert isinstance(execute, StatementSet)
    assert [i.target for i in execute.inserts] == ["pageviews", "uniqueview"]
    assert isinstance(begin, StatementSet) and [i.target for i in begin.inserts] == ["a", "b"]


def test_explain_and_queries_with_flink_constructs() -> None:
    explain = parse_statement("EXPLAIN PLAN FOR SELECT * FROM Orders WHERE amount > 2")
    assert isinstance(explain, Explain) and isinstance(explain.statement, Query)
    queries = [
        "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), "
        "INTERVAL '10' SECOND)) GROUP BY window_start, window_end",
        "SELECT * FROM TABLE(TUMBLE(DATA => TABLE Bid, TIMECOL => DESCRIPTOR(bidtime), "
        "SIZE => INTERVAL '10' MINUTES))",
        "SELECT * FROM TABLE(HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, "
        "INTERVAL '10' MINUTES))",
        "SELECT * FROM TABLE(CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES, "
        "INTERVAL '10' MINUTES))",
        "SELECT * FROM TABLE(SESSION(TABLE Bid PARTITION BY item, DESCRIPTOR(bidtime), "
        "INTERVAL '5' MINUTES))",
        "SELECT * FROM TABLE(SESSION(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES))",
        "SELECT order_id, SUM(amount) OVER (PARTITION BY product ORDER BY order_time RANGE "
        "BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) FROM Orders",
        "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY category ORDER BY sales DESC) "
        "AS row_num FROM ShopSales) WHERE row_num <= 5",
        "SELECT * FROM Orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.order_time AS r "
        "ON o.currency = r.currency",
        "SELECT * FROM Orders o, Shipments s WHERE o.id = s.order_id AND o.order_time BETWEEN "
        "s.ship_time - INTERVAL '4' HOUR AND s.ship_time",
        "SELECT PROCTIME(), NOW(), CAST(a AS VARCHAR(3)), TRY_CAST(b AS INT), a || b FROM t",
    ]
    for text in queries:
        assert isinstance(parse_statement(text), Query), text


def test_script_splitting_ignores_semicolons_in_strings_and_comments() -> None:
    statements = parse_statements(
        "-- a comment; with a semicolon\nSET 'k' = 'a;b';\n/* ; */ SELECT 'x;y' FROM t;;")
    assert statements[0] == Set("k", "a;b")
    assert isinstance(statements[1], Query) and len(statements) == 2


def test_match_recognize_is_read_with_its_within_and_offsets() -> None:
    [query] = parse_statements(
        "SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY a ORDER BY ts MEASURES LAST(A.x, 1) AS x "
        "PATTERN (A B) WITHIN INTERVAL '5' SECOND DEFINE A AS A.x > 1) AS T")
    assert isinstance(query, Query)
    node = query.ast.find(exp.MatchRecognize)
    assert node is not None and node.text("pattern") == "A B"
    assert node.args["within"].sql() == "INTERVAL '5' SECOND"
    assert [a.sql() for a in node.find_all(exp.Anonymous)] == ["LAST(A.x, 1)"]


def test_parse_errors_name_the_text_and_its_position() -> None:
    with pytest.raises(FlinkSqlError, match=r'Encountered "t" at line 2, column 16'):
        parse_statements("SET 'a' = 'b';\nSELECT a FROMM t")
    with pytest.raises(FlinkSqlError, match=r"SQL parse failed\. Encountered"):
        parse_statements("SELECT * FROM t x y z")
    with pytest.raises(FlinkSqlError, match='Was expecting "END"'):
        parse_statements("EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1;")
    with pytest.raises(FlinkSqlError, match="Only INSERT statements"):
        parse_statements("BEGIN STATEMENT SET; SELECT 1; END;")
    with pytest.raises(FlinkSqlError, match=r"Encountered \"abc\" at line 1, column 10"):
        parse_statements("STOP JOB abc")


@pytest.mark.parametrize("statement, column", [
    ("ALTER TABLE t3", 14), ("ALTER TABLE t3   ", 17), ("ALTER TABLE t3\n", 15),
    ("ALTER TABLE\n  t3", (2, 4)), ("ALTER VIEW v", 12), ("SELECT a FROM", 13),
    ("SELECT a FROM t3 WHERE", 22), ("ALTER TABLE t3 ADD (b INT", 25), ("CREATE FUNCTION f", 17)])
def test_a_parse_error_at_the_end_is_flinks_eof_error(statement: str,
                                                      column: int | tuple[int, int]) -> None:
    """Flink 2.3's SqlParserEOFException (/work/briefs/data/sqlsmall/probe_eof.out): "<EOF>" at
    the text's last character (a trailing blank or new line too), without "SQL parse failed."."""
    line, col = column if isinstance(column, tuple) else (1, column)
    with pytest.raises(FlinkSqlError) as error:
        parse_statements(statement)
    assert str(error.value).startswith(f'Encountered "<EOF>" at line {line}, column {col}.')
