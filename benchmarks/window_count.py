"""A keyed tumbling event-time window count over a generated file of timestamped events
(>= 50 MB): the DataStream program on the session cluster (PyFlink's names: a timestamp assigner,
``key_by(...).window(TumblingEventTimeWindows.of(...))``, a reduce with a ProcessWindowFunction)
against the same computation written directly with PySpark's DataFrame API (``groupBy(key,
window(ts, ...)).count()``) on a warm plain SparkSession with the same master, interleaved; and,
for the cost of per-record Python, against hand-written PySpark RDD code (``reduceByKey`` on
``(key, window start)``, which combines on the map side).

    python benchmarks/window_count.py [--mb 50] [--runs 3] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import operator
import os
import random
import sys
import tempfile
import time
from typing import Any, Iterable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import sessioncluster  # noqa: E402
from benchmarks.common import bench_session, interleaved, plain_session, write_json  # noqa: E402
from sessioncluster.api.functions import OutputTag, ProcessWindowFunction  # noqa: E402
from sessioncluster.api.watermark import TimestampAssigner, WatermarkStrategy  # noqa: E402
from sessioncluster.api.window import TumblingEventTimeWindows  # noqa: E402
from sessioncluster.common.time import Duration, Time  # noqa: E402

KEYS = 1000
SEED = 20261122
START_MS = 1_700_000_000_000
#: mean spacing of events in event time, and how far one may arrive late (out of order)
STEP_MS = 10
JITTER_MS = 5000
WINDOW_MS = 600_000


def events_file(mb: int) -> str:
    """``ts_ms,key`` lines, about ``mb`` MB, slightly out of order; written once and cached."""
    cache = os.path.join(tempfile.gettempdir(), "sessioncluster-bench")
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, f"events-{mb}mb-v1.csv")
    if os.path.exists(path):
        return path
    rng = random.Random(SEED)
    target = mb * 1024 * 1024
    written, t = 0, START_MS
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        while written < target:
            lines = []
            for _ in range(10_000):
                t += rng.randint(0, 2 * STEP_MS)
                lines.append(f"{t - rng.randint(0, JITTER_MS)},k{rng.randrange(KEYS)}")
            chunk = "\n".join(lines) + "\n"
            fh.write(chunk)
            written += len(chunk)
    os.replace(tmp, path)
    return path


def parse(line: str) -> tuple[str, int]:
    ts, key = line.split(",")
    return key, int(ts)


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return value[1]


class WithWindowStart(ProcessWindowFunction):
    """(key, window start, count) from the pre-aggregated count of the window."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        for _, n in elements:
            yield key, context.window().start, n


def arguments(argv: list[str] | None) -> tuple[int, int, int, str | None]:
    """``--mb``, ``--runs``, ``--quick``, ``--json`` (also ``window_streaming``'s): the size of
    the events file, the timed runs, the warm-up runs and where the figures go."""
    p = argparse.ArgumentParser()
    p.add_argument("--mb", type=int, default=50, help="size of the events file (default: %(default)s MB)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="a smoke run: 5 MB, one run")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args(argv)
    return (5, 1, 1, args.json) if args.quick else (args.mb, args.runs, 1, args.json)


def main(argv: list[str] | None = None) -> dict[str, object]:
    mb, runs, warmup, json_path = arguments(argv)

    t0 = time.perf_counter()
    path = events_file(mb)
    prepare_s = time.perf_counter() - t0
    size_mb = os.path.getsize(path) / 2**20

    with bench_session("windows") as (session, _):
        master = session.status().spark_master
        with plain_session(master) as spark:
            figs, results = _measure(session, spark, path, runs, warmup)

    a, b, c = (figs[k].median for k in ("datastream", "dataframe", "rdd"))
    events = sum(n for _, _, n in results)
    print(f"\nKeyed tumbling window count, {size_mb:.1f} MB ({path}), {events} events, "
          f"{KEYS} keys, {WINDOW_MS // 1000} s windows, {len(results)} results, parallelism 2, "
          f"master {master}")
    for f in figs.values():
        print("  " + f.row())
    print(f"  ratio DataStream / PySpark DataFrame = {a / b:.2f}")
    print(f"  ratio DataStream / PySpark RDD = {a / c:.2f}")
    out = {"benchmark": "window_count", "master": master, "mb": size_mb, "path": path,
           "prepare_s": prepare_s, "events": events, "results": len(results), "runs": runs,
           "warmup": warmup, "figures": [f.as_dict() for f in figs.values()],
           "ratio_datastream_dataframe": a / b, "ratio_datastream_rdd": a / c}
    write_json(json_path, out)
    return out


def window_counts(env: Any, path: str, late_data_side_output: bool = False) -> Any:
    """The DataStream program (either runtime mode): (key, window start, count) of each
    ten-minute event-time window of the events under ``path``. With ``late_data_side_output``
    the window sends late records to a side output (none are late here), which keeps STREAMING's
    one-record path (no pre-aggregation before the shuffle)."""
    strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(JITTER_MS))
                .with_timestamp_assigner(EventTime()))
    windows = (env.read_text_file(path).map(parse)
               .assign_timestamps_and_watermarks(strategy)
               .map(lambda e: (e[0], 1))
               .key_by(lambda e: e[0])
               .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS))))
    if late_data_side_output:
        windows = windows.side_output_late_data(OutputTag("late"))
    return windows.reduce(lambda x, y: (x[0], x[1] + y[1]), window_function=WithWindowStart())


def workloads(session: sessioncluster.Session, spark: Any, path: str) -> dict[str, Any]:
    """The three programs over the events file, each returning its (key, window start, count)
    results: the DataStream job at parallelism 2, the DataFrame and the RDD code."""
    from pyspark.sql import functions as F

    env = session.get_execution_environment()
    env.set_parallelism(2)

    def datastream() -> list[tuple[str, int, int]]:
        return window_counts(env, path).execute_and_collect("window count")

    def dataframe() -> list[tuple[str, int, int]]:
        df = (spark.read.csv(path, schema="ts LONG, key STRING")
              .groupBy("key", F.window(F.timestamp_millis("ts"), f"{WINDOW_MS // 1000} seconds"))
              .count()
              .select("key", F.unix_millis("window.start").alias("start"), "count"))
        return [(r["key"], r["start"], r["count"]) for r in df.collect()]

    def rdd() -> list[tuple[str, int, int]]:
        size = WINDOW_MS
        return (spark.sparkContext.textFile(path, 2).map(parse)
                .map(lambda e: ((e[0], e[1] - e[1] % size), 1))
                .reduceByKey(operator.add)
                .map(lambda kv: (kv[0][0], kv[0][1], kv[1]))
                .collect())

    return {"datastream": datastream, "dataframe": dataframe, "rdd": rdd}


def same_results(name: str, ours: list[Any], theirs: list[Any]) -> None:
    """Both sorted; raises with the first difference."""
    if ours != theirs:
        raise AssertionError(
            f"the window counts differ from {name}: {len(ours)} vs {len(theirs)} results, first "
            f"difference {next(((x, y) for x, y in zip(ours, theirs) if x != y), None)}")


def _measure(session: sessioncluster.Session, spark: Any, path: str, runs: int,
             warmup: int) -> tuple[dict[str, Any], list[tuple[str, int, int]]]:
    """Check that both agree, then time them interleaved."""
    programs = workloads(session, spark, path)
    ours = sorted(programs["datastream"]())
    for name in ("dataframe", "rdd"):
        same_results(name, ours, sorted(programs[name]()))
    figs = interleaved(runs, warmup, **programs)
    return figs, ours


if __name__ == "__main__":
    main()
