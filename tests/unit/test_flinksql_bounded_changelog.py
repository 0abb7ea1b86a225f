"""A group aggregation over bounded sources in STREAMING mode gives Flink's changelog record by
record (:mod:`sessioncluster.spark.flinksql.boundedchangelog`): the shapes rewritten, and the
changes Spark computes for them, against the rows PyFlink 2.3 printed for the same queries
(``EnvironmentSettings.in_streaming_mode()``, ``parallelism.default`` 1, the same rows given
by ``from_elements``)."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from sessioncluster.spark.flinksql.boundedchangelog import changelog_query, ordered_changes
from sessioncluster.spark.flinksql.planner import to_spark_sql
from sessioncluster.spark.flinksql.statements import Query, parse_statements

#: the rows of ``nums`` in their source order
NUMS = [("a", 1), ("b", 5), ("a", 3), ("a", 2), ("b", 5), ("a", 3), ("b", 1)]


def query(text: str) -> Any:
    statement = parse_statements(text)[0]
    assert isinstance(statement, Query)
    return statement.ast


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("flinksql-bounded-changelog")
               .config("spark.sql.shuffle.partitions", "3").config("spark.ui.enabled", "false")
               .getOrCreate())
    # three partitions: the source order runs across them
    session.sparkContext.parallelize(NUMS, 3).toDF(["k", "v"]).createOrReplaceTempView("nums")
    session.sparkContext.parallelize([(i,) for i in range(1, 8)], 2).toDF(["id"]) \
        .createOrReplaceTempView("gen")
    yield session
    session.stop()


def changes(spark: Any, text: str) -> list[tuple[Any, ...]]:
    rewritten = changelog_query(query(text))
    assert rewritten is not None
    frame = ordered_changes(spark.sql(to_spark_sql(rewritten, {})))
    return [(r[-1], *r[:-1]) for r in frame.collect()]


# what PyFlink 2.3 printed (op, then the row)
FLINK = {
    "SELECT k, SUM(v) AS s, MIN(v) AS mn, MAX(v) AS mx FROM nums GROUP BY k": [
        ("+I", "a", 1, 1, 1), ("+I", "b", 5, 5, 5), ("-U", "a", 1, 1, 1), ("+U", "a", 4, 1, 3),
        ("-U", "a", 4, 1, 3), ("+U", "a", 6, 1, 3), ("-U", "b", 5, 5, 5), ("+U", "b", 10, 5, 5),
        ("-U", "a", 6, 1, 3), ("+U", "a", 9, 1, 3), ("-U", "b", 10, 5, 5), ("+U", "b", 11, 1, 5)],
    # a row that leaves the aggregate as it was emits nothing
    "SELECT k, MAX(v) AS mx FROM nums GROUP BY k": [
        ("+I", "a", 1), ("+I", "b", 5), ("-U", "a", 1), ("+U", "a", 3)],
    # HAVING filters each record: a's +I[a, 1] and -U[a, 1] are dropped, +U[a, 2] comes alone
    "SELECT k, COUNT(*) AS c FROM nums GROUP BY k HAVING COUNT(*) > 1": [
        ("+U", "a", 2), ("-U", "a", 2), ("+U", "a", 3), ("+U", "b", 2), ("-U", "a", 3),
        ("+U", "a", 4), ("-U", "b", 2), ("+U", "b", 3)],
    "SELECT k, SUM(v) AS s FROM nums GROUP BY k HAVING SUM(v) > 4": [
        ("+I", "b", 5), ("+U", "a", 6), ("-U", "b", 5), ("+U", "b", 10), ("-U", "a", 6),
        ("+U", "a", 9), ("-U", "b", 10), ("+U", "b", 11)],
    "SELECT SUM(v) AS s, MAX(v) AS m FROM nums": [
        ("+I", 1, 1), ("-U", 1, 1), ("+U", 6, 5), ("-U", 6, 5), ("+U", 9, 5), ("-U", 9, 5),
        ("+U", 11, 5), ("-U", 11, 5), ("+U", 16, 5), ("-U", 16, 5), ("+U", 19, 5),
        ("-U", 19, 5), ("+U", 20, 5)],
    "SELECT COUNT(*) AS c FROM nums WHERE v > 100": [],
    "SELECT k, s * 10 AS s10 FROM (SELECT k, SUM(v) AS s FROM nums GROUP BY k) WHERE s > 2": [
        ("+I", "b", 50), ("+U", "a", 40), ("-U", "a", 40), ("+U", "a", 60), ("-U", "b", 50),
        ("+U", "b", 100), ("-U", "a", 60), ("+U", "a", 90), ("-U", "b", 100), ("+U", "b", 110)],
    "SELECT k, COUNT(DISTINCT v) AS d FROM nums GROUP BY k": [
        ("+I", "a", 1), ("+I", "b", 1), ("-U", "a", 1), ("+U", "a", 2), ("-U", "a", 2),
        ("+U", "a", 3), ("-U", "b", 1), ("+U", "b", 2)],
    # the aggregate values decide, not the projected row: -U[a, FALSE] +U[a, FALSE]
    "SELECT k, COUNT(*) > 2 AS big FROM nums GROUP BY k": [
        ("+I", "a", False), ("+I", "b", False), ("-U", "a", False), ("+U", "a", False),
        ("-U", "a", False), ("+U", "a", True), ("-U", "b", False), ("+U", "b", False),
        ("-U", "a", True), ("+U", "a", True), ("-U", "b", False), ("+U", "b", True)],
    "SELECT MOD(id, 3) AS m, COUNT(*) AS c, SUM(id) AS s FROM gen GROUP BY MOD(id, 3)": [
        ("+I", 1, 1, 1), ("+I", 2, 1, 2), ("+I", 0, 1, 3), ("-U", 1, 1, 1), ("+U", 1, 2, 5),
        ("-U", 2, 1, 2), ("+U", 2, 2, 7), ("-U", 0, 1, 3), ("+U", 0, 2, 9), ("-U", 1, 2, 5),
        ("+U", 1, 3, 12)],
    "SELECT v, COUNT(*) AS c FROM (SELECT k, v FROM nums WHERE v > 1) GROUP BY v": [
        ("+I", 5, 1), ("+I", 3, 1), ("+I", 2, 1), ("-U", 5, 1), ("+U", 5, 2), ("-U", 3, 1),
        ("+U", 3, 2)],
    # an aggregation of an aggregation's changelog: -U/-D retract, a key whose count goes to
    # 0 is -D (its values before), and +I when it comes back
    "SELECT c, COUNT(*) AS n FROM (SELECT k, COUNT(*) AS c FROM nums GROUP BY k) GROUP BY c": [
        ("+I", 1, 1), ("-U", 1, 1), ("+U", 1, 2), ("-U", 1, 2), ("+U", 1, 1), ("+I", 2, 1),
        ("-D", 2, 1), ("+I", 3, 1), ("-D", 1, 1), ("+I", 2, 1), ("-D", 3, 1), ("+I", 4, 1),
        ("-D", 2, 1), ("+I", 3, 1)],
    ("SELECT c, COUNT(*) AS n, SUM(s) AS ss"
     " FROM (SELECT k, COUNT(*) AS c, SUM(v) AS s FROM nums GROUP BY k) GROUP BY c"): [
        ("+I", 1, 1, 1), ("-U", 1, 1, 1), ("+U", 1, 2, 6), ("-U", 1, 2, 6), ("+U", 1, 1, 5),
        ("+I", 2, 1, 4), ("-D", 2, 1, 4), ("+I", 3, 1, 6), ("-D", 1, 1, 5), ("+I", 2, 1, 10),
        ("-D", 3, 1, 6), ("+I", 4, 1, 9), ("-D", 2, 1, 10), ("+I", 3, 1, 11)],
    "SELECT COUNT(*) AS n, SUM(c) AS t FROM (SELECT k, COUNT(*) AS c FROM nums GROUP BY k)": [
        ("+I", 1, 1), ("-U", 1, 1), ("+U", 2, 2), ("-U", 2, 2), ("+U", 1, 1), ("-U", 1, 1),
        ("+U", 2, 3), ("-U", 2, 3), ("+U", 1, 1), ("-U", 1, 1), ("+U", 2, 4), ("-U", 2, 4),
        ("+U", 1, 3), ("-U", 1, 3), ("+U", 2, 5), ("-U", 2, 5), ("+U", 1, 2), ("-U", 1, 2),
        ("+U", 2, 6), ("-U", 2, 6), ("+U", 1, 4), ("-U", 1, 4), ("+U", 2, 7)],
    # SELECT DISTINCT is a group aggregation without aggregate functions: a row's first
    # occurrence is +I, the others emit nothing; over a changelog -D when its count is 0
    "SELECT DISTINCT k FROM nums": [
        ("+I", "a"), ("+I", "b")],
    "SELECT DISTINCT k, v FROM nums": [
        ("+I", "a", 1), ("+I", "b", 5), ("+I", "a", 3), ("+I", "a", 2), ("+I", "b", 1)],
    "SELECT DISTINCT v FROM nums WHERE v > 1": [
        ("+I", 5), ("+I", 3), ("+I", 2)],
    ("SELECT COUNT(*) AS n"
     " FROM (SELECT k, COUNT(*) AS c FROM nums GROUP BY k HAVING COUNT(*) > 1)"): [
        ("+I", 1), ("-D", 1), ("+I", 1), ("-U", 1), ("+U", 2), ("-U", 2), ("+U", 1), ("-U", 1),
        ("+U", 2), ("-U", 2), ("+U", 1), ("-U", 1), ("+U", 2)],
    ("SELECT c, COUNT(*) AS n"
     " FROM (SELECT k, COUNT(*) AS c FROM nums GROUP BY k HAVING COUNT(*) > 1) GROUP BY c"): [
        ("+I", 2, 1), ("-D", 2, 1), ("+I", 3, 1), ("+I", 2, 1), ("-D", 3, 1), ("+I", 4, 1),
        ("-D", 2, 1), ("+I", 3, 1)],
    "SELECT DISTINCT c FROM (SELECT k, COUNT(*) AS c FROM nums GROUP BY k)": [
        ("+I", 1), ("+I", 2), ("-D", 2), ("+I", 3), ("-D", 1), ("+I", 2), ("-D", 3), ("+I", 4),
        ("-D", 2), ("+I", 3)],
    ("SELECT c, SUM(v) AS s, COUNT(v) AS cv"
     " FROM (SELECT k, MAX(v) AS v, COUNT(*) AS c FROM nums GROUP BY k) GROUP BY c"): [
        ("+I", 1, 1, 1), ("-U", 1, 1, 1), ("+U", 1, 6, 2), ("-U", 1, 6, 2), ("+U", 1, 5, 1),
        ("+I", 2, 3, 1), ("-D", 2, 3, 1), ("+I", 3, 3, 1), ("-D", 1, 5, 1), ("+I", 2, 5, 1),
        ("-D", 3, 3, 1), ("+I", 4, 3, 1), ("-D", 2, 5, 1), ("+I", 3, 5, 1)],
    ("SELECT n, COUNT(*) AS m"
     " FROM (SELECT c, COUNT(*) AS n"
     " FROM (SELECT k, COUNT(*) AS c FROM nums GROUP BY k) GROUP BY c) GROUP BY n"): [
        ("+I", 1, 1), ("-D", 1, 1), ("+I", 2, 1), ("-D", 2, 1), ("+I", 1, 1), ("-U", 1, 1),
        ("+U", 1, 2), ("-U", 1, 2), ("+U", 1, 1), ("-U", 1, 1), ("+U", 1, 2), ("-U", 1, 2),
        ("+U", 1, 1), ("-U", 1, 1), ("+U", 1, 2), ("-U", 1, 2), ("+U", 1, 1), ("-U", 1, 1),
        ("+U", 1, 2), ("-U", 1, 2), ("+U", 1, 1), ("-U", 1, 1), ("+U", 1, 2)],
    "SELECT k, COUNT(*) AS c FROM (SELECT DISTINCT k, v FROM nums) GROUP BY k": [
        ("+I", "a", 1), ("+I", "b", 1), ("-U", "a", 1), ("+U", "a", 2), ("-U", "a", 2),
        ("+U", "a", 3), ("-U", "b", 1), ("+U", "b", 2)],
}


@pytest.mark.parametrize("text", list(FLINK))
def test_the_changelog_is_flinks(spark: Any, text: str) -> None:
    assert changes(spark, text) == FLINK[text]


def test_an_aggregation_in_a_common_table_expression_and_its_unnamed_column(spark: Any) -> None:
    """The Table API's and a view's shape (WITH ... ): the records go through the selects
    above; an unnamed aggregate is Flink's ``EXPR$<n>``."""
    text = ("WITH counted AS (SELECT k, COUNT(*) FROM nums GROUP BY k) "
            "SELECT * FROM counted WHERE k = 'b'")
    rewritten = changelog_query(query(text))
    assert rewritten is not None
    frame = ordered_changes(spark.sql(to_spark_sql(rewritten, {})))
    assert frame.columns[:2] == ["k", "EXPR$1"]
    assert [tuple(r) for r in frame.collect()] == [
        ("b", 1, "+I"), ("b", 1, "-U"), ("b", 2, "+U"), ("b", 2, "-U"), ("b", 3, "+U")]


@pytest.mark.parametrize("text", [
    "SELECT k, v FROM nums WHERE v > 1",  # no aggregation: append-only as it is
    # MIN/MAX over a changelog need the multiset of the values so far
    "SELECT c, MAX(k) FROM (SELECT k, COUNT(*) AS c FROM nums GROUP BY k) GROUP BY c",
    "SELECT DISTINCT k, COUNT(*) FROM nums GROUP BY k",
    "SELECT a.k, COUNT(*) FROM nums a JOIN nums b ON a.k = b.k GROUP BY a.k",
    "SELECT k, COUNT(*) AS c FROM nums GROUP BY k ORDER BY c LIMIT 1",
    "SELECT k, my_udaf(v) FROM nums GROUP BY k",
    "SELECT k, SUM(DISTINCT v) FROM nums GROUP BY k",
    "SELECT k, COUNT(*) FILTER (WHERE v > 1) FROM nums GROUP BY k",
    "SELECT k, STDDEV_POP(v) FROM nums GROUP BY k",
    "SELECT k, COUNT(*) FROM nums WHERE v > (SELECT MIN(v) FROM nums) GROUP BY k",
    "SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v) AS r FROM nums",
    "SELECT k, COUNT(*) FROM nums GROUP BY ROLLUP (k)",
])
def test_other_shapes_are_left_as_they_are(text: str) -> None:
    assert changelog_query(query(text)) is None
