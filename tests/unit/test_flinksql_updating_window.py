"""The windows of a legacy GROUP BY TUMBLE/HOP over an updating query's changes (issue 27),
without Spark: accumulate, retract, fire, drop late, as Flink 2.3 does
(/work/briefs/data/legacywin/probe1.py, probe1.out; /work/briefs/data/legacyhop/probe2.py,
probe2.out for HOP)."""

from __future__ import annotations

from typing import Any

from sessioncluster.spark.flinksql.updatingwindow import (
    WINDOW_COLUMNS,
    WINDOW_START,
    ChangeWindows,
    Window,
    WindowChange,
    fold_windows,
    group_window_of,
    window_step,
    with_window_columns,
    with_window_start,
)

S = 1000  # ms

#: probe1's source records (user, ts in s, v) in their order, file by file, and the changes
#: Flink's GroupAggregate ``SELECT user, MAX(ts) AS ts, SUM(v) AS s ... GROUP BY user`` emits
#: for each: (kind, (user, ts, s))
RECORDS: list[list[tuple[int, list[tuple[str, tuple[Any, ...]]]]]] = [
    [(1, [("+I", ("a", 1, 1))]), (2, [("+I", ("b", 2, 2))]),
     (7, [("-U", ("a", 1, 1)), ("+U", ("a", 7, 5))]), (4, [("+I", ("e", 4, 8))])],
    [(12, [("-U", ("b", 2, 2)), ("+U", ("b", 12, 18))]),
     (13, [("-U", ("a", 7, 5)), ("+U", ("a", 13, 37))])],
    [(25, [("+I", ("c", 25, 64))]), (14, [("-U", ("b", 12, 18)), ("+U", ("b", 14, 146))]),
     (3, [("-U", ("a", 13, 37)), ("+U", ("a", 13, 293))]), (5, [("+I", ("d", 5, 512))])],
]
DELAY = 1 * S  # WATERMARK FOR ts AS ts - INTERVAL '1' SECOND


def tumble(ts: int, size: int = 10) -> list[Window]:
    """The test's own window of ``ts`` (s): the planner's assignment gives it at runtime."""
    start = ts // size * size
    return [(start * S, (start + size) * S)]


def hop(ts: int, slide: int = 5, size: int = 10) -> list[Window]:
    last = ts // slide * slide
    return [(s * S, (s + size) * S) for s in range(last - size + slide, last + 1, slide)]


def per_record(assign: Any, files: Any = None) -> list[list[tuple[Window, list[tuple[Any, ...]]]]]:
    """Flink's order: each record's changes, then the watermark it brings (max ts - delay);
    the windows fired while each file (of ``files``, :data:`RECORDS` by default) is read."""
    windows, highest, out = ChangeWindows(), None, []
    for records in RECORDS if files is None else files:
        fired = []
        for ts, changes in records:
            for kind, row in changes:
                for window in assign(row[1]):
                    windows.apply(WindowChange(kind, row, window))
            highest = ts if highest is None else max(highest, ts)
            fired += windows.advance(highest * S - DELAY)
        out.append(fired)
    return out


def totals(fired: list[tuple[Window, list[tuple[Any, ...]]]]) -> list[tuple[int, int, int, int]]:
    """``TUMBLE_START, COUNT(*), SUM(s), MAX(ts)`` of each fired window (s)."""
    return [(w[0] // S, len(rows), sum(r[2] for r in rows), max(r[1] for r in rows))
            for w, rows in fired]


def test_tumble_over_max_ts_gives_flinks_rows_file_by_file() -> None:
    # probe1.out 'T': nothing after file 0; [0,10) 2/13/7 in file 1 (b@2 retracted before the
    # watermark passed it, a@7's retraction after: late, dropped); [10,20) in file 2
    assert [totals(f) for f in per_record(tumble)] == [
        [], [(0, 2, 13, 7)], [(10, 2, 55, 13)]]


def test_keyed_tumble_is_the_windows_rows_grouped() -> None:
    # probe1.out 'K': (user, TUMBLE_START, COUNT(*), SUM(s), MAX(ts))
    got = []
    for fired in per_record(tumble):
        got.append(sorted((r[0], w[0] // S, 1, r[2], r[1]) for w, rows in fired for r in rows))
    assert got == [[], [("a", 0, 1, 5, 7), ("e", 0, 1, 8, 4)],
                   [("a", 10, 1, 37, 13), ("b", 10, 1, 18, 12)]]


def test_hop_windows_of_a_change_each_accumulate_and_fire() -> None:
    # probe1.out 'H' (slide 5 s, size 10 s): e@4 came after the watermark passed [-5,5)
    assert [totals(f) for f in per_record(hop)] == [
        [(-5, 1, 2, 2)], [(0, 2, 13, 7)], [(5, 2, 55, 13), (10, 2, 55, 13)]]


def test_a_late_change_is_dropped_an_accumulation_and_a_retraction_alike() -> None:
    windows = ChangeWindows()
    assert windows.apply(WindowChange("+I", ("a", 1), (0, 10)))
    assert windows.advance(20) == [((0, 10), [("a", 1)])]
    assert not windows.apply(WindowChange("-U", ("a", 1), (0, 10)))
    assert not windows.apply(WindowChange("+I", ("b", 9), (0, 10)))
    assert windows.contents == {}
    assert windows.advance(30) == []


def test_the_window_fires_at_its_last_millisecond_once() -> None:
    windows = ChangeWindows()
    windows.apply(WindowChange("+I", ("a",), (0, 10)))
    assert windows.advance(8) == []
    assert windows.advance(9) == [((0, 10), [("a",)])]
    assert windows.advance(9) == [] and windows.advance(100) == []


def test_a_window_whose_rows_were_all_retracted_emits_nothing() -> None:
    windows = ChangeWindows()
    windows.batch([WindowChange("+I", ("a", 1), (0, 10)),
                   WindowChange("-U", ("a", 1), (0, 10)),
                   WindowChange("+U", ("a", 12), (10, 20))], None)
    assert windows.contents == {(0, 10): {}, (10, 20): {("a", 12): 1}}
    assert windows.batch([], 11) == []
    assert windows.contents == {(10, 20): {("a", 12): 1}}


def test_equal_rows_count_and_a_retraction_takes_one() -> None:
    windows = ChangeWindows()
    change = WindowChange("+I", ("x", 3), (0, 10))
    fired = windows.batch([change, change, change, WindowChange("-D", ("x", 3), (0, 10))], 9)
    assert fired == [((0, 10), [("x", 3), ("x", 3)])]


def test_per_micro_batch_watermark_fires_after_the_batchs_changes() -> None:
    # a micro-batch applies all its changes before its watermark: a@7's retraction from [0,10)
    # is in time here, where Flink's per-record watermark (file 1 of probe1) dropped it
    windows = ChangeWindows()
    first = [WindowChange(k, r, tumble(r[1])[0]) for _, cs in RECORDS[0] for k, r in cs]
    second = [WindowChange(k, r, tumble(r[1])[0]) for _, cs in RECORDS[1] for k, r in cs]
    assert windows.batch(first, 7 * S - DELAY) == []
    assert totals(windows.batch(second, 13 * S - DELAY)) == [(0, 1, 8, 4)]


def with_time(kind: str, user: str, ts: int, s: int, slide: int = 10
              ) -> tuple[str, tuple[Any, ...]]:
    """A change of ``(user, ts, s)`` as :func:`fold_windows` gives it: its time and its
    windows of 10 s every ``slide`` s (ms)."""
    windows = tumble(ts) if slide == 10 else hop(ts, slide)
    return kind, (user, ts, s, ts * S, tuple(windows))


def test_window_step_over_probe4s_micro_batches_gives_flinks_rows() -> None:
    # probe4.py: one micro-batch per file, the changes of MAX(ts)/SUM(v) per user against the
    # rows emitted before; PyFlink 2.3's 'T' and 'K' rows after each file (probe4.out)
    batches = [
        [with_time("+I", "a", 1, 1), with_time("+I", "b", 2, 2), with_time("+I", "e", 4, 8)],
        [with_time("-U", "a", 1, 1), with_time("+U", "a", 7, 5),
         with_time("-U", "b", 2, 2), with_time("+U", "b", 12, 18)],
        [with_time("-U", "a", 7, 5), with_time("+U", "a", 13, 37), with_time("+I", "c", 25, 64),
         with_time("+I", "d", 5, 512)]]
    windows = ChangeWindows()
    fired = [[r for _, rows in window_step(windows, b, DELAY) for r in rows] for b in batches]
    assert fired[0] == []
    assert sorted(fired[1]) == [("a", 7, 5), ("e", 4, 8)]  # K: a 1/5/7, e 1/8/4; T: 2/13/7
    assert sorted(fired[2]) == [("a", 13, 37), ("b", 12, 18)]  # T: 2/55/13
    assert windows.watermark == 24 * S and list(windows.contents) == [(20 * S, 30 * S)]


def test_window_step_watermark_is_the_highest_accumulated_time_less_the_delay() -> None:
    windows = ChangeWindows()
    assert window_step(windows, [with_time("+I", "a", 12, 1)], DELAY) == []
    assert windows.watermark == 11 * S
    window_step(windows, [with_time("-D", "a", 12, 1), ("+I", ("z", None, 0, None, ()))], DELAY)
    assert windows.watermark == 11 * S and windows.contents == {(10 * S, 20 * S): {}}


def test_group_window_of_a_legacy_tumble_or_hop_only() -> None:
    import sqlglot

    from sessioncluster.spark.flinksql.dialect import Flink

    def select(text: str) -> Any:
        return sqlglot.parse_one(text, read=Flink)

    assert group_window_of(select("SELECT COUNT(*) FROM t GROUP BY k, TUMBLE(ts, INTERVAL '10' "
                                  "SECOND)")) == ("ts", 10 * S, 10 * S, 0)
    assert group_window_of(select("SELECT COUNT(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '1' "
                                  "MINUTE, INTERVAL '5' SECOND)")) == ("ts", 60 * S, 60 * S, 5 * S)
    assert group_window_of(select("SELECT COUNT(*) FROM t GROUP BY HOP(ts, INTERVAL '5' SECOND, "
                                  "INTERVAL '10' SECOND)")) == ("ts", 10 * S, 5 * S, 0)
    assert group_window_of(select("SELECT COUNT(*) FROM t GROUP BY SESSION(ts, INTERVAL '5' "
                                  "SECOND)")) is None
    assert group_window_of(select("SELECT COUNT(*) FROM t GROUP BY k")) is None


def test_with_window_columns_are_sparks_windows_of_the_time(local_spark: Any) -> None:
    import datetime as dt

    frame = local_spark.createDataFrame(
        [("a", dt.datetime(2024, 1, 1, 0, 0, 13)), ("b", None)], "user STRING, ts TIMESTAMP_NTZ")
    rows = [tuple(r) for r in with_window_columns(frame, "ts", 10 * S, 10 * S, 0).collect()]
    epoch = 1704067200 * S  # 2024-01-01 00:00:00 UTC
    # a row without a time is in no window: Spark's window(...) leaves it out
    assert [r[2:] for r in rows] == [(epoch + 13 * S, epoch + 10 * S, epoch + 20 * S)]
    assert list(frame.columns) + list(WINDOW_COLUMNS) == with_window_columns(
        frame, "ts", 10 * S, 10 * S, 0).columns
    # a HOP's row once per window; folded back into one row with its windows
    hopped = [tuple(r) for r in with_window_columns(frame, "ts", 10 * S, 5 * S, 0).collect()]
    assert fold_windows(hopped) == [
        ("a", dt.datetime(2024, 1, 1, 0, 0, 13), epoch + 13 * S,
         ((epoch + 5 * S, epoch + 15 * S), (epoch + 10 * S, epoch + 20 * S)))]


def test_fold_windows_keeps_the_rows_order_and_gathers_their_windows() -> None:
    rows = [("b", 2, 2000, 0, 10), ("a", 7, 7000, 5, 15), ("a", 7, 7000, 0, 10),
            ("z", None, None, None, None)]
    assert fold_windows(rows) == [("b", 2, 2000, ((0, 10),)),
                                  ("a", 7, 7000, ((0, 10), (5, 15))), ("z", None, None, ())]


#: /work/briefs/data/legacyhop/probe1.py's files (legacywin's probe4 data) as Flink's changes
P4_RECORDS: list[list[tuple[int, list[tuple[str, tuple[Any, ...]]]]]] = [
    [(1, [("+I", ("a", 1, 1))]), (2, [("+I", ("b", 2, 2))]), (4, [("+I", ("e", 4, 8))])],
    [(7, [("-U", ("a", 1, 1)), ("+U", ("a", 7, 5))]),
     (12, [("-U", ("b", 2, 2)), ("+U", ("b", 12, 18))])],
    [(13, [("-U", ("a", 7, 5)), ("+U", ("a", 13, 37))]), (25, [("+I", ("c", 25, 64))]),
     (5, [("+I", ("d", 5, 512))])],
]
#: /work/briefs/data/legacyhop/probe2.py's files: in each, the changes that retract come before
#: the record whose watermark passes their windows (a watermark per record or per file alike)
P5_RECORDS: list[list[tuple[int, list[tuple[str, tuple[Any, ...]]]]]] = [
    [(1, [("+I", ("a", 1, 1))]), (2, [("+I", ("b", 2, 2))]), (4, [("+I", ("e", 4, 8))])],
    [(3, [("-U", ("a", 1, 1)), ("+U", ("a", 3, 5))]),
     (12, [("-U", ("b", 2, 2)), ("+U", ("b", 12, 18))])],
    [(5, [("+I", ("d", 5, 32))]), (13, [("-U", ("a", 3, 5)), ("+U", ("a", 13, 69))]),
     (25, [("+I", ("c", 25, 128))])],
]
#: probe2.out 'H' (HOP_START, COUNT(*), SUM(s), MAX(ts)) after each file: d@5 late for
#: [0,10), a@3's retraction late for [-5,5) and [0,10)
P5_HOP = [[], [(-5, 2, 13, 4), (0, 2, 13, 4)], [(5, 3, 119, 13), (10, 2, 87, 13)]]


def test_hop_over_probe4s_files_per_record_gives_flinks_rows() -> None:
    # legacyhop probe1.out 'H': [-5,5) fired on a@7's watermark with b@2 and e@4 (a@1
    # retracted first), before b@12 retracted b@2 (late for it)
    assert [totals(f) for f in per_record(hop, P4_RECORDS)] == [
        [], [(-5, 2, 10, 4), (0, 2, 13, 7)], [(5, 2, 55, 13), (10, 2, 55, 13)]]


def test_hop_over_probe2s_files_per_record_and_per_micro_batch_give_flinks_rows() -> None:
    flink = per_record(hop, P5_RECORDS)
    assert [totals(f) for f in flink] == P5_HOP
    # one micro-batch per file (each change with its windows, as fold_windows gives them):
    # the same windows' rows fire after each file
    windows = ChangeWindows()
    for records, fired in zip(P5_RECORDS, flink):
        batch = [with_time(kind, *row, slide=5) for _, changes in records for kind, row in changes]
        assert window_step(windows, batch, DELAY) == fired
    keyed = [[(w[0] // S, r[0], r[2]) for w, rows in f for r in rows] for f in flink]
    # probe2.out 'HK' (user, HOP_START, SUM(s)): each user's row once per window that fires
    assert [sorted(k) for k in keyed] == [
        [], [(-5, "a", 5), (-5, "e", 8), (0, "a", 5), (0, "e", 8)],
        [(5, "a", 69), (5, "b", 18), (5, "d", 32), (10, "a", 69), (10, "b", 18)]]


def test_with_window_start_adds_a_hops_start_to_its_own_select_only() -> None:
    import sqlglot

    from sessioncluster.spark.flinksql.dialect import Flink

    hop = sqlglot.parse_one("SELECT COUNT(*) AS n FROM v GROUP BY HOP(ts, INTERVAL '5' SECOND, "
                            "INTERVAL '10' SECOND)", read=Flink)
    windowed = with_window_start(hop)
    assert windowed is not None and windowed[1] == WINDOW_START
    assert [e.alias_or_name for e in windowed[0].expressions] == ["n", WINDOW_START]
    assert windowed[0].expressions[-1].this.name.upper() == "HOP_START"
    assert [e.alias_or_name for e in hop.expressions] == ["n"]  # a copy
    tumble = sqlglot.parse_one("SELECT n FROM (SELECT COUNT(*) AS n FROM v GROUP BY "
                               "TUMBLE(ts, INTERVAL '5' SECOND))", read=Flink)
    assert with_window_start(tumble) == (tumble, None)
    nested = sqlglot.parse_one(f"SELECT n FROM ({hop.sql(dialect=Flink)})", read=Flink)
    assert with_window_start(nested) is None


def test_a_hops_micro_batches_into_a_filesystem_sink_write_flinks_rows(local_spark: Any,
                                                                       tmp_path: Any) -> None:
    # legacyhop probe2.out 'H' after files 0 and 1, through the runtime's pieces: the
    # updating query's rows with Spark's windows, folded, their changes into the windows,
    # the window query per fired window (its start a hidden last column), the sink's files
    import csv
    import datetime as dt
    from types import SimpleNamespace

    from sessioncluster.spark.flinksql.microbatch import write_batch
    from sessioncluster.spark.flinksql.model import CatalogTable, Column
    from sessioncluster.spark.flinksql.updating import OuterQuery

    def at(s: int) -> dt.datetime:
        return dt.datetime(2024, 1, 1) + dt.timedelta(seconds=s)

    schema = "user STRING, ts TIMESTAMP_NTZ, s BIGINT"
    sql = ("SELECT w.start AS ws, w.end AS we, COUNT(*) AS n, SUM(s) AS ss, MAX(ts) AS mx, "
           f"w.start AS {WINDOW_START} FROM (SELECT *, window(CAST(ts AS TIMESTAMP), "
           "'10 seconds', '5 seconds') AS w FROM hop_view) GROUP BY w")
    local_spark.createDataFrame([], schema).createOrReplaceTempView("hop_view")
    outer = OuterQuery("hop_view", sql, local_spark.createDataFrame([], schema).schema,
                       local_spark.sql(sql).drop(WINDOW_START).schema, [],
                       window_delay_ms=DELAY, window_column=WINDOW_START)
    out = tmp_path / "out"
    sink = CatalogTable("hop_out", [Column("ws", "TIMESTAMP(3)"), Column("we", "TIMESTAMP(3)"),
                                    Column("n", "BIGINT"), Column("ss", "BIGINT"),
                                    Column("mx", "TIMESTAMP(3)")],
                        {"connector": "filesystem", "path": str(out), "format": "csv"})
    insert = SimpleNamespace(table=sink, output_mode="update", key_positions=[0],
                             row_kinds=False, outer=outer)
    # the GROUP BY user's updated rows after files 0 and 1 (Spark's update mode)
    batches = [[("a", at(1), 1), ("b", at(2), 2), ("e", at(4), 8)],
               [("a", at(3), 5), ("b", at(12), 18)]]
    written = []
    for batch_id, rows in enumerate(batches):
        frame = with_window_columns(local_spark.createDataFrame(rows, schema), "ts", 10 * S,
                                    5 * S, 0)
        written.append(write_batch(insert, frame, batch_id, tmp_path / "state"))
    files = [p for p in sorted(out.rglob("*")) if p.is_file() and not p.name.startswith(".")]
    got = sorted(r for p in files for r in csv.reader(p.open()) if r)
    assert written == [0, 2]
    assert got == [["2023-12-31 23:59:55", "2024-01-01 00:00:05", "2", "13", "2024-01-01 00:00:04"],
                   ["2024-01-01 00:00:00", "2024-01-01 00:00:10", "2", "13", "2024-01-01 00:00:04"]]
