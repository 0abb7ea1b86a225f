"""PyFlink's ListView and MapView in an AggregateFunction's accumulator, as PyFlink 2.3 gives
them (/work/briefs/data/lead28/dataview.py and .out): their API, and a count of distinct
values kept in a MapView, in BATCH and on keyed state in STREAMING."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from pyspark import cloudpickle

from sessioncluster.api.table.dataview import ListView, MapView
from sessioncluster.api.table.types import DataTypes
from sessioncluster.api.table.udf import AggregateFunction, udaf
from sessioncluster.client.shipping import dumps_user_code
from sessioncluster.common.types import Row
from sessioncluster.spark.flinksql.executor import FlinkSqlPlanner
from sessioncluster.spark.flinksql.statements import CreateFunction
from tests.unit.test_flinksql_python_aggregate import run_files


class CountDistinct(AggregateFunction):
    """PyFlink's documented CountDistinct: each value's count in a MapView."""

    def create_accumulator(self) -> Row:
        return Row(MapView(), 0)

    def accumulate(self, acc: Row, value: Any) -> None:
        if acc[0].contains(value):
            acc[0][value] += 1
        else:
            acc[0][value] = 1
            acc[1] += 1

    def retract(self, acc: Row, value: Any) -> None:
        if acc[0].contains(value):
            if acc[0][value] == 1:
                acc[0].remove(value)
                acc[1] -= 1
            else:
                acc[0][value] -= 1

    def get_value(self, acc: Row) -> int:
        return acc[1]

    def get_accumulator_type(self) -> Any:
        return DataTypes.ROW([
            DataTypes.FIELD("f0", DataTypes.MAP_VIEW(DataTypes.BIGINT(), DataTypes.BIGINT())),
            DataTypes.FIELD("f1", DataTypes.BIGINT())])

    def get_result_type(self) -> Any:
        return DataTypes.BIGINT()


def test_the_views_api_as_pyflinks() -> None:
    """dataview.out [mapview] .. [types]."""
    mv: MapView[str, int] = MapView()
    mv.put("a", 1)
    mv.put_all({"b": 2})
    assert (mv.get("a"), mv.contains("b"), sorted(mv.keys()), sorted(mv.values()),
            sorted(mv.items()), mv.is_empty(), len(list(iter(mv)))) == (
        1, True, ["a", "b"], [1, 2], [("a", 1), ("b", 2)], False, 2)
    mv.remove("a")
    assert sorted(mv.items()) == [("b", 2)] and "b" in mv and mv["b"] == 2
    mv.clear()
    assert mv.is_empty()
    with pytest.raises(KeyError):
        mv.get("a")
    lv: ListView[int] = ListView()
    lv.add(1)
    lv.add_all([2, 3])
    assert list(lv.get()) == [1, 2, 3] == list(lv) and lv != ListView()
    assert (str(DataTypes.LIST_VIEW(DataTypes.STRING())),
            str(DataTypes.MAP_VIEW(DataTypes.STRING(), DataTypes.BIGINT()))) == (
        "LISTVIEW", "MAPVIEW")
    with pytest.raises(ValueError, match="data view in an accumulator only"):
        DataTypes.LIST_VIEW(DataTypes.STRING()).spark_ddl()


@pytest.fixture
def planner(local_spark: Any, tmp_path: Path) -> Iterator[FlinkSqlPlanner]:
    module = sys.modules[CountDistinct.__module__]  # Spark's workers cannot import it
    cloudpickle.register_pickle_by_value(module)
    planner = FlinkSqlPlanner(local_spark)
    planner.functions.create(CreateFunction("cd", "x.CountDistinct", "PYTHON", True, True),
                             dumps_user_code(udaf(CountDistinct())), {})
    (tmp_path / "t").mkdir()
    planner.plan(f"""CREATE TABLE t (k STRING, v BIGINT, w BIGINT) WITH ('connector' =
        'filesystem', 'path' = '{tmp_path / "t"}', 'format' = 'csv',
        'source.monitor-interval' = '1s')""")
    yield planner
    cloudpickle.unregister_pickle_by_value(module)


def test_a_map_view_accumulator_in_both_modes(planner: FlinkSqlPlanner, tmp_path: Path) -> None:
    """STREAMING, each file's changes as the wavg of test_flinksql_python_aggregate's (the
    distinct v per k: file 0 x {2, 4}, y {5}; file 1 adds x 3, y 1, z 7; file 2 y 3, x 9);
    then BATCH over the three files: the final counts."""
    assert run_files(planner, "SELECT k, cd(v) AS n FROM t GROUP BY k", tmp_path) == [
        ["+I['x', 2]", "+I['y', 1]"],
        ["+I['z', 1]", "+U['x', 3]", "+U['y', 2]", "-U['x', 2]", "-U['y', 1]"],
        ["+U['x', 4]", "+U['y', 3]", "-U['x', 3]", "-U['y', 2]"]]
    outcome = planner.plan("SELECT k, cd(v) AS n FROM t GROUP BY k", "BATCH")
    assert sorted(tuple(r) for r in outcome.job.run().collect()) == [
        ("x", 4), ("y", 3), ("z", 1)]
