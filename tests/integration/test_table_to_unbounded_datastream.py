"""An unbounded Table as a DataStream in STREAMING mode (PyFlink's ``to_data_stream`` and
``to_changelog_stream``): the Table's query over a monitored directory of CSV files and the
DataStream's operators after it run as one streaming job of the session, read incrementally as
files are dropped (or written by a FileSink), compared round after round with plain Python, and
cancelled as one job. An updating query fails for ``to_data_stream`` at once, with Flink's
message, and the session goes on. The Table's rowtime stamps the records and its watermark
fires the event-time windows after it; a Table of an unbounded DataStream converts back into
one (three parts, one job)."""

from __future__ import annotations

import collections
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import sessioncluster
from sessioncluster.client.table_environment import StreamTableEnvironment
from sessioncluster.common import RuntimeExecutionMode
from sessioncluster.common.types import Row
from sessioncluster.graph.lifecycle import JobStatus
from sessioncluster.pyflink.common import Configuration, Duration, Time, Types, WatermarkStrategy
from sessioncluster.pyflink.common.serialization import Encoder
from sessioncluster.pyflink.common.watermark_strategy import TimestampAssigner
from sessioncluster.pyflink.datastream.connectors.file_system import FileSink
from sessioncluster.pyflink.datastream.functions import ProcessFunction, ProcessWindowFunction
from sessioncluster.pyflink.datastream.window import TumblingEventTimeWindows

from .test_streaming import ROUNDS as WORD_ROUNDS
from .test_streaming import drop
from .test_table_unbounded_datastream import EVENTS, closed_windows
from .test_table_unbounded_datastream import lines as line_source

pytestmark = pytest.mark.integration

#: generous: the first micro-batch of a stateful query loads the state store
RESULT_TIMEOUT = 180.0

#: the CSV lines ``word,n`` of each round, one file per round
ROUNDS = [["to,1", "be,2", "or,3"], ["to,4", "be,1", "not,2"], ["be,5", "question,3", "to,1"]]


def environments(session: sessioncluster.Session, source: Path
                 ) -> tuple[sessioncluster.StreamExecutionEnvironment, StreamTableEnvironment]:
    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)
    t_env = StreamTableEnvironment.create(env)
    t_env.execute_sql(f"""CREATE TEMPORARY TABLE words_{source.parent.name} (word STRING, n INT)
        WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv',
        'source.monitor-interval' = '1s')""")
    return env, t_env


def take(records: Iterator[Any], n: int) -> list[Any]:
    """The next ``n`` records (the iterator blocks until each comes)."""
    deadline = time.monotonic() + RESULT_TIMEOUT
    out = []
    while len(out) < n:
        assert time.monotonic() < deadline, f"only {out} of {n} records"
        out.append(next(records))
    return out


def wait_for_status(job: Any, status: JobStatus) -> None:
    deadline = time.monotonic() + 60
    while job.get_job_status() is not status:
        assert time.monotonic() < deadline, job.get_job_status()
        time.sleep(0.2)


def test_to_data_stream_of_an_unbounded_table_then_map(session, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    env, t_env = environments(session, src)
    table = t_env.sql_query(f"SELECT word, n FROM words_{tmp_path.name} WHERE n > 1")
    stream = t_env.to_data_stream(table).map(
        lambda r: (r.word, r.n * 10, str(r.get_row_kind())),
        output_type=Types.TUPLE([Types.STRING(), Types.INT(), Types.STRING()]))
    records = stream.execute_and_collect("unbounded table to stream")
    job = records.client
    assert job.get_job_id() in {j.job_id for j in session.jobs()}
    for i, lines in enumerate(ROUNDS):
        drop(src, f"part-{i}.csv", lines)
        expected = sorted((w, int(n) * 10, "+I") for w, n in (line.split(",") for line in lines)
                          if int(n) > 1)
        assert sorted(take(records, len(expected))) == expected
    assert job.get_job_status() is JobStatus.RUNNING
    job.cancel()
    wait_for_status(job, JobStatus.CANCELED)


def plain_changelog(rounds: list[list[str]]) -> list[list[tuple[str, str, int]]]:
    """Plain Python: per round, the changelog of ``SELECT word, COUNT(*) ... GROUP BY word``
    (each round one micro-batch: +I for a new word, -U old then +U new for a counted one)."""
    counts: collections.Counter[str] = collections.Counter()
    out = []
    for lines in rounds:
        before = dict(counts)
        counts.update(line.split(",")[0] for line in lines)
        changes: list[tuple[str, str, int]] = []
        for word in sorted({line.split(",")[0] for line in lines}):
            if word in before:
                changes += [("-U", word, before[word]), ("+U", word, counts[word])]
            else:
                changes.append(("+I", word, counts[word]))
        out.append(changes)
    return out


def test_to_changelog_stream_of_an_unbounded_group_aggregate(session, tmp_path: Path) -> None:
    src, checkpoints = tmp_path / "in", tmp_path / "checkpoints"
    src.mkdir()
    env, t_env = environments(session, src)
    env.configure(Configuration().set_string("state.checkpoints.dir", str(checkpoints)))
    table = t_env.sql_query(f"SELECT word, COUNT(*) AS c FROM words_{tmp_path.name} "
                            "GROUP BY word")
    stream = t_env.to_changelog_stream(table).map(
        lambda r: (str(r.get_row_kind()), r.word, r.c),
        output_type=Types.TUPLE([Types.STRING(), Types.STRING(), Types.LONG()]))
    records = stream.execute_and_collect("unbounded changelog to stream")
    try:
        for i, expected in enumerate(plain_changelog(ROUNDS)):
            drop(src, f"part-{i}.csv", ROUNDS[i])
            assert sorted(take(records, len(expected))) == sorted(expected)
        assert records.client.get_job_status() is JobStatus.RUNNING
        # the feeder's outbox keeps only what the DataStream's query has not committed: a
        # file is deleted once its batch is (at the next batch), so it does not grow
        outbox = list(checkpoints.glob("*/table-*/records/*.parquet"))
        assert 0 < len(outbox) < len(ROUNDS), outbox
    finally:
        records.close()  # cancels the job: both its queries
    wait_for_status(records.client, JobStatus.CANCELED)


def test_to_data_stream_of_an_updating_unbounded_table_fails_at_once(session,
                                                                     tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    env, t_env = environments(session, src)
    running = {j.job_id for j in session.jobs()}
    table = t_env.sql_query(f"SELECT word, COUNT(*) AS c FROM words_{tmp_path.name} "
                            "GROUP BY word")
    with pytest.raises(Exception, match=r"Table sink '\*anonymous_datastream_sink\$1\*' doesn't "
                                        r"support consuming update changes which is produced by "
                                        r"node GroupAggregate\(groupBy=\[word\]"):
        t_env.to_data_stream(table)
    assert {j.job_id for j in session.jobs()} == running  # nothing was started
    # the session goes on: the same table's insert-only query converts and runs
    drop(src, "part-0.csv", ROUNDS[0])
    stream = t_env.to_data_stream(t_env.sql_query(f"SELECT word FROM words_{tmp_path.name}"))
    records = stream.map(lambda r: r.word, output_type=Types.STRING()).execute_and_collect()
    with records:
        assert sorted(take(records, 3)) == sorted(line.split(",")[0] for line in ROUNDS[0])


def test_a_bounded_table_keeps_its_collection_source(session, tmp_path: Path) -> None:
    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    t_env = StreamTableEnvironment.create(env)
    table = t_env.from_elements([("a", 1), ("b", 2)], ["word", "n"])
    got = list(t_env.to_data_stream(table).execute_and_collect(limit=2))
    assert sorted(got, key=lambda r: r.word) == [Row(word="a", n=1), Row(word="b", n=2)]


def event_lines(events: list[str]) -> list[str]:
    """``"<seconds>,<word>"`` as CSV lines of a TIMESTAMP(3) and a word."""
    return [f"1970-01-01 00:00:{int(s):02d},{w}" for s, w in (e.split(",") for e in events)]


def events_table(t_env: StreamTableEnvironment, source: Path) -> str:
    name = f"events_{source.parent.name}"
    t_env.execute_sql(f"""CREATE TEMPORARY TABLE {name} (ts TIMESTAMP(3), word STRING,
            WATERMARK FOR ts AS ts - INTERVAL '0' SECOND)
        WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv',
              'source.monitor-interval' = '1s')""")
    return name


class Stamp(ProcessFunction):
    """Each record's word with its timestamp (the Table's rowtime, epoch ms)."""

    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Any:
        yield value.word, ctx.timestamp()


class StartAndCount(ProcessWindowFunction):
    """A window's start (epoch ms), its key and its count."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield context.window().start, key, sum(1 for _ in elements)


def test_the_rowtime_stamps_the_records(session, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    env, t_env = environments(session, src)
    name = events_table(t_env, src)
    stream = t_env.to_data_stream(t_env.sql_query(f"SELECT word, ts FROM {name}"))
    records = stream.process(Stamp(), output_type=Types.TUPLE(
        [Types.STRING(), Types.LONG()])).execute_and_collect("stamped")
    with records:
        drop(src, "part-0.csv", event_lines(EVENTS[0]))
        expected = sorted((w, int(s) * 1000) for s, w in (e.split(",") for e in EVENTS[0]))
        assert sorted(take(records, len(expected))) == expected


def test_event_time_windows_after_the_table_fire_by_its_watermark(session,
                                                                  tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    env, t_env = environments(session, src)
    name = events_table(t_env, src)
    windows = (t_env.to_data_stream(t_env.sql_query(f"SELECT word, ts FROM {name}"))
               .map(lambda r: (r.word, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
               .key_by(lambda t: t[0])
               .window(TumblingEventTimeWindows.of(Time.seconds(10)))
               .process(StartAndCount(), output_type=Types.TUPLE(
                   [Types.LONG(), Types.STRING(), Types.INT()])))
    records = windows.execute_and_collect("windows after a table")
    got: dict[tuple[int, str], int] = {}
    with records:
        for i in range(len(EVENTS)):
            drop(src, f"part-{i}.csv", event_lines(EVENTS[i]))
            expected = closed_windows(EVENTS[: i + 1], 10)
            for start, word, n in take(records, len(expected) - len(got)):
                got[(start // 1000, word)] = n
            assert got == expected


def test_a_table_of_an_unbounded_datastream_back_into_a_datastream(session,
                                                                   tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    env, t_env = environments(session, src)
    words = (line_source(env, src).flat_map(lambda line: line.split(), output_type=Types.STRING())
             .map(lambda w: Row(word=w), output_type=Types.ROW_NAMED(["word"], [Types.STRING()])))
    table = t_env.from_data_stream(words)
    loud = t_env.sql_query(f"SELECT UPPER(word) AS loud FROM {table} WHERE word <> 'be'")
    records = t_env.to_data_stream(loud).map(lambda r: r.loud, output_type=Types.STRING()) \
        .execute_and_collect("datastream, table, datastream")
    with records:
        for i, text in enumerate(WORD_ROUNDS):
            drop(src, f"part-{i}", text)
            expected = sorted(w.upper() for t in text for w in t.split() if w != "be")
            assert sorted(take(records, len(expected))) == expected


def test_a_watermark_over_the_tables_is_refused_naming_it(session, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    env, t_env = environments(session, src)
    name = events_table(t_env, src)
    strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1))
                .with_timestamp_assigner(RowtimeAgain()))
    stream = (t_env.to_data_stream(t_env.sql_query(f"SELECT word, ts FROM {name}"))
              .assign_timestamps_and_watermarks(strategy).map(lambda r: r.word))
    with pytest.raises(Exception, match="assigns a watermark to the records of a Table that has "
                                        "one"):
        list(stream.execute_and_collect("watermark over a table's"))


class RowtimeAgain(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return record_timestamp


def test_a_changelog_into_a_file_sink(session, tmp_path: Path) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    env, t_env = environments(session, src)
    table = t_env.sql_query(f"SELECT word, COUNT(*) AS c FROM words_{tmp_path.name} "
                            "GROUP BY word")
    (t_env.to_changelog_stream(table)
     .map(lambda r: f"{r.get_row_kind()},{r.word},{r.c}", output_type=Types.STRING())
     .sink_to(FileSink.for_row_format(str(out), Encoder.simple_string_encoder()).build()))
    job = env.execute_async("changelog to files")
    try:
        expected: list[str] = []
        for i, changes in enumerate(plain_changelog(ROUNDS)):
            drop(src, f"part-{i}.csv", ROUNDS[i])
            expected = sorted(expected + [f"{kind},{word},{c}" for kind, word, c in changes])
            wait_for(lambda e=expected: sorted(committed_lines(out)) == e,  # type: ignore[misc]
                     lambda: (job.get_job_status(), sorted(committed_lines(out))))
    finally:
        job.cancel()
    wait_for_status(job, JobStatus.CANCELED)


def committed_lines(directory: Path) -> list[str]:
    """The lines of the FileSink's committed part files (in their bucket directories)."""
    return [line for p in sorted(directory.rglob("part-*")) for line in p.read_text().splitlines()]


def wait_for(done: Any, state: Any) -> None:
    deadline = time.monotonic() + RESULT_TIMEOUT
    while not done():
        assert time.monotonic() < deadline, state()
        time.sleep(0.2)


def test_pyflinks_mixing_example_with_a_python_udf(session, capsys: pytest.CaptureFixture[str]
                                                   ) -> None:
    """PyFlink's examples/table/mixing_use_of_datastream_and_table.py: a Table calling a Python
    UDF into a DataStream and back into a print table, ``.wait()``ed. The UDF's registration
    travels beside the probe of the Table's query (it once took the probe's place)."""
    from sessioncluster.pyflink.table import DataTypes, Schema, TableDescriptor
    from sessioncluster.pyflink.table.expressions import col
    from sessioncluster.pyflink.table.udf import udf

    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    t_env = StreamTableEnvironment.create(stream_execution_environment=env)
    t_env.create_temporary_table("mixing_source", TableDescriptor.for_connector("datagen")
                                 .schema(Schema.new_builder().column("id", DataTypes.BIGINT())
                                         .column("data", DataTypes.STRING()).build())
                                 .option("number-of-rows", "10").build())
    t_env.create_temporary_table("mixing_sink", TableDescriptor.for_connector("print")
                                 .schema(Schema.new_builder().column("a", DataTypes.BIGINT())
                                         .build()).build())

    @udf(result_type=DataTypes.BIGINT())
    def length(data: str) -> int:
        return len(data)

    table = t_env.from_path("mixing_source").select(col("id"), length(col("data")))
    ds = t_env.to_data_stream(table).map(lambda i: i[0] + i[1], output_type=Types.LONG())
    back = t_env.from_data_stream(ds, Schema.new_builder().column("f0", DataTypes.BIGINT()).build())
    back.execute_insert("mixing_sink").wait()
    printed = [line for line in capsys.readouterr().out.splitlines() if "+I[" in line]
    assert len(printed) == 10  # datagen's ten rows, each its id plus 100 (its string's length)
