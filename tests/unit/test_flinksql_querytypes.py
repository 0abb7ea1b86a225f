"""Flink's types of a query's columns (querytypes.py, typemerging.py) against Flink 2.3's own
answers: each query's columns recorded from PyFlink 2.3 (tests/data/flink_schemas.txt) — NOT
NULL of aggregates and grouping keys, COLLECT's MULTISET, set operations, window table
functions — and the Spark refinement of a query's result types (columntypes.py). No Spark."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot

from sessioncluster.api.table.typeparser import parse_type
from sessioncluster.api.table.types import DataTypes, MultisetType
from sessioncluster.spark.flinksql import querytypes
from sessioncluster.spark.flinksql.columntypes import (
    declared_columns,
    refined_types,
    spark_compatible,
)
from sessioncluster.spark.flinksql.dialect import Flink
from sessioncluster.spark.flinksql.flinktypes import Columns
from sessioncluster.spark.flinksql.statements import CreateTable, parse_statements
from sessioncluster.spark.flinksql.typemerging import least_restrictive

RECORDED = Path(__file__).parent.parent / "data" / "flink_schemas.txt"
#: the view and tables /work/briefs/data/ftypes2/probe.py declares, which the queries read
VIEW = ("SELECT * FROM (VALUES (1, 'abc', CAST(10 AS BIGINT), 'x'), (2, 'de', CAST(20 AS BIGINT),"
        " 'yy'), (1, 'abc', CAST(30 AS BIGINT), 'x')) AS t(a, s, b, c)")
TABLES = [
    "CREATE TEMPORARY TABLE src (a INT, s VARCHAR(3), b BIGINT NOT NULL, n INT NOT NULL, "
    "d DECIMAL(10,2), f FLOAT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) "
    "WITH ('connector'='datagen','number-of-rows'='3')",
    "CREATE TEMPORARY TABLE src2 (a BIGINT NOT NULL, s VARCHAR(5) NOT NULL, c CHAR(2), "
    "d DECIMAL(5,3), f DOUBLE, ts TIMESTAMP(6), pt AS PROCTIME()) "
    "WITH ('connector'='datagen','number-of-rows'='3')"]
#: Flink's answers not claimed here (the column is None: Spark's type answers instead): Flink
#: 2.3 unites a FLOAT column with a DOUBLE one as FLOAT (but CAST(1 AS DOUBLE) with a FLOAT as
#: DOUBLE)
NOT_CLAIMED = {("SELECT f FROM src UNION ALL SELECT f FROM src2", 0)}
#: a time attribute's marker, which a type here does not carry
MARKERS = (" *PROCTIME*",)


def _tables() -> dict[str, Columns]:
    out: dict[str, Columns] = {}
    for ddl in TABLES:
        statement = parse_statements(ddl)[0]
        assert isinstance(statement, CreateTable)
        out[statement.table.name] = declared_columns(statement.table)
    out["v"] = querytypes.query_columns(sqlglot.parse_one(VIEW, dialect=Flink),
                                        lambda name: None) or []
    return out


TABLE_COLUMNS = _tables()


def _columns(query: str) -> Columns | None:
    return querytypes.query_columns(parse_statements(query)[0].ast,  # type: ignore[attr-defined]
                                    lambda name: TABLE_COLUMNS.get(name.lower()))


def _recorded() -> list[tuple[str, list[tuple[str, str]]]]:
    out, query = [], None
    for line in RECORDED.read_text().splitlines():
        if line.startswith("### "):
            query = line[4:]
        elif line.startswith("SCHEMA ") and query is not None:
            columns = []
            for column in line[len("SCHEMA "):].split(" | "):
                name, _, type_text = column[1:].partition("` ")
                columns.append((name, type_text))
            out.append((query, columns))
    return out


CASES = [(q, columns) for q, columns in _recorded() if "TYPEOF" not in q.upper()]


def test_the_recorded_answers_are_many() -> None:
    assert len(CASES) >= 45 and sum(len(c) for _, c in CASES) >= 150


@pytest.mark.parametrize(("query", "flink"), CASES, ids=[q[:70] for q, _ in CASES])
def test_a_querys_columns_are_flinks(query: str, flink: list[tuple[str, str]]) -> None:
    ours = _columns(query)
    assert ours is not None
    assert [n for n, _ in ours] == [n for n, _ in flink]
    for i, ((_, t), (name, answer)) in enumerate(zip(ours, flink)):
        if (query, i) in NOT_CLAIMED:
            assert t is None, name
            continue
        for marker in MARKERS:
            answer = answer.replace(marker, "")
        assert t is not None and str(t) == answer, name


def test_typeof_of_collect_and_cardinality() -> None:
    """TYPEOF's recorded answers are Flink's column types of COLLECT and CARDINALITY (Flink 2.3
    fails to run TYPEOF(COLLECT(...)) itself: no MIN of a MULTISET)."""
    columns = _columns("SELECT COLLECT(DISTINCT b) AS x, CARDINALITY(ARRAY[1, 2]) AS y, "
                       "CARDINALITY(MAP['a', 1]) AS z, CARDINALITY(COLLECT(a)) AS k FROM src")
    assert columns is not None
    assert [str(t) for _, t in columns] == ["MULTISET<BIGINT NOT NULL> NOT NULL",
                                            "INT NOT NULL", "INT NOT NULL", "INT NOT NULL"]


def test_set_operations_unite_types_as_flinks_least_restrictive() -> None:
    """Recorded: 1.5 with 10 is DECIMAL(11, 1), a TINYINT with DECIMAL(3, 1) DECIMAL(4, 1),
    TIMESTAMP(0) with TIMESTAMP(3) TIMESTAMP(3), a NULL makes the column nullable."""
    cases = {"SELECT 1.5 AS x UNION ALL SELECT 10": "DECIMAL(11, 1) NOT NULL",
             "SELECT CAST(1 AS TINYINT) AS x UNION ALL SELECT CAST(2 AS DECIMAL(3,1))":
                 "DECIMAL(4, 1) NOT NULL",
             "SELECT TIMESTAMP '2020-01-01 00:00:00' AS x UNION ALL "
             "SELECT TIMESTAMP '2020-01-01 00:00:00.123'": "TIMESTAMP(3) NOT NULL",
             "(SELECT a FROM v) UNION ALL (SELECT CAST(NULL AS INT))": "INT",
             "SELECT COLLECT(a) AS x FROM v UNION ALL SELECT COLLECT(a) FROM v":
                 "MULTISET<INT NOT NULL> NOT NULL"}
    for query, flink in cases.items():
        columns = _columns(query)
        assert columns is not None and str(columns[0][1]) == flink, query
    assert least_restrictive([DataTypes.DATE(), DataTypes.TIMESTAMP(3)]) is None  # Flink refuses
    assert _columns("SELECT a, s FROM v UNION ALL SELECT a FROM v") is None


def test_a_window_functions_time_is_its_time_columns_type() -> None:
    """window_time is the time column's type made NOT NULL (TIMESTAMP(6) NOT NULL of a plain
    TIMESTAMP(6) column in BATCH, TIMESTAMP_LTZ(3) NOT NULL of a PROCTIME()); a time column not
    known leaves it unknown; another function of TABLE is not typed here."""
    columns = _columns("SELECT * FROM TABLE(TUMBLE(TABLE src2, DESCRIPTOR(pt), "
                       "INTERVAL '10' SECOND))")
    assert columns is not None and str(columns[-1][1]) == "TIMESTAMP_LTZ(3) NOT NULL"
    columns = _columns("SELECT * FROM TABLE(TUMBLE(TABLE src2, DESCRIPTOR(zz), "
                       "INTERVAL '10' SECOND))")
    assert columns is not None and columns[-1] == ("window_time", None)
    assert _columns("SELECT * FROM TABLE(OTHER(TABLE src2, DESCRIPTOR(ts)))") is None


def test_multiset_is_a_type_of_the_table_api() -> None:
    """PyFlink's DataTypes.MULTISET (repr MultisetType(IntType(true), true)); Flink's text
    MULTISET<T>; no Spark column type for a table's column of it."""
    t = DataTypes.MULTISET(DataTypes.INT())
    assert repr(t) == "MultisetType(IntType(true), true)"
    assert str(parse_type("MULTISET<INT NOT NULL> NOT NULL")) == "MULTISET<INT NOT NULL> NOT NULL"
    assert parse_type("INT MULTISET") == t and isinstance(t, MultisetType)
    with pytest.raises(ValueError, match="MULTISET has no Spark equivalent"):
        t.spark_ddl()


def test_result_types_take_flinks_where_they_refine_sparks() -> None:
    """NOT NULL, a length, a precision, a MULTISET (Spark's map of each value to its count)
    refine Spark's type; another kind of type, or a column not typed, keeps Spark's."""
    inferred: Columns = [("a", DataTypes.BIGINT(False)), ("s", DataTypes.VARCHAR(3)),
                         ("m", DataTypes.MULTISET(DataTypes.INT(False), False)),
                         ("x", DataTypes.INT(False)), ("y", None)]
    spark = ["BIGINT", "STRING", "MAP<INT, INT>", "BIGINT", "DOUBLE"]
    assert refined_types(spark, inferred) == [
        "BIGINT NOT NULL", "VARCHAR(3)", "MULTISET<INT NOT NULL> NOT NULL", "BIGINT", "DOUBLE"]
    assert refined_types(spark, None) == spark
    # a view's column keeps its MULTISET's text in Spark's field (its NOT NULLs left out)
    assert refined_types(["MULTISET<INT>"], [("m", inferred[2][1])]) == [
        "MULTISET<INT NOT NULL> NOT NULL"]
    # a CHAR column's declared type Spark carried through a UNION with a longer one
    assert refined_types(["VARCHAR(5)"], [("s", DataTypes.VARCHAR(6, False))]) == [
        "VARCHAR(6) NOT NULL"]
    assert not spark_compatible(DataTypes.MULTISET(DataTypes.INT()), "MAP<STRING, INT>")
    # SUM(d) * 2 of a DECIMAL(10, 2): Flink's DECIMAL(38, 2), Spark's DECIMAL(20, 2) or so
    assert refined_types(["DECIMAL(22, 2)", "DECIMAL(20, 2)", "DECIMAL(38, 2)"], [
        ("x", DataTypes.DECIMAL(38, 2)), ("y", DataTypes.DECIMAL(38, 6)),
        ("z", DataTypes.DECIMAL(20, 2))]) == ["DECIMAL(38, 2)", "DECIMAL(20, 2)", "DECIMAL(38, 2)"]
