"""Flink's built-in functions and operators where Spark's differ, translated by to_spark_sql and
run on a local SparkSession: each value is the one real Flink 2.3 (PyFlink, BATCH) gave for the
same expression, recorded with ``SELECT <expression>`` on 2026-11-27."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from sessioncluster.spark.flinksql.model import CatalogTable, Column
from sessioncluster.spark.flinksql.planner import to_spark_sql
from sessioncluster.spark.flinksql.statements import Query, parse_statements

#: expression -> Flink 2.3's value
FLINK = {
    "ARRAY[1, 2, 3][2]": 2,
    "ARRAY[1, 2, 3][4]": None,
    "MAP['a', 1, 'b', 2]": {"a": 1, "b": 2},
    "MAP['a', 1]['a']": 1,
    "FLOOR(TIMESTAMP '2026-01-02 03:04:05' TO HOUR)": dt.datetime(2026, 1, 2, 3),
    "CEIL(TIMESTAMP '2026-01-02 03:04:05' TO DAY)": dt.datetime(2026, 1, 3),
    "CEIL(TIMESTAMP '2026-01-02 00:00:00' TO DAY)": dt.datetime(2026, 1, 2),
    "'abc' SIMILAR TO 'a.c'": True,
    "'abcd' SIMILAR TO 'a%'": True,
    "'abcd' SIMILAR TO 'a_'": False,
    "LOG10(1000)": 3.0,
    "TRUNCATE(2.567, 1)": Decimal("2.5"),
    "TRUNCATE(-2.567, 2)": Decimal("-2.56"),
    "STR_TO_MAP('a=1,b=2')": {"a": "1", "b": "2"},
    "TIME '12:34:56'": dt.time(12, 34, 56),
    "SHA256('abc')": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    "WEEK(DATE '2026-03-04')": 10,
    "ELEMENT(ARRAY[7])": 7,
    "SPLIT_INDEX('a,b,c', ',', 1)": "b",
    "SPLIT_INDEX('a.b.c', '.', 5)": None,
    "IS_ALPHA('abc')": True,
    "IS_DIGIT('123')": True,
    "IS_DECIMAL('1.5')": True,
    "IS_DECIMAL('x')": False,
    "7 / 2": 3,
    "-7 / 2": -3,
    "7 / -2": -3,
    "CAST(7 AS TINYINT) / CAST(2 AS BIGINT)": 3,
    "7.0 / 2": Decimal("3.5"),
    "SIGN(-2)": -1,
    "ARRAY_REVERSE(ARRAY[1, 2, 3])": [3, 2, 1],
    "CAST(TRUE AS STRING)": "TRUE",
    "TRY_CAST(1 > 2 AS VARCHAR(5))": "FALSE",
    "CAST('true' AS STRING)": "true",
    "2147483647 + 1": -2147483648,
    "-2147483648 - 1": 2147483647,
    "2147483647 * 2": -2,
    "9223372036854775807 + 1": -9223372036854775808,
    "CAST(9223372036854775807 AS BIGINT) * 2": -2,
    "CAST(127 AS TINYINT) + CAST(1 AS TINYINT)": -128,
    "CAST(1e20 AS BIGINT)": 9223372036854775807,
    "CAST(-1e20 AS BIGINT)": -9223372036854775808,
    "CAST(1e20 AS INT)": 2147483647,
    "CAST(CAST('NaN' AS DOUBLE) AS INT)": 0,
    "CAST(2147483648 AS INT)": -2147483648,
    "CAST(CAST(1e20 AS DECIMAL(38, 0)) AS BIGINT)": 7766279631452241920,
    "CAST(3.7 AS INT)": 3,
    # OVERLAPS, recorded 2026-11-28 by /work/briefs/data/apigaps/probe3.py
    "(TIMESTAMP '2024-01-01 10:00:00', TIMESTAMP '2024-01-01 11:00:00') OVERLAPS "
    "(TIMESTAMP '2024-01-01 11:00:00', INTERVAL '1' HOUR)": True,
    "(TIMESTAMP '2024-01-01 10:00:00', INTERVAL '30' MINUTE) OVERLAPS "
    "(TIMESTAMP '2024-01-01 11:00:00', INTERVAL '1' HOUR)": False,
    "(TIMESTAMP '2024-01-01 12:00:00', TIMESTAMP '2024-01-01 10:00:00') OVERLAPS "
    "(TIMESTAMP '2024-01-01 11:00:00', TIMESTAMP '2024-01-01 11:30:00')": True,
    "(TIMESTAMP '2024-01-01 10:00:00', CAST(NULL AS TIMESTAMP)) OVERLAPS "
    "(TIMESTAMP '2024-01-01 11:00:00', INTERVAL '1' HOUR)": False,
}

TABLES = {"t": CatalogTable("t", [Column("a", "INT"), Column("b", "DOUBLE")])}


@pytest.fixture(scope="module")
def spark(local_spark: Any) -> Any:
    local_spark.createDataFrame([(1, 1.0), (2, 2.0)], "a INT, b DOUBLE") \
        .createOrReplaceTempView("t")
    return local_spark


def run(spark: Any, sql: str) -> list[tuple[Any, ...]]:
    (statement,) = parse_statements(sql)
    assert isinstance(statement, Query)
    return [tuple(r) for r in spark.sql(to_spark_sql(statement.ast, TABLES)).collect()]


@pytest.mark.parametrize("expression", list(FLINK))
def test_a_builtin_gives_flinks_value(spark: Any, expression: str) -> None:
    (value,) = run(spark, f"SELECT {expression}")[0]
    assert value == FLINK[expression]


def test_timestamp_expressions_have_flinks_precision() -> None:
    """What Flink 2.3 prints: TIMESTAMP '2026-01-02 03:04:05' without a fraction (TIMESTAMP(0)),
    TO_TIMESTAMP(...) with three digits, FLOOR/TIMESTAMPADD/+ INTERVAL as their operand."""
    from sessioncluster.spark.flinksql.columntypes import window_bound_types

    expressions = ["TIMESTAMP '2026-01-02 03:04:05'", "TIMESTAMP '2026-01-02 03:04:05.12'",
                   "TO_TIMESTAMP('2026-05-06 07:08:09')",
                   "FLOOR(TIMESTAMP '2026-01-02 03:04:05' TO HOUR)",
                   "TIMESTAMPADD(HOUR, 5, TO_TIMESTAMP('2026-05-06 07:08:09'))",
                   "TIMESTAMP '2026-01-02 03:04:05' - INTERVAL '1 10' DAY TO HOUR",
                   "TIME '12:34:56'", "CURRENT_TIMESTAMP"]
    (statement,) = parse_statements(f"SELECT {', '.join(expressions)}")
    spark_types = ["TIMESTAMP(6)"] * 6 + ["TIME(6)", "TIMESTAMP_LTZ(6)"]
    assert window_bound_types(statement.ast, spark_types) == [  # type: ignore[attr-defined]
        "TIMESTAMP(0)", "TIMESTAMP(2)", "TIMESTAMP(3)", "TIMESTAMP(0)", "TIMESTAMP(3)",
        "TIMESTAMP(0)", "TIME(0)", "TIMESTAMP_LTZ(6)"]


def test_integer_division_and_avg_of_integers_are_integers_as_flinks(spark: Any) -> None:
    """Flink 2.3 over VALUES (1), (2): AVG(a) 1 (INT), SUM(a) / COUNT(*) 1 (BIGINT); a DOUBLE
    column keeps its fraction."""
    assert run(spark, "SELECT AVG(a), SUM(a) / COUNT(*), AVG(b), SUM(b) / COUNT(*) FROM t") \
        == [(1, 1, 1.5, 1.5)]
    assert run(spark, "SELECT a / 2, x / 2 FROM (SELECT a, a AS x FROM t) WHERE a = 2") \
        == [(1, 1)]
    assert run(spark, "SELECT a / (a / 2) FROM t WHERE a = 2") == [(2,)]  # nested: INT too


def test_a_boolean_column_cast_to_text_is_flinks_upper_case(spark: Any) -> None:
    """Flink 2.3: CAST of a BOOLEAN to STRING is TRUE/FALSE (Spark's is lower case); the cast
    of another type keeps its text."""
    assert run(spark, "SELECT CAST(a > 1 AS STRING), CAST(a AS STRING) FROM t ORDER BY a") \
        == [("FALSE", "1"), ("TRUE", "2")]
    assert run(spark, "SELECT CAST(f AS STRING) FROM (SELECT a = 2 AS f, a FROM t) ORDER BY a") \
        == [("FALSE",), ("TRUE",)]  # typed through the subquery


def test_integer_overflow_wraps_as_flinks(spark: Any) -> None:
    """Flink 2.3 over an INT column holding 2147483647 and 1 (Java's arithmetic): +, -, *,
    unary minus and SUM wrap within the INT (SUM of an INT is an INT), BIGINT + INT is a
    BIGINT that does not; a running SUM wraps row by row."""
    assert run(spark, "SELECT a + 2147483646, a - (-2147483647), a * 2147483647, -a, "
                      "a + CAST(2147483647 AS BIGINT) FROM t ORDER BY a") == [
        (2147483647, -2147483648, 2147483647, -1, 2147483648),
        (-2147483648, -2147483647, -2, -2, 2147483649)]
    assert run(spark, "SELECT SUM(x), SUM(DISTINCT x) FROM (SELECT a + 2147483645 AS x FROM t)") \
        == [(-3, -3)]
    assert run(spark, "SELECT SUM(x) OVER (ORDER BY a) FROM (SELECT a, 2147483647 AS x FROM t) "
                      "ORDER BY a") == [(2147483647,), (-2,)]


def test_arithmetic_over_a_sum_of_integers_is_of_their_type(spark: Any) -> None:
    """Flink 2.3 (/work/briefs/data/ftypes3/probe.py): SUM of an INT is an INT, so SUM(a) * 2,
    SUM(a) + 1 and SUM(a) / 2 are INTs (as AVG(a) * 2 and MAX(a) * 2), wrapping as INTs;
    COUNT(*) * 2 is a BIGINT."""
    (statement,) = parse_statements("SELECT SUM(a) * 2, SUM(a) + 1, SUM(a) / 2, AVG(a) * 2, "
                                    "MAX(a) * 2, COUNT(*) * 2, SUM(a) * 1073741824 FROM t")
    frame = spark.sql(to_spark_sql(statement.ast, TABLES))  # type: ignore[attr-defined]
    assert [f.dataType.simpleString() for f in frame.schema.fields] == [
        "int", "int", "int", "int", "int", "bigint", "int"]
    assert [tuple(r) for r in frame.collect()] == [(6, 4, 1, 2, 4, 4, -1073741824)]

def test_a_cast_to_an_integer_type_is_javas_conversion(spark: Any) -> None:
    """Flink 2.3 over DOUBLEs 1e20, -1e20, 3e9, -3.7 and NaN: BIGINT and INT saturate (NaN is
    0), SMALLINT and TINYINT are the low bits of the INT; BIGINT to INT keeps the low bits."""
    rows = run(spark, "SELECT CAST(x AS BIGINT), CAST(x AS INT), CAST(x AS SMALLINT), "
                      "CAST(x AS TINYINT), CAST(CAST(x AS BIGINT) AS INT) FROM (SELECT b * x AS x "
                      "FROM t, (SELECT CAST(s AS DOUBLE) AS x FROM (VALUES ('1e20'), ('-1e20'), "
                      "('3e9'), ('-3.7'), ('NaN')) AS v(s)) WHERE a = 1)")
    assert sorted(rows, key=str) == sorted([
        (9223372036854775807, 2147483647, -1, -1, -1),
        (-9223372036854775808, -2147483648, 0, 0, 0),
        (3000000000, 2147483647, -1, -1, -1294967296),
        (-3, -3, -3, -3, -3), (0, 0, 0, 0, 0)], key=str)


def test_a_double_divided_by_zero_is_javas_infinity(spark: Any) -> None:
    """Flink 2.3: a DOUBLE column divided by 0 is +-Infinity (Java's; 0 / 0 NaN), where
    Spark's ANSI mode raises; the division of constants fails in both."""
    rows = run(spark, "SELECT b / 0, (b - 1) / (a - 1), b / a FROM t ORDER BY a")
    assert rows[0][0] == float("inf") and rows[0][1] != rows[0][1] and rows[0][2] == 1.0
    assert rows[1] == (float("inf"), 1.0, 1.0)
    with pytest.raises(Exception, match="Division by zero"):
        run(spark, "SELECT CAST(7 AS DOUBLE) / 0")


def test_collect_is_flinks_multiset_of_each_groups_values(spark: Any) -> None:
    """Flink 2.3 (BATCH, 2026-11-28) over (k, v) = (1, 3), (1, 2), (1, 3), (2, NULL), (2, 5):
    COLLECT is each value's count, NULLs left out (k = 2: {5=1}); DISTINCT counts each once;
    over no rows it is the empty multiset."""
    rows = run(spark, "SELECT k, COLLECT(v), COLLECT(DISTINCT v) FROM (VALUES (1, 3), (1, 2), "
                      "(1, 3), (2, CAST(NULL AS INT)), (2, 5)) AS x(k, v) GROUP BY k ORDER BY k")
    assert rows == [(1, {2: 1, 3: 2}, {2: 1, 3: 1}), (2, {5: 1}, {5: 1})]
    assert run(spark, "SELECT COLLECT(a) FROM t WHERE a > 100") == [({},)]


def test_abs_of_the_smallest_integer_and_avg_of_a_bigint_are_javas(spark: Any) -> None:
    """Flink 2.3: ABS(-2147483648) is -2147483648 (Java's Math.abs; Spark's ANSI mode raises),
    also of a column's value; AVG of a BIGINT sums in a Java long, which wraps: AVG of
    9223372036854775807 and 1 is -4611686018427387904 (AVG of an INT sums in a long too)."""
    assert run(spark, "SELECT ABS(-2147483648)") == [(-2147483648,)]
    assert run(spark, "SELECT -(-2147483648), -(-(5))") == [(2147483648, 5)]  # folded, BIGINT
    assert run(spark, "SELECT ABS(a - 2147483647 - 2) FROM t ORDER BY a") == [
        (-2147483648,), (2147483647,)]
    assert run(spark, "SELECT AVG(i), AVG(b) FROM (VALUES (2147483647, CAST(9223372036854775807 "
                      "AS BIGINT)), (1, CAST(1 AS BIGINT))) AS v(i, b)") == [
        (1073741824, -4611686018427387904)]
    assert run(spark, "SELECT AVG(b) FROM (VALUES (CAST(-7 AS BIGINT)), (CAST(0 AS BIGINT)), "
                      "(CAST(NULL AS BIGINT))) AS v(b)") == [(-3,)]  # truncated, NULL left out
    assert run(spark, "SELECT AVG(b) FROM (VALUES (CAST(NULL AS BIGINT))) AS v(b)") == [(None,)]
