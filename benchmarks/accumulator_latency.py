"""Live accumulator latency: from ``add()`` inside a running task to the value's arrival at the
client. A map function paced at one record every 2 ms adds ``(subtask, record, time.time())``
to a ListAccumulator for every record; the client's event callback (``session.events``)
stamps each ``AccumulatorsUpdated`` message on arrival, and every value's latency is its
first arrival minus its send time (one clock: everything runs on this machine).

The path of a value: the slot worker sends a live snapshot at most every 200 ms (checked every
16 records), its TaskManager forwards it at once, and the JobMaster publishes merged live
values at most every 100 ms (100 ms after the first snapshot it has not published yet). So the
expected latency is about 0-200 ms waiting for the next snapshot plus about 100 ms in the
JobMaster: ~0.2 s median, ~0.3 s at the 95th percentile.

Baseline: plain PySpark on a warm SparkSession with the same master, the same paced map adding
to a list accumulator, and a driver thread polling the accumulator's value every 5 ms. Plain
PySpark sends accumulator updates only when a task ends, so its latency is the rest of the
task's run time.

    python -m benchmarks.accumulator_latency [--runs 5] [--seconds 3] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import sessioncluster  # noqa: E402
from sessioncluster.protocol.messages import AccumulatorsUpdated  # noqa: E402
from benchmarks.common import (  # noqa: E402
    bench_session,
    interleaved,
    percentile,
    plain_session,
    stat,
    stat_row,
    target,
    write_json,
)

PARALLELISM = 2
DELAY = 0.002  # seconds per record: a task that adds a value every 2 ms


class Stamp(sessioncluster.MapFunction):
    """Adds (subtask, record, send time) to the ListAccumulator 'sent' for every record."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def open(self, ctx: Any) -> None:
        self.acc = sessioncluster.ListAccumulator()
        ctx.add_accumulator("sent", self.acc)
        self.subtask = ctx.get_index_of_this_subtask()

    def map(self, value: int) -> int:
        time.sleep(self.delay)
        self.acc.add((self.subtask, value, time.time()))
        return value


def latencies(arrivals: list[tuple[float, list[Any]]]) -> tuple[list[float], set[tuple[int, int]]]:
    """Each value's first arrival minus its send time; and the keys of every value seen."""
    seen: set[tuple[int, int]] = set()
    out: list[float] = []
    for arrived, values in arrivals:
        for sub, rec, sent in values:
            if (sub, rec) not in seen:
                seen.add((sub, rec))
                out.append(arrived - sent)
    return out, seen


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--seconds", type=float, default=3.0, help="run time of each job")
    p.add_argument("--quick", action="store_true", help="a smoke run: few repetitions")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args(argv)
    runs, warmup, seconds = (2, 1, 1.5) if args.quick else (args.runs, 1, args.seconds)
    n = int(seconds / DELAY) * PARALLELISM
    data = list(range(n))
    want_keys = {(s, v) for s in range(PARALLELISM)
                 for v in data[s * n // PARALLELISM:(s + 1) * n // PARALLELISM]}

    samples: dict[str, list[list[float]]] = {"session": [], "plain": []}
    live_counts: list[int] = []
    event_gaps: list[list[float]] = []
    final_only: list[int] = []

    with bench_session("acclat") as (session, _):
        master = session.status().spark_master
        env = session.get_execution_environment()
        env.set_parallelism(PARALLELISM)
        received: list[tuple[float, AccumulatorsUpdated]] = []
        lock = threading.Lock()

        def on_event(topic: str, msg: Any) -> None:
            if isinstance(msg, AccumulatorsUpdated):
                now = time.time()
                with lock:
                    received.append((now, msg))

        session.events.subscribe(None, on_event)  # every topic: the job id is known only later
        time.sleep(0.5)  # let the SUB socket join

        with plain_session(master) as spark:
            sc = spark.sparkContext
            from pyspark.accumulators import AccumulatorParam

            class ListParam(AccumulatorParam):
                def zero(self, value: list[Any]) -> list[Any]:
                    return []

                def addInPlace(self, a: list[Any], b: Any) -> list[Any]:
                    a.extend(b if isinstance(b, list) else [b])
                    return a

            def ours() -> None:
                # start_new_chain: the paced map gets its own vertex, whose input is counted
                # with live snapshots (a source's own chain sends none)
                client = env.from_collection(data).map(Stamp(DELAY)).start_new_chain() \
                    .execute_and_collect_async("accumulator latency")
                records = client.collect()
                final = client.get_job_execution_result().get_accumulator_result("sent")
                time.sleep(0.3)  # the last events are on their way
                with lock:
                    mine = [(t, m) for t, m in received if m.job_id == client.job_id]
                assert sorted(records) == data, "session: wrong records"
                assert {(s, v) for s, v, _ in final} == want_keys, "session: wrong accumulator"
                live = [(t, m.values.get("sent", [])) for t, m in mine if not m.final]
                lat, seen = latencies(live)
                samples["session"].append(lat)
                live_counts.append(len(live))
                final_only.append(len(want_keys - seen))
                times = [t for t, _ in live]
                event_gaps.append([b - a for a, b in zip(times, times[1:])])

            def plain() -> None:
                acc = sc.accumulator([], ListParam())
                delay = DELAY

                def stamp(it: Any) -> Any:
                    from pyspark import TaskContext

                    sub = TaskContext.get().partitionId()
                    for v in it:
                        time.sleep(delay)
                        acc.add((sub, v, time.time()))
                        yield v

                arrivals: list[tuple[float, list[Any]]] = []
                done = threading.Event()

                def poll() -> None:
                    # pyspark applies a task's accumulator updates through its accumulator
                    # server, which can be after collect() returned: poll until all are in
                    count = 0
                    deadline = None
                    while True:
                        value = list(acc.value)
                        if len(value) > count:
                            arrivals.append((time.time(), value[count:]))
                            count = len(value)
                        if done.is_set():
                            deadline = deadline or time.monotonic() + 10
                            if count >= len(want_keys) or time.monotonic() > deadline:
                                return
                        time.sleep(0.005)

                poller = threading.Thread(target=poll, daemon=True)
                poller.start()
                records = sc.parallelize(data, PARALLELISM).mapPartitions(stamp).collect()
                done.set()
                poller.join()
                assert sorted(records) == data, "plain: wrong records"
                # pyspark slices a parallelized list on its 1,024-record batches, not evenly
                # as from_collection does: compare the values, not the (subtask, value) pairs
                got = sorted(v for _, v, _ in acc.value)
                assert got == data, f"plain: wrong accumulator ({len(got)} values of {len(data)})"
                lat, _ = latencies(arrivals)
                samples["plain"].append(lat)

            figs = interleaved(runs, warmup, session=ours, plain=plain)

    # the warm-up round's samples are dropped
    for system in samples:
        samples[system] = samples[system][warmup:]
    live_counts[:] = live_counts[warmup:]
    final_only[:] = final_only[warmup:]
    gaps = [g for run in event_gaps[warmup:] for g in run]

    pooled = {s: [x for run in samples[s] for x in run] for s in samples}
    print(f"\nLive accumulator latency, add() in a task -> event at the client; {PARALLELISM} "
          f"subtasks x {n // PARALLELISM} adds (one every {DELAY * 1000:.0f} ms), {runs} runs, "
          f"master {master}")
    print("  session: the slot worker snapshots live accumulators every >= 200 ms (checked every "
          "16 records),")
    print("  the TaskManager forwards at once, the JobMaster publishes at most every 100 ms: "
          "expect ~0.2 s median")
    print("  plain PySpark: accumulator updates reach the driver only when the task ends")
    stats = []
    for s in ("session", "plain"):
        for q in (50, 95):
            stats.append(stat(f"{s}_p{q}_per_run", [percentile(run, q) for run in samples[s]], "s"))
    for st in stats:
        print("  " + stat_row(st))
    for s in ("session", "plain"):
        print(f"  {s}: pooled over {len(pooled[s])} values: p50 {percentile(pooled[s], 50):.3f} s, "
              f"p95 {percentile(pooled[s], 95):.3f} s, max {max(pooled[s]):.3f} s")
    gap = percentile(gaps, 50) if gaps else float("nan")
    print(f"  session: {sum(live_counts)} live events in {runs} runs, median interval {gap:.3f} s; "
          f"{sum(final_only)} values arrived only with the final result (not counted)")
    for f in figs.values():
        print("  job run time " + f.row())
    p50 = percentile(pooled["session"], 50)
    targets = [target("accumulator_latency_p50", p50, "<=", 0.3, "session p50 latency (s)")]
    out = {"benchmark": "accumulator_latency", "master": master, "adds_per_run": n,
           "figures": [f.as_dict() for f in figs.values()], "stats": stats,
           "session_p50_s": p50, "session_p95_s": percentile(pooled["session"], 95),
           "plain_p50_s": percentile(pooled["plain"], 50),
           "plain_p95_s": percentile(pooled["plain"], 95),
           "session_live_events": sum(live_counts), "session_event_interval_p50_s": gap,
           "session_values_final_only": sum(final_only), "targets": targets}
    write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
