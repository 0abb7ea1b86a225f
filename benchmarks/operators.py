"""Pure-Python micro-benchmark of the operator runtime (no Spark): each operator under the BATCH
driver (a subtask's whole input) and the STREAMING driver (one call per key and micro-batch, the
key's snapshot pickled in and out of a dict standing in for Spark's ValueState).

    python -m benchmarks.operators [--records 200000] [--keys 20000] [--runs 5] [--quick]
                                   [--profile NAME] [--json FILE]

Each figure is the median of ``--runs`` runs (min and max alongside) of the CPU time (the machine
may be shared), in ms per run and microseconds per record (STREAMING: per key call as well).
``--profile NAME`` runs one workload under cProfile and prints its 25 most expensive functions.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pickle
import pstats
import random
import statistics
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import write_json  # noqa: E402
from sessioncluster.common.time import Time  # noqa: E402
from sessioncluster.api.functions import (  # noqa: E402
    KeyedProcessFunction,
    ProcessFunction,
    RuntimeContext,
    TimeDomain,
)
from sessioncluster.runtime import batch_driver  # noqa: E402
from sessioncluster.runtime.operators import (  # noqa: E402
    KeyedFunctionOperator,
    KeyedProcessOperator,
    ProcessOperator,
    ReduceOperator,
    StreamOperator,
    WindowOperator,
    open_function,
)
from sessioncluster.runtime.streaming_driver import KeyedStreamingDriver  # noqa: E402
from sessioncluster.api.state import ValueStateDescriptor  # noqa: E402
from sessioncluster.api.window import (  # noqa: E402
    CountTrigger,
    EventTimeSessionWindows,
    TumblingEventTimeWindows,
)

Rec = tuple[Any, int | None, Any]


class Count(KeyedProcessFunction):
    """A per-key count in ValueState, emitted per record."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value: Any, ctx: Any) -> Any:
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield value[0], n


class CountWithTimer(Count):
    """The count, and an event-time timer 1 s after each record (deduplicated per timestamp)."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1000)
        return ()

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield ctx.get_current_key(), self.count.value()


class Passthrough(ProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> Any:
        yield value


def _add(a: tuple[str, int], b: tuple[str, int]) -> tuple[str, int]:
    return a[0], a[1] + b[1]


def _double(v: tuple[str, int]) -> tuple[str, int]:
    return v[0], v[1] * 2


def _odd(v: tuple[str, int]) -> bool:
    return bool(v[1] & 1)


def _twice(v: tuple[str, int]) -> list[tuple[str, int]]:
    return [v, v]


#: name -> (a new operator, keyed)
WORKLOADS: dict[str, Callable[[], StreamOperator]] = {
    "process (non-keyed)": lambda: ProcessOperator(Passthrough()),
    "keyed process": lambda: KeyedProcessOperator(Count()),
    "keyed process + timers": lambda: KeyedProcessOperator(CountWithTimer()),
    "keyed map": lambda: KeyedFunctionOperator("map", _double),
    "keyed filter": lambda: KeyedFunctionOperator("filter", _odd),
    "keyed flat_map": lambda: KeyedFunctionOperator("flat_map", _twice),
    "running reduce": lambda: ReduceOperator(_add),
    "window tumbling (default trigger)": lambda: WindowOperator(
        TumblingEventTimeWindows.of(Time.seconds(10)), "reduce", _add),
    "window tumbling (count trigger)": lambda: WindowOperator(
        TumblingEventTimeWindows.of(Time.seconds(10)), "reduce", _add, trigger=CountTrigger.of(1000)),
    "window session": lambda: WindowOperator(
        EventTimeSessionWindows.with_gap(Time.seconds(5)), "reduce", _add),
}
#: not for the STREAMING driver (it runs keyed operators only)
BATCH_ONLY = {"process (non-keyed)"}


def records(n: int, keys: int, seed: int = 1) -> list[Rec]:
    """``(key, timestamp, (key, 1))`` in roughly ascending time, ``keys`` distinct keys."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        k = f"k{rnd.randrange(keys)}"
        out.append((k, i * 10 + rnd.randrange(100), (k, 1)))
    return out


def run_batch(make: Callable[[], StreamOperator], recs: list[Rec]) -> int:
    op = make()
    open_function(op, RuntimeContext("op", 0, 1, 0, {}))
    inp = iter(recs) if op.keyed else ((t, v) for _, t, v in recs)
    n = sum(1 for _ in batch_driver.run(op, inp))
    op.close()
    return n


def streaming_batches(recs: list[Rec], batches: int) -> list[dict[Any, list[tuple[int | None, Any]]]]:
    """The records in ``batches`` micro-batches, each grouped by key (as Spark hands them)."""
    size = -(-len(recs) // batches)
    out = []
    for i in range(0, len(recs), size):
        by_key: dict[Any, list[tuple[int | None, Any]]] = {}
        for key, ts, value in recs[i:i + size]:
            by_key.setdefault(key, []).append((ts, value))
        out.append(by_key)
    return out


def run_streaming(make: Callable[[], StreamOperator],
                  micro_batches: list[dict[Any, list[tuple[int | None, Any]]]]) -> tuple[int, int]:
    """Every key's call of every micro-batch; the watermark is the batch's start. Gives the
    number of calls and of output records."""
    driver = KeyedStreamingDriver(make(), RuntimeContext("op", 0, 1, 0, {}), TimeDomain.EVENT_TIME)
    store: dict[Any, bytes] = {}
    calls = outputs = 0
    watermark = 0
    dumps, loads = pickle.dumps, pickle.loads
    for by_key in micro_batches:
        for key, recs in by_key.items():
            raw = store.get(key)
            driver.open_key(key, None if raw is None else loads(raw), watermark, 1_000_000)
            out = driver.process(recs)
            out += driver.fire_timers(None)
            result = driver.close_key()
            if result.snapshot:
                store[key] = dumps(result.snapshot, protocol=5)
            else:
                store.pop(key, None)
            calls += 1
            outputs += len(out)
        watermark = max(t for recs in by_key.values() for t, _ in recs) - 5000
    driver.operator.close()
    return calls, outputs


def measure(fn: Callable[[], Any], runs: int) -> tuple[list[float], Any]:
    """The CPU time of each run (one thread, no I/O: on an idle machine the wall time; on a
    loaded one it leaves out the time spent waiting for a core)."""
    samples, result = [], None
    for _ in range(runs):
        t0 = time.process_time()
        result = fn()
        samples.append(time.process_time() - t0)
    return samples, result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser()
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--keys", type=int, default=20_000)
    p.add_argument("--batches", type=int, default=2, help="STREAMING micro-batches")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--only", nargs="*", default=None, help="workload names (substrings)")
    p.add_argument("--profile", default=None, help="cProfile one workload: 'batch:NAME' or 'streaming:NAME'")
    p.add_argument("--quick", action="store_true", help="a smoke run: 20k records, 2k keys, 1 run")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args(argv)
    if args.quick:
        args.records, args.keys, args.runs = 20_000, 2_000, 1
    recs = records(args.records, args.keys)
    micro = streaming_batches(recs, args.batches)
    if args.profile:
        mode, _, name = args.profile.partition(":")
        make = WORKLOADS[name]
        prof = cProfile.Profile()
        prof.runcall(run_batch if mode == "batch" else run_streaming, make,
                     recs if mode == "batch" else micro)
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return {}
    print(f"{args.records} records, {args.keys} keys, {args.batches} STREAMING micro-batches, "
          f"median of {args.runs} runs")
    figures: list[dict[str, Any]] = []
    for name, make in WORKLOADS.items():
        if args.only and not any(s in name for s in args.only):
            continue
        modes: list[tuple[str, Callable[[], Any]]] = [("BATCH", lambda make=make: run_batch(make, recs))]
        if name not in BATCH_ONLY:
            modes.append(("STREAMING", lambda make=make: run_streaming(make, micro)))
        for mode, fn in modes:
            samples, result = measure(fn, args.runs)
            med = statistics.median(samples)
            calls = result[0] if mode == "STREAMING" else None
            per_call = f"  {med / calls * 1e6:6.2f} us/call" if calls else ""
            print(f"{mode:<9} {name:<34} {med * 1e3:8.1f} ms ({min(samples) * 1e3:.1f}-"
                  f"{max(samples) * 1e3:.1f})  {med / args.records * 1e6:6.2f} us/record{per_call}")
            figures.append({"name": f"{mode} {name}", "mode": mode, "operator": name,
                            "median_s": med, "min_s": min(samples), "max_s": max(samples),
                            "n": len(samples), "calls": calls, "records": args.records})
    out = {"figures": figures}
    write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
