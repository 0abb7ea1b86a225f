"""Python UDFs on a real session, in BATCH: scalar (general and pandas), table and aggregate
(general and pandas) functions defined in this module (shipped by value), called from the Table
API and from Flink SQL, ``open()`` run with the job's parameters, a raising function's traceback
in the error and the session usable after it; results compared with plain Python."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any, Iterator

import pandas as pd
import pytest

from sessioncluster.api.table.types import DataTypes
from sessioncluster.client.table_environment import TableEnvironment
from sessioncluster.common.types import Row
from sessioncluster.pyflink.table import EnvironmentSettings
from sessioncluster.pyflink.table.expressions import col
from sessioncluster.pyflink.table.udf import (
    AggregateFunction,
    AsyncScalarFunction,
    FunctionContext,
    ScalarFunction,
    TableAggregateFunction,
    udaf,
    udf,
    udtaf,
    udtf,
)

from ..helpers import csv_rows

pytestmark = pytest.mark.integration

ROWS = [(1, "a", "to be or", 2.0), (2, "b", "", 3.5), (3, "a", "not to be", 1.0),
        (4, "c", "that is", 4.0), (5, "a", "the", -2.0)]


class Scale(ScalarFunction):
    """Multiplies by the job parameter ``factor``, read in open()."""

    def open(self, function_context: FunctionContext) -> None:
        self.factor = int(function_context.get_job_parameter("factor", "1"))

    def eval(self, i: int) -> int:
        return i * self.factor


class WeightedSum(AggregateFunction):
    def create_accumulator(self) -> list[float]:
        return [0.0]

    def accumulate(self, accumulator: list[float], v: float, w: int) -> None:
        accumulator[0] += v * w

    def get_value(self, accumulator: list[float]) -> float:
        return accumulator[0]


@udtf(result_types=[DataTypes.STRING(), DataTypes.INT()])
def split(line: str) -> Iterator[tuple[str, int]]:
    for word in line.split():
        yield word, len(word)


@udf(result_type=DataTypes.DOUBLE(), func_type="pandas")
def pandas_product(a: pd.Series, b: pd.Series) -> pd.Series:
    return a * b


mean = udaf(lambda v: v.mean(), result_type=DataTypes.DOUBLE(), func_type="pandas")
weighted_sum = udaf(WeightedSum(), result_type="DOUBLE", accumulator_type="ARRAY<DOUBLE>")


class TopTwo(TableAggregateFunction):
    """PyFlink's Top 2 example: the two largest values of a group, with their rank."""

    def create_accumulator(self) -> list[Any]:
        return [None, None]

    def accumulate(self, accumulator: list[Any], v: float) -> None:
        if accumulator[0] is None or v > accumulator[0]:
            accumulator[1], accumulator[0] = accumulator[0], v
        elif accumulator[1] is None or v > accumulator[1]:
            accumulator[1] = v

    def emit_value(self, accumulator: list[Any]) -> Iterator[Row]:
        for rank, v in enumerate(accumulator, 1):
            if v is not None:
                yield Row(v, rank)


top_two = udtaf(TopTwo(), result_type=DataTypes.ROW([
    DataTypes.FIELD("v", DataTypes.DOUBLE()), DataTypes.FIELD("rank", DataTypes.INT())]))


@pytest.fixture
def t_env(session) -> Iterator[TableEnvironment]:
    env = TableEnvironment.create(EnvironmentSettings.in_batch_mode(), session=session)
    env.get_config().set("pipeline.global-job-parameters", "factor:3")
    yield env
    for name in env.list_user_defined_functions():  # the shared catalog: leave no `split` behind
        env.drop_temporary_system_function(name)


@pytest.fixture
def table(t_env) -> Any:
    return t_env.from_elements(ROWS, DataTypes.ROW([
        DataTypes.FIELD("id", DataTypes.BIGINT()), DataTypes.FIELD("k", DataTypes.STRING()),
        DataTypes.FIELD("line", DataTypes.STRING()), DataTypes.FIELD("v", DataTypes.DOUBLE())]))


def test_scalar_functions_in_the_table_api(t_env, table) -> None:
    add_one = udf(lambda i: i + 1, result_type=DataTypes.BIGINT())
    scale = udf(Scale(), result_type="BIGINT")
    got = table.select(col("id"), add_one(col("id")), scale(col("id")),
                       pandas_product(col("v"), col("v")).alias("sq")).execute().collect()
    assert sorted(tuple(r) for r in got) == [(i, i + 1, i * 3, v * v) for i, _, _, v in ROWS]


def test_scalar_functions_in_sql(t_env, table) -> None:
    t_env.create_temporary_view("udf_rows", table)
    t_env.create_temporary_system_function("scale", udf(Scale(), result_type="BIGINT"))
    t_env.create_temporary_system_function("product", pandas_product)
    assert {"scale", "product"} <= set(t_env.list_user_defined_functions())
    got = t_env.execute_sql("SELECT id, scale(id), product(v, v) FROM udf_rows").collect()
    assert sorted(tuple(r) for r in got) == [(i, i * 3, v * v) for i, _, _, v in ROWS]
    t_env.execute_sql("DROP TEMPORARY SYSTEM FUNCTION scale")
    assert "scale" not in t_env.list_user_defined_functions()


def test_table_function_with_lateral_table(t_env, table) -> None:
    t_env.create_temporary_view("lines", table)
    t_env.create_temporary_system_function("split", split)
    expected = sorted((i, w, len(w)) for i, _, line, _ in ROWS for w in line.split())
    inner = t_env.execute_sql("SELECT id, word, n FROM lines, LATERAL TABLE(split(line)) "
                              "AS T(word, n)").collect()
    assert sorted(tuple(r) for r in inner) == expected
    outer = t_env.execute_sql("SELECT id, word FROM lines LEFT JOIN LATERAL TABLE(split(line)) "
                              "AS T(word, n) ON TRUE").collect()
    assert sorted(tuple(r) for r in outer if r[1] is None) == [(2, None)]
    flat = table.flat_map(split(col("line")).alias("word", "n")).execute().collect()
    assert sorted(tuple(r) for r in flat) == sorted((w, n) for _, w, n in expected)


def test_aggregate_functions_with_group_by(t_env, table) -> None:
    groups: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for i, k, _, v in ROWS:
        groups[k].append((v, i))
    t_env.create_temporary_view("udaf_rows", table)
    t_env.create_temporary_system_function("weighted_sum", weighted_sum)
    t_env.create_temporary_system_function("mean_of", mean)
    got = t_env.execute_sql("SELECT k, weighted_sum(v, id), mean_of(v) FROM udaf_rows "
                            "GROUP BY k").collect()
    expected = {k: (sum(v * i for v, i in g), sum(v for v, _ in g) / len(g))
                for k, g in groups.items()}
    assert {r[0]: (r[1], r[2]) for r in got} == pytest.approx(expected)
    by_api = table.group_by(col("k")).select(col("k"), mean(col("v")).alias("m")).execute()
    assert {r[0]: r[1] for r in by_api.collect()} == pytest.approx(
        {k: e[1] for k, e in expected.items()})
    aggregated = (table.group_by(col("k")).aggregate(weighted_sum(col("v"), col("id")).alias("s"))
                  .select(col("k"), col("s")))
    assert {r[0]: r[1] for r in aggregated.execute().collect()} == pytest.approx(
        {k: e[0] for k, e in expected.items()})


class CountAndSum(AggregateFunction):
    """PyFlink's basic_operations example: a ROW result, over each whole row (a ROW argument)."""

    def create_accumulator(self) -> list[int]:
        return [0, 0]

    def accumulate(self, accumulator: list[int], row: Row) -> None:
        accumulator[0] += 1
        accumulator[1] += int(row.id)

    def get_value(self, accumulator: list[int]) -> Row:
        return Row(accumulator[0], accumulator[1])


def test_an_aggregate_function_with_a_row_result_over_whole_rows(t_env, table) -> None:
    """``aggregate(count_sum.alias("cnt", "sum"))``: the function applied to each group's
    whole rows, its ROW value as two columns (Spark's grouped pandas functions return no
    struct: it comes in a one-element array)."""
    count_sum = udaf(CountAndSum(), result_type=DataTypes.ROW([
        DataTypes.FIELD("cnt", DataTypes.BIGINT()), DataTypes.FIELD("sum", DataTypes.BIGINT())]),
        accumulator_type=DataTypes.ARRAY(DataTypes.BIGINT()))
    got = (table.group_by(col("k")).aggregate(count_sum.alias("cnt", "sum"))
           .select(col("k"), col("cnt"), col("sum")).execute().collect())
    expected: dict[str, tuple[int, int]] = {}
    for i, k, _, _ in ROWS:
        n, total = expected.get(k, (0, 0))
        expected[k] = (n + 1, total + i)
    assert {r[0]: (r[1], r[2]) for r in got} == expected


def test_flat_aggregate_with_a_table_aggregate_function(t_env, table) -> None:
    """group_by(k).flat_aggregate(top2): each group's two largest values (PyFlink's Top 2),
    and over the whole table; compared with plain Python."""
    groups: dict[str, list[float]] = defaultdict(list)
    for _, k, _, v in ROWS:
        groups[k].append(v)
    expected = sorted((k, v, rank) for k, vs in groups.items()
                      for rank, v in enumerate(sorted(vs, reverse=True)[:2], 1))
    got = (table.group_by(col("k")).flat_aggregate(top_two(col("v")))
           .select(col("k"), col("v"), col("rank")).execute())
    assert got.get_table_schema().get_field_names() == ["k", "v", "rank"]
    assert sorted(tuple(r) for r in got.collect()) == expected
    aliased = table.flat_aggregate(top_two(col("v")).alias("top", "r")).select(col("top"))
    assert sorted(r[0] for r in aliased.execute().collect()) == \
        sorted(v for *_, v in ROWS)[-2:]


def test_map_with_a_row_result(t_env, table) -> None:
    @udf(result_type=DataTypes.ROW([DataTypes.FIELD("id", DataTypes.BIGINT()),
                                    DataTypes.FIELD("label", DataTypes.STRING())]))
    def label(r: Row) -> Row:
        return Row(r.id * 10, f"{r.k}:{r.id}")

    got = table.select(col("id"), col("k")).map(label).execute()
    assert got.get_table_schema().get_field_names() == ["id", "label"]
    assert sorted(tuple(r) for r in got.collect()) == [(i * 10, f"{k}:{i}")
                                                       for i, k, _, _ in ROWS]


def test_a_function_imported_by_create_function(t_env, table) -> None:
    t_env.create_temporary_view("plus_rows", table)
    t_env.execute_sql("CREATE TEMPORARY SYSTEM FUNCTION plus_two AS "
                      "'tests.integration.udf_module.plus_two' LANGUAGE PYTHON")
    got = t_env.execute_sql("SELECT id, plus_two(id) FROM plus_rows").collect()
    assert sorted(tuple(r) for r in got) == [(i, i + 2) for i, _, _, _ in ROWS]
    assert "plus_two" in [r[0] for r in t_env.execute_sql("SHOW FUNCTIONS").collect()]


def test_a_raising_function_fails_the_job_with_its_traceback(t_env, table) -> None:
    def boom(i: int) -> int:
        if i == 3:
            raise ValueError(f"no threes here: {i}")
        return i

    with pytest.raises(Exception) as failure:
        table.select(udf(boom, result_type="BIGINT")(col("id"))).execute().collect()
    text = str(failure.value)
    assert "ValueError: no threes here: 3" in text
    assert "in boom" in text and "test_table_udf.py" in text  # the user's own frame

    wrong = udf(lambda i: f"#{i}", result_type=DataTypes.BIGINT(), name="wrong")
    with pytest.raises(Exception, match="returned '#1' .str., but its result_type is BIGINT"):
        table.where(col("id") == 1).select(wrong(col("id"))).execute().collect()

    assert sorted(r[0] for r in table.select(col("id")).execute().collect()) == [1, 2, 3, 4, 5]


def _wait_until(check: Any, timeout: float = 240.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not reached within {timeout} s"
        time.sleep(0.5)


def test_python_functions_in_streaming_inserts_over_a_monitored_directory(session,
                                                                         tmp_path) -> None:
    """@udf (general, with open() and a job parameter; pandas) and @udtf in a STREAMING
    INSERT INTO from SQL and from the Table API, over CSV files dropped into a monitored
    directory one after the other; the sinks' rows are plain Python's."""
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode(), session=session)
    env.get_config().set("pipeline.global-job-parameters", "factor:3")
    source, words_out, table_out = (tmp_path / d for d in ("lines", "words", "table_api"))
    source.mkdir()
    env.execute_sql(f"""CREATE TABLE s_lines (id BIGINT, line STRING, v DOUBLE) WITH (
        'connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv',
        'source.monitor-interval' = '1s')""")
    env.execute_sql(f"""CREATE TABLE s_words (id BIGINT, word STRING, n INT, scaled BIGINT,
        sq DOUBLE) WITH ('connector' = 'filesystem', 'path' = '{words_out}', 'format' = 'csv')""")
    env.execute_sql(f"""CREATE TABLE s_ids (id BIGINT, plus_one BIGINT) WITH (
        'connector' = 'filesystem', 'path' = '{table_out}', 'format' = 'csv')""")
    env.create_temporary_system_function("scale", udf(Scale(), result_type="BIGINT"))
    env.create_temporary_system_function("product", pandas_product)
    env.create_temporary_system_function("split", split)
    add_one = udf(lambda i: i + 1, result_type=DataTypes.BIGINT())
    jobs = []
    try:
        jobs.append(env.execute_sql(
            "INSERT INTO s_words SELECT id, word, n, scale(id), product(v, v) "
            "FROM s_lines, LATERAL TABLE(split(line)) AS T(word, n)").get_job_client())
        jobs.append(env.from_path("s_lines").select(col("id"), add_one(col("id")))
                    .execute_insert("s_ids").get_job_client())
        batches = [[(1, "to be or", 2.0), (2, "", 3.5)], [(3, "not to be", 1.0), (4, "x", -2.0)]]
        for i, batch in enumerate(batches):
            pd.DataFrame(batch).to_csv(source / f"part-{i}.csv", header=False, index=False)
            seen = batches[: i + 1]
            expected_ids = sorted((str(r[0]), str(r[0] + 1)) for b in seen for r in b)
            _wait_until(lambda ids=expected_ids: sorted(csv_rows(table_out)) == ids)  # type: ignore[misc]
        expected = sorted((str(i), w, str(len(w)), str(i * 3), str(v * v))
                          for b in batches for i, line, v in b for w in line.split())
        _wait_until(lambda: sorted(csv_rows(words_out)) == expected)
        assert all(job.get_job_status().name == "RUNNING" for job in jobs)
    finally:
        for job in jobs:
            job.cancel()
        for name in ("s_lines", "s_words", "s_ids"):
            env.execute_sql(f"DROP TABLE IF EXISTS {name}")
        for name in env.list_user_defined_functions():
            env.drop_temporary_system_function(name)


class AsyncLookup(AsyncScalarFunction):
    """Sleeps 0.2 s per row; returns the key scaled by the job parameter ``factor`` and the
    most calls this worker's function had in flight at once so far (their overlap)."""

    def open(self, function_context: FunctionContext) -> None:
        self.factor = int(function_context.get_job_parameter("factor", "1"))
        self.in_flight = self.most = 0

    async def eval(self, i: int) -> Row:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(0.2)
            return Row(i * self.factor, self.most)
        finally:
            self.in_flight -= 1


@udf(result_type=DataTypes.STRING())
async def async_label(k: str, i: int) -> str:
    await asyncio.sleep(0.01 * (i % 3))  # later rows may finish first
    return f"{k}-{i}"


LOOKUP_TYPE = "ROW<scaled BIGINT, most INT>"


@pytest.mark.parametrize("settings", [EnvironmentSettings.in_batch_mode(),
                                      EnvironmentSettings.in_streaming_mode()],
                         ids=["batch", "streaming"])
def test_async_scalar_functions_from_sql_and_the_table_api(session, settings) -> None:
    """20 rows through an async function sleeping 0.2 s each, at most 4 in flight
    (``table.exec.async-scalar.max-concurrent-operations``): every worker's calls overlapped up
    to the bound and no further; results are plain Python's, from SQL and from the Table API."""
    env = TableEnvironment.create(settings, session=session)
    env.get_config().set("pipeline.global-job-parameters", "factor:3")
    env.get_config().set("table.exec.async-scalar.max-concurrent-operations", "4")
    ids = list(range(1, 21))
    table = env.from_elements([(i, "abc"[i % 3]) for i in ids], DataTypes.ROW([
        DataTypes.FIELD("id", DataTypes.BIGINT()), DataTypes.FIELD("k", DataTypes.STRING())]))
    env.create_temporary_view("async_rows", table)
    env.create_temporary_system_function("lookup", udf(AsyncLookup(), result_type=LOOKUP_TYPE))
    env.create_temporary_function("label", async_label)
    try:
        got = list(env.execute_sql("SELECT id, lookup(id), label(k, id) FROM async_rows")
                   .collect())
        assert sorted((r[0], r[1][0], r[2]) for r in got) == \
            [(i, i * 3, f"{'abc'[i % 3]}-{i}") for i in ids]
        assert max(r[1][1] for r in got) == 4  # overlapped, bounded by the option
        lookup = udf(AsyncLookup(), result_type=LOOKUP_TYPE)
        api = list(table.select(col("id"), lookup(col("id")).alias("r"),
                                async_label(col("k"), col("id"))).execute().collect())
        assert sorted((r[0], r[1][0], r[2]) for r in api) == \
            [(i, i * 3, f"{'abc'[i % 3]}-{i}") for i in ids]
        assert max(r[1][1] for r in api) == 4
    finally:
        env.drop_temporary_view("async_rows")
        for name in env.list_user_defined_functions():
            env.drop_temporary_system_function(name)


def test_a_failing_or_late_async_function_fails_the_job(t_env, table) -> None:
    """A raising eval fails the job with the user's traceback (after Flink's fixed-delay
    retries); a row past ``table.exec.async-scalar.timeout`` with Flink's message."""
    async def no_threes(i: int) -> int:
        await asyncio.sleep(0)
        if i == 3:
            raise ValueError(f"no threes here: {i}")
        return i

    t_env.get_config().set("table.exec.async-scalar.retry-delay", "10 ms")
    with pytest.raises(Exception) as failure:
        table.select(udf(no_threes, result_type="BIGINT")(col("id"))).execute().collect()
    text = str(failure.value)
    assert "ValueError: no threes here: 3" in text
    assert "in no_threes" in text and "test_table_udf.py" in text

    async def stuck(i: int) -> int:
        await asyncio.sleep(60 if i == 2 else 0)
        return i

    t_env.get_config().set("table.exec.async-scalar.timeout", "500 ms")
    with pytest.raises(Exception, match="Async function call has timed out for input"):
        table.select(udf(stuck, result_type="BIGINT")(col("id"))).execute().collect()
    assert sorted(r[0] for r in table.select(col("id")).execute().collect()) == [1, 2, 3, 4, 5]
