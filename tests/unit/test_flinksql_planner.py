"""Flink SQL queries translated by to_spark_sql and run on a local SparkSession, checked against
the rows Flink's documentation gives (window-tvf.md's Bid table and its outputs)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
import sqlglot

from sessioncluster.spark.flinksql.dialect import Flink, name_outputs, output_name
from sessioncluster.spark.flinksql.model import FlinkSqlError
from sessioncluster.spark.flinksql.planner import to_spark_sql
from sessioncluster.spark.flinksql.statements import CreateTable, Query, parse_statements

DDL = """
CREATE TABLE Bid (bidtime TIMESTAMP(3), price DECIMAL(10, 2), item STRING,
    WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND) WITH ('connector' = 'datagen');
CREATE TABLE Orders (id INT, product STRING, amount INT, order_time TIMESTAMP(3))
    WITH ('connector' = 'datagen');
CREATE TABLE Shipments (order_id INT, ship_time TIMESTAMP(3)) WITH ('connector' = 'datagen');
"""
BIDS = [("08:05", "4.00", "C"), ("08:07", "2.00", "A"), ("08:09", "5.00", "D"),
        ("08:11", "3.00", "B"), ("08:13", "1.00", "E"), ("08:17", "6.00", "F")]


def t(hm: str, ms: int = 0) -> dt.datetime:
    hour, minute = map(int, hm.split(":"))
    return dt.datetime(2020, 4, 15, hour, minute) + dt.timedelta(milliseconds=ms)


@pytest.fixture(scope="module")
def spark(local_spark: Any) -> Any:
    session = local_spark
    bids = ", ".join(f"('2020-04-15 {hm}:00', {p}, '{i}')" for hm, p, i in BIDS)
    session.sql(f"CREATE OR REPLACE TEMPORARY VIEW Bid AS SELECT CAST(t AS TIMESTAMP_NTZ) AS "
                f"bidtime, CAST(p AS DECIMAL(10, 2)) AS price, item FROM VALUES {bids} "
                f"AS v(t, p, item)")
    session.sql("CREATE OR REPLACE TEMPORARY VIEW Orders AS SELECT id, product, amount, "
                "CAST(ts AS TIMESTAMP_NTZ) AS order_time FROM VALUES "
                "(1, 'a', 3, '2020-04-15 08:00:00'), (2, 'a', 5, '2020-04-15 08:20:00'), "
                "(3, 'b', 7, '2020-04-15 08:30:00'), (4, 'a', 1, '2020-04-15 09:10:00') "
                "AS v(id, product, amount, ts)")
    session.sql("CREATE OR REPLACE TEMPORARY VIEW Shipments AS SELECT order_id, "
                "CAST(ts AS TIMESTAMP_NTZ) AS ship_time FROM VALUES "
                "(1, '2020-04-15 09:00:00'), (2, '2020-04-15 14:00:00'), "
                "(3, '2020-04-15 08:45:00') AS v(order_id, ts)")
    return session


TABLES = {s.table.name: s.table for s in parse_statements(DDL) if isinstance(s, CreateTable)}


def run(spark: Any, text: str) -> list[tuple[Any, ...]]:
    (statement,) = parse_statements(text)
    assert isinstance(statement, Query)
    return [tuple(row) for row in spark.sql(to_spark_sql(statement.ast, TABLES)).collect()]


def test_tumble_tvf_rows_and_aggregation_as_flink_docs(spark: Any) -> None:
    rows = run(spark, "SELECT * FROM TABLE(TUMBLE(DATA => TABLE Bid, TIMECOL => "
                      "DESCRIPTOR(bidtime), SIZE => INTERVAL '10' MINUTES))")
    assert sorted(rows) == sorted(
        (t(hm), Decimal(p), i, t(s), t(e), t(e, -1))
        for (hm, p, i), s, e in zip(BIDS, ["08:00"] * 3 + ["08:10"] * 3,
                                    ["08:10"] * 3 + ["08:20"] * 3))
    sums = run(spark, "SELECT window_start, window_end, SUM(price) FROM TABLE(TUMBLE(TABLE Bid, "
                      "DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) GROUP BY window_start, "
                      "window_end ORDER BY window_start")
    assert sums == [(t("08:00"), t("08:10"), Decimal("11.00")),
                    (t("08:10"), t("08:20"), Decimal("10.00"))]
    offset = run(spark, "SELECT window_start, window_end, SUM(price) FROM TABLE(TUMBLE(TABLE Bid, "
                        "DESCRIPTOR(bidtime), INTERVAL '10' MINUTES, INTERVAL '1' MINUTES)) "
                        "GROUP BY window_start, window_end ORDER BY window_start")
    assert offset == [(t("08:01"), t("08:11"), Decimal("11.00")),
                      (t("08:11"), t("08:21"), Decimal("10.00"))]


def test_hop_tvf_aggregation_as_flink_docs(spark: Any) -> None:
    rows = run(spark, "SELECT window_start, window_end, SUM(price) FROM TABLE(HOP(TABLE Bid, "
                      "DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES)) "
                      "GROUP BY window_start, window_end ORDER BY window_start")
    assert rows == [(t("08:00"), t("08:10"), Decimal("11.00")),
                    (t("08:05"), t("08:15"), Decimal("15.00")),
                    (t("08:10"), t("08:20"), Decimal("10.00")),
                    (t("08:15"), t("08:25"), Decimal("6.00"))]


def test_cumulate_tvf_aggregation_as_flink_docs(spark: Any) -> None:
    rows = run(spark, "SELECT window_start, window_end, SUM(price) FROM TABLE(CUMULATE(TABLE Bid, "
                      "DESCRIPTOR(bidtime), INTERVAL '2' MINUTES, INTERVAL '10' MINUTES)) "
                      "GROUP BY window_start, window_end ORDER BY window_start, window_end")
    expected = [("08:00", "08:06", "4.00"), ("08:00", "08:08", "6.00"),
                ("08:00", "08:10", "11.00"), ("08:10", "08:12", "3.00"),
                ("08:10", "08:14", "4.00"), ("08:10", "08:16", "4.00"),
                ("08:10", "08:18", "10.00"), ("08:10", "08:20", "10.00")]
    assert rows == [(t(s), t(e), Decimal(v)) for s, e, v in expected]


def test_session_tvf_with_and_without_partition(spark: Any) -> None:
    # gaps between the bids: 2, 2, 2, 2, 4 minutes; a 3-minute gap splits before 08:17
    rows = run(spark, "SELECT window_start, window_end, window_time, SUM(price) FROM "
                      "TABLE(SESSION(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '3' MINUTES)) "
                      "GROUP BY window_start, window_end, window_time ORDER BY window_start")
    assert rows == [(t("08:05"), t("08:16"), t("08:16", -1), Decimal("15.00")),
                    (t("08:17"), t("08:20"), t("08:20", -1), Decimal("6.00"))]
    keyed = run(spark, "SELECT item, window_start, window_end, COUNT(*) FROM TABLE(SESSION("
                       "TABLE Bid PARTITION BY item, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES)) "
                       "GROUP BY item, window_start, window_end ORDER BY item")
    assert keyed == [(i, t(hm), t(hm) + dt.timedelta(minutes=5), 1)
                     for hm, _, i in sorted(BIDS, key=lambda b: b[2])]


def test_session_windows_that_touch_merge(spark: Any) -> None:
    """Bids exactly the gap apart are one session, as in Flink (its windows [t, t + gap) merge
    when they touch); Flink 2.3 prints [08:05, 08:15) and [08:17, 08:19) for a 2-minute gap."""
    for query in ("SELECT window_start, window_end, SUM(price) FROM TABLE(SESSION(TABLE Bid, "
                  "DESCRIPTOR(bidtime), INTERVAL '2' MINUTES)) GROUP BY window_start, window_end "
                  "ORDER BY 1",
                  "SELECT SESSION_START(bidtime, INTERVAL '2' MINUTE), SESSION_END(bidtime, "
                  "INTERVAL '2' MINUTE), SUM(price) FROM Bid GROUP BY SESSION(bidtime, "
                  "INTERVAL '2' MINUTE) ORDER BY 1"):
        assert run(spark, query) == [(t("08:05"), t("08:15"), Decimal("15.00")),
                                     (t("08:17"), t("08:19"), Decimal("6.00"))]


def test_ranking_functions_are_bigint(spark: Any) -> None:
    """ROW_NUMBER(), RANK() and DENSE_RANK() are BIGINT in Flink (Spark's are INT): Top-N's
    row_num prints as Flink's does."""
    (statement,) = parse_statements(
        "SELECT * FROM (SELECT item, ROW_NUMBER() OVER (ORDER BY price DESC) AS rn, "
        "RANK() OVER (ORDER BY price) AS r, DENSE_RANK() OVER (ORDER BY price) AS d FROM Bid) "
        "WHERE rn <= 2")
    assert isinstance(statement, Query)
    frame = spark.sql(to_spark_sql(statement.ast, TABLES))
    assert [f.dataType.simpleString() for f in frame.schema.fields] == ["string"] + ["bigint"] * 3
    assert sorted(tuple(r) for r in frame.collect()) == [("D", 2, 5, 5), ("F", 1, 6, 6)]


def test_legacy_group_windows(spark: Any) -> None:
    rows = run(spark, "SELECT TUMBLE_START(bidtime, INTERVAL '10' MINUTE), TUMBLE_END(bidtime, "
                      "INTERVAL '10' MINUTE), TUMBLE_ROWTIME(bidtime, INTERVAL '10' MINUTE), "
                      "SUM(price) FROM Bid WHERE price > 1 GROUP BY TUMBLE(bidtime, "
                      "INTERVAL '10' MINUTE) ORDER BY 1")
    assert rows == [(t("08:00"), t("08:10"), t("08:10", -1), Decimal("11.00")),
                    (t("08:10"), t("08:20"), t("08:20", -1), Decimal("9.00"))]
    hop = run(spark, "SELECT HOP_START(bidtime, INTERVAL '5' MINUTE, INTERVAL '10' MINUTE), "
                     "COUNT(*) FROM Bid GROUP BY HOP(bidtime, INTERVAL '5' MINUTE, "
                     "INTERVAL '10' MINUTE) ORDER BY 1")
    assert hop == [(t("08:00"), 3), (t("08:05"), 5), (t("08:10"), 3), (t("08:15"), 1)]
    session = run(spark, "SELECT SESSION_START(bidtime, INTERVAL '3' MINUTE), SESSION_END("
                         "bidtime, INTERVAL '3' MINUTE), COUNT(*) FROM Bid GROUP BY "
                         "SESSION(bidtime, INTERVAL '3' MINUTE) ORDER BY 1")
    assert session == [(t("08:05"), t("08:16"), 5), (t("08:17"), t("08:20"), 1)]


def test_over_window_top_n_and_dedup(spark: Any) -> None:
    over = run(spark, "SELECT id, SUM(amount) OVER (PARTITION BY product ORDER BY order_time "
                      "RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) FROM Orders "
                      "ORDER BY id")
    assert over == [(1, 3), (2, 8), (3, 7), (4, 6)]
    top = run(spark, "SELECT item, price FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY price DESC) "
                     "AS rownum FROM Bid) WHERE rownum <= 2")
    assert sorted(top) == [("D", Decimal("5.00")), ("F", Decimal("6.00"))]
    dedup = run(spark, "SELECT id, product FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY "
                       "product ORDER BY order_time ASC) AS row_num FROM Orders) "
                       "WHERE row_num = 1 ORDER BY id")
    assert dedup == [(1, "a"), (3, "b")]


def test_regular_and_interval_joins(spark: Any) -> None:
    interval = run(spark, "SELECT o.id, s.ship_time FROM Orders o, Shipments s WHERE "
                          "o.id = s.order_id AND o.order_time BETWEEN s.ship_time - "
                          "INTERVAL '4' HOUR AND s.ship_time ORDER BY o.id")
    assert interval == [(1, t("09:00")), (3, t("08:45"))]
    left = run(spark, "SELECT o.id, s.order_id FROM Orders o LEFT JOIN Shipments s ON "
                      "o.id = s.order_id ORDER BY o.id")
    assert left == [(1, 1), (2, 2), (3, 3), (4, None)]


def test_to_timestamp_ltz_of_epoch_milliseconds_and_seconds(spark: Any) -> None:
    # instants, shown in the session's time zone: compared with each other
    millis, seconds, default = run(spark, "SELECT TO_TIMESTAMP_LTZ(1500, 3), "
                                          "TO_TIMESTAMP_LTZ(2, 0), TO_TIMESTAMP_LTZ(1500)")[0]
    assert (seconds - millis, default) == (dt.timedelta(milliseconds=500), millis)
    assert millis.microsecond == 500_000


def test_flink_functions(spark: Any) -> None:
    (row,) = run(spark, "SELECT TO_TIMESTAMP('2020-04-15 08:05:00'), "
                        "TO_TIMESTAMP('15/04/2020', 'dd/MM/yyyy'), TO_TIMESTAMP('nope'), "
                        "DATE_FORMAT(TIMESTAMP '2020-04-15 08:05:00', 'yyyy-MM-dd HH:mm'), "
                        "TIMESTAMPADD(MINUTE, 5, TIMESTAMP '2020-04-15 08:05:00'), "
                        "TIMESTAMPDIFF(MINUTE, TIMESTAMP '2020-04-15 08:05:00', "
                        "TIMESTAMP '2020-04-15 09:00:00'), CHAR_LENGTH('flink'), "
                        "SUBSTRING('flink' FROM 2 FOR 3), POSITION('in' IN 'flink'), "
                        "REGEXP_EXTRACT('foothebar', 'foo(.*?)(bar)', 2), "
                        "REGEXP_EXTRACT('abc', 'a.c'), REGEXP_EXTRACT('abc', 'x'), "
                        "IF(1 > 2, 'y', 'n'), 'a' || 'b', CAST(12 AS VARCHAR(5)), "
                        "CAST('2020-04-15 08:05:00.123' AS TIMESTAMP(3)), TRY_CAST('x' AS INT)")
    assert row == (t("08:05"), dt.datetime(2020, 4, 15), None, "2020-04-15 08:05", t("08:10"), 55,
                   5, "lin", 3, "bar", "abc", None, "n", "ab", "12", t("08:05", 123), None)
    (now,) = run(spark, "SELECT NOW() IS NOT NULL AND LOCALTIMESTAMP IS NOT NULL "
                        "AND PROCTIME() IS NOT NULL")
    assert now == (True,)


def test_constructs_that_raise_flink_sql_errors() -> None:
    def plan(text: str) -> str:
        (statement,) = parse_statements(text)
        assert isinstance(statement, Query)
        return to_spark_sql(statement.ast, TABLES)

    with pytest.raises(FlinkSqlError, match="CURRENT_WATERMARK is not supported in BATCH"):
        plan("SELECT CURRENT_WATERMARK(bidtime) FROM Bid")
    with pytest.raises(FlinkSqlError, match="Temporal Joins"):
        plan("SELECT * FROM Orders AS o JOIN Bid FOR SYSTEM_TIME AS OF o.order_time AS b "
             "ON o.product = b.item")
    with pytest.raises(FlinkSqlError, match="Object 'Nope' not found"):
        plan("SELECT * FROM TABLE(TUMBLE(TABLE Nope, DESCRIPTOR(ts), INTERVAL '1' SECOND))")
    with pytest.raises(FlinkSqlError, match="TUMBLE_START is only allowed"):
        plan("SELECT TUMBLE_START(bidtime, INTERVAL '1' MINUTE) FROM Bid")


def test_unnamed_select_items_get_flinks_names() -> None:
    """Calcite names an unnamed SELECT item ``EXPR$<position>`` (checked against PyFlink 2.3:
    ``SELECT window_start, window_end, SUM(amount)`` prints ``EXPR$2``); a column keeps its
    name, an alias its alias; after a ``*`` Spark's name stays (the position is unknown)."""
    tree = sqlglot.parse_one("SELECT a, t.b, a + 1, COUNT(*) AS n, UPPER(c), 1 FROM t "
                             "WHERE a IN (SELECT a * 2 FROM u)", read=Flink)
    name_outputs(tree)
    assert [output_name(p, i) for i, p in enumerate(tree.expressions)] == [
        "a", "b", "EXPR$2", "n", "EXPR$4", "EXPR$5"]
    assert "SELECT a * 2 AS `EXPR$0` FROM u" in tree.sql(dialect="spark")
    starred = sqlglot.parse_one("SELECT *, a + 1 FROM t", read=Flink)
    name_outputs(starred)
    assert starred.sql(dialect="spark") == "SELECT *, a + 1 FROM t"
