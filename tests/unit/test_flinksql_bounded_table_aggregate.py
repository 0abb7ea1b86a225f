"""``flat_aggregate`` over an updating table (a ``group_by().select()``) in STREAMING mode over a
bounded source: the rows Spark gives against those PyFlink 2.3 printed for the same query
(/work/briefs/data/updwin/probe1.py, cases 2b and 2c: ``parallelism.default`` 1, the rows of one
CSV file). The whole input is one bundle of Flink's Python table aggregation: each key's final
rows, each ``+I``."""

from __future__ import annotations

from typing import Any

import pytest
import sqlglot

from sessioncluster.api.table.udf import TableAggregateFunction, udtaf
from sessioncluster.spark.flinksql.dialect import Flink
from sessioncluster.spark.flinksql.functions import CatalogFunction, FunctionCatalog
from sessioncluster.spark.flinksql.model import CatalogTable, Column, FlinkSqlError
from sessioncluster.spark.flinksql.streaming import plan_select
from tests.integration.test_flat_aggregate_streaming import ListTop2, Top2  # importable by workers

#: (k, w, v) in the file's order
VALS = [("x", "p", 1), ("x", "q", 5), ("y", "p", 2), ("x", "p", 3), ("y", "q", 9),
        ("x", "q", -4), ("y", "p", 1)]
SUMS = "(SELECT k, w, SUM(v) AS s FROM vals GROUP BY k, w)"



@pytest.fixture()
def vals(tmp_path: Any) -> dict[str, CatalogTable]:
    """``vals`` as a bounded filesystem table (one CSV file)."""
    (tmp_path / "part-0.csv").write_text("".join(f"{k},{w},{v}\n" for k, w, v in VALS))
    columns = [Column("k", "STRING"), Column("w", "STRING"), Column("v", "INT")]
    return {"vals": CatalogTable("vals", columns, {"connector": "filesystem", "format": "csv",
                                                   "path": str(tmp_path)})}


def run(spark: Any, tables: dict[str, CatalogTable], query: Any,
        function: TableAggregateFunction) -> list[tuple[Any, ...]]:
    """The rows of the STREAMING SELECT over bounded ``tables``, each with its RowKind."""
    functions = FunctionCatalog(spark)
    wrapper = udtaf(function, result_type="ROW<a INT>")
    functions.functions["top2"] = CatalogFunction(type(function).__name__, wrapper, "top2")
    insert = plan_select(spark, tables, query, {"parallelism.default": "1"}, functions).inserts[0]
    assert not insert.row_kinds and insert.output_mode == "append"
    return [("+I", *r) for r in insert.frame.collect()]


def flat_aggregate(keyed: bool) -> Any:
    """The SQL of ``sums[.group_by(k)].flat_aggregate(top2(s))``, as the Table API writes it."""
    key = "`k`, " if keyed else ""
    group = " GROUP BY `k`" if keyed else ""
    return sqlglot.parse_one(
        f"SELECT {key}`_u`.`_r`.`a` AS a FROM (SELECT {key}top2(`s`) AS `_rows` FROM {SUMS}"
        f"{group}) AS `_g` CROSS JOIN UNNEST(`_rows`) AS `_u`(`_r`)", read=Flink)


@pytest.mark.parametrize("keyed, flink", [
    (True, [("+I", "x", 4), ("+I", "x", 1), ("+I", "y", 9), ("+I", "y", 3)]),
    (False, [("+I", 9), ("+I", 4)])])
def test_each_keys_final_rows_as_flink_prints_them(local_spark: Any, vals: Any, keyed: bool,
                                                   flink: list[tuple[Any, ...]]) -> None:
    assert run(local_spark, vals, flat_aggregate(keyed), ListTop2()) == flink


def test_without_retract_it_is_refused_with_pyflinks_message(local_spark: Any, vals: Any) -> None:
    """PyFlink 2.3's job fails so (case 2a): the sums of (x, p) and (x, q) change."""
    with pytest.raises(FlinkSqlError, match="^Method retract is not implemented"):
        run(local_spark, vals, flat_aggregate(True), Top2())
