"""Python UDFs without Spark: udf/udtf/udaf in their decorator and call forms, the Flink SQL of
their calls and of map/flat_map/aggregate/join_lateral, what create_temporary_system_function
sends (the wrapper pickled as user code, by value), and the runners Spark's workers call.

The gateway records what a TableEnvironment sends (standing in for ``Session``); the planner's
translation to Spark SQL is checked on the real parser and planner (``to_spark_sql``).
"""

from __future__ import annotations

import pickle
import re
import subprocess
import sys
from typing import Any, Iterator

import pandas as pd
import pyarrow as pa
import pytest

from sessioncluster.api.table.environment import EnvironmentSettings, TableEnvironment
from sessioncluster.api.table.expressions import call, col, lit
from sessioncluster.api.table.types import DataTypes
from sessioncluster.api.table.udf import (
    AggregateFunction,
    FunctionContext,
    ScalarFunction,
    TableFunction,
    UserDefinedAggregateFunctionWrapper,
    UserDefinedScalarFunctionWrapper,
    UserDefinedTableFunctionWrapper,
    udaf,
    udf,
    udtaf,
    udtf,
)
from sessioncluster.client.shipping import dumps_user_code
from sessioncluster.common.execution_mode import RuntimeExecutionMode
from sessioncluster.common.types import Row
from sessioncluster.spark.flinksql.functions import job_parameters, load_wrapper
from sessioncluster.spark.flinksql.planner import to_spark_sql
from sessioncluster.spark.flinksql.statements import CreateFunction, Query, parse_statements
from sessioncluster.spark.flinksql.udf_runners import (
    AggregateRunner,
    ScalarRunner,
    TableRunner,
)


class Answer:
    """A SqlStatementResult's fields: no rows."""

    job_id, result_kind, columns, column_types, row_kinds = "", "SUCCESS", [], [], None
    table = pa.table({})


class RecordingGateway:
    """Records each statement and the function sent with it."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def execute_flink_sql(self, statement: str, runtime_mode: RuntimeExecutionMode,
                          configuration: dict[str, str], *, function: Any = None) -> Answer:
        self.sent.append((statement, function))
        return Answer()

    def create_temporary_view(self, name: str, df: Any) -> None:
        pass

    def job(self, job_id: str) -> Any:
        return None


@pytest.fixture
def gateway() -> RecordingGateway:
    return RecordingGateway()


@pytest.fixture
def t_env(gateway: RecordingGateway) -> TableEnvironment:
    return TableEnvironment(gateway, EnvironmentSettings.in_batch_mode())


class Scale(ScalarFunction):
    def open(self, function_context: FunctionContext) -> None:
        self.factor = int(function_context.get_job_parameter("factor", "1"))
        self.opened = getattr(self, "opened", 0) + 1

    def eval(self, i: int) -> int:
        return i * self.factor


class Split(TableFunction):
    def eval(self, line: str) -> Iterator[Row]:
        for w in line.split():
            yield Row(w, len(w))


class Sum(AggregateFunction):
    def create_accumulator(self) -> list[float]:
        return [0.0]

    def accumulate(self, accumulator: list[float], v: float | None) -> None:
        accumulator[0] += v or 0.0

    def get_value(self, accumulator: list[float]) -> float:
        return accumulator[0]


def spark_sql(flink: str) -> str:
    query = parse_statements(flink)[0]
    assert isinstance(query, Query)
    return to_spark_sql(query.ast, {})


# -- decorator and call forms ---------------------------------------------------------------
def test_decorator_and_call_forms() -> None:
    @udf(result_type=DataTypes.BIGINT())
    def add_one(i: int) -> int:
        return i + 1

    assert isinstance(add_one, UserDefinedScalarFunctionWrapper)
    assert add_one.name == "add_one" and add_one.func_type == "general"
    assert add_one.function.eval(1) == 2
    called = udf(lambda i: i * 2, result_type="BIGINT", name="twice", deterministic=False)
    assert called.name == "twice" and not called.is_deterministic()
    assert called.result_data_types() == [DataTypes.BIGINT()]  # type text parsed
    pandas = udf(lambda a: a, result_type="DOUBLE", func_type="pandas")
    assert pandas.func_type == "pandas"
    assert udf(Scale(), result_type="BIGINT").name == "Scale"

    tf = udtf(Split(), result_types=[DataTypes.STRING(), DataTypes.INT()])
    assert isinstance(tf, UserDefinedTableFunctionWrapper)
    assert tf.result_names() == ["f0", "f1"]
    row_tf = udtf(lambda s: [s], result_types=DataTypes.ROW([
        DataTypes.FIELD("word", DataTypes.STRING())]))
    assert row_tf.result_names() == ["word"]

    agg = udaf(Sum(), result_type="DOUBLE", accumulator_type="ARRAY<DOUBLE>")
    assert isinstance(agg, UserDefinedAggregateFunctionWrapper) and agg.name == "Sum"
    assert udaf(lambda v: v.mean(), result_type="DOUBLE", func_type="pandas").func_type == \
        "pandas"


def test_wrong_types_are_refused_with_a_clear_message() -> None:
    with pytest.raises(TypeError, match="returnType should be DataType but is None"):
        udf(lambda i: i)
    with pytest.raises(ValueError, match="'NUMBERS' is not a Flink SQL type"):
        udf(lambda i: i, result_type="NUMBERS")
    with pytest.raises(ValueError, match="func_type is 'general' or 'pandas'"):
        udf(lambda i: i, result_type="INT", func_type="arrow")
    with pytest.raises(TypeError, match="general udaf takes an AggregateFunction"):
        udaf(lambda v: v, result_type="INT")
    with pytest.raises(TypeError, match="udtaf takes a TableAggregateFunction"):
        udtaf(lambda v: v)


# -- rendering and registration --------------------------------------------------------------
def test_a_call_renders_the_registered_name(t_env, gateway) -> None:
    add = udf(lambda a, b: a + b, result_type="BIGINT")
    t_env.create_temporary_system_function("add", add)
    statement, function = gateway.sent[-1]
    assert re.fullmatch(r"CREATE TEMPORARY SYSTEM FUNCTION `add` AS '.*<lambda>' "
                        "LANGUAGE PYTHON", statement)
    assert function is add
    assert add(col("a"), 1).to_sql() == "add(`a`, 1)"
    assert call(add, col("a"), lit(2)).to_sql() == "add(`a`, 2)"
    t_env.create_temporary_function("cat.db.add2", add)
    assert gateway.sent[-1][0].startswith("CREATE TEMPORARY FUNCTION `cat`.`db`.`add2` AS")


def test_an_unregistered_function_is_registered_before_its_first_statement(t_env,
                                                                          gateway) -> None:
    scale = udf(Scale(), result_type="BIGINT")
    t = t_env.from_path("t").select(col("a"), scale(col("a")).alias("s"))
    name = scale.sql_name()
    assert re.fullmatch(r"pyudf_Scale_[0-9a-f]{6}_\d+", name)
    assert t.query_sql == f"SELECT `a`, {name}(`a`) AS `s` FROM (SELECT * FROM `t`)"
    t.execute()
    t.execute()
    statements = [s for s, _ in gateway.sent]
    assert statements[0] == (f"CREATE TEMPORARY SYSTEM FUNCTION `{name}` AS "
                             f"'{__name__}.Scale' LANGUAGE PYTHON")
    assert gateway.sent[0][1] is scale
    assert statements[1:] == [t.query_sql, t.query_sql]  # registered once


def test_row_based_operations_render_flink_sql_spark_can_run(t_env) -> None:
    t = t_env.from_elements([(1, "a b")], ["id", "line"])
    view = t.query_sql
    split = udtf(Split(), result_types=[DataTypes.STRING(), DataTypes.INT()])
    flat = t.flat_map(split(col("line")).alias("word", "n"))
    name = split.sql_name()
    assert flat.query_sql == (f"SELECT `word`, `n` FROM ({view}) AS `_l`, LATERAL "
                              f"TABLE({name}(`line`)) AS `_t`(`word`, `n`)")
    assert f"LATERAL {name.upper()}(`line`) AS `_t`(`word`, `n`)" in spark_sql(flat.query_sql)
    lateral = t.left_outer_join_lateral(split(col("line")))
    assert f"LEFT JOIN LATERAL {name.upper()}(`line`)" in spark_sql(lateral.query_sql)
    assert lateral.get_column_names() == ["id", "line", "f0", "f1"]
    # PyFlink's examples/table/basic_operations.py: the function named, applied to whole rows
    named = t.join_lateral(split.alias("w", "k"))
    assert named.get_column_names() == ["id", "line", "w", "k"]
    assert f"{name.upper()}((STRUCT(`id`, `line`)))" in spark_sql(named.query_sql)

    pair = udf(lambda r: Row(r.id, r.line), result_type=DataTypes.ROW([
        DataTypes.FIELD("x", DataTypes.BIGINT()), DataTypes.FIELD("y", DataTypes.STRING())]))
    mapped = t.map(pair)
    assert mapped.get_column_names() == ["x", "y"]
    assert f"{pair.sql_name().upper()}((STRUCT(`id`, `line`))) AS `_r`" in \
        spark_sql(mapped.query_sql)

    total = udaf(Sum(), result_type="DOUBLE")
    agg = t.group_by(col("line")).aggregate(total(col("id")).alias("s")).select(col("s"))
    assert agg.query_sql == (f"SELECT `s` FROM (SELECT `line`, {total.sql_name()}(`id`) AS `s` "
                             f"FROM ({view}) GROUP BY `line`)")
    with pytest.raises(ValueError, match="1 aliases for the 2 result columns"):
        t.flat_map(split(col("line")).alias("w"))
    with pytest.raises(TypeError, match=r"takes a call of a Python table function"):
        t.flat_map(pair(col("id")))


# -- the payload -----------------------------------------------------------------------------
def test_the_pickled_wrapper_round_trips_by_value() -> None:
    wrapper = udf(Scale(), result_type="BIGINT")
    payload = dumps_user_code(wrapper)
    statement = CreateFunction("scale", "x.Scale", "PYTHON", True, True)
    loaded = load_wrapper(statement, payload)
    assert loaded.name == "Scale" and loaded.result_data_types() == [DataTypes.BIGINT()]
    # this test module cannot be imported where it is unpickled: Scale travels by value
    script = ("import pickle, sys; sys.modules['tests'] = None; "
              "w = pickle.loads(sys.stdin.buffer.read()); f = w.function; "
              "f.open(__import__('sessioncluster.api.table.udf', fromlist=['x'])"
              ".FunctionContext({'factor': '4'})); print(f.eval(5))")
    out = subprocess.run([sys.executable, "-c", script], input=payload, capture_output=True,
                         check=True)
    assert out.stdout.decode().strip() == "20"
    with pytest.raises(ValueError, match="not a Python user-defined function"):
        load_wrapper(statement, pickle.dumps(42))
    with pytest.raises(ValueError, match="LANGUAGE JAVA"):
        load_wrapper(CreateFunction("f", "com.x.F", "JAVA"), b"")
    with pytest.raises(ValueError, match="Instantiating python function 'nope.fn' failed: "
                       "ModuleNotFoundError: No module named 'nope'"):
        load_wrapper(CreateFunction("f", "nope.fn", "PYTHON"), b"")


def test_job_parameters_include_the_global_ones() -> None:
    params = job_parameters({"pipeline.global-job-parameters": "factor:3, mode : x",
                             "parallelism.default": "2"})
    assert params["factor"] == "3" and params["mode"] == "x"
    assert params["parallelism.default"] == "2"


# -- the runners Spark's workers call ----------------------------------------------------------
def test_scalar_runner_opens_once_and_checks_the_result_type() -> None:
    function = Scale()
    runner = ScalarRunner(function, "token-scale", "Scale", {"factor": "3"}, "BIGINT")
    assert [runner(i) for i in (1, 2, 3)] == [3, 6, 9]
    assert function.opened == 1
    again = ScalarRunner(Scale(), "token-scale", "Scale", {"factor": "3"}, "BIGINT")
    assert again(4) == 12 and function.opened == 1  # the worker's opened instance
    wrong = ScalarRunner(udf(lambda i: str(i), result_type="INT").function, "token-wrong",
                         "as_text", {}, "INT")
    with pytest.raises(TypeError, match=r"'as_text' returned '1' \(str\), but its "
                                        "result_type is INT"):
        wrong(1)
    rows = ScalarRunner(udf(lambda i: Row(i, Row(i)), result_type="ROW<a INT, b ROW<c INT>>")
                        .function, "token-row", "r", {}, "ROW<a INT, b ROW<c INT>>")
    assert rows(7) == (7, (7,))  # Spark takes tuples


def test_table_and_aggregate_runners() -> None:
    tf = TableRunner(Split(), "token-split", "Split", {}, 2)
    assert list(tf.rows("to be")) == [("to", 2), ("be", 2)]
    single = TableRunner(udtf(lambda s: iter(s.split()), result_types="STRING").function,
                         "token-words", "words", {}, 1)
    assert list(single.rows("a b")) == [("a",), ("b",)]
    agg = AggregateRunner(Sum(), "token-sum", "Sum", {})
    assert agg(pd.Series([1.0, None, 2.5])) == 3.5
    assert agg(pd.Series([], dtype=float)) == 0.0


def test_flinks_lateral_table_and_a_user_split_in_spark_sql() -> None:
    assert spark_sql("SELECT id, w FROM t, LATERAL TABLE(split(s)) AS T(w, n)") == \
        "SELECT id, w FROM t CROSS JOIN LATERAL SPLIT(s) AS T(w, n)"
    assert spark_sql("SELECT id, w FROM t LEFT JOIN LATERAL TABLE(split(s)) AS T(w, n) "
                     "ON TRUE").endswith("LEFT JOIN LATERAL SPLIT(s) AS T(w, n) ON TRUE")
    assert spark_sql("SELECT f(TO_TIMESTAMP(s)) FROM t") == \
        "SELECT F(CAST(TRY_TO_TIMESTAMP(s, 'yyyy-MM-dd HH:mm:ss') AS TIMESTAMP_NTZ)) AS `EXPR$0` FROM t"
