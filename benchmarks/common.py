"""Shared helpers: interleaved repeated timing, medians with min and max, Spark baselines."""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator


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


#: the repository root: a child Python process imports ``benchmarks`` and ``sessioncluster`` from it
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child_env(drop: tuple[str, ...] = ()) -> dict[str, str]:
    """This process's environment for a child Python, with the repository on its path and the
    variables in ``drop`` removed."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))
    return env


def run_child(code: str, arg: str, expected: Any, env: dict[str, str] | None = None) -> float:
    """Run ``code`` in a fresh interpreter (``arg`` as its argv[1]); check that its last stdout
    line is ``expected`` as JSON; return its wall time in seconds."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, arg], env=env or child_env(), cwd=REPO,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    if answer != expected:
        shown = f"{answer[:5]}... ({len(answer)} records)" if isinstance(answer, list) else answer
        raise AssertionError(f"wrong answer from a new process: {shown}")
    return elapsed


class Elapsed(float):
    """What a workload returns to :func:`interleaved` to time itself: the seconds of the part
    that is measured (its set-up or clean-up left out, the same for each side)."""


def interleaved(runs: int, warmup: int, **workloads: Callable[[], Any]) -> dict[str, Figure]:
    """Run the workloads A B A B ... ``runs`` times after ``warmup`` rounds; times in seconds
    (a workload that returns :class:`Elapsed` is timed by it)."""
    for _ in range(warmup):
        for fn in workloads.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in workloads}
    for _ in range(runs):
        for name, fn in workloads.items():
            t0 = time.perf_counter()
            out = fn()
            took = time.perf_counter() - t0
            samples[name].append(float(out) if isinstance(out, Elapsed) else took)
    return {name: Figure(name, s) for name, s in samples.items()}


def plain_spark(master: str, wait_for_executors: bool = True) -> Any:
    """A warm plain SparkSession on ``master``, pinned to loopback like the session cluster's.

    With ``wait_for_executors`` (the default) it returns once every executor of a
    ``local-cluster`` master has registered."""
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
    if not wait_for_executors:
        n = 0
    deadline = time.monotonic() + 120
    while n and spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1 < n:
        if time.monotonic() > deadline:
            raise TimeoutError("plain Spark executors did not register")
        time.sleep(0.05)
    return spark


# -- summaries of non-time samples and percentiles ---------------------------------------------

def percentile(samples: list[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by linear interpolation between closest ranks."""
    if not samples:
        return math.nan
    xs = sorted(samples)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def stat(name: str, samples: list[float], unit: str) -> dict[str, Any]:
    """Median, min and max of repeated measurements of anything (MB, %, jobs/s, s)."""
    return {"name": name, "unit": unit, "median": statistics.median(samples),
            "min": min(samples), "max": max(samples), "n": len(samples)}


def stat_row(s: dict[str, Any]) -> str:
    return (f"{s['name']:<44} median {s['median']:8.4g} {s['unit']:<5} min {s['min']:8.4g}   "
            f"max {s['max']:8.4g}   (n={s['n']})")


def target(name: str, value: float, op: str, limit: float, text: str) -> dict[str, Any]:
    """A figure checked against its target; ``op`` is ``<=``, ``>=``, ``<`` or ``>``."""
    met = {"<=": value <= limit, ">=": value >= limit, "<": value < limit, ">": value > limit}[op]
    print(f"  {text} = {value:.4g}  (target {op} {limit:g}: {'met' if met else 'NOT met'})")
    return {"name": name, "value": value, "op": op, "target": limit, "met": met}


def write_json(path: str | None, out: dict[str, Any]) -> None:
    if path:
        with open(path, "w") as fh:
            json.dump(out, fh, indent=1)


# -- sessions with a temporary home -------------------------------------------------------------

#: the runner (python -m benchmarks) puts every script's temporary homes under this directory,
#: so that it can find and stop a session a crashed script left behind
BENCH_TMP_ENV = "SESSIONCLUSTER_BENCH_TMP"


def temp_home(tag: str) -> str:
    """A fresh temporary SESSIONCLUSTER_HOME, set in this process's environment."""
    home = tempfile.mkdtemp(prefix=f"sc-bench-{tag}-", dir=os.environ.get(BENCH_TMP_ENV) or None)
    os.environ["SESSIONCLUSTER_HOME"] = home
    return home


@contextmanager
def bench_session(tag: str, taskmanagers: int = 2, slots: int = 1,
                  **kwargs: Any) -> Iterator[tuple[Any, float]]:
    """Start a session cluster with a unique name under a fresh temporary home; yield
    ``(session, start_to_ready_seconds)``; always stop it. The home is removed afterwards
    unless the block failed (then its JobManager log is kept, and its path printed)."""
    import sessioncluster

    home = temp_home(tag)
    name = f"bench-{tag}-{os.getpid()}"
    t0 = time.perf_counter()
    session = None
    ok = False
    try:
        session = sessioncluster.start(name, taskmanagers=taskmanagers, slots=slots, quiet=True,
                                       **kwargs)
        start_to_ready = time.perf_counter() - t0
        yield session, start_to_ready
        ok = True
    finally:
        if session is not None:
            session.stop()
        if ok:
            shutil.rmtree(home, ignore_errors=True)
        else:
            print(f"[{tag}] session home kept for its logs: {home}", file=sys.stderr)


@contextmanager
def plain_session(master: str) -> Iterator[Any]:
    """``plain_spark(master)``, always stopped."""
    spark = plain_spark(master)
    try:
        yield spark
    finally:
        spark.stop()
