"""pyflink.datastream.formats without a cluster: each BulkWriter writes to a BytesIO / file read
back by pandas, pyarrow or fastavro (same rows); files written by them are read by the formats'
``read_file`` (what a FileSource's subtasks run); bad files name the file (and line)."""

from __future__ import annotations

import datetime
import gzip
import io
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pandas as pd
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from sessioncluster.api.formats.base import FileFormatError
from sessioncluster.pyflink.common import Row, Types
from sessioncluster.pyflink.datastream.connectors.file_system import FileSource, StreamFormat
from sessioncluster.pyflink.datastream.formats.avro import AvroInputFormat, AvroSchema, AvroWriters
from sessioncluster.pyflink.datastream.formats.csv import CsvBulkWriters, CsvReaderFormat, CsvSchema
from sessioncluster.pyflink.datastream.formats.json import (
    JsonRowDeserializationSchema,
    JsonRowSerializationSchema,
)
from sessioncluster.pyflink.datastream.formats.orc import OrcBulkWriters, OrcColumnarRowInputFormat
from sessioncluster.pyflink.datastream.formats.parquet import (
    AvroParquetReaders,
    AvroParquetWriters,
    ParquetBulkWriters,
    ParquetColumnarRowInputFormat,
)
from sessioncluster.pyflink.table import DataTypes

ROW_TYPE = DataTypes.ROW([
    DataTypes.FIELD("id", DataTypes.INT()), DataTypes.FIELD("name", DataTypes.STRING()),
    DataTypes.FIELD("price", DataTypes.DOUBLE()), DataTypes.FIELD("day", DataTypes.DATE()),
    DataTypes.FIELD("tags", DataTypes.ARRAY(DataTypes.STRING())),
    DataTypes.FIELD("attrs", DataTypes.MAP(DataTypes.STRING(), DataTypes.BIGINT())),
    DataTypes.FIELD("inner", DataTypes.ROW([DataTypes.FIELD("x", DataTypes.BIGINT())]))])
NAMES = ROW_TYPE.field_names()


def records(n: int = 20000) -> list[Row]:
    make = Row(*NAMES)
    inner = Row("x")
    return [make(i, f"name {i}" if i % 7 else None, i * 0.5, datetime.date(2026, 1, 1 + i % 28),
                 [f"t{i}", "u"], {"k": i}, inner(i * 2)) for i in range(n)]


def write_all(factory: Any, rows: list[Any]) -> bytes:
    stream = io.BytesIO()
    writer = factory.create(stream)
    for r in rows[: len(rows) // 2]:
        writer.add_element(r)
    writer.flush()
    for r in rows[len(rows) // 2:]:
        writer.add_element(r)
    writer.finish()
    assert not stream.closed  # finish writes the footer, the stream stays open
    return stream.getvalue()


def as_plain(r: Row) -> tuple[Any, ...]:
    return tuple(list(v) if isinstance(v, Row) else v for v in r)


def test_parquet_round_trip(tmp_path: Path) -> None:
    rows = records()
    data = write_all(ParquetBulkWriters.for_row_type(ROW_TYPE), rows)
    table = pq.read_table(io.BytesIO(data))
    assert table.num_rows == len(rows) and table.schema.names == NAMES
    frame = pd.read_parquet(io.BytesIO(data))
    assert frame["name"].tolist() == [r["name"] for r in rows]
    path = tmp_path / "out.parquet"
    path.write_bytes(data)
    back = list(ParquetColumnarRowInputFormat(ROW_TYPE, batch_size=1000).read_file(f"file:{path}"))
    assert back == rows
    assert back[3].tags == ["t3", "u"] and back[3].attrs == {"k": 3} and back[3].inner.x == 6


def test_parquet_written_by_pandas_and_schema_checks(tmp_path: Path) -> None:
    path = tmp_path / "pandas.parquet"
    pd.DataFrame({"n": pd.Series([1, 2], dtype="int32"), "s": ["a", "b"], "extra": [0.1, 0.2]}
                 ).to_parquet(path)
    wider = DataTypes.ROW([DataTypes.FIELD("s", DataTypes.STRING()),
                           DataTypes.FIELD("n", DataTypes.BIGINT()),
                           DataTypes.FIELD("absent", DataTypes.STRING())])
    assert list(ParquetColumnarRowInputFormat(wider).read_file(str(path))) == [
        Row(s="a", n=1, absent=None), Row(s="b", n=2, absent=None)]
    wrong = DataTypes.ROW([DataTypes.FIELD("s", DataTypes.INT())])
    with pytest.raises(FileFormatError, match=r"pandas\.parquet: column 's' is string"):
        list(ParquetColumnarRowInputFormat(wrong).read_file(str(path)))
    # PyFlink 1.16's argument order, and Types.ROW_NAMED as the row type
    fmt = ParquetColumnarRowInputFormat(None, Types.ROW_NAMED(["s"], [Types.STRING()]), 10)
    assert [r.s for r in fmt.read_file(str(path))] == ["a", "b"]


def test_orc_round_trip(tmp_path: Path) -> None:
    rows = records(3000)
    data = write_all(OrcBulkWriters.for_row_type(ROW_TYPE), rows)
    assert orc.ORCFile(io.BytesIO(data)).read().num_rows == len(rows)
    path = tmp_path / "out.orc"
    path.write_bytes(data)
    assert list(OrcColumnarRowInputFormat(ROW_TYPE).read_file(str(path))) == rows


CSV = (CsvSchema.builder().add_number_column("id", DataTypes.INT()).add_string_column("name")
       .add_number_column("price", DataTypes.DOUBLE()).add_boolean_column("ok")
       .add_array_column("tags", "|").set_column_separator(";").build())


def test_csv_round_trip_and_pandas(tmp_path: Path) -> None:
    rows = [Row(id=i, name=f"n;{i}" if i % 3 else "", price=i / 4, ok=i % 2 == 0,
                tags=[f"a{i}", "b"]) for i in range(5000)]
    data = write_all(CsvBulkWriters.for_schema(CSV), rows)
    frame = pd.read_csv(io.BytesIO(data), sep=";", header=None, keep_default_na=False)
    assert frame[0].tolist() == list(range(5000)) and frame[1][1] == "n;1"
    assert frame[4][2] == "a2|b"
    path = tmp_path / "out.csv"
    path.write_bytes(data)
    assert list(CsvReaderFormat.for_schema(CSV).read_file(str(path))) == rows
    assert CSV.get_type_info() == Types.ROW_NAMED(
        ["id", "name", "price", "ok", "tags"],
        [Types.INT(), Types.STRING(), Types.DOUBLE(), Types.BOOLEAN(), Types.LIST(Types.STRING())])
    # pandas' CSV (a header), read with set_use_header, also gzipped
    header = (CsvSchema.builder().add_number_column("a").add_string_column("b").set_use_header()
              .set_strict_headers().build())
    with gzip.open(tmp_path / "p.csv.gz", "wt") as g:
        pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}).to_csv(g, index=False)
    assert list(CsvReaderFormat.for_schema(header).read_file(str(tmp_path / "p.csv.gz"))) == [
        Row(a=1, b="x"), Row(a=2, b="y")]


def test_csv_bad_lines(tmp_path: Path) -> None:
    schema = CsvSchema.builder().add_number_column("a").add_string_column("b").build()
    path = tmp_path / "bad.csv"
    path.write_text("1,x\n2,y\nthree,z\n4\n5,w\n")
    with pytest.raises(FileFormatError, match=r"bad\.csv, line 3: cannot parse 'three,z'"):
        list(CsvReaderFormat.for_schema(schema).read_file(str(path)))
    lenient = CsvReaderFormat.for_schema(schema).with_ignore_parse_errors()
    assert [r.a for r in lenient.read_file(str(path))] == [1, 2, 5]
    ignoring = CsvSchema.builder().add_columns_from(schema).set_ignore_parse_errors().build()
    assert [r.a for r in CsvReaderFormat.for_schema(ignoring).read_file(str(path))] == [1, 2, 5]


AVRO = AvroSchema.parse_string(json.dumps({
    "type": "record", "name": "User", "fields": [
        {"name": "name", "type": "string"}, {"name": "age", "type": ["null", "int"]},
        {"name": "scores", "type": {"type": "array", "items": "double"}}]}))


def test_avro_round_trip(tmp_path: Path) -> None:
    users = [{"name": f"u{i}", "age": i if i % 2 else None, "scores": [i / 2]} for i in range(1000)]
    data = write_all(AvroWriters.for_generic_record(AVRO),
                     users[:500] + [Row(u["name"], u["age"], u["scores"]) for u in users[500:]])
    assert list(fastavro.reader(io.BytesIO(data))) == users
    path = tmp_path / "u.avro"
    path.write_bytes(data)
    assert list(AvroInputFormat(str(path), AVRO).read_file(str(path))) == users
    (tmp_path / "not.avro").write_bytes(b"garbage")
    with pytest.raises(FileFormatError, match=r"not\.avro"):
        list(AvroInputFormat(schema=AVRO).read_file(str(tmp_path / "not.avro")))


def test_avro_parquet(tmp_path: Path) -> None:
    users = [{"name": f"u{i}", "age": i, "scores": [1.0, float(i)]} for i in range(100)]
    data = write_all(AvroParquetWriters.for_generic_record(AVRO), users)
    assert pq.read_table(io.BytesIO(data)).to_pylist() == users
    (tmp_path / "u.parquet").write_bytes(data)
    fmt = AvroParquetReaders.for_generic_record(AVRO)
    assert isinstance(fmt, StreamFormat)
    assert list(fmt.read_file(str(tmp_path / "u.parquet"))) == users


def test_json_schemas() -> None:
    info = Types.ROW_NAMED(["id", "name", "price"], [Types.INT(), Types.STRING(), Types.BIG_DEC()])
    ser = JsonRowSerializationSchema.builder().with_type_info(info).build()
    de = JsonRowDeserializationSchema.builder().type_info(info).build()
    row = Row(id=1, name="ä", price=Decimal("2.5"))
    text = ser.serialize(row)
    assert json.loads(text) == {"id": 1, "name": "ä", "price": 2.5}
    assert de.deserialize(text) == row
    assert de.deserialize('{"id": 2}') == Row(id=2, name=None, price=None)
    strict = JsonRowDeserializationSchema.builder().type_info(info).fail_on_missing_field().build()
    with pytest.raises(ValueError, match="'name' is missing"):
        strict.deserialize('{"id": 2}')
    lenient = JsonRowDeserializationSchema.builder().type_info(info).ignore_parse_errors().build()
    assert lenient.deserialize("{not json") is None
    with pytest.raises(ValueError, match="cannot parse"):
        de.deserialize("{not json")


def test_text_lines_and_truncated_gz(tmp_path: Path) -> None:
    fmt = StreamFormat.text_line_format()
    (tmp_path / "a.txt").write_bytes(b"one\r\ntwo\nthree")
    assert list(fmt.read_file(f"file://{tmp_path / 'a.txt'}")) == ["one", "two", "three"]
    whole = gzip.compress(b"".join(b"line %d\n" % i for i in range(20000)))
    (tmp_path / "cut.gz").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(FileFormatError, match=r"cut\.gz: EOFError"):
        list(fmt.read_file(str(tmp_path / "cut.gz")))


def test_file_source_takes_formats() -> None:
    with pytest.raises(TypeError, match="BulkFormat"):
        FileSource.for_bulk_file_format(CsvReaderFormat.for_schema(CSV), "/tmp")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="StreamFormat"):
        FileSource.for_record_stream_format(ParquetColumnarRowInputFormat(ROW_TYPE), "/tmp")  # type: ignore[arg-type]
    source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(ROW_TYPE), "/a", "/b").build()
    assert source.paths == ("/a", "/b") and source.bounded


def _table_rows(fmt: Any, path: Path) -> list[tuple[Any, ...]]:
    return [tuple(r.values()) for t in fmt.read_batches(str(path)) for r in t.to_pylist()]


def test_read_batches_give_the_rows_read_file_gives(tmp_path: Path) -> None:
    """The tables a FileSource copies into a bulk FileSink hold the records read_file gives."""
    schema = (CsvSchema.builder().add_number_column("n").add_string_column("s")
              .add_boolean_column("b").build())
    good = tmp_path / "good.csv"
    good.write_text('1,"a, b",true\n2,,false\n3,"say ""hi""",true\n')
    fmt = CsvReaderFormat.for_schema(schema)
    assert _table_rows(fmt, good) == [tuple(r) for r in fmt.read_file(str(good))]
    assert fmt.arrow_row_type() is not None
    # a line pyarrow rejects: read line by line, as read_file reads it (skipped, or named)
    bad = tmp_path / "bad.csv"
    bad.write_text("1,x,true\nnot a number,y,false\n3,z,true\n")
    lenient = fmt.with_ignore_parse_errors()
    assert _table_rows(lenient, bad) == [tuple(r) for r in lenient.read_file(str(bad))] == [
        (1, "x", True), (3, "z", True)]
    with pytest.raises(FileFormatError, match=r"bad\.csv, line 2"):
        _table_rows(fmt, bad)
    arrays = CsvSchema.builder().add_array_column("a").build()
    assert CsvReaderFormat.for_schema(arrays).arrow_row_type() is None  # read as Rows only

    row_type = DataTypes.ROW([DataTypes.FIELD("n", DataTypes.BIGINT()),
                              DataTypes.FIELD("missing", DataTypes.STRING())])
    pq.write_table(pd.DataFrame({"n": [1, 2, 3]}).pipe(pa_table), tmp_path / "p.parquet",
                   row_group_size=2)
    parquet = ParquetColumnarRowInputFormat(row_type)
    assert _table_rows(parquet, tmp_path / "p.parquet") == [
        tuple(r) for r in parquet.read_file(str(tmp_path / "p.parquet"))] == [
        (1, None), (2, None), (3, None)]


def pa_table(df: Any) -> Any:
    import pyarrow as pa

    return pa.Table.from_pandas(df, preserve_index=False)
