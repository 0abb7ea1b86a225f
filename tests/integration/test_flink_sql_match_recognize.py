"""MATCH_RECOGNIZE on a real session: in BATCH and in STREAMING over a bounded filesystem table,
the rows real Flink 2.3 printed for the same statements over the same file (parallelism 1; in
STREAMING all ``+I``, in the order Flink emitted them); over a monitored directory (unbounded)
the matches as the watermark passes their rows, files dropped over several micro-batches."""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import sessioncluster
from sessioncluster.pyflink.table import EnvironmentSettings, TableEnvironment

from .test_flink_sql_temporal_join import write_csv

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_new_tables")]

#: id, symbol, rowtime (10:00:<second>), price, tax: the two symbols interleaved, no ties
TICKER = [(1, "ACME", 0, 12, 1), (12, "BETA", 1, 30, 1), (2, "ACME", 2, 17, 2),
          (13, "BETA", 3, 28, 2), (3, "ACME", 4, 19, 1), (14, "BETA", 5, 26, 3),
          (4, "ACME", 6, 21, 3), (15, "BETA", 7, 29, 1), (5, "ACME", 8, 25, 2),
          (16, "BETA", 9, 27, 2), (6, "ACME", 10, 18, 1), (17, "BETA", 11, 31, 2),
          (7, "ACME", 12, 15, 1), (18, "BETA", 13, 25, 1), (8, "ACME", 14, 14, 2),
          (9, "ACME", 16, 24, 2), (10, "ACME", 18, 25, 2), (11, "ACME", 20, 19, 1)]


def query(measures: str, pattern: str, define: str, skip: str = "PAST LAST ROW",
          partition: str = "PARTITION BY symbol", within: str = "") -> str:
    return (f"SELECT * FROM ticker_mr MATCH_RECOGNIZE ({partition} ORDER BY rowtime "
            f"MEASURES {measures} ONE ROW PER MATCH AFTER MATCH SKIP {skip} PATTERN ({pattern}) "
            f"{within} DEFINE {define}) AS T")


TS = "2024-01-01 10:00:{:02d}"
DOCS = query(
    "START_ROW.rowtime AS start_tstamp, LAST(PRICE_DOWN.rowtime) AS bottom_tstamp, "
    "LAST(PRICE_UP.rowtime) AS end_tstamp", "START_ROW PRICE_DOWN+ PRICE_UP",
    "PRICE_DOWN AS (LAST(PRICE_DOWN.price, 1) IS NULL AND PRICE_DOWN.price < START_ROW.price) "
    "OR PRICE_DOWN.price < LAST(PRICE_DOWN.price, 1), "
    "PRICE_UP AS PRICE_UP.price > LAST(PRICE_DOWN.price, 1)", skip="TO LAST PRICE_UP")
RELUCTANT = query("FIRST(A.id) AS fa, LAST(A.id) AS la, B.id AS bid", "A+? B",
                  "A AS A.price > 15, B AS B.price > 20")
SKIP_TO_FIRST = query("A.id AS aid, FIRST(B.id) AS fb, C.id AS cid", "A B+ C",
                      "A AS A.price > 0, B AS B.tax = 2, C AS C.tax <> 2", skip="TO FIRST B")
MEASURES = query("LAST(B.price) - FIRST(A.price) AS rise, CAST(AVG(A.price) AS DOUBLE) AS ap, "
                 "SUM(A.tax) + 1 AS st, MATCH_ROWTIME() AS mt, LAST(A.rowtime) AS lt", "A+ B",
                 "A AS A.price > 15, B AS B.price <= 20")
WITHIN = query("FIRST(A.id) AS fa, LAST(A.id) AS la, B.id AS bid", "A+ B",
               "A AS A.price > 15, B AS B.price <= 20", within="WITHIN INTERVAL '5' SECOND")
NO_PARTITION = query("FIRST(A.id) AS fa, LAST(A.id) AS la, LAST(A.symbol) AS sym, "
                     "MAX(A.price) AS mx, MIN(A.price) AS mn", "A{3}", "A AS A.tax < 3",
                     partition="")
OUTER = query("FIRST(A.id) AS fa, COUNT(A.id) AS c", "A+ B",
              "A AS A.price > 15, B AS B.price <= 20").replace(
    "SELECT *", "SELECT symbol, SUM(c) AS total") + " GROUP BY symbol"

#: Flink 2.3's STREAMING printout (all +I), in its order; its BATCH rows are the same set
RECORDED = {
    DOCS: [("BETA", TS.format(1), TS.format(5), TS.format(7)),
           ("ACME", TS.format(8), TS.format(14), TS.format(16))],
    RELUCTANT: [("BETA", "12", "12", "13"), ("ACME", "2", "3", "4"), ("BETA", "14", "14", "15"),
                ("BETA", "16", "16", "17"), ("ACME", "9", "9", "10")],
    SKIP_TO_FIRST: [("ACME", "1", "2", "3"), ("BETA", "12", "13", "14"), ("ACME", "4", "5", "6"),
                    ("BETA", "15", "16", "18"), ("BETA", "16", "17", "18"),
                    ("ACME", "7", "8", "11"), ("ACME", "8", "9", "11"), ("ACME", "9", "10", "11")],
    MEASURES: [("ACME", "-2", "20.0", "10", TS.format(12), TS.format(10))],
    WITHIN: [("ACME", "5", "6", "7")],
    NO_PARTITION: [("1", "2", "ACME", "30", "12"), ("15", "16", "BETA", "29", "25"),
                   ("6", "7", "ACME", "31", "15"), ("18", "9", "ACME", "25", "14")],
    OUTER: [("ACME", "5")],
}


def create_ticker(t_env: Any, directory: Path, monitored: bool = False,
                  rows: list[tuple[Any, ...]] = TICKER) -> None:
    directory.mkdir()
    if rows:
        (directory / "ticker.csv").write_text("".join(
            f"{i},{s},{TS.format(sec)},{p},{t}\n" for i, s, sec, p, t in rows))
    monitor = ", 'source.monitor-interval' = '1s'" if monitored else ""
    t_env.execute_sql(f"""CREATE TABLE ticker_mr (id INT, symbol STRING, rowtime TIMESTAMP(3),
        price INT, tax INT, WATERMARK FOR rowtime AS rowtime - INTERVAL '1' SECOND)
        WITH ('connector' = 'filesystem', 'path' = '{directory}', 'format' = 'csv'{monitor})""")


def printed(t_env: Any, sql: str) -> list[tuple[str, tuple[str | None, ...]]]:
    with t_env.execute_sql(sql).collect() as rows:
        return [(r.get_row_kind().short_string(),
                 tuple(None if v is None else str(v) for v in r)) for r in rows]


def env(session: sessioncluster.Session, settings: Any) -> Any:
    t_env = TableEnvironment.create(settings, session=session)
    t_env.get_config().set("parallelism.default", "1")
    return t_env


def test_batch_gives_flinks_rows(session: sessioncluster.Session, tmp_path: Path) -> None:
    t_env = env(session, EnvironmentSettings.in_batch_mode())
    create_ticker(t_env, tmp_path / "ticker")
    for sql, rows in RECORDED.items():
        assert sorted(row for _, row in printed(t_env, sql)) == sorted(rows), sql


def test_streaming_over_a_bounded_table_gives_flinks_printout(
        session: sessioncluster.Session, tmp_path: Path) -> None:
    t_env = env(session, EnvironmentSettings.in_streaming_mode())
    create_ticker(t_env, tmp_path / "ticker")
    for sql in (DOCS, RELUCTANT, SKIP_TO_FIRST, MEASURES, NO_PARTITION, OUTER):
        assert printed(t_env, sql) == [("+I", row) for row in RECORDED[sql]], sql


#: the ticker over a monitored directory, a file at a time: its first and second halves; a row
#: late by then (10:00:03, the watermark at 10:00:19: dropped, as Flink drops it); rows of ACME
#: at 10:00:40 and :45, and one of another symbol whose watermark passes all the others
FILES = [[r for r in TICKER if r[2] < 10], [r for r in TICKER if r[2] >= 10],
         [(99, "ACME", 3, 5, 1)],
         [(100, "ACME", 40, 30, 1), (102, "ACME", 45, 20, 1), (101, "ZETA", 59, 1, 9)]]
BY_SYMBOL = query("FIRST(A.id) AS fa, LAST(A.id) AS la, MAX(A.price) AS mx", "A{3}",
                  "A AS A.tax < 3")
#: Flink 2.3's printout of BY_SYMBOL after each file (its probe wrote them 8 s apart): the
#: matches whose last row the file's watermark passes (the late row kept would have made
#: ACME's last one 99, 11, 100)
UNBOUNDED = [[("ACME", "1", "3", "19")],
             [("ACME", "5", "7", "25"), ("ACME", "8", "10", "25"), ("BETA", "15", "17", "31")],
             [], [("ACME", "11", "102", "30")]]


#: a GROUP BY and a TUMBLE window over MATCH_ROWTIME() reading BY_SYMBOL's matches (a view)
GROUPED = f"SELECT symbol, COUNT(*) AS c, MAX(mx) AS m FROM ({BY_SYMBOL}) GROUP BY symbol"
WINDOWED = ("SELECT window_start, window_end, COUNT(*) AS c, MAX(mx) AS m FROM TABLE(TUMBLE("
            "TABLE matches_mr, DESCRIPTOR(mt), INTERVAL '10' SECOND)) "
            "GROUP BY window_start, window_end")
#: Flink 2.3's printouts of GROUPED and WINDOWED after each file (probe_unbounded.py and .out
#: of /work/briefs/data/matchrec3, the same files 10 s apart)
FLINK_GROUPED = [[("+I", "ACME", "1", "19")],
                 [("+I", "BETA", "1", "31"), ("-U", "ACME", "1", "19"),
                  ("+U", "ACME", "2", "25"), ("-U", "ACME", "2", "25"),
                  ("+U", "ACME", "3", "25")],
                 [], [("-U", "ACME", "3", "25"), ("+U", "ACME", "4", "30")]]
FLINK_WINDOWED = [[], [("+I", TS.format(0), TS.format(10), "1", "19")], [],
                  [("+I", TS.format(10), TS.format(20), "3", "31"),
                   ("+I", TS.format(40), TS.format(50), "1", "30")]]


def per_micro_batch(changes: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Flink's changes of one file by key, each key's in one ``-U``/``+U`` pair (or one ``+I``):
    this cluster emits an updating query's changes per key and micro-batch (:mod:`.updating`),
    Flink's GroupAggregate every change on the way."""
    out = []
    for key in sorted({c[1] for c in changes}):
        of_key = [c for c in changes if c[1] == key]
        out += [of_key[0], of_key[-1]] if of_key[0][0] == "-U" else [("+I", *of_key[-1][1:])]
    return out


def collected(t_env: Any, sql: str) -> tuple[Any, queue.Queue[Any]]:
    """The query's rows as they come, read by a thread into a queue."""
    got: queue.Queue[Any] = queue.Queue()
    iterator = t_env.execute_sql(sql).collect()
    threading.Thread(target=lambda: [got.put((r.get_row_kind().short_string(), *(
        None if v is None else str(v) for v in r))) for r in iterator], daemon=True).start()
    return iterator, got


def test_unbounded_streaming_matches_as_the_watermark_passes_the_rows(
        session: sessioncluster.Session, tmp_path: Path) -> None:
    """BY_SYMBOL's matches, GROUPED's changes and WINDOWED's windows after each file."""
    t_env = env(session, EnvironmentSettings.in_streaming_mode())
    directory = tmp_path / "ticker"
    create_ticker(t_env, directory, monitored=True, rows=[])
    t_env.execute_sql("CREATE TEMPORARY VIEW matches_mr AS " + BY_SYMBOL.replace(
        "MAX(A.price) AS mx", "MAX(A.price) AS mx, MATCH_ROWTIME() AS mt"))
    queries = [collected(t_env, sql) for sql in (BY_SYMBOL, GROUPED, WINDOWED)]
    expected = [[[("+I", *r) for r in rows] for rows in UNBOUNDED],
                [per_micro_batch(changes) for changes in FLINK_GROUPED], FLINK_WINDOWED]
    for k, rows in enumerate(FILES):
        write_csv(directory, f"f{k}.csv", [(i, s, TS.format(sec), p, t)
                                           for i, s, sec, p, t in rows])
        for (_, got), wanted in zip(queries, expected):
            printed_now = [got.get(timeout=240) for _ in wanted[k]]
            if wanted is expected[1]:  # each key's changes in order
                assert sorted(printed_now, key=lambda c: c[1]) == wanted[k], k
            else:
                assert sorted(printed_now) == sorted(wanted[k]), k
    time.sleep(3)
    assert all(got.empty() for _, got in queries)
    for iterator, _ in queries:
        iterator.close()


def test_an_insert_restored_from_a_savepoint_completes_the_open_matches(
        session: sessioncluster.Session, sc_home: Path, tmp_path: Path) -> None:
    """``INSERT INTO`` a print sink of BY_SYMBOL stopped with a savepoint after the first file
    (ACME's partial match at row 5 open, BETA's at row 15 open with its row 16 not final yet)
    and restored (``execution.savepoint.path``): the second file completes them, the rows of
    Flink's one uninterrupted run (UNBOUNDED)."""
    from .test_flink_sql_streaming import resumed, sql, wait_for

    directory = tmp_path / "ticker"
    create_ticker(env(session, EnvironmentSettings.in_streaming_mode()), directory,
                  monitored=True, rows=[])
    sql(session, """CREATE TABLE matches_sp (symbol STRING, fa INT, la INT, mx INT)
        WITH ('connector' = 'print', 'print-identifier' = 'mr-savepoint')""")
    log = sc_home / "sessions" / "itest" / "jobmanager.log"
    insert = f"INSERT INTO matches_sp {BY_SYMBOL}"

    def printed() -> list[str]:
        return [line.split("> ", 1)[1] for line in log.read_text().splitlines()
                if line.startswith(("mr-savepoint> ", "mr-savepoint:"))]  # :<subtask>

    def lines(rows: list[tuple[str, ...]]) -> list[str]:
        return [f"+I[{', '.join(r)}]" for r in rows]

    first = sql(session, insert).job_id
    write_csv(directory, "f0.csv", [(i, s, TS.format(sec), p, t) for i, s, sec, p, t in FILES[0]])
    wait_for(lambda: printed() == lines(UNBOUNDED[0]))
    path = session.job(first).stop_with_savepoint(
        savepoint_directory=str(tmp_path / "savepoints")).result(timeout=240)
    second = resumed(session, insert, path)
    write_csv(directory, "f1.csv", [(i, s, TS.format(sec), p, t) for i, s, sec, p, t in FILES[1]])
    wait_for(lambda: len(printed()) >= 1 + len(UNBOUNDED[1]))
    time.sleep(2)
    session.job(second).cancel()
    assert printed()[0] == lines(UNBOUNDED[0])[0]
    assert sorted(printed()[1:]) == sorted(lines(UNBOUNDED[1]))
