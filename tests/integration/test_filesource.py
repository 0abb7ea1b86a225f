"""FileSource with the formats of pyflink.datastream.formats on the shared session: files written
by pyarrow, pandas and fastavro (nested directories, ``key=value`` partitions, hidden and
``_SUCCESS`` files, ``.gz``) read in BATCH and STREAMING mode; a monitored directory picking up
files dropped over time, also into a new subdirectory; bad files failing the job by name."""

from __future__ import annotations

import gzip
import time
from pathlib import Path
from typing import Any

import fastavro
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sessioncluster
from sessioncluster.pyflink.common import Duration, Row, WatermarkStrategy
from sessioncluster.pyflink.datastream import RuntimeExecutionMode
from sessioncluster.pyflink.datastream.connectors.file_system import FileSource, StreamFormat
from sessioncluster.pyflink.datastream.formats.avro import AvroInputFormat, AvroSchema
from sessioncluster.pyflink.datastream.formats.csv import CsvReaderFormat, CsvSchema
from sessioncluster.pyflink.datastream.formats.parquet import ParquetColumnarRowInputFormat
from sessioncluster.pyflink.table import DataTypes

pytestmark = pytest.mark.integration

ROW_TYPE = DataTypes.ROW([DataTypes.FIELD("name", DataTypes.STRING()),
                          DataTypes.FIELD("n", DataTypes.BIGINT())])
AVRO = AvroSchema.parse_string('{"type": "record", "name": "R", "fields": ['
                               '{"name": "name", "type": "string"}, {"name": "n", "type": "long"}]}')
CSV = (CsvSchema.builder().add_string_column("name").add_number_column("n").set_use_header()
       .build())
TIMEOUT = 180.0


def parquet_tree(root: Path) -> list[tuple[str, int]]:
    """Parquet files as a Flink filesystem table leaves them: partitions, hidden in-progress
    files and _SUCCESS markers (skipped), nested directories. Returns the rows to be read."""
    rows = []
    for day in ("2026-11-24", "2026-11-25"):
        part = root / f"dt={day}" / "hour=01"
        part.mkdir(parents=True)
        chunk = [(f"{day}-{i}", i) for i in range(50)]
        pq.write_table(pa.table({"name": [c[0] for c in chunk], "n": [c[1] for c in chunk]}),
                       part / "part-0.parquet")
        pq.write_table(pa.table({"name": ["hidden"], "n": [-1]}), part / ".part-1.inprogress.x")
        (part / "_SUCCESS").write_bytes(b"")
        rows += chunk
    pd.DataFrame({"name": ["pandas"], "n": [7]}).to_parquet(root / "from-pandas.parquet")
    return rows + [("pandas", 7)]


def collect(env: Any, source: Any, name: str) -> list[Any]:
    return list(env.from_source(source, WatermarkStrategy.no_watermarks(), name)
                .execute_and_collect(name))


def as_pairs(records: list[Any]) -> list[tuple[str, int]]:
    return sorted((r["name"], r["n"]) for r in records)


def test_batch_reads_parquet_csv_avro_and_gz(env: sessioncluster.StreamExecutionEnvironment,
                                              tmp_path: Path) -> None:
    expected = parquet_tree(tmp_path / "pq")
    parquet = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(ROW_TYPE),
                                              str(tmp_path / "pq")).build()
    got = collect(env, parquet, "parquet")
    assert all(isinstance(r, Row) for r in got)
    assert as_pairs(got) == sorted(expected)

    csv_dir = tmp_path / "csv"
    (csv_dir / "sub").mkdir(parents=True)
    (csv_dir / "a.csv").write_text("name,n\na,1\n\"b, quoted\",2\n")
    pd.DataFrame({"name": ["c"], "n": [3]}).to_csv(csv_dir / "sub" / "c.csv", index=False)
    csv_source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(CSV),
                                                     str(csv_dir)).build()
    assert as_pairs(collect(env, csv_source, "csv")) == [("a", 1), ("b, quoted", 2), ("c", 3)]

    avro_dir = tmp_path / "avro"
    avro_dir.mkdir()
    for i in range(2):
        with open(avro_dir / f"{i}.avro", "wb") as f:
            fastavro.writer(f, AVRO.parsed, [{"name": f"r{i}{j}", "n": j} for j in range(3)])
    avro = FileSource.for_bulk_file_format(AvroInputFormat(schema=AVRO), str(avro_dir)).build()
    assert as_pairs(collect(env, avro, "avro")) == sorted((f"r{i}{j}", j) for i in range(2)
                                                            for j in range(3))

    text_dir = tmp_path / "text"
    text_dir.mkdir()
    with gzip.open(text_dir / "lines.txt.gz", "wt") as g:
        g.write("zipped 1\nzipped 2\n")
    (text_dir / "plain.txt").write_text("plain\n")
    lines = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(text_dir),
                                                str(csv_dir / "a.csv")).build()
    assert sorted(collect(env, lines, "lines")) == sorted(
        ["zipped 1", "zipped 2", "plain", "name,n", "a,1", "\"b, quoted\",2"])


def test_bad_files_fail_the_job_naming_them(env: sessioncluster.StreamExecutionEnvironment,
                                            tmp_path: Path) -> None:
    bad_csv = tmp_path / "csv" / "bad.csv"
    bad_csv.parent.mkdir()
    bad_csv.write_text("name,n\na,1\nb,not-a-number\nc,3\n")
    source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(CSV),
                                                 str(bad_csv.parent)).build()
    with pytest.raises(sessioncluster.JobExecutionException, match=r"bad\.csv, line 3"):
        collect(env, source, "bad csv")
    lenient = (CsvSchema.builder().add_string_column("name").add_number_column("n")
               .set_use_header().set_ignore_parse_errors().build())
    source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(lenient),
                                                 str(bad_csv)).build()
    assert as_pairs(collect(env, source, "lenient csv")) == [("a", 1), ("c", 3)]

    wrong = tmp_path / "wrong.parquet"
    pq.write_table(pa.table({"name": ["x"], "n": ["text, not a number"]}), wrong)
    source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(ROW_TYPE),
                                             str(wrong)).build()
    with pytest.raises(sessioncluster.JobExecutionException, match=r"wrong\.parquet.*column 'n'"):
        collect(env, source, "mismatched parquet")

    truncated = tmp_path / "cut.txt.gz"
    whole = gzip.compress(b"".join(b"line %d\n" % i for i in range(10000)))
    truncated.write_bytes(whole[:len(whole) // 2])
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(),
                                                 str(truncated)).build()
    with pytest.raises(sessioncluster.JobExecutionException, match=r"cut\.txt\.gz"):
        collect(env, source, "truncated gz")


def write_parquet(directory: Path, name: str, rows: list[tuple[str, int]]) -> None:
    """A file appears whole: written aside (a hidden name), then renamed."""
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{name}.tmp"
    pq.write_table(pa.table({"name": [r[0] for r in rows], "n": [r[1] for r in rows]}), tmp)
    tmp.rename(directory / name)


def test_streaming_bounded_and_monitored(session: sessioncluster.Session, tmp_path: Path) -> None:
    src = tmp_path / "in"
    rows = parquet_tree(src)
    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)
    bounded = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(ROW_TYPE),
                                              str(src)).build()
    assert as_pairs(collect(env, bounded, "bounded parquet, streaming")) == sorted(rows)

    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)
    env.enable_checkpointing(300)
    source = (FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(ROW_TYPE), str(src))
              .monitor_continuously(Duration.of_millis(200)).build())
    results = (env.from_source(source, WatermarkStrategy.no_watermarks(), "watched")
               .map(lambda r: (r["name"], r["n"])).execute_and_collect("monitored parquet"))
    got: list[tuple[str, int]] = []
    try:
        expected = sorted(rows)
        for step, directory in enumerate([src, src / "new" / "deeper", src / "dt=2026-11-26"]):
            deadline = time.monotonic() + TIMEOUT
            while len(got) < len(expected):
                assert time.monotonic() < deadline, f"{len(got)} of {len(expected)} records"
                got.append(next(results))
            assert sorted(got) == expected
            added = [(f"step{step}-{i}", i) for i in range(5)]
            write_parquet(directory, f"part-{step}.parquet", added)
            expected = sorted(expected + added)
        deadline = time.monotonic() + TIMEOUT
        while len(got) < len(expected):
            assert time.monotonic() < deadline
            got.append(next(results))
        assert sorted(got) == expected  # each file once, the new subdirectories' too
    finally:
        results.close()


@pytest.mark.parametrize("mode", [RuntimeExecutionMode.BATCH, RuntimeExecutionMode.STREAMING])
def test_parquet_and_csv_round_trip_through_the_file_sink(session: sessioncluster.Session,
                                                          tmp_path: Path,
                                                          mode: RuntimeExecutionMode) -> None:
    """Rows read from Parquet, written by ``FileSink.for_bulk_format`` as Parquet and as CSV:
    pandas reads the part files back with the same rows, and so does the FileSource."""
    from sessioncluster.pyflink.datastream.connectors.file_system import FileSink
    from sessioncluster.pyflink.datastream.formats.csv import CsvBulkWriters
    from sessioncluster.pyflink.datastream.formats.parquet import ParquetBulkWriters

    rows = parquet_tree(tmp_path / "in")
    env = session.get_execution_environment()
    env.set_runtime_mode(mode)
    env.set_parallelism(2)
    source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(ROW_TYPE),
                                             str(tmp_path / "in")).build()
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "rows")
    stream.sink_to(FileSink.for_bulk_format(str(tmp_path / "pq"),
                                            ParquetBulkWriters.for_row_type(ROW_TYPE)).build())
    headerless = CsvSchema.builder().add_string_column("name").add_number_column("n").build()
    stream.sink_to(FileSink.for_bulk_format(str(tmp_path / "csv"),
                                            CsvBulkWriters.for_schema(headerless)).build())
    env.execute(f"round trip ({mode.name})")

    def visible(root: Path) -> list[Path]:
        return [p for p in root.rglob("*") if p.is_file()
                and not any(part.startswith((".", "_")) for part in p.relative_to(root).parts)]

    written = pd.concat([pd.read_parquet(p) for p in visible(tmp_path / "pq")])
    assert sorted(zip(written["name"], written["n"])) == sorted(rows)
    lines = pd.concat([pd.read_csv(p, header=None, names=["name", "n"])
                       for p in visible(tmp_path / "csv")])
    assert sorted(zip(lines["name"], lines["n"])) == sorted(rows)
    back = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(ROW_TYPE),
                                           str(tmp_path / "pq")).build()
    env = session.get_execution_environment()
    env.set_parallelism(2)
    assert as_pairs(collect(env, back, "read back")) == sorted(rows)
