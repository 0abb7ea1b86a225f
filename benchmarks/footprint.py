"""Footprint of a session cluster: start to ready, the JobManager's Python RSS, each
TaskManager agent's RSS, and the CPU the whole session uses while idle (JobManager, Spark
driver and executor JVMs, TaskManager daemons, agents and slot workers: utime + stime from
/proc/<pid>/stat over the process tree) as % of one core. Baseline: a fresh Python process
with a plain SparkSession on the same master, ready when its executors registered and one tiny
Python job ran (as the session's warm-up job starts its Python workers), measured the same
way. Start to ready is also measured with ``class_data_sharing=False`` (the JVMs without the
class-data-sharing archive of Spark's classes, which is made first if the machine has none
yet). A session's idle CPU is measured once its STREAMING warm-up (up to about a minute
of work after ready, 15 one-record runs of a streaming query) is over; how long that took
after ready is a figure of its own. Rounds are interleaved A B A B; every round starts and
stops its own cluster.

    python -m benchmarks.footprint [--runs 3] [--idle 10] [--settle 3] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import (  # noqa: E402
    REPO,
    bench_session,
    child_env,
    interleaved,
    stat,
    stat_row,
    target,
    write_json,
)

CLK_TCK = os.sysconf("SC_CLK_TCK")
N = 1000

#: a plain PySpark driver: ready after its executors registered and one Python job ran; then
#: idle until its stdin closes
PLAIN_CHILD = """
import json, sys
from benchmarks.common import plain_spark
spark = plain_spark(sys.argv[1])
try:
    out = sorted(spark.sparkContext.parallelize(range(%d), 2).map(lambda x: x + 1).collect())
    print(json.dumps(out), flush=True)
    sys.stdin.read()
finally:
    spark.stop()
""" % N


# -- /proc ------------------------------------------------------------------------------------

def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    return data[data.rindex(")") + 2:].split()  # fields from the 3rd (state) on


def parents() -> dict[int, int]:
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields:
                out[int(entry)] = int(fields[1])
    return out


def tree(roots: set[int]) -> set[int]:
    """``roots`` and every descendant of them."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parents().items():
        children.setdefault(ppid, []).append(pid)
    out: set[int] = set()
    todo = [r for r in roots if os.path.exists(f"/proc/{r}")]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo.extend(children.get(pid, []))
    return out


def cpu_ticks(pid: int) -> tuple[int, int] | None:
    """(utime + stime, cutime + cstime) of ``pid`` in clock ticks."""
    f = _stat_fields(pid)
    if f is None:
        return None
    # fields 14-17 of /proc/<pid>/stat (1-based); f starts at field 3
    return int(f[11]) + int(f[12]), int(f[13]) + int(f[14])


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def kind(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ")
    except OSError:
        return "gone"
    if b"java" in cmd.split(b" ")[0]:
        return "jvm"
    if b"sessioncluster.jobmanager" in cmd:
        return "jobmanager"
    if b"sessioncluster.taskmanager" in cmd or b"pyspark.daemon" in cmd or b"pyspark.worker" in cmd:
        return "python_workers"
    if b"python" in cmd.split(b" ")[0]:
        return "python_driver"
    return "other"


def idle_cpu(roots: set[int], seconds: float) -> tuple[float, dict[str, float]]:
    """CPU used by the process trees of ``roots`` over ``seconds`` of idling, in % of one
    core, and its split by kind of process. Processes reaped in between count through their
    parents' cutime/cstime."""
    before = {pid: cpu_ticks(pid) for pid in tree(roots)}
    t0 = time.monotonic()
    time.sleep(seconds)
    pids = tree(roots)
    after = {pid: cpu_ticks(pid) for pid in pids}
    elapsed = time.monotonic() - t0
    by_kind: dict[str, float] = {}
    for pid, now in after.items():
        if now is None:
            continue
        was = before.get(pid) or (0, 0)
        ticks = (now[0] - was[0]) + (now[1] - was[1])
        k = kind(pid)
        by_kind[k] = by_kind.get(k, 0.0) + ticks
    scale = 100.0 / CLK_TCK / elapsed
    by_kind = {k: v * scale for k, v in by_kind.items()}
    return sum(by_kind.values()), by_kind


def prime_archive(timeout: float = 180.0) -> str | None:
    """This machine's class-data-sharing archive, made first by one session start and stop if
    there is none (its driver JVM writes it when it exits); None if the JVM cannot make one."""
    from sessioncluster.spark import cds

    if cds.machine_key() is None:
        return None
    archive = cds.existing_archive()
    if archive is None:
        with bench_session("foot-cds"):
            pass
        deadline = time.monotonic() + timeout
        while (archive := cds.existing_archive()) is None and time.monotonic() < deadline:
            time.sleep(1.0)
    return str(archive) if archive else None


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3, help="rounds (each starts a cluster)")
    p.add_argument("--idle", type=float, default=10.0, help="seconds of idling measured")
    p.add_argument("--settle", type=float, default=3.0, help="seconds after ready, not measured")
    p.add_argument("--quick", action="store_true", help="a smoke run: one round, 3 s idle")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args(argv)
    runs, idle, settle = (1, 3.0, 1.0) if args.quick else (args.runs, args.idle, args.settle)

    s: dict[str, list[float]] = {}
    splits: dict[str, list[dict[str, float]]] = {"session": [], "plain": []}
    master: list[str] = []

    def add(name: str, value: float) -> None:
        s.setdefault(name, []).append(value)

    def session_round() -> None:
        with bench_session("foot") as (session, start_to_ready):
            ready_at = time.perf_counter()
            overview = session.status()
            env = session.get_execution_environment()
            env.set_parallelism(2)
            assert sorted(env.from_collection(range(N)).map(lambda x: x + 1).execute_and_collect()) \
                == list(range(1, N + 1)), "session: wrong answer"
            master.append(overview.spark_master)
            add("session_start_to_ready_s", start_to_ready)
            jm = session.info.jobmanager_pid
            add("session_jobmanager_rss_mb", rss_mb(jm))
            for i, tm in enumerate(sorted(overview.taskmanagers, key=lambda t: t.tm_id)):
                add(f"session_taskmanager{i}_agent_rss_mb", rss_mb(tm.pid))
                add(f"session_taskmanager{i}_daemon_rss_mb", rss_mb(tm.daemon_pid))
                add(f"session_taskmanager{i}_jvm_rss_mb", rss_mb(tm.jvm_pid))
            roots = {jm} | {tm.jvm_pid for tm in overview.taskmanagers}
            procs = tree(roots)
            add("session_tree_rss_mb", sum(rss_mb(pid) for pid in procs))
            add("session_processes", len(procs))
            # idle is after the session's STREAMING warm-up, which works for up to a minute
            # after ready (its time is a figure of its own)
            while session.status().warming_up:
                time.sleep(0.2)
            add("session_streaming_warm_up_after_ready_s", time.perf_counter() - ready_at)
            time.sleep(settle)
            cpu, split = idle_cpu(roots, idle)
            add("session_idle_cpu_pct", cpu)
            splits["session"].append(split)

    def plain_round() -> None:
        t0 = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-c", PLAIN_CHILD, master[-1]], env=child_env(), cwd=REPO,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
        try:
            line = child.stdout.readline()  # type: ignore[union-attr]
            start_to_ready = time.perf_counter() - t0
            if not line:
                raise RuntimeError(f"plain PySpark child exited with {child.wait()}")
            assert json.loads(line) == list(range(1, N + 1)), \
                "plain: wrong answer"
            add("plain_start_to_ready_s", start_to_ready)
            add("plain_driver_rss_mb", rss_mb(child.pid))
            roots = {child.pid}
            procs = tree(roots)
            add("plain_tree_rss_mb", sum(rss_mb(pid) for pid in procs))
            add("plain_processes", len(procs))
            time.sleep(settle)
            cpu, split = idle_cpu(roots, idle)
            add("plain_idle_cpu_pct", cpu)
            splits["plain"].append(split)
        finally:
            child.stdin.close()  # type: ignore[union-attr]
            try:
                child.wait(60)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()

    def session_no_cds_round() -> None:
        with bench_session("foot-nocds", class_data_sharing=False) as (session, start_to_ready):
            env = session.get_execution_environment()
            env.set_parallelism(2)
            assert sorted(env.from_collection(range(N)).map(lambda x: x + 1).execute_and_collect()) \
                == list(range(1, N + 1)), "session without CDS: wrong answer"
            add("session_no_cds_start_to_ready_s", start_to_ready)

    archive = prime_archive()
    figs = interleaved(runs, 0, session=session_round, session_no_cds=session_no_cds_round,
                       plain=plain_round)

    units = {"_s": "s", "_mb": "MB", "_pct": "%", "processes": ""}
    stats = [stat(name, v, next(u for suffix, u in units.items() if name.endswith(suffix)))
             for name, v in s.items()]
    print(f"\nFootprint, master {master[-1]}, {runs} round(s); idle CPU over {idle:.0f} s, "
          f"{settle:.0f} s after ready and the session's STREAMING warm-up; class-data-sharing "
          f"archive: {archive or 'none (the JVM cannot make one)'}")
    for st in stats:
        print("  " + stat_row(st))
    for system, rounds in splits.items():
        last = rounds[-1]
        print(f"  {system} idle CPU by process kind (last round, % of one core): " +
              ", ".join(f"{k} {v:.2f}" for k, v in sorted(last.items())))
    for f in figs.values():
        print("  round time " + f.row())
    med = {st["name"]: st["median"] for st in stats}
    print(f"  start to ready  session / plain PySpark = "
          f"{med['session_start_to_ready_s'] / med['plain_start_to_ready_s']:.2f}, "
          f"without the CDS archive "
          f"{med['session_no_cds_start_to_ready_s'] / med['plain_start_to_ready_s']:.2f}")
    targets = [target("footprint_idle_cpu_pct", med["session_idle_cpu_pct"], "<", 2.0,
                      "session idle CPU, % of one core (median)")]
    out = {"benchmark": "footprint", "master": master[-1], "cds_archive": str(archive),
           "idle_s": idle, "settle_s": settle,
           "figures": [f.as_dict() for f in figs.values()], "stats": stats,
           "idle_cpu_split": splits, "targets": targets}
    write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
