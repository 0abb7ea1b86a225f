"""PyFlink's Table API on a real session, in BATCH: local data with its declared types, the
relational operations and a group window planned as Flink SQL on the JobManager, results
collected and printed as PyFlink does, an INSERT into a filesystem table; compared with plain
Python."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from sessioncluster.api.table.types import DataTypes
from sessioncluster.client.table_environment import TableEnvironment
from sessioncluster.common.types import Row, RowKind
from sessioncluster.pyflink.table import EnvironmentSettings
from sessioncluster.pyflink.table.expressions import col, lit
from sessioncluster.pyflink.table.window import Tumble

pytestmark = pytest.mark.integration

WORDS = "to be or not to be that is the question to be".split()


@pytest.fixture
def t_env(session) -> TableEnvironment:
    return TableEnvironment.create(EnvironmentSettings.in_batch_mode(), session=session)


def test_local_data_keeps_its_declared_types(t_env) -> None:
    schema = DataTypes.ROW([
        DataTypes.FIELD("id", DataTypes.TINYINT()),
        DataTypes.FIELD("n", DataTypes.INT()),
        DataTypes.FIELD("r", DataTypes.ROW([DataTypes.FIELD("x", DataTypes.INT()),
                                            DataTypes.FIELD("y", DataTypes.STRING())])),
        DataTypes.FIELD("a", DataTypes.ARRAY(DataTypes.BIGINT())),
    ])
    t = t_env.from_elements([(1, None, Row(x=1, y="a"), [1, 2]), (2, 7, Row(x=2, y="b"), [])],
                            schema)
    rows = list(t.order_by(col("id")).execute().collect())
    assert [r.get_row_kind() for r in rows] == [RowKind.INSERT, RowKind.INSERT]
    assert [(r[0], r[1], r[3]) for r in rows] == [(1, None, [1, 2]), (2, 7, [])]
    assert [r[2][1] for r in rows] == ["a", "b"]

    untyped = t_env.from_elements([(1, "Hi"), (2, "Hello")], ["id", "data"])
    result = untyped.execute()
    assert result.get_table_schema().get_field_data_types()[0] == DataTypes.BIGINT()
    assert sorted(tuple(r) for r in result.collect()) == [(1, "Hi"), (2, "Hello")]


def test_word_count_as_pyflinks_table_api_writes_it(t_env) -> None:
    words = t_env.from_elements([(w,) for w in WORDS], ["word"])
    counts = (words.group_by(col("word"))
              .select(col("word"), lit(1).count.alias("n"))
              .where(col("n") > 1))
    got = {r[0]: r[1] for r in counts.execute().collect()}
    assert got == {w: n for w, n in Counter(WORDS).items() if n > 1}
    frame = counts.to_pandas()
    assert sorted(frame.itertuples(index=False, name=None)) == sorted(got.items())


def test_print_is_flinks_tableau_layout(t_env, capsys) -> None:
    t_env.from_elements([(1, "Hi"), (2, "Hello")], ["id", "data"]).order_by(col("id")) \
        .execute().print()
    assert capsys.readouterr().out.splitlines() == [
        "+----------------------+--------------------------------+",
        "|                   id |                           data |",
        "+----------------------+--------------------------------+",
        "|                    1 |                             Hi |",
        "|                    2 |                          Hello |",
        "+----------------------+--------------------------------+",
        "2 rows in set",
    ]


def test_tumble_group_window_and_sql_query_over_a_view(t_env) -> None:
    base = dt.datetime(2020, 4, 15, 8, 0)
    bids = pd.DataFrame({"ts": [base + dt.timedelta(minutes=m) for m in (5, 7, 9, 11, 13, 17)],
                         "price": [4.0, 2.0, 5.0, 3.0, 1.0, 6.0]})
    t = t_env.from_pandas(bids)
    windowed = (t.window(Tumble.over(lit(10).minutes).on(col("ts")).alias("w"))
                .group_by(col("w"))
                .select(col("w").start.alias("start"), col("price").sum.alias("total")))
    assert sorted(tuple(r) for r in windowed.execute().collect()) == [
        (base, 11.0), (base + dt.timedelta(minutes=10), 10.0)]
    t_env.create_temporary_view("bids_view", t)
    top = t_env.sql_query("SELECT price FROM bids_view ORDER BY price DESC LIMIT 2")
    assert [r[0] for r in top.execute().collect()] == [6.0, 5.0]


def test_execute_insert_into_a_filesystem_table(t_env, tmp_path: Path) -> None:
    out = tmp_path / "words"
    t_env.execute_sql(f"""
        CREATE TEMPORARY TABLE word_sink (word STRING, n BIGINT)
        WITH ('connector' = 'filesystem', 'path' = '{out}', 'format' = 'csv')""")
    counts = (t_env.from_elements([(w,) for w in WORDS], ["word"])
              .group_by(col("word")).select(col("word"), lit(1).count))
    counts.execute_insert("word_sink").wait()
    lines = [line for f in out.rglob("*") if f.is_file() for line in f.read_text().splitlines()]
    assert sorted(lines) == sorted(f"{w},{n}" for w, n in Counter(WORDS).items())
    t_env.execute_sql("DROP TEMPORARY TABLE word_sink")


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_from_data_stream_rowtime_of_the_records_timestamps(session, mode) -> None:
    """The records' timestamps as the rowtime (a metadata column, SOURCE_WATERMARK()) and a
    rowtime computed with TO_TIMESTAMP_LTZ, each counted in tumbling windows (real Flink's
    rows for the same data: tests/pyflink_programs/table_datastream_rowtime.expected)."""
    from sessioncluster.client.table_environment import StreamTableEnvironment
    from sessioncluster.common import RuntimeExecutionMode
    from sessioncluster.pyflink.common import Duration, Types, WatermarkStrategy
    from sessioncluster.pyflink.common.watermark_strategy import TimestampAssigner
    from sessioncluster.pyflink.table import Schema

    class ClickTime(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return value[1]

    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode[mode])
    env.set_parallelism(1)
    t_env = StreamTableEnvironment.create(env)
    clicks = env.from_collection([("alice", 1000), ("bob", 4000), ("alice", 9000),
                                  ("bob", 12000), ("alice", 15000), ("john", 21000)],
                                 type_info=Types.TUPLE([Types.STRING(), Types.LONG()]))
    clicks = clicks.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1))
        .with_timestamp_assigner(ClickTime()))
    schemas = {
        "rowtime": Schema.new_builder().column_by_metadata("rowtime", "TIMESTAMP_LTZ(3)")
        .watermark("rowtime", "SOURCE_WATERMARK()").build(),
        "ts": Schema.new_builder().column_by_expression("ts", "TO_TIMESTAMP_LTZ(f1, 3)")
        .watermark("ts", "ts - INTERVAL '1' SECOND").build(),
    }
    epoch = dt.datetime(1970, 1, 1)
    for column, schema in schemas.items():
        view = f"clicks_{column}_{mode.lower()}"
        t_env.create_temporary_view(view, t_env.from_data_stream(clicks, schema))
        rows = t_env.sql_query(
            f"SELECT window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE {view}, "
            f"DESCRIPTOR({column}), INTERVAL '10' SECOND)) GROUP BY window_start, window_end"
        ).execute().collect()
        counts = sorted((r[0].replace(tzinfo=None) - epoch, r[1]) for r in rows
                        if r.get_row_kind() is RowKind.INSERT)
        assert counts == [(dt.timedelta(seconds=s), n) for s, n in ((0, 3), (10, 2), (20, 1))]
