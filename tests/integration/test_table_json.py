"""PyFlink's ``process_json_data.py`` program shape on a real session, in BATCH: JSON strings
from ``from_elements``, ``col('data').json_value(...)`` and the same in Flink SQL, compared with
the rows PyFlink 2.3's mini cluster prints for the same program (recorded below)."""

from __future__ import annotations

import json

import pytest

from sessioncluster.api.table.types import DataTypes
from sessioncluster.client.table_environment import TableEnvironment
from sessioncluster.pyflink.table import EnvironmentSettings
from sessioncluster.pyflink.table.expressions import col

pytestmark = pytest.mark.integration

ELEMENTS = [
    (1, '{"name": "Flink", "tel": 123, "addr": {"country": "Germany", "city": "Berlin"}}'),
    (2, '{"name": "hello", "tel": 135, "addr": {"country": "China", "city": "Shanghai"}}'),
    (3, '{"name": "world", "tel": 124, "addr": {"country": "USA", "city": "NewYork"}}'),
    (4, '{"name": "PyFlink", "tel": 32, "addr": {"country": "China", "city": "Hangzhou"}}'),
]


def test_process_json_data_as_pyflinks_example(session) -> None:
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode(), session=session)
    table = t_env.from_elements(elements=ELEMENTS, schema=["id", "data"])

    result = table.select(col("id"), col("data").json_value("$.addr.country",
                                                            DataTypes.STRING())).execute()
    # PyFlink 2.3: +----+---------+  id | _c1 ; 1 Germany, 2 China, 3 USA, 4 China
    assert result.get_table_schema().get_field_names() == ["id", "_c1"]
    assert sorted(tuple(r) for r in result.collect()) == [
        (1, "Germany"), (2, "China"), (3, "USA"), (4, "China")]

    t_env.create_temporary_view("json_docs", table)
    result = t_env.execute_sql("SELECT id, JSON_VALUE(data, '$.addr.country') AS country, "
                               "JSON_VALUE(data, '$.tel' RETURNING INT) AS tel FROM json_docs")
    # PyFlink 2.3: id | country | tel ; 1 Germany 123, 2 China 135, 3 USA 124, 4 China 32
    assert result.get_table_schema().get_field_names() == ["id", "country", "tel"]
    assert sorted(tuple(r) for r in result.collect()) == [
        (1, "Germany", 123), (2, "China", 135), (3, "USA", 124), (4, "China", 32)]


def test_json_aggregates_of_the_table_api_as_pyflinks(session) -> None:
    from sessioncluster.pyflink.table.expression import JsonOnNull
    from sessioncluster.pyflink.table.expressions import json_array_agg, json_object_agg

    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode(), session=session)
    table = t_env.from_elements([(1, "b", 2), (1, "a", 1), (2, "c", 3), (1, "c", None)],
                                DataTypes.ROW([DataTypes.FIELD("g", DataTypes.INT()),
                                               DataTypes.FIELD("k", DataTypes.STRING()),
                                               DataTypes.FIELD("n", DataTypes.INT())]))
    grouped = table.group_by(col("g"))
    # PyFlink 2.3's columns and rows of the same programs
    cases = [
        (grouped.select(col("g"), json_object_agg(JsonOnNull.NULL, col("k"), col("n"))),
         ["g", "EXPR$0"], [(1, '{"a":1,"b":2,"c":null}'), (2, '{"c":3}')]),
        (grouped.select(col("g"), json_object_agg(JsonOnNull.ABSENT, col("k"), col("n"))),
         ["g", "EXPR$0"], [(1, '{"a":1,"b":2}'), (2, '{"c":3}')]),
        (grouped.select(col("g"), json_object_agg(JsonOnNull.NULL, col("k"), col("n"))
                        .alias("o"), col("n").count),
         ["g", "o", "EXPR$1"], [(1, '{"a":1,"b":2,"c":null}', 2), (2, '{"c":3}', 1)]),
    ]
    for query, names, rows in cases:
        result = query.execute()
        assert result.get_table_schema().get_field_names() == names
        assert sorted(tuple(r) for r in result.collect()) == rows
    # PyFlink 2.3 (parallelism 1): '[2,1,null]', '[3]' and '[2,1,3]': an array's items come in
    # the order the rows reach the aggregate, here from several partitions: compared as sets
    arrays = [
        (grouped.select(col("g"), json_array_agg(JsonOnNull.NULL, col("n"))),
         ["g", "EXPR$0"], [(1, [1, 2, None]), (2, [3])]),
        (table.select(json_array_agg(JsonOnNull.ABSENT, col("n"))), ["EXPR$0"], [([1, 2, 3],)]),
    ]
    for query, names, rows in arrays:
        result = query.execute()
        assert result.get_table_schema().get_field_names() == names
        assert sorted((*r[:-1], sorted(json.loads(r[-1]), key=repr))
                      for r in result.collect()) == rows
