"""A bounded group aggregation joined with (inner) or ``UNION ALL``-ed to a bounded table in
STREAMING mode (:mod:`.boundedjoin`), against the rows PyFlink 2.3 printed
(``/work/briefs/data/boundedjoin/probe_explain.out``, parallelism 1, 2 runs each: the table's
rows first, then the aggregation's changelog). A join of two aggregations is left to its final
rows: Flink's two runs of it differed."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
import sqlglot
from sqlglot import exp
from test_flinksql_bounded_changelog import query

from sessioncluster.spark.flinksql.boundedjoin import table_first_changes, table_first_ordered
from sessioncluster.spark.flinksql.dialect import Flink
from sessioncluster.spark.flinksql.model import CatalogTable, Column
from sessioncluster.spark.flinksql.planner import to_spark_sql
from sessioncluster.spark.flinksql.streaming import plan_select

#: the probe's bounded tables, in source order
BWORDS = [("a", 1), ("b", 2), ("a", 3), ("b", 4), ("c", 5), ("a", 6), ("d", 7)]
OTHER = [("a", 1), ("c", 5), ("e", 9)]
AGG = "SELECT w, COUNT(*) AS n FROM bwords GROUP BY w"


@pytest.fixture(scope="module")
def spark(local_spark: Any) -> Any:
    local_spark.conf.set("spark.sql.shuffle.partitions", "3")
    rows = local_spark.sparkContext.parallelize  # several partitions: order runs across them
    local_spark.createDataFrame(rows(BWORDS, 3), "w STRING, v INT") \
        .createOrReplaceTempView("bwords")
    local_spark.createDataFrame(rows(OTHER, 2), "w STRING, v INT") \
        .createOrReplaceTempView("other")
    return local_spark


def changes(spark: Any, text: str) -> list[str] | None:
    """The records as the probe printed them (``+I['a', 1, 1]``); None: not rewritten."""
    def columns(source: exp.Expr) -> list[str]:
        return list(spark.sql(to_spark_sql(exp.select("*").from_(source.copy()), {})).columns)

    rewritten = table_first_changes(query(text), partial(columns))
    if rewritten is None:
        return None
    frame = table_first_ordered(spark.sql(to_spark_sql(rewritten, {})))
    return [f"{r[-1]}{list(r[:-1])}" for r in frame.collect()]


# what PyFlink 2.3 printed (probe_explain.out; B2 the same in setops' probe1_bounded.out)
B2 = ("+I['a', 1, 1] -U['a', 1, 1] +U['a', 2, 1] +I['c', 1, 5] -U['a', 2, 1] "
      "+U['a', 3, 1]")
FLINK = {
    f"SELECT a.w, a.n, o.v FROM ({AGG}) a JOIN other o ON a.w = o.w": B2,
    f"SELECT a.w, a.n, o.v FROM other o JOIN ({AGG}) a ON a.w = o.w": B2,
    f"{AGG} UNION ALL SELECT w, CAST(v AS BIGINT) FROM other": (
        "+I['a', 1] +I['c', 5] +I['e', 9] +I['a', 1] +I['b', 1] -U['a', 1] +U['a', 2] "
        "-U['b', 1] +U['b', 2] +I['c', 1] -U['a', 2] +U['a', 3] +I['d', 1]"),
}


@pytest.mark.parametrize("text", list(FLINK))
def test_flinks_records(spark: Any, text: str) -> None:
    assert " ".join(changes(spark, text) or []) == FLINK[text]


@pytest.mark.parametrize("text", [
    # two aggregations: Flink's order differed between its runs
    f"SELECT a.w, a.n, b.s FROM ({AGG}) a JOIN (SELECT w, SUM(v) AS s FROM bwords GROUP BY w) b "
    "ON a.w = b.w",
    f"SELECT a.w, a.n, o.v FROM ({AGG}) a LEFT JOIN other o ON a.w = o.w",  # not probed
    "SELECT w, v FROM bwords UNION ALL SELECT w, v FROM other",  # no aggregation
])
def test_other_shapes_not_rewritten(text: str) -> None:
    assert table_first_changes(query(text), lambda source: None) is None


@pytest.fixture()
def csv_tables(tmp_path: Any) -> dict[str, CatalogTable]:
    """``bwords`` and ``other`` as bounded filesystem tables (one CSV file each)."""
    tables = {}
    for name, rows in (("bwords", BWORDS), ("other", OTHER)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "part-0.csv").write_text("".join(f"{w},{v}\n" for w, v in rows))
        tables[name] = CatalogTable(name, [Column("w", "STRING"), Column("v", "INT")], {
            "connector": "filesystem", "format": "csv", "path": str(tmp_path / name)})
    return tables


@pytest.mark.parametrize("text", [list(FLINK)[0], list(FLINK)[2]])
def test_a_planned_statement_gives_flinks_records(local_spark: Any, csv_tables: Any,
                                                  text: str) -> None:
    statement = sqlglot.parse_one(text, read=Flink)
    insert = plan_select(local_spark, csv_tables, statement, {"parallelism.default": "1"}) \
        .inserts[0]
    assert insert.row_kinds
    assert " ".join(f"{r[-1]}{list(r[:-1])}" for r in insert.frame.collect()) == FLINK[text]
