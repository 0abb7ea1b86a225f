"""Python aggregate functions (``udaf``) in window aggregations over an unbounded table in
STREAMING mode (issue 27): a window TVF's (Flink 2.3: a ``PythonGroupAggregate`` grouped by
``window_start``, ``window_end`` and the keys, an updating query) on keyed state, and a group
window's (``GROUP BY TUMBLE(...)``, the Table API's ``window(Tumble...)``: Flink's
``PythonGroupWindowAggregate``, each window once when the watermark passes its end). Each file
fed as one micro-batch (``availableNow``). Flink's rows: /work/briefs/data/udafstream/probe1.out
and /work/briefs/data/udafwin/probe2.py, probe2.out (PyFlink 2.3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_flinksql_python_aggregate import by_value, with_functions  # noqa: F401 (the fixture)
from test_table_api import RecordingGateway

from sessioncluster.api.table.environment import EnvironmentSettings, TableEnvironment
from sessioncluster.api.table.expressions import call, col, lit
from sessioncluster.api.table.window import Tumble
from sessioncluster.spark.flinksql.executor import FlinkSqlPlanner
from sessioncluster.spark.flinksql.model import FlinkSqlError
from sessioncluster.spark.flinksql.tableaggregate import PANDAS_UDAF_STREAMING, ROW_KIND

#: probe1.py's files
PROBE1 = [["x,2,1,2026-01-01 00:00:01", "x,4,1,2026-01-01 00:00:02", "y,5,2,2026-01-01 00:00:03"],
          ["x,3,5,2026-01-01 00:00:12", "y,1,2,2026-01-01 00:00:13", "z,7,1,2026-01-01 00:00:14"],
          ["y,3,4,2026-01-01 00:00:25", "x,9,2,2026-01-01 00:00:26"]]
#: probe2.py's: x's row of 00:05 in the second file
PROBE2 = [PROBE1[0], ["x,3,5,2026-01-01 00:00:05", *PROBE1[1][1:]], PROBE1[2]]


@pytest.fixture
def planner(local_spark: Any, tmp_path: Path, by_value: None) -> FlinkSqlPlanner:  # noqa: F811
    planner = with_functions(FlinkSqlPlanner(local_spark))
    (tmp_path / "t").mkdir()
    planner.plan(f"""CREATE TABLE t (k STRING, v BIGINT, w BIGINT, ts TIMESTAMP(3),
        WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem',
        'path' = '{tmp_path / "t"}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    return planner


def run_files(planner: FlinkSqlPlanner, query: str, tmp_path: Path,
              files: list[list[str]]) -> list[list[str]]:
    """The query's rows after each file (with their RowKind when it has them; times as
    ``HH:MM:SS``), the query planned and started anew per file over one checkpoint."""
    out = []
    for i, lines in enumerate(files):
        (tmp_path / "t" / f"f{i}.csv").write_text("\n".join(lines) + "\n")
        frame = planner.plan(query, "STREAMING").job.inserts[0].frame
        got: list[str] = []

        def collect(batch: Any, _: int, got: list[str] = got) -> None:
            for r in batch.collect():
                values = [v.strftime("%H:%M:%S") if hasattr(v, "strftime") else v
                          for c, v in zip(batch.columns, r) if c != ROW_KIND]
                got.append(f"{r[ROW_KIND] if ROW_KIND in batch.columns else '+I'}{values}")

        frame.writeStream.foreachBatch(collect) \
            .option("checkpointLocation", str(tmp_path / "checkpoint")) \
            .trigger(availableNow=True).start().awaitTermination()
        out.append(sorted(got))
    return out


TVF = """SELECT window_start, window_end, k, wavg(v, w) AS a FROM TABLE({}(TABLE t,
         DESCRIPTOR(ts), {})) GROUP BY window_start, window_end, k"""


def test_a_window_tvf_aggregation_is_a_python_group_aggregation(
        planner: FlinkSqlPlanner, tmp_path: Path) -> None:
    """probe1.out [f1]: a TUMBLE TVF's windows as the group aggregation's keys; each window
    inserted with the file of its first row (not when the watermark passes its end)."""
    query = TVF.format("TUMBLE", "INTERVAL '10' SECOND")
    insert = planner.plan(query, "STREAMING").job.inserts[0]
    assert insert.row_kinds and insert.operator == "PythonGroupAggregate"
    assert run_files(planner, query, tmp_path, PROBE1) == [
        ["+I['00:00:00', '00:00:10', 'x', 3.0]", "+I['00:00:00', '00:00:10', 'y', 5.0]"],
        ["+I['00:00:10', '00:00:20', 'x', 3.0]", "+I['00:00:10', '00:00:20', 'y', 1.0]",
         "+I['00:00:10', '00:00:20', 'z', 7.0]"],
        ["+I['00:00:20', '00:00:30', 'x', 9.0]", "+I['00:00:20', '00:00:30', 'y', 3.0]"]]


def test_hop_windows_of_a_window_tvf_aggregation(planner: FlinkSqlPlanner,
                                                 tmp_path: Path) -> None:
    """probe2.out [f2]: x's row of 00:05 leaves its window [0, 10) at 3.0 (nothing emitted)."""
    query = TVF.format("HOP", "INTERVAL '5' SECOND, INTERVAL '10' SECOND")
    assert run_files(planner, query, tmp_path, PROBE2) == [
        ["+I['00:00:00', '00:00:10', 'x', 3.0]", "+I['00:00:00', '00:00:10', 'y', 5.0]",
         "+I['23:59:55', '00:00:05', 'x', 3.0]", "+I['23:59:55', '00:00:05', 'y', 5.0]"],
        ["+I['00:00:05', '00:00:15', 'x', 3.0]", "+I['00:00:05', '00:00:15', 'y', 1.0]",
         "+I['00:00:05', '00:00:15', 'z', 7.0]", "+I['00:00:10', '00:00:20', 'y', 1.0]",
         "+I['00:00:10', '00:00:20', 'z', 7.0]"],
        ["+I['00:00:20', '00:00:30', 'x', 9.0]", "+I['00:00:20', '00:00:30', 'y', 3.0]",
         "+I['00:00:25', '00:00:35', 'x', 9.0]", "+I['00:00:25', '00:00:35', 'y', 3.0]"]]


def test_cumulate_windows_of_a_window_tvf_aggregation(planner: FlinkSqlPlanner,
                                                      tmp_path: Path) -> None:
    """probe2.out [f3]. Flink's first file came in two bundles there (``+I`` of [0, 5) x 2.0,
    then ``-U``/``+U`` to 3.0); here a file is one micro-batch, one bundle: its net change."""
    query = TVF.format("CUMULATE", "INTERVAL '5' SECOND, INTERVAL '10' SECOND")
    assert run_files(planner, query, tmp_path, PROBE2) == [
        ["+I['00:00:00', '00:00:05', 'x', 3.0]", "+I['00:00:00', '00:00:05', 'y', 5.0]",
         "+I['00:00:00', '00:00:10', 'x', 3.0]", "+I['00:00:00', '00:00:10', 'y', 5.0]"],
        ["+I['00:00:10', '00:00:15', 'y', 1.0]", "+I['00:00:10', '00:00:15', 'z', 7.0]",
         "+I['00:00:10', '00:00:20', 'y', 1.0]", "+I['00:00:10', '00:00:20', 'z', 7.0]"],
        ["+I['00:00:20', '00:00:30', 'x', 9.0]", "+I['00:00:20', '00:00:30', 'y', 3.0]"]]


#: probe2.out [g1] and [g2] (a general and a pandas function), [d3] and [d4] (the Table API's
#: window): the window [0, 10) once the second file moves the watermark past its end, the
#: window [10, 20) once the third does
GROUP_WINDOWS = [[], ["+I['x', '00:00:00', 3.0]", "+I['y', '00:00:00', 5.0]"],
                 ["+I['y', '00:00:10', 1.0]", "+I['z', '00:00:10', 7.0]"]]


def test_a_group_window_emits_each_window_once(planner: FlinkSqlPlanner,
                                               tmp_path: Path) -> None:
    """[g1]; a pandas function ([g2]) runs the same way, as the Table API's test shows."""
    query = ("SELECT k, TUMBLE_START(ts, INTERVAL '10' SECOND) AS s, wavg(v, w) AS a FROM t "
             "GROUP BY k, TUMBLE(ts, INTERVAL '10' SECOND)")
    insert = planner.plan(query, "STREAMING").job.inserts[0]
    assert not insert.row_kinds and insert.operator == "PythonGroupWindowAggregate"
    assert run_files(planner, query, tmp_path, PROBE2) == GROUP_WINDOWS


def test_a_pandas_function_in_a_window_tvf_is_refused_with_flinks_message(
        planner: FlinkSqlPlanner) -> None:
    """probe1.out [d2]."""
    with pytest.raises(FlinkSqlError) as refused:
        planner.plan("SELECT window_start, window_end, k, pmean(v) AS p FROM TABLE(TUMBLE("
                     "TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, "
                     "window_end, k", "STREAMING")
    assert str(refused.value) == PANDAS_UDAF_STREAMING


def test_the_table_apis_group_window_emits_each_window_once(
        planner: FlinkSqlPlanner, tmp_path: Path) -> None:
    """probe2.out [d3] (a pandas function, as probe1.out's); a general one ([d4]) runs the
    same way, as the SQL group window's test shows."""
    t_env = TableEnvironment(RecordingGateway(), EnvironmentSettings.in_streaming_mode())
    table = t_env.from_path("t").window(Tumble.over(lit(10).seconds).on(col("ts")).alias("w")) \
        .group_by(col("w"), col("k")) \
        .select(col("k"), col("w").start, col("w").end,
                call("pmean", col("v")).alias("p"))
    assert planner.plan(table.query_sql, "STREAMING").job.inserts[0].operator \
        == "PythonGroupWindowAggregate"
    assert run_files(planner, table.query_sql, tmp_path, PROBE2) == [
        [], ["+I['x', '00:00:00', '00:00:10', 3.0]", "+I['y', '00:00:00', '00:00:10', 5.0]"],
        ["+I['y', '00:00:10', '00:00:20', 1.0]", "+I['z', '00:00:10', '00:00:20', 7.0]"]]


def test_explain_names_flinks_python_aggregation_nodes(planner: FlinkSqlPlanner) -> None:
    """probe2.out's EXPLAIN: [f1] PythonGroupAggregate, [g2] PythonGroupWindowAggregate."""
    for query, node in [(TVF.format("TUMBLE", "INTERVAL '10' SECOND"), "PythonGroupAggregate"),
                        ("SELECT k, pmean(v) AS p FROM t GROUP BY k, TUMBLE(ts, INTERVAL "
                         "'10' SECOND)", "PythonGroupWindowAggregate")]:
        text = planner.plan(f"EXPLAIN {query}", "STREAMING").rows[0][0]
        physical = text.split("== Optimized Physical Plan ==\n")[1].splitlines()
        assert physical[0].startswith(f"{node}(") and "Sort(" not in physical[1]



SESSION = """SELECT window_start, window_end, {} FROM TABLE(SESSION(TABLE t {}
             DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY window_start, window_end{}"""


def test_session_window_tvf_aggregation_emits_each_session_once(
        planner: FlinkSqlPlanner, tmp_path: Path) -> None:
    """/work/briefs/data/lead29/session_udaf.out [h1]: Flink's SESSION TVF emits a session's
    rows once the watermark passes its end, and its PythonGroupAggregate inserts each window
    once (Spark's error about an unresolved ``window_start`` before); a pandas function is
    refused with Flink's message ([h2])."""
    query = SESSION.format("k, wavg(v, w) AS a", "PARTITION BY k,", ", k")
    assert run_files(planner, query, tmp_path, PROBE2) == [
        [], ["+I['00:00:01', '00:00:10', 'x', 3.0]", "+I['00:00:03', '00:00:08', 'y', 5.0]"],
        ["+I['00:00:13', '00:00:18', 'y', 1.0]", "+I['00:00:14', '00:00:19', 'z', 7.0]"]]
    with pytest.raises(FlinkSqlError) as refused:
        planner.plan(SESSION.format("k, pmean(v) AS p", "PARTITION BY k,", ", k"), "STREAMING")
    assert str(refused.value) == PANDAS_UDAF_STREAMING


def test_a_global_session_window_tvf_aggregation(planner: FlinkSqlPlanner,
                                                 tmp_path: Path) -> None:
    """session_udaf.out [h3]: no PARTITION BY, a Python aggregate function beside COUNT(*)
    (Spark refused a "global aggregation with session window" before, with or without it)."""
    query = SESSION.format("wavg(v, w) AS a, COUNT(*) AS c", ",", "")
    assert run_files(planner, query, tmp_path, PROBE2) == [
        [], ["+I['00:00:01', '00:00:10', 3.4444444444444446, 4]"],
        ["+I['00:00:13', '00:00:19', 3.0, 2]"]]
