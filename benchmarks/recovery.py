"""STREAMING recovery after a TaskManager is killed (issue 26, item 4), side by side with the same
keyed count written directly in PySpark.

A keyed running count of words from files dropped into a watched directory runs as a DataStream
job (``key_by(...).sum(1)``, collected by the client) and as a plain Structured Streaming query
(``transformWithStateInPandas`` with the same trigger, ``foreachBatch`` into this process) on a
warm SparkSession with the same master. Each round: a file's updates arrive; then an executor
JVM of that side is killed with SIGKILL and the next file is dropped at once. The figure is the
time from the kill until every update of that file has arrived ("caught up"). Before the next
kill the side waits for its second executor to be back.

Exactly once: each word's updates must be 1, 2, 3, ... each once (a micro-batch run twice
would repeat them) and the last ones plain Python's counts.

    python -m benchmarks.recovery [--kills 10] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import bench_session, plain_session, target, write_json  # noqa: E402
from benchmarks.streaming import TRIGGER_MS, drop, running_count, running_word_counts  # noqa: E402

SEED = 20261126
WORDS_PER_FILE = 40
VOCABULARY = [f"w{i}" for i in range(12)]
#: how long a side may take to catch up, or to get its second executor back
TIMEOUT_S = 300.0


class Updates:
    """The (word, count) updates a side has received, checked for exactly once as they come."""

    def __init__(self) -> None:
        self.latest: dict[str, int] = {}
        self.lock = threading.Condition()

    def add(self, word: str, count: int) -> None:
        with self.lock:
            expected = self.latest.get(word, 0) + 1
            if count != expected:
                raise AssertionError(f"{word}: update {count} after {expected - 1} (not exactly once)")
            self.latest[word] = count
            self.lock.notify_all()

    def wait_for(self, counts: dict[str, int]) -> float:
        """Block until every word has reached its count; the time it did."""
        with self.lock:
            if not self.lock.wait_for(lambda: all(self.latest.get(w, 0) >= n for w, n in counts.items()),
                                      timeout=TIMEOUT_S):
                raise TimeoutError(f"not caught up: {self.latest} / {counts}")
            return time.perf_counter()


def rounds_of_words(kills: int) -> list[list[str]]:
    """A warm-up file, then two files per kill (one before it, one right after)."""
    rng = random.Random(SEED)
    return [[rng.choice(VOCABULARY) for _ in range(WORDS_PER_FILE)] for _ in range(1 + 2 * kills)]


def run_kills(rounds: list[list[str]], src: Path, updates: Updates, executors: Callable[[], list[int]],
              ) -> list[float]:
    """Drop the rounds' files; kill an executor before every second one; the catch-up times."""
    rng = random.Random(SEED)
    python: collections.Counter[str] = collections.Counter()
    caught_up: list[float] = []
    for i, words in enumerate(rounds):
        killed_at = None
        if i % 2 == 0 and i > 0:
            pids = _wait(lambda: (lambda p: p if len(p) == 2 else None)(executors()), "two executors")
            os.kill(rng.choice(pids), signal.SIGKILL)
            killed_at = time.perf_counter()
        drop(src, f"r{i}.txt", "\n".join(words) + "\n")
        python.update(words)
        arrived = updates.wait_for(dict(python))
        if killed_at is not None:
            caught_up.append(arrived - killed_at)
    assert updates.latest == dict(python), "the last counts are not plain Python's"
    return caught_up


def _wait(probe: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} after {TIMEOUT_S:.0f} s")
        time.sleep(0.2)


# -- the session ---------------------------------------------------------------------------------

def sc_recovery(session: Any, rounds: list[list[str]], work: Path) -> list[float]:
    src = work / "sc-in"
    src.mkdir(parents=True)
    results = running_word_counts(session, src).execute_and_collect("recovery")
    updates = Updates()
    failure: list[BaseException] = []

    def read() -> None:
        try:
            for word, count in results:
                updates.add(word, count)
        except BaseException as err:  # noqa: BLE001 - handed to the waiting side
            failure.append(err)
            with updates.lock:
                updates.lock.notify_all()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def executors() -> list[int]:
        if failure:
            raise failure[0]
        return [tm.jvm_pid for tm in session.status().taskmanagers if tm.jvm_pid]

    try:
        return run_kills(rounds, src, updates, executors)
    finally:
        results.close()


# -- plain PySpark -------------------------------------------------------------------------------

def plain_recovery(spark: Any, rounds: list[list[str]], work: Path) -> list[float]:
    import psutil

    src = work / "plain-in"
    src.mkdir(parents=True)
    updates = Updates()
    delivered: set[int] = set()

    def sink(batch: Any, batch_id: int) -> None:
        if batch_id in delivered:  # foreachBatch is at least once: a rerun batch is dropped
            return
        for row in sorted(batch.collect(), key=lambda r: (r.word, r.n)):
            updates.add(row.word, row.n)
        delivered.add(batch_id)

    query = (spark.readStream.format("text").load(str(src)).withColumnRenamed("value", "word")
             .groupBy("word")
             .transformWithStateInPandas(running_count(), "word string, n long", "Update", "None")
             .writeStream.foreachBatch(sink).option("checkpointLocation", str(work / "plain-ckpt"))
             .trigger(processingTime=f"{TRIGGER_MS} milliseconds").start())
    gateway = psutil.Process(spark.sparkContext._gateway.proc.pid)

    def executors() -> list[int]:
        if query.exception() is not None:
            raise RuntimeError(f"the plain query failed: {query.exception()}")
        return [p.pid for p in gateway.children(recursive=True)
                if "CoarseGrainedExecutorBackend" in " ".join(_cmdline(p))]

    try:
        return run_kills(rounds, src, updates, executors)
    finally:
        query.stop()


def _cmdline(p: Any) -> list[str]:
    try:
        return p.cmdline()
    except Exception:  # noqa: BLE001 - the process ended while listed
        return []


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser()
    p.add_argument("--kills", type=int, default=10)
    p.add_argument("--quick", action="store_true", help="a smoke run: 1 kill per side")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    kills = 1 if args.quick else args.kills
    rounds = rounds_of_words(kills)
    work = Path(tempfile.mkdtemp(prefix="sc-bench-recovery-"))
    try:
        with bench_session("recovery") as (session, _):
            master = session.status().spark_master
            sc = sc_recovery(session, rounds, work)
            with plain_session(master) as spark:
                spark.conf.set("spark.sql.streaming.stateStore.providerClass",
                               "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
                spark.conf.set("spark.sql.shuffle.partitions", "2")
                plain = plain_recovery(spark, rounds, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nrecovery on {master}: an executor JVM killed -9 while a keyed count runs, until the "
          f"next file's updates have all arrived ({kills} kills a side, exactly once checked)")
    for name, s in (("sessioncluster", sc), ("plain PySpark", plain)):
        print(f"  {name:<15} median {statistics.median(s):6.2f} s   max {max(s):6.2f} s   "
              f"all {', '.join(f'{x:.1f}' for x in s)}")
    print(f"  ratio of medians, session / plain: {statistics.median(sc) / statistics.median(plain):.2f}")
    out = {"benchmark": "recovery", "master": master, "kills": kills,
           "caught_up_s": {"sessioncluster": sc, "plain": plain},
           "targets": [target("recovery_median_s", statistics.median(sc), "<=", 5.0,
                              "STREAMING recovery after a TaskManager kill, median (s)")]}
    write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
