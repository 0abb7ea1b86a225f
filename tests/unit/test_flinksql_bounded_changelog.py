"""A group aggregation over bounded sources in STREAMING mode gives Flink's changelog record by
record (:mod:`sessioncluster.spark.flinksql.boundedchangelog`): the shapes rewritten, and the
changes Spark computes for them, against the rows PyFlink 2.3 printed for the same queries
(``EnvironmentSettings.in_streaming_mode()``, ``parallelism.default`` 1, the same rows given
by ``from_elements``)."""

from __future__ import annotations

from typing import Any

import pytest

from sessioncluster.spark.flinksql.boundedchangelog import changelog_query, ordered_changes
from sessioncluster.spark.flinksql.groupingsets import flink_order, grouping_sets
from sessioncluster.spark.flinksql.planner import to_spark_sql
from sessioncluster.spark.flinksql.statements import Query, parse_statements

#: the rows of ``nums`` in their source order
NUMS = [("a", 1), ("b", 5), ("a", 3), ("a", 2), ("b", 5), ("a", 3), ("b", 1)]
#: the rows of ``w`` (word, g, v) in their source order
WORDS = [("x", "p", 4), ("y", "q", 2), ("x", "p", 1), ("z", "p", 7), ("y", "q", 3),
         ("z", "q", 1), ("w", "p", 2), ("y", "p", 9), ("w", "q", 5), ("z", "p", 2)]


def query(text: str) -> Any:
    statement = parse_statements(text)[0]
    assert isinstance(statement, Query)
    return statement.ast


@pytest.fixture(scope="module")
def spark(local_spark: Any) -> Any:
    local_spark.conf.set("spark.sql.shuffle.partitions", "3")
    # three partitions: the source order runs across them
    rows = local_spark.sparkContext.parallelize
    local_spark.createDataFrame(rows(NUMS, 3), ["k", "v"]).createOrReplaceTempView("nums")
    local_spark.createDataFrame(rows(WORDS, 3), ["word", "g", "v"]).createOrReplaceTempView("w")
    local_spark.createDataFrame(rows([(i,) for i in range(1, 8)], 2), ["id"]) \
        .createOrReplaceTempView("gen")
    return local_spark


def table_columns(spark: Any) -> Any:
    """The columns of an aggregation's FROM when it is a table (the grouping sets' order)."""
    return lambda source: spark.table(source.name).columns if source.name else None


def changes(spark: Any, text: str) -> list[tuple[Any, ...]]:
    rewritten = changelog_query(query(text), table_columns(spark))
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
    # MIN/MAX over a changelog (MinWithRetract/MaxWithRetract): a retracted value leaves the
    # multiset; an unchanged result emits nothing
    "SELECT c, MAX(k) AS mk FROM (SELECT k, COUNT(*) AS c FROM nums GROUP BY k) GROUP BY c": [
        ("+I", 1, "a"), ("-U", 1, "a"), ("+U", 1, "b"), ("+I", 2, "a"), ("-D", 2, "a"),
        ("+I", 3, "a"), ("-D", 1, "b"), ("+I", 2, "b"), ("-D", 3, "a"), ("+I", 4, "a"),
        ("-D", 2, "b"), ("+I", 3, "b")],
    "SELECT MAX(cnt) AS m FROM (SELECT word, COUNT(*) AS cnt FROM w GROUP BY word)": [
        ("+I", 1), ("-U", 1), ("+U", 2), ("-U", 2), ("+U", 3)],
    "SELECT MIN(cnt) AS m FROM (SELECT word, COUNT(*) AS cnt FROM w GROUP BY word)": [
        ("+I", 1), ("-U", 1), ("+U", 2), ("-U", 2), ("+U", 1), ("-U", 1), ("+U", 2)],
    "SELECT g, MAX(cnt) AS m, MIN(cnt) AS n FROM (SELECT g, word, COUNT(*) AS cnt FROM w "
    "GROUP BY g, word) GROUP BY g": [
        ("+I", "p", 1, 1), ("+I", "q", 1, 1), ("-D", "p", 1, 1), ("+I", "p", 2, 2),
        ("-U", "p", 2, 2), ("+U", "p", 2, 1), ("-D", "q", 1, 1), ("+I", "q", 2, 2),
        ("-U", "q", 2, 2), ("+U", "q", 2, 1)],
    "SELECT MAX(s) AS m, MIN(s) AS n, COUNT(*) AS c FROM (SELECT word, SUM(v) AS s FROM w "
    "GROUP BY word)": [
        ("+I", 4, 4, 1), ("-U", 4, 4, 1), ("+U", 4, 2, 2), ("-U", 4, 2, 2), ("+U", 2, 2, 1),
        ("-U", 2, 2, 1), ("+U", 5, 2, 2), ("-U", 5, 2, 2), ("+U", 7, 2, 3), ("-U", 7, 2, 3),
        ("+U", 7, 5, 2), ("-U", 7, 5, 2), ("+U", 7, 5, 3), ("-U", 7, 5, 3), ("+U", 5, 5, 2),
        ("-U", 5, 5, 2), ("+U", 8, 5, 3), ("-U", 8, 5, 3), ("+U", 8, 2, 4), ("-U", 8, 2, 4),
        ("+U", 8, 2, 3), ("-U", 8, 2, 3), ("+U", 14, 2, 4), ("-U", 14, 2, 4),
        ("+U", 14, 5, 3), ("-U", 14, 5, 3), ("+U", 14, 5, 4), ("-U", 14, 5, 4),
        ("+U", 14, 5, 3), ("-U", 14, 5, 3), ("+U", 14, 5, 4)],
    # over a view (a common table expression), as table_streaming_topn_updating.py reads it
    "WITH per_word AS (SELECT word, COUNT(*) AS cnt, MAX(v) AS slowest FROM w GROUP BY word) "
    "SELECT MAX(cnt) AS most, MIN(cnt) AS fewest FROM per_word": [
        ("+I", 1, 1), ("-U", 1, 1), ("+U", 2, 1), ("-U", 2, 1), ("+U", 2, 2), ("-U", 2, 2),
        ("+U", 2, 1), ("-U", 2, 1), ("+U", 3, 1), ("-U", 3, 1), ("+U", 3, 2)],
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
    # grouping sets: each row's records in the order of its sets, Calcite's (a set before the
    # sets it contains, else by the smaller column position: k's before v's)
    "SELECT k, v, COUNT(*) AS c FROM nums GROUP BY GROUPING SETS ((k), (v), ())": [
        ("+I", "a", None, 1), ("+I", None, 1, 1), ("+I", None, None, 1), ("+I", "b", None, 1),
        ("+I", None, 5, 1), ("-U", None, None, 1), ("+U", None, None, 2), ("-U", "a", None, 1),
        ("+U", "a", None, 2), ("+I", None, 3, 1), ("-U", None, None, 2), ("+U", None, None, 3),
        ("-U", "a", None, 2), ("+U", "a", None, 3), ("+I", None, 2, 1), ("-U", None, None, 3),
        ("+U", None, None, 4), ("-U", "b", None, 1), ("+U", "b", None, 2), ("-U", None, 5, 1),
        ("+U", None, 5, 2), ("-U", None, None, 4), ("+U", None, None, 5), ("-U", "a", None, 3),
        ("+U", "a", None, 4), ("-U", None, 3, 1), ("+U", None, 3, 2), ("-U", None, None, 5),
        ("+U", None, None, 6), ("-U", "b", None, 2), ("+U", "b", None, 3), ("-U", None, 1, 1),
        ("+U", None, 1, 2), ("-U", None, None, 6), ("+U", None, None, 7)],
    "SELECT k, SUM(v) AS s FROM nums GROUP BY ROLLUP (k)": [
        ("+I", "a", 1), ("+I", None, 1), ("+I", "b", 5), ("-U", None, 1), ("+U", None, 6),
        ("-U", "a", 1), ("+U", "a", 4), ("-U", None, 6), ("+U", None, 9), ("-U", "a", 4),
        ("+U", "a", 6), ("-U", None, 9), ("+U", None, 11), ("-U", "b", 5), ("+U", "b", 10),
        ("-U", None, 11), ("+U", None, 16), ("-U", "a", 6), ("+U", "a", 9), ("-U", None, 16),
        ("+U", None, 19), ("-U", "b", 10), ("+U", "b", 11), ("-U", None, 19), ("+U", None, 20)],
    "SELECT k, v, COUNT(*) AS c FROM nums GROUP BY CUBE (k, v)": [
        ("+I", "a", 1, 1), ("+I", "a", None, 1), ("+I", None, 1, 1), ("+I", None, None, 1),
        ("+I", "b", 5, 1), ("+I", "b", None, 1), ("+I", None, 5, 1), ("-U", None, None, 1),
        ("+U", None, None, 2), ("+I", "a", 3, 1), ("-U", "a", None, 1), ("+U", "a", None, 2),
        ("+I", None, 3, 1), ("-U", None, None, 2), ("+U", None, None, 3), ("+I", "a", 2, 1),
        ("-U", "a", None, 2), ("+U", "a", None, 3), ("+I", None, 2, 1), ("-U", None, None, 3),
        ("+U", None, None, 4), ("-U", "b", 5, 1), ("+U", "b", 5, 2), ("-U", "b", None, 1),
        ("+U", "b", None, 2), ("-U", None, 5, 1), ("+U", None, 5, 2), ("-U", None, None, 4),
        ("+U", None, None, 5), ("-U", "a", 3, 1), ("+U", "a", 3, 2), ("-U", "a", None, 3),
        ("+U", "a", None, 4), ("-U", None, 3, 1), ("+U", None, 3, 2), ("-U", None, None, 5),
        ("+U", None, None, 6), ("+I", "b", 1, 1), ("-U", "b", None, 2), ("+U", "b", None, 3),
        ("-U", None, 1, 1), ("+U", None, 1, 2), ("-U", None, None, 6), ("+U", None, None, 7)],
    "SELECT k, v, COUNT(*) AS c FROM nums GROUP BY ROLLUP (k, v)": [
        ("+I", "a", 1, 1), ("+I", "a", None, 1), ("+I", None, None, 1), ("+I", "b", 5, 1),
        ("+I", "b", None, 1), ("-U", None, None, 1), ("+U", None, None, 2), ("+I", "a", 3, 1),
        ("-U", "a", None, 1), ("+U", "a", None, 2), ("-U", None, None, 2), ("+U", None, None, 3),
        ("+I", "a", 2, 1), ("-U", "a", None, 2), ("+U", "a", None, 3), ("-U", None, None, 3),
        ("+U", None, None, 4), ("-U", "b", 5, 1), ("+U", "b", 5, 2), ("-U", "b", None, 1),
        ("+U", "b", None, 2), ("-U", None, None, 4), ("+U", None, None, 5), ("-U", "a", 3, 1),
        ("+U", "a", 3, 2), ("-U", "a", None, 3), ("+U", "a", None, 4), ("-U", None, None, 5),
        ("+U", None, None, 6), ("+I", "b", 1, 1), ("-U", "b", None, 2), ("+U", "b", None, 3),
        ("-U", None, None, 6), ("+U", None, None, 7)],
    "SELECT k, v, SUM(v) AS s FROM nums GROUP BY k, ROLLUP (v)": [
        ("+I", "a", 1, 1), ("+I", "a", None, 1), ("+I", "b", 5, 5), ("+I", "b", None, 5),
        ("+I", "a", 3, 3), ("-U", "a", None, 1), ("+U", "a", None, 4), ("+I", "a", 2, 2),
        ("-U", "a", None, 4), ("+U", "a", None, 6), ("-U", "b", 5, 5), ("+U", "b", 5, 10),
        ("-U", "b", None, 5), ("+U", "b", None, 10), ("-U", "a", 3, 3), ("+U", "a", 3, 6),
        ("-U", "a", None, 6), ("+U", "a", None, 9), ("+I", "b", 1, 1), ("-U", "b", None, 10),
        ("+U", "b", None, 11)],
    "SELECT k, v, COUNT(*) AS c, GROUPING(k) AS gk FROM nums GROUP BY GROUPING SETS ((k), (v))": [
        ("+I", "a", None, 1, 0), ("+I", None, 1, 1, 1), ("+I", "b", None, 1, 0),
        ("+I", None, 5, 1, 1), ("-U", "a", None, 1, 0), ("+U", "a", None, 2, 0),
        ("+I", None, 3, 1, 1), ("-U", "a", None, 2, 0), ("+U", "a", None, 3, 0),
        ("+I", None, 2, 1, 1), ("-U", "b", None, 1, 0), ("+U", "b", None, 2, 0),
        ("-U", None, 5, 1, 1), ("+U", None, 5, 2, 1), ("-U", "a", None, 3, 0),
        ("+U", "a", None, 4, 0), ("-U", None, 3, 1, 1), ("+U", None, 3, 2, 1),
        ("-U", "b", None, 2, 0), ("+U", "b", None, 3, 0), ("-U", None, 1, 1, 1),
        ("+U", None, 1, 2, 1)],
}


@pytest.mark.parametrize("text", list(FLINK))
def test_the_changelog_is_flinks(spark: Any, text: str) -> None:
    assert changes(spark, text) == FLINK[text]


def test_grouping_sets_in_flinks_order_whatever_the_order_written(spark: Any) -> None:
    """PyFlink 2.3 printed the same rows for ``GROUPING SETS ((), (v), (k))``."""
    assert changes(spark, "SELECT k, v, COUNT(*) AS c FROM nums "
                          "GROUP BY GROUPING SETS ((), (v), (k))") == \
        FLINK["SELECT k, v, COUNT(*) AS c FROM nums GROUP BY GROUPING SETS ((k), (v), ())"]


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
    "SELECT SUM(DISTINCT c) FROM (SELECT k, COUNT(*) AS c FROM nums GROUP BY k)",
    "SELECT DISTINCT k, COUNT(*) FROM nums GROUP BY k",
    "SELECT a.k, COUNT(*) FROM nums a JOIN nums b ON a.k = b.k GROUP BY a.k",
    "SELECT k, COUNT(*) AS c FROM nums GROUP BY k ORDER BY c LIMIT 1",
    "SELECT k, my_udaf(v) FROM nums GROUP BY k",
    "SELECT k, SUM(DISTINCT v) FROM nums GROUP BY k",
    "SELECT k, COUNT(*) FILTER (WHERE v > 1) FROM nums GROUP BY k",
    "SELECT k, STDDEV_POP(v) FROM nums GROUP BY k",
    "SELECT k, COUNT(*) FROM nums WHERE v > (SELECT MIN(v) FROM nums) GROUP BY k",
    "SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v) AS r FROM nums",
    "SELECT k, COUNT(*) FROM nums GROUP BY ROLLUP (k)",  # the input's column order unknown
])
def test_other_shapes_are_left_as_they_are(text: str) -> None:
    assert changelog_query(query(text)) is None


@pytest.mark.parametrize("text", [
    "SELECT MOD(v, 2) AS m, COUNT(*) FROM nums GROUP BY ROLLUP (MOD(v, 2))",  # a computed key
    "SELECT k, COUNT(*) FROM nums GROUP BY GROUPING SETS ((k), (k))",  # a set twice
    "SELECT k, GROUPING(v) FROM nums GROUP BY ROLLUP (k)",  # GROUPING of no key
])
def test_grouping_sets_flink_orders_by_other_columns_are_left(spark: Any, text: str) -> None:
    assert changelog_query(query(text), table_columns(spark)) is None


def grouped(text: str) -> list[list[str]]:
    found = grouping_sets(query(text).args["group"])
    assert found is not None
    keys, sets = found
    return [[keys[i].sql() for i in s] for s in sets]


def test_grouping_sets_as_written() -> None:
    assert grouped("SELECT 1 FROM t GROUP BY ROLLUP (a, b)") == [["a", "b"], ["a"], []]
    assert grouped("SELECT 1 FROM t GROUP BY CUBE (a, b)") == [["a", "b"], ["a"], ["b"], []]
    assert grouped("SELECT 1 FROM t GROUP BY c, GROUPING SETS ((a), (a, b), ())") == [
        ["c", "a"], ["c", "a", "b"], ["c"]]
    assert grouping_sets(query("SELECT 1 FROM t GROUP BY a, b").args["group"]) is None


def test_flinks_order_of_grouping_sets() -> None:
    """Calcite's ImmutableBitSet.COMPARATOR over the keys' input positions: a set before its
    subsets, else the one whose next position is missing or smaller first."""
    sets = [(), (1,), (0,)]  # keys 0: v (input column 1), 1: k (input column 0)
    assert flink_order(sets, [1, 0]) == [(1,), (0,), ()]
    assert flink_order([(0,), (0, 1), (1,)], [0, 1]) == [(0, 1), (0,), (1,)]
    assert flink_order([(0,), (1, 2)], [0, 1, 2]) == [(0,), (1, 2)]
