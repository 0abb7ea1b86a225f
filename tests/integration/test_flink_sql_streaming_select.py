"""A streaming SELECT on a real session (issue 28): it runs as a job of the session whose rows,
with their RowKind, reach the client as the job produces them (``TableResult.collect()``);
closing the iterator cancels the job; a bounded source ends it FINISHED and ends the iterator;
``print()`` prints Flink's tableau with its ``op`` column."""

from __future__ import annotations

import collections
import io
import queue
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

import sessioncluster
from sessioncluster.common import RuntimeExecutionMode
from sessioncluster.common.types import RowKind
from sessioncluster.graph.lifecycle import JobStatus
from sessioncluster.pyflink.table import EnvironmentSettings, TableEnvironment

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_new_tables")]

STREAMING = RuntimeExecutionMode.STREAMING



@pytest.fixture()
def t_env(session: sessioncluster.Session) -> Any:
    return TableEnvironment.create(EnvironmentSettings.in_streaming_mode(), session=session)


def wait_for(what: Callable[[], object], timeout: float = 120.0) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = what()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"not reached within {timeout} s: {what}")


def expected_changelog(files: list[list[str]]) -> list[list[tuple[str, str, int]]]:
    """Flink's changelog of ``SELECT word, COUNT(*) GROUP BY word``, one micro-batch per file,
    computed in plain Python: +I for a new word, -U old / +U new for a counted one."""
    counts: collections.Counter[str] = collections.Counter()
    out = []
    for words in files:
        batch = []
        for word, n in collections.Counter(words).items():
            if counts[word]:
                batch += [("-U", word, counts[word]), ("+U", word, counts[word] + n)]
            else:
                batch.append(("+I", word, n))
            counts[word] += n
        out.append(batch)
    return out


def test_collect_of_an_updating_query_over_a_monitored_directory(session, t_env,
                                                                  tmp_path: Path) -> None:
    source = tmp_path / "words"
    source.mkdir()
    t_env.execute_sql(f"""CREATE TABLE live_words (word STRING) WITH ('connector' =
        'filesystem', 'path' = '{source}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    result = t_env.execute_sql("SELECT word, COUNT(*) AS cnt FROM live_words GROUP BY word")
    job_id = result.get_job_client().get_job_id()
    assert result.get_table_schema().get_field_names() == ["word", "cnt"]
    assert session.job(job_id).get_job_status() is JobStatus.RUNNING

    rows: queue.Queue[Any] = queue.Queue()
    iterator = result.collect()

    def read() -> None:
        for row in iterator:
            rows.put(row)
        rows.put(None)  # the iterator ended

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    files = [["x", "y", "x"], ["x"], ["z", "y", "z", "x"]]
    for k, (words, batch) in enumerate(zip(files, expected_changelog(files))):
        tmp = source / f".f{k}.csv"
        tmp.write_text("".join(f"{w}\n" for w in words))
        tmp.rename(source / f"f{k}.csv")  # one file: one micro-batch
        got = [rows.get(timeout=120) for _ in batch]
        assert sorted((r.get_row_kind().short_string(), r[0], r[1]) for r in got) \
            == sorted(batch)
        for r in got:  # an update's -U comes before its +U
            if r.get_row_kind() is RowKind.UPDATE_AFTER:
                before = [g for g in got if g[0] == r[0]
                          and g.get_row_kind() is RowKind.UPDATE_BEFORE]
                assert got.index(before[0]) < got.index(r)
    time.sleep(2)
    assert rows.empty()  # later micro-batches bring nothing

    iterator.close()  # closing cancels the job, as PyFlink's
    wait_for(lambda: session.job(job_id).get_job_status() is JobStatus.CANCELED, 60)
    assert rows.get(timeout=30) is None  # and the reader's iteration ended
    reader.join(10)


def test_bounded_select_finishes_and_prints_flinks_tableau(session, t_env,
                                                           tmp_path: Path) -> None:
    source = tmp_path / "bids"
    source.mkdir()
    (source / "a.csv").write_text("apple,3\npear,5\napple,4\nplum,1\n")
    t_env.execute_sql(f"""CREATE TABLE bounded_bids (item STRING, price INT) WITH (
        'connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv')""")
    result = t_env.execute_sql("SELECT item, price FROM bounded_bids WHERE price > 2")
    with result.collect() as rows:
        got = list(rows)  # ends: the source is bounded
    assert sorted((r[0], r[1]) for r in got) == [("apple", 3), ("apple", 4), ("pear", 5)]
    assert {r.get_row_kind() for r in got} == {RowKind.INSERT}
    job_id = result.get_job_client().get_job_id()
    wait_for(lambda: session.job(job_id).get_job_status() is JobStatus.FINISHED, 60)

    table = t_env.sql_query("SELECT item, SUM(price) AS total FROM bounded_bids GROUP BY item")
    out = io.StringIO()
    table.execute().print(file=out)
    lines = out.getvalue().splitlines()
    assert lines[1].split("|")[1].strip() == "op"
    assert [c.strip() for c in lines[1].split("|")[2:4]] == ["item", "total"]
    # Flink 2.3 runs it as a streaming job too: its changelog record by record, in the file's
    # order (checked with PyFlink 2.3 at parallelism 1)
    body = [tuple(c.strip() for c in line.split("|")[1:4]) for line in lines[3:-2]]
    assert body == [("+I", "apple", "3"), ("+I", "pear", "5"), ("-U", "apple", "3"),
                    ("+U", "apple", "7"), ("+I", "plum", "1")]
    assert lines[-1] == "5 rows in set"
    frame = table.to_pandas()  # the changelog applied, until the job ends
    assert sorted(map(tuple, frame.values.tolist())) == [("apple", 7), ("pear", 5), ("plum", 1)]


def test_streaming_select_over_views_of_a_monitored_directory(session, tmp_path: Path) -> None:
    """A streaming SELECT reads a temporary view (and views of it, one of them updating) as a
    stream of the table under it: the count over the views goes on as files arrive, its
    changes keyed by the view's key."""
    source = tmp_path / "viewed"
    source.mkdir()

    def sql(text: str) -> Any:
        return session.execute_sql(text, runtime_mode=STREAMING)

    sql(f"""CREATE TABLE viewed_words (word STRING, n INT) WITH ('connector' = 'filesystem',
        'path' = '{source}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    sql("CREATE TEMPORARY VIEW big_words AS SELECT UPPER(word) AS word, n FROM viewed_words "
        "WHERE n > 1")
    sql("CREATE TEMPORARY VIEW big_word_names AS SELECT word FROM big_words")
    sql("CREATE TEMPORARY VIEW big_word_counts AS SELECT word, COUNT(*) AS cnt "
        "FROM big_word_names GROUP BY word")  # an updating view
    try:
        result = sql("SELECT cnt, word FROM big_word_counts")  # keyed by word, its key
        assert result.live == "update" and result.columns == ["cnt", "word"]
        client = session.job(result.job_id)
        assert client.get_job_status() is JobStatus.RUNNING
        files = [[("x", 2), ("y", 1), ("x", 5)], [("y", 3), ("z", 0), ("x", 9)]]
        counts: collections.Counter[str] = collections.Counter()
        table: dict[str, int] = {}
        with client.stream() as stream:
            for k, rows in enumerate(files):
                tmp = source / f".f{k}.csv"
                tmp.write_text("".join(f"{w},{n}\n" for w, n in rows))
                tmp.rename(source / f"f{k}.csv")
                counts.update(w.upper() for w, n in rows if n > 1)
                while table != dict(counts):
                    kind, (cnt, word) = next(stream)
                    if kind in ("+I", "+U"):
                        table[word] = cnt
                    else:  # -U: the row emitted before for the same word
                        assert table.pop(word) == cnt
        wait_for(lambda: client.get_job_status() is JobStatus.CANCELED, 60)
        assert table == {"X": 3, "Y": 1}
    finally:
        sql("DROP TEMPORARY VIEW IF EXISTS big_word_counts")
        sql("DROP TEMPORARY VIEW IF EXISTS big_word_names")
        sql("DROP TEMPORARY VIEW IF EXISTS big_words")


def test_the_job_keeps_the_newest_max_rows_of_an_append_only_result(session,
                                                                    tmp_path: Path) -> None:
    """``sql-client.execution.max-table-result.rows`` (a cell's ``--max-rows``) bounds an
    append-only SELECT's result buffer on the JobManager: the newest rows reach the client,
    the older ones are dropped unread and counted."""
    source = tmp_path / "many"
    source.mkdir()
    (source / "n.csv").write_text("".join(f"{i}\n" for i in range(10)))
    session.execute_sql(f"""CREATE TABLE many_numbers (n INT) WITH ('connector' = 'filesystem',
        'path' = '{source}', 'format' = 'csv')""")
    options = {"sql-client.execution.max-table-result.rows": "3"}

    def read(query: str) -> tuple[list[Any], int]:
        result = session.execute_sql(query, runtime_mode=STREAMING, configuration=options)
        stream = session.job(result.job_id).stream()
        rows = list(stream)  # bounded: its rows come as one batch, and the job FINISHES
        return rows, stream.dropped

    rows, dropped = read("SELECT n FROM many_numbers")
    assert sorted(values[0] for _, values in rows) == [7, 8, 9] and dropped == 7
    with pytest.raises(Exception, match="positive integer"):
        session.execute_sql("SELECT n FROM many_numbers", runtime_mode=STREAMING,
                            configuration={"sql-client.execution.max-table-result.rows": "x"})


def test_an_aggregation_of_an_updating_view_over_a_monitored_directory(
        session, t_env, tmp_path: Path) -> None:
    """How many words have each count: a GROUP BY over a GROUP BY's result (Flink retracts
    the inner changes, COUNT_RETRACT). After each micro-batch the changes bring the result to
    plain Python's; a count no word has any more is deleted (-D)."""
    source = tmp_path / "words"
    source.mkdir()
    t_env.execute_sql(f"""CREATE TABLE tally_words (word STRING) WITH ('connector' =
        'filesystem', 'path' = '{source}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    t_env.execute_sql("CREATE TEMPORARY VIEW word_counts AS "
                      "SELECT word, COUNT(*) AS n FROM tally_words GROUP BY word")
    result = t_env.execute_sql("SELECT n, COUNT(*) AS words FROM word_counts GROUP BY n")
    assert result.get_table_schema().get_field_names() == ["n", "words"]
    iterator = result.collect()
    rows: queue.Queue[Any] = queue.Queue()
    threading.Thread(target=lambda: [rows.put(r) for r in iterator], daemon=True).start()
    counts: collections.Counter[str] = collections.Counter()
    shown: dict[int, int] = {}
    try:
        for k, words in enumerate([["x", "y", "x"], ["x"], ["z", "y", "z", "x"]]):
            counts.update(words)
            expected = dict(collections.Counter(counts.values()))
            changes = [("-D", n, c) for n, c in shown.items() if n not in expected] + [
                (("+U" if n in shown else "+I"), n, c) for n, c in expected.items()
                if shown.get(n) != c] + [("-U", n, shown[n]) for n, c in expected.items()
                                         if n in shown and shown[n] != c]
            tmp = source / f".f{k}.csv"
            tmp.write_text("".join(f"{w}\n" for w in words))
            tmp.rename(source / f"f{k}.csv")
            got = [rows.get(timeout=120) for _ in changes]
            assert sorted((r.get_row_kind().short_string(), r[0], r[1]) for r in got) \
                == sorted(changes)
            for r in got:
                if r.get_row_kind() in (RowKind.INSERT, RowKind.UPDATE_AFTER):
                    shown[r[0]] = r[1]
                elif r.get_row_kind() is RowKind.DELETE:
                    del shown[r[0]]
            assert shown == expected
    finally:
        iterator.close()
        t_env.execute_sql("DROP TEMPORARY VIEW word_counts")


def test_a_join_with_a_bounded_table_and_a_top_n_over_an_updating_view(
        session, t_env, tmp_path: Path) -> None:
    """Word counts over a monitored directory joined with a bounded table of descriptions (two
    rows for ``b``), and the two most frequent words (``ROW_NUMBER() ... <= 2``): Flink runs both
    over the counts' changes; here each runs over the counts' result after each micro-batch.
    Each round's changes: a match whose count changed is updated (-U/+U, as Flink's join
    forwards its input's update), and the result equals plain Python's."""
    source, dims = tmp_path / "words", tmp_path / "dims"
    source.mkdir()
    dims.mkdir()
    (dims / "d.csv").write_text("x,ex\ny,why\ny,wye\n")
    t_env.execute_sql(f"""CREATE TABLE joined_words (word STRING) WITH ('connector' =
        'filesystem', 'path' = '{source}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    t_env.execute_sql(f"""CREATE TABLE word_dims (word STRING, descr STRING) WITH (
        'connector' = 'filesystem', 'path' = '{dims}', 'format' = 'csv')""")
    t_env.execute_sql("CREATE TEMPORARY VIEW joined_counts AS "
                      "SELECT word, COUNT(*) AS n FROM joined_words GROUP BY word")
    joined = t_env.execute_sql("SELECT c.word, c.n, d.descr FROM joined_counts c "
                               "JOIN word_dims d ON c.word = d.word")
    top = t_env.execute_sql("SELECT word, n FROM (SELECT word, n, ROW_NUMBER() OVER (ORDER BY "
                            "n DESC, word) AS rn FROM joined_counts) WHERE rn <= 2")
    queues: list[queue.Queue[Any]] = []
    iterators = [joined.collect(), top.collect()]
    for iterator in iterators:
        q: queue.Queue[Any] = queue.Queue()
        threading.Thread(target=lambda i=iterator, q=q: [q.put(r) for r in i],
                         daemon=True).start()
        queues.append(q)
    descriptions = {"x": ["ex"], "y": ["why", "wye"]}
    counts: collections.Counter[str] = collections.Counter()
    shown: list[collections.Counter[tuple[Any, ...]]] = [collections.Counter(),
                                                          collections.Counter()]
    try:
        for k, words in enumerate([["x", "y", "x"], ["y", "z"], ["z", "z", "y"]]):
            before_join = {(w, counts[w], d) for w in counts for d in descriptions.get(w, [])}
            counts.update(words)
            expected = [
                collections.Counter((w, n, d) for w, n in counts.items()
                                    for d in descriptions.get(w, [])),
                collections.Counter(sorted(counts.items(), key=lambda c: (-c[1], c[0]))[:2])]
            tmp = source / f".f{k}.csv"
            tmp.write_text("".join(f"{w}\n" for w in words))
            tmp.rename(source / f"f{k}.csv")
            for i, q in enumerate(queues):
                deadline = time.monotonic() + 120
                while shown[i] != expected[i] and time.monotonic() < deadline:
                    try:
                        row = q.get(timeout=1)
                    except queue.Empty:
                        continue
                    kind = row.get_row_kind()
                    if i == 0 and kind in (RowKind.UPDATE_BEFORE, RowKind.DELETE):
                        assert tuple(row) in before_join  # retracts what it emitted
                    change = 1 if kind in (RowKind.INSERT, RowKind.UPDATE_AFTER) else -1
                    shown[i][tuple(row)] += change
                    shown[i] = +shown[i]
                assert shown[i] == expected[i], (k, i)
        time.sleep(2)
        assert all(q.empty() for q in queues)  # nothing more, and nothing twice
    finally:
        for iterator in iterators:
            iterator.close()
        t_env.execute_sql("DROP TEMPORARY VIEW joined_counts")
