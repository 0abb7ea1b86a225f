"""The Table API's local data on a real session: ``from_elements``/``from_pandas`` register a
temporary view of the session's SparkSession with the declared types (read back here with Spark
SQL; running Flink SQL is the JobManager's ``execute_flink_sql``, tested with it)."""

from __future__ import annotations

import pandas as pd

from sessioncluster.api.table.types import DataTypes
from sessioncluster.client.table_environment import TableEnvironment
from sessioncluster.common.types import Row
from sessioncluster.pyflink.table import EnvironmentSettings


def test_from_elements_and_from_pandas_register_typed_views(session) -> None:
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode(), session=session)
    schema = DataTypes.ROW([
        DataTypes.FIELD("id", DataTypes.TINYINT()),
        DataTypes.FIELD("n", DataTypes.INT()),
        DataTypes.FIELD("r", DataTypes.ROW([DataTypes.FIELD("x", DataTypes.INT()),
                                            DataTypes.FIELD("y", DataTypes.STRING())])),
        DataTypes.FIELD("a", DataTypes.ARRAY(DataTypes.BIGINT())),
    ])
    t = t_env.from_elements([(1, None, Row(x=1, y="a"), [1, 2]), (2, 7, Row(x=2, y="b"), [])],
                            schema)
    # Spark SQL reads the same text here (a SELECT * FROM `<view>`)
    types = session.sql(f"DESCRIBE {t.query_sql.split(' FROM ')[1]}")
    assert dict(zip(types["col_name"], types["data_type"])) == {
        "id": "tinyint", "n": "int", "r": "struct<x:int,y:string>", "a": "array<bigint>"}
    rows = session.sql(t.query_sql + " ORDER BY id")
    assert rows["id"].tolist() == [1, 2]
    assert pd.isna(rows["n"][0]) and rows["n"][1] == 7
    assert [r["y"] for r in rows["r"]] == ["a", "b"]
    assert [list(a) for a in rows["a"]] == [[1, 2], []]

    untyped = t_env.from_elements([(1, "Hi"), (2, "Hello")], ["id", "data"])
    back = session.sql(untyped.query_sql + " ORDER BY id")
    assert back.to_dict("records") == [{"id": 1, "data": "Hi"}, {"id": 2, "data": "Hello"}]
    assert str(back["id"].dtype) == "int64"  # PyFlink's default for a Python int: BIGINT

    pdf = t_env.from_pandas(pd.DataFrame({"w": ["x", "y"], "c": [1.5, 2.5]}), ["word", "score"])
    assert session.sql(pdf.query_sql + " ORDER BY word").to_dict("records") == [
        {"word": "x", "score": 1.5}, {"word": "y", "score": 2.5}]
