"""A BATCH keyed window over more input than the TaskManagers' memory (issue 26, item 6): a
keyed tumbling event-time window counting with a ProcessWindowFunction (no pre-aggregation:
every event crosses the shuffle and reaches the keyed operator, whose input spills to disk past
``spark.python.worker.memory``), over ~1 GB of generated events on TaskManagers of 512 MB; the
counts checked against plain Python's, computed while the events were written.

Slow (minutes): run only with ``SESSIONCLUSTER_SLOW=1``; ``SESSIONCLUSTER_SLOW_MB`` sets the
size (default 1024)."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any, Iterable

import pytest

import sessioncluster
from benchmarks.window_count import JITTER_MS, EventTime, parse
from sessioncluster.api.functions import ProcessWindowFunction
from sessioncluster.api.watermark import WatermarkStrategy
from sessioncluster.api.window import TumblingEventTimeWindows
from sessioncluster.common.time import Duration, Time

from ..helpers import descendants, session_pids, wait_gone

pytestmark = pytest.mark.skipif(os.environ.get("SESSIONCLUSTER_SLOW") != "1",
                                reason="slow (minutes): SESSIONCLUSTER_SLOW=1 runs it")

KEYS = 1000
WINDOW_MS = 3_600_000


def write_events(path: Path, mb: int, seed: int = 26) -> dict[tuple[str, int], int]:
    """``ts_ms,key`` lines, about ``mb`` MB, out of order by up to 5 s; returns the count of each
    (key, window start)."""
    rng = random.Random(seed)
    counts: dict[tuple[str, int], int] = {}
    target, written, t = mb << 20, 0, 1_700_000_000_000
    with open(path, "w") as fh:
        while written < target:
            lines = []
            for _ in range(10_000):
                t += rng.randint(0, 20)
                ts, key = t - rng.randint(0, JITTER_MS), f"k{rng.randrange(KEYS)}"
                start = ts - ts % WINDOW_MS
                counts[(key, start)] = counts.get((key, start), 0) + 1
                lines.append(f"{ts},{key}")
            chunk = "\n".join(lines) + "\n"
            fh.write(chunk)
            written += len(chunk)
    return counts


class Count(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        yield key, context.window().start, sum(1 for _ in elements)


@pytest.fixture(scope="module")
def small_session(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A session of its own: two TaskManagers (executors) of 512 MB each."""
    home = tmp_path_factory.mktemp("sc-home-scale")
    old = os.environ.get("SESSIONCLUSTER_HOME")
    os.environ["SESSIONCLUSTER_HOME"] = str(home)
    s = sessioncluster.start("itest-scale", taskmanagers=2, slots=1, memory=512, quiet=True)
    pids = descendants(session_pids(s))
    try:
        yield s
    finally:
        pids |= descendants(session_pids(s))
        s.stop()
        if old is None:
            os.environ.pop("SESSIONCLUSTER_HOME", None)
        else:
            os.environ["SESSIONCLUSTER_HOME"] = old
        assert not wait_gone(sorted(pids))


def test_a_keyed_window_over_more_input_than_memory(small_session: Any, tmp_path: Path) -> None:
    mb = int(os.environ.get("SESSIONCLUSTER_SLOW_MB", "1024"))
    path = tmp_path / "events.csv"
    expected = write_events(path, mb)
    env = small_session.get_execution_environment()
    env.set_parallelism(2)
    strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(JITTER_MS))
                .with_timestamp_assigner(EventTime()))
    got = (env.read_text_file(str(path)).map(parse)
           .assign_timestamps_and_watermarks(strategy)
           .key_by(lambda e: e[0])
           .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
           .process(Count())
           .execute_and_collect("window count over more input than memory"))
    assert len(got) == len(expected)
    assert {(k, s): n for k, s, n in got} == expected
