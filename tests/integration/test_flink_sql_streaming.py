"""Flink SQL in STREAMING mode on a real session: an INSERT runs as a streaming job of the
session (RUNNING until cancelled, or FINISHED when its sources are bounded); a TUMBLE window
count over CSV files dropped into a monitored directory, each window once after the watermark
passed it; an updating GROUP BY refused into a filesystem sink and printed as Flink's changelog
into a print sink."""

from __future__ import annotations

import collections
import csv
import datetime as dt
import re
import time
from pathlib import Path
from typing import Any, Callable

import pytest

import sessioncluster
from sessioncluster.client.restclient import RestClient
from sessioncluster.client.session import SqlExecutionException
from sessioncluster.common import RuntimeExecutionMode
from sessioncluster.graph.lifecycle import JobStatus

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_new_tables")]

STREAMING = RuntimeExecutionMode.STREAMING
T0 = dt.datetime(2026, 11, 26, 8, 0, 0)


def sql(session: sessioncluster.Session, statement: str) -> sessioncluster.client.session.SqlStatementResult:
    return session.execute_sql(statement, runtime_mode=STREAMING)



def resumed(session: sessioncluster.Session, statement: str, path: str) -> str:
    """Run ``statement`` restored from the savepoint at ``path`` (``SET
    'execution.savepoint.path'``, reset after it); its job's id."""
    sql(session, f"SET 'execution.savepoint.path' = '{path}'")
    try:
        return sql(session, statement).job_id
    finally:
        sql(session, "RESET 'execution.savepoint.path'")


def wait_for(what: Callable[[], object], timeout: float = 240.0) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = what()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"not reached within {timeout} s: {what}")


def sink_rows(directory: Path) -> list[list[str]]:
    rows: list[list[str]] = []
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not path.name.startswith((".", "_")):
            with open(path, newline="") as f:
                rows += [r for r in csv.reader(f) if r]
    return rows


def rest(session: sessioncluster.Session, path: str) -> dict:
    return RestClient.of(session).get(path)


def status(session: sessioncluster.Session, job_id: str) -> JobStatus:
    return session.job(job_id).get_job_status()


def test_tumble_window_count_over_a_monitored_directory(session, tmp_path: Path) -> None:
    source, sink = tmp_path / "events", tmp_path / "counts"
    source.mkdir()
    sink.mkdir()
    sql(session, "DROP TABLE IF EXISTS events")
    sql(session, "DROP TABLE IF EXISTS window_counts")
    sql(session, f"""
        CREATE TABLE events (ts TIMESTAMP(3), word STRING,
            WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
        WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv',
              'source.monitor-interval' = '1s')""")
    sql(session, f"""
        CREATE TABLE window_counts (window_start TIMESTAMP(3), window_end TIMESTAMP(3),
            word STRING, cnt BIGINT)
        WITH ('connector' = 'filesystem', 'path' = '{sink}', 'format' = 'csv')""")
    result = sql(session, """
        INSERT INTO window_counts
        SELECT window_start, window_end, word, COUNT(*) AS cnt
        FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '10' SECONDS))
        GROUP BY window_start, window_end, word""")
    job_id = result.job_id
    assert result.columns == ["default_catalog.default_database.window_counts"]
    assert status(session, job_id) is JobStatus.RUNNING
    names = [v.name for v in session.job(job_id).details().vertices]
    assert names == ["Source: events", "Calc -> Sink: window_counts"]

    events: list[tuple[dt.datetime, str]] = []
    for k in range(4):  # file k: events of window k (seconds 10k..10k+9); watermark in it
        batch = [(T0 + dt.timedelta(seconds=10 * k + s), w)
                 for s, w in ((1, "a"), (3, "b"), (4, "a"), (8, "a") if k % 2 else (9, "b"))]
        events += batch
        tmp = source / f".f{k}.csv"
        tmp.write_text("".join(f"{t:%Y-%m-%d %H:%M:%S},{w}\n" for t, w in batch))
        tmp.rename(source / f"f{k}.csv")
        if k:  # window k-1 is emitted once the watermark (in window k) passed its end
            wait_for(lambda k=k: {r[0] for r in sink_rows(sink)}
                     >= {f"{T0 + dt.timedelta(seconds=10 * (k - 1)):%Y-%m-%d %H:%M:%S}"})

    expected = collections.Counter()
    for t, w in events:
        start = T0 + dt.timedelta(seconds=(t - T0).seconds // 10 * 10)
        if start < T0 + dt.timedelta(seconds=30):  # window 3 is still open
            expected[(f"{start:%Y-%m-%d %H:%M:%S}",
                      f"{start + dt.timedelta(seconds=10):%Y-%m-%d %H:%M:%S}", w)] += 1
    time.sleep(3)  # later micro-batches emit nothing more
    got = sink_rows(sink)
    assert sorted((s, e, w, int(c)) for s, e, w, c in got) == \
        sorted((*key, n) for key, n in expected.items())  # each window once

    session.job(job_id).cancel()
    wait_for(lambda: status(session, job_id) is JobStatus.CANCELED, 60)


def test_updating_group_by_into_a_filesystem_sink_is_refused(session, tmp_path: Path) -> None:
    sql(session, "DROP TABLE IF EXISTS words_src")
    sql(session, "DROP TABLE IF EXISTS word_totals")
    (tmp_path / "in").mkdir()
    sql(session, f"""CREATE TABLE words_src (word STRING) WITH ('connector' = 'filesystem',
        'path' = '{tmp_path / "in"}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    sql(session, f"""CREATE TABLE word_totals (word STRING, cnt BIGINT) WITH (
        'connector' = 'filesystem', 'path' = '{tmp_path / "out"}', 'format' = 'csv')""")
    with pytest.raises(SqlExecutionException) as failure:
        sql(session, "INSERT INTO word_totals SELECT word, COUNT(*) AS cnt FROM words_src "
                     "GROUP BY word")
    assert ("Table sink 'default_catalog.default_database.word_totals' doesn't support "
            "consuming update changes which is produced by node GroupAggregate(groupBy=[word]"
            in str(failure.value))
    select = sql(session, "SELECT word FROM words_src")  # runs, its rows to the client
    assert (select.live, select.columns) == ("append", ["word"])
    session.job(select.job_id).cancel()
    wait_for(lambda: status(session, select.job_id) is JobStatus.CANCELED, 60)


def test_updating_group_by_into_print_emits_flinks_changelog(session, sc_home: Path,
                                                             tmp_path: Path) -> None:
    source = tmp_path / "words"
    source.mkdir()
    sql(session, "DROP TABLE IF EXISTS words")
    sql(session, "DROP TABLE IF EXISTS printed_counts")
    sql(session, f"""CREATE TABLE words (word STRING) WITH ('connector' = 'filesystem',
        'path' = '{source}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    sql(session, """CREATE TABLE printed_counts (word STRING, cnt BIGINT)
        WITH ('connector' = 'print', 'print-identifier' = 'wc-changelog')""")
    log = sc_home / "sessions" / "itest" / "jobmanager.log"
    job_id = sql(session, "INSERT INTO printed_counts SELECT word, COUNT(*) FROM words "
                          "GROUP BY word").job_id

    def printed() -> list[str]:
        return [line.split("> ", 1)[1] for line in log.read_text().splitlines()
                if line.startswith("wc-changelog> ")]

    (source / "a.csv").write_text("x\ny\n")
    wait_for(lambda: len(printed()) >= 2)
    (source / "b.csv").write_text("x\n")
    wait_for(lambda: len(printed()) >= 4)
    (source / "c.csv").write_text("x\nz\n")
    wait_for(lambda: len(printed()) >= 7)
    time.sleep(2)
    got = printed()
    assert sorted(got[:2]) == ["+I[x, 1]", "+I[y, 1]"]
    assert got[2:4] == ["-U[x, 1]", "+U[x, 2]"]
    assert sorted(got[4:]) == sorted(["-U[x, 2]", "+U[x, 3]", "+I[z, 1]"])
    assert got[4:].index("-U[x, 2]") < got[4:].index("+U[x, 3]")
    session.job(job_id).cancel()
    wait_for(lambda: status(session, job_id) is JobStatus.CANCELED, 60)


def test_bounded_datagen_insert_finishes_with_every_row(session, tmp_path: Path) -> None:
    sink = tmp_path / "generated"
    sql(session, "DROP TABLE IF EXISTS gen")
    sql(session, "DROP TABLE IF EXISTS gen_sink")
    sql(session, """CREATE TABLE gen (id BIGINT, v INT) WITH ('connector' = 'datagen',
        'number-of-rows' = '1234', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1',
        'fields.id.end' = '100000', 'fields.v.min' = '0', 'fields.v.max' = '9')""")
    sql(session, f"""CREATE TABLE gen_sink (id BIGINT, v INT) WITH ('connector' =
        'filesystem', 'path' = '{sink}', 'format' = 'csv')""")
    result = sql(session, "INSERT INTO gen_sink SELECT id, v FROM gen WHERE v >= 0")
    session.job(result.job_id).wait(240)
    assert status(session, result.job_id) is JobStatus.FINISHED
    ids = sorted(int(r[0]) for r in sink_rows(sink))
    assert ids == list(range(1, 1235))
    sink_vertex = session.job(result.job_id).details().vertices[-1]
    assert (sink_vertex.name, sink_vertex.records_in) == ("Calc -> Sink: gen_sink", 1234)


def test_stop_with_savepoint_then_the_same_insert_resumes_its_state(session, sc_home: Path,
                                                                     tmp_path: Path) -> None:
    source = tmp_path / "sp_words"
    source.mkdir()
    sql(session, "DROP TABLE IF EXISTS sp_words")
    sql(session, "DROP TABLE IF EXISTS sp_counts")
    sql(session, f"""CREATE TABLE sp_words (word STRING) WITH ('connector' = 'filesystem',
        'path' = '{source}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    sql(session, """CREATE TABLE sp_counts (word STRING, cnt BIGINT)
        WITH ('connector' = 'print', 'print-identifier' = 'sp-changelog')""")
    log = sc_home / "sessions" / "itest" / "jobmanager.log"
    insert = "INSERT INTO sp_counts SELECT word, COUNT(*) FROM sp_words GROUP BY word"

    def printed() -> list[str]:
        return [line.split("> ", 1)[1] for line in log.read_text().splitlines()
                if line.startswith("sp-changelog> ")]

    first = sql(session, insert).job_id
    (source / "a.csv").write_text("x\nx\n")
    wait_for(lambda: printed() == ["+I[x, 2]"])
    # its micro-batches are its checkpoints, as a DataStream job's (REST /checkpoints)
    wait_for(lambda: rest(session, f"/jobs/{first}/checkpoints")["counts"]["completed"] >= 1)
    path = session.job(first).stop_with_savepoint(
        savepoint_directory=str(tmp_path / "savepoints")).result(timeout=240)
    assert status(session, first) is JobStatus.FINISHED

    second = resumed(session, insert, path)
    (source / "b.csv").write_text("x\n")  # a.csv is not read again: its offsets were saved
    wait_for(lambda: len(printed()) >= 3)
    time.sleep(2)
    assert printed() == ["+I[x, 2]", "-U[x, 2]", "+U[x, 3]"]

    with pytest.raises(SqlExecutionException, match="state.savepoints.dir"):
        sql(session, f"STOP JOB '{second}' WITH SAVEPOINT")
    sql(session, f"SET 'state.savepoints.dir' = '{tmp_path / 'sql-savepoints'}'")
    try:
        stopped = sql(session, f"STOP JOB '{second}' WITH SAVEPOINT")
    finally:
        sql(session, "RESET 'state.savepoints.dir'")
    assert stopped.columns == ["savepoint path"]
    location = Path(stopped.table.to_pylist()[0]["savepoint path"])
    assert location.parent == tmp_path / "sql-savepoints" and (location / "_metadata.json").exists()
    assert status(session, second) is JobStatus.FINISHED
    assert session.job(second).details().streaming["savepoints"] == [str(location)]


def test_a_failing_insert_restarts_as_its_restart_strategy_says(session, tmp_path: Path) -> None:
    """Flink's restart strategy options: the job restarts from its latest checkpoint twice, then
    FAILED with the query's error."""
    source = tmp_path / "numbers"
    source.mkdir()
    (source / "a.csv").write_text("1\nnot a number\n")
    sql(session, f"""CREATE TABLE rs_numbers (n STRING) WITH ('connector' = 'filesystem',
        'path' = '{source}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    sql(session, "CREATE TABLE rs_out (n INT) WITH ('connector' = 'blackhole')")
    options = {"restart-strategy.type": "fixed-delay",
               "restart-strategy.fixed-delay.attempts": "2",
               "restart-strategy.fixed-delay.delay": "100 ms"}
    for key, value in options.items():
        sql(session, f"SET '{key}' = '{value}'")
    try:
        job_id = sql(session, "INSERT INTO rs_out SELECT CAST(n AS INT) FROM rs_numbers").job_id
    finally:
        for key in options:
            sql(session, f"RESET '{key}'")
    session.job(job_id).wait(240)
    details = session.job(job_id).details()
    assert details.summary.status is JobStatus.FAILED
    assert details.streaming["restarts"] == 2
    assert "not a number" in (details.error_text or "")


def test_statement_set_of_a_legacy_tumble_and_a_hop_window(session, sc_home: Path,
                                                           tmp_path: Path) -> None:
    """One job, two INSERTs: GROUP BY TUMBLE(...) into files, a HOP window TVF into print;
    the windows the watermark passed are emitted, the open ones are not."""
    source, sink = tmp_path / "clicks", tmp_path / "tumbled"
    source.mkdir()
    for name in ("clicks", "tumbled", "hopped"):
        sql(session, f"DROP TABLE IF EXISTS {name}")
    sql(session, f"""
        CREATE TABLE clicks (ts TIMESTAMP(3), user_name STRING,
            WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
        WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv',
              'source.monitor-interval' = '1s')""")
    sql(session, f"""CREATE TABLE tumbled (w TIMESTAMP(3), cnt BIGINT) WITH (
        'connector' = 'filesystem', 'path' = '{sink}', 'format' = 'csv')""")
    sql(session, """CREATE TABLE hopped (window_start TIMESTAMP(3), cnt BIGINT)
        WITH ('connector' = 'print', 'print-identifier' = 'hop-windows')""")
    result = sql(session, """
        EXECUTE STATEMENT SET BEGIN
        INSERT INTO tumbled SELECT TUMBLE_START(ts, INTERVAL '10' SECOND), COUNT(*) FROM clicks
            GROUP BY TUMBLE(ts, INTERVAL '10' SECOND);
        INSERT INTO hopped SELECT window_start, COUNT(*) FROM TABLE(HOP(TABLE clicks,
            DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
            GROUP BY window_start, window_end;
        END""")
    assert result.columns == ["default_catalog.default_database.tumbled",
                              "default_catalog.default_database.hopped"]
    seconds = [1, 3, 4, 8, 25]
    (source / "c.csv").write_text("".join(
        f"{T0 + dt.timedelta(seconds=s):%Y-%m-%d %H:%M:%S},u{s}\n" for s in seconds))
    log = sc_home / "sessions" / "itest" / "jobmanager.log"

    def printed() -> list[str]:
        # Flink's print prefix: "hop-windows:<subtask>> " when the sink has several subtasks
        return [line.split("> ", 1)[1] for line in log.read_text().splitlines()
                if re.match(r"hop-windows(:\d+)?> ", line)]

    wait_for(lambda: len(printed()) >= 3 and sink_rows(sink))
    time.sleep(3)
    assert sink_rows(sink) == [[f"{T0:%Y-%m-%d %H:%M:%S}", "4"]]
    day = f"{T0:%Y-%m-%d}"
    assert sorted(printed()) == [f"+I[{day}T07:59:55, 3]", f"+I[{day}T08:00, 4]",
                                 f"+I[{day}T08:00:05, 1]"]
    session.job(result.job_id).cancel()
    wait_for(lambda: status(session, result.job_id) is JobStatus.CANCELED, 60)


def python_sessions(events: list[tuple[int, str]], gap: int) -> set[tuple[int, int, str, int]]:
    """Flink's session windows in plain Python: per word, a session spans its records' times
    plus the gap; records closer than the gap share one. (start, end, word, count)."""
    sessions: set[tuple[int, int, str, int]] = set()
    for word in {w for _, w in events}:
        times = sorted(t for t, w in events if w == word)
        start = last = times[0]
        n = 0
        for t in times:
            if t > last + gap:
                sessions.add((start, last + gap, word, n))
                start, n = t, 0
            last, n = t, n + 1
        sessions.add((start, last + gap, word, n))
    return sessions


def test_session_windows_of_sql_legacy_sql_and_the_table_api_over_a_view(
        session, tmp_path: Path) -> None:
    """One streaming job of three INSERTs, each a 5-s session window count per word: the
    SESSION window TVF over a temporary VIEW of the stream, the legacy GROUP BY SESSION(...),
    and the Table API's Session.with_gap. Each session is emitted once, after the watermark
    passed its end; the sessions still open are not."""
    from sessioncluster.client.table_environment import TableEnvironment
    from sessioncluster.pyflink.table import EnvironmentSettings
    from sessioncluster.pyflink.table.expressions import col, lit
    from sessioncluster.pyflink.table.window import Session

    source = tmp_path / "visits"
    source.mkdir()
    sinks = {name: tmp_path / name for name in ("by_tvf", "by_legacy", "by_table_api")}
    for name in ("visits", *sinks):
        sql(session, f"DROP TABLE IF EXISTS {name}")
    sql(session, "DROP TEMPORARY VIEW IF EXISTS real_visits")
    sql(session, f"""
        CREATE TABLE visits (ts TIMESTAMP(3), word STRING,
            WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
        WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv',
              'source.monitor-interval' = '1s')""")
    sql(session, "CREATE TEMPORARY VIEW real_visits AS SELECT ts, word FROM visits "
                 "WHERE word <> 'bot'")
    for name, path in sinks.items():
        path.mkdir()
        sql(session, f"""CREATE TABLE {name} (s TIMESTAMP(3), e TIMESTAMP(3), word STRING,
            cnt BIGINT) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')""")
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode(), session=session)
    by_table_api = (t_env.from_path("real_visits")
                    .window(Session.with_gap(lit(5).seconds).on(col("ts")).alias("w"))
                    .group_by(col("w"), col("word"))
                    .select(col("w").start, col("w").end, col("word"), col("word").count))
    result = (t_env.create_statement_set()
              .add_insert_sql("""INSERT INTO by_tvf SELECT window_start, window_end, word,
                  COUNT(*) FROM TABLE(SESSION(TABLE real_visits PARTITION BY word,
                  DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY window_start, window_end, word""")
              .add_insert_sql("""INSERT INTO by_legacy SELECT SESSION_START(ts, INTERVAL '5'
                  SECOND), SESSION_END(ts, INTERVAL '5' SECOND), word, COUNT(*) FROM real_visits
                  GROUP BY SESSION(ts, INTERVAL '5' SECOND), word""")
              .add_insert("by_table_api", by_table_api)
              .execute())
    job_id = result.get_job_client().get_job_id()
    assert status(session, job_id) is JobStatus.RUNNING

    files = [[(1, "a"), (3, "a"), (2, "b"), (4, "bot"), (7, "a")],  # a: [1, 12); b: [2, 7)
             [(20, "a"), (21, "b"), (22, "bot")],   # watermark 21: a [1, 12), b [2, 7) close
             [(40, "b")]]                           # watermark 39: a [20, 25), b [21, 26) close
    events: list[tuple[int, str]] = []
    for k, batch in enumerate(files):
        events += [(t, w) for t, w in batch if w != "bot"]
        tmp = source / f".v{k}.csv"
        tmp.write_text("".join(f"{T0 + dt.timedelta(seconds=t):%Y-%m-%d %H:%M:%S},{w}\n"
                               for t, w in batch))
        tmp.rename(source / f"v{k}.csv")
        if k:
            wait_for(lambda k=k: all(len(sink_rows(p)) >= 2 * k for p in sinks.values()))

    def stamp(s: int) -> str:
        return f"{T0 + dt.timedelta(seconds=s):%Y-%m-%d %H:%M:%S}"

    closed = {x for x in python_sessions(events, 5) if x[1] <= 39}  # the watermark: 39 s
    expected = sorted((stamp(s), stamp(e), w, n) for s, e, w, n in closed)
    assert len(expected) == 4
    time.sleep(3)  # later micro-batches emit nothing more
    for name, path in sinks.items():
        got = sorted((s, e, w, int(c)) for s, e, w, c in sink_rows(path))
        assert got == expected, name  # each session once, the open one ([40, 45) of b) not
    session.job(job_id).cancel()
    wait_for(lambda: status(session, job_id) is JobStatus.CANCELED, 60)


def test_a_print_sinks_lines_reach_the_client_that_waits(session, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    """PyFlink's word_count example writes into a print table and calls ``.wait()``: the
    lines are printed at the client (as an attached DataStream job's ``print()`` lines), in
    BATCH when the statement ends and in STREAMING as each micro-batch commits; a
    ``'standard-error'`` table's lines on standard error."""
    import threading

    from sessioncluster.pyflink.table import EnvironmentSettings, TableEnvironment

    batch = TableEnvironment.create(EnvironmentSettings.in_batch_mode(), session=session)
    batch.execute_sql("""CREATE TABLE printed_batch (word STRING, n BIGINT)
        WITH ('connector' = 'print', 'print-identifier' = 'b')""")
    words = batch.from_elements([("a",), ("b",), ("a",)], ["word"])
    words.group_by(words.word).select(words.word, words.word.count).execute_insert(
        "printed_batch").wait()
    assert sorted(capsys.readouterr().out.splitlines()) == ["b> +I[a, 2]", "b> +I[b, 1]"]

    source = tmp_path / "words"
    source.mkdir()
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode(), session=session)
    t_env.execute_sql(f"""CREATE TABLE printed_source (word STRING) WITH ('connector' =
        'filesystem', 'path' = '{source}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    t_env.execute_sql("CREATE TABLE printed_live (word STRING, n BIGINT) WITH ('connector' = "
                      "'print')")
    t_env.execute_sql("CREATE TABLE printed_err (word STRING) WITH ('connector' = 'print', "
                      "'print-identifier' = 'e', 'standard-error' = 'true')")
    statements = t_env.create_statement_set()
    statements.add_insert_sql("INSERT INTO printed_live SELECT word, COUNT(*) FROM "
                              "printed_source GROUP BY word")
    statements.add_insert_sql("INSERT INTO printed_err SELECT word FROM printed_source")
    result = statements.execute()
    waiter = threading.Thread(target=result.wait, daemon=True)
    waiter.start()
    seen: list[str] = []
    seen_err: list[str] = []
    for k, (words_in, lines) in enumerate([(["x", "x"], ["+I[x, 2]"]),
                                           (["x", "y"], ["-U[x, 2]", "+U[x, 3]", "+I[y, 1]"])]):
        tmp = source / f".f{k}.csv"
        tmp.write_text("".join(f"{w}\n" for w in words_in))
        tmp.rename(source / f"f{k}.csv")
        deadline = time.monotonic() + 120
        while ((len(seen) < len(lines) or len(seen_err) < len(words_in))
               and time.monotonic() < deadline):
            captured = capsys.readouterr()
            seen += captured.out.splitlines()
            seen_err += captured.err.splitlines()
            time.sleep(0.25)
        assert sorted(seen) == sorted(lines)  # standard error's lines kept apart
        assert sorted(seen_err) == sorted(f"e> +I[{w}]" for w in words_in)
        seen.clear()
        seen_err.clear()
    result.get_job_client().cancel()
    waiter.join(60)
    assert not waiter.is_alive()  # wait() ended with the job


def _each_file_gives(source: Path, iterator: Any, files: list[list[str]],
                    expected: list[list[str]], shown: Callable[[Any], str]) -> None:
    """Drop each file of ``files`` into the monitored ``source`` (one micro-batch each) and
    check that the iterator's next rows, ``shown``, are that file's ``expected`` ones."""
    for k, (lines, rows) in enumerate(zip(files, expected)):
        tmp = source / f".f{k}.csv"
        tmp.write_text("".join(f"{line}\n" for line in lines))
        tmp.rename(source / f"f{k}.csv")  # one file: one micro-batch
        got = [next(iterator) for _ in rows]
        assert sorted(shown(r) for r in got) == sorted(rows)


def test_a_python_aggregate_function_in_a_streaming_group_aggregation(
        session, tmp_path: Path) -> None:
    """Keyed state (issue 27): the changes after each file are PyFlink 2.3's
    (/work/briefs/data/udafstream/probe1.out, [a]); y unchanged by file 2 emits nothing."""
    from sessioncluster.pyflink.table import EnvironmentSettings, TableEnvironment
    from sessioncluster.pyflink.table.udf import udaf

    from tests.unit.test_flinksql_python_aggregate import WeightedAvg  # shipped by value

    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode(), session=session)
    t_env.create_temporary_system_function(
        "wavg", udaf(WeightedAvg(), result_type="DOUBLE", accumulator_type="ARRAY<BIGINT>"))
    source = tmp_path / "weighted"
    source.mkdir()
    t_env.execute_sql(f"""CREATE TABLE weighted (k STRING, v BIGINT, w BIGINT) WITH (
        'connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv',
        'source.monitor-interval' = '1s')""")
    iterator = t_env.execute_sql("SELECT k, wavg(v, w) AS a FROM weighted GROUP BY k").collect()
    files = [["x,2,1", "x,4,1", "y,5,2"], ["x,3,5", "y,1,2", "z,7,1"], ["y,3,4", "x,9,2"]]
    flink = [["+I[x, 3.0]", "+I[y, 5.0]"], ["+I[z, 7.0]", "+U[y, 3.0]", "-U[y, 5.0]"],
             ["+U[x, 4.333333333333333]", "-U[x, 3.0]"]]
    try:
        _each_file_gives(source, iterator, files, flink,
                         lambda r: f"{r.get_row_kind().short_string()}[{r[0]}, {r[1]}]")
    finally:
        iterator.close()
        t_env.execute_sql("DROP TABLE IF EXISTS weighted")


def test_a_pandas_aggregate_function_in_the_table_apis_group_window(
        session, tmp_path: Path) -> None:
    """The Table API's ``window(Tumble...)`` with a pandas UDAF over an unbounded table: each
    window once, when the watermark passes its end (PyFlink 2.3's PythonGroupWindowAggregate,
    /work/briefs/data/udafwin/probe2.out, [d3])."""
    from sessioncluster.pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment
    from sessioncluster.pyflink.table.expressions import col, lit
    from sessioncluster.pyflink.table.udf import udaf
    from sessioncluster.pyflink.table.window import Tumble

    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode(), session=session)
    pmean = udaf(lambda v: float(v.mean()), result_type=DataTypes.DOUBLE(), func_type="pandas")
    source = tmp_path / "windowed"
    source.mkdir()
    t_env.execute_sql(f"""CREATE TABLE windowed (k STRING, v BIGINT, ts TIMESTAMP(3),
        WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem',
        'path' = '{source}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    table = t_env.from_path("windowed") \
        .window(Tumble.over(lit(10).seconds).on(col("ts")).alias("w")) \
        .group_by(col("w"), col("k")) \
        .select(col("k"), col("w").start, col("w").end, pmean(col("v")).alias("p"))
    iterator = table.execute().collect()
    files = [["x,2,2026-01-01 00:00:01", "x,4,2026-01-01 00:00:02", "y,5,2026-01-01 00:00:03"],
             ["x,3,2026-01-01 00:00:05", "y,1,2026-01-01 00:00:13", "z,7,2026-01-01 00:00:14"],
             ["y,3,2026-01-01 00:00:25", "x,9,2026-01-01 00:00:26"]]
    flink = [[], ["+I[x, 00:00:00, 3.0]", "+I[y, 00:00:00, 5.0]"],
             ["+I[y, 00:00:10, 1.0]", "+I[z, 00:00:10, 7.0]"]]
    try:
        _each_file_gives(source, iterator, files, flink, lambda r: (
            f"{r.get_row_kind().short_string()}[{r[0]}, {r[1]:%H:%M:%S}, {r[3]}]"))
    finally:
        iterator.close()
        t_env.execute_sql("DROP TABLE IF EXISTS windowed")
