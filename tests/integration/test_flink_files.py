"""Files written by real Flink 2.3 (tests/data/flink/, made by its make_fixtures.py) read here
with the FileSource and the formats of pyflink.datastream.formats: a DataStream FileSink's
date-time buckets and part files (also one left in progress, hidden, by a cancelled job), and
Flink SQL ``filesystem`` tables in csv and json with ``dt=...`` partition directories."""

from __future__ import annotations

import datetime
import io
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import sessioncluster
from sessioncluster.pyflink.common import Row, Types, WatermarkStrategy
from sessioncluster.pyflink.datastream import RuntimeExecutionMode
from sessioncluster.pyflink.datastream.connectors.file_system import FileSource, StreamFormat
from sessioncluster.pyflink.datastream.formats.csv import (
    CsvBulkWriters,
    CsvReaderFormat,
    CsvSchema,
)
from sessioncluster.pyflink.datastream.formats.json import (
    JsonRowDeserializationSchema,
    JsonRowSerializationSchema,
)
from sessioncluster.pyflink.table import DataTypes

pytestmark = pytest.mark.integration

FLINK = Path(__file__).resolve().parent.parent / "data" / "flink"
EXPECTED = json.loads((FLINK / "expected.json").read_text())
#: the tables' columns in their files (the partition column ``dt`` is a directory, not a field)
COLUMNS = EXPECTED["columns"][:-1]

CSV = (CsvSchema.builder().add_string_column("name").add_number_column("n")
       .add_number_column("price", DataTypes.DOUBLE()).add_boolean_column("ok")
       .add_column("ts", DataTypes.TIMESTAMP(3)).add_column("amount", DataTypes.DECIMAL(10, 2))
       .add_column("day", DataTypes.DATE()).add_string_column("note").build())
ROW_INFO = Types.ROW_NAMED(COLUMNS, [Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.BOOLEAN(),
                                     Types.SQL_TIMESTAMP(), Types.BIG_DEC(), Types.SQL_DATE(),
                                     Types.STRING()])


def as_values(table_rows: list[list[Any]]) -> list[tuple[Any, ...]]:
    """Rows of expected.json (without ``dt``) as Python values."""
    rows = []
    for name, n, price, ok, ts, amount, day, note, _dt in table_rows:
        rows.append((name, n, price, ok,
                     None if ts is None else datetime.datetime.fromisoformat(ts),
                     None if amount is None else Decimal(amount),
                     None if day is None else datetime.date.fromisoformat(day), note))
    return rows


def written_rows() -> list[tuple[Any, ...]]:
    """The rows the fixture script wrote into both tables."""
    return as_values(EXPECTED["table_rows"])


def key(row: tuple[Any, ...]) -> str:
    """A sort key: decimals by value (Flink's 1E+2 is 100.00)."""
    return json.dumps(row, default=lambda v: format(v.normalize(), "f")
                      if isinstance(v, Decimal) else str(v))


def collect(env: Any, source: Any, name: str, then: Any = None) -> list[Any]:
    ds = env.from_source(source, WatermarkStrategy.no_watermarks(), name)
    if then is not None:
        ds = ds.map(then, output_type=ROW_INFO)
    return list(ds.execute_and_collect(name))


def test_csv_bulk_writers_write_what_flink_writes() -> None:
    """CsvBulkWriters over the rows of each partition: byte for byte Flink's csv table's part
    file (Jackson's quoting, an empty field for null and for "", timestamps, decimals, doubles)."""
    for partition in sorted((FLINK / "csv_table").glob("dt=*")):
        dt = partition.name.removeprefix("dt=")
        buffer = io.BytesIO()
        writer = CsvBulkWriters.for_schema(CSV).create(buffer)
        for raw, row in zip(EXPECTED["table_rows"], written_rows()):
            if raw[-1] == dt:
                writer.add_element(row)
        writer.finish()
        [part] = partition.glob("part-*")
        assert buffer.getvalue().decode() == part.read_text(), partition.name


def test_json_row_serialization_writes_what_flink_writes() -> None:
    """JsonRowSerializationSchema: PyFlink's (its Java schema) text, byte for byte."""
    info = Types.ROW_NAMED(COLUMNS, [Types.STRING(), Types.INT(), Types.DOUBLE(), Types.BOOLEAN(),
                                     Types.SQL_TIMESTAMP(), Types.BIG_DEC(), Types.SQL_DATE(),
                                     Types.STRING()])
    schema = JsonRowSerializationSchema.builder().with_type_info(info).build()
    got = [schema.serialize(Row(*row)).decode() for row in written_rows()]
    assert got == EXPECTED["json_row_serialized"]
    back = JsonRowDeserializationSchema.builder().type_info(info).build()
    assert [tuple(back.deserialize(line)) for line in got] == written_rows()


def test_filesink_buckets_and_part_files(env: sessioncluster.StreamExecutionEnvironment) -> None:
    parts = sorted(p.relative_to(FLINK).as_posix() for p in FLINK.glob("filesink*/*/*"))
    # what Flink left: yyyy-MM-dd--HH buckets, part-<uuid>-<n>, one in-progress file (hidden)
    assert len(parts) == 4 and sum("/.part-" in p and ".inprogress." in p for p in parts) == 1
    lines = FileSource.for_record_stream_format(StreamFormat.text_line_format(),
                                                str(FLINK / "filesink"),
                                                str(FLINK / "filesink_inprogress"),
                                                str(FLINK / "filesink_rows")).build()
    got = collect(env, lines, "flink's FileSink")
    assert sorted(got) == sorted(EXPECTED["lines"] + EXPECTED["rows_as_text"])


def test_csv_table_partitions(env: sessioncluster.StreamExecutionEnvironment) -> None:
    source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(CSV),
                                                 str(FLINK / "csv_table")).build()
    got = [tuple(r) for r in collect(env, source, "flink's csv table")]
    # CSV cannot tell a null string from an empty one: Flink writes both as an empty field,
    # and reads it back as "" (a null number, written empty too, Flink's reader rejects; ours
    # reads it as null)
    expected = [tuple("" if v is None and f in ("name", "note") else v
                      for f, v in zip(COLUMNS, row)) for row in written_rows()]
    assert sorted(got, key=key) == sorted(expected, key=key)

    one = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(CSV),
                                              str(FLINK / "csv_table" / "dt=2026-11-24")).build()
    assert sorted(r["name"] for r in collect(env, one, "one partition")) == sorted(
        r[0] for r in EXPECTED["table_rows"] if r[-1] == "2026-11-24")


def test_json_table_partitions(env: sessioncluster.StreamExecutionEnvironment) -> None:
    schema = JsonRowDeserializationSchema.builder().type_info(ROW_INFO).build()
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(),
                                                 str(FLINK / "json_table")).build()
    got = [tuple(r) for r in collect(env, source, "flink's json table", schema.deserialize)]
    assert sorted(got, key=key) == sorted(written_rows(), key=key)
    # and as real Flink reads its own files
    flink_read = as_values(EXPECTED["flink_reads_back"]["json"])
    assert sorted(got, key=key) == sorted(flink_read, key=key)


def test_streaming_reads_flink_files(session: sessioncluster.Session) -> None:
    env = session.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(),
                                                 str(FLINK / "filesink"),
                                                 str(FLINK / "filesink_inprogress"),
                                                 str(FLINK / "json_table")).build()
    got = collect(env, source, "flink's files, streaming")
    json_lines = [line for p in sorted((FLINK / "json_table").glob("dt=*/part-*"))
                  for line in p.read_text().splitlines()]
    assert len(json_lines) == len(EXPECTED["table_rows"])
    assert sorted(got) == sorted(EXPECTED["lines"] + json_lines)
