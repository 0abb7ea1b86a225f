"""The keyed tumbling window count of ``window_count`` in STREAMING mode (issue 26, item 1): the
same DataStream program run with ``RuntimeExecutionMode.STREAMING`` over a directory holding the
events file (Structured Streaming underneath: the window a ``transformWithStateInPandas`` keyed
operator, fired by Spark's watermark, every window by the bounded input's final watermark),
against the same aggregation written directly with Structured Streaming (``readStream.csv`` +
``withWatermark`` + ``groupBy(key, window(...)).count()`` in append mode, into a memory sink) on a
warm plain SparkSession with the same master, shuffle partitions equal to the job's parallelism,
and the same trigger interval, interleaved.

Spark has no final watermark: its directory holds one more event, far ahead, that closes every
window; that event's own window is left out when the answers are compared. Time: from the start
of the job or query until every window's count is out. Answers are compared before timing.

    python -m benchmarks.window_streaming [--mb 50] [--runs 3] [--quick] [--json FILE]
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import bench_session, interleaved, plain_session, write_json  # noqa: E402
from benchmarks.window_count import (  # noqa: E402
    JITTER_MS,
    WINDOW_MS,
    arguments,
    events_file,
    same_results,
    window_counts,
)
from sessioncluster.common.execution_mode import RuntimeExecutionMode  # noqa: E402

PARALLELISM = 2
TRIGGER_MS = 200
#: the key of the plain side's one event far ahead
END_KEY = "__end"
#: how long one run may take before it is a failure
RUN_TIMEOUT_S = 900.0


def directories(mb: int) -> tuple[Path, Path]:
    """Two directories holding the events file (a hard link, no copy): ours, and the plain
    side's, which also holds the event that closes every window."""
    path = Path(events_file(mb))
    root = path.parent / f"winstream-{mb}mb-v1"
    ours, plain = root / "ours", root / "plain"
    for d in (ours, plain):
        d.mkdir(parents=True, exist_ok=True)
        if not (d / path.name).exists():
            os.link(path, d / path.name)
    end = plain / "zz-end.csv"
    if not end.exists():
        last = max(int(line.split(",", 1)[0]) for line in open(path))
        end.write_text(f"{last + 10 * WINDOW_MS},{END_KEY}\n")
    return ours, plain


def datastream_program(session: Any, ours: Path, last: dict[str, Any], one_record: bool = False
                       ) -> Callable[[], list[tuple[str, int, int]]]:
    """The DataStream job in STREAMING mode; it returns its sorted (key, window start, count)
    and keeps its job client in ``last["client"]``. ``one_record``: the same job with a late-data
    side output, which keeps the one-record path (no pre-aggregation before the shuffle)."""
    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(PARALLELISM)

    def datastream() -> list[tuple[str, int, int]]:
        results = window_counts(env, str(ours), one_record).execute_and_collect(
            "window count, STREAMING" + (", one record at a time" if one_record else ""))
        last["client"] = results.client
        return sorted(results)

    return datastream


def micro_batches(client: Any) -> list[str]:
    """Where the job's micro-batches went (its checkpoint statistics: Spark's ``durationMs``)."""
    details = client.details()
    records = {v.name.split(" -> ")[0]: (v.records_in, v.records_out) for v in details.vertices}
    lines = [f"records in/out per vertex: {records}"]
    for c in (details.streaming or {}).get("checkpoints", []):
        stages = ", ".join(f"{k} {v}" for k, v in sorted(c.stages.items()) if v >= 50)
        lines.append(f"micro-batch {c.batch_id}: {c.processed} records read, {c.duration_ms} ms "
                     f"({stages})")
    return lines


def structured_streaming_program(spark: Any, plain: Path, windows: int
                                 ) -> Callable[[], list[tuple[str, int, int]]]:
    """The Structured Streaming query; it returns once ``windows`` windows (and the end
    event's, left out) are out, with the sorted (key, window start, count)."""
    from pyspark.sql import functions as F

    spark.conf.set("spark.sql.shuffle.partitions", str(PARALLELISM))

    def structured_streaming() -> list[tuple[str, int, int]]:
        name = f"windows_{uuid.uuid4().hex[:8]}"
        counts = (spark.readStream.schema("ts LONG, key STRING").csv(str(plain))
                  .withColumn("t", F.timestamp_millis("ts"))
                  .withWatermark("t", f"{JITTER_MS // 1000} seconds")
                  .groupBy("key", F.window("t", f"{WINDOW_MS // 1000} seconds"))
                  .count()
                  .select("key", F.unix_millis("window.start").alias("start"), "count"))
        query = (counts.writeStream.outputMode("append").format("memory").queryName(name)
                 .trigger(processingTime=f"{TRIGGER_MS} milliseconds").start())
        try:
            deadline = time.monotonic() + RUN_TIMEOUT_S
            while spark.table(name).count() < windows:
                if query.exception() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the Structured Streaming query did not finish: "
                                       f"{query.exception()}")
                time.sleep(TRIGGER_MS / 1000)
            rows = spark.table(name).collect()
        finally:
            query.stop()
        return sorted((r["key"], r["start"], r["count"]) for r in rows if r["key"] != END_KEY)

    return structured_streaming


def main(argv: list[str] | None = None) -> dict[str, object]:
    mb, runs, warmup, json_path = arguments(argv)
    ours, plain = directories(mb)

    with bench_session("winstream") as (session, _):
        master = session.status().spark_master
        with plain_session(master) as spark:
            last: dict[str, Any] = {}
            one: dict[str, Any] = {}
            datastream = datastream_program(session, ours, last)
            one_record = datastream_program(session, ours, one, one_record=True)
            results = datastream()
            structured_streaming = structured_streaming_program(spark, plain, len(results))
            same_results("Structured Streaming", results, structured_streaming())
            same_results("the one-record path", results, one_record())
            figs = interleaved(runs, warmup, datastream=datastream,
                               structured_streaming=structured_streaming,
                               datastream_one_record=one_record)
            batches = micro_batches(last["client"])
            one_batches = micro_batches(one["client"])

    a, b = figs["datastream"].median, figs["structured_streaming"].median
    c = figs["datastream_one_record"].median
    events = sum(n for _, _, n in results)
    print(f"\nKeyed tumbling window count in STREAMING mode, {mb} MB, {events} events, "
          f"{len(results)} windows, parallelism {PARALLELISM}, trigger {TRIGGER_MS} ms, master {master}")
    for f in figs.values():
        print("  " + f.row())
    print(f"  ratio DataStream (STREAMING) / Structured Streaming = {a / b:.2f}")
    print(f"  ratio DataStream one record at a time (a late-data side output) / Structured "
          f"Streaming = {c / b:.2f}; pre-aggregated / one record at a time = {a / c:.2f}")
    print("  the last DataStream run: " + "\n    ".join(batches))
    print("  the last one-record run: " + "\n    ".join(one_batches))
    out = {"benchmark": "window_streaming", "master": master, "mb": mb, "events": events,
           "results": len(results), "runs": runs, "warmup": warmup,
           "figures": [f.as_dict() for f in figs.values()],
           "ratio_datastream_structured_streaming": a / b,
           "ratio_one_record_structured_streaming": c / b, "ratio_datastream_one_record": a / c}
    write_json(json_path, out)
    return out


if __name__ == "__main__":
    main()
