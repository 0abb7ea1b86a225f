"""Flink's JSON functions in STREAMING on a real session: lines of JSON text dropped as files
into a monitored directory (``raw`` format, one micro-batch per file) read by two streaming
SELECTs at once: a projection with JSON_VALUE/JSON_QUERY/IS JSON/JSON_OBJECT (``+I`` rows) and
a JSON_OBJECTAGG group aggregate (Flink's changelog: ``+I``, then ``-U``/``+U`` per update),
each round compared with the same computed in plain Python; and JSON_OBJECTAGG/JSON_ARRAYAGG in
a TUMBLE window aggregate, each window emitted once the watermark passed its end."""

from __future__ import annotations

import collections
import datetime as dt
import json
import queue
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

import sessioncluster
from sessioncluster.common.types import RowKind
from sessioncluster.pyflink.table import EnvironmentSettings, TableEnvironment

pytestmark = pytest.mark.integration

ROUNDS = [
    ['{"user":"ann","item":"pen","n":2,"tags":["a","b"]}', '{"user":"bob","item":"ink","n":1}',
     "not json"],
    ['{"user":"ann","item":"cup","n":5,"tags":[]}', '{"user":"cid","item":"pen","n":null}',
     '{"user":"bob","item":"é","n":3,"tags":{"k":[1]}}'],
    ['{"user":"bob","item":"pad","n":7,"tags":["x"]}', "[1,2]"],
]

PROJECTION = """SELECT JSON_VALUE(line, '$.user') AS u,
    JSON_VALUE(line, '$.n' RETURNING INT) AS n, JSON_QUERY(line, '$.tags') AS tags,
    line IS JSON OBJECT AS obj,
    JSON_OBJECT('item' VALUE JSON_VALUE(line, '$.item'),
                'n' VALUE JSON_VALUE(line, '$.n' RETURNING INT)) AS o
    FROM json_lines"""

AGGREGATE = """SELECT u, JSON_OBJECTAGG(KEY item VALUE n) AS items, COUNT(*) AS cnt
    FROM (SELECT JSON_VALUE(line, '$.user') AS u, JSON_VALUE(line, '$.item') AS item,
                 JSON_VALUE(line, '$.n' RETURNING INT) AS n
          FROM json_lines WHERE line IS JSON OBJECT)
    GROUP BY u"""


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _document(line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def projected(line: str) -> tuple[Any, ...]:
    """PROJECTION's row of ``line``, in plain Python."""
    d = _document(line)
    d = d if isinstance(d, dict) else {}
    n = d.get("n") if isinstance(d.get("n"), int) else None
    tags = d.get("tags")
    item = d.get("item") if isinstance(d.get("item"), str) else None
    return (d.get("user"), n, _json(tags) if isinstance(tags, (list, dict)) else None,
            isinstance(_document(line), dict), _json({"item": item, "n": n}))


def aggregate_changelog(rounds: list[list[str]]) -> Iterator[list[tuple[Any, ...]]]:
    """AGGREGATE's changes per round, in plain Python: +I for a new user, -U old and +U new
    for an updated one (the object's keys sorted)."""
    items: dict[str, dict[str, Any]] = collections.defaultdict(dict)
    for lines in rounds:
        before = {u: (_items_text(i), len(i)) for u, i in items.items()}
        for d in (_document(line) for line in lines):
            if isinstance(d, dict):
                items[d["user"]][d["item"]] = d["n"]
        changes = []
        for user, entries in items.items():
            now = (_items_text(entries), len(entries))
            if user not in before:
                changes.append(("+I", user, *now))
            elif before[user] != now:
                changes += [("-U", user, *before[user]), ("+U", user, *now)]
        yield changes


def _items_text(entries: dict[str, Any]) -> str:
    return "{" + ",".join(f"{_json(k)}:{_json(v)}" for k, v in sorted(entries.items())) + "}"


def _reader(iterator: Any) -> queue.Queue[Any]:
    rows: queue.Queue[Any] = queue.Queue()

    def read() -> None:
        for row in iterator:
            rows.put(row)

    threading.Thread(target=read, daemon=True).start()
    return rows


def test_json_functions_and_json_objectagg_in_streaming(session: sessioncluster.Session,
                                                        tmp_path: Path) -> None:
    source = tmp_path / "json_lines"
    source.mkdir()
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode(), session=session)
    t_env.execute_sql(f"""CREATE TABLE json_lines (line STRING) WITH ('connector' =
        'filesystem', 'path' = '{source}', 'format' = 'raw', 'source.monitor-interval' = '1s')""")
    try:
        projection = t_env.execute_sql(PROJECTION)
        aggregate = t_env.execute_sql(AGGREGATE)
        assert aggregate.get_table_schema().get_field_names() == ["u", "items", "cnt"]
        with projection.collect() as projected_rows, aggregate.collect() as changes:
            plain, updates = _reader(projected_rows), _reader(changes)
            for k, (lines, expected) in enumerate(zip(ROUNDS, aggregate_changelog(ROUNDS))):
                tmp = source / f".f{k}.txt"
                tmp.write_text("".join(f"{line}\n" for line in lines))
                tmp.rename(source / f"f{k}.txt")  # one file: one micro-batch
                got = [plain.get(timeout=120) for _ in lines]
                assert {r.get_row_kind() for r in got} == {RowKind.INSERT}
                assert sorted(map(tuple, got), key=repr) == sorted(map(projected, lines),
                                                                   key=repr)
                got = [updates.get(timeout=120) for _ in expected]
                assert sorted((r.get_row_kind().short_string(), *r) for r in got) \
                    == sorted(expected)
    finally:
        t_env.execute_sql("DROP TABLE IF EXISTS json_lines")


def test_json_aggregates_of_a_tumble_window_in_streaming(session: sessioncluster.Session,
                                                         tmp_path: Path) -> None:
    """A window aggregate emits each window once, when the watermark passed its end: file k
    holds window k's events (and moves the watermark past window k-1)."""
    source = tmp_path / "json_events"
    source.mkdir()
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode(), session=session)
    t_env.execute_sql(f"""CREATE TABLE json_events (ts TIMESTAMP(3), k STRING, n INT,
        WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem',
        'path' = '{source}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    t0 = dt.datetime(2024, 1, 1)
    windows = [[(1, "b", 2), (4, "a", None), (6, "c", 1)], [(2, "z", 5), (3, "é", 7)],
               [(5, "a", 1)]]
    try:
        result = t_env.execute_sql(
            "SELECT window_start, JSON_OBJECTAGG(KEY k VALUE n) AS o, JSON_ARRAYAGG(n) AS a "
            "FROM TABLE(TUMBLE(TABLE json_events, DESCRIPTOR(ts), INTERVAL '10' SECOND)) "
            "GROUP BY window_start, window_end")
        with result.collect() as rows_iterator:
            rows = _reader(rows_iterator)
            for w, events in enumerate(windows):
                tmp = source / f".f{w}.csv"
                tmp.write_text("".join(
                    f"{t0 + dt.timedelta(seconds=10 * w + s):%Y-%m-%d %H:%M:%S},{k},"
                    f"{'' if n is None else n}\n" for s, k, n in events))
                tmp.rename(source / f"f{w}.csv")
                if not w:
                    continue
                done = windows[w - 1]  # the watermark passed window w-1's end
                row = rows.get(timeout=120)
                assert row.get_row_kind() is RowKind.INSERT
                assert row[0] == t0 + dt.timedelta(seconds=10 * (w - 1))
                assert row[1] == _items_text({k: n for _, k, n in done})
                # the items' order is the order the rows reach the aggregate
                assert sorted(json.loads(row[2])) == sorted(n for _, _, n in done
                                                           if n is not None)
            assert rows.empty()  # the last window is still open
    finally:
        t_env.execute_sql("DROP TABLE IF EXISTS json_events")
