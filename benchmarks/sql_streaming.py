"""A STREAMING tumbling-window count over CSV files dropped into a monitored directory: a Flink
SQL ``INSERT INTO`` (``filesystem`` source with ``source.monitor-interval`` and a ``WATERMARK``,
``TUMBLE`` window TVF, ``filesystem`` sink) on the session, against the same query written
directly with Structured Streaming (``readStream.csv`` + ``withWatermark`` +
``groupBy(window(...)).count()`` into a CSV file sink, append mode) on a warm plain SparkSession
with the same master and trigger, interleaved.

A run: a fresh empty source directory and sink, the query started, every file of the events
renamed into the directory at once (the last one holds one event far ahead, which closes every
window before it), and the time until the sink holds every closed window's count (checked equal
to plain Python's). Ratio of medians (target <= 1.1).

    python benchmarks/sql_streaming.py [--events 2000000] [--files 20] [--runs 3] [--quick]
                                       [--json FILE]
"""

from __future__ import annotations

import argparse
import collections
import csv
import datetime as dt
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import (  # noqa: E402
    bench_session,
    interleaved,
    plain_session,
    target,
    write_json,
)
from sessioncluster.common.execution_mode import RuntimeExecutionMode  # noqa: E402

SEED = 20261126
KEYS = 100
TRIGGER_MS = 200
WINDOW_S = 60
#: mean spacing of the events in event time
STEP_MS = 20
START = dt.datetime(2026, 11, 26, 8, 0, 0)
#: how long one run may take before it is a failure
RUN_TIMEOUT_S = 900.0


def event_files(events: int, files: int) -> tuple[Path, dict[str, int]]:
    """``files`` CSV files of ``ts,key`` (in order of time), written once and cached; a last
    file with one event a day later; and the expected count per window start (ISO text)."""
    root = Path(tempfile.gettempdir()) / "sessioncluster-bench" / f"sqlstream-{events}-{files}-v1"
    done = root / "_EXPECTED.csv"
    if not done.exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        rng = random.Random(SEED)
        counts: collections.Counter[str] = collections.Counter()
        t = START
        per_file = events // files
        for i in range(files):
            lines = []
            for _ in range(per_file):
                t += dt.timedelta(milliseconds=rng.randint(0, 2 * STEP_MS))
                lines.append(f"{t:%Y-%m-%d %H:%M:%S.%f}"[:-3] + f",k{rng.randrange(KEYS)}\n")
                start = t.replace(second=t.second - t.second % WINDOW_S, microsecond=0)
                counts[f"{start:%Y-%m-%d %H:%M:%S}"] += 1
            (root / f"part-{i:03d}.csv").write_text("".join(lines))
        closing = t + dt.timedelta(days=1)
        (root / f"part-{files:03d}.csv").write_text(f"{closing:%Y-%m-%d %H:%M:%S.000},k0\n")
        with open(done, "w", newline="") as fh:
            csv.writer(fh).writerows(sorted(counts.items()))
    with open(done, newline="") as fh:
        return root, {start: int(n) for start, n in csv.reader(fh)}


def _drop_all(pool: Path, directory: Path) -> None:
    """Every file of ``pool`` renamed into ``directory`` (written aside first: read whole)."""
    for path in sorted(pool.glob("part-*.csv")):
        aside = directory.parent / f".{directory.name}-{path.name}"
        shutil.copyfile(path, aside)
        os.replace(aside, directory / path.name)


def sink_counts(directory: Path) -> dict[str, int]:
    """The window counts in a CSV sink directory: window start (ISO text, seconds) -> count."""
    out: dict[str, int] = {}
    for path in directory.rglob("*"):
        hidden = any(part.startswith((".", "_")) for part in path.relative_to(directory).parts)
        if path.is_file() and not hidden:  # not Spark's _spark_metadata, nor .crc files
            with open(path, newline="") as fh:
                for row in csv.reader(fh):
                    if len(row) == 2:
                        out[row[0].replace("T", " ")[:19]] = int(row[1])
    return out


def _wait_for(directory: Path, expected: dict[str, int]) -> None:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while sink_counts(directory) != expected:
        if time.monotonic() > deadline:
            got = sink_counts(directory)
            raise AssertionError(f"{len(got)} of {len(expected)} windows within "
                                 f"{RUN_TIMEOUT_S} s; {sum(got.values())} events")
        time.sleep(0.05)


def flink_sql_run(session: Any, pool: Path, work: Path, expected: dict[str, int]) -> None:
    """One run of the Flink SQL INSERT on the session."""
    run = uuid.uuid4().hex[:8]
    src, sink = work / f"sql-in-{run}", work / f"sql-out-{run}"
    src.mkdir()
    streaming = RuntimeExecutionMode.STREAMING
    conf = {"execution.checkpointing.interval": f"{TRIGGER_MS} ms"}
    session.execute_sql(f"""CREATE TABLE ev_{run} (ts TIMESTAMP(3), k STRING,
        WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem',
        'path' = '{src}', 'format' = 'csv', 'source.monitor-interval' = '{TRIGGER_MS} ms')""")
    session.execute_sql(f"""CREATE TABLE counts_{run} (window_start TIMESTAMP(3), n BIGINT)
        WITH ('connector' = 'filesystem', 'path' = '{sink}', 'format' = 'csv')""")
    try:
        job_id = session.execute_sql(
            f"INSERT INTO counts_{run} SELECT window_start, COUNT(*) FROM TABLE(TUMBLE("
            f"TABLE ev_{run}, DESCRIPTOR(ts), INTERVAL '{WINDOW_S}' SECONDS)) "
            "GROUP BY window_start, window_end", runtime_mode=streaming,
            configuration=conf).job_id
        try:
            _drop_all(pool, src)
            _wait_for(sink, expected)
        finally:
            session.job(job_id).cancel()
    finally:
        session.execute_sql(f"DROP TABLE IF EXISTS ev_{run}")
        session.execute_sql(f"DROP TABLE IF EXISTS counts_{run}")


def structured_streaming_run(spark: Any, pool: Path, work: Path,
                             expected: dict[str, int]) -> None:
    """One run of the same query in plain Structured Streaming."""
    from pyspark.sql import functions as F

    run = uuid.uuid4().hex[:8]
    src, sink = work / f"ss-in-{run}", work / f"ss-out-{run}"
    src.mkdir()
    events = (spark.readStream.schema("ts TIMESTAMP_NTZ, k STRING").csv(str(src))
              .withColumn("ts", F.col("ts").cast("timestamp")).withWatermark("ts", "1 second"))
    counts = (events.groupBy(F.window("ts", f"{WINDOW_S} seconds")).count()
              .select(F.date_format("window.start", "yyyy-MM-dd HH:mm:ss").alias("start"),
                      "count"))
    query = (counts.writeStream.outputMode("append").format("csv").option("path", str(sink))
             .option("checkpointLocation", str(work / f"ss-checkpoint-{run}"))
             .trigger(processingTime=f"{TRIGGER_MS} milliseconds").start())
    try:
        _drop_all(pool, src)
        _wait_for(sink, expected)
    finally:
        query.stop()


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser()
    p.add_argument("--events", type=int, default=2_000_000)
    p.add_argument("--files", type=int, default=20)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="a smoke run: 20,000 events, one run")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args(argv)
    events, files, runs, warmup = ((20_000, 4, 1, 1) if args.quick
                                   else (args.events, args.files, args.runs, 1))
    t0 = time.perf_counter()
    pool, expected = event_files(events, files)
    prepare_s = time.perf_counter() - t0
    work = Path(tempfile.mkdtemp(prefix="sc-bench-sqlstream-",
                                 dir=os.environ.get("SESSIONCLUSTER_BENCH_TMP") or None))
    try:
        with bench_session("sqlstream") as (session, _):
            master = session.status().spark_master
            with plain_session(master) as spark:
                spark.conf.set("spark.sql.session.timeZone", "UTC")
                spark.conf.set("spark.sql.shuffle.partitions",
                               str(spark.sparkContext.defaultParallelism))
                workloads: dict[str, Callable[[], Any]] = {
                    "flink sql INSERT (session)":
                        lambda: flink_sql_run(session, pool, work, expected),
                    "structured streaming (plain)":
                        lambda: structured_streaming_run(spark, pool, work, expected)}
                figs = interleaved(runs, warmup, **workloads)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    a, b = (f.median for f in figs.values())
    print(f"\nStreaming TUMBLE window count from {files} files in a monitored directory, "
          f"{events} events, {len(expected)} windows of {WINDOW_S} s, trigger {TRIGGER_MS} ms, "
          f"master {master}")
    for f in figs.values():
        print("  " + f.row())
    out: dict[str, Any] = {
        "benchmark": "sql_streaming", "master": master, "events": events, "files": files,
        "windows": len(expected), "runs": runs, "warmup": warmup, "prepare_s": prepare_s,
        "figures": [f.as_dict() for f in figs.values()], "ratio": a / b,
        "targets": [target("ratio", a / b, "<=", 1.1,
                           "ratio Flink SQL INSERT / Structured Streaming")]}
    write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
