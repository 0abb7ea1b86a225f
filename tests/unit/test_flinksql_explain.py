"""EXPLAIN as Flink prints it, on a local SparkSession: Flink's three sections with its node
names (compared with what Flink 2.3 printed for the same statements, by structure), Spark's plan
last, the ExplainDetails."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from sessioncluster.spark.flinksql.executor import FlinkSqlPlanner
from sessioncluster.spark.flinksql.explain import (
    PlanNode,
    as_table_aggregate,
    as_table_aggregate_ast,
    render,
)
from sessioncluster.spark.flinksql.model import FlinkSqlError
from sessioncluster.spark.flinksql.statements import Explain, parse_statement

SECTIONS = ["== Abstract Syntax Tree ==", "== Optimized Physical Plan ==",
            "== Optimized Execution Plan ==", "== Spark Physical Plan =="]


@pytest.fixture(scope="module")
def spark(local_spark: Any) -> Any:
    return local_spark


@pytest.fixture
def planner(spark: Any, tmp_path: Path) -> FlinkSqlPlanner:
    (tmp_path / "t.csv").write_text("a,1,2020-01-01 00:00:01\nb,2,2020-01-01 00:00:05\n")
    (tmp_path / "u.csv").write_text("a,en\n")
    p = FlinkSqlPlanner(spark)
    p.plan(f"""CREATE TABLE t (word STRING, cnt INT, ts TIMESTAMP(3),
                 WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
               WITH ('connector' = 'filesystem', 'path' = '{tmp_path / "t.csv"}',
                     'format' = 'csv')""")
    p.plan(f"""CREATE TABLE u (word STRING, lang STRING) WITH ('connector' = 'filesystem',
               'path' = '{tmp_path / "u.csv"}', 'format' = 'csv')""")
    p.plan("CREATE TABLE s (word STRING, total BIGINT) WITH ('connector' = 'blackhole')")
    return p


def explain(planner: FlinkSqlPlanner, statement: str, mode: str = "BATCH") -> dict[str, str]:
    outcome = planner.plan(statement, mode)
    assert (outcome.columns, outcome.column_types, outcome.job) == (["result"], ["STRING"], None)
    text = outcome.rows[0][0]
    assert [line for line in text.splitlines() if line.startswith("== ")][:4] == SECTIONS
    parts = re.split("^(" + "|".join(re.escape(s) for s in SECTIONS) + ")$", text, flags=re.M)
    return {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def nodes(section: str) -> list[str]:
    """The node names of a plan section, top down (Flink's tree prefixes removed)."""
    return [re.sub(r"^[ :|+-]*", "", line).split("(")[0] for line in section.splitlines()]


def test_projection_and_filter_as_flink(planner) -> None:
    # Flink 2.3:  LogicalProject(word=[$0], c2=[*($1, 2)])
    #             +- LogicalFilter(condition=[>($1, 1)])
    #                +- LogicalTableScan(table=[[default_catalog, default_database, t]])
    #             Calc(select=[word, (cnt * 2) AS c2], where=[(cnt > 1)])
    #             +- TableSourceScan(table=[[default_catalog, default_database, t, ...]], ...)
    plan = explain(planner, "EXPLAIN SELECT word, cnt * 2 AS c2 FROM t WHERE cnt > 1")
    assert plan[SECTIONS[0]] == (
        "LogicalProject(word=[$0], c2=[*($1, 2)])\n"
        "+- LogicalFilter(condition=[>($1, 1)])\n"
        "   +- LogicalTableScan(table=[[default_catalog, default_database, t]])")
    physical = plan[SECTIONS[1]]
    assert nodes(physical) == ["Calc", "TableSourceScan"]
    assert physical.startswith("Calc(select=[word, (cnt * 2) AS c2], where=[")
    assert "(cnt > 1)" in physical.splitlines()[0]
    assert physical.splitlines()[1] == (
        "+- TableSourceScan(table=[[default_catalog, default_database, t]], "
        "fields=[word, cnt, ts])")
    assert plan[SECTIONS[2]] == physical
    assert "Project" in plan[SECTIONS[3]] and "Filter" in plan[SECTIONS[3]]


def test_group_aggregate_is_spark_two_phase_aggregation_under_flink_names(planner) -> None:
    plan = explain(planner, "EXPLAIN SELECT word, SUM(cnt) AS total FROM t GROUP BY word")
    assert plan[SECTIONS[0]] == (
        "LogicalAggregate(group=[{0}], total=[SUM($1)])\n"
        "+- LogicalProject(word=[$0], cnt=[$1])\n"
        "   +- LogicalTableScan(table=[[default_catalog, default_database, t]])")
    lines = plan[SECTIONS[1]].splitlines()
    assert nodes(plan[SECTIONS[1]])[:3] == ["HashAggregate", "Exchange", "LocalHashAggregate"]
    assert lines[0].startswith("HashAggregate(isMerge=[true], groupBy=[word], select=[word, ")
    assert "Final_SUM(cnt)" in lines[0] and "Partial_SUM(cnt)" in lines[2]
    assert lines[1] == "+- Exchange(distribution=[hash[word]])"
    assert nodes(plan[SECTIONS[1]])[-1] == "TableSourceScan"


def test_window_tvf_aggregate(planner) -> None:
    plan = explain(planner, "EXPLAIN SELECT window_start, window_end, COUNT(*) AS n FROM TABLE("
                            "TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND)) "
                            "GROUP BY window_start, window_end")
    ast = plan[SECTIONS[0]].splitlines()
    assert ast[:2] == ["LogicalAggregate(group=[{0, 1}], n=[COUNT()])",
                       "+- LogicalProject(window_start=[$3], window_end=[$4])"]
    assert ast[2].strip().startswith("+- LogicalTableFunctionScan(invocation=[TUMBLE(TABLE(#0), "
                                     "DESCRIPTOR(ts), INTERVAL '10' SECOND)")
    physical = plan[SECTIONS[1]]
    assert "WindowTableFunction(window=[TUMBLE(time_col=[ts], size=[10 s])])" in physical
    assert "Exchange(distribution=[hash[window_start, window_end]])" in physical


def test_join_names_the_repeated_field_as_flink(planner) -> None:
    plan = explain(planner, "EXPLAIN SELECT t.word, u.lang FROM t JOIN u ON t.word = u.word")
    assert plan[SECTIONS[0]] == (
        "LogicalProject(word=[$0], lang=[$4])\n"
        "+- LogicalJoin(condition=[=($0, $3)], joinType=[inner])\n"
        "   :- LogicalTableScan(table=[[default_catalog, default_database, t]])\n"
        "   +- LogicalTableScan(table=[[default_catalog, default_database, u]])")
    physical = plan[SECTIONS[1]]
    join = next(line for line in physical.splitlines() if "Join(" in line)
    assert "joinType=[InnerJoin], where=[(word = word0)], select=[word, word0, lang]" in join
    scans = [line.strip(" :+-") for line in physical.splitlines() if "TableSourceScan" in line]
    assert [s.split(", ")[2].rstrip("]") for s in scans] == ["t", "u"]


def test_insert_has_its_sink(planner) -> None:
    plan = explain(planner, "EXPLAIN INSERT INTO s SELECT word, COUNT(*) FROM t GROUP BY word")
    assert plan[SECTIONS[0]].splitlines()[:2] == [
        "LogicalSink(table=[default_catalog.default_database.s], fields=[word, EXPR$1])",
        "+- LogicalAggregate(group=[{0}], EXPR$1=[COUNT()])"]
    assert plan[SECTIONS[1]].splitlines()[0] == (
        "Sink(table=[default_catalog.default_database.s], fields=[word, EXPR$1])")


def test_order_by_limit_and_plan_for(planner) -> None:
    plan = explain(planner, "EXPLAIN PLAN FOR SELECT word, cnt FROM t ORDER BY cnt DESC LIMIT 3")
    assert plan[SECTIONS[0]].splitlines()[0] == (
        "LogicalSort(sort0=[$1], dir0=[DESC-nulls-last], fetch=[3])")
    assert plan[SECTIONS[1]].startswith("SortLimit(orderBy=[cnt DESC")
    assert "fetch=[3], global=[true]" in plan[SECTIONS[1]].splitlines()[0]


def test_changelog_mode_in_streaming(planner) -> None:
    plan = explain(planner, "EXPLAIN CHANGELOG_MODE SELECT word, SUM(cnt) AS total FROM t "
                            "GROUP BY word", "STREAMING")
    assert "LogicalWatermarkAssigner(rowtime=[ts]" in plan[SECTIONS[0]]
    lines = plan[SECTIONS[1]].splitlines()
    assert lines[0].startswith("GlobalGroupAggregate(groupBy=[word]")
    assert lines[0].endswith("changelogMode=[I,UB,UA])")
    assert lines[-1].endswith("changelogMode=[I])") and "TableSourceScan" in lines[-1]
    assert any("WatermarkAssigner(rowtime=[ts]" in line for line in lines)
    assert "changelogMode" not in plan[SECTIONS[2]]
    windowed = explain(planner, "EXPLAIN CHANGELOG_MODE SELECT window_start, COUNT(*) AS n "
                                "FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' "
                                "SECOND)) GROUP BY window_start, window_end", "STREAMING")
    top = windowed[SECTIONS[1]].splitlines()
    assert any(line.startswith(("GlobalWindowAggregate", "Calc")) for line in top[:1])
    assert all(line.endswith("changelogMode=[I])") for line in top)


def test_batch_ignores_changelog_mode_and_estimated_cost_adds_spark_statistics(planner) -> None:
    plan = explain(planner, "EXPLAIN ESTIMATED_COST, CHANGELOG_MODE SELECT word FROM t")
    assert "changelogMode" not in plan[SECTIONS[1]]  # Flink prints none in BATCH either
    assert "Statistics(sizeInBytes=" in plan[SECTIONS[3]]


def test_unsupported_details_are_named(planner) -> None:
    with pytest.raises(FlinkSqlError, match="EXPLAIN JSON_EXECUTION_PLAN is not supported"):
        planner.plan("EXPLAIN JSON_EXECUTION_PLAN SELECT word FROM t")
    with pytest.raises(FlinkSqlError, match="EXPLAIN takes a query"):
        planner.plan("EXPLAIN SHOW TABLES")


def test_plan_advice_as_flinks_where_its_analyzers_have_none(planner) -> None:
    """Flink 2.3 (PyFlink's basic_operations example): the physical plan's section is "With
    Advice" and ends "No available advice..."; a STREAMING group aggregate, where Flink's
    analyzers advise on its own runtime, is refused."""
    text = planner.plan("EXPLAIN PLAN_ADVICE SELECT word FROM t WHERE cnt > 1").rows[0][0]
    section = text.split("== Optimized Physical Plan With Advice ==\n")[1]
    assert section.split("\n\n== ")[0].endswith("\n\nNo available advice...")
    assert "== Optimized Physical Plan ==" not in text
    with pytest.raises(FlinkSqlError, match="EXPLAIN PLAN_ADVICE of a STREAMING query"):
        planner.plan("EXPLAIN PLAN_ADVICE SELECT word, COUNT(*) FROM t GROUP BY word",
                     "STREAMING")


def test_parse_keeps_the_details() -> None:
    statement = parse_statement("EXPLAIN CHANGELOG_MODE, ESTIMATED_COST SELECT 1")
    assert isinstance(statement, Explain)
    assert statement.details == ("CHANGELOG_MODE", "ESTIMATED_COST")
    plan_for = parse_statement("EXPLAIN PLAN FOR SELECT 1")
    assert isinstance(plan_for, Explain) and plan_for.details == ()


def test_render_draws_flink_branches() -> None:
    tree = PlanNode("Join", [], [PlanNode("A", [], [PlanNode("A1")]), PlanNode("B")])
    assert render(tree) == "Join()\n:- A()\n:  +- A1()\n+- B()"


def test_a_table_aggregate_is_explained_as_flinks() -> None:
    """Spark's batch form of flat_aggregate (an array aggregate, unnested) becomes Flink's
    one table aggregate node, in the logical and the streaming physical plan."""
    scan = PlanNode("LogicalTableScan", ["table=[[default_catalog, default_database, t]]"],
                    fields=[("t", "key"), ("t", "v")])
    keys = PlanNode("LogicalProject", ["key=[$0]"], [scan], [("", "key")])
    rows = PlanNode("LogicalProject", ["key=[$0]", "_rows=[PYUDF_TOP2_1(`v`)]"],
                    [PlanNode("LogicalAggregate", ["group=[{0}]"], [keys])])
    unnest = PlanNode("LogicalTableScan", ["table=[[EXPLODE(`_rows`, `_u`(`_r`))]]"])
    top = PlanNode("LogicalProject", ["key=[$0]", "a=[$1]"], [PlanNode(
        "LogicalProject", ["key=[$0]", "a=[`_u`.`_r`.`a`]"],
        [PlanNode("LogicalJoin", ["condition=[true]"], [rows, unnest])])])
    assert render(as_table_aggregate_ast(top, "Top2", ["key"], ["v"])) == (
        "LogicalProject(key=[$0], a=[$1])\n"
        "+- LogicalTableAggregate(group=[{0}], tableAggregate=[[Top2($1)]])\n"
        "   +- LogicalTableScan(table=[[default_catalog, default_database, t]])")
    source = PlanNode("TableSourceScan", ["table=[[default_catalog, default_database, t]]"])
    spark = PlanNode("Calc", ["select=[key, _r.a AS a]"], [PlanNode(
        "Correlate", ["select=[key, _r]"], [PlanNode("Calc", ["where=[size(_rows) > 0]"], [
            PlanNode("PythonGroupAggregate", ["select=[key, _rows]"], [PlanNode(
                "Sort", ["orderBy=[key ASC]"], [PlanNode(
                    "Exchange", ["distribution=[hash[key]]"], [source])])])])])])
    assert render(as_table_aggregate(spark, ["groupBy=[key]", "select=[key, Top2(v) AS (a)]"],
                                     ["key", "a"])) == (
        "PythonGroupTableAggregate(groupBy=[key], select=[key, Top2(v) AS (a)])\n"
        "+- Exchange(distribution=[hash[key]])\n"
        "   +- TableSourceScan(table=[[default_catalog, default_database, t]])")
