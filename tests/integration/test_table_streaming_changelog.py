"""A group aggregation over bounded sources in STREAMING mode on a real session: Flink's
changelog record by record, as PyFlink 2.3 gives it for the same program
(``in_streaming_mode()``, parallelism 1), through every way out: a print sink's lines,
``to_changelog_stream`` of a bounded Table (a Top-N's too), and (its changes applied)
``to_pandas()``; an append-only sink and ``to_data_stream`` refuse it as Flink's planner does.
(``execute().print()`` and ``collect()``: tests/pyflink_programs/table_streaming_changelog.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

import sessioncluster
from sessioncluster.client.table_environment import StreamTableEnvironment
from sessioncluster.common import RuntimeExecutionMode
from sessioncluster.pyflink.table import EnvironmentSettings, TableEnvironment
from sessioncluster.pyflink.table.expressions import col

pytestmark = pytest.mark.integration

NUMS = [("a", 1), ("b", 5), ("a", 3), ("a", 2), ("b", 5), ("a", 3), ("b", 1)]


@pytest.fixture(scope="module")
def t_env(session: sessioncluster.Session) -> TableEnvironment:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode(), session=session)
    env.get_config().set("parallelism.default", "1")
    env.create_temporary_view("cl_nums", env.from_elements(NUMS, ["k", "v"]))
    return env


def test_a_print_sink_gets_flinks_changelog_and_a_filesystem_sink_refuses_it(
        t_env: TableEnvironment, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t_env.execute_sql("CREATE TABLE cl_printed (k STRING, c BIGINT) WITH ('connector' = 'print')")
    t_env.execute_sql("INSERT INTO cl_printed SELECT k, COUNT(*) FROM cl_nums GROUP BY k").wait()
    # PyFlink 2.3's lines for the same INSERT
    assert capsys.readouterr().out.splitlines() == [
        "+I[a, 1]", "+I[b, 1]", "-U[a, 1]", "+U[a, 2]", "-U[a, 2]", "+U[a, 3]", "-U[b, 1]",
        "+U[b, 2]", "-U[a, 3]", "+U[a, 4]", "-U[b, 2]", "+U[b, 3]"]

    t_env.execute_sql(f"CREATE TABLE cl_files (k STRING, c BIGINT) WITH ('connector' = "
                      f"'filesystem', 'path' = '{tmp_path}', 'format' = 'csv')")
    with pytest.raises(Exception, match="Table sink 'default_catalog.default_database.cl_files' "
                                        "doesn't support consuming update changes"):
        t_env.execute_sql("INSERT INTO cl_files SELECT k, COUNT(*) FROM cl_nums GROUP BY k")


def test_to_changelog_stream_of_a_bounded_aggregate(session: sessioncluster.Session) -> None:
    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(1)
    t_env = StreamTableEnvironment.create(env)
    sums = t_env.from_elements(NUMS, ["k", "v"]).group_by(col("k")) \
        .select(col("k"), col("v").sum.alias("s"))
    got = [(r.get_row_kind().short_string(), r["k"], r["s"])
           for r in t_env.to_changelog_stream(sums).execute_and_collect()]
    assert got == [  # PyFlink 2.3's
        ("+I", "a", 1), ("+I", "b", 5), ("-U", "a", 1), ("+U", "a", 4), ("-U", "a", 4),
        ("+U", "a", 6), ("-U", "b", 5), ("+U", "b", 10), ("-U", "a", 6), ("+U", "a", 9),
        ("-U", "b", 10), ("+U", "b", 11)]
    with pytest.raises(ValueError, match="doesn't support consuming update changes"):
        t_env.to_data_stream(sums)
    assert sorted(sums.to_pandas().itertuples(index=False, name=None)) == [("a", 9), ("b", 11)]


def test_to_changelog_stream_and_to_pandas_of_a_bounded_top_n(
        session: sessioncluster.Session) -> None:
    """A Top-N's records as PyFlink 2.3 gives them: a partitioned top 1 updates its row with
    a bare +U (its partition key is the result's key), a top 2 with rn shifts its ranks with
    -U/+U; to_pandas() applies them as PyFlink's does (the bare +U adds a row)."""
    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(1)
    t_env = StreamTableEnvironment.create(env)
    t_env.create_temporary_view("tn_nums", t_env.from_elements(NUMS, ["k", "v"]))
    ranked = "SELECT {} FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY {}) AS rn " \
        "FROM tn_nums) WHERE {}"
    top1 = t_env.sql_query(ranked.format("k, v", "v ASC", "rn = 1"))
    top2 = t_env.sql_query(ranked.format("k, v, rn", "v DESC", "rn <= 2"))
    got = [[(r.get_row_kind().short_string(), *r)
            for r in t_env.to_changelog_stream(t).execute_and_collect()] for t in (top1, top2)]
    assert got == [  # PyFlink 2.3's
        [("+I", "a", 1), ("+I", "b", 5), ("+U", "b", 1)],
        [("+I", "a", 1, 1), ("+I", "b", 5, 1), ("-U", "a", 1, 1), ("+U", "a", 3, 1),
         ("+I", "a", 1, 2), ("-U", "a", 1, 2), ("+U", "a", 2, 2), ("+I", "b", 5, 2),
         ("-U", "a", 2, 2), ("+U", "a", 3, 2)]]
    assert [list(t.to_pandas().itertuples(index=False, name=None)) for t in (top1, top2)] == [
        [("a", 1), ("b", 5), ("b", 1)], [("b", 5, 1), ("a", 3, 1), ("b", 5, 2), ("a", 3, 2)]]


def test_an_aggregation_of_an_aggregation_collects_flinks_changelog(
        t_env: TableEnvironment) -> None:
    """The outer counts retract with the inner ones: -D when a count has no word left."""
    query = "SELECT c, COUNT(*) AS n FROM (SELECT k, COUNT(*) AS c FROM cl_nums GROUP BY k) " \
        "GROUP BY c"
    with t_env.execute_sql(query).collect() as rows:
        got = [(r.get_row_kind().short_string(), *r) for r in rows]
    assert got == [  # PyFlink 2.3's
        ("+I", 1, 1), ("-U", 1, 1), ("+U", 1, 2), ("-U", 1, 2), ("+U", 1, 1), ("+I", 2, 1),
        ("-D", 2, 1), ("+I", 3, 1), ("-D", 1, 1), ("+I", 2, 1), ("-D", 3, 1), ("+I", 4, 1),
        ("-D", 2, 1), ("+I", 3, 1)]
    # to_pandas() applies the changelog: what is left
    final = t_env.sql_query(query).to_pandas()
    assert sorted(final.itertuples(index=False, name=None)) == [(3, 1), (4, 1)]


def test_max_over_an_aggregations_changelog_is_flinks(t_env: TableEnvironment) -> None:
    """A MAX over an aggregation's changelog retracts as Flink's MaxWithRetract: PyFlink 2.3's
    records for the same query, in its order."""
    result = t_env.execute_sql("SELECT c, MAX(k) AS mk FROM (SELECT k, COUNT(*) AS c "
                               "FROM cl_nums GROUP BY k) GROUP BY c")
    with result.collect() as rows:
        got = [(r.get_row_kind().short_string(), *r) for r in rows]
    assert got == [("+I", 1, "a"), ("-U", 1, "a"), ("+U", 1, "b"), ("+I", 2, "a"),
                   ("-D", 2, "a"), ("+I", 3, "a"), ("-D", 1, "b"), ("+I", 2, "b"),
                   ("-D", 3, "a"), ("+I", 4, "a"), ("-D", 2, "b"), ("+I", 3, "b")]
