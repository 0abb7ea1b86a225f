"""Flink's types of expressions (flinktypes.py) against Flink 2.3's own answers: each TYPEOF
recorded from PyFlink 2.3 (tests/data/flink_typeof.txt), DESCRIBE of a VALUES view, and the
DECIMAL and aggregate rules."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import sqlglot

from sessioncluster.spark.flinksql import flinktypes
from sessioncluster.spark.flinksql.dialect import Flink
from sessioncluster.spark.flinksql.flinktypes import Context, infer, query_columns, type_text
from sessioncluster.spark.flinksql.statements import parse_statements

RECORDED = Path(__file__).parent.parent / "data" / "flink_typeof.txt"
#: the view probe.py makes, which the recorded queries read
INTS = ("SELECT * FROM (VALUES (2147483647, CAST(9223372036854775807 AS BIGINT), "
        "CAST(127 AS TINYINT), CAST(32767 AS SMALLINT), 1e20, 'abcde', CAST(1.5 AS DECIMAL(10,2))),"
        " (1, CAST(1 AS BIGINT), CAST(1 AS TINYINT), CAST(1 AS SMALLINT), -1e20, 'x', "
        "CAST(2 AS DECIMAL(10,2)))) AS t(i, b, ti, si, d, s, dc)")
#: what Flink answers that is not claimed here (the fallback, Spark's type, answers instead):
#: '' is CHAR(0), which the Table API's types cannot hold; Flink folds a constant condition
#: before typing (CASE WHEN TRUE THEN 'a' END is CHAR(1) NOT NULL); a VALUES column with a NULL
#: is NOT NULL in Flink 2.3; FLOAT with DOUBLE is FLOAT there
NOT_CLAIMED = {"TYPEOF('')", "TYPEOF(CASE WHEN TRUE THEN 'a' END)", "TYPEOF(NULLIF(1, 3))",
               "TYPEOF(CAST(1 AS FLOAT) + CAST(1 AS DOUBLE))"}


def _recorded() -> list[tuple[str, list[str]]]:
    """(query, first row's values) of each recorded query that answered."""
    out, query = [], None
    for line in RECORDED.read_text().splitlines():
        if line.startswith("### "):
            query = line[4:]
        elif line.startswith("ROW ") and query is not None:
            values = re.fullmatch(r"ROW <Row\((.*)\)>", line)
            assert values is not None
            out.append((query, list(ast.literal_eval(f"[{values.group(1)}]"))))
            query = None
    return out


def _ints(name: str) -> flinktypes.Columns | None:
    if name.lower() != "ints":
        return None
    return query_columns(sqlglot.parse_one(INTS, dialect=Flink), _ints)


CASES = [(q, i, answer) for q, row in _recorded() for i, answer in enumerate(row)
         if "TYPEOF" in q.upper()]


def test_the_recorded_answers_are_many() -> None:
    assert len(CASES) >= 90


@pytest.mark.parametrize(("query", "position", "flink"), CASES,
                         ids=[f"{q[:60]}#{i}" for q, i, _ in CASES])
def test_typeof_is_flinks_answer(query: str, position: int, flink: str) -> None:
    select = parse_statements(query)[0].ast  # type: ignore[attr-defined]
    item = select.selects[position].unalias()
    scope = flinktypes.select_scope(select, _ints, {})
    assert scope is not None
    calls = flinktypes.typeof_calls(item)
    if not calls:  # a plain column next to the TYPEOFs
        return
    argument = calls[0].expressions[0]
    inferred = infer(argument, Context(scope.by_name, grouped=select.args.get("group") is not None))
    if calls[0].sql(dialect=Flink) in NOT_CLAIMED or "NULL AS STRING))) AS t(v)" in query:
        assert inferred is None or type_text(inferred) == flink
        return
    assert inferred is not None, f"{argument.sql(dialect=Flink)} is not typed"
    assert type_text(inferred) == flink


def _columns(query: str) -> list[tuple[str, str | None]]:
    columns = query_columns(sqlglot.parse_one(query, dialect=Flink), _ints)
    assert columns is not None
    return [(n, None if t is None else type_text(t)) for n, t in columns]


def test_a_values_view_is_typed_as_flinks_describe_says() -> None:
    # flink_batch.out: DESCRIBE orders -> INT, VARCHAR(5), INT, TIMESTAMP(0), all NOT NULL
    orders = parse_statements(
        "CREATE TEMPORARY VIEW orders(order_id, product, amount, ts) AS VALUES "
        "(1, 'apple', 3, TIMESTAMP '2024-01-01 10:00:01'), (2, 'pear', 5, "
        "TIMESTAMP '2024-01-01 10:00:07'), (4, 'plum', 9, TIMESTAMP '2024-01-01 10:00:15')")[0]
    columns = query_columns(orders.query, _ints)  # type: ignore[attr-defined]
    assert columns is not None
    assert [type_text(t) for _, t in columns if t is not None] == [
        "INT NOT NULL", "VARCHAR(5) NOT NULL", "INT NOT NULL", "TIMESTAMP(0) NOT NULL"]


def test_the_result_types_of_arithmetic_and_aggregates() -> None:
    # flink1.out's result schemas
    assert _columns("SELECT i + 1.5, i * 2.0 FROM ints") == [
        ("EXPR$0", "DECIMAL(12, 1) NOT NULL"), ("EXPR$1", "DECIMAL(13, 1) NOT NULL")]
    assert _columns("SELECT ti + ti, si * si, -ti, i + b FROM ints") == [
        ("EXPR$0", "TINYINT NOT NULL"), ("EXPR$1", "SMALLINT NOT NULL"),
        ("EXPR$2", "TINYINT NOT NULL"), ("EXPR$3", "BIGINT NOT NULL")]
    assert _columns("SELECT SUM(i), SUM(b), AVG(i) FROM ints") == [
        ("EXPR$0", "INT"), ("EXPR$1", "BIGINT"), ("EXPR$2", "INT")]
    assert _columns("SELECT -(-2147483648) AS v, 9223372036854775807 + 1 AS w") == [
        ("v", "BIGINT NOT NULL"), ("w", "BIGINT NOT NULL")]
    assert _columns("SELECT CAST(d AS BIGINT), d / 0 FROM ints") == [
        ("EXPR$0", "BIGINT NOT NULL"), ("EXPR$1", "DOUBLE NOT NULL")]


def test_decimal_precision_is_adjusted_past_38_as_flinks_logical_type_merging() -> None:
    assert flinktypes.adjust_precision_scale(12, 2) == (12, 2)
    # DECIMAL(38, 10) * DECIMAL(38, 10): 77 digits, 20 of scale -> 57 integer digits kept
    # as far as they go, the scale down to 6
    assert flinktypes.adjust_precision_scale(77, 20) == (38, 6)
    assert flinktypes.adjust_precision_scale(40, 30) == (38, 28)


def test_outer_joins_make_the_missing_side_nullable_and_unknowns_stay_unknown() -> None:
    columns = _columns("SELECT a.i, b.s FROM ints a LEFT JOIN ints b ON a.i = b.i")
    assert columns == [("i", "INT NOT NULL"), ("s", "VARCHAR(5)")]
    # an ambiguous name, an unknown table, a set operation: not typed here
    assert _columns("SELECT i FROM ints a JOIN ints b ON a.i = b.i") == [("i", None)]
    assert query_columns(sqlglot.parse_one("SELECT x FROM nowhere", dialect=Flink), _ints) is None
    union = sqlglot.parse_one("SELECT i FROM ints UNION ALL SELECT i FROM ints", dialect=Flink)
    assert query_columns(union, _ints) is None
