"""STREAMING mode, side by side with the same query written directly in PySpark:

1. **Latency**: from a file appearing in a watched directory to its word's new count arriving at
   the client's collect iterator (a keyed running count), p50 and p95, against a plain PySpark
   Structured Streaming query (``transformWithStateInPandas`` keyed count, ``foreachBatch`` in
   the same process) with the same trigger on a warm SparkSession with the same master.
2. **Throughput**: a stateful keyed running count of N words from files (bounded: the job
   FINISHES when they are consumed) as a DataStream program (``key_by(...).sum(1)``: every
   record's update goes out, to the client's iterator), against ``split``/``explode`` and
   ``transformWithStateInPandas`` with a ``long`` state emitting the same updates to
   ``foreachBatch`` in the same process, ``trigger(availableNow=True)``; interleaved, ratio of
   medians (target <= 1.2).

    python benchmarks/streaming.py [--words 2000000] [--files 20] [--runs 3] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import (  # noqa: E402
    bench_session,
    percentile,
    plain_session,
    target,
    write_json,
)
from sessioncluster.api.checkpoint_config import INCREMENTAL  # noqa: E402
from sessioncluster.api.connectors.file_system import FileSource, StreamFormat  # noqa: E402
from sessioncluster.api.watermark import WatermarkStrategy  # noqa: E402
from sessioncluster.common.configuration import Configuration  # noqa: E402
from sessioncluster.common.execution_mode import RuntimeExecutionMode  # noqa: E402
from sessioncluster.common.time import Duration  # noqa: E402

TRIGGER_MS = 200
SEED = 20261124
KEYS = 5000


def drop(directory: Path, name: str, text: str) -> float:
    """Write a file aside and rename it into ``directory``; the time it appeared."""
    tmp = directory.parent / f".{name}"
    tmp.write_text(text)
    os.replace(tmp, directory / name)
    return time.perf_counter()


# -- latency ------------------------------------------------------------------------------------

#: Spark's progress report's stages of a micro-batch, in the order they run
STAGES = ("latestOffset", "getBatch", "queryPlanning", "addBatch", "walCommit", "commitOffsets",
          "triggerExecution")


def stage_medians(reports: list[dict[str, int]]) -> dict[str, float]:
    """The median ms of each stage over micro-batches' ``durationMs``."""
    return {name: statistics.median(r.get(name, 0) for r in reports) for name in STAGES
            if reports and any(name in r for r in reports)}


def running_word_counts(session: Any, src: Path, incremental: bool = False) -> Any:
    """A STREAMING job's keyed running count of the words (one a line) of the files dropped into
    ``src`` (checkpoints and trigger every ``TRIGGER_MS``, parallelism 2; state commits as
    RocksDB changelogs when ``incremental``, snapshots otherwise), not started."""
    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)
    env.enable_checkpointing(TRIGGER_MS)
    env.configure(Configuration().set_string(INCREMENTAL, str(incremental).lower()))
    source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(src))
              .monitor_continuously(Duration.of_millis(TRIGGER_MS)).build())
    return (env.from_source(source, WatermarkStrategy.no_watermarks(), "words")
            .map(lambda w: (w, 1)).key_by(lambda t: t[0]).sum(1).uid("counts"))


def sc_latency(session: Any, files: int, work: Path,
               incremental: bool = False) -> tuple[list[float], dict[str, float]]:
    src = work / f"sc-in-{incremental}"
    src.mkdir(parents=True)
    counts = running_word_counts(session, src, incremental)
    results = counts.execute_and_collect("latency")
    samples = []
    try:
        drop(src, "warmup.txt", "warmup\n")
        next(results)  # the first micro-batch of a stateful query loads RocksDB: not measured
        for i in range(files):
            appeared = drop(src, f"f{i}.txt", f"w{i}\n")
            word, _ = next(results)
            assert word == f"w{i}", word
            samples.append(time.perf_counter() - appeared)
        # the micro-batches that read a file (the job keeps the last 10 checkpoints)
        history = results.client.details().streaming["checkpoints"]
        stages = stage_medians([c.stages for c in history if c.processed and c.stages][-files:])
    finally:
        results.close()
    return samples, stages


def plain_latency(spark: Any, files: int, work: Path) -> tuple[list[float], dict[str, float]]:
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    src = work / "plain-in"
    src.mkdir(parents=True)

    class Count(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.count = handle.getValueState("count", "n long")

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:  # noqa: N802, N803
            n = (self.count.get()[0] if self.count.exists() else 0) + sum(len(r) for r in rows)
            self.count.update((n,))
            yield pd.DataFrame({"word": [key[0]], "n": [n]})

        def close(self) -> None:
            pass

    arrived: dict[str, float] = {}
    seen = threading.Condition()

    def sink(batch: Any, batch_id: int) -> None:
        for row in batch.collect():
            with seen:
                arrived[row.word] = time.perf_counter()
                seen.notify_all()

    query = (spark.readStream.format("text").load(str(src)).withColumnRenamed("value", "word")
             .groupBy("word").transformWithStateInPandas(Count(), "word string, n long", "Update", "None")
             .writeStream.foreachBatch(sink).option("checkpointLocation", str(work / "plain-ckpt"))
             .trigger(processingTime=f"{TRIGGER_MS} milliseconds").start())
    samples = []

    def wait_for(word: str) -> float:
        with seen:
            if not seen.wait_for(lambda: word in arrived, timeout=300):
                raise TimeoutError(f"no result for {word}")
            return arrived[word]

    try:
        drop(src, "warmup.txt", "warmup\n")
        wait_for("warmup")
        for i in range(files):
            appeared = drop(src, f"f{i}.txt", f"w{i}\n")
            samples.append(wait_for(f"w{i}") - appeared)
        query.processAllAvailable()  # the last batch's progress report
        read = [p for p in query.recentProgress if p.get("numInputRows")][1:]  # not the warm-up
        stages = stage_medians([{k: int(v) for k, v in p["durationMs"].items()} for p in read[-10:]])
    finally:
        query.stop()
    return samples, stages


# -- throughput ---------------------------------------------------------------------------------

def words_dir(words: int, work: Path) -> tuple[Path, dict[str, int]]:
    rng = random.Random(SEED)
    directory = work / "words"
    directory.mkdir(parents=True)
    counts: dict[str, int] = {}
    per_file = words // 4
    for f in range(4):
        ws = [f"k{rng.randrange(KEYS)}" for _ in range(per_file)]
        for w in ws:
            counts[w] = counts.get(w, 0) + 1
        (directory / f"part-{f}.txt").write_text(
            "\n".join(" ".join(ws[i:i + 20]) for i in range(0, len(ws), 20)) + "\n")
    return directory, counts


def sc_count(session: Any, directory: Path, expected: dict[str, int]) -> None:
    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(directory)).build()
    # a running count emits every update: keep the last per key
    counts = (env.from_source(source, WatermarkStrategy.no_watermarks(), "words")
              .flat_map(lambda line: line.split()).map(lambda w: (w, 1))
              .key_by(lambda t: t[0]).sum(1))
    latest: dict[str, int] = {}
    for word, n in counts.execute_and_collect(f"count-{uuid.uuid4().hex[:6]}"):
        if n > latest.get(word, 0):
            latest[word] = n
    assert latest == expected, "wrong counts from the DataStream job"


def running_count() -> Any:
    """A ``StatefulProcessor`` doing what the DataStream job's running ``sum`` does: every record
    updates its key's count, and every update goes out (Flink's STREAMING semantics). Made by a
    function so that cloudpickle ships the class by value (the executors cannot import
    ``benchmarks``)."""
    import numpy as np
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class RunningCount(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.count = handle.getValueState("count", "n long")

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:  # noqa: N802, N803
            n = self.count.get()[0] if self.count.exists() else 0
            for pdf in rows:
                updates = n + np.arange(1, len(pdf) + 1)
                n += len(pdf)
                yield pd.DataFrame({"word": key[0], "n": updates})
            self.count.update((n,))

        def close(self) -> None:
            pass

    return RunningCount()


def plain_count(spark: Any, directory: Path, expected: dict[str, int], work: Path) -> None:
    from pyspark.sql import functions as F

    got: dict[str, int] = {}

    def sink(batch: Any, batch_id: int) -> None:
        # every update reaches this process, as the DataStream job's reach its client
        for row in batch.collect():
            if row.n > got.get(row.word, 0):
                got[row.word] = row.n

    ckpt = work / f"plain-count-{uuid.uuid4().hex[:6]}"
    query = (spark.readStream.format("text").load(str(directory))
             .select(F.explode(F.split("value", " ")).alias("word"))
             .groupBy("word")
             .transformWithStateInPandas(running_count(), "word string, n long", "Update", "None")
             .writeStream.foreachBatch(sink).option("checkpointLocation", str(ckpt))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    shutil.rmtree(ckpt, ignore_errors=True)
    assert got == expected, "wrong counts from plain PySpark"


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser()
    p.add_argument("--words", type=int, default=2_000_000)
    p.add_argument("--files", type=int, default=20, help="files dropped for the latency figure")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="a smoke run: 100,000 words, 5 files, 1 run")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    words, files, runs = (100_000, 5, 1) if args.quick else (args.words, args.files, args.runs)
    work = Path(tempfile.mkdtemp(prefix="sc-bench-streaming-"))
    try:
        directory, expected = words_dir(words, work)
        with bench_session("streaming") as (session, _):
            master = session.status().spark_master
            with plain_session(master) as spark:
                spark.conf.set("spark.sql.streaming.stateStore.providerClass",
                               "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
                spark.conf.set("spark.sql.shuffle.partitions", "2")
                # first the incremental commits: the first STREAMING job of a fresh session ran
                # its micro-batches ~0.3 s slower than the next (docs/benchmarks.md, section 10)
                lat_inc, stages_inc = sc_latency(session, files, work, incremental=True)
                lat_sc, stages_sc = sc_latency(session, files, work)
                lat_plain, stages_plain = plain_latency(spark, files, work)
                sc_count(session, directory, expected)          # warm-up of both
                plain_count(spark, directory, expected, work)
                t_sc, t_plain = [], []
                for _ in range(runs):
                    t0 = time.perf_counter()
                    sc_count(session, directory, expected)
                    t_sc.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    plain_count(spark, directory, expected, work)
                    t_plain.append(time.perf_counter() - t0)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med_sc, med_plain = sorted(t_sc)[len(t_sc) // 2], sorted(t_plain)[len(t_plain) // 2]
    print(f"\nstreaming on {master}, trigger {TRIGGER_MS} ms")
    sides = (("sessioncluster", lat_sc, stages_sc), ("incremental", lat_inc, stages_inc),
             ("plain PySpark", lat_plain, stages_plain))
    for name, s, _ in sides:
        print(f"  latency file -> result, {name:<16} p50 {percentile(s, 50) * 1000:7.0f} ms   "
              f"p95 {percentile(s, 95) * 1000:7.0f} ms   (n={len(s)})")
    print("  where a micro-batch that read a file spent its time, median ms (Spark's durationMs):")
    print("  " + " " * 17 + "".join(f"{name:>17}" for name in STAGES))
    for name, _, st in sides:
        print(f"  {name:<17}" + "".join(f"{st.get(n, float('nan')):17.0f}" for n in STAGES))
    for name, s, st in sides:
        # the result leaves the batch in addBatch; walCommit and commitOffsets come after it
        before = sum(st.get(n, 0) for n in ("latestOffset", "getBatch", "queryPlanning", "addBatch"))
        print(f"  {name}: the batch up to its result {before:.0f} ms; the rest of the p50 latency, "
              f"{percentile(s, 50) * 1000 - before:.0f} ms: the wait for the trigger and the way "
              f"to the client")
    print(f"  keyed count of {words:,} words: DataStream {med_sc:.2f} s, plain TWS {med_plain:.2f} s "
          f"(medians of {runs})")
    ratio = med_sc / med_plain
    out = {"benchmark": "streaming", "master": master, "words": words, "trigger_ms": TRIGGER_MS,
           "latency_s": {"sessioncluster": lat_sc, "incremental": lat_inc, "plain": lat_plain},
           "batch_stages_ms": {"sessioncluster": stages_sc, "incremental": stages_inc,
                               "plain": stages_plain},
           "latency_p50_s": percentile(lat_sc, 50), "latency_p95_s": percentile(lat_sc, 95),
           "plain_latency_p50_s": percentile(lat_plain, 50), "plain_latency_p95_s": percentile(lat_plain, 95),
           "count_s": {"sessioncluster": t_sc, "plain": t_plain},
           "targets": [target("throughput_ratio", ratio, "<=", 1.2,
                              "stateful keyed count, DataStream / plain transformWithStateInPandas")]}
    write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
