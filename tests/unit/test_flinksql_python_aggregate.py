"""A group aggregation calling a general Python aggregate function (``udaf``) over an unbounded
table in STREAMING mode, on keyed state (issue 27): the changelog step without Spark, and the
planned streaming query run micro-batch by micro-batch (``availableNow``) over files in a tmp
directory. Flink's rows: /work/briefs/data/udafstream/probe1.py and probe1.out (PyFlink 2.3)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from pyspark import cloudpickle

from sessioncluster.api.table.udf import AggregateFunction, udaf
from sessioncluster.client.shipping import dumps_user_code
from sessioncluster.spark.flinksql.builtinaggregates import BuiltinAggregate
from sessioncluster.spark.flinksql.executor import FlinkSqlPlanner
from sessioncluster.spark.flinksql.model import FlinkSqlError
from sessioncluster.spark.flinksql.statements import CreateFunction
from sessioncluster.spark.flinksql.tableaggregate import PANDAS_UDAF_STREAMING, ROW_KIND
from sessioncluster.spark.flinksql.udf_runners import aggregate_changes


class WeightedAvg(AggregateFunction):
    """The probe's ``wavg``: sum(v * w) / sum(w)."""

    def create_accumulator(self) -> list[int]:
        return [0, 0]

    def accumulate(self, acc: list[int], v: int, w: int) -> None:
        acc[0] += v * w
        acc[1] += w

    def retract(self, acc: list[int], v: int, w: int) -> None:
        acc[0] -= v * w
        acc[1] -= w

    def get_value(self, acc: list[int]) -> float | None:
        return None if acc[1] == 0 else acc[0] / acc[1]


FILES = [["x,2,1", "x,4,1", "y,5,2"], ["x,3,5", "y,1,2", "z,7,1"], ["y,3,4", "x,9,2"]]


def bundles(function: AggregateFunction, batches: list[list[tuple[Any, ...]]],
            kinds: list[list[str]] | None = None) -> list[list[tuple[str, list[Any]]]]:
    state, out = None, []
    for i, rows in enumerate(batches):
        state, changes = aggregate_changes([function], [2], state, rows,
                                           kinds[i] if kinds else None)
        out.append(changes)
    return out


def test_one_change_per_key_and_bundle_nothing_for_an_unchanged_value() -> None:
    # probe1.out [a], key x: +I 3.0 | (3.0 again: nothing) | -U 3.0, +U 4.33..
    x = [[(2, 1), (4, 1)], [(3, 5)], [(9, 2)]]
    assert bundles(WeightedAvg(), x) == [
        [("+I", [3.0])], [], [("-U", [3.0]), ("+U", [4.333333333333333])]]


def test_retractions_call_retract_and_the_last_one_deletes_the_key() -> None:
    out = bundles(WeightedAvg(), [[(2, 1), (4, 1)], [(2, 1)], [(4, 1)]],
                  [["+I", "+I"], ["-U"], ["-D"]])
    assert out == [[("+I", [3.0])], [("-U", [3.0]), ("+U", [4.0])], [("-D", [4.0])]]


def test_several_functions_share_the_key_state() -> None:
    state, changes = aggregate_changes([WeightedAvg(), WeightedAvg()], [2, 2], None,
                                       [(2, 1, 1, 1), (4, 1, 9, 1)])
    assert changes == [("+I", [3.0, 5.0])] and state[1] == 2


@pytest.fixture
def by_value() -> Iterator[None]:
    """This module's functions pickled by value: Spark's Python workers cannot import it."""
    module = sys.modules[WeightedAvg.__module__]
    cloudpickle.register_pickle_by_value(module)
    yield
    cloudpickle.unregister_pickle_by_value(module)


def with_functions(planner: FlinkSqlPlanner) -> FlinkSqlPlanner:
    """``planner`` with the probe's ``wavg`` (general) and ``pmean`` (pandas) registered."""
    payload = dumps_user_code(udaf(WeightedAvg(), result_type="DOUBLE",
                                   accumulator_type="ARRAY<BIGINT>"))
    planner.functions.create(CreateFunction("wavg", "x.WeightedAvg", "PYTHON", True, True),
                             payload, {})
    pandas = dumps_user_code(udaf(lambda v: float(v.mean()), result_type="DOUBLE",
                                  func_type="pandas"))
    planner.functions.create(CreateFunction("pmean", "x.pmean", "PYTHON", True, True),
                             pandas, {})
    return planner


@pytest.fixture
def planner(local_spark: Any, tmp_path: Path, by_value: None) -> FlinkSqlPlanner:
    planner = with_functions(FlinkSqlPlanner(local_spark))
    (tmp_path / "t").mkdir()
    planner.plan(f"""CREATE TABLE t (k STRING, v BIGINT, w BIGINT) WITH ('connector' =
        'filesystem', 'path' = '{tmp_path / "t"}', 'format' = 'csv',
        'source.monitor-interval' = '1s')""")
    return planner


def run_files(planner: FlinkSqlPlanner, query: str, tmp_path: Path) -> list[list[str]]:
    """The query's changes after each file, the query planned and started anew per file over
    one checkpoint (its keyed state continues from it)."""
    out = []
    for i, lines in enumerate(FILES):
        (tmp_path / "t" / f"f{i}.csv").write_text("\n".join(lines) + "\n")
        frame = planner.plan(query, "STREAMING").job.inserts[0].frame
        got: list[str] = []
        frame.writeStream.foreachBatch(
            lambda batch, _, got=got: got.extend(
                f"{r[ROW_KIND]}{[r[c] for c in batch.columns if c != ROW_KIND]}"
                for r in batch.collect())
        ).option("checkpointLocation", str(tmp_path / "checkpoint")) \
            .trigger(availableNow=True).start().awaitTermination()
        out.append(sorted(got))
    return out


def test_a_group_aggregation_runs_on_keyed_state_with_flinks_changelog(
        planner: FlinkSqlPlanner, tmp_path: Path) -> None:
    """probe1.out [a], each file's changes (Flink's order within a file is by key arrival)."""
    job = planner.plan("SELECT k, wavg(v, w) AS a FROM t GROUP BY k", "STREAMING").job
    assert job.inserts[0].row_kinds and job.inserts[0].operator == "PythonGroupAggregate"
    assert run_files(planner, "SELECT k, wavg(v, w) AS a FROM t GROUP BY k", tmp_path) == [
        ["+I['x', 3.0]", "+I['y', 5.0]"],
        ["+I['z', 7.0]", "+U['y', 3.0]", "-U['y', 5.0]"],
        ["+U['x', 4.333333333333333]", "-U['x', 3.0]"]]


def test_a_global_python_aggregation(planner: FlinkSqlPlanner, tmp_path: Path) -> None:
    """probe1.out [e1]: +I 4.0 | -U 4.0, +U 3.33.. | -U 3.33.., +U 3.88.."""
    assert run_files(planner, "SELECT wavg(v, w) * 1 AS a FROM t", tmp_path) == [
        ["+I[4.0]"], ["+U[3.3333333333333335]", "-U[4.0]"],
        ["+U[3.888888888888889]", "-U[3.3333333333333335]"]]


def test_refusals_and_a_python_aggregation_over_an_updating_query(
        planner: FlinkSqlPlanner) -> None:
    """probe1.out: [d1] (Flink's message), [sink]; [c] (Flink calls
    retract) runs over the updating query's result after each micro-batch (:mod:`.updating`)."""
    over = planner.plan("SELECT k, wavg(m, w) AS a FROM (SELECT k, w, MAX(v) AS m FROM t "
                        "GROUP BY k, w) GROUP BY k", "STREAMING").job.inserts[0]
    assert over.outer is not None and not over.row_kinds
    with pytest.raises(FlinkSqlError, match=r"^The built-in aggregate function "
                                            r"COUNT\(DISTINCT v\) in the same group aggregation"):
        planner.plan("SELECT k, wavg(v, w), COUNT(DISTINCT v) FROM t GROUP BY k", "STREAMING")
    with pytest.raises(FlinkSqlError, match=r"^HAVING over a group aggregation calling a "
                                            r"Python aggregate function \(PythonGroupAggregate"):
        planner.plan("SELECT k, wavg(v, w) AS a FROM t GROUP BY k HAVING wavg(v, w) > 1",
                     "STREAMING")
    with pytest.raises(FlinkSqlError) as refused:
        planner.plan("SELECT k, pmean(v) FROM t GROUP BY k", "STREAMING")
    assert str(refused.value) == PANDAS_UDAF_STREAMING
    planner.plan("CREATE TABLE sink (k STRING, a DOUBLE) WITH ('connector' = 'filesystem', "
                 "'path' = '/tmp/never-written', 'format' = 'csv')")
    with pytest.raises(FlinkSqlError, match=r"doesn't support consuming update changes which "
                                            r"is produced by node PythonGroupAggregate\("
                                            r"groupBy=\[k\], select=\[k, wavg\(v, w\) AS a\]\)"):
        planner.plan("INSERT INTO sink SELECT k, wavg(v, w) AS a FROM t GROUP BY k",
                     "STREAMING")


def test_built_in_aggregates_beside_a_python_aggregate_function(
        planner: FlinkSqlPlanner, tmp_path: Path) -> None:
    """probe1.out [b1]: COUNT(*) and SUM(v) in the same PythonGroupAggregate, one change per
    key and bundle (x's COUNT changes while its wavg does not)."""
    query = "SELECT k, wavg(v, w) AS a, COUNT(*) AS c, SUM(v) AS s FROM t GROUP BY k"
    assert run_files(planner, query, tmp_path) == [
        ["+I['x', 3.0, 2, 6]", "+I['y', 5.0, 1, 5]"],
        ["+I['z', 7.0, 1, 7]", "+U['x', 3.0, 3, 9]", "+U['y', 3.0, 2, 6]",
         "-U['x', 3.0, 2, 6]", "-U['y', 5.0, 1, 5]"],
        ["+U['x', 4.333333333333333, 4, 18]", "+U['y', 3.0, 3, 9]", "-U['x', 3.0, 3, 9]",
         "-U['y', 3.0, 2, 6]"]]


def test_built_in_accumulators_retract() -> None:
    """MIN/MAX give the next value when theirs is retracted; AVG of integers truncates toward
    zero (Flink's AVG(BIGINT) is a BIGINT); NULLs are skipped."""
    functions = [BuiltinAggregate(n, n == "AVG") for n in ("COUNT", "SUM", "MIN", "MAX", "AVG")]
    state, changes = aggregate_changes(functions, [1] * 5, None, [(v,) * 5 for v in (-7, 2, None)])
    assert changes == [("+I", [2, -5, -7, 2, -2])]
    state, changes = aggregate_changes(functions, [1] * 5, state, [(-7,) * 5], ["-D"])
    assert changes == [("-U", [2, -5, -7, 2, -2]), ("+U", [1, 2, 2, 2, 2])]


MIXED = "SELECT k, wavg(v, w) AS a, COUNT(*) AS c, SUM(v) AS s FROM t GROUP BY k"


def test_explain_of_python_and_built_in_aggregates_is_flinks(planner: FlinkSqlPlanner) -> None:
    """probe1.out [a] and [b1]'s EXPLAIN (the table here has no watermark): one
    LogicalAggregate calling ``wavg``, one PythonGroupAggregate over the exchange by its key.
    Spark cannot plan a grouped-aggregate pandas UDF beside other aggregates: the EXPLAIN
    failed with Spark's INVALID_PANDAS_UDF_PLACEMENT before."""
    for query, ast, node in [
            ("SELECT k, wavg(v, w) AS a FROM t GROUP BY k", "a=[wavg($1, $2)]",
             "select=[k, wavg(v, w) AS a]"),
            (MIXED, "a=[wavg($1, $2)], c=[COUNT()], s=[SUM($1)]",
             "select=[k, wavg(v, w) AS a, COUNT(*) AS c, SUM(v) AS s]")]:
        text = planner.plan(f"EXPLAIN {query}", "STREAMING").rows[0][0]
        assert text.splitlines()[1:3] == [f"LogicalAggregate(group=[{{0}}], {ast})",
                                          "+- LogicalProject(k=[$0], v=[$1], w=[$2])"]
        physical = text.split("== Optimized Physical Plan ==\n")[1].splitlines()
        assert physical[:2] == [f"PythonGroupAggregate(groupBy=[k], {node})",
                                "+- Exchange(distribution=[hash[k]])"]


def test_python_and_built_in_aggregates_over_a_bounded_table(
        planner: FlinkSqlPlanner, tmp_path: Path) -> None:
    """BATCH, and STREAMING over a bounded table: a Python aggregate function beside built-in
    ones (Spark runs the Python one over each group's collected rows), as plain Python
    computes them. Flink 2.3 refuses both kinds of Python aggregate function beside built-ins
    in BATCH (/work/briefs/data/lead29/batch_pandas.out): this runs more than Flink."""
    rows = [line.split(",") for lines in FILES for line in lines]
    expected = []
    for k in sorted({r[0] for r in rows}):
        vs = [(int(r[1]), int(r[2])) for r in rows if r[0] == k]
        expected.append((k, sum(v * w for v, w in vs) / sum(w for _, w in vs), len(vs),
                         sum(v for v, _ in vs), sum(v for v, _ in vs) / len(vs)))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "f.csv").write_text("\n".join(",".join(r) for r in rows) + "\n")
    planner.plan(f"""CREATE TABLE b (k STRING, v BIGINT, w BIGINT) WITH ('connector' =
        'filesystem', 'path' = '{tmp_path / "b"}', 'format' = 'csv')""")
    query = ("SELECT k, wavg(v, w) AS a, COUNT(*) AS c, SUM(v) AS s, pmean(v) AS p FROM b "
             "GROUP BY k")
    got = planner.plan(query, "BATCH").job.run().collect()
    assert sorted(tuple(r) for r in got) == expected
    got = planner.plan(query, "STREAMING").job.inserts[0].frame.collect()  # the final rows
    assert sorted(tuple(r) for r in got) == expected


def test_decimal_sum_and_avg_beside_a_python_aggregate_are_typed_as_flinks(
        planner: FlinkSqlPlanner, tmp_path: Path) -> None:
    """batch_udaf.out: Flink types SUM(DECIMAL(5, 2)) as DECIMAL(38, 2) and AVG of it as
    DECIMAL(38, 6) (1.50 and 2.25: 1.875000); so does the keyed PythonGroupAggregate."""
    from decimal import Decimal

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f.csv").write_text("x,2,1,1.50\nx,4,1,2.25\ny,5,2,3.10\n")
    planner.plan(f"""CREATE TABLE d (k STRING, v BIGINT, w BIGINT, m DECIMAL(5, 2)) WITH (
        'connector' = 'filesystem', 'path' = '{tmp_path / "d"}', 'format' = 'csv',
        'source.monitor-interval' = '1s')""")
    insert = planner.plan("SELECT k, wavg(v, w) AS a, SUM(m) AS s, AVG(m) AS g FROM d "
                          "GROUP BY k", "STREAMING").job.inserts[0]
    assert [f.dataType.simpleString() for f in insert.result_fields][2:4] == [
        "decimal(38,2)", "decimal(38,6)"]
    got: list[tuple[Any, ...]] = []
    insert.frame.writeStream.foreachBatch(lambda b, _: got.extend(tuple(r) for r in b.collect())) \
        .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True) \
        .start().awaitTermination()
    assert sorted(got) == [("x", 3.0, Decimal("3.75"), Decimal("1.875000"), "+I"),
                           ("y", 5.0, Decimal("3.10"), Decimal("3.100000"), "+I")]
