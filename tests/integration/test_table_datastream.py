"""DataStream <-> Table on a real session (PyFlink's StreamTableEnvironment conversions), in
BATCH and STREAMING: from_data_stream (columns as Flink derives them, renamed by expressions,
typed by a Schema), SQL over it through a temporary view, to_data_stream back into a DataStream
program, to_changelog_stream of an updating query, from_changelog_stream and an upsert
changelog (compared with PyFlink 2.3's rows); an unbounded DataStream fails in BATCH
naming what is not supported. Results compared with plain Python."""

from __future__ import annotations

import time
from collections import defaultdict

import pytest

import sessioncluster
from sessioncluster.client.table_environment import StreamTableEnvironment
from sessioncluster.common import RuntimeExecutionMode
from sessioncluster.common.types import Row, RowKind
from sessioncluster.graph.lifecycle import JobStatus
from sessioncluster.pyflink.common import Types
from sessioncluster.pyflink.table import ChangelogMode, Schema
from sessioncluster.pyflink.table.expressions import col

pytestmark = pytest.mark.integration

SCORES = [("alice", 12), ("bob", 10), ("alice", 100), ("john", 3), ("bob", 7)]
MODES = [RuntimeExecutionMode.BATCH, RuntimeExecutionMode.STREAMING]


def environments(session: sessioncluster.Session, mode: RuntimeExecutionMode
                 ) -> tuple[sessioncluster.StreamExecutionEnvironment, StreamTableEnvironment]:
    env = session.get_execution_environment()
    env.set_runtime_mode(mode)
    env.set_parallelism(1)
    return env, StreamTableEnvironment.create(env)


def scores(env: sessioncluster.StreamExecutionEnvironment):
    return env.from_collection(SCORES, type_info=Types.ROW_NAMED(
        ["name", "score"], [Types.STRING(), Types.INT()]))


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_from_data_stream_sql_then_to_data_stream(session, mode) -> None:
    env, t_env = environments(session, mode)
    table = t_env.from_data_stream(scores(env))
    assert table.get_schema().get_field_names() == ["name", "score"]
    view = f"scores_{mode.name.lower()}"  # the session's shared catalog: one per test
    t_env.create_temporary_view(view, table)
    upper = t_env.sql_query(f"SELECT UPPER(name) AS name, score * 10 AS points "
                            f"FROM {view} WHERE score > 5")
    records = t_env.to_data_stream(upper).map(lambda r: (r["name"], r[1] + 1)) \
        .execute_and_collect()
    assert sorted(records) == sorted((n.upper(), s * 10 + 1) for n, s in SCORES if s > 5)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_to_changelog_stream_of_a_group_aggregate(session, mode) -> None:
    env, t_env = environments(session, mode)
    view = f"scores_by_name_{mode.name.lower()}"
    t_env.create_temporary_view(view, scores(env))
    totals = t_env.sql_query(f"SELECT name, SUM(score) AS total FROM {view} GROUP BY name")
    changes = list(t_env.to_changelog_stream(totals).execute_and_collect())
    assert all(isinstance(r, Row) for r in changes)
    state: dict[str, int] = {}
    for r in changes:  # the changelog applied gives the totals
        if r.get_row_kind() in (RowKind.INSERT, RowKind.UPDATE_AFTER):
            state[r["name"]] = r["total"]
        else:
            state.pop(r["name"], None)
    expected: dict[str, int] = defaultdict(int)
    for n, s in SCORES:
        expected[n] += s
    assert state == expected


def test_from_changelog_stream_and_an_upsert_changelog_stream(session) -> None:
    # the rows PyFlink 2.3 printed (/work/briefs/data/changelog/probe.out, STREAMING)
    env, t_env = environments(session, RuntimeExecutionMode.STREAMING)
    kinds = [(RowKind.INSERT, "Alice", 12), (RowKind.INSERT, "Bob", 5),
             (RowKind.UPDATE_BEFORE, "Alice", 12), (RowKind.UPDATE_AFTER, "Alice", 100),
             (RowKind.DELETE, "Bob", 5), (RowKind.INSERT, "Carol", 7)]
    stream = env.from_collection([Row.of_kind(*k) for k in kinds], type_info=Types.ROW_NAMED(
        ["name", "score"], [Types.STRING(), Types.INT()]))
    table = t_env.from_changelog_stream(stream)

    def changes(result) -> list:
        return [(str(r.get_row_kind()), *r) for r in result.collect()]

    assert changes(table.execute()) == [(str(k), n, s) for k, n, s in kinds]
    t_env.create_temporary_view("changelog_scores", table)
    totals = t_env.sql_query("SELECT name, SUM(score) AS total FROM changelog_scores "
                             "GROUP BY name")
    assert changes(totals.execute()) == [
        ("+I", "Alice", 12), ("+I", "Bob", 5), ("-D", "Alice", 12), ("+I", "Alice", 100),
        ("-D", "Bob", 5), ("+I", "Carol", 7)]
    source = t_env.from_elements([("a", 1), ("b", 2), ("a", 3)], ["k", "v"])
    summed = source.group_by(col("k")).select(col("k"), col("v").sum.alias("total"))
    upsert = t_env.to_changelog_stream(summed, Schema.new_builder().column(
        "k", "STRING NOT NULL").column("total", "BIGINT").primary_key("k").build(),
        ChangelogMode.upsert())
    assert [(str(r.get_row_kind()), *r) for r in upsert.execute_and_collect()] == [
        ("+I", "a", 1), ("+I", "b", 2), ("+U", "a", 4)]


def test_from_changelog_stream_of_an_unbounded_stream(session, tmp_path) -> None:
    """Files dropped into monitored directories, each line a record with its RowKind, read as
    a changelog of all kinds and as an upsert one (primary key name) under a global SUM and
    COUNT: after each file, the rows PyFlink 2.3 printed (/work/briefs/data/cstream/probe.out,
    b2 and c2): each record's change emitted record by record, a retraction applied, the
    upsert records in the order they came."""
    from sessioncluster.pyflink.common import Duration, WatermarkStrategy
    from sessioncluster.pyflink.datastream.connectors.file_system import FileSource, StreamFormat
    from sessioncluster.pyflink.table import DataTypes

    from .test_streaming import drop

    env, t_env = environments(session, RuntimeExecutionMode.STREAMING)
    kinds = {k.short_string(): k for k in RowKind}

    def changelog(name: str) -> object:
        (tmp_path / name).mkdir()
        source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(),
                                                      str(tmp_path / name))
                  .monitor_continuously(Duration.of_millis(200)).build())
        return env.from_source(source, WatermarkStrategy.no_watermarks(), name).map(
            lambda line: Row.of_kind(kinds[line.split(",")[0]], line.split(",")[1],
                                     int(line.split(",")[2])),
            output_type=Types.ROW_NAMED(["name", "score"], [Types.STRING(), Types.INT()]))

    files = {"all": [["+I,Alice,12", "+I,Bob,5"], ["-U,Alice,12", "+U,Alice,100", "-D,Bob,5"],
                     ["+I,Carol,7"]],
             "upsert": [["+I,Alice,12", "+I,Bob,5"], ["+U,Alice,100", "-D,Bob,5"],
                        ["+I,Carol,7", "+U,Carol,8", "+U,Carol,8"]]}
    t_env.create_temporary_view("stream_scores", t_env.from_changelog_stream(changelog("all")))
    keyed = Schema.new_builder().column("name", DataTypes.STRING().not_null()) \
        .column("score", DataTypes.INT()).primary_key("name").build()
    t_env.create_temporary_view("upsert_scores", t_env.from_changelog_stream(
        changelog("upsert"), keyed, ChangelogMode.upsert()))
    results = {name: t_env.sql_query(f"SELECT SUM(score) AS total, COUNT(*) AS n FROM {view}")
               .execute() for name, view in (("all", "stream_scores"),
                                             ("upsert", "upsert_scores"))}
    rows = {name: result.collect() for name, result in results.items()}
    first = [("+I", 12, 1), ("-U", 12, 1), ("+U", 17, 2)]
    second = [("-U", 17, 2), ("+U", 5, 1), ("-U", 5, 1), ("+U", 105, 2), ("-U", 105, 2),
              ("+U", 100, 1)]
    expected = {"all": [first, second, [("-U", 100, 1), ("+U", 107, 2)]],
                "upsert": [first, second, [("-U", 100, 1), ("+U", 107, 2), ("-U", 107, 2),
                                           ("+U", 100, 1), ("-U", 100, 1), ("+U", 108, 2)]]}
    try:
        for i in range(3):
            for name in files:
                drop(tmp_path / name, f"part-{i}.csv", files[name][i])
            for name, changes in expected.items():
                assert [(str(r.get_row_kind()), *r) for r in
                        (next(rows[name]) for _ in changes[i])] == changes[i], \
                    f"{name} after file {i}"
    finally:
        for result in results.values():
            result.get_job_client().cancel()


def test_from_data_stream_fields_and_schema(session) -> None:
    env, t_env = environments(session, RuntimeExecutionMode.BATCH)
    tuples = env.from_collection([("a", 1), ("b", 2)])
    renamed = t_env.from_data_stream(tuples, col("word"), col("n"))
    assert renamed.get_schema().get_field_names() == ["word", "n"]
    assert sorted(tuple(r) for r in renamed.execute().collect()) == [("a", 1), ("b", 2)]
    default = t_env.from_data_stream(tuples)
    assert default.get_schema().get_field_names() == ["f0", "f1"]
    typed = t_env.from_data_stream(scores(env), Schema.new_builder()
                                   .column("score", "DOUBLE")
                                   .column_by_expression("double_score", "score * 2")
                                   .build())
    schema = typed.get_schema()  # Flink 2.3: the declared columns only (`name` is not one)
    assert schema.get_field_names() == ["score", "double_score"]
    assert str(schema.get_field_data_type("score")) == "DOUBLE"
    assert sorted(tuple(r) for r in typed.execute().collect()) == \
        sorted((float(s), float(s) * 2) for _, s in SCORES)


def test_an_unbounded_data_stream_fails_naming_it_in_batch_mode(session) -> None:
    # in STREAMING its table runs it (test_table_unbounded_datastream.py)
    env, t_env = environments(session, RuntimeExecutionMode.BATCH)
    with pytest.raises(NotImplementedError, match="from_data_stream.. of an unbounded "
                                                  "DataStream"):
        t_env.from_data_stream(env.socket_text_stream("localhost", 9))


def test_to_data_stream_of_an_unbounded_table_is_a_source_started_by_its_job(
        session, tmp_path) -> None:
    """A Table over a monitored directory never ends: its rows do not become a collection;
    the conversion starts no job, and the DataStream's job runs its query (planned on the
    JobManager; see test_table_to_unbounded_datastream.py), listed and cancelled as one."""
    env, t_env = environments(session, RuntimeExecutionMode.STREAMING)
    (tmp_path / "in").mkdir()
    name = f"watched_{tmp_path.name.replace('-', '_')}"
    t_env.execute_sql(f"CREATE TEMPORARY TABLE {name} (name STRING, score INT) WITH ("
                      f"'connector' = 'filesystem', 'path' = '{tmp_path / 'in'}', "
                      "'format' = 'csv', 'source.monitor-interval' = '1s')")
    jobs_before = {j.job_id for j in session.jobs()}
    stream = t_env.to_data_stream(t_env.from_path(name))
    assert {j.job_id for j in session.jobs()} == jobs_before
    client = stream.execute_and_collect_async("unbounded table")
    assert client.get_job_id() in {j.job_id for j in session.jobs()}
    deadline = time.monotonic() + 120
    while client.get_job_status() is not JobStatus.RUNNING:
        assert time.monotonic() < deadline, client.get_job_status()
        time.sleep(0.2)
    client.cancel()
    client.wait(60)
    assert client.get_job_status() is JobStatus.CANCELED
