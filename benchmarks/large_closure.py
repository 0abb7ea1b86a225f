"""A function capturing a large object (50 MB of bytes), run 5 times in a row: the session
cluster (the closure is uploaded once to the BlobServer; the TaskManagers' library cache and the
slot workers keep it after the first run) vs plain PySpark on a warm SparkSession with the same
master (which pickles and broadcasts the closure on every run). Each trial uses a new object,
so its run 1 is cold; trials are interleaved A B A B.

    python -m benchmarks.large_closure [--trials 3] [--mb 50] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import (  # noqa: E402
    Figure,
    bench_session,
    interleaved,
    plain_session,
    target,
    write_json,
)

DATA = list(range(1000))
RUNS = 5


def make_fn(blob: bytes) -> Callable[[int], int]:
    """A function that captures ``blob`` (and reads it, so the object is really needed)."""
    n = len(blob)

    def f(x: int) -> int:
        return x + blob[(x * 7919) % n]

    return f


def expected(blob: bytes) -> list[int]:
    return sorted(make_fn(blob)(x) for x in DATA)


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=3, help="trials of 5 runs per system")
    p.add_argument("--mb", type=int, default=50, help="size of the captured object")
    p.add_argument("--quick", action="store_true", help="a smoke run: one trial")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args(argv)
    trials = 1 if args.quick else args.trials
    size = args.mb * 1024 * 1024

    per_run: dict[str, list[list[float]]] = {"session": [[] for _ in range(RUNS)],
                                             "plain": [[] for _ in range(RUNS)]}
    cache: list[Any] = []

    with bench_session("closure") as (session, start_to_ready):
        master = session.status().spark_master
        env = session.get_execution_environment()
        env.set_parallelism(2)
        with plain_session(master) as spark:
            sc = spark.sparkContext

            def ours(fn: Callable[[int], int]) -> list[int]:
                return sorted(env.from_collection(DATA).map(fn).execute_and_collect())

            def plain(fn: Callable[[int], int]) -> list[int]:
                return sorted(sc.parallelize(DATA, 2).map(fn).collect())

            # warm both up and check the answers with a small closure
            small = os.urandom(1024)
            for _ in range(2):
                assert ours(make_fn(small)) == plain(make_fn(small)) == expected(small)

            def trial(system: str, run: Callable[[Callable[[int], int]], list[int]]) -> Callable[[], None]:
                def go() -> None:
                    blob = os.urandom(size)  # a new object: run 1 is cold
                    want = expected(blob)
                    fn = make_fn(blob)
                    for i in range(RUNS):
                        t0 = time.perf_counter()
                        got = run(fn)
                        per_run[system][i].append(time.perf_counter() - t0)
                        assert got == want, f"{system} run {i + 1}: wrong answer"
                    if system == "session":
                        cache.append([(tm.tm_id, tm.library_cache) for tm in session.status().taskmanagers])
                return go

            interleaved(trials, 0, session=trial("session", ours), plain=trial("plain", plain))

    figs = {f"{system}_run{i + 1}": Figure(f"{system}_run{i + 1}", per_run[system][i])
            for system in ("session", "plain") for i in range(RUNS)}
    print(f"\nLarge closure: a function capturing {args.mb} MB, run {RUNS} times per trial, "
          f"{trials} trial(s), map+collect of {len(DATA):,} records, master {master}")
    for f in figs.values():
        print("  " + f.row())
    if cache:
        print("  library cache after the last trial: " + ", ".join(
            f"TM {tm}: {c.entries} entries, {c.bytes / 2**20:.0f} MB, {c.hits} hits, {c.misses} misses"
            for tm, c in cache[-1]))
    speedups = {i + 1: figs[f"plain_run{i + 1}"].median / figs[f"session_run{i + 1}"].median
                for i in range(RUNS)}
    for run, s in speedups.items():
        print(f"  run {run}: speed-up plain PySpark / session (median) = {s:.2f}")
    targets = [target("large_closure_speedup_runs_2_5", min(speedups[r] for r in range(2, RUNS + 1)),
                      ">=", 2.0, "lowest speed-up over runs 2-5")]
    out = {"benchmark": "large_closure", "master": master, "closure_mb": args.mb,
           "start_to_ready_s": start_to_ready, "figures": [f.as_dict() for f in figs.values()],
           "speedup_by_run": {str(k): v for k, v in speedups.items()},
           "library_cache": [{"tm_id": tm, "entries": c.entries, "bytes": c.bytes, "hits": c.hits,
                              "misses": c.misses} for tm, c in (cache[-1] if cache else [])],
           "targets": targets}
    write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
