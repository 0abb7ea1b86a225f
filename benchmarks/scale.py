"""Cost and memory as the input grows (issue 26, item 6): the keyed tumbling window count of
``window_count`` over 5, 50 and 500 MB of events, the DataStream job against the PySpark
DataFrame in the same run, with the ratio and the TaskManagers' peak memory at each size; and a
BATCH KeyedProcessFunction over ~166 MB at parallelism 2 (every event crosses the shuffle and
reaches the keyed operator), with the peak memory of one Python worker.

Memory is sampled every 0.1 s from /proc over the session's process tree: the peak RSS of one
Python worker (slot worker), of all the session's Python workers at one instant, and of its
executor JVMs; for the DataFrame, its executor JVMs (it runs no Python per record).

    python -m benchmarks.scale [--sizes 5 50 500] [--kpf-mb 166] [--only windows kpf]
                               [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import Any, Callable, Iterable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import bench_session, plain_session, write_json  # noqa: E402
from benchmarks.footprint import kind, rss_mb, tree  # noqa: E402
from benchmarks.window_count import events_file, parse, same_results, workloads  # noqa: E402
from sessioncluster.api.functions import KeyedProcessFunction, RuntimeContext  # noqa: E402
from sessioncluster.api.state import ValueStateDescriptor  # noqa: E402


class PeakMemory:
    """Peak RSS (MB) of the process trees of ``roots`` while the block runs, sampled every
    ``interval`` s: one Python worker, all Python workers together, the executor JVMs."""

    def __init__(self, roots: Callable[[], set[int]], interval: float = 0.1) -> None:
        self.roots, self.interval = roots, interval
        self.worker = self.workers = self.executors = 0.0
        self._stop = threading.Event()

    def sample(self) -> None:
        workers, executors = [], 0.0
        for pid in tree(self.roots()):
            k = kind(pid)
            if k == "python_workers":
                workers.append(rss_mb(pid))
            elif k == "jvm" and _is_executor(pid):
                executors += rss_mb(pid)
        self.worker = max([self.worker, *workers])
        self.workers = max(self.workers, sum(workers))
        self.executors = max(self.executors, executors)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> "PeakMemory":
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def as_dict(self) -> dict[str, float]:
        return {"python_worker_peak_mb": self.worker, "python_workers_peak_mb": self.workers,
                "executors_peak_mb": self.executors}


def _is_executor(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"CoarseGrainedExecutorBackend" in f.read()
    except OSError:
        return False


def measured(roots: Callable[[], set[int]], fn: Callable[[], Any]) -> tuple[Any, float, PeakMemory]:
    """``fn()``'s result, its seconds and the peak memory meanwhile."""
    with PeakMemory(roots) as peak:
        t0 = time.perf_counter()
        out = fn()
        took = time.perf_counter() - t0
    return out, took, peak


class CountPerKey(KeyedProcessFunction):
    """Counts a key's events in keyed state; a timer at the end of time emits (key, count)."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", None))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Iterable[Any]:
        n = self.count.value()
        if n is None:
            ctx.timer_service().register_event_time_timer(2**62)
            n = 0
        self.count.update(n + 1)
        return ()

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Iterable[Any]:
        yield ctx.get_current_key(), self.count.value()


def window_sizes(session: Any, spark: Any, sizes: list[int], ours: Callable[[], set[int]],
                 theirs: Callable[[], set[int]]) -> list[dict[str, Any]]:
    rows = []
    for mb in sizes:
        path = events_file(mb)
        programs = workloads(session, spark, path)
        for name in ("datastream", "dataframe"):  # warm-up (and the file in the page cache)
            programs[name]()
        ds, ds_s, ds_mem = measured(ours, programs["datastream"])
        df, df_s, df_mem = measured(theirs, programs["dataframe"])
        same_results("dataframe", sorted(ds), sorted(df))
        row = {"mb": os.path.getsize(path) / 2**20, "events": sum(n for _, _, n in ds),
               "results": len(ds), "datastream_s": ds_s, "dataframe_s": df_s,
               "ratio_datastream_dataframe": ds_s / df_s,
               "datastream": ds_mem.as_dict(), "dataframe": df_mem.as_dict()}
        rows.append(row)
        print(f"  {row['mb']:7.1f} MB  {row['events']:>10} events  DataStream {ds_s:7.1f} s  "
              f"DataFrame {df_s:6.1f} s  ratio {ds_s / df_s:5.2f}   peak RSS: one Python worker "
              f"{ds_mem.worker:6.0f} MB, all {ds_mem.workers:6.0f} MB, executor JVMs "
              f"{ds_mem.executors:6.0f} MB (DataFrame's JVMs {df_mem.executors:6.0f} MB)",
              flush=True)
    return rows


def keyed_process(session: Any, spark: Any, mb: int, ours: Callable[[], set[int]]) -> dict[str, Any]:

    path = events_file(mb)
    env = session.get_execution_environment()
    env.set_parallelism(2)

    def job() -> list[tuple[str, int]]:
        return (env.read_text_file(path).map(parse).key_by(lambda e: e[0])
                .process(CountPerKey()).execute_and_collect("keyed process function"))

    out, took, mem = measured(ours, job)
    expected = sorted((r["key"], r["count"]) for r in spark.read.csv(
        path, schema="ts LONG, key STRING").groupBy("key").count().collect())
    if sorted(out) != expected:
        raise AssertionError(f"the per-key counts differ from the DataFrame's: {len(out)} keys vs "
                             f"{len(expected)}")
    row = {"mb": os.path.getsize(path) / 2**20, "events": sum(n for _, n in out), "seconds": took,
           **mem.as_dict()}
    print(f"  KeyedProcessFunction, {row['mb']:.1f} MB, {row['events']} events, parallelism 2: "
          f"{took:.1f} s, peak RSS of one Python worker {mem.worker:.0f} MB (all Python workers "
          f"{mem.workers:.0f} MB, executor JVMs {mem.executors:.0f} MB)", flush=True)
    return row


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", type=int, nargs="+", default=[5, 50, 500],
                   help="MB of events for the window count (default: %(default)s)")
    p.add_argument("--kpf-mb", type=int, default=166,
                   help="MB of events for the KeyedProcessFunction (default: %(default)s)")
    p.add_argument("--only", nargs="+", choices=["windows", "kpf"], default=["windows", "kpf"])
    p.add_argument("--quick", action="store_true", help="a smoke run: 5 MB only")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args(argv)
    sizes, kpf_mb = ([5], 5) if args.quick else (args.sizes, args.kpf_mb)
    load = os.getloadavg()[0]

    out: dict[str, Any] = {"benchmark": "scale", "load_average_start": load}
    with bench_session("scale") as (session, _):
        master = session.status().spark_master
        out["master"] = master
        jm = session.info.jobmanager_pid
        ours: Callable[[], set[int]] = lambda: {jm}  # noqa: E731
        with plain_session(master) as spark:
            theirs: Callable[[], set[int]] = lambda: tree({os.getpid()}) - tree({jm})  # noqa: E731
            print(f"\nScale, master {master}, parallelism 2, load average {load:.1f}")
            if "windows" in args.only:
                print("Keyed tumbling window count (benchmarks.window_count's programs):")
                out["windows"] = window_sizes(session, spark, sizes, ours, theirs)
            if "kpf" in args.only:
                out["keyed_process_function"] = keyed_process(session, spark, kpf_mb, ours)
    out["load_average_end"] = os.getloadavg()[0]
    print(f"  load average at the end {out['load_average_end']:.1f}")
    write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
