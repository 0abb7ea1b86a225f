"""Run every benchmark, each in its own Python process (so JVMs and session clusters never
overlap), collect their figures into one JSON file and print one table.

    python -m benchmarks [--quick] [--json benchmarks/results.json] [--only NAME ...]

``--quick`` is a smoke run (few repetitions): it checks that every script runs, in a few
minutes on a 2-core machine. The exit status is non-zero if any script failed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = ["tiny_job", "first_result", "wordcount", "large_closure", "accumulator_latency",
           "many_jobs", "footprint", "spark_connect", "window_count", "streaming", "operators",
           "file_formats", "flink_sql", "sql_streaming", "sql_live_cell", "pandas_udf", "recovery",
           "scale", "window_streaming"]
BENCH_TMP_ENV = "SESSIONCLUSTER_BENCH_TMP"  # as benchmarks.common


def run_script(name: str, quick: bool, timeout: float) -> dict[str, Any]:
    """Run ``benchmarks.<name>`` in a subprocess; return its status and figures."""
    record: dict[str, Any] = {"ok": False, "returncode": None, "seconds": 0.0, "error": None}
    if not (REPO / "benchmarks" / f"{name}.py").exists():
        record["error"] = f"benchmarks/{name}.py does not exist"
        return record
    tmp = Path(tempfile.mkdtemp(prefix=f"sc-bench-run-{name}-"))
    out_json = tmp / "result.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env[BENCH_TMP_ENV] = str(tmp)
    env["SESSIONCLUSTER_HOME"] = str(tmp / "home")  # for scripts that keep a home they are given
    cmd = [sys.executable, "-m", f"benchmarks.{name}", "--json", str(out_json)]
    if quick:
        cmd.append("--quick")
    print(f"\n=== {name}: {' '.join(cmd[1:])}", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env)
    try:
        record["returncode"] = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        record["error"] = f"timed out after {timeout:.0f} s"
        proc.send_signal(signal.SIGINT)  # KeyboardInterrupt: the script's finally stops its session
        try:
            proc.wait(90)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        record["returncode"] = proc.returncode
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        proc.wait()
        stop_leftovers(tmp)
        raise
    record["seconds"] = time.perf_counter() - t0
    leftovers = stop_leftovers(tmp)
    if leftovers:
        record["error"] = (record["error"] or "") + f" left session(s) running: {leftovers} (stopped)"
    if record["returncode"] == 0 and record["error"] is None:
        try:
            record["result"] = json.loads(out_json.read_text())
            record["ok"] = True
        except (OSError, ValueError) as exc:
            record["error"] = f"no figures written: {exc}"
    elif record["error"] is None:
        record["error"] = f"exited with code {record['returncode']}"
    if record["ok"]:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        record["kept"] = str(tmp)  # session homes with their JobManager logs
    return record


def stop_leftovers(tmp: Path) -> list[str]:
    """Stop any session cluster a script left running under its temporary homes."""
    found = []
    for path in tmp.glob("**/sessions/*/connection.json"):
        try:
            from sessioncluster.client.session import Session
            from sessioncluster.cluster.connection import ConnectionInfo, pid_alive

            info = ConnectionInfo.read(path)
            if pid_alive(info.jobmanager_pid):
                found.append(info.name)
                Session(info).stop()
        except Exception as exc:  # noqa: BLE001 - report and go on with the next
            print(f"could not stop the session of {path}: {exc!r}", file=sys.stderr)
    return found


def _num(v: float) -> str:
    return f"{v:.4g}"


def table(results: dict[str, dict[str, Any]]) -> list[str]:
    """One table of every figure of every script."""
    lines = [f"{'benchmark / figure':<52} {'median':>10} {'min':>10} {'max':>10} {'unit':<6} n",
             "-" * 96]
    for name, rec in results.items():
        status = "ok" if rec["ok"] else f"FAILED: {rec['error']}"
        lines.append(f"{name} ({rec['seconds']:.0f} s) {status}")
        res = rec.get("result") or {}
        for f in res.get("figures", []):
            lines.append(f"  {f['name']:<50} {f['median_s'] * 1000:>10.1f} {f['min_s'] * 1000:>10.1f} "
                         f"{f['max_s'] * 1000:>10.1f} {'ms':<6} {f['n']}")
        for s in res.get("stats", []):
            lines.append(f"  {s['name']:<50} {_num(s['median']):>10} {_num(s['min']):>10} "
                         f"{_num(s['max']):>10} {s['unit']:<6} {s['n']}")
        for key, value in res.items():
            if key in ("benchmark", "figures", "stats", "targets"):
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                continue
            lines.append(f"  {key:<50} {value if isinstance(value, str) else _num(value):>10}")
        for t in res.get("targets", []):
            lines.append(f"  target {t['name']:<43} {_num(t['value']):>10} {t['op']} {t['target']:g}: "
                         f"{'met' if t['met'] else 'NOT met'}")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks")
    p.add_argument("--quick", action="store_true", help="a smoke run: few repetitions")
    p.add_argument("--json", default=str(REPO / "benchmarks" / "results.json"),
                   help="write every figure here (default benchmarks/results.json)")
    p.add_argument("--only", nargs="+", metavar="NAME", choices=SCRIPTS,
                   help=f"run only these, of {', '.join(SCRIPTS)}")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds per script (default 900 with --quick, else 3600)")
    args = p.parse_args(argv)
    names = [n for n in SCRIPTS if not args.only or n in args.only]
    timeout = args.timeout or (900.0 if args.quick else 3600.0)

    started = time.time()
    results: dict[str, dict[str, Any]] = {}
    for name in names:
        results[name] = run_script(name, args.quick, timeout)
        if not results[name]["ok"]:
            print(f"=== {name} FAILED: {results[name]['error']}", file=sys.stderr, flush=True)

    doc = {"quick": args.quick, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
           "seconds": time.time() - started,
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                       "python": platform.python_version()},
           "results": results}
    with open(args.json, "w") as fh:
        json.dump(doc, fh, indent=1)
    print("\n" + "\n".join(table(results)))
    failed = [n for n, r in results.items() if not r["ok"]]
    print(f"\n{len(names) - len(failed)} of {len(names)} benchmarks ran in {doc['seconds']:.0f} s; "
          f"figures in {args.json}" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
