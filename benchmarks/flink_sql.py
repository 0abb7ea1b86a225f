"""A BATCH Flink SQL aggregation on the session against the same query in plain Spark SQL: a group
aggregate (``SELECT item, COUNT(*), SUM(price) FROM bids GROUP BY item``) and a TUMBLE window TVF
count over a generated Parquet directory, read through Flink's ``filesystem`` connector
(``'format' = 'parquet'``) on the session, and through ``spark.read.parquet`` + ``spark.sql``
with ``window(...)`` on a warm plain SparkSession with the same master. Both answers are checked
equal before anything is timed; the two sides run interleaved. Also the planning cost alone: the
round trip of a statement that runs no job (``SHOW TABLES``) against ``spark.sql("SHOW
TABLES").collect()``. The session's statements are timed through its ZeroMQ client
(``Session.execute_sql``) and through the SQL Gateway REST API (a gateway session in BATCH
mode, results fetched by token as JSON), and the ratio of the two is printed.

    python benchmarks/flink_sql.py [--mb 50] [--runs 10] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import sessioncluster  # noqa: E402
from benchmarks.common import (  # noqa: E402
    Figure,
    bench_session,
    interleaved,
    plain_session,
    target,
    write_json,
)
from sessioncluster.client.restclient import RestClient  # noqa: E402
from sessioncluster.client.sqlclient import SqlGatewayClient  # noqa: E402

FILES = 8
ITEMS = 1000
SEED = 20261126
START_MS = 1_700_000_000_000
#: mean spacing of the bids in event time
STEP_MS = 50
WINDOW_MINUTES = 10
#: about this many bytes of Parquet (snappy) a row (measured: 7.9)
ROW_BYTES = 8

FLINK_GROUP = "SELECT item, COUNT(*) AS n, SUM(price) AS total FROM bids GROUP BY item"
FLINK_WINDOW = (f"SELECT window_start, window_end, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE bids, "
                f"DESCRIPTOR(bidtime), INTERVAL '{WINDOW_MINUTES}' MINUTES)) "
                f"GROUP BY window_start, window_end")
SPARK_GROUP = FLINK_GROUP
SPARK_WINDOW = (f"SELECT window.start AS window_start, window.end AS window_end, COUNT(*) AS n "
                f"FROM bids GROUP BY window(bidtime, '{WINDOW_MINUTES} minutes')")


def bids_directory(mb: int) -> tuple[str, int]:
    """``FILES`` Parquet files of (bidtime TIMESTAMP(3), price DOUBLE, item STRING), about ``mb``
    MB in all, written once and cached; the directory and its number of rows."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = os.path.join(tempfile.gettempdir(), "sessioncluster-bench", f"bids-{mb}mb-v2")
    done = os.path.join(root, "_ROWS")
    if os.path.exists(done):
        with open(done) as fh:
            return root, int(fh.read())
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    rng = np.random.default_rng(SEED)
    rows_per_file = max(1000, mb * 2**20 // FILES // ROW_BYTES)
    names = np.array([f"item{i}" for i in range(ITEMS)], dtype=object)
    total, t = 0, START_MS
    for i in range(FILES):
        ts = t + np.cumsum(rng.integers(0, 2 * STEP_MS, rows_per_file))
        t = int(ts[-1])
        table = pa.table({
            "bidtime": pa.array(ts, pa.timestamp("ms")),
            "price": np.round(rng.random(rows_per_file) * 100, 2),
            "item": pa.array(names[rng.integers(0, ITEMS, rows_per_file)], pa.string())})
        pq.write_table(table, os.path.join(root, f"part-{i}.parquet"))
        total += rows_per_file
    with open(done, "w") as fh:
        fh.write(str(total))
    return root, total


def _rounded(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows sorted, floats rounded (a sum of doubles depends on the order it was added in)."""
    return sorted(tuple(round(v, 4) if isinstance(v, float) else v for v in r) for r in rows)


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser()
    p.add_argument("--mb", type=int, default=50, help="size of the bids (default: %(default)s MB)")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--quick", action="store_true", help="a smoke run: 4 MB, 3 runs")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args(argv)
    mb, runs, warmup = (4, 3, 1) if args.quick else (args.mb, args.runs, 1)

    t0 = time.perf_counter()
    path, rows = bids_directory(mb)
    prepare_s = time.perf_counter() - t0
    size_mb = sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)
                  if not f.startswith("_")) / 2**20
    out: dict[str, Any] = {"benchmark": "flink_sql", "mb": size_mb, "rows": rows, "runs": runs,
                           "warmup": warmup, "prepare_s": prepare_s, "figures": [], "targets": []}
    with bench_session("flinksql") as (session, _):
        master = session.status().spark_master
        with plain_session(master) as spark:
            _create_tables(session, spark, path)
            print(f"\nFlink SQL on the session vs Spark SQL, {size_mb:.1f} MB of Parquet "
                  f"({rows} rows, {FILES} files, {ITEMS} items), parallelism 2, master {master}")
            # the same statements through the SQL Gateway REST API, a BATCH gateway session
            gateway = SqlGatewayClient(RestClient.of(session), {"execution.runtime-mode": "batch"})
            try:
                for case, flink, plain in (("group", FLINK_GROUP, SPARK_GROUP),
                                           ("tumble", FLINK_WINDOW, SPARK_WINDOW)):
                    _one(session, spark, gateway, case, flink, plain, runs, warmup, out)
                _planning(session, spark, gateway, runs, out)
            finally:
                gateway.close()
    out["master"] = master
    write_json(args.json, out)
    return out


def _create_tables(session: sessioncluster.Session, spark: Any, path: str) -> None:
    session.execute_sql("DROP TABLE IF EXISTS bids")
    session.execute_sql(f"""
        CREATE TABLE bids (
            bidtime TIMESTAMP(3),
            price DOUBLE,
            item STRING,
            WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND
        ) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'parquet')""")
    # the plain side reads the files again at every query, as the connector does
    spark.read.parquet(path).createOrReplaceTempView("bids")


def _one(session: sessioncluster.Session, spark: Any, gateway: SqlGatewayClient, case: str,
         flink: str, plain: str, runs: int, warmup: int, out: dict[str, Any]) -> None:
    """Check that both sides give the same rows, then time them interleaved; print the ratio."""
    def flink_sql() -> list[tuple[Any, ...]]:
        return [tuple(r.values()) for r in session.execute_sql(flink).table.to_pylist()]

    def spark_sql() -> list[tuple[Any, ...]]:
        return [tuple(r) for r in spark.sql(plain).collect()]

    def gateway_sql() -> list[tuple[Any, ...]]:
        return _gateway_rows(gateway, flink)

    ours, theirs = _rounded(flink_sql()), _rounded(spark_sql())
    if ours != theirs:
        raise AssertionError(
            f"{case}: Flink SQL gives {len(ours)} rows, Spark SQL {len(theirs)}; first difference "
            f"{next(((x, y) for x, y in zip(ours, theirs) if x != y), None)}")
    if _rounded(_as_json(ours)) != _rounded(gateway_sql()):
        raise AssertionError(f"{case}: the SQL Gateway's rows differ from the session's")
    workloads: dict[str, Callable[[], Any]] = {f"{case}: flink sql (session)": flink_sql,
                                               f"{case}: spark sql (plain)": spark_sql,
                                               f"{case}: flink sql (sql gateway)": gateway_sql}
    figs = interleaved(runs, warmup, **workloads)
    a, b, c = (f.median for f in figs.values())
    print(f"\n{case} ({len(ours)} result rows)")
    for f in figs.values():
        print("  " + f.row())
    out["figures"] += [f.as_dict() for f in figs.values()]
    out[f"ratio_{case}"] = a / b
    out[f"ratio_{case}_gateway"] = c / a
    out["targets"].append(target(f"ratio {case}", a / b, "<=", 1.05,
                                 f"ratio Flink SQL / Spark SQL ({case})"))
    print(f"  ratio SQL Gateway (REST) / session client (ZeroMQ) ({case}) = {c / a:.3f}")


def _gateway_rows(gateway: SqlGatewayClient, statement: str) -> list[tuple[Any, ...]]:
    """A statement's rows through the SQL Gateway REST API (JSON values)."""
    result = gateway.result(gateway.submit(statement), "JSON")
    return [tuple(fields) for _, fields in result.rows]


def _as_json(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The session's rows with their timestamps as the gateway's JSON writes them."""
    return [tuple(v.isoformat() if isinstance(v, datetime.datetime) else v for v in r)
            for r in rows]


def _planning(session: sessioncluster.Session, spark: Any, gateway: SqlGatewayClient,
              runs: int, out: dict[str, Any]) -> None:
    """The round trip of a statement that runs no job: the planner's fixed cost."""
    def flink_show() -> Any:
        return session.execute_sql("SHOW TABLES").table

    def spark_show() -> Any:
        return spark.sql("SHOW TABLES").collect()

    def gateway_show() -> Any:
        return _gateway_rows(gateway, "SHOW TABLES")

    n = max(10, runs * 3)
    figs: dict[str, Figure] = interleaved(n, 2, **{
        "SHOW TABLES: flink sql (session)": flink_show,
        "SHOW TABLES: spark sql (plain)": spark_show,
        "SHOW TABLES: flink sql (sql gateway)": gateway_show})
    print("\nplanning alone (a statement that runs no job)")
    for f in figs.values():
        print("  " + f.row())
    out["figures"] += [f.as_dict() for f in figs.values()]


if __name__ == "__main__":
    main()
