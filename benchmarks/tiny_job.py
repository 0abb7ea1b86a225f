"""A warm tiny job through the session cluster vs the same job in plain PySpark on a warm
SparkSession with the same master, interleaved. Also: session start to ready.

    python benchmarks/tiny_job.py [--runs 30] [--quick]
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import sessioncluster  # noqa: E402
from benchmarks.common import interleaved, plain_spark  # noqa: E402

DATA = list(range(1000))


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--quick", action="store_true", help="a smoke run: few repetitions")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args(argv)
    runs, warmup = (3, 1) if args.quick else (args.runs, 3)

    os.environ.setdefault("SESSIONCLUSTER_HOME", tempfile.mkdtemp(prefix="sc-bench-"))
    t0 = time.perf_counter()
    session = sessioncluster.start("bench-tiny", taskmanagers=2, slots=1, quiet=True)
    start_to_ready = time.perf_counter() - t0
    master = session.status().spark_master
    spark = plain_spark(master)
    sc = spark.sparkContext
    env = session.get_execution_environment()
    env.set_parallelism(2)
    try:
        assert sorted(env.from_collection(DATA).map(lambda x: x + 1).execute_and_collect()) == \
            sorted(sc.parallelize(DATA, 2).map(lambda x: x + 1).collect())

        def ours_collect() -> None:
            env.from_collection(DATA).map(lambda x: x + 1).execute_and_collect()

        def plain_collect() -> None:
            sc.parallelize(DATA, 2).map(lambda x: x + 1).collect()

        def ours_sum() -> None:
            env.from_collection(DATA).map(lambda x: (0, x + 1)).key_by(lambda t: t[0]).sum(1) \
                .execute_and_collect()

        def plain_sum() -> None:
            sc.parallelize(DATA, 2).map(lambda x: (0, x + 1)).reduceByKey(operator.add, 2).collect()

        figs = interleaved(runs, warmup, ours_collect=ours_collect, plain_collect=plain_collect,
                           ours_sum=ours_sum, plain_sum=plain_sum)
    finally:
        spark.stop()
        session.stop()

    print(f"\nTiny job, 1,000 records, parallelism 2, master {master}")
    print(f"session start to ready: {start_to_ready:.1f} s")
    for f in figs.values():
        print("  " + f.row())
    r1 = figs["ours_collect"].median / figs["plain_collect"].median
    r2 = figs["ours_sum"].median / figs["plain_sum"].median
    print(f"  ratio map+collect      session / plain PySpark = {r1:.2f}  (target <= 1.25)")
    print(f"  ratio map+keyed sum    session / plain PySpark = {r2:.2f}  (target <= 1.25)")
    out = {"benchmark": "tiny_job", "master": master, "start_to_ready_s": start_to_ready,
           "figures": [f.as_dict() for f in figs.values()],
           "ratio_map_collect": r1, "ratio_map_keyed_sum": r2}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return out


if __name__ == "__main__":
    main()
