"""What a ``%%flink_sql`` cell's live result costs a streaming query: the same Flink SQL
``GROUP BY`` count over CSV files dropped into a monitored directory, run on the session as a
streaming ``SELECT`` whose result a live cell follows (the cell's own loop,
``show_live_result`` in terminal mode: it fetches the job's changelog and applies it, refreshing
every second), as an ``INSERT INTO`` a ``blackhole`` table (nobody reads anything), and as
the same ``SELECT`` with nobody reading its result (what the live cell itself adds),
interleaved.

A run: a fresh empty source directory, the query started, every file renamed into the
directory at once, and the time until the job has counted every event (the newest snapshot of
its changelog state, the last row emitted per key, sums to the events); then the job is
cancelled. Only the query's start to the last event counted is timed: the cancel, the cell's
last refresh and the DROPs after are not, the same for every side. The live cell's final
table is checked equal to plain Python's counts. Ratio of
medians, with a live cell / the same SELECT without one (issue 28's target: <= 1.05), and
live cell / blackhole.

    python benchmarks/sql_live_cell.py [--events 2000000] [--files 20] [--keys 1000]
                                       [--runs 3] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import os
import pickle
import random
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import Elapsed, bench_session, interleaved, target, write_json  # noqa: E402
from sessioncluster.common.execution_mode import RuntimeExecutionMode  # noqa: E402
from sessioncluster.jupyter.sqlcell import LiveOptions, show_live_result  # noqa: E402

SEED = 20261126
TRIGGER_MS = 200
#: the cell's refresh (``--refresh-interval``'s default)
REFRESH_S = 1.0
#: how long one run may take before it is a failure
RUN_TIMEOUT_S = 900.0
STREAMING = RuntimeExecutionMode.STREAMING
CONF = {"execution.checkpointing.interval": f"{TRIGGER_MS} ms"}


def event_files(events: int, files: int, keys: int) -> tuple[Path, dict[str, int]]:
    """``files`` CSV files of one key per line, written once and cached; the count per key."""
    root = Path(tempfile.gettempdir()) / "sessioncluster-bench" / f"livecell-{events}-{files}-{keys}-v1"
    rng = random.Random(SEED)
    counts: collections.Counter[str] = collections.Counter()
    per_file = events // files
    for i in range(files):
        lines = [f"k{rng.randrange(keys)}" for _ in range(per_file)]
        counts.update(lines)
        path = root / f"part-{i:03d}.csv"
        if not path.exists():
            root.mkdir(parents=True, exist_ok=True)
            path.with_suffix(".tmp").write_text("\n".join(lines) + "\n")
            path.with_suffix(".tmp").rename(path)
    return root, dict(counts)


def _drop_all(pool: Path, directory: Path) -> None:
    """Every file of ``pool`` renamed into ``directory`` (written aside first: read whole)."""
    for path in sorted(pool.glob("part-*.csv")):
        aside = directory.parent / f".{directory.name}-{path.name}"
        shutil.copyfile(path, aside)
        os.replace(aside, directory / path.name)


def _counted(directory: Path) -> int:
    """The events counted by the newest snapshot of an updating query's changelog state (the
    last emitted row per key, ``(k, n)``, which the JobManager keeps whatever the sink); 0 when
    there is none, or it was replaced while being read (the two newest are kept)."""
    snapshots = sorted(directory.glob("*.state"), key=lambda path: int(path.name.split(".")[0]))
    if not snapshots:
        return 0
    try:
        with open(snapshots[-1], "rb") as f:
            rows = dict(pickle.load(f))
    except (OSError, EOFError, pickle.UnpicklingError):
        return 0
    return sum(int(row[-1]) for row in rows.values())


def _all_counted(session: Any, job_id: str, events: int) -> None:
    """Until the job has counted every event (its changelog state says so: the same signal
    whether the rows go to a client or into a blackhole). The records its micro-batches read
    are no measure here: the filesystem source reads Arrow batches of a file, not lines."""
    streaming = session.job(job_id).details().streaming or {}
    directory = Path(streaming["checkpoint_dir"]) / "insert-0" / "changelog"
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while (counted := _counted(directory)) < events:
        if time.monotonic() > deadline:
            raise AssertionError(f"{counted} of {events} events counted within {RUN_TIMEOUT_S} s")
        time.sleep(0.05)


def _tables(session: Any, run: str, src: Path) -> None:
    session.execute_sql(f"""CREATE TABLE ev_{run} (k STRING) WITH ('connector' = 'filesystem',
        'path' = '{src}', 'format' = 'csv', 'source.monitor-interval' = '{TRIGGER_MS} ms')""")


def select_run(session: Any, pool: Path, work: Path, expected: dict[str, int],
               live_cell: bool) -> Elapsed:
    """The SELECT until every event is read: its result followed by a live cell, or with
    nobody reading it (the JobManager keeps it; what the cell adds is the difference)."""
    run = uuid.uuid4().hex[:8]
    src = work / f"sel-in-{run}"
    src.mkdir()
    _tables(session, run, src)
    try:
        t0 = time.perf_counter()  # timed: from the query's start until every event is counted
        outcome = session.execute_sql(f"SELECT k, COUNT(*) AS n FROM ev_{run} GROUP BY k",
                                      runtime_mode=STREAMING, configuration=CONF)
        shown: list[Any] = []

        def cell() -> None:
            with contextlib.redirect_stdout(io.StringIO()):  # the terminal's final table
                shown.append(show_live_result(
                    session, outcome, LiveOptions(refresh_interval=REFRESH_S,
                                                  max_rows=len(expected) + 1), in_kernel=False))

        follower = threading.Thread(target=cell, name="live-cell", daemon=True)
        if live_cell:
            follower.start()
        try:
            _drop_all(pool, src)
            _all_counted(session, outcome.job_id, sum(expected.values()))
            took = Elapsed(time.perf_counter() - t0)
        finally:
            session.job(outcome.job_id).cancel()  # the cell's loop ends with its job
            if live_cell:
                follower.join(120)
        if live_cell:
            got = {k: n for k, n in shown[0].rows()} if shown else {}
            assert got == expected, f"the live cell shows {len(got)} keys, {len(expected)} expected"
    finally:
        session.execute_sql(f"DROP TABLE IF EXISTS ev_{run}")
    return took


def blackhole_run(session: Any, pool: Path, work: Path, expected: dict[str, int]) -> Elapsed:
    """The same query into a blackhole table, until every event is read."""
    run = uuid.uuid4().hex[:8]
    src = work / f"bh-in-{run}"
    src.mkdir()
    _tables(session, run, src)
    session.execute_sql(f"CREATE TABLE bh_{run} (k STRING, n BIGINT) WITH ('connector' = "
                        "'blackhole')")
    try:
        t0 = time.perf_counter()
        job_id = session.execute_sql(
            f"INSERT INTO bh_{run} SELECT k, COUNT(*) FROM ev_{run} GROUP BY k",
            runtime_mode=STREAMING, configuration=CONF).job_id
        try:
            _drop_all(pool, src)
            _all_counted(session, job_id, sum(expected.values()))
            took = Elapsed(time.perf_counter() - t0)
        finally:
            session.job(job_id).cancel()
    finally:
        session.execute_sql(f"DROP TABLE IF EXISTS ev_{run}")
        session.execute_sql(f"DROP TABLE IF EXISTS bh_{run}")
    return took


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser()
    p.add_argument("--events", type=int, default=2_000_000)
    p.add_argument("--files", type=int, default=20)
    p.add_argument("--keys", type=int, default=1000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="a smoke run: 20,000 events, one run")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args(argv)
    events, files, runs, warmup = ((20_000, 4, 1, 1) if args.quick
                                   else (args.events, args.files, args.runs, 1))
    t0 = time.perf_counter()
    pool, expected = event_files(events, files, args.keys)
    prepare_s = time.perf_counter() - t0
    work = Path(tempfile.mkdtemp(prefix="sc-bench-livecell-",
                                 dir=os.environ.get("SESSIONCLUSTER_BENCH_TMP") or None))
    try:
        with bench_session("livecell") as (session, _):
            master = session.status().spark_master
            workloads: dict[str, Callable[[], Any]] = {
                "SELECT + live cell": lambda: select_run(session, pool, work, expected, True),
                "INSERT INTO blackhole": lambda: blackhole_run(session, pool, work, expected),
                "SELECT, nobody reading": lambda: select_run(session, pool, work, expected,
                                                             False)}
            figs = interleaved(runs, warmup, **workloads)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    a, b, c = (f.median for f in figs.values())
    print(f"\nStreaming GROUP BY count from {files} files in a monitored directory, {events} "
          f"events, {len(expected)} keys, trigger {TRIGGER_MS} ms, cell refresh {REFRESH_S} s, "
          f"master {master}")
    for f in figs.values():
        print("  " + f.row())
    print(f"  ratio live cell / blackhole: {a / b:.3f}")
    print(f"  ratio live cell / the same SELECT with nobody reading: {a / c:.3f}")
    out: dict[str, Any] = {
        "benchmark": "sql_live_cell", "master": master, "events": events, "files": files,
        "keys": len(expected), "runs": runs, "warmup": warmup, "prepare_s": prepare_s,
        "figures": [f.as_dict() for f in figs.values()], "ratio": a / b,
        "ratio_live_cell_select": a / c,
        "targets": [target("ratio_live_cell_select", a / c, "<=", 1.05,
                           "ratio streaming SELECT with a live cell / without one (nobody "
                           "reading)")]}
    write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
