"""A new notebook's first result: a fresh Python process that imports sessioncluster, connects
to the running session and runs the tiny job, vs a fresh Python process that creates a
SparkSession with the same master and runs the same job. Both are subprocesses, timed end to
end (interpreter start to exit), interleaved A B A B.

    python -m benchmarks.first_result [--runs 5] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import bench_session, interleaved, run_child, target, write_json  # noqa: E402

N = 1000
EXPECTED = sorted(x + 1 for x in range(N))

#: what a notebook's first cell does with the session cluster
SESSION_CHILD = """
import json, sys
import sessioncluster
session = sessioncluster.connect(sys.argv[1])
env = session.get_execution_environment()
env.set_parallelism(2)
out = sorted(env.from_collection(range(%d)).map(lambda x: x + 1).execute_and_collect())
session.gateway.close()
print(json.dumps(out))
""" % N

#: the same with plain PySpark: a SparkSession (JVM, executors) first, with the benchmarks'
#: baseline settings; it does not wait for every executor (the job may start on the first)
PLAIN_CHILD = """
import json, sys
from benchmarks.common import plain_spark
spark = plain_spark(sys.argv[1], wait_for_executors=False)
try:
    out = sorted(spark.sparkContext.parallelize(range(%d), 2).map(lambda x: x + 1).collect())
finally:
    spark.stop()
print(json.dumps(out))
""" % N


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="a smoke run: few repetitions")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args(argv)
    runs, warmup = (1, 0) if args.quick else (args.runs, 1)

    with bench_session("first") as (session, start_to_ready):
        master = session.status().spark_master
        name = session.name
        # every run checks its child's answer; the warm-up round (full runs) is the check
        # before timing, and a wrong answer fails the benchmark in any run
        figs = interleaved(runs, warmup,
                           session_new_process=lambda: run_child(SESSION_CHILD, name, EXPECTED),
                           plain_new_process=lambda: run_child(PLAIN_CHILD, master, EXPECTED))

    print(f"\nFirst result in a new Python process: map+collect of {N:,} records, parallelism 2, "
          f"master {master}")
    print("  (session: import sessioncluster, connect, run; plain: import pyspark, "
          "SparkSession on the same master, run)")
    for f in figs.values():
        print("  " + f.row())
    speedup = figs["plain_new_process"].median / figs["session_new_process"].median
    targets = [target("first_result_speedup", speedup, ">=", 20.0,
                      "speed-up plain PySpark / session (median)")]
    out = {"benchmark": "first_result", "master": master, "start_to_ready_s": start_to_ready,
           "figures": [f.as_dict() for f in figs.values()], "speedup": speedup, "targets": targets}
    write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
