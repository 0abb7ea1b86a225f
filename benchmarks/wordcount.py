"""Word count over a generated text file (>= 50 MB): the DataStream program on the session
cluster vs hand-written PySpark RDD code and a PySpark DataFrame query, each on a warm plain
SparkSession with the same master, interleaved A B C after a warm-up round.

    python benchmarks/wordcount.py [--mb 50] [--runs 3] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import itertools
import operator
import os
import random
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import sessioncluster  # noqa: E402
from benchmarks.common import bench_session, interleaved, plain_session, write_json  # noqa: E402

VOCABULARY_SIZE = 5000
WORDS_PER_LINE = 12
SEED = 20240601
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qui", "dro", "fen",
             "gal", "hu", "jor", "bel", "cas", "dun", "wy"]


def vocabulary(size: int = VOCABULARY_SIZE) -> list[str]:
    """``size`` distinct pseudo-words, the same on every run."""
    rng = random.Random(SEED)
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        w = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def text_file(mb: int) -> str:
    """A deterministic text file of about ``mb`` MB, written once into the temp dir's cache.

    Words are drawn with Zipf-like frequencies (the k-th word with weight 1/k)."""
    cache = os.path.join(tempfile.gettempdir(), "sessioncluster-bench")
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, f"wordcount-{mb}mb-v1.txt")
    if os.path.exists(path):
        return path
    words = vocabulary()
    cum_weights = list(itertools.accumulate(1.0 / k for k in range(1, len(words) + 1)))
    rng = random.Random(SEED)
    target = mb * 1024 * 1024
    written = 0
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        while written < target:
            chunk = rng.choices(words, cum_weights=cum_weights, k=WORDS_PER_LINE * 1000)
            lines = "\n".join(" ".join(chunk[i:i + WORDS_PER_LINE])
                              for i in range(0, len(chunk), WORDS_PER_LINE)) + "\n"
            fh.write(lines)
            written += len(lines)
    os.replace(tmp, path)  # another run never sees a half-written file
    return path


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser()
    p.add_argument("--mb", type=int, default=50, help="size of the text (default: %(default)s MB)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="a smoke run: 5 MB, one run")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args(argv)
    mb, runs, warmup = (5, 1, 1) if args.quick else (args.mb, args.runs, 1)

    t0 = time.perf_counter()
    path = text_file(mb)
    prepare_s = time.perf_counter() - t0
    size_mb = os.path.getsize(path) / 2**20

    with bench_session("wordcount") as (session, _):
        master = session.status().spark_master
        with plain_session(master) as spark:
            figs, counts = _measure(session, spark, path, runs, warmup)

    a, b, c = (figs[k].median for k in ("datastream", "rdd", "dataframe"))
    print(f"\nWord count, {size_mb:.1f} MB ({path}), {len(counts)} distinct words, "
          f"{sum(counts.values())} words, parallelism 2, master {master}")
    for f in figs.values():
        print("  " + f.row())
    print(f"  ratio DataStream / PySpark RDD       = {a / b:.2f}  (target <= 1.15)")
    print(f"  ratio DataStream / PySpark DataFrame = {a / c:.2f}")
    out = {"benchmark": "wordcount", "master": master, "mb": size_mb, "path": path,
           "prepare_s": prepare_s, "distinct_words": len(counts), "words": sum(counts.values()),
           "runs": runs, "warmup": warmup, "figures": [f.as_dict() for f in figs.values()],
           "ratio_datastream_rdd": a / b, "ratio_datastream_dataframe": a / c}
    write_json(args.json, out)
    return out


def _measure(session: sessioncluster.Session, spark: Any, path: str, runs: int,
             warmup: int) -> tuple[dict[str, Any], dict[str, int]]:
    """Check that the three agree, then time them interleaved."""
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    env = session.get_execution_environment()
    env.set_parallelism(2)

    def datastream() -> list[tuple[str, int]]:
        return (env.read_text_file(path).flat_map(str.split).map(lambda w: (w, 1))
                .key_by(lambda t: t[0]).sum(1).execute_and_collect("wordcount"))

    def rdd() -> list[tuple[str, int]]:
        return (sc.textFile(path, 2).flatMap(str.split).map(lambda w: (w, 1))
                .reduceByKey(operator.add, 2).collect())

    def dataframe() -> list[tuple[str, int]]:
        words = spark.read.text(path).select(F.explode(F.split("value", r"\s+")).alias("w"))
        rows = words.where(F.col("w") != "").groupBy("w").count().collect()
        return [(r["w"], r["count"]) for r in rows]

    results = {"datastream": datastream(), "rdd": rdd(), "dataframe": dataframe()}
    counts = dict(results["rdd"])
    for name, result in results.items():
        if len(result) != len(counts) or dict(result) != counts:
            raise AssertionError(f"{name} counts differ from the RDD's "
                                 f"({len(result)} vs {len(counts)} words)")
    figs = interleaved(runs, warmup, datastream=datastream, rdd=rdd, dataframe=dataframe)
    return figs, counts


if __name__ == "__main__":
    main()
