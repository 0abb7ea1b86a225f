"""``window_time`` as the rowtime of a window TVF aggregation's result: ``to_data_stream`` of
``SELECT window_start, window_end, window_time, COUNT(*) FROM TABLE(TUMBLE(...)) GROUP BY ...``
gives records whose timestamp is ``window_time`` (window_end - 1 ms), and a downstream tumbling
event-time window of the DataStream groups them by it: for a bounded table in BATCH and in
STREAMING (PyFlink 2.3 in STREAMING gives the same records: ``(2, 9999)``, ``(2, 19999)``, ...,
and the windows ``(0, 4)``, ``(20000, 2)``, ``(40000, 1)``; its BATCH planner fails on this query
with a Calcite type mismatch), and for an unbounded one (a monitored directory) as the
watermark closes the windows. There the DataStream's watermark is the largest window_time
read (the windows' rows are a query of their own, read as files), so a DataStream window closes
once a TVF window after its end has closed: later than in Flink, whose DataStream gets the
source's watermark, with the same windows and counts."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import pytest

import sessioncluster
from sessioncluster.client.table_environment import StreamTableEnvironment
from sessioncluster.common import RuntimeExecutionMode
from sessioncluster.pyflink.common import Time, Types
from sessioncluster.pyflink.datastream.functions import ProcessFunction, ProcessWindowFunction
from sessioncluster.pyflink.datastream.window import TumblingEventTimeWindows

from .test_streaming import drop
from .test_table_to_unbounded_datastream import environments, event_lines, events_table, take
from .test_table_unbounded_datastream import EVENTS

pytestmark = pytest.mark.integration

#: seconds of the TVF's tumbling windows, and of the DataStream's windows after it
TVF_SECONDS, STREAM_SECONDS = 10, 20

#: ``<seconds>,<word>`` of a bounded table
BOUNDED = ["1,a", "4,b", "12,a", "15,a", "27,c", "31,b", "45,a"]


def tvf_query(table: str) -> str:
    return (f"SELECT window_start, window_end, window_time, COUNT(*) AS c FROM TABLE(TUMBLE("
            f"TABLE {table}, DESCRIPTOR(ts), INTERVAL '{TVF_SECONDS}' SECOND)) "
            "GROUP BY window_start, window_end, window_time")


class Stamp(ProcessFunction):
    """Each TVF row's count with its record timestamp (epoch ms)."""

    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Any:
        yield value.c, ctx.timestamp()


class StartAndSum(ProcessWindowFunction):
    """A DataStream window's start (epoch ms) and the sum of the TVF counts in it."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield context.window().start, sum(c for _, c in elements)


def stamped(counts: dict[int, int]) -> list[tuple[int, int]]:
    """Plain Python: per TVF window (its start in seconds: its count), the record
    ``(count, window_time in epoch ms)``."""
    return sorted((c, (start + TVF_SECONDS) * 1000 - 1) for start, c in counts.items())


def stream_windows(counts: dict[int, int], watermark: float) -> list[tuple[int, int]]:
    """Plain Python: the DataStream's tumbling windows over the TVF records (stamped with
    window_time) that the watermark (seconds) has closed: ``(start ms, sum of counts)``."""
    sums: collections.Counter[int] = collections.Counter()
    for start, c in counts.items():
        sums[((start + TVF_SECONDS) * 1000 - 1) // (STREAM_SECONDS * 1000)] += c
    return sorted((w * STREAM_SECONDS * 1000, s) for w, s in sums.items()
                  if (w + 1) * STREAM_SECONDS <= watermark)


def tvf_counts(events: list[str]) -> dict[int, int]:
    """Plain Python: the TVF's count per window (its start in seconds)."""
    return dict(collections.Counter(int(e.split(",")[0]) // TVF_SECONDS * TVF_SECONDS
                                    for e in events))


def bounded_environment(session: sessioncluster.Session, mode: RuntimeExecutionMode,
                        path: Path) -> tuple[Any, StreamTableEnvironment, str]:
    env = session.get_execution_environment()
    env.set_runtime_mode(mode)
    env.set_parallelism(2)
    t_env = StreamTableEnvironment.create(env)
    name = f"bounded_{path.parent.name}_{mode.name.lower()}"
    t_env.execute_sql(f"""CREATE TEMPORARY TABLE {name} (ts TIMESTAMP(3), word STRING,
            WATERMARK FOR ts AS ts - INTERVAL '0' SECOND)
        WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')""")
    return env, t_env, name


@pytest.mark.parametrize("mode", [RuntimeExecutionMode.BATCH, RuntimeExecutionMode.STREAMING])
def test_window_time_stamps_a_bounded_tables_records(session, tmp_path: Path,
                                                      mode: RuntimeExecutionMode) -> None:
    path = tmp_path / "events.csv"
    path.write_text("\n".join(event_lines(BOUNDED)) + "\n")
    env, t_env, name = bounded_environment(session, mode, path)
    table = t_env.sql_query(tvf_query(name))
    records = t_env.to_data_stream(table).process(
        Stamp(), output_type=Types.TUPLE([Types.LONG(), Types.LONG()]))
    counts = tvf_counts(BOUNDED)
    assert sorted(records.execute_and_collect("window_time stamps")) == stamped(counts)
    windows = (t_env.to_data_stream(table)
               .map(lambda r: ("all", r.c), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
               .key_by(lambda t: t[0])
               .window(TumblingEventTimeWindows.of(Time.seconds(STREAM_SECONDS)))
               .process(StartAndSum(), output_type=Types.TUPLE([Types.LONG(), Types.LONG()])))
    # a bounded input ends with the final watermark: every window fires
    assert sorted(windows.execute_and_collect("windows over window_time")) == \
        stream_windows(counts, float("inf"))


def closed_tvf_windows(rounds: list[list[str]]) -> dict[int, int]:
    """Plain Python: the TVF windows (start in seconds: count) that the watermark (the largest
    timestamp so far, moved after each round) has closed; late events dropped."""
    counts: collections.Counter[int] = collections.Counter()
    watermark = -1
    for events in rounds:
        seconds = [int(e.split(",")[0]) for e in events]
        counts.update(s // TVF_SECONDS * TVF_SECONDS for s in seconds if s >= watermark)
        watermark = max([watermark, *seconds])
    return {start: c for start, c in counts.items() if start + TVF_SECONDS <= watermark}


def test_window_time_stamps_an_unbounded_tables_records(session, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    env, t_env = environments(session, src)
    table = t_env.sql_query(tvf_query(events_table(t_env, src)))
    records = t_env.to_data_stream(table).process(
        Stamp(), output_type=Types.TUPLE([Types.LONG(), Types.LONG()])
    ).execute_and_collect("window_time stamps, unbounded")
    got: list[tuple[int, int]] = []
    with records:
        for i in range(len(EVENTS)):
            drop(src, f"part-{i}.csv", event_lines(EVENTS[i]))
            expected = stamped(closed_tvf_windows(EVENTS[: i + 1]))
            got += take(records, len(expected) - len(got))
            assert sorted(got) == expected


def test_event_time_windows_over_window_time_of_an_unbounded_table(session,
                                                                  tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    env, t_env = environments(session, src)
    table = t_env.sql_query(tvf_query(events_table(t_env, src)))
    windows = (t_env.to_data_stream(table)
               .map(lambda r: ("all", r.c), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
               .key_by(lambda t: t[0])
               .window(TumblingEventTimeWindows.of(Time.seconds(STREAM_SECONDS)))
               .process(StartAndSum(), output_type=Types.TUPLE([Types.LONG(), Types.LONG()])))
    records = windows.execute_and_collect("windows over window_time, unbounded")
    got: list[tuple[int, int]] = []
    # the last two rounds close the TVF windows [20 s, 30 s) and [40 s, 50 s): their rows'
    # window_time closes the DataStream's windows [0, 20 s) and [20 s, 40 s)
    rounds = [*EVENTS, ["47,d"], ["58,e"]]
    with records:
        for i in range(len(rounds)):
            drop(src, f"part-{i}.csv", event_lines(rounds[i]))
            closed = closed_tvf_windows(rounds[: i + 1])
            watermark = max((start + TVF_SECONDS - 0.001 for start in closed), default=-1.0)
            expected = stream_windows(closed, watermark)
            got += take(records, len(expected) - len(got))
            assert sorted(got) == expected
