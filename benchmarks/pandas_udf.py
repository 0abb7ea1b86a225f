"""A pandas scalar UDF in BATCH: PyFlink's ``@udf(func_type="pandas")`` registered with
``create_temporary_system_function`` and called from Flink SQL on the session
(``SELECT SUM(f(x, y)) FROM t`` over a Parquet table of the ``filesystem`` connector), against
Spark's own ``pandas_udf`` of the same function over the same Parquet files on a warm plain
SparkSession with the same master. Both answers are checked equal before anything is timed; the
two sides run interleaved. Ratio of medians (target <= 1.1).

    python benchmarks/pandas_udf.py [--rows 5000000] [--runs 5] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Callable

import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import (  # noqa: E402
    bench_session,
    interleaved,
    plain_session,
    target,
    write_json,
)

FILES = 4
SEED = 20261126
QUERY = "SELECT SUM(weighted(x, y)) AS s FROM numbers"


def weighted(x: pd.Series, y: pd.Series) -> pd.Series:
    """The UDF's body (pandas Series in, a Series out), the same on both sides."""
    return x * 0.5 + y.clip(lower=0.0) ** 0.5


def numbers_directory(rows: int) -> str:
    """``FILES`` Parquet files of (x DOUBLE, y DOUBLE), written once and cached."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = os.path.join(tempfile.gettempdir(), "sessioncluster-bench", f"numbers-{rows}-v1")
    done = os.path.join(root, "_DONE")
    if os.path.exists(done):
        return root
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    rng = np.random.default_rng(SEED)
    for i in range(FILES):
        n = rows // FILES
        pq.write_table(pa.table({"x": rng.random(n) * 100, "y": rng.random(n) * 10 - 1}),
                       os.path.join(root, f"part-{i}.parquet"))
    open(done, "w").close()
    return root


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=5_000_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="a smoke run: 100,000 rows, 2 runs")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args(argv)
    rows, runs, warmup = (100_000, 2, 1) if args.quick else (args.rows, args.runs, 1)
    t0 = time.perf_counter()
    path = numbers_directory(rows)
    prepare_s = time.perf_counter() - t0
    with bench_session("pandasudf") as (session, _):
        master = session.status().spark_master
        with plain_session(master) as spark:
            flink, plain = _flink_side(session, path), _spark_side(spark, path)
            ours, theirs = flink(), plain()
            if abs(ours - theirs) > 1e-6 * abs(theirs):
                raise AssertionError(f"Flink SQL gives {ours}, Spark's pandas_udf {theirs}")
            figs = interleaved(runs, warmup, **{"pandas @udf, flink sql (session)": flink,
                                                "pandas_udf, spark (plain)": plain})
    a, b = (f.median for f in figs.values())
    print(f"\nA pandas scalar UDF over {rows} rows ({FILES} Parquet files), summed; "
          f"master {master}")
    for f in figs.values():
        print("  " + f.row())
    out: dict[str, Any] = {
        "benchmark": "pandas_udf", "master": master, "rows": rows, "runs": runs,
        "warmup": warmup, "prepare_s": prepare_s,
        "figures": [f.as_dict() for f in figs.values()], "ratio": a / b,
        "targets": [target("ratio", a / b, "<=", 1.1,
                           "ratio pandas @udf in Flink SQL / Spark pandas_udf")]}
    write_json(args.json, out)
    return out


def _flink_side(session: Any, path: str) -> Callable[[], float]:
    from sessioncluster.api.table.types import DataTypes
    from sessioncluster.client.table_environment import TableEnvironment
    from sessioncluster.pyflink.table import EnvironmentSettings
    from sessioncluster.pyflink.table.udf import udf

    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode(), session=session)
    t_env.create_temporary_system_function(
        "weighted", udf(weighted, result_type=DataTypes.DOUBLE(), func_type="pandas"))
    t_env.execute_sql("DROP TABLE IF EXISTS numbers")
    t_env.execute_sql(f"""CREATE TABLE numbers (x DOUBLE, y DOUBLE) WITH (
        'connector' = 'filesystem', 'path' = '{path}', 'format' = 'parquet')""")
    return lambda: float(list(t_env.execute_sql(QUERY).collect())[0][0])


def _spark_side(spark: Any, path: str) -> Callable[[], float]:
    from pyspark.sql import functions as F

    function = F.pandas_udf(weighted, "double")  # type: ignore[call-overload]
    # read once, as the session's table is defined once (it keeps its view while its files
    # are unchanged; the DataFrame keeps its file index)
    numbers = spark.read.parquet(path)
    return lambda: float(numbers.select(F.sum(function("x", "y"))).first()[0])


if __name__ == "__main__":
    main()
