"""Shared helpers: interleaved repeated timing, medians with min and max, Spark baselines."""

from __future__ import annotations

import os
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable


@dataclass
class Figure:
    name: str
    samples: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    def row(self) -> str:
        ms = [s * 1000 for s in self.samples]
        return (f"{self.name:<44} median {statistics.median(ms):8.1f} ms   "
                f"min {min(ms):8.1f}   max {max(ms):8.1f}   (n={len(ms)})")

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "median_s": self.median, "min_s": min(self.samples),
                "max_s": max(self.samples), "n": len(self.samples)}


def interleaved(runs: int, warmup: int, **workloads: Callable[[], Any]) -> dict[str, Figure]:
    """Run the workloads A B A B ... ``runs`` times after ``warmup`` rounds; times in seconds."""
    for _ in range(warmup):
        for fn in workloads.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in workloads}
    for _ in range(runs):
        for name, fn in workloads.items():
            t0 = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t0)
    return {name: Figure(name, s) for name, s in samples.items()}


def plain_spark(master: str) -> Any:
    """A warm plain SparkSession on ``master``, pinned to loopback like the session cluster's."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(master).appName("plain-pyspark-baseline")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    n = int(master.split("[")[1].split(",")[0]) if master.startswith("local-cluster") else 0
    deadline = time.monotonic() + 120
    while n and spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1 < n:
        if time.monotonic() > deadline:
            raise TimeoutError("plain Spark executors did not register")
        time.sleep(0.05)
    return spark
