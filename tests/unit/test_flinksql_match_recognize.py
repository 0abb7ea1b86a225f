"""MATCH_RECOGNIZE's matcher (patternmatch, matchexpr, matchrecognize's plan) against the rows
real Flink 2.3 gave for the same queries (BATCH, parallelism 1, a filesystem CSV table with a
TIMESTAMP(3) rowtime and a watermark), and what it refuses as Flink does; then a few queries
planned on a local SparkSession end to end."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
import sqlglot
from sqlglot import exp

from sessioncluster.spark.flinksql.dialect import Flink
from sessioncluster.spark.flinksql.executor import FlinkSqlPlanner
from sessioncluster.spark.flinksql.matchexpr import compile_condition
from sessioncluster.spark.flinksql.matchrecognize import (
    partition_matches,
    read_plan,
    resume_matches,
)
from sessioncluster.spark.flinksql.matchstream import KeyMatching
from sessioncluster.spark.flinksql.model import FlinkSqlError
from sessioncluster.spark.flinksql.patternmatch import (
    Element,
    MatchState,
    PatternError,
    parse_pattern,
)

#: id, symbol, seconds after 10:00:00, price, tax
TICKER = """1,ACME,0,12,1 2,ACME,1,17,2 3,ACME,2,19,1 4,ACME,3,21,3 5,ACME,4,25,2 6,ACME,5,18,1
7,ACME,6,15,1 8,ACME,7,14,2 9,ACME,8,24,2 10,ACME,9,25,2 11,ACME,10,19,1 12,BETA,0,30,1
13,BETA,2,28,2 14,BETA,4,26,3 15,BETA,6,29,1 16,BETA,8,27,2 17,BETA,20,31,2 18,BETA,21,25,1"""
START = datetime.datetime(2024, 1, 1, 10)


def ticker_rows() -> list[dict[str, Any]]:
    rows = []
    for line in TICKER.split():
        i, symbol, s, price, tax = line.split(",")
        rows.append({"id": int(i), "symbol": symbol, "price": int(price), "tax": int(tax),
                     "rowtime": START + datetime.timedelta(seconds=int(s))})
    return rows


def query(measures: str, pattern: str, define: str, skip: str = "PAST LAST ROW",
          within: str = "") -> str:
    return (f"SELECT * FROM Ticker MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY rowtime "
            f"MEASURES {measures} ONE ROW PER MATCH AFTER MATCH SKIP {skip} PATTERN ({pattern}) "
            f"{within} DEFINE {define}) AS T")


def matched(sql: str) -> list[tuple[Any, ...]]:
    """The query's rows by the matcher (no Spark; the measures here are of atoms and
    arithmetic only), as Flink's printout shows them (strings)."""
    node = sqlglot.parse_one(sql, dialect=Flink()).find(exp.MatchRecognize)
    assert node is not None
    plan = read_plan(node)
    partitions: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in ticker_rows():
        partitions.setdefault(tuple(r[p] for p in plan.partition), []).append(r)
    out = []
    for key, rows in partitions.items():
        rows.sort(key=lambda r: r["rowtime"])
        for _, atoms in partition_matches(plan, rows):
            measures = [compile_condition(e)(atoms) for _, e in plan.measures]
            out.append(tuple(None if v is None else str(v) for v in (*key, *measures)))
    return sorted(out, key=str)


TICKER_DOCS = query(
    "START_ROW.rowtime AS start_tstamp, LAST(PRICE_DOWN.rowtime) AS bottom_tstamp, "
    "LAST(PRICE_UP.rowtime) AS end_tstamp", "START_ROW PRICE_DOWN+ PRICE_UP",
    "PRICE_DOWN AS (LAST(PRICE_DOWN.price, 1) IS NULL AND PRICE_DOWN.price < START_ROW.price) "
    "OR PRICE_DOWN.price < LAST(PRICE_DOWN.price, 1), "
    "PRICE_UP AS PRICE_UP.price > LAST(PRICE_DOWN.price, 1)", skip="TO LAST PRICE_UP")

#: Flink 2.3's rows (BATCH) for each query
RECORDED = {
    "docs ticker example": (TICKER_DOCS, [
        ("ACME", "2024-01-01 10:00:04", "2024-01-01 10:00:07", "2024-01-01 10:00:08"),
        ("BETA", "2024-01-01 10:00:00", "2024-01-01 10:00:04", "2024-01-01 10:00:06")]),
    "greedy + with aggregates": (query(
        "FIRST(A.id) AS fa, LAST(A.id) AS la, B.id AS bid, COUNT(A.id) AS cnt, "
        "AVG(A.price) AS avgp, SUM(A.price) AS sump", "A+ B",
        "A AS A.price > 15, B AS B.price <= 20"), [("ACME", "2", "6", "7", "5", "20", "100")]),
    "reluctant +?": (query("FIRST(A.id) AS fa, LAST(A.id) AS la, B.id AS bid", "A+? B",
                           "A AS A.price > 15, B AS B.price > 20"), [
        ("ACME", "2", "3", "4"), ("ACME", "9", "9", "10"), ("BETA", "12", "12", "13"),
        ("BETA", "14", "14", "15"), ("BETA", "16", "16", "17")]),
    "star, empty A": (query("FIRST(A.id) AS fa, LAST(A.id) AS la, COUNT(A.id) AS ca, B.id AS bid",
                            "A* B", "A AS A.price < 20, B AS B.price >= 20"), [
        ("ACME", "1", "3", "3", "4"), ("ACME", None, None, "0", "5"), ("ACME", "6", "8", "3", "9"),
        ("ACME", None, None, "0", "10")] + [("BETA", None, None, "0", str(i)) for i in range(12, 19)]),
    "star greedy at count 0": (query("FIRST(A.id) AS fa, LAST(A.id) AS la, B.id AS bid", "A* B",
                                     "A AS A.price < 22, B AS B.price > 16"), [
        ("ACME", "1", "4", "5"), ("ACME", "6", "8", "9"), ("ACME", None, None, "10")]
        + [("BETA", None, None, str(i)) for i in range(12, 19)]),
    "optional ?": (query("A.id AS aid, B.id AS bid, C.id AS cid", "A B? C",
                         "A AS A.tax = 1, B AS B.tax = 2, C AS C.tax <> 1"), [
        ("ACME", "1", None, "2"), ("ACME", "3", None, "4"), ("ACME", "7", None, "8"),
        ("BETA", "12", None, "13"), ("BETA", "15", None, "16")]),
    "optional last": (query("A.id AS aid, B.id AS bid", "A B?", "A AS A.price > 0"),
                      [("ACME", str(i), None) for i in range(1, 12)]
                      + [("BETA", str(i), None) for i in range(12, 19)]),
    "{n}": (query("FIRST(A.id) AS fa, LAST(A.id) AS la", "A{2}", "A AS A.price > 16"), [
        ("ACME", "2", "3"), ("ACME", "4", "5"), ("ACME", "9", "10"), ("BETA", "12", "13"),
        ("BETA", "14", "15"), ("BETA", "16", "17")]),
    "{n,}": (query("FIRST(A.id) AS fa, LAST(A.id) AS la, COUNT(A.id) AS c", "A{2,} B",
                   "A AS A.price > 16, B AS B.price < 20"), [("ACME", "2", "6", "5")]),
    "{n,m} greedy past its max": (query("FIRST(A.id) AS fa, LAST(A.id) AS la, B.id AS bid",
                                        "A{1,2} B", "A AS A.price > 16, B AS B.tax <> 3"),
                                  [("ACME", "5", "6", "7")]),
    "greedy middle star never proceeds": (query(
        "A.id AS aid, COUNT(B.id) AS nb, C.id AS cid", "A B* C",
        "A AS A.tax = 1, B AS B.price > 16, C AS C.price > 20"), []),
    "skip to next row": (query("FIRST(A.id) AS fa, LAST(A.id) AS la, B.id AS bid", "A+ B",
                               "A AS A.price > 15, B AS B.price <= 20", skip="TO NEXT ROW"),
                         [("ACME", str(i), "6", "7") for i in range(2, 7)]),
    "skip to first, greedy B+ never done": (query(
        "FIRST(A.id) AS fa, B.id AS bid, LAST(C.id) AS lc", "A B+ C",
        "A AS A.tax = 1, B AS B.tax >= 1, C AS C.tax = 1", skip="TO FIRST B"), []),
    "skip to last": (query("A.id AS aid, LAST(B.id) AS lb, C.id AS cid", "A B+ C",
                           "A AS A.tax = 1, B AS B.tax >= 2, C AS C.tax = 1", skip="TO LAST B"), [
        ("ACME", "1", "2", "3"), ("ACME", "3", "5", "6"), ("ACME", "7", "10", "11"),
        ("BETA", "12", "14", "15"), ("BETA", "15", "17", "18")]),
    "skip to first B": (query("A.id AS aid, FIRST(B.id) AS fb, C.id AS cid", "A B+ C",
                              "A AS A.price > 0, B AS B.tax = 2, C AS C.tax <> 2",
                              skip="TO FIRST B"), [
        ("ACME", "1", "2", "3"), ("ACME", "4", "5", "6"), ("ACME", "7", "8", "11"),
        ("ACME", "8", "9", "11"), ("ACME", "9", "10", "11"), ("BETA", "12", "13", "14"),
        ("BETA", "15", "16", "18"), ("BETA", "16", "17", "18")]),
    "skip to last B": (query("A.id AS aid, FIRST(B.id) AS fb, C.id AS cid", "A B+ C",
                             "A AS A.price > 0, B AS B.tax = 2, C AS C.tax <> 2",
                             skip="TO LAST B"), [
        ("ACME", "1", "2", "3"), ("ACME", "4", "5", "6"), ("ACME", "7", "8", "11"),
        ("BETA", "12", "13", "14"), ("BETA", "15", "16", "18")]),
    "within": (query("FIRST(A.id) AS fa, LAST(A.id) AS la, B.id AS bid", "A+ B",
                     "A AS A.price > 15, B AS B.price <= 20",
                     within="WITHIN INTERVAL '3' SECOND"), [("ACME", "5", "6", "7")]),
    "held by an earlier open match, never emitted": (query(
        "A.id AS aid, FIRST(B.id) AS fb, LAST(B.id) AS lb, C.id AS cid", "A B+? C",
        "A AS A.price > 0, B AS B.price > 0, C AS C.price < A.price - 5"), []),
    "undefined variable matches any row": (query(
        "A.id AS aid, X.id AS xid, B.id AS bid", "A X B", "A AS A.tax = 1, B AS B.tax = 1"),
        [("ACME", "1", "2", "3")]),
    "measures over atoms": (query(
        "LAST(B.price) - FIRST(A.price) AS rise, SUM(A.tax) + 1 AS st, "
        "MATCH_ROWTIME() AS mt, LAST(A.rowtime) AS lt", "A+ B",
        "A AS A.price > 15, B AS B.price <= 20"),
        [("ACME", "-2", "10", "2024-01-01 10:00:06", "2024-01-01 10:00:05")]),
    "skip to B (TO LAST B)": (query("A.id AS aid, FIRST(B.id) AS fb, C.id AS cid", "A B+ C",
                                    "A AS A.price > 0, B AS B.tax = 2, C AS C.tax <> 2",
                                    skip="TO B"), [
        ("ACME", "1", "2", "3"), ("ACME", "4", "5", "6"), ("ACME", "7", "8", "11"),
        ("BETA", "12", "13", "14"), ("BETA", "15", "16", "18")]),
    "a DEFINE of a variable not in the pattern": (query(
        "A.id AS aid", "A B", "A AS A.price > 0, C AS C.price > 1"),
        [("ACME", str(i)) for i in (1, 3, 5, 7, 9)] + [("BETA", str(i)) for i in (12, 14, 16)]),
}

#: Flink 2.3's rows (BATCH) for DEFINE conditions calling functions
FUNCTIONS = {
    "ABS of two variables": (query("A.id AS aid, B.id AS bid", "A B",
                                   "B AS ABS(B.price - A.price) > 4"), [
        ("ACME", "1", "2"), ("ACME", "10", "11"), ("ACME", "5", "6"), ("ACME", "8", "9"),
        ("BETA", "17", "18")]),
    "UPPER, MOD, CHAR_LENGTH": (query(
        "FIRST(A.id) AS fa, LAST(A.id) AS la, B.id AS bid", "A+ B",
        "A AS UPPER(A.symbol) = 'ACME' AND MOD(A.price, 2) = 1, "
        "B AS CHAR_LENGTH(B.symbol) = 4 AND B.price > 20"), []),
    "TIMESTAMPADD": (query("A.id AS aid, B.id AS bid", "A B",
                           "B AS B.rowtime > TIMESTAMPADD(SECOND, 1, A.rowtime)"), [
        ("BETA", "12", "13"), ("BETA", "14", "15"), ("BETA", "16", "17")]),
    "CASE WHEN": (query("FIRST(A.id) AS fa, LAST(A.id) AS la", "A{2}",
                        "A AS CASE WHEN A.tax > 1 THEN A.price ELSE 0 END > 20"), [
        ("ACME", "4", "5"), ("ACME", "9", "10"), ("BETA", "13", "14"), ("BETA", "16", "17")]),
    "CAST, ROUND, COALESCE": (query(
        "A.id AS aid, B.id AS bid", "A B", "A AS CAST(A.price AS DOUBLE) / 2 > 10, "
        "B AS ROUND(B.price / 3.0, 0) = 8 OR COALESCE(LAST(B.price, 5), B.tax) = 1"), [
        ("ACME", "4", "5"), ("ACME", "9", "10"), ("BETA", "14", "15"), ("BETA", "17", "18")]),
    "LOWER, SUBSTRING, ||": (query(
        "A.id AS aid", "A", "A AS LOWER(SUBSTRING(A.symbol, 2, 2)) || 'x' = 'cmx' "
        "AND A.price > 20"), [("ACME", "10"), ("ACME", "4"), ("ACME", "5"), ("ACME", "9")]),
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_define_calling_functions_matches_as_flinks(name: str) -> None:
    sql, rows = FUNCTIONS[name]
    assert matched(sql) == sorted(rows, key=str)


@pytest.mark.parametrize("name", list(RECORDED))
def test_matches_are_flinks(name: str) -> None:
    sql, rows = RECORDED[name]
    assert matched(sql) == sorted(rows, key=str)


def plan_of(sql: str) -> Any:
    node = sqlglot.parse_one(sql, dialect=Flink()).find(exp.MatchRecognize)
    assert node is not None
    return read_plan(node)


def partitions_of(plan: Any, rows: list[dict[str, Any]]) -> dict[Any, list[dict[str, Any]]]:
    out: dict[Any, list[dict[str, Any]]] = {}
    for r in sorted(rows, key=lambda r: r["rowtime"]):
        out.setdefault(tuple(r[p] for p in plan.partition), []).append(r)
    return out


@pytest.mark.parametrize("name", list(RECORDED))
@pytest.mark.parametrize("cuts", [(3,), (2, 5), (1, 4, 6)])
def test_matching_resumed_in_chunks_gives_the_matches_of_one_call(name: str,
                                                                  cuts: tuple[int, ...]) -> None:
    """The matcher fed a partition's rows in 2-4 chunks, keeping only the rows its state still
    holds, finds what one call over all the rows finds (Flink's recorded matches)."""
    plan = plan_of(RECORDED[name][0])
    for rows in partitions_of(plan, ticker_rows()).values():
        state, kept, chunked = MatchState(), {}, []
        for stop in [*cuts, len(rows)]:
            kept.update({i: rows[i] for i in range(state.next_row, max(stop, state.next_row))})
            chunked += resume_matches(plan, state, kept, stop)
            kept = {i: r for i, r in kept.items() if i >= state.first_needed()}
        assert chunked == partition_matches(plan, rows)


def test_a_keys_matching_feeds_the_rows_the_watermark_passed_and_drops_late_ones() -> None:
    """The streaming processor's state over micro-batches (rows out of order within one): the
    matches of the rows in time order, a row at or before the watermark when it came dropped."""
    plan = plan_of(TICKER_DOCS)
    acme = [r for r in ticker_rows() if r["symbol"] == "ACME"]
    late = {"id": 99, "symbol": "ACME", "price": 1, "tax": 1, "rowtime": acme[1]["rowtime"]}

    def ms(r: dict[str, Any]) -> int:
        return int((r["rowtime"] - START).total_seconds() * 1000)
    state = KeyMatching()
    out = []
    # each micro-batch's rows come with the watermark the last one left; a batch without
    # rows (Spark's, for the timers) then feeds what its watermark passed
    for batch, watermark in ((acme[3::-1], 0), (acme[4:8] + [late], 2000), (acme[8:], 6000),
                             ([], 9000), ([], 20000)):
        state.add(plan, [ms(r) for r in batch], batch, watermark)
        out += state.advance(plan, watermark)
    assert state.pending == [] and len(state.rows) <= len(acme)
    assert [str(atoms[0]) for *atoms, _, _, _ in out] == [RECORDED["docs ticker example"][1][0][1]]
    want = partition_matches(plan, acme)
    assert [row[:len(plan.measure_atoms)] for row in out] == [tuple(a) for _, a in want]


#: what Flink 2.3 refuses, with its words where it has them
REFUSED = {
    "Flink does not support physical offsets within partition": query(
        "A.id AS aid", "A B", "B AS B.price > PREV(B.price, 1)"),
    "Flink does not support physical offsets within partition.": query(  # Flink 2.3's too
        "FIRST(A.id) AS fa", "A{2}", "A AS ABS(A.price - PREV(A.price)) > 2"),
    "Greedy quantifiers are not allowed as the last element": query(
        "FIRST(A.id) AS fa", "A B+", "A AS A.price > 20"),
    "Reluctant optional variables are not supported yet": query("A.id AS aid", "A?? B", "A AS A.x > 0"),
    "The from should be a positive number greater than 0": query("A.id AS aid", "A{,2} B",
                                                                 "A AS A.x > 0"),
    "Could not skip to first element of a match": query("A.id AS aid", "A B", "A AS A.x > 0",
                                                        skip="TO FIRST A"),
    "ALL ROWS PER MATCH is not supported": query("A.id AS aid", "A B", "A AS A.x > 0").replace(
        "ONE ROW", "ALL ROWS"),
    "PERMUTE is not supported": query("A.id AS aid", "PERMUTE(A, B)", "A AS A.x > 0"),
    "Pattern alternation not supported": query("A.id AS aid", "A | B", "A AS A.x > 0"),
    "Pattern groups not supported": query("A.id AS aid", "A (B C)+ D", "A AS A.x > 0"),
    "Pattern exclusion": query("A.id AS aid", "A {- B -} C", "A AS A.x > 0"),
    "CLASSIFIER\\(\\) is not supported": query("CLASSIFIER() AS c", "A B", "A AS A.x > 0"),
    "SQL validation failed. At line 1, column 85: Table 'X' not found": query(
        "X.id AS xid, A.id AS aid", "A B", "A AS A.price > 0"),
    "SQL validation failed. At line 1, column 90: Table 'X' not found": query(
        "LAST(X.id) AS xid", "A B", "A AS A.price > 0"),
    "MATCH_RECOGNIZE: the function REGEXP_EXTRACT in DEFINE is not supported": query(
        "A.id AS aid", "A B", "A AS REGEXP_EXTRACT(A.symbol, 'A') = 'A'"),
    "DISTINCT aggregations are not supported": query("COUNT(DISTINCT A.x) AS c", "A B C",
                                                     "A AS A.x > 0"),
}


@pytest.mark.parametrize("message", list(REFUSED))
def test_refused_as_flink_refuses(message: str) -> None:
    with pytest.raises(FlinkSqlError, match=message):
        matched(REFUSED[message])


def test_quantifiers_read_as_flink_compiles_them() -> None:
    assert parse_pattern("A B+ C* D? E{2} F{2,} G{1,3} H+? I{3}") == [
        Element("A"), Element("B", 1, None, True), Element("C", 0, None, True),
        Element("D", 0, 1, False), Element("E", 2, 2, False), Element("F", 2, None, True),
        Element("G", 1, 3, True), Element("H", 1, None, False), Element("I", 3, 3, False)]
    with pytest.raises(PatternError, match="Unexpected quantifier"):
        parse_pattern("A+* B")


@pytest.fixture(scope="module")
def spark(local_spark: Any) -> Any:
    return local_spark


@pytest.fixture
def planner(spark: Any, tmp_path: Path) -> FlinkSqlPlanner:
    lines = [f"{r['id']},{r['symbol']},{r['rowtime']},{r['price']},{r['tax']}"
             for r in ticker_rows()]
    (tmp_path / "ticker.csv").write_text("\n".join(lines) + "\n")
    p = FlinkSqlPlanner(spark)
    p.plan(f"""CREATE TABLE Ticker (id INT, symbol STRING, rowtime TIMESTAMP(3), price INT,
                 tax INT, WATERMARK FOR rowtime AS rowtime - INTERVAL '1' SECOND)
               WITH ('connector' = 'filesystem', 'path' = '{tmp_path / "ticker.csv"}',
                     'format' = 'csv')""")
    return p


def spark_rows(planner: FlinkSqlPlanner, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    outcome = planner.plan(sql)
    assert outcome.job is not None
    found = [tuple(None if v is None else str(v) for v in r) for r in outcome.job.run().collect()]
    return outcome.column_types, sorted(found, key=str)


def test_batch_query_reads_the_matches_as_a_table(planner: FlinkSqlPlanner) -> None:
    types, found = spark_rows(planner, query(
        "LAST(B.price) - FIRST(A.price) AS rise, CAST(AVG(A.price) AS DOUBLE) AS ap, "
        "SUM(A.tax) + 1 AS st, COUNT(A.id) AS c", "A+ B", "A AS A.price > 15, B AS B.price <= 20"))
    assert found == [("ACME", "-2", "20.0", "10", "5")]  # Flink's: AVG of INT is an INT, 20
    assert types == ["STRING", "INT", "DOUBLE", "INT", "BIGINT"]
    assert spark_rows(planner, query(
        "FIRST(A.id) AS fa, COUNT(A.id) AS c", "A+ B", "A AS A.price > 15, B AS B.price <= 20")
        .replace("SELECT *", "SELECT symbol, SUM(c) AS total") + " GROUP BY symbol")[1] \
        == [("ACME", "5")]
    assert spark_rows(planner, TICKER_DOCS) == (  # Flink's types: the rowtime's
        ["STRING", "TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP(3)"],
        RECORDED["docs ticker example"][1])
    explained = planner.plan("EXPLAIN " + TICKER_DOCS).rows[0][0]  # as Flink's: LogicalMatch,
    assert "+- LogicalMatch(partition=[[1]]" in explained            # Match
    assert "\nMatch(partitionBy=[symbol], orderBy=[rowtime ASC]" in explained
