"""A regular join of an updating query (a GROUP BY) with a stream or with another updating
query, in STREAMING over monitored directories fed in rounds, on a real session: after each
round the changes collected, applied, are the join (inner, LEFT) of both inputs' current rows
computed in plain Python (a join with no equality too); into a print sink through a savepoint;
as a changelog stream."""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import sessioncluster
from sessioncluster.pyflink.table import EnvironmentSettings, TableEnvironment

from .test_flink_sql_temporal_join import write_csv

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_new_tables")]

ROUNDS = [([(1, "a"), (2, "b")], [("a", 10)]),
          ([(3, "a")], [("b", 5), ("a", 1)]),
          ([(4, "c"), (5, "b")], [("c", 7), ("d", 2)])]


@pytest.fixture()
def t_env(session: sessioncluster.Session) -> Any:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode(), session=session)
    env.get_config().set("parallelism.default", "2")
    return env


def counts(rows: list[tuple[Any, ...]], column: int) -> dict[Any, int]:
    return dict(Counter(r[column] for r in rows))


def inner_join(orders: list[tuple[Any, ...]], cust: list[tuple[Any, ...]]) -> Counter:
    n = counts(orders, 1)
    return Counter((i, c, n[c]) for i, c in orders)


def left_join(orders: list[tuple[Any, ...]], cust: list[tuple[Any, ...]]) -> Counter:
    n = counts(cust, 0)
    return Counter((i, n.get(c)) for i, c in orders)


def two_aggregates(orders: list[tuple[Any, ...]], cust: list[tuple[Any, ...]]) -> Counter:
    n = counts(orders, 1)
    m: dict[str, int] = {}
    for c, v in cust:
        m[c] = m.get(c, 0) + v
    return Counter((c, n[c], m[c]) for c in n if c in m)


def left_join_non_equi(orders: list[tuple[Any, ...]], cust: list[tuple[Any, ...]]) -> Counter:
    m: dict[str, int] = {}
    for c, v in cust:
        m[c] = m.get(c, 0) + v
    return Counter((i, m[c] if c in m and i < m[c] else None) for i, c in orders)


def non_equi(orders: list[tuple[Any, ...]], cust: list[tuple[Any, ...]]) -> Counter:
    n = counts(cust, 0)
    return Counter((i, m) for i, _ in orders for m in n.values() if i < m)


def orders_per_count(orders: list[tuple[Any, ...]], cust: list[tuple[Any, ...]]) -> Counter:
    n = counts(orders, 1)
    return Counter(Counter(n[c] for _, c in orders).items())


def two_joins(orders: list[tuple[Any, ...]], cust: list[tuple[Any, ...]]) -> Counter:
    n = counts(orders, 1)
    m: dict[str, int] = {}
    for c, v in cust:
        m[c] = m.get(c, 0) + v
    return Counter((i, n[c], m[c]) for i, c in orders if c in m)


QUERIES = [
    ("SELECT o.id, o.customer, c.n FROM orders_uj o JOIN (SELECT customer, COUNT(*) AS n "
     "FROM orders_uj GROUP BY customer) c ON o.customer = c.customer", inner_join),
    ("SELECT o.id, c.n FROM orders_uj AS o LEFT JOIN (SELECT customer, COUNT(*) AS n "
     "FROM cust_uj GROUP BY customer) AS c ON o.customer = c.customer", left_join),
    ("SELECT a.customer, a.n, b.m FROM (SELECT customer, COUNT(*) AS n FROM orders_uj GROUP BY "
     "customer) a JOIN (SELECT customer, SUM(v) AS m FROM cust_uj GROUP BY customer) b "
     "ON a.customer = b.customer", two_aggregates),
    ("SELECT o.id, c.m FROM orders_uj o LEFT JOIN (SELECT customer, SUM(v) AS m FROM cust_uj "
     "GROUP BY customer) c ON o.customer = c.customer AND o.id < c.m", left_join_non_equi),
    ("SELECT o.id, c.n FROM orders_uj o JOIN (SELECT customer, COUNT(*) AS n FROM cust_uj "
     "GROUP BY customer) c ON o.id < c.n", non_equi),
    ("SELECT c.n, COUNT(*) AS cnt FROM orders_uj o JOIN (SELECT customer, COUNT(*) AS n "
     "FROM orders_uj GROUP BY customer) c ON o.customer = c.customer GROUP BY c.n",
     orders_per_count),
    ("SELECT o.id, a.n, b.m FROM orders_uj o JOIN (SELECT customer, COUNT(*) AS n FROM "
     "orders_uj GROUP BY customer) a ON o.customer = a.customer JOIN (SELECT customer, "
     "SUM(v) AS m FROM cust_uj GROUP BY customer) b ON o.customer = b.customer", two_joins),
]


def create_tables(t_env: Any, tmp_path: Path) -> tuple[Path, Path]:
    orders, cust = tmp_path / "orders", tmp_path / "cust"
    orders.mkdir()
    cust.mkdir()
    monitor = ", 'source.monitor-interval' = '1s'"
    # a watermark on the stream side: Spark's union of it with the feed, keyed, as Flink's
    t_env.execute_sql(f"""CREATE TABLE orders_uj (id INT, customer STRING, ts TIMESTAMP(3),
        WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH (
        'connector' = 'filesystem', 'path' = '{orders}', 'format' = 'csv'{monitor})""")
    t_env.execute_sql(f"""CREATE TABLE cust_uj (customer STRING, v INT) WITH (
        'connector' = 'filesystem', 'path' = '{cust}', 'format' = 'csv'{monitor})""")
    return orders, cust


@pytest.mark.parametrize("sql,expected", QUERIES, ids=["inner", "left", "two_aggregates",
                                                   "left_non_equi", "non_equi", "aggregation_over_join",
                                                   "two_joins"])
def test_the_changes_applied_are_the_join_of_the_current_rows(t_env, tmp_path: Path, sql: str,
                                                              expected: Any) -> None:
    orders, cust = create_tables(t_env, tmp_path)
    got: queue.Queue[Any] = queue.Queue()
    iterator = t_env.execute_sql(sql).collect()
    threading.Thread(target=lambda: [got.put(r) for r in iterator], daemon=True).start()
    seen_orders: list[tuple[Any, ...]] = []
    seen_cust: list[tuple[Any, ...]] = []
    applied: Counter = Counter()
    for k, (new_orders, new_cust) in enumerate(ROUNDS):
        write_csv(cust, f"c{k}.csv", new_cust)
        write_csv(orders, f"o{k}.csv", [(*o, f"2026-01-01 10:00:0{o[0]}") for o in new_orders])
        seen_orders += new_orders
        seen_cust += new_cust
        want = expected(seen_orders, seen_cust)
        while +applied != want:  # the feeder's changes come a micro-batch later
            row = got.get(timeout=120)
            kind = row.get_row_kind().short_string()
            applied[tuple(row)] += 1 if kind in ("+I", "+U") else -1
            assert applied[tuple(row)] >= 0, f"round {k}: {kind}{tuple(row)} retracts nothing"
    iterator.close()


def printed_join(lines: list[str]) -> Counter:
    """Print lines ``+I[1, a, 2]`` applied: the rows they leave."""
    applied: Counter = Counter()
    for line in lines:
        kind, values = line[:2], line[3:-1].split(", ")
        row = (int(values[0]), values[1], int(values[2]))
        applied[row] += 1 if kind in ("+I", "+U") else -1
        assert applied[row] >= 0, f"{line} retracts a row not printed"
    return +applied


def test_an_insert_into_print_keeps_its_state_through_a_savepoint(
        session: sessioncluster.Session, sc_home: Path, tmp_path: Path) -> None:
    """The join's state (both sides' rows per key, the feeder's changelog and its files)
    is in the job's checkpoints: a job restored from a savepoint goes on from it."""
    from .test_flink_sql_streaming import resumed, sql, wait_for

    orders, cust = tmp_path / "orders", tmp_path / "cust"
    orders.mkdir()
    cust.mkdir()
    sql(session, f"""CREATE TABLE orders_uj (id INT, customer STRING) WITH ('connector' =
        'filesystem', 'path' = '{orders}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    sql(session, """CREATE TABLE joined_uj (id INT, customer STRING, n BIGINT)
        WITH ('connector' = 'print', 'print-identifier' = 'uj-changelog')""")
    log = sc_home / "sessions" / "itest" / "jobmanager.log"
    insert = f"INSERT INTO joined_uj {QUERIES[0][0]}"

    def printed() -> Counter:
        return printed_join([line.split("> ", 1)[1] for line in log.read_text().splitlines()
                             if line.startswith("uj-changelog> ")])

    seen: list[tuple[Any, ...]] = []
    first = sql(session, insert).job_id
    for k, (new_orders, _) in enumerate(ROUNDS[:2]):
        write_csv(orders, f"o{k}.csv", new_orders)
        seen.extend(new_orders)
        wait_for(lambda: printed() == inner_join(seen, []))
    path = session.job(first).stop_with_savepoint(
        savepoint_directory=str(tmp_path / "savepoints")).result(timeout=240)
    second = resumed(session, insert, path)
    write_csv(orders, "o2.csv", ROUNDS[2][0])  # o0, o1 are not read again: their offsets saved
    seen.extend(ROUNDS[2][0])
    wait_for(lambda: printed() == inner_join(seen, []))
    session.job(second).cancel()


def test_to_changelog_stream_of_the_join(session: sessioncluster.Session,
                                         tmp_path: Path) -> None:
    """The join as a DataStream (``to_changelog_stream``): its feeders run with the job."""
    from sessioncluster.pyflink.common import Types

    from .test_streaming import drop
    from .test_table_to_unbounded_datastream import ROUNDS as WORDS
    from .test_table_to_unbounded_datastream import environments, take

    src = tmp_path / "in"
    src.mkdir()
    _, t_env = environments(session, src)
    words = f"words_{tmp_path.name}"
    table = t_env.sql_query(f"SELECT w.word, w.n, c.c FROM {words} AS w JOIN (SELECT word, "
                            f"COUNT(*) AS c FROM {words} GROUP BY word) AS c ON w.word = c.word")
    records = t_env.to_changelog_stream(table).map(
        lambda r: (str(r.get_row_kind()), r.word, r.n, r.c),
        output_type=Types.TUPLE([Types.STRING(), Types.STRING(), Types.INT(), Types.LONG()])
    ).execute_and_collect("updating join to stream")
    seen: list[tuple[str, int]] = []
    applied: Counter = Counter()
    try:
        for i, lines in enumerate(WORDS):
            drop(src, f"part-{i}.csv", lines)
            seen.extend((w, int(n)) for w, n in (line.split(",") for line in lines))
            count = Counter(w for w, _ in seen)
            want = Counter((w, n, count[w]) for w, n in seen)
            while +applied != want:
                kind, *row = take(records, 1)[0]
                applied[tuple(row)] += 1 if kind in ("+I", "+U") else -1
                assert applied[tuple(row)] >= 0, f"round {i}: {kind}{row} retracts nothing"
    finally:
        records.close()  # cancels the job: its queries and feeders


#: /work/briefs/data/legacywin/probe4.py: the files, and PyFlink 2.3's rows ('T') after each
CLICKS = [[("a", "2024-01-01 00:00:01", 1), ("b", "2024-01-01 00:00:02", 2),
           ("e", "2024-01-01 00:00:04", 8)],
          [("a", "2024-01-01 00:00:07", 4), ("b", "2024-01-01 00:00:12", 16)],
          [("a", "2024-01-01 00:00:13", 32), ("c", "2024-01-01 00:00:25", 64),
           ("d", "2024-01-01 00:00:05", 512)]]


def _at(s: int) -> Any:
    import datetime as dt

    return dt.datetime(2024, 1, 1) + dt.timedelta(seconds=s)


def _clicks_table(t_env: Any, tmp_path: Path, name: str) -> Path:
    """An unbounded CSV table ``name`` of clicks (user, ts with a 1 s watermark, v) over a
    directory watched every second; the directory."""
    clicks = tmp_path / "clicks"
    clicks.mkdir()
    t_env.execute_sql(f"""CREATE TABLE {name} (`user` STRING, ts TIMESTAMP(3), v INT,
        WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem',
        'path' = '{clicks}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    return clicks


def _rows_file_by_file(t_env: Any, clicks: Path, query: str, files: list[list[Any]],
                       flink: list[list[Any]]) -> None:
    """Drop ``files`` into ``clicks`` one by one; after each, the streaming ``query`` gives
    Flink's rows for it (RowKind, values), and nothing more at the end."""
    got: queue.Queue[Any] = queue.Queue()
    iterator = t_env.execute_sql(query).collect()
    threading.Thread(target=lambda: [got.put(r) for r in iterator], daemon=True).start()
    try:
        for k, rows in enumerate(files):
            write_csv(clicks, f"f{k}.csv", rows)
            if not flink[k]:
                time.sleep(6)  # its micro-batch before the next file's
            rows_now = [got.get(timeout=120) for _ in flink[k]]
            assert [(r.get_row_kind().short_string(), tuple(r)) for r in rows_now] == flink[k]
        time.sleep(4)
        assert got.empty()
    finally:
        iterator.close()


def test_a_legacy_tumble_over_an_updating_query_fires_each_window_once(t_env, tmp_path: Path
                                                                       ) -> None:
    """Each window once, when the watermark passes its end, from the changes it got (b@2's
    retraction in time, d@5 in a fired window dropped), insert-only: Flink's rows file by file."""
    flink = [[], [("+I", (_at(0), _at(10), 2, 13, _at(7)))],
             [("+I", (_at(10), _at(20), 2, 55, _at(13)))]]
    clicks = _clicks_table(t_env, tmp_path, "clicks_uw")
    _rows_file_by_file(t_env, clicks, """SELECT TUMBLE_START(ts, INTERVAL '10' SECOND) AS ws,
        TUMBLE_END(ts, INTERVAL '10' SECOND) AS we, COUNT(*) AS n, SUM(s) AS ss, MAX(ts) AS mx
        FROM (SELECT `user`, MAX(ts) AS ts, SUM(v) AS s FROM clicks_uw GROUP BY `user`)
        GROUP BY TUMBLE(ts, INTERVAL '10' SECOND)""", CLICKS, flink)


def test_a_legacy_session_over_an_updating_query_subtracts_a_fired_rows_retraction(
        t_env, tmp_path: Path) -> None:
    """Each change's window [ts, ts + 3 s) merges into its session, x@2's retraction (its
    session fired) into the session it touches, subtracted there; each session once, over its
    signed rows, insert-only: Flink's rows file by file
    (/work/briefs/data/legacysession/probe1.py, probe1.out 'M')."""
    files = [[("x", "2024-01-01 00:00:02", 100), ("u", "2024-01-01 00:00:02", 10),
              ("w", "2024-01-01 00:00:06", 2)],
             [("y", "2024-01-01 00:00:05", 1), ("x", "2024-01-01 00:00:20", 1)],
             [("z", "2024-01-01 00:00:40", 4)]]
    flink = [[("+I", (_at(2), _at(5), 2, 110))], [("+I", (_at(2), _at(9), 1, -97))],
             [("+I", (_at(20), _at(23), 1, 101))]]
    clicks = _clicks_table(t_env, tmp_path, "clicks_us")
    _rows_file_by_file(t_env, clicks, """SELECT SESSION_START(ts, INTERVAL '3' SECOND) AS ws,
        SESSION_END(ts, INTERVAL '3' SECOND) AS we, COUNT(*) AS n, SUM(s) AS ss
        FROM (SELECT `user`, MAX(ts) AS ts, SUM(v) AS s FROM clicks_us GROUP BY `user`)
        GROUP BY SESSION(ts, INTERVAL '3' SECOND)""", files, flink)


def test_a_legacy_hop_over_an_updating_query_into_a_filesystem_sink(t_env, tmp_path: Path
                                                                   ) -> None:
    """Each change into each of its HOP windows, each window once when the watermark passes
    its end (d@5 late for [0,10), a@3's retraction late): insert-only, so a filesystem sink
    takes it; its files hold Flink's rows file by file
    (/work/briefs/data/legacyhop/probe2.py, probe2.out 'H')."""
    import csv

    files = [[("a", "2024-01-01 00:00:01", 1), ("b", "2024-01-01 00:00:02", 2),
              ("e", "2024-01-01 00:00:04", 8)],
             [("a", "2024-01-01 00:00:03", 4), ("b", "2024-01-01 00:00:12", 16)],
             [("d", "2024-01-01 00:00:05", 32), ("a", "2024-01-01 00:00:13", 64),
              ("c", "2024-01-01 00:00:25", 128)]]
    flink = [[], [["2023-12-31 23:59:55", "2024-01-01 00:00:05", "2", "13", "2024-01-01 00:00:04"],
                  ["2024-01-01 00:00:00", "2024-01-01 00:00:10", "2", "13", "2024-01-01 00:00:04"]],
             [["2024-01-01 00:00:05", "2024-01-01 00:00:15", "3", "119", "2024-01-01 00:00:13"],
              ["2024-01-01 00:00:10", "2024-01-01 00:00:20", "2", "87", "2024-01-01 00:00:13"]]]
    out = tmp_path / "out"
    clicks = _clicks_table(t_env, tmp_path, "clicks_hop")
    t_env.execute_sql(f"""CREATE TABLE hop_out (ws TIMESTAMP(3), we TIMESTAMP(3), n BIGINT,
        ss INT, mx TIMESTAMP(3)) WITH ('connector' = 'filesystem', 'path' = '{out}',
        'format' = 'csv')""")

    def sink_rows() -> list[list[str]]:
        rows: list[list[str]] = []
        for path in sorted(out.rglob("*")) if out.exists() else []:
            if path.is_file() and not path.name.startswith((".", "_")):
                with open(path, newline="") as f:
                    rows += [r for r in csv.reader(f) if r]
        return sorted(rows)

    result = t_env.execute_sql("""INSERT INTO hop_out
        SELECT HOP_START(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND),
        HOP_END(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND), COUNT(*), SUM(s), MAX(ts)
        FROM (SELECT `user`, MAX(ts) AS ts, SUM(v) AS s FROM clicks_hop GROUP BY `user`)
        GROUP BY HOP(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)""")
    try:
        expected: list[list[str]] = []
        for k, rows in enumerate(files):
            write_csv(clicks, f"f{k}.csv", rows)
            expected = sorted(expected + flink[k])
            if not flink[k]:
                time.sleep(6)  # its micro-batch before the next file's
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and len(sink_rows()) < len(expected):
                time.sleep(0.5)
            assert sink_rows() == expected
        time.sleep(4)
        assert sink_rows() == expected
    finally:
        result.get_job_client().cancel()
