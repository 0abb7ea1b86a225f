"""``LISTAGG(DISTINCT x)``, and ``LISTAGG``/``FIRST_VALUE``/``LAST_VALUE`` over another
aggregation's changelog (Flink's retract variants, :mod:`.runningcalls`), an aggregate its reader
does not use pruned, and ``JOIN LATERAL TABLE(f(x)) ON TRUE`` as the comma form's join, against
the rows PyFlink 2.3 printed for the same queries (``in_streaming_mode()``,
``parallelism.default`` 1, ``orders`` of :mod:`test_flinksql_bounded_shapes`)."""

from __future__ import annotations

from typing import Any

import pytest
from test_flinksql_bounded_changelog import query
from test_flinksql_bounded_shapes import changes, spark  # noqa: F401 (the fixture)

from sessioncluster.api.table.types import DataTypes
from sessioncluster.api.table.udf import udf, udtf
from sessioncluster.spark.flinksql.boundedchangelog import is_table_function_join
from sessioncluster.spark.flinksql.functions import OUTER, CatalogFunction, FunctionCatalog
from sessioncluster.spark.flinksql.planner import to_spark_sql

LISTAGG_DISTINCT = [
    ('+I', 'apple', '3', '1'), ('+I', 'pear', '5', '1'), ('-U', 'apple', '3', '1'),
    ('+U', 'apple', '3,2', '2'), ('+I', 'plum', '9', '1'), ('-U', 'pear', '5', '1'),
    ('+U', 'pear', '5,1', '2'), ('-U', 'apple', '3,2', '2'), ('+U', 'apple', '3,2', '3'),
    ('+I', 'kiwi', '5', '1'),
]
# a -U of the inner aggregation takes its value out (the earliest equal one): 'pear' alone
OVER_CHANGES = [
    ('+I', '1', 'apple', 'apple', 'apple'), ('-U', '1', 'apple', 'apple', 'apple'),
    ('+U', '1', 'apple,pear', 'apple', 'pear'), ('-U', '1', 'apple,pear', 'apple', 'pear'),
    ('+U', '1', 'pear', 'pear', 'pear'), ('+I', '2', 'apple', 'apple', 'apple'),
    ('-U', '1', 'pear', 'pear', 'pear'), ('+U', '1', 'pear,plum', 'pear', 'plum'),
    ('-U', '1', 'pear,plum', 'pear', 'plum'), ('+U', '1', 'plum', 'plum', 'plum'),
    ('-U', '2', 'apple', 'apple', 'apple'), ('+U', '2', 'apple,pear', 'apple', 'pear'),
    ('-U', '2', 'apple,pear', 'apple', 'pear'), ('+U', '2', 'pear', 'pear', 'pear'),
    ('+I', '3', 'apple', 'apple', 'apple'), ('-U', '1', 'plum', 'plum', 'plum'),
    ('+U', '1', 'plum,kiwi', 'plum', 'kiwi'),
]
# apple's -U 3 then +U 5 leave (5, 5) as it was: no record
FIRST_LAST = [
    ('+I', '3', '3'), ('-U', '3', '3'), ('+U', '3', '5'), ('-U', '3', '5'), ('+U', '5', '5'),
    ('-U', '5', '5'), ('+U', '5', '9'), ('-U', '5', '9'), ('+U', '5', '6'), ('-U', '5', '6'),
    ('+U', '9', '6'), ('-U', '9', '6'), ('+U', '9', '8'), ('-U', '9', '8'), ('+U', '9', '5'),
]
# MAX(amount) unused: the inner GROUP BY gives +I per new product only
PRUNED = [
    ('+I', '1', 'apple'), ('-U', '1', 'apple'), ('+U', '2', 'apple,pear'),
    ('-U', '2', 'apple,pear'), ('+U', '3', 'apple,pear,plum'), ('-U', '3', 'apple,pear,plum'),
    ('+U', '4', 'apple,pear,plum,kiwi'),
]


@pytest.mark.parametrize("text, flink", [
    ("SELECT product, LISTAGG(DISTINCT CAST(amount AS STRING)) AS a, COUNT(*) AS n "
     "FROM orders GROUP BY product", LISTAGG_DISTINCT),
    ("SELECT n, LISTAGG(product) AS ps, FIRST_VALUE(product) AS f, LAST_VALUE(product) AS l "
     "FROM (SELECT product, COUNT(*) AS n FROM orders GROUP BY product) GROUP BY n",
     OVER_CHANGES),
    ("SELECT FIRST_VALUE(s) AS f, LAST_VALUE(s) AS l FROM "
     "(SELECT product, SUM(amount) AS s FROM orders GROUP BY product)", FIRST_LAST),
    ("SELECT COUNT(*) AS n, LISTAGG(product) AS ps FROM "
     "(SELECT product, MAX(amount) AS m FROM orders GROUP BY product)", PRUNED),
])
def test_changes_are_flinks(spark: Any, text: str, flink: list[tuple[str, ...]]) -> None:  # noqa: F811
    assert changes(spark, text) == flink


# PyFlink 2.3 (/work/briefs/data/lead/listagg_distinct.py): a value joins the list when its
# count becomes 1 and leaves it at 0; an unchanged result gives no record
DISTINCT_OVER_CHANGES = [
    ("SELECT LISTAGG(DISTINCT CAST(n AS STRING)) AS ns, COUNT(*) AS c FROM "
     "(SELECT product, COUNT(*) AS n FROM orders GROUP BY product)",
     [('+I', '1', '1'), ('-U', '1', '1'), ('+U', '1', '2'), ('-U', '1', '2'), ('+U', '1', '1'),
      ('-U', '1', '1'), ('+U', '1,2', '2'), ('-U', '1,2', '2'), ('+U', '1,2', '3'),
      ('-U', '1,2', '3'), ('+U', '1,2', '2'), ('-U', '1,2', '2'), ('+U', '1,2', '3'),
      ('-U', '1,2', '3'), ('+U', '1,2', '2'), ('-U', '1,2', '2'), ('+U', '1,2,3', '3'),
      ('-U', '1,2,3', '3'), ('+U', '1,2,3', '4')]),
    ("SELECT n, LISTAGG(DISTINCT product, ';') AS ps, COUNT(DISTINCT product) AS c FROM "
     "(SELECT product, COUNT(*) AS n FROM orders GROUP BY product) GROUP BY n",
     [(op, n, ps.replace(',', ';'), str(len(ps.split(',')))) for op, n, ps, _, _ in OVER_CHANGES]),
    ("SELECT LISTAGG(DISTINCT CAST(s AS STRING)) AS ss FROM "
     "(SELECT product, SUM(amount) AS s FROM orders GROUP BY product)",
     [('+I', '3'), ('-U', '3'), ('+U', '3,5'), ('-U', '3,5'), ('+U', '5'), ('-U', '5'),
      ('+U', '5,9'), ('-U', '5,9'), ('+U', '5,9,6'), ('-U', '5,9,6'), ('+U', '9,6'),
      ('-U', '9,6'), ('+U', '9,6,8'), ('-U', '9,6,8'), ('+U', '9,6,8,5')]),
]


@pytest.mark.parametrize("text, flink", DISTINCT_OVER_CHANGES)
def test_distinct_calls_over_changes_are_flinks(spark: Any, text: str,  # noqa: F811
                                                flink: list[tuple[str, ...]]) -> None:
    assert changes(spark, text) == flink


def test_join_lateral_on_true_is_the_comma_join() -> None:
    text = "SELECT order_id, c FROM orders {} LATERAL TABLE(letters(product)) AS T(c) ON TRUE"
    inner, left = query(text.format("JOIN")), query(text.format("LEFT JOIN"))
    assert is_table_function_join(inner.args["joins"][0])
    assert not is_table_function_join(left.args["joins"][0])
    assert "CROSS JOIN LATERAL LETTERS(product)" in to_spark_sql(inner, {})
    assert "LEFT JOIN LATERAL" in to_spark_sql(left, {})  # its catalog makes it an outer call


def test_catalog_functions_in_outer_joins_and_typed_aggregates() -> None:
    """The catalog makes ``LEFT JOIN LATERAL TABLE(f(x)) ON TRUE`` the CROSS JOIN of f's outer
    variant, and types a Python function's INT result within SUM (PyFlink 2.3: ``SUM(twice(
    amount))`` is INT, ``twice`` an ``udf(result_type=DataTypes.INT())``)."""
    functions = FunctionCatalog(None)
    for name, wrapper in [("upto", udtf(lambda n: range(n), result_types=[DataTypes.INT()])),
                          ("twice", udf(lambda x: 2 * x, result_type=DataTypes.INT()))]:
        functions.functions[name] = CatalogFunction(name, wrapper, name)
    renamed = functions.rename_calls(query(
        "SELECT product, SUM(twice(amount)) AS s, MAX(twice(amount)) + twice(1) AS m, COUNT(i) "
        "FROM orders LEFT JOIN LATERAL TABLE(upto(order_id)) AS T(i) ON TRUE GROUP BY product"))
    spark_sql = to_spark_sql(renamed, {})
    assert f"CROSS JOIN LATERAL UPTO{OUTER}(ORDER_ID) AS T(I)".upper() in spark_sql.upper()
    assert "SUM(CAST(TWICE(AMOUNT) AS INT))" in spark_sql.upper().replace("`", "")
    assert "MAX(CAST(TWICE(AMOUNT) AS INT)) + TWICE(1)" in spark_sql.upper().replace("`", "")
    plain = query("SELECT twice(amount) FROM orders")
    assert functions.rename_calls(plain) is plain


def test_a_union_of_unions_is_one_union(spark: Any) -> None:  # noqa: F811
    """Calcite merges ``a UNION b UNION c`` into one union of three: ``+I`` of each row where
    it first comes, the inputs in order (PyFlink 2.3's printout; the inputs' interleaving is a
    race in Flink)."""
    assert changes(spark, "SELECT product FROM orders UNION SELECT product FROM other "
                          "UNION SELECT 'zz'") == [
        ('+I', 'apple'), ('+I', 'pear'), ('+I', 'plum'), ('+I', 'kiwi'), ('+I', 'fig'),
        ('+I', 'zz')]


@pytest.mark.parametrize("operation, flink", [
    ("UNION", [('+I', 'apple'), ('+I', 'pear'), ('+I', 'plum'), ('+I', 'kiwi'), ('+I', 'fig')]),
    ("INTERSECT", [('+I', 'apple'), ('+I', 'pear')]),
])
def test_a_set_operation_over_the_keys_of_an_aggregation(spark: Any, operation: str,  # noqa: F811
                                                         flink: list[tuple[str, ...]]) -> None:
    """The aggregation's unused COUNT pruned, its keys come where they first come (a run of
    PyFlink 2.3 where the left input came first; the interleaving is a race in Flink)."""
    assert changes(spark, "SELECT product FROM (SELECT product, COUNT(*) AS n FROM orders "
                          f"GROUP BY product) {operation} SELECT product FROM other") == flink
