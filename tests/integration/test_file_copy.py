"""A FileSource chained straight into a bulk FileSink copies its files' records as Arrow tables
(no Row made), in BATCH and STREAMING (bounded, and a monitored directory with files dropped over
time): the part files hold the same rows as the Row path writes, and a Python map between the
source and the sink still gets Rows.

Which path ran is seen in the Parquet part files: the Row path writes a row group per 8192 rows
(``WRITE_BATCH_ROWS``), the table path gathers tables into row groups of up to 131072 rows."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import sessioncluster
from sessioncluster.graph.lifecycle import JobStatus
from sessioncluster.pyflink.common import Duration, Row, WatermarkStrategy
from sessioncluster.pyflink.datastream import RuntimeExecutionMode
from sessioncluster.pyflink.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    FileSource,
    OutputFileConfig,
)
from sessioncluster.pyflink.datastream.formats.csv import CsvBulkWriters, CsvReaderFormat, CsvSchema
from sessioncluster.pyflink.datastream.formats.parquet import (
    ParquetBulkWriters,
    ParquetColumnarRowInputFormat,
)
from sessioncluster.pyflink.table import DataTypes

from .test_streaming import streaming_env

pytestmark = pytest.mark.integration

TIMEOUT = 180.0
ROW_TYPE = DataTypes.ROW([DataTypes.FIELD("id", DataTypes.BIGINT()),
                          DataTypes.FIELD("name", DataTypes.STRING()),
                          DataTypes.FIELD("amount", DataTypes.DOUBLE()),
                          DataTypes.FIELD("flag", DataTypes.BOOLEAN())])
CSV = (CsvSchema.builder().add_number_column("id").add_string_column("name")
       .add_number_column("amount", number_type=DataTypes.DOUBLE()).add_boolean_column("flag")
       .build())
#: rows per input file: over 8192, so the Row path writes several row groups per part file
ROWS = 12_000


def table_of(first: int, n: int) -> pa.Table:
    ids = list(range(first, first + n))
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "name": [None if i % 7 == 0 else f"n, \"{i}\"" for i in ids],
                     "amount": [None if i % 11 == 0 else i * 0.25 for i in ids],
                     "flag": [i % 2 == 0 for i in ids]})


def write_inputs(directory: Path, fmt: str, files: int, first: int = 0) -> list[tuple[Any, ...]]:
    """``files`` files of ``ROWS`` rows each (written aside, then moved in); their rows."""
    directory.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[Any, ...]] = []
    for f in range(files):
        table = table_of(first + f * ROWS, ROWS)
        tmp = directory.parent / f".in-{first}-{f}.{fmt}"
        if fmt == "parquet":
            pq.write_table(table, tmp)
        else:
            pacsv.write_csv(table, tmp, pacsv.WriteOptions(include_header=False))
        tmp.rename(directory / f"in-{first}-{f}.{fmt}")
        rows += [tuple(r.values()) for r in table.to_pylist()]
    return rows


def copy_job(env: Any, fmt: str, src: Path, out: Path, fn: Any = None, monitor: bool = False) -> None:
    if fmt == "parquet":
        builder = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(ROW_TYPE), str(src))
        writers = ParquetBulkWriters.for_row_type(ROW_TYPE)
    else:
        builder = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(CSV), str(src))
        writers = CsvBulkWriters.for_schema(CSV)
    if monitor:
        builder = builder.monitor_continuously(Duration.of_millis(200))
    ds = env.from_source(builder.build(), WatermarkStrategy.no_watermarks(), f"{fmt} files")
    if fn is not None:
        ds = ds.map(fn, output_type=ROW_TYPE.to_type_info())
    ds.sink_to(FileSink.for_bulk_format(str(out), writers)
               .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
               .with_output_file_config(OutputFileConfig("part", f".{fmt}")).build())


def part_files(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*") if p.is_file() and not p.name.startswith("."))


def read_rows(out: Path, fmt: str) -> list[tuple[Any, ...]]:
    """The committed part files' rows, sorted by id (None where hidden files remain)."""
    rows: list[tuple[Any, ...]] = []
    for p in part_files(out):
        if fmt == "parquet":
            table = pq.read_table(p)
        else:
            table = pacsv.read_csv(p, pacsv.ReadOptions(column_names=["id", "name", "amount", "flag"]),
                                   convert_options=pacsv.ConvertOptions(
                                       column_types={"id": pa.int64(), "name": pa.string(),
                                                     "amount": pa.float64(), "flag": pa.bool_()},
                                       strings_can_be_null=False))
        rows += [tuple(r.values()) for r in table.to_pylist()]
    return sorted(rows, key=lambda r: r[0])


def part_texts(out: Path) -> list[str]:
    """The lines of the committed CSV part files, sorted."""
    return sorted(line for p in part_files(out) for line in p.read_text().splitlines())


def row_groups(out: Path) -> list[int]:
    return [pq.ParquetFile(p).metadata.num_row_groups for p in part_files(out)]


def same_row(r: Row) -> Row:
    assert isinstance(r, Row)
    return r


def doubled(r: Row) -> Row:
    assert isinstance(r, Row)  # the map gets Rows, as PyFlink's does
    return Row(id=r.id, name=r.name, amount=None if r.amount is None else r.amount * 2, flag=r.flag)


def expected_csv_empty_names(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """A null string is written as an empty field in CSV: it reads back as ""."""
    return [(i, "" if n is None else n, a, f) for i, n, a, f in rows]


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_batch_copy_as_tables_writes_the_rows_of_the_row_path(
        env: sessioncluster.StreamExecutionEnvironment, tmp_path: Path, fmt: str) -> None:
    src = tmp_path / "in"
    rows = write_inputs(src, fmt, files=2)
    copy_job(env, fmt, src, tmp_path / "tables")
    env.execute(f"copy {fmt} as tables")
    env2 = env.session.get_execution_environment()
    env2.set_parallelism(2)
    copy_job(env2, fmt, src, tmp_path / "rows", fn=same_row)
    env2.execute(f"copy {fmt} as rows")
    expected = rows if fmt == "parquet" else expected_csv_empty_names(rows)
    assert read_rows(tmp_path / "tables", fmt) == expected
    assert read_rows(tmp_path / "rows", fmt) == expected
    if fmt == "parquet":
        # each subtask read one file of 12000 rows: one row group as a table, two as Rows
        assert row_groups(tmp_path / "tables") == [1, 1]
        assert row_groups(tmp_path / "rows") == [2, 2]
    else:  # byte for byte what the Row path writes (Flink's CSV text: 0.25, 1.0, quoting)
        assert part_texts(tmp_path / "tables") == part_texts(tmp_path / "rows")


def test_a_python_map_between_source_and_sink_runs_on_rows(
        env: sessioncluster.StreamExecutionEnvironment, tmp_path: Path) -> None:
    src = tmp_path / "in"
    rows = write_inputs(src, "parquet", files=2)
    copy_job(env, "parquet", src, tmp_path / "out", fn=doubled)
    env.execute("copy with a map")
    assert read_rows(tmp_path / "out", "parquet") == [
        (i, n, None if a is None else a * 2, f) for i, n, a, f in rows]


def wait_for_rows(out: Path, n: int, client: Any) -> None:
    deadline = time.monotonic() + TIMEOUT
    while sum(pq.ParquetFile(p).metadata.num_rows for p in part_files(out)) < n:
        status = client.get_job_status()
        assert time.monotonic() < deadline and not status.is_globally_terminal, \
            (status, client.details().error_text)
        time.sleep(0.2)


def test_streaming_copy_as_tables_bounded_and_monitored(session: sessioncluster.Session,
                                                        tmp_path: Path) -> None:
    src = tmp_path / "in"
    rows = write_inputs(src, "parquet", files=2)
    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)
    copy_job(env, "parquet", src, tmp_path / "bounded")
    env.execute("bounded copy, STREAMING")
    assert read_rows(tmp_path / "bounded", "parquet") == rows
    assert max(row_groups(tmp_path / "bounded")) == 1

    # a monitored directory, files dropped over time: each micro-batch's tables committed once
    watched, out = tmp_path / "watched", tmp_path / "monitored"
    watched.mkdir()
    env2 = streaming_env(session)
    copy_job(env2, "parquet", watched, out, monitor=True)
    client = env2.execute_async("monitored copy, STREAMING")
    expected: list[tuple[Any, ...]] = []
    for r in range(2):
        expected += write_inputs(watched, "parquet", files=1, first=r * ROWS)
        wait_for_rows(out, len(expected), client)
    client.cancel()
    assert client.wait(60).status is JobStatus.CANCELED
    assert read_rows(out, "parquet") == sorted(expected, key=lambda r: r[0])
    assert max(row_groups(out)) == 1
    assert not [p for p in out.rglob(".*") if p.is_file()]
