"""More shapes of the changelog a STREAMING query over bounded sources gives record by record:
``LISTAGG``/``FIRST_VALUE``/``LAST_VALUE`` in a group aggregation (:mod:`.runningcalls`),
``ORDER BY .. LIMIT`` (:mod:`.sortlimit`, a Top-N), a Top-N ranking its own aggregation
(:mod:`.rankedaggregation`) and the set operations
(:mod:`.setoperations`), against the rows PyFlink 2.3 printed for the same queries
(``EnvironmentSettings.in_streaming_mode()``, ``parallelism.default`` 1, the same rows as
``VALUES`` views). A set operation's records depend on how Flink's two inputs interleave (a
race): those below are of runs where the left input came whole, then the right."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from sqlglot import exp
from test_flinksql_bounded_changelog import query

from sessioncluster.spark.flinksql.boundedchangelog import changelog_query, ordered_changes
from sessioncluster.spark.flinksql.planner import to_spark_sql
from sessioncluster.spark.flinksql.rankedaggregation import find_ranked_aggregation
from sessioncluster.spark.flinksql.setoperations import replicated, set_operation_changes
from sessioncluster.spark.flinksql.sortlimit import as_top_n, find_sort_limit
from sessioncluster.spark.flinksql.topn import changes as top_n_changes
from sessioncluster.spark.flinksql.topn import find_top_n

#: the rows of ``orders`` (order_id, product, amount) and ``other`` (product), in source order
ORDERS = [(1, "apple", 3), (2, "pear", 5), (3, "apple", 2), (4, "plum", 9), (5, "pear", 1),
          (6, "apple", 3), (7, "kiwi", 5)]
OTHER = [("apple",), ("fig",), ("pear",), ("apple",)]



@pytest.fixture(scope="module")
def spark(local_spark: Any) -> Any:
    local_spark.conf.set("spark.sql.shuffle.partitions", "3")
    # several partitions: the source order runs across them
    rows = local_spark.sparkContext.parallelize
    local_spark.createDataFrame(rows(ORDERS, 3), ["order_id", "product", "amount"]) \
        .createOrReplaceTempView("orders")
    local_spark.createDataFrame(rows(OTHER, 2), ["product"]).createOrReplaceTempView("other")
    return local_spark


def columns(spark: Any, source: exp.Expr) -> list[str]:
    return list(spark.sql(to_spark_sql(exp.select("*").from_(source.copy()), {})).columns)


def changes(spark: Any, text: str) -> list[tuple[str, ...]]:
    """The records Spark gives for the query, as printed: (op, cells...) as text."""
    names = partial(columns, spark)
    rewritten = changelog_query(query(text), names)
    if rewritten is not None:
        frame = ordered_changes(spark.sql(to_spark_sql(rewritten, {})))
    elif (found := find_sort_limit(query(text), names) or find_top_n(query(text))
          or find_ranked_aggregation(query(text))) is not None:
        frame = top_n_changes(spark, found, partial(to_spark_sql, tables={}), names)
    else:
        made = set_operation_changes(query(text), names)
        assert made is not None
        frame = spark.sql(to_spark_sql(made[0], {}))
        frame = ordered_changes(replicated(frame) if made[1] else frame)
    return [(r[-1], *(str(v) for v in r[:-1])) for r in frame.collect()]


# what PyFlink 2.3 printed (op, then the row's cells)
FLINK = {
    'SELECT * FROM orders ORDER BY amount DESC LIMIT 2': [
        ('+I', '1', 'apple', '3'), ('+I', '2', 'pear', '5'), ('-D', '1', 'apple', '3'),
        ('+I', '4', 'plum', '9'),
    ],
    'SELECT product, amount FROM orders ORDER BY amount LIMIT 3': [
        ('+I', 'apple', '3'), ('+I', 'pear', '5'), ('+I', 'apple', '2'), ('-D', 'pear', '5'),
        ('+I', 'pear', '1'),
    ],
    'SELECT order_id, amount FROM orders WHERE amount > 1 ORDER BY amount '
    'DESC, order_id LIMIT 2': [
        ('+I', '1', '3'), ('+I', '2', '5'), ('-D', '1', '3'), ('+I', '4', '9'),
    ],
    'SELECT * FROM orders ORDER BY product, amount DESC LIMIT 3': [
        ('+I', '1', 'apple', '3'), ('+I', '2', 'pear', '5'), ('+I', '3', 'apple', '2'),
        ('-D', '2', 'pear', '5'), ('+I', '6', 'apple', '3'),
    ],
    'SELECT * FROM orders ORDER BY amount DESC LIMIT 2 OFFSET 1': [
        ('+I', '1', 'apple', '3'), ('+I', '3', 'apple', '2'), ('-U', '1', 'apple', '3'),
        ('+U', '2', 'pear', '5'), ('-U', '3', 'apple', '2'), ('+U', '1', 'apple', '3'),
        ('-U', '1', 'apple', '3'), ('+U', '7', 'kiwi', '5'),
    ],
    'SELECT product, LISTAGG(CAST(order_id AS STRING)) AS ids FROM orders GROUP BY product': [
        ('+I', 'apple', '1'), ('+I', 'pear', '2'), ('-U', 'apple', '1'), ('+U', 'apple', '1,3'),
        ('+I', 'plum', '4'), ('-U', 'pear', '2'), ('+U', 'pear', '2,5'), ('-U', 'apple', '1,3'),
        ('+U', 'apple', '1,3,6'), ('+I', 'kiwi', '7'),
    ],
    "SELECT product, LISTAGG(CAST(amount AS STRING), ';') AS a FROM orders GROUP BY product": [
        ('+I', 'apple', '3'), ('+I', 'pear', '5'), ('-U', 'apple', '3'), ('+U', 'apple', '3;2'),
        ('+I', 'plum', '9'), ('-U', 'pear', '5'), ('+U', 'pear', '5;1'), ('-U', 'apple', '3;2'),
        ('+U', 'apple', '3;2;3'), ('+I', 'kiwi', '5'),
    ],
    "SELECT product, LISTAGG(product, '-') AS p FROM orders WHERE amount > "
    '2 GROUP BY product HAVING COUNT(*) > 1': [
        ('+U', 'apple', 'apple-apple'),
    ],
    'SELECT product, FIRST_VALUE(amount) AS f, LAST_VALUE(amount) AS l '
    'FROM orders GROUP BY product': [
        ('+I', 'apple', '3', '3'), ('+I', 'pear', '5', '5'), ('-U', 'apple', '3', '3'),
        ('+U', 'apple', '3', '2'), ('+I', 'plum', '9', '9'), ('-U', 'pear', '5', '5'),
        ('+U', 'pear', '5', '1'), ('-U', 'apple', '3', '2'), ('+U', 'apple', '3', '3'),
        ('+I', 'kiwi', '5', '5'),
    ],
    'SELECT FIRST_VALUE(product) AS f, LAST_VALUE(product) AS l FROM orders': [
        ('+I', 'apple', 'apple'), ('-U', 'apple', 'apple'), ('+U', 'apple', 'pear'),
        ('-U', 'apple', 'pear'), ('+U', 'apple', 'apple'), ('-U', 'apple', 'apple'),
        ('+U', 'apple', 'plum'), ('-U', 'apple', 'plum'), ('+U', 'apple', 'pear'),
        ('-U', 'apple', 'pear'), ('+U', 'apple', 'apple'), ('-U', 'apple', 'apple'),
        ('+U', 'apple', 'kiwi'),
    ],
    'SELECT product, LAST_VALUE(order_id) AS l, SUM(amount) AS s FROM orders GROUP BY product': [
        ('+I', 'apple', '1', '3'), ('+I', 'pear', '2', '5'), ('-U', 'apple', '1', '3'),
        ('+U', 'apple', '3', '5'), ('+I', 'plum', '4', '9'), ('-U', 'pear', '2', '5'),
        ('+U', 'pear', '5', '6'), ('-U', 'apple', '3', '5'), ('+U', 'apple', '6', '8'),
        ('+I', 'kiwi', '7', '5'),
    ],
    'SELECT product FROM orders INTERSECT SELECT product FROM other': [
        ('+I', 'apple'), ('+I', 'pear'),
    ],
    'SELECT product FROM orders EXCEPT ALL SELECT product FROM other': [
        ('+I', 'apple'), ('+I', 'pear'), ('-U', 'apple'), ('+U', 'apple'), ('+U', 'apple'),
        ('+I', 'plum'), ('-U', 'pear'), ('+U', 'pear'), ('+U', 'pear'), ('-U', 'apple'),
        ('-U', 'apple'), ('+U', 'apple'), ('+U', 'apple'), ('+U', 'apple'), ('+I', 'kiwi'),
        ('-U', 'apple'), ('-U', 'apple'), ('-U', 'apple'), ('+U', 'apple'), ('+U', 'apple'),
        ('-U', 'pear'), ('-U', 'pear'), ('+U', 'pear'), ('-U', 'apple'), ('-U', 'apple'),
        ('+U', 'apple'),
    ],
    'SELECT product FROM orders INTERSECT ALL SELECT product FROM other': [
        ('+U', 'apple'), ('+U', 'pear'), ('-U', 'apple'), ('+U', 'apple'), ('+U', 'apple'),
    ],
    'SELECT product FROM orders UNION SELECT product FROM other': [
        ('+I', 'apple'), ('+I', 'pear'), ('+I', 'plum'), ('+I', 'kiwi'), ('+I', 'fig'),
    ],
    'SELECT product FROM other EXCEPT SELECT product FROM orders': [
        ('+I', 'apple'), ('+I', 'fig'), ('+I', 'pear'), ('-D', 'apple'), ('-D', 'pear'),
    ],
    "SELECT product FROM orders EXCEPT SELECT 'apple'": [
        ('+I', 'apple'), ('+I', 'pear'), ('+I', 'plum'), ('+I', 'kiwi'), ('-D', 'apple'),
    ],
    "SELECT product FROM orders INTERSECT SELECT 'apple'": [
        ('+I', 'apple'),
    ],
    'SELECT product, amount FROM orders UNION SELECT product, amount FROM orders': [
        ('+I', 'apple', '3'), ('+I', 'pear', '5'), ('+I', 'apple', '2'), ('+I', 'plum', '9'),
        ('+I', 'pear', '1'), ('+I', 'kiwi', '5'),
    ],
    'SELECT product, SUM(amount) AS s FROM orders GROUP BY product ORDER BY s DESC LIMIT 2': [
        ('+I', 'apple', '3'), ('+I', 'pear', '5'), ('-D', 'apple', '3'), ('+I', 'apple', '5'),
        ('-D', 'apple', '5'), ('+I', 'plum', '9'), ('-D', 'pear', '5'), ('+I', 'apple', '5'),
        ('-D', 'apple', '5'), ('+I', 'pear', '6'), ('-D', 'pear', '6'), ('+I', 'apple', '8'),
    ],    # a Top-N ranking its own aggregation: Flink's RetractStrategy every time
    'SELECT * FROM (SELECT product, SUM(amount) AS s, ROW_NUMBER() OVER (ORDER BY '
    'SUM(amount) DESC) AS rn FROM orders GROUP BY product HAVING COUNT(*) > 1) WHERE rn '
    '<= 2': [
        ('+I', 'apple', '5', '1'), ('-U', 'apple', '5', '1'), ('+U', 'pear', '6', '1'),
        ('+I', 'apple', '5', '2'), ('-D', 'apple', '5', '2'), ('-U', 'pear', '6', '1'),
        ('+U', 'apple', '8', '1'), ('+I', 'pear', '6', '2'),
    ],
    'SELECT * FROM (SELECT product, COUNT(*) AS c, ROW_NUMBER() OVER (ORDER BY COUNT(*) '
    'DESC) AS rn FROM orders GROUP BY product) WHERE rn <= 2': [
        ('+I', 'apple', '1', '1'), ('+I', 'pear', '1', '2'), ('-U', 'apple', '1', '1'),
        ('+U', 'pear', '1', '1'), ('-D', 'pear', '1', '2'), ('-U', 'pear', '1', '1'),
        ('+U', 'apple', '2', '1'), ('+I', 'pear', '1', '2'), ('-U', 'pear', '1', '2'),
        ('+U', 'plum', '1', '2'), ('-U', 'plum', '1', '2'), ('+U', 'pear', '2', '2'),
        ('-U', 'apple', '2', '1'), ('+U', 'pear', '2', '1'), ('-U', 'pear', '2', '2'),
        ('+U', 'plum', '1', '2'), ('-U', 'pear', '2', '1'), ('+U', 'apple', '3', '1'),
        ('-U', 'plum', '1', '2'), ('+U', 'pear', '2', '2'),
    ],
    'SELECT product, s FROM (SELECT product, SUM(amount) AS s, ROW_NUMBER() OVER (ORDER '
    'BY SUM(amount)) AS rn FROM orders GROUP BY product) WHERE rn <= 1': [
        ('+I', 'apple', '3'), ('-D', 'apple', '3'), ('+I', 'pear', '5'), ('-D', 'pear', '5'),
        ('+I', 'apple', '5'), ('-D', 'apple', '5'), ('+I', 'pear', '6'), ('-D', 'pear', '6'),
        ('+I', 'kiwi', '5'),
    ],
    'SELECT * FROM (SELECT amount % 2 AS parity, SUM(amount) AS s, ROW_NUMBER() OVER '
    '(ORDER BY SUM(amount) DESC) AS rn FROM orders GROUP BY amount % 2) WHERE rn <= 1': [
        ('+I', '1', '3', '1'), ('-D', '1', '3', '1'), ('+I', '1', '8', '1'),
        ('-D', '1', '8', '1'), ('+I', '0', '2', '1'), ('-D', '0', '2', '1'),
        ('+I', '1', '17', '1'), ('-D', '1', '17', '1'), ('+I', '0', '2', '1'),
        ('-D', '0', '2', '1'), ('+I', '1', '18', '1'), ('-D', '1', '18', '1'),
        ('+I', '0', '2', '1'), ('-D', '0', '2', '1'), ('+I', '1', '21', '1'),
        ('-D', '1', '21', '1'), ('+I', '0', '2', '1'), ('-D', '0', '2', '1'),
        ('+I', '1', '26', '1'),
    ],
    'SELECT * FROM (SELECT c, COUNT(*) AS n, ROW_NUMBER() OVER (ORDER BY COUNT(*) DESC) '
    'AS rn FROM (SELECT product, COUNT(*) AS c FROM orders GROUP BY product) GROUP BY c) '
    'WHERE rn <= 2': [
        ('+I', '1', '1', '1'), ('-D', '1', '1', '1'), ('+I', '1', '2', '1'),
        ('-D', '1', '2', '1'), ('+I', '1', '1', '1'), ('+I', '2', '1', '2'),
        ('-U', '1', '1', '1'), ('+U', '2', '1', '1'), ('-D', '2', '1', '2'),
        ('-U', '2', '1', '1'), ('+U', '1', '2', '1'), ('+I', '2', '1', '2'),
        ('-U', '1', '2', '1'), ('+U', '2', '1', '1'), ('-D', '2', '1', '2'),
        ('+I', '1', '1', '2'), ('-U', '2', '1', '1'), ('+U', '1', '1', '1'),
        ('-D', '1', '1', '2'), ('-U', '1', '1', '1'), ('+U', '2', '2', '1'),
        ('+I', '1', '1', '2'), ('-U', '2', '2', '1'), ('+U', '1', '1', '1'),
        ('-D', '1', '1', '2'), ('+I', '2', '1', '2'), ('-U', '1', '1', '1'),
        ('+U', '2', '1', '1'), ('-U', '2', '1', '2'), ('+U', '3', '1', '2'),
        ('-U', '2', '1', '1'), ('+U', '1', '2', '1'), ('-U', '3', '1', '2'),
        ('+U', '2', '1', '2'),
    ],
    'SELECT product, s, rn FROM (SELECT product, s, ROW_NUMBER() OVER (ORDER BY s DESC) '
    'AS rn FROM (SELECT product, SUM(amount) AS s FROM orders GROUP BY product HAVING '
    'SUM(amount) > 4)) WHERE rn <= 2': [
        ('+I', 'pear', '5', '1'), ('+I', 'apple', '5', '2'), ('-U', 'pear', '5', '1'),
        ('+U', 'plum', '9', '1'), ('-U', 'apple', '5', '2'), ('+U', 'pear', '5', '2'),
        ('-U', 'pear', '5', '2'), ('+U', 'apple', '5', '2'), ('-U', 'apple', '5', '2'),
        ('+U', 'pear', '6', '2'), ('-U', 'pear', '6', '2'), ('+U', 'apple', '8', '2'),
    ],
    'SELECT * FROM (SELECT product, SUM(amount) AS s, ROW_NUMBER() OVER (PARTITION BY '
    'product ORDER BY SUM(amount) DESC) AS rn FROM orders GROUP BY product HAVING '
    'COUNT(*) > 1) WHERE rn <= 1': [
        ('+I', 'apple', '5', '1'), ('+I', 'pear', '6', '1'), ('-D', 'apple', '5', '1'),
        ('+I', 'apple', '8', '1'),
    ],
}


@pytest.mark.parametrize("text", list(FLINK))
def test_the_changelog_is_flinks(spark: Any, text: str) -> None:
    assert changes(spark, text) == [tuple(r) for r in FLINK[text]]


@pytest.mark.parametrize("text", [
    "SELECT * FROM orders LIMIT 2",  # no ORDER BY: Flink's Limit, insert-only
    "SELECT * FROM orders ORDER BY amount",  # no LIMIT
    "SELECT * FROM orders ORDER BY amount + 1 LIMIT 2 OFFSET x",
    "SELECT * FROM orders ORDER BY 3 LIMIT 2",  # an ordinal
    "SELECT product, SUM(amount) AS s FROM orders GROUP BY product ORDER BY MAX(amount) LIMIT 2",
])
def test_other_sort_limits_are_left(spark: Any, text: str) -> None:
    assert as_top_n(query(text), partial(columns, spark)) is None


@pytest.mark.parametrize("text", [
    "SELECT product FROM orders UNION ALL SELECT product FROM other",  # insert-only already
    "SELECT product FROM (SELECT product, COUNT(*) AS c FROM orders GROUP BY product) "
    "EXCEPT ALL SELECT product FROM other",  # a side that is a changelog
    "SELECT c FROM (SELECT product, COUNT(*) AS c FROM orders GROUP BY product) "
    "EXCEPT SELECT 1",  # an aggregate read: a changelog
    "SELECT product FROM orders EXCEPT SELECT product FROM other ORDER BY product LIMIT 1",
    "SELECT product FROM orders UNION SELECT product FROM other EXCEPT SELECT 'fig'",
])
def test_other_set_operations_are_left(spark: Any, text: str) -> None:
    assert set_operation_changes(query(text), partial(columns, spark)) is None


def test_a_ranked_aggregation_needs_its_keys_among_its_items() -> None:
    assert find_ranked_aggregation(query(
        "SELECT * FROM (SELECT product, ROW_NUMBER() OVER (ORDER BY SUM(amount)) AS rn "
        "FROM orders GROUP BY product) WHERE rn <= 1")) is None
