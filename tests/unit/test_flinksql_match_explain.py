"""EXPLAIN of MATCH_RECOGNIZE and TIMESTAMPADD of a DATE in its MEASURES and DEFINE, on a local
SparkSession, against what Flink 2.3 printed for the same statements (parallelism 1, a filesystem
CSV table with a TIMESTAMP(3) rowtime and a watermark; /work/briefs/data/matchrec4/
probe_explain_tsadd.py, probe_explain2.py, probe_explain3.py and their .out)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from sessioncluster.spark.flinksql.executor import FlinkSqlPlanner
from sessioncluster.spark.flinksql.model import FlinkSqlError
from tests.unit.test_flinksql_explain import SECTIONS, explain, nodes

MR = ("FROM ev MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY ts MEASURES A.id AS aid, "
      "LAST(B.price) AS bp ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B) "
      "DEFINE A AS A.price < 20, B AS B.price > A.price) AS T")
NO_PARTITION = ("SELECT * FROM ev MATCH_RECOGNIZE (ORDER BY ts MEASURES FIRST(A.id) AS fa, "
                'COUNT(A.id) AS c, AVG(A.price) AS ap, MATCH_ROWTIME() AS mt, LAST(A.price, 1) AS lp '
                "ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN (A+ B C{2}) WITHIN "
                "INTERVAL '1' HOUR DEFINE A AS A.price > 10, B AS B.price < LAST(A.price) AND "
                "B.symbol = 'ACME', C AS SUM(C.price) > 5 OR C.id = 3) AS T")
SKIP_TO_LAST = ("SELECT * FROM ev MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY ts MEASURES "
                "B.price - A.price AS diff ONE ROW PER MATCH AFTER MATCH SKIP TO LAST B "
                "PATTERN (A B+?) DEFINE B AS B.price > A.price + 1) AS T")
#: Flink 2.3's lines (BATCH; STREAMING the same but for its watermark's nodes)
FLINK_STAR_AST = (
    'LogicalProject(symbol=[$0], aid=[$1], bp=[$2])\n+- LogicalMatch(partition=[[1]], '
    'order=[[2 ASC-nulls-first]], outputFields=[[symbol, aid, bp]], allRows=[false], '
    "after=[FLAG(SKIP PAST LAST ROW)], pattern=[(_UTF-16LE'A', _UTF-16LE'B')], "
    'isStrictStarts=[false], isStrictEnds=[false], subsets=[[]], '
    'patternDefinitions=[[<(PREV(A.$3, 0), 20), >(PREV(B.$3, 0), LAST(A.$3, 0))]], '
    'inputFields=[[id, symbol, ts, price, '
    'd]])\n   +- LogicalTableScan(table=[[default_catalog, default_database, ev]])')
FLINK_STAR_MATCH = (
    'Match(partitionBy=[symbol], orderBy=[ts ASC], measures=[FINAL(A.id) AS aid, '
    'FINAL(LAST(B.price, 0)) AS bp], rowsPerMatch=[ONE ROW PER MATCH], '
    "after=[SKIP PAST LAST ROW], pattern=[(_UTF-16LE'A', _UTF-16LE'B')], "
    'define=[{A=<(PREV(A.$3, 0), 20), B=>(PREV(B.$3, 0), LAST(A.$3, 0))}])')
FLINK_NO_PARTITION_LOGICAL = (
    'LogicalMatch(partition=[[]], order=[[2 ASC-nulls-first]], outputFields=[[fa, c, ap, mt, '
    'lp]], allRows=[false], after=[FLAG(SKIP TO NEXT ROW)], '
    "pattern=[((PATTERN_QUANTIFIER(_UTF-16LE'A', 1, -1, false), _UTF-16LE'B'), "
    "PATTERN_QUANTIFIER(_UTF-16LE'C', 2, 2, false))], isStrictStarts=[false], "
    'isStrictEnds=[false], interval=[3600000:INTERVAL HOUR], subsets=[[]], '
    'patternDefinitions=[[>(PREV(A.$3, 0), 10), AND(<(PREV(B.$3, 0), LAST(A.$3, 0)), '
    "=(PREV(B.$1, 0), _UTF-16LE'ACME')), OR(>(SUM(C.$3), 5), =(PREV(C.$0, 0), 3))]], "
    'inputFields=[[id, symbol, ts, price, d]])')
FLINK_NO_PARTITION_MATCH = (
    'Match(orderBy=[ts ASC], measures=[FINAL(FIRST(A.id, 0)) AS fa, FINAL(COUNT(A.id)) AS c, '
    'FINAL(CAST(/(SUM(A.price), COUNT(A.price)) AS INTEGER)) AS ap, '
    'FINAL(MATCH_ROWTIME()) AS mt, FINAL(LAST(A.price, 1)) AS lp], '
    'rowsPerMatch=[ONE ROW PER MATCH], after=[SKIP TO NEXT ROW], '
    "pattern=[((PATTERN_QUANTIFIER(_UTF-16LE'A', 1, -1, false), _UTF-16LE'B'), "
    "PATTERN_QUANTIFIER(_UTF-16LE'C', 2, 2, false))], define=[{A=>(PREV(A.$3, 0), 10), "
    "B=AND(<(PREV(B.$3, 0), LAST(A.$3, 0)), =(PREV(B.$1, 0), _UTF-16LE'ACME')), "
    'C=OR(>(SUM(C.$3), 5), =(PREV(C.$0, 0), 3))}])')
FLINK_SKIP_TO_LAST_LOGICAL = (
    'LogicalMatch(partition=[[1]], order=[[2 ASC-nulls-first]], outputFields=[[symbol, diff]], '
    "allRows=[false], after=[SKIP TO LAST(_UTF-16LE'B')], pattern=[(_UTF-16LE'A', "
    "PATTERN_QUANTIFIER(_UTF-16LE'B', 1, -1, true))], isStrictStarts=[false], "
    'isStrictEnds=[false], subsets=[[]], patternDefinitions=[[>(PREV(B.$3, 0), +(LAST(A.$3, '
    '0), 1))]], inputFields=[[id, symbol, ts, price, d]])')
FLINK_SKIP_TO_LAST_MATCH = (
    'Match(partitionBy=[symbol], orderBy=[ts ASC], measures=[FINAL(-(B.price, '
    "A.price)) AS diff], rowsPerMatch=[ONE ROW PER MATCH], after=[SKIP TO LAST _UTF-16LE'B'], "
    "pattern=[(_UTF-16LE'A', PATTERN_QUANTIFIER(_UTF-16LE'B', 1, -1, true))], "
    'define=[{B=>(PREV(B.$3, 0), +(LAST(A.$3, 0), 1))}])')


@pytest.fixture(scope="module")
def spark(local_spark: Any) -> Any:
    return local_spark


@pytest.fixture
def planner(spark: Any, tmp_path: Path) -> FlinkSqlPlanner:
    (tmp_path / "ev.csv").write_text(
        "1,ACME,2024-01-31 10:00:00,12,2024-01-31\n2,ACME,2024-01-31 10:00:01,17,2024-02-01\n"
        "3,ACME,2024-01-31 10:00:02,13,2024-02-29\n4,BETA,2024-01-31 10:00:03,30,2024-12-31\n"
        "5,BETA,2024-01-31 10:00:04,31,2025-01-01\n")
    p = FlinkSqlPlanner(spark)
    p.plan(f"""CREATE TABLE ev (id INT, symbol STRING, ts TIMESTAMP(3), price INT, d DATE,
                 WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
               WITH ('connector' = 'filesystem', 'path' = '{tmp_path / "ev.csv"}',
                     'format' = 'csv')""")
    p.plan("CREATE TABLE snk (symbol STRING, aid INT) WITH ('connector' = 'blackhole')")
    return p


def line_of(section: str, name: str) -> str:
    return next(re.sub(r"^[ :|+-]*", "", line) for line in section.splitlines()
                if re.sub(r"^[ :|+-]*", "", line).startswith(name + "("))


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_explain_shows_flinks_logical_match_and_match(planner, mode: str) -> None:
    plan = explain(planner, "EXPLAIN SELECT * " + MR, mode)
    if mode == "BATCH":
        assert plan[SECTIONS[0]] == FLINK_STAR_AST
    assert line_of(plan[SECTIONS[0]], "LogicalMatch") == FLINK_STAR_AST.splitlines()[1][3:]
    for section in SECTIONS[1:3]:  # Flink's: Match over an Exchange by the PARTITION BY
        assert section and plan[section].splitlines()[:2] == [
            FLINK_STAR_MATCH, "+- Exchange(distribution=[hash[symbol]])"]
        assert nodes(plan[section])[-1] == "TableSourceScan"
        assert ("WatermarkAssigner" in nodes(plan[section])) == (mode == "STREAMING")
        assert "__" not in plan[section]  # nothing of how the matches are held here


def test_explain_keeps_the_query_around_the_match(planner) -> None:
    plan = explain(planner, "EXPLAIN SELECT aid, bp * 2 AS b2 " + MR + " WHERE aid > 0")
    assert plan[SECTIONS[0]].splitlines()[:2] == [  # Flink's
        "LogicalProject(aid=[$1], b2=[*($2, 2)])", "+- LogicalFilter(condition=[>($1, 0)])"]
    physical = plan[SECTIONS[1]].splitlines()
    assert nodes(plan[SECTIONS[1]])[:3] == ["Calc", "Match", "Exchange"]  # Flink's nodes
    assert physical[0].startswith("Calc(select=[aid, (bp * 2) AS b2], where=[")
    assert "(aid > 0)" in physical[0]  # Flink's: where=[(aid > 0)]
    grouped = explain(planner, "EXPLAIN SELECT symbol, COUNT(*) AS n " + MR + " GROUP BY symbol",
                      "STREAMING")
    assert nodes(grouped[SECTIONS[1]])[:5] == [
        "GlobalGroupAggregate", "Exchange", "LocalGroupAggregate", "Calc", "Match"]
    inserted = explain(planner, "EXPLAIN INSERT INTO snk SELECT symbol, aid " + MR)
    assert inserted[SECTIONS[0]].splitlines()[:2] == [  # Flink's
        "LogicalSink(table=[default_catalog.default_database.snk], fields=[symbol, aid])",
        "+- LogicalProject(symbol=[$0], aid=[$1])"]
    assert nodes(inserted[SECTIONS[1]])[:3] == ["Sink", "Calc", "Match"]


def test_explain_of_quantifiers_within_and_skips_as_flinks(planner) -> None:
    plan = explain(planner, "EXPLAIN " + NO_PARTITION)
    assert line_of(plan[SECTIONS[0]], "LogicalMatch") == FLINK_NO_PARTITION_LOGICAL
    match = line_of(plan[SECTIONS[1]], "Match")
    assert match == FLINK_NO_PARTITION_MATCH
    assert "Exchange(distribution=[single])" in plan[SECTIONS[1]]
    plan = explain(planner, "EXPLAIN " + SKIP_TO_LAST, "STREAMING")
    assert line_of(plan[SECTIONS[0]], "LogicalMatch") == FLINK_SKIP_TO_LAST_LOGICAL
    assert line_of(plan[SECTIONS[1]], "Match") == FLINK_SKIP_TO_LAST_MATCH
    with pytest.raises(FlinkSqlError, match="Greedy quantifiers are not allowed as the last "
                                             "element of a Pattern yet"):  # Flink's EXPLAIN too
        planner.plan("EXPLAIN " + SKIP_TO_LAST.replace("(A B+?)", "(A B? C{2,} D{1,3})"))


def rows(planner: FlinkSqlPlanner, sql: str) -> tuple[list[str], list[list[str | None]]]:
    outcome = planner.plan(sql)
    assert outcome.job is not None
    found = [[None if v is None else str(v) for v in r] for r in outcome.job.run().collect()]
    return outcome.column_types, sorted(found, key=lambda r: int(r[0] or 0))


def one_var(measures: str, define: str = "A AS A.id > 0") -> str:
    return (f"SELECT * FROM ev MATCH_RECOGNIZE (ORDER BY ts MEASURES {measures} ONE ROW PER "
            f"MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN (A) DEFINE {define}) AS T")


def test_timestampadd_of_a_date_in_measures_is_typed_as_flinks(planner) -> None:
    types, found = rows(planner, one_var(
        "A.id AS aid, TIMESTAMPADD(DAY, 1, A.d) AS dday, TIMESTAMPADD(MONTH, 1, A.d) AS dmon, "
        "TIMESTAMPADD(YEAR, 1, A.d) AS dyear, TIMESTAMPADD(WEEK, 1, A.d) AS dweek, "
        "TIMESTAMPADD(QUARTER, 1, A.d) AS dq, TIMESTAMPADD(SECOND, 30, A.d) AS dsec, "
        "TIMESTAMPADD(MINUTE, 90, A.d) AS dmin, TIMESTAMPADD(HOUR, -3, A.d) AS dhour"))
    assert types == ["INT", "DATE", "DATE", "DATE", "DATE", "DATE", "TIMESTAMP(6)",
                     "TIMESTAMP(6)", "TIMESTAMP(6)"]  # Flink's (probe_explain2 m_date_types)
    assert found == [  # Flink's rows, BATCH and STREAMING
        ['1', '2024-02-01', '2024-02-29', '2025-01-31', '2024-02-07', '2024-04-30',
         '2024-01-31 00:00:30', '2024-01-31 01:30:00', '2024-01-30 21:00:00'],
        ['2', '2024-02-02', '2024-03-01', '2025-02-01', '2024-02-08', '2024-05-01',
         '2024-02-01 00:00:30', '2024-02-01 01:30:00', '2024-01-31 21:00:00'],
        ['3', '2024-03-01', '2024-03-29', '2025-02-28', '2024-03-07', '2024-05-29',
         '2024-02-29 00:00:30', '2024-02-29 01:30:00', '2024-02-28 21:00:00'],
        ['4', '2025-01-01', '2025-01-31', '2025-12-31', '2025-01-07', '2025-03-31',
         '2024-12-31 00:00:30', '2024-12-31 01:30:00', '2024-12-30 21:00:00'],
        ['5', '2025-01-02', '2025-02-01', '2026-01-01', '2025-01-08', '2025-04-01',
         '2025-01-01 00:00:30', '2025-01-01 01:30:00', '2024-12-31 21:00:00']]


@pytest.mark.parametrize("define, flink", [
    ("TIMESTAMPADD(DAY, 1, A.d) = DATE '2024-02-01'", [["1"]]),
    ("TIMESTAMPADD(SECOND, 30, A.d) = TIMESTAMP '2024-02-01 00:00:30'", [["2"]]),
    ("TIMESTAMPADD(MINUTE, 90, A.d) > TIMESTAMP '2024-12-31 01:00:00'", [["4"], ["5"]]),
    ("TIMESTAMPADD(HOUR, 24, A.d) = TIMESTAMP '2024-03-01 00:00:00'", [["3"]]),
    ("TIMESTAMPADD(SECOND, 36000, A.d) = A.ts", [["1"]]),
])
def test_timestampadd_of_a_date_in_define_matches_as_flinks(planner, define: str,
                                                            flink: list[list[str]]) -> None:
    assert rows(planner, one_var("A.id AS aid", "A AS " + define))[1] == flink


@pytest.mark.parametrize("define, op", [
    ("TIMESTAMPADD(HOUR, 24, A.d) = DATE '2024-03-01'", "="),
    ("TIMESTAMPADD(HOUR, 1, A.d) > DATE '2024-02-29'", ">"),
])
def test_a_timestamp_of_a_date_compared_with_a_date_refused_as_flink_refuses_it(
        planner, define: str, op: str) -> None:
    # Flink 2.3: "SQL validation failed. From line 0, column 0 to line 1, column 185: Cannot
    # apply '=' to arguments of type '<TIMESTAMP(6)> = <DATE>'. Supported form(s): ..."
    with pytest.raises(FlinkSqlError, match=re.escape(
            f"Cannot apply '{op}' to arguments of type '<TIMESTAMP(6)> {op} <DATE>'. Supported "
            f"form(s): '<COMPARABLE_TYPE> {op} <COMPARABLE_TYPE>'")):
        rows(planner, one_var("A.id AS aid", "A AS " + define))


def test_explain_changelog_mode_of_a_match_is_insert_only_as_flinks(planner) -> None:
    plan = explain(planner, "EXPLAIN CHANGELOG_MODE SELECT * " + MR, "STREAMING")
    assert plan[SECTIONS[1]].splitlines()[0] == FLINK_STAR_MATCH[:-1] + ", changelogMode=[I])"
    assert all(line.endswith("changelogMode=[I])") for line in plan[SECTIONS[1]].splitlines())


#: Flink 2.3's LogicalMatch and Match of more shapes (probe_explain4: BATCH, a table of eight
#: columns): AVG by its column's type, COUNT(*), a column of all rows, CAST, one variable,
#: IS NOT NULL
FLINK_SHAPES = {
    'avgs': (
        'EXPLAIN SELECT * FROM ev MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY ts MEASURES '
        'AVG(A.price) AS ai, '
        'AVG(A.big) AS ab, AVG(A.dbl) AS ad, '
        'AVG(A.dcm) AS ac ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A+ B)  '
        'DEFINE B AS B.price > 0) AS T',
        'LogicalMatch(partition=[[1]], order=[[2 ASC-nulls-first]], outputFields=[[symbol, '
        'ai, ab, ad, ac]], allRows=[false], after=[FLAG(SKIP PAST LAST ROW)], '
        "pattern=[(PATTERN_QUANTIFIER(_UTF-16LE'A', 1, -1, false), _UTF-16LE'B')], "
        'isStrictStarts=[false], isStrictEnds=[false], subsets=[[]], '
        'patternDefinitions=[[>(PREV(B.$3, 0), 0)]], inputFields=[[id, symbol, ts, price, d, '
        'big, dbl, dcm]])',
        'Match(partitionBy=[symbol], orderBy=[ts ASC], measures=[FINAL(CAST(/(SUM(A.price), '
        'COUNT(A.price)) AS INTEGER)) AS ai, FINAL(/(SUM(A.big), COUNT(A.big))) AS ab, '
        'FINAL(/(SUM(A.dbl), COUNT(A.dbl))) AS ad, FINAL(/(CAST(SUM(A.dcm) AS DECIMAL(38, '
        '6)), COUNT(A.dcm))) AS ac], rowsPerMatch=[ONE ROW PER MATCH], '
        "after=[SKIP PAST LAST ROW], pattern=[(PATTERN_QUANTIFIER(_UTF-16LE'A', 1, -1, "
        "false), _UTF-16LE'B')], define=[{B=>(PREV(B.$3, 0), 0)}])"),
    'aggs': (
        'EXPLAIN SELECT * FROM ev MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY ts MEASURES '
        'SUM(A.price) AS s, '
        'MIN(A.dbl) AS mn, MAX(A.big) AS mx, COUNT(*) AS c, '
        'FIRST(A.ts) AS ft ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A+ B)  '
        'DEFINE B AS B.price > 0) AS T',
        'LogicalMatch(partition=[[1]], order=[[2 ASC-nulls-first]], outputFields=[[symbol, '
        's, mn, mx, c, ft]], allRows=[false], after=[FLAG(SKIP PAST LAST ROW)], '
        "pattern=[(PATTERN_QUANTIFIER(_UTF-16LE'A', 1, -1, false), _UTF-16LE'B')], "
        'isStrictStarts=[false], isStrictEnds=[false], subsets=[[]], '
        'patternDefinitions=[[>(PREV(B.$3, 0), 0)]], inputFields=[[id, symbol, ts, price, d, '
        'big, dbl, dcm]])',
        'Match(partitionBy=[symbol], orderBy=[ts ASC], measures=[FINAL(SUM(A.price)) AS s, '
        'FINAL(MIN(A.dbl)) AS mn, FINAL(MAX(A.big)) AS mx, FINAL(COUNT()) AS c, '
        'FINAL(FIRST(A.ts, 0)) AS ft], rowsPerMatch=[ONE ROW PER MATCH], '
        "after=[SKIP PAST LAST ROW], pattern=[(PATTERN_QUANTIFIER(_UTF-16LE'A', 1, -1, "
        "false), _UTF-16LE'B')], define=[{B=>(PREV(B.$3, 0), 0)}])"),
    'novar': (
        'EXPLAIN SELECT * FROM ev MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY ts MEASURES '
        'price AS p, '
        'LAST(price) AS lp, CAST(A.price AS DOUBLE) AS cp, TIMESTAMPADD(DAY, 1, '
        'A.d) AS dd ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B)  DEFINE A '
        'AS price > 1, '
        'B AS B.price > LAST(price, 1)) AS T',
        'LogicalMatch(partition=[[1]], order=[[2 ASC-nulls-first]], outputFields=[[symbol, '
        'p, lp, cp, dd]], allRows=[false], after=[FLAG(SKIP PAST LAST ROW)], '
        "pattern=[(_UTF-16LE'A', _UTF-16LE'B')], isStrictStarts=[false], "
        'isStrictEnds=[false], subsets=[[]], patternDefinitions=[[>(LAST(*.$3, 0), 1), '
        '>(PREV(B.$3, 0), LAST(*.$3, 1))]], inputFields=[[id, symbol, ts, price, d, big, '
        'dbl, dcm]])',
        'Match(partitionBy=[symbol], orderBy=[ts ASC], measures=[FINAL(*.price) AS p, '
        'FINAL(LAST(*.price, 0)) AS lp, FINAL(CAST(A.price AS DOUBLE)) AS cp, FINAL(+(A.d, '
        '*(86400000:INTERVAL DAY, 1))) AS dd], rowsPerMatch=[ONE ROW PER MATCH], '
        "after=[SKIP PAST LAST ROW], pattern=[(_UTF-16LE'A', _UTF-16LE'B')], "
        'define=[{A=>(LAST(*.$3, 0), 1), B=>(PREV(B.$3, 0), LAST(*.$3, 1))}])'),
    'single': (
        'EXPLAIN SELECT * FROM ev MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY ts MEASURES '
        'A.id AS aid ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A)  DEFINE A AS '
        "A.price > 10 AND A.symbol LIKE 'A%') AS T",
        'LogicalMatch(partition=[[1]], order=[[2 ASC-nulls-first]], outputFields=[[symbol, '
        "aid]], allRows=[false], after=[FLAG(SKIP PAST LAST ROW)], pattern=[_UTF-16LE'A'], "
        'isStrictStarts=[false], isStrictEnds=[false], subsets=[[]], '
        'patternDefinitions=[[AND(>(PREV(A.$3, 0), 10), LIKE(PREV(A.$1, 0), '
        "_UTF-16LE'A%'))]], inputFields=[[id, symbol, ts, price, d, big, dbl, dcm]])",
        'Match(partitionBy=[symbol], orderBy=[ts ASC], measures=[FINAL(A.id) AS aid], '
        'rowsPerMatch=[ONE ROW PER MATCH], after=[SKIP PAST LAST ROW], '
        "pattern=[_UTF-16LE'A'], define=[{A=AND(>(PREV(A.$3, 0), 10), LIKE(PREV(A.$1, 0), "
        "_UTF-16LE'A%'))}])"),
    'no_define': (
        'EXPLAIN SELECT * FROM ev MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY ts MEASURES '
        'A.id AS aid ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN (A B)  DEFINE A AS '
        'A.price IS NOT NULL) AS T',
        'LogicalMatch(partition=[[1]], order=[[2 ASC-nulls-first]], outputFields=[[symbol, '
        "aid]], allRows=[false], after=[FLAG(SKIP TO NEXT ROW)], pattern=[(_UTF-16LE'A', "
        "_UTF-16LE'B')], isStrictStarts=[false], isStrictEnds=[false], subsets=[[]], "
        'patternDefinitions=[[IS NOT NULL(PREV(A.$3, 0))]], inputFields=[[id, symbol, ts, '
        'price, d, big, dbl, dcm]])',
        'Match(partitionBy=[symbol], orderBy=[ts ASC], measures=[FINAL(A.id) AS aid], '
        "rowsPerMatch=[ONE ROW PER MATCH], after=[SKIP TO NEXT ROW], pattern=[(_UTF-16LE'A', "
        "_UTF-16LE'B')], define=[{A=IS NOT NULL(PREV(A.$3, 0))}])"),
}


#: ... and of quantifiers, SKIP TO LAST a variable, WITHIN minutes (probe_explain5)
FLINK_QUANTIFIERS = {
    'star_first': (
        'EXPLAIN SELECT * FROM ev MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY ts MEASURES '
        'B.id AS bid ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A* B)  DEFINE A '
        'AS A.price > 1, B AS B.price < 100) AS T',
        'LogicalMatch(partition=[[1]], order=[[2 ASC-nulls-first]], outputFields=[[symbol, '
        'bid]], allRows=[false], after=[FLAG(SKIP PAST LAST ROW)], '
        "pattern=[(PATTERN_QUANTIFIER(_UTF-16LE'A', 0, -1, false), _UTF-16LE'B')], "
        'isStrictStarts=[false], isStrictEnds=[false], subsets=[[]], '
        'patternDefinitions=[[>(PREV(A.$3, 0), 1), <(PREV(B.$3, 0), 100)]], inputFields=[[id, '
        'symbol, ts, price, d, big, dbl, dcm]])',
        'Match(partitionBy=[symbol], orderBy=[ts ASC], measures=[FINAL(B.id) AS bid], '
        'rowsPerMatch=[ONE ROW PER MATCH], after=[SKIP PAST LAST ROW], '
        "pattern=[(PATTERN_QUANTIFIER(_UTF-16LE'A', 0, -1, false), _UTF-16LE'B')], "
        'define=[{A=>(PREV(A.$3, 0), 1), B=<(PREV(B.$3, 0), 100)}])'),
    'reluctant_bounded': (
        'EXPLAIN SELECT * FROM ev MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY ts MEASURES '
        'B.id AS bid ONE ROW PER MATCH AFTER MATCH SKIP TO LAST A PATTERN (A{1,3}? B{3}) '
        "WITHIN INTERVAL '2' MINUTE DEFINE A AS A.price > 1) AS T",
        'LogicalMatch(partition=[[1]], order=[[2 ASC-nulls-first]], outputFields=[[symbol, '
        "bid]], allRows=[false], after=[SKIP TO LAST(_UTF-16LE'A')], "
        "pattern=[(PATTERN_QUANTIFIER(_UTF-16LE'A', 1, 3, true), "
        "PATTERN_QUANTIFIER(_UTF-16LE'B', 3, 3, false))], isStrictStarts=[false], "
        'isStrictEnds=[false], interval=[120000:INTERVAL MINUTE], subsets=[[]], '
        'patternDefinitions=[[>(PREV(A.$3, 0), 1)]], inputFields=[[id, symbol, ts, price, d, '
        'big, dbl, dcm]])',
        'Match(partitionBy=[symbol], orderBy=[ts ASC], measures=[FINAL(B.id) AS bid], '
        "rowsPerMatch=[ONE ROW PER MATCH], after=[SKIP TO LAST _UTF-16LE'A'], "
        "pattern=[(PATTERN_QUANTIFIER(_UTF-16LE'A', 1, 3, true), "
        "PATTERN_QUANTIFIER(_UTF-16LE'B', 3, 3, false))], define=[{A=>(PREV(A.$3, 0), 1)}])"),
}


@pytest.mark.parametrize("name", sorted({**FLINK_SHAPES, **FLINK_QUANTIFIERS}))
def test_explain_of_measures_and_definitions_as_flinks(planner, tmp_path: Path,
                                                       name: str) -> None:
    (tmp_path / "wide.csv").write_text("1,ACME,2024-01-31 10:00:00,12,2024-01-31,5,1.5,2.25\n")
    planner.plan(f"""CREATE TABLE wide (id INT, symbol STRING, ts TIMESTAMP(3), price INT,
                     d DATE, big BIGINT, dbl DOUBLE, dcm DECIMAL(10, 2),
                     WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
                   WITH ('connector' = 'filesystem', 'path' = '{tmp_path / "wide.csv"}',
                         'format' = 'csv')""")
    sql, logical, match = {**FLINK_SHAPES, **FLINK_QUANTIFIERS}[name]
    plan = explain(planner, sql.replace("FROM ev ", "FROM wide "))
    assert line_of(plan[SECTIONS[0]], "LogicalMatch") == logical
    # not as Flink's: TIMESTAMPADD, which Flink prints as the interval arithmetic it becomes
    assert line_of(plan[SECTIONS[1]], "Match") == match.replace(
        "+(A.d, *(86400000:INTERVAL DAY, 1))", "TIMESTAMPADD(DAY, 1, A.d)")
