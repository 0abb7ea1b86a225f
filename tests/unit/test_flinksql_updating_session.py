"""The sessions of a legacy GROUP BY SESSION over an updating query's changes (issue 27),
without Spark: merge, retract into the session a retraction touches, never split, fire when the
record count is not zero, as Flink 2.3 does (/work/briefs/data/legacyhop/probe1.out S1/S2/S3,
/work/briefs/data/legacywin/probe1.out S, /work/briefs/data/legacysession/probe1.out M/V)."""

from __future__ import annotations

import re
from typing import Any

from sessioncluster.spark.flinksql.updatingsession import ChangeSessions, Fired, session_step

S = 1000  # ms
DELAY = 1 * S  # WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
GAP = 3 * S  # SESSION(ts, INTERVAL '3' SECOND)

File = list[tuple[str, int, int]]  # the source's records: (user, ts in s, v)


def group_aggregate(files: list[File]) -> list[list[tuple[int, list[tuple[str, tuple[Any, ...]]]]]]:
    """The changes Flink's ``SELECT user, MAX(ts) AS ts, SUM(v) AS s ... GROUP BY user`` emits
    for each record, file by file: (record's ts, [(kind, (user, ts, s))])."""
    latest: dict[str, tuple[Any, ...]] = {}
    out = []
    for records in files:
        changes = []
        for user, ts, v in records:
            old = latest.get(user)
            new = (user, ts, v) if old is None else (user, max(old[1], ts), old[2] + v)
            latest[user] = new
            changes.append((ts, [("+I", new)] if old is None else [("-U", old), ("+U", new)]))
        out.append(changes)
    return out


def per_record(files: list[File], keyed: bool = False) -> list[list[Fired]]:
    """Flink's order: each record's changes, then the watermark it brings (max ts - delay);
    the sessions fired while each file is read (``keyed``: per user)."""
    sessions, highest, out = ChangeSessions(GAP), None, []
    for records in group_aggregate(files):
        fired: list[Fired] = []
        for ts, changes in records:
            for kind, row in changes:
                sessions.apply(kind, (row[0],) if keyed else (), row, row[1] * S)
            highest = ts if highest is None else max(highest, ts)
            fired += sessions.advance(highest * S - DELAY)
        out.append(fired)
    return out


def totals(fired: list[Fired]) -> list[tuple[int, int, int, int]]:
    """``SESSION_START, SESSION_END, COUNT(*), SUM(s)`` (s) of each fired session, over its
    signed rows."""
    return [(w[0] // S, w[1] // S, sum(sign for _, sign in rows),
             sum(sign * row[2] for row, sign in rows)) for _, w, rows in fired]


P4: list[File] = [[("a", 1, 1), ("b", 2, 2), ("e", 4, 8)], [("a", 7, 4), ("b", 12, 16)],
                  [("a", 13, 32), ("c", 25, 64), ("d", 5, 512)]]
SPLIT: list[File] = [[("a", 1, 1), ("b", 3, 2), ("c", 5, 4)], [("b", 30, 8), ("a", 12, 16)],
                     [("c", 40, 32), ("x", 50, 64)]]
EMPTY: list[File] = [[("a", 1, 1)], [("a", 20, 2)], [("b", 40, 4)]]
LEGACYWIN: list[File] = [[("a", 1, 1), ("b", 2, 2), ("a", 7, 4), ("e", 4, 8)],
                         [("b", 12, 16), ("a", 13, 32)],
                         [("c", 25, 64), ("b", 14, 128), ("a", 3, 256), ("d", 5, 512)]]
M: list[File] = [[("x", 2, 100), ("u", 2, 10), ("w", 6, 2)], [("y", 5, 1), ("x", 20, 1)],
                 [("z", 40, 4)]]


def test_s1_sessions_merge_retractions_and_fire_flinks_rows() -> None:
    # legacyhop probe1.out S1: [1,10) 2/13 in file 1, [12,16) 2/55 in file 2 (a@7's
    # retraction late, dropped; d@5 late)
    assert [totals(f) for f in per_record(P4)] == [[], [(1, 10, 2, 13)], [(12, 16, 2, 55)]]


def test_s1_sessions_rows_are_those_that_remain() -> None:
    fired = per_record(P4)[1][0][2]
    assert sorted((row, sign) for row, sign in fired) == [(("a", 7, 5), 1), (("e", 4, 8), 1)]


def test_s2_a_session_is_never_split_by_a_retraction() -> None:
    # S2: b@3's retraction leaves a@1 and c@5 3 s apart: still the one session [1,8), 2/5
    assert [totals(f) for f in per_record(SPLIT)] == [
        [], [(1, 8, 2, 5)], [(30, 33, 1, 10), (40, 43, 1, 36)]]


def test_s3_a_session_whose_rows_were_all_retracted_emits_nothing() -> None:
    assert [totals(f) for f in per_record(EMPTY)] == [[], [], [(20, 23, 1, 3)]]


def test_a_fired_rows_retraction_merges_into_the_session_it_touches() -> None:
    # legacywin probe1.out S: [1,5) 1/2 fires on a@7's watermark; b@2's retraction [2,5)
    # merges into [4,10) and is subtracted there: [2,10) count 1, sum 11 = e 8 + a 5 - b 2
    fired = per_record(LEGACYWIN)
    assert [totals(f) for f in fired] == [[(1, 5, 1, 2)], [(2, 10, 1, 11)], [(12, 16, 2, 55)]]
    assert (("b", 2, 2), -1) in fired[1][0][2]


def test_a_retracted_row_not_in_the_session_counts_minus_one() -> None:
    # legacysession probe1.out M: [2,9) over w 2, y 1 and x@2's retraction: COUNT 1, SUM -97
    assert [totals(f) for f in per_record(M)] == [
        [(2, 5, 2, 110)], [(2, 9, 1, -97)], [(20, 23, 1, 101)]]


def test_keyed_sessions_take_only_their_keys_retractions() -> None:
    # legacysession probe2.out K: GROUP BY user, SESSION: x@2's retraction finds no live
    # session of x: late, dropped (y's and w's sessions fire without it)
    fired = per_record(M, keyed=True)
    assert [[(key, *t) for (key, _, _), t in zip(f, totals(f))] for f in fired] == [
        [(("x",), 2, 5, 1, 100), (("u",), 2, 5, 1, 10)],
        [(("y",), 5, 8, 1, 1), (("w",), 6, 9, 1, 2)], [(("x",), 20, 23, 1, 101)]]


def test_sessions_are_per_key() -> None:
    sessions = ChangeSessions(GAP)
    assert sessions.apply("+I", ("k1",), ("k1", 1), 1 * S)
    assert sessions.apply("+I", ("k2",), ("k2", 2), 2 * S)
    assert sessions.apply("+I", ("k1",), ("k1", 3), 3 * S)
    fired = sessions.advance(10 * S)
    assert [(key, w[0] // S, w[1] // S, len(rows)) for key, w, rows in fired] == [
        (("k2",), 2, 5, 1), (("k1",), 1, 6, 2)]
    assert sessions.sessions == {} and sessions.contents == {}


def test_a_late_change_is_dropped_and_a_session_fires_once() -> None:
    sessions = ChangeSessions(GAP)
    sessions.apply("+I", (), ("a", 1), 1 * S)
    assert sessions.advance(4 * S - 2) == []  # [1,4)'s last millisecond not reached
    assert len(sessions.advance(4 * S - 1)) == 1
    assert not sessions.apply("-U", (), ("a", 1), 1 * S)  # its session fired: late
    assert sessions.advance(100 * S) == []


def test_a_window_bridging_two_sessions_merges_their_rows() -> None:
    sessions = ChangeSessions(GAP)
    sessions.apply("+I", (), ("a",), 1 * S)
    sessions.apply("+I", (), ("b",), 6 * S)
    sessions.apply("+I", (), ("c",), 4 * S)  # [4,7) touches [1,4) and [6,9)
    [(_, window, rows)] = sessions.advance(20 * S)
    assert window == (1 * S, 9 * S) and sorted(rows) == [(("a",), 1), (("b",), 1), (("c",), 1)]


def test_session_step_keys_rows_and_moves_the_watermark_per_micro_batch() -> None:
    sessions = ChangeSessions(GAP)
    # rows (user, s, time ms); keyed by user; the watermark 10 s - 1 s after the batch
    fired = session_step(sessions, [("+I", ("a", 1, 1 * S)), ("+I", ("b", 2, 2 * S)),
                                    ("+I", ("a", 5, None)), ("+I", ("c", 4, 10 * S))], [0], DELAY)
    assert [(key, w, rows) for key, w, rows in fired] == [
        (("a",), (1 * S, 4 * S), [(("a", 1, 1 * S), 1)]),
        (("b",), (2 * S, 5 * S), [(("b", 2, 2 * S), 1)])]
    assert sessions.watermark == 9 * S
    assert session_step(sessions, [("-U", ("c", 4, 10 * S))], [0], DELAY) == []
    assert sessions.watermark == 9 * S  # a retraction does not move it


def test_signed_query_groups_by_the_session_and_signs_count_and_sum() -> None:
    import sqlglot

    from sessioncluster.spark.flinksql.dialect import Flink
    from sessioncluster.spark.flinksql.updatingsession import session_window_of, signed_query

    query = sqlglot.parse_one(
        "SELECT `user`, SESSION_START(ts, INTERVAL '3' SECOND) AS ws, "
        "SESSION_ROWTIME(ts, INTERVAL '3' SECOND) AS rt, COUNT(*) AS n, COUNT(s) AS c, "
        "SUM(s) AS ss FROM latest GROUP BY `user`, SESSION(ts, INTERVAL '3' SECOND)", read=Flink)
    spec = session_window_of(query, ["user", "ts", "s"])
    assert spec is not None and (spec.ts, spec.gap_ms, spec.key_positions) == ("ts", GAP, [0])
    assert signed_query(query).sql(dialect=Flink) == (
        "SELECT `user`, __flink_session_start AS ws, __flink_session_end - INTERVAL '0.001' "
        "SECOND AS rt, SUM(__flink_sign) AS n, SUM(IF(s IS NULL, 0, __flink_sign)) AS c, "
        "IF(SUM(IF(s IS NULL, 0, __flink_sign)) = 0, NULL, SUM(IF(__flink_sign > 0, s, -(s)))) "
        "AS ss FROM latest GROUP BY `user`, __flink_session_start, __flink_session_end")


def test_min_max_and_distinct_aggregates_are_refused_by_name() -> None:
    # legacysession probe1.out V: Flink's MAX(s) is 2 over w 2, y 100 and x 100 retracted
    # (MAX_RETRACT counts values): the rows that remain give 100
    import pytest
    import sqlglot

    from sessioncluster.spark.flinksql.dialect import Flink
    from sessioncluster.spark.flinksql.model import FlinkSqlError
    from sessioncluster.spark.flinksql.updatingsession import session_window_of, signed_query

    for aggregate, name in [("MAX(ts)", "MAX"), ("MIN(s)", "MIN"), ("AVG(s)", "AVG"),
                            ("COUNT(DISTINCT s)", "COUNT(DISTINCT)")]:
        query = sqlglot.parse_one(f"SELECT {aggregate} FROM latest "
                                  "GROUP BY SESSION(ts, INTERVAL '3' SECOND)", read=Flink)
        with pytest.raises(FlinkSqlError, match=rf"^{re.escape(name)} over a legacy SESSION"):
            signed_query(query)
    keyed = sqlglot.parse_one("SELECT COUNT(*) FROM latest GROUP BY UPPER(`user`), "
                              "SESSION(ts, INTERVAL '3' SECOND)", read=Flink)
    with pytest.raises(FlinkSqlError, match="keys that are the updating query's columns"):
        session_window_of(keyed, ["user", "ts", "s"])
    for where in ["WHERE s > 0", "JOIN users ON latest.`user` = users.`user`"]:
        query = sqlglot.parse_one(f"SELECT COUNT(*) FROM latest {where} "
                                  "GROUP BY SESSION(ts, INTERVAL '3' SECOND)", read=Flink)
        with pytest.raises(FlinkSqlError, match="without WHERE, a join or a view"):
            session_window_of(query, ["user", "ts", "s"])
    for other in ["FROM big GROUP BY SESSION(ts", "FROM latest GROUP BY SESSION(t2"]:
        query = sqlglot.parse_one(f"SELECT COUNT(*) {other}, INTERVAL '3' SECOND)", read=Flink)
        with pytest.raises(FlinkSqlError, match="without WHERE, a join or a view"):
            session_window_of(query, ["user", "ts", "s"], "latest")


def test_sessions_micro_batches_into_a_filesystem_sink_write_flinks_rows(local_spark: Any,
                                                                         tmp_path: Any) -> None:
    # legacysession probe1.out M, a micro-batch per file, through the runtime's pieces: the
    # updating query's rows with their time, their changes into the sessions, the signed
    # window query over the fired sessions' rows, the sink's files
    import csv
    import datetime as dt
    from types import SimpleNamespace

    import sqlglot

    from sessioncluster.spark.flinksql.dialect import Flink
    from sessioncluster.spark.flinksql.microbatch import write_batch
    from sessioncluster.spark.flinksql.model import CatalogTable, Column
    from sessioncluster.spark.flinksql.planner import to_spark_sql
    from sessioncluster.spark.flinksql.updating import OuterQuery
    from sessioncluster.spark.flinksql.updatingsession import (
        session_schema,
        session_window_of,
        signed_query,
        with_time_column,
    )

    def at(s: int) -> dt.datetime:
        return dt.datetime(2024, 1, 1) + dt.timedelta(seconds=s)

    schema = "user STRING, ts TIMESTAMP_NTZ, s INT"
    inner = local_spark.createDataFrame([], schema).schema
    query = sqlglot.parse_one(
        "SELECT SESSION_START(ts, INTERVAL '3' SECOND) AS ws, SESSION_END(ts, INTERVAL '3' "
        "SECOND) AS we, COUNT(*) AS n, SUM(s) AS ss FROM session_view "
        "GROUP BY SESSION(ts, INTERVAL '3' SECOND)", read=Flink)
    spec = session_window_of(query, inner.names)
    assert spec is not None
    view_schema = session_schema(inner, "ts")
    local_spark.createDataFrame([], view_schema).createOrReplaceTempView("session_view")
    sql = to_spark_sql(signed_query(query), {})
    outer = OuterQuery("session_view", sql, view_schema, local_spark.sql(sql).schema, [],
                       window_delay_ms=DELAY, session=spec)
    out = tmp_path / "out"
    sink = CatalogTable("session_out", [Column("ws", "TIMESTAMP(3)"), Column("we", "TIMESTAMP(3)"),
                                        Column("n", "BIGINT"), Column("ss", "INT")],
                        {"connector": "filesystem", "path": str(out), "format": "csv"})
    insert = SimpleNamespace(table=sink, output_mode="update", key_positions=[0],
                             row_kinds=False, outer=outer)
    # the GROUP BY user's updated rows after each file (Spark's update mode)
    batches = [[("x", at(2), 100), ("u", at(2), 10), ("w", at(6), 2)],
               [("y", at(5), 1), ("x", at(20), 101)], [("z", at(40), 4)]]
    written = [write_batch(insert, with_time_column(local_spark.createDataFrame(rows, schema),
                                                    "ts"), batch_id, tmp_path / "state")
               for batch_id, rows in enumerate(batches)]
    files = [p for p in sorted(out.rglob("*")) if p.is_file() and not p.name.startswith(".")]
    got = sorted(r for p in files for r in csv.reader(p.open()) if r)
    assert written == [1, 1, 1]
    assert got == [["2024-01-01 00:00:02", "2024-01-01 00:00:05", "2", "110"],
                   ["2024-01-01 00:00:02", "2024-01-01 00:00:09", "1", "-97"],
                   ["2024-01-01 00:00:20", "2024-01-01 00:00:23", "1", "101"]]


def test_a_micro_batchs_changes_apply_in_their_records_time_order() -> None:
    # legacysession probe1.out M's file 1 as one micro-batch whose changes come x first: in
    # the records' order (y@5, then x@20) x@2's retraction merges into y's session
    from sessioncluster.spark.flinksql.updatingsession import in_time_order

    x_old, x_new, y = ("x", 2, 100, 2 * S), ("x", 20, 101, 20 * S), ("y", 5, 1, 5 * S)
    changes = [("-U", x_old), ("+U", x_new), ("+I", y)]
    assert in_time_order(changes) == [("+I", y), ("-U", x_old), ("+U", x_new)]
    sessions = ChangeSessions(GAP)
    first = session_step(sessions, [("+I", ("x", 2, 100, 2 * S)), ("+I", ("u", 2, 10, 2 * S)),
                                    ("+I", ("w", 6, 2, 6 * S))], [], DELAY)
    second = session_step(sessions, changes, [], DELAY)
    assert [(w[0] // S, w[1] // S, sum(n for _, n in rows)) for _, w, rows in first + second] == [
        (2, 5, 2), (2, 9, 1)]
