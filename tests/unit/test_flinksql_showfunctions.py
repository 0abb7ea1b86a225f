"""SHOW [USER] FUNCTIONS [FROM|IN db] [NOT] LIKE|ILIKE 'pattern' against PyFlink 2.3's answers
with one temporary system function (my_sys) and one temporary catalog function (my_cat)
registered (recorded by /work/briefs/data/ftypes3/probe.py, probe.out)."""

from __future__ import annotations

import sys
from typing import Any

import cloudpickle
import pytest

from sessioncluster.api.table.result import format_tableau
from sessioncluster.api.table.types import DataTypes
from sessioncluster.api.table.udf import udf
from sessioncluster.spark.flinksql.builtins import FLINK_FUNCTIONS, sql_like
from sessioncluster.spark.flinksql.executor import FlinkSqlPlanner
from sessioncluster.spark.flinksql.model import FlinkSqlError
from sessioncluster.spark.flinksql.statements import Show, parse_statements


@pytest.fixture(scope="module")
def planner(local_spark: Any) -> FlinkSqlPlanner:
    p = FlinkSqlPlanner(local_spark)
    payload = cloudpickle.dumps(udf(lambda x: x + 1, result_type=DataTypes.INT()))
    p.plan("CREATE TEMPORARY SYSTEM FUNCTION my_sys AS 'f' LANGUAGE PYTHON", function=payload)
    p.plan("CREATE TEMPORARY FUNCTION my_cat AS 'f' LANGUAGE PYTHON", function=payload)
    yield p
    for name in ("my_sys", "my_cat"):
        p.plan(f"DROP TEMPORARY SYSTEM FUNCTION IF EXISTS {name}")


def names(planner: FlinkSqlPlanner, statement: str) -> list[str]:
    outcome = planner.plan(statement)
    assert outcome.columns == ["function name"] and outcome.column_types == ["STRING"]
    return [row[0] for row in outcome.rows]


def test_show_functions_lists_flinks_built_in_functions_and_the_users() -> None:
    """Flink 2.3: 253 rows, the 251 built-in names and the two, sorted as Java sorts strings
    (upper case first); SHOW USER FUNCTIONS the two only."""
    assert len(FLINK_FUNCTIONS) == 251 and list(FLINK_FUNCTIONS) == sorted(FLINK_FUNCTIONS)
    assert FLINK_FUNCTIONS[:3] == ("AGG_DECIMAL_MINUS", "AGG_DECIMAL_PLUS", "ARRAY_AGG")
    assert FLINK_FUNCTIONS[-2:] == ("withColumns", "withoutColumns")


def test_show_functions(planner: FlinkSqlPlanner) -> None:
    shown = names(planner, "SHOW FUNCTIONS")
    assert len(shown) == 253 and shown == sorted([*FLINK_FUNCTIONS, "my_cat", "my_sys"])
    assert shown[shown.index("mod"):shown.index("mod") + 4] == ["mod", "my_cat", "my_sys", "not"]
    assert names(planner, "SHOW USER FUNCTIONS") == ["my_cat", "my_sys"]
    # TableResult.print() of what ran no job (SHOW...): widths from the data, as Flink's
    user = format_tableau(["function name"], ["STRING"], [["my_cat"], ["my_sys"]], None,
                          widths_from_data=True, max_column_width=sys.maxsize)
    assert user.splitlines() == [
        "+---------------+", "| function name |", "+---------------+", "|        my_cat |",
        "|        my_sys |", "+---------------+", "2 rows in set"]
    lines = format_tableau(["function name"], ["STRING"], [[n] for n in shown], None,
                           widths_from_data=True, max_column_width=sys.maxsize).splitlines()
    assert lines[:4] == ["+-------------------------------+", "|                 function name |",
                         "+-------------------------------+", "|             AGG_DECIMAL_MINUS |"]
    assert lines[-3:] == ["|                withoutColumns |", "+-------------------------------+",
                          "253 rows in set"]


@pytest.mark.parametrize(("statement", "flink"), [
    ("SHOW FUNCTIONS LIKE 'my%'", ["my_cat", "my_sys"]),
    ("SHOW FUNCTIONS ILIKE 'MY%'", ["my_cat", "my_sys"]),
    ("SHOW FUNCTIONS LIKE 'MY%'", []),
    ("SHOW FUNCTIONS LIKE 'sum'", ["sum"]),
    ("SHOW FUNCTIONS LIKE 'SUM'", []),
    ("SHOW FUNCTIONS ILIKE 'sum'", ["sum"]),
    ("SHOW FUNCTIONS LIKE '%time%'",
     ["fromUnixtime", "proctime", "rowtime", "times", "timestampDiff"]),
    ("SHOW USER FUNCTIONS LIKE 'my%'", ["my_cat", "my_sys"]),
    ("SHOW USER FUNCTIONS ILIKE 'MY_%'", ["my_cat", "my_sys"]),
    ("SHOW USER FUNCTIONS NOT LIKE 'my_s%'", ["my_cat"]),
    ("SHOW USER FUNCTIONS NOT ILIKE 'MY_S%'", ["my_cat"]),
    ("SHOW FUNCTIONS FROM default_database LIKE 'my%'", ["my_cat", "my_sys"]),
    ("SHOW FUNCTIONS IN default_catalog.default_database ILIKE 'my%'", ["my_cat", "my_sys"]),
    ("SHOW USER FUNCTIONS FROM default_catalog.default_database", ["my_cat", "my_sys"]),
    ("SHOW FUNCTIONS LIKE 'a_s'", ["abs"]),
    ("SHOW FUNCTIONS LIKE 'my\\_%'", ["my_cat", "my_sys"]),
    ("SHOW FUNCTIONS LIKE '%\\%%'", []),
])
def test_show_functions_like(planner: FlinkSqlPlanner, statement: str, flink: list[str]) -> None:
    assert names(planner, statement) == flink


def test_show_functions_counts(planner: FlinkSqlPlanner) -> None:
    """Flink 2.3: NOT LIKE '%a%' 172 rows; FROM a database not the session's 252 (its
    temporary catalog function left out)."""
    assert len(names(planner, "SHOW FUNCTIONS NOT LIKE '%a%'")) == 172
    other = names(planner, "SHOW FUNCTIONS FROM nodb")
    assert len(other) == 252 and "my_sys" in other and "my_cat" not in other


def test_show_functions_parse() -> None:
    assert parse_statements("SHOW FUNCTIONS IN c.d NOT ILIKE 'x%'")[0] == Show(
        "FUNCTIONS", "c.d", "x%", ilike=True, not_like=True)
    assert parse_statements("show user functions")[0] == Show("USER FUNCTIONS")
    with pytest.raises(FlinkSqlError) as error:
        parse_statements("SHOW FUNCTIONS LIKE my")
    assert str(error.value) == ('SQL parse failed. Encountered "my" at line 1, column 21.\n'
                                "Was expecting:\n    <QUOTED_STRING> ...\n    ")
    assert sql_like("a\\%b_").fullmatch("a%bc") and not sql_like("a\\%b_").fullmatch("axbc")
