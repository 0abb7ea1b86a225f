"""The primer of the class-data-sharing archive (:mod:`.cds`): a Spark driver of its own that
loads what a session's JVMs load, then dumps those classes as its JVM exits.

    python -m sessioncluster.spark.cdsprime [--detach]

It claims the archive first (one primer per machine and key), runs in ``local[2]`` (the
driver and the executor in one JVM, so both kinds of class are loaded) a workload shaped like a
session's: an RDD job with Python functions and a shuffle, Spark SQL with Arrow, and a
Structured Streaming aggregation on the RocksDB state store over a file source. It waits for
its JVM to exit and promote the dump. It never fails loudly: a primer that cannot finish
leaves no archive, and the next start tries again once the claim is stale.
"""

from __future__ import annotations

import argparse
import operator
import os
import sys
import tempfile
from pathlib import Path

from . import cds

#: how long the JVM may take to write its archive after the workload (a loaded 2-core machine
#: took 52 s)
DUMP_TIMEOUT = 600.0


def workload(spark: object) -> None:
    """What a session's driver and executors run, in small: the classes it loads are archived."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    assert isinstance(spark, SparkSession)
    sc = spark.sparkContext
    sc.parallelize(range(1000), 2).map(lambda x: (x % 7, x)).reduceByKey(operator.add, 2).collect()
    sc.parallelize(range(100), 2).mapPartitionsWithIndex(lambda i, it: it).collect()
    df = spark.range(1000).withColumn("k", F.col("id") % 7)
    df.groupBy("k").agg(F.sum("id"), F.count("*")).collect()
    df.mapInArrow(lambda batches: batches, df.schema).count()
    df.toPandas()
    spark.sql("SELECT k, window(timestamp_millis(id), '10 seconds') AS w, count(*) "
              "FROM VALUES (1, 2), (3, 4) AS t(id, k) GROUP BY k, w").collect()
    with tempfile.TemporaryDirectory(prefix="sc-cds-") as tmp:
        src = Path(tmp, "in")
        src.mkdir()
        (src / "a.json").write_text('{"k": 1, "v": 2}\n{"k": 2, "v": 3}\n')
        spark.conf.set("spark.sql.streaming.stateStore.providerClass",
                       "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
        stream = (spark.readStream.schema("k INT, v INT").json(str(src))
                  .groupBy("k").agg(F.sum("v"))
                  .writeStream.outputMode("update").format("memory").queryName("cds_prime")
                  .option("checkpointLocation", str(Path(tmp, "chk")))
                  .trigger(availableNow=True).start())
        stream.awaitTermination(300)
        stream.stop()


def prime() -> int:
    """Claim, run the workload in a JVM that dumps at exit, wait for the dump, promote it."""
    key = cds.machine_key()
    if key is None:
        print("cdsprime: this JDK cannot make a dynamic archive", flush=True)
        return 0
    directory = cds.cache_dir()
    plan = cds.plan_in(directory, key, os.getpid())
    if plan.mode != "write":
        print(f"cdsprime: nothing to do ({plan.mode}: {plan.reason})", flush=True)
        return 0
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("sessioncluster-cds-primer")
             .config("spark.driver.extraJavaOptions", plan.driver_options)
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    try:
        workload(spark)
    finally:
        spark.stop()
        gateway = SparkContext._gateway
        proc = getattr(gateway, "proc", None)
        if gateway is not None:
            gateway.shutdown()
        if proc is not None:  # the JVM exits once its stdin closes, and dumps as it exits
            proc.stdin.close()
            proc.wait(timeout=DUMP_TIMEOUT)
    with cds.locked(directory):
        done = cds.promote(directory, key)
    print(f"cdsprime: archive {'made' if done else 'NOT made'} for {key}", flush=True)
    return 0 if done else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sessioncluster.spark.cdsprime")
    parser.add_argument("--detach", action="store_true",
                        help="fork, print the primer's pid and return at once")
    args = parser.parse_args(argv)
    if args.detach:
        child = os.fork()
        if child:
            print(child, flush=True)
            return 0
        os.nice(10)  # a start that launched it must not wait behind it
    return prime()


if __name__ == "__main__":
    sys.exit(main())
