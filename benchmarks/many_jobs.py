"""Many short jobs: 200 sequential tiny jobs (jobs/s), and 4 concurrent client threads x 50
jobs each (per-job latency p50 and p99, and jobs/s), on the session cluster vs plain PySpark on
a warm SparkSession with the same master (the threads share its SparkContext). Each session
client thread has its own connection (``sessioncluster.connect``), as separate notebooks
would. Rounds are interleaved A B A B; every job's answer is checked.

    python -m benchmarks.many_jobs [--runs 3] [--jobs 200] [--threads 4] [--per-thread 50]
                                   [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import sessioncluster  # noqa: E402
from benchmarks.common import (  # noqa: E402
    bench_session,
    interleaved,
    percentile,
    plain_session,
    stat,
    stat_row,
    write_json,
)

DATA = list(range(1000))
EXPECTED = [x + 1 for x in DATA]


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3, help="rounds of each workload")
    p.add_argument("--jobs", type=int, default=200, help="sequential jobs per round")
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--per-thread", type=int, default=50, help="jobs per client thread")
    p.add_argument("--quick", action="store_true", help="a smoke run: 20 and 4 x 5 jobs")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args(argv)
    if args.quick:
        runs, jobs, threads, per_thread = 1, 20, 4, 5
    else:
        runs, jobs, threads, per_thread = args.runs, args.jobs, args.threads, args.per_thread

    rates: dict[str, list[float]] = {k: [] for k in
                                     ("session_seq", "plain_seq", "session_conc", "plain_conc")}
    lat: dict[str, list[list[float]]] = {k: [] for k in rates}

    with bench_session("many") as (session, _):
        master = session.status().spark_master
        env = session.get_execution_environment()
        env.set_parallelism(2)
        # one connection (and environment) per client thread
        clients = [sessioncluster.connect(session.name) for _ in range(threads)]
        envs = [c.get_execution_environment().set_parallelism(2) for c in clients]
        try:
            with plain_session(master) as spark:
                sc = spark.sparkContext

                def ours_job(e: Any) -> None:
                    assert sorted(e.from_collection(DATA).map(lambda x: x + 1).execute_and_collect()) \
                        == EXPECTED, "session: wrong answer"

                def plain_job(_: Any) -> None:
                    assert sorted(sc.parallelize(DATA, 2).map(lambda x: x + 1).collect()) \
                        == EXPECTED, "plain: wrong answer"

                def sequential(name: str, job: Callable[[Any], None]) -> Callable[[], None]:
                    def go() -> None:
                        times = []
                        t0 = time.perf_counter()
                        for _ in range(jobs):
                            t = time.perf_counter()
                            job(env)
                            times.append(time.perf_counter() - t)
                        rates[name].append(jobs / (time.perf_counter() - t0))
                        lat[name].append(times)
                    return go

                def concurrent(name: str, job: Callable[[Any], None]) -> Callable[[], None]:
                    def go() -> None:
                        times: list[float] = []
                        errors: list[BaseException] = []
                        barrier = threading.Barrier(threads + 1)

                        def client(i: int) -> None:
                            try:
                                barrier.wait()
                                for _ in range(per_thread):
                                    t = time.perf_counter()
                                    job(envs[i])
                                    times.append(time.perf_counter() - t)
                            except BaseException as exc:  # noqa: BLE001 - reported below
                                errors.append(exc)

                        ts = [threading.Thread(target=client, args=(i,)) for i in range(threads)]
                        for t in ts:
                            t.start()
                        barrier.wait()
                        t0 = time.perf_counter()
                        for t in ts:
                            t.join()
                        elapsed = time.perf_counter() - t0
                        if errors:
                            raise errors[0]
                        rates[name].append(threads * per_thread / elapsed)
                        lat[name].append(times)
                    return go

                # warm-up and correctness check, outside the timing
                for _ in range(3):
                    ours_job(env)
                    plain_job(None)
                    for e in envs:
                        ours_job(e)
                figs = interleaved(runs, 0,
                                   session_seq=sequential("session_seq", ours_job),
                                   plain_seq=sequential("plain_seq", plain_job),
                                   session_conc=concurrent("session_conc", ours_job),
                                   plain_conc=concurrent("plain_conc", plain_job))
        finally:
            for c in clients:
                c.gateway.close()

    print(f"\nMany short jobs (map+collect of {len(DATA):,} records, parallelism 2), master {master}:"
          f" {jobs} sequential; {threads} client threads x {per_thread} concurrent; {runs} round(s)")
    stats = []
    for name in rates:
        stats.append(stat(f"{name}_jobs_per_s", rates[name], "job/s"))
    for name in rates:
        for q in (50, 99):
            stats.append(stat(f"{name}_latency_p{q}", [percentile(r, q) for r in lat[name]], "s"))
    for st in stats:
        print("  " + stat_row(st))
    for f in figs.values():
        print("  round time " + f.row())
    med = {st["name"]: st["median"] for st in stats}
    seq = med["session_seq_jobs_per_s"] / med["plain_seq_jobs_per_s"]
    conc = med["session_conc_jobs_per_s"] / med["plain_conc_jobs_per_s"]
    p99 = med["session_conc_latency_p99"] / med["plain_conc_latency_p99"]
    print(f"  sequential jobs/s       session / plain PySpark = {seq:.2f}")
    print(f"  concurrent jobs/s       session / plain PySpark = {conc:.2f}")
    print(f"  concurrent p99 latency  session / plain PySpark = {p99:.2f}")
    print("  (the issue sets no target for this figure)")
    out = {"benchmark": "many_jobs", "master": master, "sequential_jobs": jobs,
           "threads": threads, "jobs_per_thread": per_thread,
           "figures": [f.as_dict() for f in figs.values()], "stats": stats,
           "ratio_sequential_jobs_per_s": seq, "ratio_concurrent_jobs_per_s": conc,
           "ratio_concurrent_p99": p99}
    write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
