"""Reading and writing files through a DataStream job against the same with PySpark: a copy of
Parquet files (``FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat)`` into
``FileSink.for_bulk_format(ParquetBulkWriters.for_row_type)``) and of CSV files
(``CsvReaderFormat`` into ``CsvBulkWriters``), in BATCH and in STREAMING mode (a bounded FileSource
read by a STREAMING job), against ``spark.read.parquet(...).write.parquet(...)`` (BATCH) and
``readStream ... writeStream`` with ``trigger(availableNow=True)`` (STREAMING) on a warm plain
SparkSession with the same master. Both sides' outputs are read back and checked (rows, sum of a
column) before anything is timed.

    python benchmarks/file_formats.py [--mb 1024] [--runs 2] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import sessioncluster  # noqa: E402
from benchmarks.common import bench_session, interleaved, plain_session, write_json  # noqa: E402
from sessioncluster.pyflink.common import WatermarkStrategy  # noqa: E402
from sessioncluster.pyflink.datastream import RuntimeExecutionMode  # noqa: E402
from sessioncluster.pyflink.datastream.connectors.file_system import FileSink, FileSource  # noqa: E402
from sessioncluster.pyflink.datastream.formats.csv import (  # noqa: E402
    CsvBulkWriters,
    CsvReaderFormat,
    CsvSchema,
)
from sessioncluster.pyflink.datastream.formats.parquet import (  # noqa: E402
    ParquetBulkWriters,
    ParquetColumnarRowInputFormat,
)
from sessioncluster.pyflink.table import DataTypes  # noqa: E402

FILES = 8
SEED = 20261125
ROW_TYPE = DataTypes.ROW([DataTypes.FIELD("id", DataTypes.BIGINT()),
                          DataTypes.FIELD("key", DataTypes.STRING()),
                          DataTypes.FIELD("amount", DataTypes.DOUBLE())])
SPARK_SCHEMA = "id BIGINT, key STRING, amount DOUBLE"
CSV_SCHEMA = (CsvSchema.builder().add_number_column("id").add_string_column("key")
              .add_number_column("amount", number_type=DataTypes.DOUBLE()).build())


def input_files(mb: int, fmt: str) -> tuple[str, int]:
    """``FILES`` files of ``fmt`` ('parquet' or 'csv') of about ``mb`` MB in all, written once and
    cached; the directory and its number of rows."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    root = os.path.join(tempfile.gettempdir(), "sessioncluster-bench", f"files-{fmt}-{mb}mb-v1")
    done = os.path.join(root, "_ROWS")
    if os.path.exists(done):
        with open(done) as fh:
            return root, int(fh.read())
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    rng = np.random.default_rng(SEED)
    # about 20 bytes a row in Parquet (snappy), 30 in CSV
    rows_per_file = max(1000, mb * 2**20 // FILES // (20 if fmt == "parquet" else 30))
    total = 0
    for i in range(FILES):
        ids = np.arange(total, total + rows_per_file, dtype=np.int64)
        table = pa.table({"id": ids,
                          "key": pa.array([f"k{k}" for k in rng.integers(0, 10_000, rows_per_file)]),
                          "amount": np.round(rng.random(rows_per_file) * 1000, 2)})
        target = os.path.join(root, f"part-{i}.{fmt}")
        if fmt == "parquet":
            pq.write_table(table, target)
        else:
            pacsv.write_csv(table, target, pacsv.WriteOptions(include_header=False))
        total += rows_per_file
    with open(done, "w") as fh:
        fh.write(str(total))
    return root, total


def read_back(spark: Any, fmt: str, directory: str) -> tuple[int, float]:
    """(rows, sum of amount) of the files under ``directory`` (hidden and _ files skipped)."""
    from pyspark.sql import functions as F

    reader = spark.read.option("recursiveFileLookup", "true")
    df = (reader.parquet(directory) if fmt == "parquet"
          else reader.schema(SPARK_SCHEMA).csv(directory))
    row = df.agg(F.count("*").alias("n"), F.sum("amount").alias("s")).collect()[0]
    return int(row["n"]), round(float(row["s"] or 0.0), 2)


def datastream_copy(session: sessioncluster.Session, fmt: str, mode: RuntimeExecutionMode,
                    source_dir: str, out: str) -> None:
    env = session.get_execution_environment()
    env.set_runtime_mode(mode)
    env.set_parallelism(2)
    if fmt == "parquet":
        source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(ROW_TYPE),
                                                 source_dir).build()
        sink = FileSink.for_bulk_format(out, ParquetBulkWriters.for_row_type(ROW_TYPE)).build()
    else:
        source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(CSV_SCHEMA),
                                                     source_dir).build()
        sink = FileSink.for_bulk_format(out, CsvBulkWriters.for_schema(CSV_SCHEMA)).build()
    env.from_source(source, WatermarkStrategy.no_watermarks(), f"{fmt} files").sink_to(sink)
    env.execute(f"copy {fmt} ({mode.name})")


def spark_copy(spark: Any, fmt: str, streaming: bool, source_dir: str, out: str) -> None:
    if not streaming:
        df = (spark.read.parquet(source_dir) if fmt == "parquet"
              else spark.read.schema(SPARK_SCHEMA).csv(source_dir))
        getattr(df.write.mode("overwrite"), fmt)(out)
        return
    df = spark.readStream.schema(SPARK_SCHEMA)
    df = df.parquet(source_dir) if fmt == "parquet" else df.csv(source_dir)
    query = (df.writeStream.format(fmt).option("path", out)
             .option("checkpointLocation", out + "-checkpoint")
             .trigger(availableNow=True).start())
    query.awaitTermination()


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser()
    p.add_argument("--mb", type=int, default=1024, help="size of each input (default: %(default)s MB)")
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="a smoke run: 4 MB, one run")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args(argv)
    mb, runs, warmup = (4, 1, 0) if args.quick else (args.mb, args.runs, 0)
    inputs = {fmt: input_files(mb, fmt) for fmt in ("parquet", "csv")}
    scratch = tempfile.mkdtemp(prefix="sc-bench-files-")
    out: dict[str, Any] = {"benchmark": "file_formats", "mb": mb, "runs": runs, "figures": [],
                           "ratios": {}}
    try:
        with bench_session("files") as (session, _):
            master = session.status().spark_master
            with plain_session(master) as spark:
                for fmt, (source_dir, rows) in inputs.items():
                    for mode in (RuntimeExecutionMode.BATCH, RuntimeExecutionMode.STREAMING):
                        _one(session, spark, fmt, mode, source_dir, rows, scratch, runs, warmup, out)
        out["master"] = master
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    write_json(args.json, out)
    return out


def _one(session: sessioncluster.Session, spark: Any, fmt: str, mode: RuntimeExecutionMode,
         source_dir: str, rows: int, scratch: str, runs: int, warmup: int,
         out: dict[str, Any]) -> None:
    """Check both copies of ``fmt`` in ``mode``, then time them interleaved; print the ratio."""
    streaming = mode is RuntimeExecutionMode.STREAMING
    counter = iter(range(1_000_000))

    def fresh(side: str) -> str:
        return os.path.join(scratch, f"{fmt}-{mode.name}-{side}-{next(counter)}")

    def ours() -> str:
        target = fresh("datastream")
        datastream_copy(session, fmt, mode, source_dir, target)
        return target

    def theirs() -> str:
        target = fresh("spark")
        spark_copy(spark, fmt, streaming, source_dir, target)
        return target

    expected = read_back(spark, fmt, source_dir)
    for name, copy in (("datastream", ours), ("spark", theirs)):
        got = read_back(spark, fmt, copy())
        if got != expected:
            raise AssertionError(f"{fmt} {mode.name}: the {name} copy has (rows, sum) {got}, "
                                 f"the input {expected}")
    workloads: dict[str, Callable[[], Any]] = {"datastream": ours, "spark": theirs}
    figs = interleaved(runs, warmup, **workloads)
    size_mb = sum(os.path.getsize(os.path.join(source_dir, f)) for f in os.listdir(source_dir)
                  if not f.startswith("_")) / 2**20
    ratio = figs["datastream"].median / figs["spark"].median
    label = f"{fmt} {mode.name.lower()}"
    print(f"\nCopy {size_mb:.1f} MB of {fmt} ({rows} rows, {FILES} files), {mode.name}, parallelism 2")
    for f in figs.values():
        print("  " + f.row())
    baseline = "Structured Streaming" if streaming else "PySpark DataFrame"
    print(f"  ratio DataStream / {baseline} = {ratio:.2f}  (target <= 1.3)")
    out["figures"] += [dict(f.as_dict(), case=label) for f in figs.values()]
    out["ratios"][label] = ratio


if __name__ == "__main__":
    main()
