"""The session cluster vs Spark Connect, side by side in one run on the same machine and the same
Spark master: a Spark Connect server (shipped inside pyspark since 4.0) on ``local[2]``, bound to
127.0.0.1 on a free port, and a session cluster on ``local[2]`` (``taskmanagers=0, slots=2``);
then, unless ``--no-local-cluster``, a second session cluster on ``local-cluster[2,1,1024]``
against the same Connect server. Each workload is checked to give the same answer on both
systems, then timed interleaved (A B A B ..., median, min, max):

1. a tiny job with a Python function: 1,000 records, ``x + 1``, summed
   (our ``map`` + ``key_by().sum(1)`` vs a Connect Python UDF inside ``F.sum``);
2. a tiny SQL query ``SELECT sum(id) FROM range(1000)``: ``session.sql`` (pandas) vs Connect's
   ``spark.sql(...).toPandas()``;
3. a new Python process's first result (interpreter start, import, connect, workload 1, exit);
4. a function capturing a 50 MB object, run 5 times in a row; every trial uses a new object, so
   its run 1 is cold (ours vs a Connect UDF capturing the same object);
5. word count on >= 50 MB of text (``benchmarks.wordcount.text_file``): our DataStream program vs
   Connect with a Python UDF splitting the lines, and with pure DataFrame functions.

Targets (on ``local[2]``, the same master for both): workloads 1 and 4 (runs 2-5) at most 0.6x
Connect's time, workload 3 at most 1.0x, workload 2 at most 1.1x. The ``local-cluster`` pass is
printed for orientation only.

The Connect client needs ``pyspark[connect]`` (grpcio, grpcio-status, googleapis-common-protos,
zstandard): ``pip install -e ".[bench]"``. The server is started with pyspark's own
``spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer`` in its own
process group and is always killed (by its process group) at the end.

    python -m benchmarks.spark_connect [--runs 20] [--quick [--local-cluster]] [--json FILE]
                                       [--no-local-cluster]

``--quick``: 5 MB of text, a 5 MB closure, 3 runs, the ``local[2]`` pass only (a smoke run of a
few minutes). The Connect server's driver has Spark's default 1 GB heap, like the session's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Iterator

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import (  # noqa: E402
    Figure,
    bench_session,
    child_env,
    interleaved,
    run_child,
    target,
    write_json,
)
from benchmarks.wordcount import text_file  # noqa: E402

CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
MASTER = "local[2]"
N = 1000
DATA = list(range(N))
TINY_SUM = sum(x + 1 for x in DATA)
SQL = f"SELECT sum(id) FROM range({N})"
CLOSURE_RUNS = 5
SERVER_START_TIMEOUT = 300.0

# -- Spark Connect server ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _prctl() -> Any:
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: the finally block still kills the server
        return None


_PRCTL = _prctl()  # resolved here, not in the forked child
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the server's child before exec: its own process group, and SIGTERM when this process
    dies (also if it is killed hard), so that no Connect server outlives the benchmark."""
    os.setsid()
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM)


class ConnectServer:
    """A Spark Connect server on ``local[2]``, bound to 127.0.0.1 on a free port."""

    def __init__(self, master: str = MASTER, driver_memory: str = "4g") -> None:
        # 4g: with 1g and 2g the server ran out of heap in workload 4 (it keeps the plans of
        # the 50 MB UDFs of a session) and its shutdown hook stopped the SparkContext
        import pyspark

        self.port = free_port()
        self.url = f"sc://127.0.0.1:{self.port}"
        self.master = master
        home = os.path.dirname(pyspark.__file__)
        self.log_path = os.path.join(tempfile.mkdtemp(prefix="sc-bench-connect-",
                                                      dir=os.environ.get("SESSIONCLUSTER_BENCH_TMP")
                                                      or None), "connect-server.log")
        self.cmd = [
            os.path.join(home, "bin", "spark-submit"),
            "--master", master,
            "--name", "spark-connect-baseline",
            "--driver-memory", driver_memory,
            "--class", CONNECT_CLASS,
            "--conf", f"spark.connect.grpc.binding.port={self.port}",
            "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf", "spark.driver.host=127.0.0.1",
            "--conf", "spark.driver.bindAddress=127.0.0.1",
            "--conf", "spark.ui.enabled=false",
            "--conf", "spark.ui.showConsoleProgress=false",
            "spark-internal",
        ]
        self.env = child_env(("SPARK_CONF_DIR", *CONNECT_ENV_VARS))
        self.env.update(SPARK_HOME=home, SPARK_LOCAL_IP="127.0.0.1",
                        PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0

    def start(self) -> None:
        """Start the server (returns at once; :meth:`wait_ready` waits for it)."""
        self.started_at = time.perf_counter()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.cmd, env=self.env, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT, close_fds=True,
                                         preexec_fn=_die_with_parent)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = 30) -> str:
        try:
            with open(self.log_path, errors="replace") as fh:
                return "".join(fh.readlines()[-lines:])
        except OSError:
            return ""

    def wait_ready(self, timeout: float = SERVER_START_TIMEOUT) -> tuple[Any, float]:
        """Wait until the port accepts connections and a trivial query works; return a client
        (a Connect ``SparkSession``) and the seconds from start to ready."""
        deadline = time.monotonic() + timeout
        while True:
            if not self.alive():
                raise RuntimeError(f"the Spark Connect server exited "
                                   f"({self.proc.returncode if self.proc else None}); "
                                   f"last lines of {self.log_path}:\n{self.tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1.0).close()
                break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"Spark Connect server not listening after {timeout:.0f} s; "
                                   f"last lines of {self.log_path}:\n{self.tail()}")
            time.sleep(0.1)
        client = connect_client(self.url)
        while True:
            try:
                if client.sql("SELECT 1 AS one").collect()[0][0] == 1:
                    return client, time.perf_counter() - self.started_at
            except Exception:  # noqa: BLE001 - not ready yet: retry until the deadline
                if not self.alive() or time.monotonic() > deadline:
                    raise
            time.sleep(0.2)

    def stop(self) -> None:
        """Kill the server's process group (SIGTERM, then SIGKILL)."""
        if self.proc is None:
            return
        pgid = self.proc.pid  # the server leads its own process group (setsid)
        for sig, wait in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, sig)
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                continue
            # the group's other members (Python workers) may outlive the JVM by a moment
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and _group_alive(pgid):
                time.sleep(0.1)
            if not _group_alive(pgid):
                break


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def require_connect_client() -> None:
    """Fail early, and clearly, without the Connect client's dependencies."""
    try:
        import google.rpc.status_pb2  # noqa: F401 - googleapis-common-protos
        import grpc  # noqa: F401
        import grpc_status  # noqa: F401
        import zstandard  # noqa: F401
    except ImportError as exc:
        raise SystemExit(f"the Spark Connect client is not installed ({exc}): "
                         "pip install -e \".[bench]\"") from exc


#: what pyspark's Connect client puts in os.environ (``builder.remote()``): inherited by a
#: JobManager started afterwards, it makes that JobManager's classic SparkSession builder ask for
#: a Connect URL (CONNECT_URL_NOT_SET), so child processes are started without them
CONNECT_ENV_VARS = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE",
                    "SPARK_CONNECT_AUTHENTICATE_TOKEN")


@contextlib.contextmanager
def without_connect_env() -> Iterator[None]:
    """Remove the Connect client's variables from os.environ for the block, then put them back
    (this process's Connect client still needs them: ``F.udf`` dispatches on them)."""
    saved = {k: os.environ.pop(k) for k in CONNECT_ENV_VARS if k in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def connect_client(url: str) -> Any:
    from pyspark.sql import SparkSession

    return SparkSession.builder.remote(url).getOrCreate()


def stop_client(client: Any, server: ConnectServer) -> None:
    """Release the client's server-side session while the server is still up (a client whose
    server is gone retries at exit and blocks it)."""
    if client is None:
        return
    if server.alive():
        # a server that dies meanwhile would keep stop() retrying for minutes
        stopper = threading.Thread(target=_quiet_stop, args=(client,), daemon=True)
        stopper.start()
        stopper.join(15)
        if stopper.is_alive():
            client.client._closed = True
    else:
        with contextlib.suppress(Exception):
            client.client._closed = True  # nothing to release: skip the RPCs at exit


def _quiet_stop(client: Any) -> None:
    with contextlib.suppress(Exception):
        client.stop()


@contextlib.contextmanager
def connect_server(master: str = MASTER) -> Iterator[ConnectServer]:
    """A started :class:`ConnectServer`, always killed; its log is removed unless the block
    failed (then its path and last lines are printed)."""
    server = ConnectServer(master)
    ok = False
    try:
        server.start()
        yield server
        ok = True
    finally:
        server.stop()
        if ok:
            shutil.rmtree(os.path.dirname(server.log_path), ignore_errors=True)
        elif server.proc is not None:
            print(f"[spark_connect] Connect server log kept: {server.log_path}\n{server.tail(15)}",
                  file=sys.stderr)


# -- workloads ---------------------------------------------------------------------------------


def make_closure_fn(blob: bytes) -> Callable[[int], int]:
    """``x + 1`` plus one byte of ``blob``: the function captures the object and reads it."""
    n = len(blob)

    def f(x):  # no type hints: Connect's udf() would try to infer a pandas UDF from them
        return x + 1 + blob[(x * 7919) % n]

    return f


def closure_expected(blob: bytes) -> int:
    fn = make_closure_fn(blob)
    return sum(fn(x) for x in DATA)


def ours_sum(env: Any, fn: Callable[[int], int]) -> int:
    """``fn`` over 1,000 records, summed on the cluster (one key: a keyed sum)."""
    out = (env.from_collection(DATA).map(lambda x: (0, fn(x))).key_by(lambda t: t[0]).sum(1)
           .execute_and_collect("spark-connect-bench"))
    return out[0][1]


def connect_sum(spark: Any, fn: Callable[[int], int]) -> int:
    """``fn`` as a Connect Python UDF over ``range(1000)`` (2 partitions), summed by Spark."""
    from pyspark.sql import functions as F

    udf = F.udf(fn, "long")
    return spark.range(N).select(F.sum(udf("id"))).collect()[0][0]


#: workload 3, in a fresh interpreter: what a new notebook's first cell does
OURS_CHILD = f"""
import json, sys
import sessioncluster
session = sessioncluster.connect(sys.argv[1])
env = session.get_execution_environment()
env.set_parallelism(2)
out = (env.from_collection(range({N})).map(lambda x: (0, x + 1)).key_by(lambda t: t[0]).sum(1)
       .execute_and_collect())
session.gateway.close()
print(json.dumps(out[0][1]))
"""

CONNECT_CHILD = f"""
import json, sys
from pyspark.sql import SparkSession, functions as F
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
try:
    plus_one = F.udf(lambda x: x + 1, "long")
    out = spark.range({N}).select(F.sum(plus_one("id"))).collect()[0][0]
finally:
    spark.stop()
print(json.dumps(out))
"""


def word_counts_ours(env: Any, path: str) -> dict[str, int]:
    out = (env.read_text_file(path).flat_map(str.split).map(lambda w: (w, 1))
           .key_by(lambda t: t[0]).sum(1).execute_and_collect("wordcount"))
    counts = dict(out)
    assert len(counts) == len(out), "a word came back twice"
    return counts


def word_counts_connect_udf(spark: Any, path: str) -> dict[str, int]:
    from pyspark.sql import functions as F

    split_words = F.udf(lambda line: line.split(), "array<string>")
    rows = (spark.read.text(path).select(F.explode(split_words("value")).alias("w"))
            .groupBy("w").count().collect())
    return {r["w"]: r["count"] for r in rows}


def word_counts_connect_df(spark: Any, path: str) -> dict[str, int]:
    from pyspark.sql import functions as F

    words = spark.read.text(path).select(F.explode(F.split("value", r"\s+")).alias("w"))
    rows = words.where(F.col("w") != "").groupBy("w").count().collect()
    return {r["w"]: r["count"] for r in rows}


# -- one pass: one session cluster against the Connect server ---------------------------------


def measure(session: Any, spark: Any, url: str, cfg: argparse.Namespace,
            tag: str) -> tuple[dict[str, Figure], dict[str, Any]]:
    """Every workload on ``session`` and the Connect client ``spark``; figures named
    ``<workload>/<system>[tag]``."""
    env = session.get_execution_environment()
    env.set_parallelism(2)
    figs: dict[str, Figure] = {}
    info: dict[str, Any] = {}
    plus_one = lambda x: x + 1  # noqa: E731 - a notebook-style function, shipped by value

    def add(workload: str, got: dict[str, Figure]) -> None:
        for system, f in got.items():
            name = f"{workload}/{system}[{tag}]"
            figs[name] = Figure(name, f.samples)

    # 1. tiny job with a Python function
    assert ours_sum(env, plus_one) == connect_sum(spark, plus_one) == TINY_SUM
    add("1_tiny_udf_sum", interleaved(
        cfg.runs, cfg.warmup,
        ours=lambda: ours_sum(env, plus_one), connect=lambda: connect_sum(spark, plus_one)))
    print(f"  [{tag}] 1 tiny job done", flush=True)

    # 2. tiny SQL
    def ours_sql() -> int:
        return int(session.sql(SQL, dialect="spark").iloc[0, 0])

    def connect_sql() -> int:
        return int(spark.sql(SQL).toPandas().iloc[0, 0])

    assert ours_sql() == connect_sql() == sum(range(N))
    add("2_tiny_sql", interleaved(cfg.runs, cfg.warmup, ours=ours_sql, connect=connect_sql))
    print(f"  [{tag}] 2 tiny SQL done", flush=True)

    # 3. a new process's first result (every child checks its answer, the warm-up's too)
    add("3_new_process", interleaved(
        cfg.process_runs, 1,
        ours=lambda: run_child(OURS_CHILD, session.name, TINY_SUM, child_env(CONNECT_ENV_VARS)),
        connect=lambda: run_child(CONNECT_CHILD, url, TINY_SUM, child_env(CONNECT_ENV_VARS))))
    print(f"  [{tag}] 3 new process done", flush=True)

    # 4. a function capturing a large object, 5 runs per trial, a new object per trial
    small = os.urandom(1024)
    want = closure_expected(small)
    assert ours_sum(env, make_closure_fn(small)) == connect_sum(spark, make_closure_fn(small)) == want
    per_run: dict[str, list[list[float]]] = {s: [[] for _ in range(CLOSURE_RUNS)]
                                             for s in ("ours", "connect")}

    def trial(system: str, run: Callable[[Callable[[int], int]], int]) -> Callable[[], None]:
        def go() -> None:
            blob = os.urandom(cfg.closure_bytes)  # a new object: run 1 is cold
            expected = closure_expected(blob)
            fn = make_closure_fn(blob)
            for i in range(CLOSURE_RUNS):
                t0 = time.perf_counter()
                got = run(fn)
                per_run[system][i].append(time.perf_counter() - t0)
                assert got == expected, f"{system} closure run {i + 1}: {got} != {expected}"
        return go

    interleaved(cfg.trials, 0, ours=trial("ours", lambda fn: ours_sum(env, fn)),
                connect=trial("connect", lambda fn: connect_sum(spark, fn)))
    for system in ("ours", "connect"):
        name = f"4_closure_run1/{system}[{tag}]"
        figs[name] = Figure(name, per_run[system][0])
        name = f"4_closure_runs2-5/{system}[{tag}]"
        figs[name] = Figure(name, [s for run in per_run[system][1:] for s in run])
    info["closure_per_run_median_s"] = {
        system: [statistics.median(r) for r in runs] for system, runs in per_run.items()}
    print(f"  [{tag}] 4 large closure done", flush=True)

    # 5. word count
    path = cfg.text_path
    counts = word_counts_ours(env, path)
    for name, other in (("Connect Python UDF", word_counts_connect_udf(spark, path)),
                        ("Connect DataFrame", word_counts_connect_df(spark, path))):
        if other != counts:
            raise AssertionError(f"{name} word counts differ from ours "
                                 f"({len(other)} vs {len(counts)} words)")
    info["distinct_words"] = len(counts)
    info["words"] = sum(counts.values())
    add("5_wordcount", interleaved(
        cfg.wc_runs, cfg.wc_warmup,
        ours=lambda: word_counts_ours(env, path),
        connect_udf=lambda: word_counts_connect_udf(spark, path),
        connect_df=lambda: word_counts_connect_df(spark, path)))
    print(f"  [{tag}] 5 word count done", flush=True)
    return figs, info


def ratio(figs: dict[str, Figure], workload: str, tag: str, other: str = "connect",
          tag_other: str | None = None) -> float:
    return (figs[f"{workload}/ours[{tag}]"].median
            / figs[f"{workload}/{other}[{tag_other or tag}]"].median)


def report(figs: dict[str, Figure], tag: str, master: str, with_targets: bool) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Print one pass's figures and ratios (ours / Connect, medians); targets if asked."""
    print(f"\n[{tag}] session cluster on {master} vs Spark Connect on {MASTER}")
    for f in figs.values():
        if f.name.endswith(f"[{tag}]"):
            print("  " + f.row())
    ratios = {
        "1_tiny_udf_sum": ratio(figs, "1_tiny_udf_sum", tag),
        "2_tiny_sql": ratio(figs, "2_tiny_sql", tag),
        "3_new_process": ratio(figs, "3_new_process", tag),
        "4_closure_run1": ratio(figs, "4_closure_run1", tag),
        "4_closure_runs2-5": ratio(figs, "4_closure_runs2-5", tag),
        "5_wordcount_vs_udf": ratio(figs, "5_wordcount", tag, "connect_udf"),
        "5_wordcount_vs_df": ratio(figs, "5_wordcount", tag, "connect_df"),
    }
    limits = {"1_tiny_udf_sum": 0.6, "4_closure_runs2-5": 0.6, "3_new_process": 1.0,
              "2_tiny_sql": 1.1}
    texts = {
        "1_tiny_udf_sum": "1 tiny job, Python function: ours / Connect UDF",
        "2_tiny_sql": "2 tiny SQL: session.sql / Connect spark.sql",
        "3_new_process": "3 new process's first result: ours / Connect",
        "4_closure_run1": "4 large closure, run 1 (cold): ours / Connect",
        "4_closure_runs2-5": "4 large closure, runs 2-5: ours / Connect",
        "5_wordcount_vs_udf": "5 word count: ours / Connect DataFrame + Python UDF",
        "5_wordcount_vs_df": "5 word count: ours / Connect pure DataFrame",
    }
    targets = []
    for key, value in ratios.items():
        if with_targets and key in limits:
            targets.append(target(f"{key}_ratio", value, "<=", limits[key], texts[key]))
        else:
            note = f"  (target <= {limits[key]:g} on {MASTER} only)" if key in limits else ""
            print(f"  {texts[key]} = {value:.3g}{note}")
    return ratios, targets


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=20, help="timed runs of workloads 1 and 2")
    p.add_argument("--process-runs", type=int, default=10, help="timed new processes (workload 3)")
    p.add_argument("--trials", type=int, default=3, help="trials of 5 runs (workload 4)")
    p.add_argument("--closure-mb", type=int, default=50, help="size of the captured object")
    p.add_argument("--mb", type=int, default=50, help="size of the word-count text (MB)")
    p.add_argument("--wc-runs", type=int, default=3, help="timed word counts per system")
    p.add_argument("--no-local-cluster", action="store_true",
                   help="skip the second pass with our session on local-cluster[2,1,1024]")
    p.add_argument("--local-cluster", action="store_true",
                   help="with --quick: do the local-cluster pass too")
    p.add_argument("--quick", action="store_true",
                   help="a smoke run: 5 MB text, 5 MB closure, 3 runs, local[2] only")
    p.add_argument("--json", default=None, help="write the figures here")
    cfg = p.parse_args(argv)
    if cfg.quick:
        cfg.runs, cfg.warmup, cfg.process_runs, cfg.trials = 3, 1, 3, 1
        cfg.closure_mb, cfg.mb, cfg.wc_runs, cfg.wc_warmup = 5, 5, 2, 1
        do_local_cluster = cfg.local_cluster
    else:
        cfg.warmup, cfg.wc_warmup = 5, 1  # 5: the Connect server's JVM warms up too
        do_local_cluster = not cfg.no_local_cluster
    cfg.closure_bytes = cfg.closure_mb * 1024 * 1024
    require_connect_client()
    # the runner stops a script that ran too long with SIGINT; a SIGTERM must also reach the
    # finally blocks that stop the Connect server and the session clusters
    signal.signal(signal.SIGTERM, _interrupt)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # started in the background by a shell
        signal.signal(signal.SIGINT, signal.default_int_handler)

    t0 = time.perf_counter()
    cfg.text_path = text_file(cfg.mb)
    prepare_s = time.perf_counter() - t0
    size_mb = os.path.getsize(cfg.text_path) / 2**20

    figs: dict[str, Figure] = {}
    infos: dict[str, dict[str, Any]] = {}
    starts: dict[str, float] = {}
    masters: dict[str, str] = {}
    with connect_server() as server:
        spark = None
        try:
            passes = [("local", 0, 2)] + ([("cluster", 2, 1)] if do_local_cluster else [])
            for tag, tms, slots in passes:
                # the first session starts while the Connect server starts
                with contextlib.ExitStack() as stack:
                    with without_connect_env():
                        session, s = stack.enter_context(
                            bench_session(f"connect-{tag}", taskmanagers=tms, slots=slots))
                    starts[f"session_{tag}_start_to_ready_s"] = s
                    masters[tag] = session.status().spark_master
                    if spark is None:
                        spark, starts["connect_server_start_to_ready_s"] = server.wait_ready()
                        version = spark.version
                    print(f"pass [{tag}]: session cluster on {masters[tag]}, Spark Connect "
                          f"{version} on {MASTER} at {server.url}", flush=True)
                    got, infos[tag] = measure(session, spark, server.url, cfg, tag)
                    figs.update(got)
        finally:
            stop_client(spark, server)

    print(f"\nSession cluster vs Spark Connect {version} (server on {MASTER}); "
          f"{N:,} records, parallelism 2; closure {cfg.closure_mb} MB, {cfg.trials} trial(s) of "
          f"{CLOSURE_RUNS} runs; word count {size_mb:.1f} MB, {infos['local']['distinct_words']} "
          f"distinct words")
    print("  start to ready: " + ", ".join(f"{k[:-2].replace('_', ' ')} {v:.1f} s"
                                           for k, v in starts.items()))
    ratios: dict[str, dict[str, float]] = {}
    targets: list[dict[str, Any]] = []
    for tag in masters:
        ratios[tag], t = report(figs, tag, masters[tag], with_targets=(tag == "local"))
        targets += t
    out: dict[str, Any] = {
        "benchmark": "spark_connect", "master": masters["local"], "connect_master": MASTER,
        "connect_version": version, "text_mb": size_mb, "text_path": cfg.text_path,
        "prepare_s": prepare_s, "closure_mb": cfg.closure_mb, "closure_trials": cfg.trials,
        **starts,
        "figures": [f.as_dict() for f in figs.values()],
        **{f"ratio_{k}[{tag}]": v for tag, r in ratios.items() for k, v in r.items()},
        "closure_per_run_median_s": {tag: i["closure_per_run_median_s"] for tag, i in infos.items()},
        "targets": targets,
    }
    if "cluster" in masters:
        out["master_local_cluster"] = masters["cluster"]
    write_json(cfg.json, out)
    return out


if __name__ == "__main__":
    main()
