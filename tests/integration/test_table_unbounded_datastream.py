"""An unbounded DataStream as a Table in STREAMING mode (PyFlink's ``from_data_stream``): the
DataStream's operators and the Table's query run as one streaming job of the session, records
flowing from files dropped into a monitored directory into a group aggregate's changelog and into
a window TVF over ``SOURCE_WATERMARK()``, and through SQL over a view into a filesystem table
(``execute_insert``), compared round after round with plain Python; the job is listed and
cancelled as one. A stream without a type or Schema fails naming what to add."""

from __future__ import annotations

import collections
import datetime
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import sessioncluster
from sessioncluster.client.table_environment import StreamTableEnvironment
from sessioncluster.common import RuntimeExecutionMode
from sessioncluster.common.types import Row, RowKind
from sessioncluster.graph.lifecycle import JobStatus
from sessioncluster.pyflink.common import Duration, Types, WatermarkStrategy
from sessioncluster.pyflink.datastream.connectors.file_system import FileSource, StreamFormat
from sessioncluster.pyflink.table import Schema
from sessioncluster.pyflink.table.expressions import col

from ..helpers import csv_rows, wait_until
from .test_streaming import ROUNDS, Seconds, drop

pytestmark = pytest.mark.integration

#: generous: the first micro-batch of a stateful query loads the state store
RESULT_TIMEOUT = 180.0


def environments(session: sessioncluster.Session
                 ) -> tuple[sessioncluster.StreamExecutionEnvironment, StreamTableEnvironment]:
    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)
    return env, StreamTableEnvironment.create(env)


def lines(env: sessioncluster.StreamExecutionEnvironment, directory: Path,
          strategy: Any = None) -> Any:
    source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(directory))
              .monitor_continuously(Duration.of_millis(200)).build())
    return env.from_source(source, strategy or WatermarkStrategy.no_watermarks(), "lines")


def read_changelog_until(rows: Iterator[Row], state: dict[Any, Any], expected: dict[Any, Any],
                         key: Any, value: Any) -> None:
    """Apply changelog rows (+I/+U set, -U/-D retract) until ``state`` is ``expected``."""
    deadline = time.monotonic() + RESULT_TIMEOUT
    while state != expected:
        assert time.monotonic() < deadline, f"still {state}, expected {expected}"
        row = next(rows)
        if row.get_row_kind() in (RowKind.INSERT, RowKind.UPDATE_AFTER):
            state[key(row)] = value(row)
        else:
            assert state.pop(key(row)) == value(row)


def test_group_aggregate_of_an_unbounded_file_source(session, tmp_path: Path) -> None:
    env, t_env = environments(session)
    src = tmp_path / "in"
    src.mkdir()
    words = (lines(env, src).flat_map(lambda line: line.split(), output_type=Types.STRING())
             .map(lambda w: Row(word=w), output_type=Types.ROW_NAMED(["word"], [Types.STRING()])))
    table = t_env.from_data_stream(words)
    assert table.get_schema().get_field_names() == ["word"]
    counts = table.group_by(col("word")).select(col("word"), col("word").count.alias("n"))
    result = counts.execute()
    job = result.get_job_client()
    assert job.get_job_id() in {j.job_id for j in session.jobs()}
    rows = result.collect()
    latest: dict[str, int] = {}
    for i in range(len(ROUNDS)):
        drop(src, f"part-{i}", ROUNDS[i])
        expected = collections.Counter(w for text in ROUNDS[: i + 1] for t in text
                                       for w in t.split())
        read_changelog_until(rows, latest, dict(expected), lambda r: r[0], lambda r: r[1])
    assert job.get_job_status() is JobStatus.RUNNING
    job.cancel()
    deadline = time.monotonic() + 60
    while job.get_job_status() is not JobStatus.CANCELED:
        assert time.monotonic() < deadline, job.get_job_status()
        time.sleep(0.2)


def test_execute_insert_of_sql_over_a_view_of_an_unbounded_stream(session, tmp_path: Path
                                                                   ) -> None:
    env, t_env = environments(session)
    t_env.get_config().set("execution.checkpointing.interval", "500 ms")
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    words = lines(env, src).flat_map(lambda line: line.split(), output_type=Types.STRING())
    t_env.create_temporary_view("unbounded_words", words, col("word"))  # f0 renamed
    t_env.execute_sql(f"CREATE TEMPORARY TABLE loud_words (word STRING, loud STRING) WITH ("
                      f"'connector' = 'filesystem', 'path' = '{out}', 'format' = 'csv')")
    job = (t_env.sql_query("SELECT word, UPPER(word) AS loud FROM unbounded_words "
                           "WHERE word <> 'be'")
           .execute_insert("loud_words").get_job_client())
    try:
        for i in range(len(ROUNDS)):
            drop(src, f"part-{i}", ROUNDS[i])
            expected = sorted((w, w.upper()) for text in ROUNDS[: i + 1] for t in text
                              for w in t.split() if w != "be")
            wait_until(lambda e=expected: sorted(csv_rows(out)) == e,  # type: ignore[misc]
                       RESULT_TIMEOUT, f"the rows {expected}")
        assert job.get_job_status() is JobStatus.RUNNING
    finally:
        job.cancel()
        t_env.execute_sql("DROP TEMPORARY TABLE IF EXISTS loud_words")


EVENTS = [["1,a", "2,b", "3,a"], ["12,a", "15,b", "4,b"], ["25,c", "16,a"]]


def closed_windows(rounds: list[list[str]], size: int) -> dict[tuple[int, str], int]:
    """Plain Python: per (window start, word), the count of the tumbling windows the watermark
    (the largest timestamp so far, no out-of-orderness) has passed; late records dropped."""
    counts: collections.Counter[tuple[int, str]] = collections.Counter()
    watermark = -1
    for text in rounds:
        batch = [(int(s), w) for s, w in (line.split(",") for line in text)]
        counts.update((s // size * size, w) for s, w in batch if s >= watermark)
        watermark = max([watermark] + [s for s, _ in batch])  # Spark: moved after the batch
    return {k: n for k, n in counts.items() if k[0] + size <= watermark}


def test_window_tvf_over_source_watermark(session, tmp_path: Path) -> None:
    env, t_env = environments(session)
    src = tmp_path / "in"
    src.mkdir()
    strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(0))
                .with_timestamp_assigner(Seconds()))
    events = lines(env, src, strategy).map(lambda line: line.split(",")[1],
                                           output_type=Types.STRING())
    schema = (Schema.new_builder().column("f0", "STRING")
              .column_by_metadata("rowtime", "TIMESTAMP_LTZ(3)")
              .watermark("rowtime", "SOURCE_WATERMARK()").build())
    t_env.create_temporary_view("unbounded_events", t_env.from_data_stream(events, schema))
    result = t_env.execute_sql(
        "SELECT window_start, f0 AS word, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE unbounded_events, "
        "DESCRIPTOR(rowtime), INTERVAL '10' SECOND)) GROUP BY window_start, window_end, f0")
    rows = result.collect()
    got: dict[tuple[int, str], int] = {}
    epoch = datetime.datetime(1970, 1, 1)
    try:
        for i in range(len(EVENTS)):
            drop(src, f"part-{i}", EVENTS[i])
            expected = closed_windows(EVENTS[: i + 1], 10)
            read_changelog_until(
                rows, got, expected,
                lambda r: (int((r[0].replace(tzinfo=None) - epoch).total_seconds()), r[1]),
                lambda r: r[2])
    finally:
        rows.close()  # cancels the job
    assert {start for start, _ in got} == {0, 10}  # both windows closed, not an empty match


def test_an_unbounded_stream_without_a_type_or_schema_fails_naming_what_to_add(
        session, tmp_path: Path) -> None:
    env, t_env = environments(session)
    untyped = lines(env, tmp_path).map(lambda line: Row(word=line))
    with pytest.raises(ValueError, match=r"output_type=Types.ROW_NAMED.*or a Schema"):
        t_env.from_data_stream(untyped)
