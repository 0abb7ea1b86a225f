"""The windows of a legacy GROUP BY TUMBLE/HOP over an updating query's changes (issue 27),
without Spark: accumulate, retract, fire, drop late, as Flink 2.3 does
(/work/briefs/data/legacywin/probe1.py, probe1.out)."""

from __future__ import annotations

from typing import Any

from sessioncluster.spark.flinksql.updatingwindow import ChangeWindows, Window, WindowChange

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


def per_record(assign: Any) -> list[list[tuple[Window, list[tuple[Any, ...]]]]]:
    """Flink's order: each record's changes, then the watermark it brings (max ts - delay);
    the windows fired while each file is read."""
    windows, highest, out = ChangeWindows(), None, []
    for records in RECORDS:
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
