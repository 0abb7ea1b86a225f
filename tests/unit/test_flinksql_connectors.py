"""Flink's table connectors on a local SparkSession: filesystem (csv, json, parquet, avro, raw;
partitioned; Flink-written fixtures), datagen, print, blackhole and the validation messages."""

from __future__ import annotations

import datetime
import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sessioncluster.api.table.typeparser import parse_type
from sessioncluster.spark.flinksql.connectors import (
    format_row,
    is_bounded,
    print_lines,
    read_table,
    sink_is_append_only,
    validate,
    write_table,
)
from sessioncluster.spark.flinksql.model import CatalogTable, Column, FlinkSqlError

FLINK = Path(__file__).parents[1] / "data" / "flink"
EXPECTED = json.loads((FLINK / "expected.json").read_text())
FIXTURE_COLUMNS = [("name", "STRING"), ("n", "BIGINT"), ("price", "DOUBLE"), ("ok", "BOOLEAN"),
                   ("ts", "TIMESTAMP(3)"), ("amount", "DECIMAL(10, 2)"), ("day", "DATE"),
                   ("note", "STRING"), ("dt", "STRING")]


@pytest.fixture(scope="module")
def spark(local_spark: Any) -> Any:
    return local_spark


def table(columns: list[tuple[str, str]], partition_keys: list[str] | None = None,
          **options: str) -> CatalogTable:
    return CatalogTable("t", [Column(n, t) for n, t in columns],
                        {k.replace("_", "-") if k in ("number_of_rows", "rows_per_second",
                                                      "print_identifier", "standard_error")
                         else k: v for k, v in options.items()},
                        partition_keys=partition_keys or [])


def fs(path: Path | str, fmt: str, columns: list[tuple[str, str]],
       partition_keys: list[str] | None = None, **extra: str) -> CatalogTable:
    t = table(columns, partition_keys, connector="filesystem", path=str(path), format=fmt)
    t.options.update(extra)
    return t


def expected_rows() -> list[tuple[Any, ...]]:
    rows = []
    for name, n, price, ok, ts, amount, day, note, dt in EXPECTED["table_rows"]:
        rows.append((name, n, price, ok, None if ts is None else datetime.datetime.fromisoformat(ts),
                     None if amount is None else Decimal(amount),
                     None if day is None else datetime.date.fromisoformat(day), note, dt))
    return rows


def strings_not_null(row: tuple[Any, ...], strings: tuple[int, ...]) -> tuple[Any, ...]:
    """A row as CSV without a null literal gives it back: a null string is empty."""
    return tuple("" if v is None and i in strings else v for i, v in enumerate(row))


def text(v: Any) -> Any:
    if isinstance(v, Decimal):
        return format(v.normalize(), "f")
    if isinstance(v, datetime.datetime) and v.tzinfo is not None:
        return str(v.astimezone().replace(tzinfo=None))  # Spark gives an instant as local time
    return None if v is None else str(v)


def normal(rows: list[Any]) -> list[str]:
    """Rows comparable whatever their order, the decimals' scale and the instants' zone."""
    return sorted(json.dumps([text(v) for v in r]) for r in rows)


# -- Flink's own files --------------------------------------------------------------------------------

@pytest.mark.parametrize("line_by_line", [False, True])
def test_reads_flinks_partitioned_json_table(spark: Any, line_by_line: bool) -> None:
    # fail-on-missing-field takes the line-by-line path instead of pyarrow's whole-file one
    options = {"json.fail-on-missing-field": "true"} if line_by_line else {}
    df = read_table(spark, fs(FLINK / "json_table", "json", FIXTURE_COLUMNS, ["dt"], **options),
                    False)
    assert df.columns == [n for n, _ in FIXTURE_COLUMNS]
    assert dict(df.dtypes)["ts"] == "timestamp_ntz" and dict(df.dtypes)["amount"] == "decimal(10,2)"
    assert normal([tuple(r) for r in df.collect()]) == normal(expected_rows())


def test_reads_flinks_partitioned_csv_table(spark: Any) -> None:
    # Flink itself cannot read back its null numbers (expected.json: flink_reads_back.csv);
    # here an empty number is null; Flink writes a null string empty, read as the empty string
    df = read_table(spark, fs(FLINK / "csv_table", "csv", FIXTURE_COLUMNS, ["dt"]), False)
    assert normal([tuple(r) for r in df.collect()]) == normal(
        [strings_not_null(r, (0, 7)) for r in expected_rows()])


def test_partition_key_not_last_and_typed(spark: Any, tmp_path: Path) -> None:
    columns = [("dt", "DATE"), ("name", "STRING"), ("n", "INT")]
    t = fs(tmp_path / "p", "csv", columns, ["dt"])
    rows = [(datetime.date(2026, 1, 2), "a", 1), (datetime.date(2026, 1, 3), "b", 2), (None, "c", 3)]
    df = spark.createDataFrame(rows, "dt DATE, name STRING, n INT")
    assert write_table(df, t, False) == 3
    assert sorted(os.listdir(tmp_path / "p")) == ["dt=2026-01-02", "dt=2026-01-03",
                                                  "dt=__DEFAULT_PARTITION__"]
    back = read_table(spark, t, False)
    assert back.columns == ["dt", "name", "n"]
    assert sorted(map(tuple, back.collect()), key=str) == sorted(rows, key=str)


# -- each format written and read back ----------------------------------------------------------------

ALL_TYPES = [("s", "STRING"), ("i", "INT"), ("b", "BIGINT"), ("d", "DOUBLE"), ("ok", "BOOLEAN"),
             ("ts", "TIMESTAMP(3)"), ("m", "DECIMAL(10, 2)"), ("day", "DATE"),
             ("lt", "TIMESTAMP_LTZ(3)")]
UTC = datetime.timezone.utc
ROWS = [("x, \"y\"", 1, 10**12, 1.5, True, datetime.datetime(2026, 11, 24, 8, 0, 0, 123000),
         Decimal("12.30"), datetime.date(2026, 11, 24), datetime.datetime(2026, 1, 2, 3, tzinfo=UTC)),
        (None, None, None, None, None, None, None, None, None),
        ("ünï\nline", -2, -3, 1e20, False, datetime.datetime(2026, 1, 1), Decimal("100.00"),
         datetime.date(1999, 12, 31), datetime.datetime(1999, 1, 2, 3, 4, 5, 6000, tzinfo=UTC))]


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet", "avro"])
def test_each_format_round_trips(spark: Any, tmp_path: Path, fmt: str) -> None:
    t = fs(tmp_path / fmt, fmt, ALL_TYPES)
    df = spark.createDataFrame(ROWS, ", ".join(f"{n} {parse_type(ty).spark_ddl()}"
                                              for n, ty in ALL_TYPES))
    assert write_table(df, t, False) == 3
    files = os.listdir(tmp_path / fmt)
    assert files and all(f.startswith("part-") and "-task-0-file-" in f for f in files)
    back = [tuple(r) for r in read_table(spark, t, False).collect()]
    expected = ROWS if fmt != "csv" else [strings_not_null(r, (0,)) for r in ROWS]
    assert normal(back) == normal(expected)


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet", "avro"])
def test_time_columns_are_their_text_in_spark(spark: Any, tmp_path: Path, fmt: str) -> None:
    t = fs(tmp_path / fmt, fmt, [("t", "TIME(3)"), ("n", "INT")])
    write_table(spark.createDataFrame([("01:02:03.400", 1), (None, 2)], "t STRING, n INT"), t, False)
    assert sorted(map(tuple, read_table(spark, t, False).collect()), key=str) == [
        ("01:02:03.400", 1), (None, 2)]


def test_json_written_as_flink_writes_it(spark: Any, tmp_path: Path) -> None:
    columns = FIXTURE_COLUMNS[:-1]
    rows = [r[:-1] for r in expected_rows()]
    t = fs(tmp_path / "j", "json", columns)
    write_table(spark.createDataFrame(rows, ", ".join(f"`{n}` {parse_type(ty).spark_ddl()}"
                                                      for n, ty in columns)), t, False)
    (part,) = os.listdir(tmp_path / "j")
    written = (tmp_path / "j" / part).read_text(encoding="utf-8").splitlines()
    flink = []
    for f in sorted(os.listdir(FLINK / "json_table")):
        for p in sorted(os.listdir(FLINK / "json_table" / f)):
            flink += (FLINK / "json_table" / f / p).read_text(encoding="utf-8").splitlines()
    assert sorted(written) == sorted(flink)


def test_csv_written_as_flink_writes_it(spark: Any, tmp_path: Path) -> None:
    t = fs(tmp_path / "c", "csv", FIXTURE_COLUMNS, ["dt"])
    write_table(spark.createDataFrame(expected_rows(), ", ".join(
        f"`{n}` {parse_type(ty).spark_ddl()}" for n, ty in FIXTURE_COLUMNS)), t, False)
    for partition in sorted(os.listdir(FLINK / "csv_table")):
        (ours,) = os.listdir(tmp_path / "c" / partition)
        (theirs,) = os.listdir(FLINK / "csv_table" / partition)
        assert ((tmp_path / "c" / partition / ours).read_bytes()
                == (FLINK / "csv_table" / partition / theirs).read_bytes())


def test_partition_values_escaped_and_default_name(spark: Any, tmp_path: Path) -> None:
    t = fs(tmp_path / "e", "json", [("v", "INT"), ("p", "STRING")], ["p"],
           **{"partition.default-name": "none"})
    rows = [(1, "a/b=c"), (2, "50%"), (3, None), (4, "")]
    write_table(spark.createDataFrame(rows, "v INT, p STRING"), t, False)
    assert sorted(os.listdir(tmp_path / "e")) == ["p=50%25", "p=a%2Fb%3Dc", "p=none"]
    assert sorted(map(tuple, read_table(spark, t, False).collect()), key=str) == [
        (1, "a/b=c"), (2, "50%"), (3, None), (4, None)]


def test_source_path_regex_pattern(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "a.csv").write_text("1\n")
    (tmp_path / "x" / "b.txt").write_text("2\n")
    t = fs(tmp_path / "x", "csv", [("v", "INT")], **{"source.path.regex-pattern": r".*\.csv"})
    assert [r.v for r in read_table(spark, t, False).collect()] == [1]


def test_reads_files_of_the_datastream_writers(spark: Any, tmp_path: Path) -> None:
    from sessioncluster.api.formats.avro import AvroSchema, AvroWriters
    from sessioncluster.api.formats.parquet import ParquetBulkWriters
    from sessioncluster.api.table.types import DataTypes

    (tmp_path / "pq").mkdir()
    row_type = DataTypes.ROW([DataTypes.FIELD("a", DataTypes.BIGINT()),
                              DataTypes.FIELD("b", DataTypes.STRING())])
    with open(tmp_path / "pq" / "f.parquet", "wb") as out:
        writer = ParquetBulkWriters.for_row_type(row_type).create(out)
        writer.add_element((1, "x"))
        writer.finish()
    (tmp_path / "avro").mkdir()
    schema = AvroSchema.parse_string(json.dumps({
        "type": "record", "name": "User", "namespace": "example", "fields": [
            {"name": "b", "type": "string"}, {"name": "a", "type": "long"},
            {"name": "extra", "type": "int"}]}))
    with open(tmp_path / "avro" / "f.avro", "wb") as out:
        writer = AvroWriters.for_generic_record(schema).create(out)
        writer.add_element({"b": "y", "a": 2, "extra": 0})
        writer.finish()
    columns = [("a", "BIGINT"), ("b", "STRING")]
    for fmt, expected in (("pq", (1, "x")), ("avro", (2, "y"))):
        t = fs(tmp_path / fmt, "parquet" if fmt == "pq" else "avro", columns)
        assert [tuple(r) for r in read_table(spark, t, False).collect()] == [expected]


def test_parquet_read_by_sparks_reader_only_when_it_gives_flinks_rows(spark: Any,
                                                                       tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "pq").mkdir()
    ts = datetime.datetime(2020, 4, 15, 8, 5, 1, 250000)
    pq.write_table(pa.table({"i": pa.array([1, None], pa.int32()), "s": ["x", "y"],
                             "ts": pa.array([ts, None], pa.timestamp("ms")),
                             "d": pa.array([Decimal("1.50"), None], pa.decimal128(10, 2)),
                             "Upper": [1.0, 2.0], "extra": [0, 0]}),
                   tmp_path / "pq" / "f.parquet")
    exact = [("i", "INT"), ("s", "STRING"), ("ts", "TIMESTAMP(3)"), ("d", "DECIMAL(10, 2)"),
             ("Upper", "DOUBLE")]
    expected = [(1, "x", ts, Decimal("1.50"), 1.0), (None, "y", None, None, 2.0)]
    native = read_table(spark, fs(tmp_path / "pq", "parquet", exact), False)
    assert len(native.inputFiles()) == 1  # Spark's own file scan
    assert sorted(map(tuple, native.collect()), key=str) == sorted(expected, key=str)
    # a widened type, a name in another case (Flink's reader is case sensitive: null), a
    # missing column: the connector's own reader, and Flink's rows
    other = [("i", "BIGINT"), ("upper", "DOUBLE"), ("gone", "STRING")]
    converted = read_table(spark, fs(tmp_path / "pq", "parquet", other), False)
    assert converted.inputFiles() == []
    assert sorted(map(tuple, converted.collect()), key=str) == sorted(
        [(1, None, None), (None, None, None)], key=str)


def test_raw_format_lines(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "a.txt").write_text("one\ntwo, three\n")
    (tmp_path / "raw" / ".hidden").write_text("never\n")
    (tmp_path / "raw" / "_SUCCESS").write_text("")
    t = fs(tmp_path / "raw", "raw", [("line", "STRING")])
    assert sorted(r[0] for r in read_table(spark, t, False).collect()) == ["one", "two, three"]
    out = fs(tmp_path / "out", "raw", [("line", "STRING")])
    assert write_table(spark.createDataFrame([("x",), ("y",)], "line STRING"), out, False) == 2
    (part,) = os.listdir(tmp_path / "out")
    assert (tmp_path / "out" / part).read_text() == "x\ny\n"


def test_path_may_be_a_file_and_csv_options(spark: Any, tmp_path: Path) -> None:
    f = tmp_path / "data.csv"
    f.write_text("# a comment\na|NULL\n'b|c'|2\n")
    t = fs(f, "csv", [("s", "STRING"), ("n", "INT")], **{
        "csv.field-delimiter": "|", "csv.null-literal": "NULL", "csv.quote-character": "'",
        "csv.allow-comments": "true"})
    assert sorted(map(tuple, read_table(spark, t, False).collect()), key=str) == [
        ("a", None), ("b|c", 2)]


def test_malformed_csv_line_named_or_skipped(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "f.csv").write_text("a,1\nb,notanumber\nc,3\nd,4,extra\n")
    columns = [("s", "STRING"), ("n", "INT")]
    with pytest.raises(Exception, match=r"f\.csv, line 2"):
        read_table(spark, fs(tmp_path / "bad", "csv", columns), False).collect()
    # Flink's table format: a field that does not parse is null, a line that does not split
    # into the columns is skipped
    lenient = fs(tmp_path / "bad", "csv", columns, **{"csv.ignore-parse-errors": "true"})
    assert sorted(map(tuple, read_table(spark, lenient, False).collect()), key=str) == [
        ("a", 1), ("b", None), ("c", 3)]


def test_malformed_json_line_named_or_skipped(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "f.json").write_text('{"n": 1}\n{"n": \n{"n": 3}\n')
    with pytest.raises(Exception, match=r"f\.json, line 2"):
        read_table(spark, fs(tmp_path / "bad", "json", [("n", "INT")]), False).collect()
    skipping = fs(tmp_path / "bad", "json", [("n", "INT")], **{"json.ignore-parse-errors": "true"})
    assert sorted(r[0] for r in read_table(spark, skipping, False).collect()) == [1, 3]


def test_json_iso_timestamps(spark: Any, tmp_path: Path) -> None:
    t = fs(tmp_path / "iso", "json", [("ts", "TIMESTAMP(3)")],
           **{"json.timestamp-format.standard": "ISO-8601"})
    write_table(spark.createDataFrame([(datetime.datetime(2026, 1, 2, 3, 4, 5, 600000),)],
                                      "ts TIMESTAMP_NTZ"), t, False)
    (part,) = os.listdir(tmp_path / "iso")
    assert (tmp_path / "iso" / part).read_text() == '{"ts":"2026-01-02T03:04:05.6"}\n'
    assert read_table(spark, t, False).collect()[0][0] == datetime.datetime(2026, 1, 2, 3, 4, 5,
                                                                            600000)


def test_insert_overwrite_replaces_only_written_partitions(spark: Any, tmp_path: Path) -> None:
    t = fs(tmp_path / "o", "json", [("v", "INT"), ("p", "STRING")], ["p"])
    write_table(spark.createDataFrame([(1, "a"), (2, "b")], "v INT, p STRING"), t, False)
    write_table(spark.createDataFrame([(3, "a")], "v INT, p STRING"), t, False)
    assert len(os.listdir(tmp_path / "o" / "p=a")) == 2
    assert write_table(spark.createDataFrame([(4, "a")], "v INT, p STRING"), t, True) == 1
    assert sorted(map(tuple, read_table(spark, t, False).collect())) == [(2, "b"), (4, "a")]
    plain = fs(tmp_path / "np", "csv", [("v", "INT")])
    write_table(spark.createDataFrame([(1,), (2,)], "v INT"), plain, False)
    write_table(spark.createDataFrame([(9,)], "v INT"), plain, True)
    assert [tuple(r) for r in read_table(spark, plain, False).collect()] == [(9,)]


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_rolling_file_size_and_sink_parallelism(spark: Any, tmp_path: Path, fmt: str) -> None:
    t = fs(tmp_path / "r", fmt, [("v", "BIGINT"), ("s", "STRING")], **{
        "sink.rolling-policy.file-size": "2kb", "sink.parallelism": "2"})
    df = spark.range(0, 30000, 1, 1).selectExpr("id AS v", "CAST(id AS STRING) AS s")
    assert write_table(df, t, False) == 30000
    files = sorted(os.listdir(tmp_path / "r"))
    tasks = {f.split("-task-")[1].split("-file-")[0] for f in files}
    assert len(files) > 2 and tasks == {"0", "1"}
    assert sorted(r.v for r in read_table(spark, t, False).collect()) == list(range(30000))


def test_nothing_visible_is_left_by_a_failed_insert(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    t = fs(tmp_path / "f", "csv", [("v", "INT")])
    failing = spark.range(0, 100, 1, 1).select(
        F.when(F.col("id") < 99, F.col("id")).otherwise(F.raise_error("boom")).cast("int"))
    with pytest.raises(Exception, match="boom"):
        write_table(failing, t, False)
    assert not [f for f in os.listdir(tmp_path / "f") if not f.startswith(".")] \
        if (tmp_path / "f").exists() else True
    assert not list((tmp_path / "f").rglob("*")) if (tmp_path / "f").exists() else True


def test_streaming_read_of_a_monitored_directory(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "in" / "p=x").mkdir(parents=True)
    (tmp_path / "in" / "p=x" / "a.csv").write_text("1\n2\n")
    t = fs(tmp_path / "in", "csv", [("v", "INT"), ("p", "STRING")], ["p"],
           **{"source.monitor-interval": "1 s"})
    df = read_table(spark, t, True)
    assert df.isStreaming
    query = (df.writeStream.format("memory").queryName("monitored")
             .option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        query.processAllAvailable()
        (tmp_path / "in" / "p=x" / "b.csv").write_text("3\n")
        query.processAllAvailable()
        got = sorted(map(tuple, spark.sql("SELECT * FROM monitored").collect()))
    finally:
        query.stop()
    assert got == [(1, "x"), (2, "x"), (3, "x")]


# -- datagen ------------------------------------------------------------------------------------------

def test_datagen_bounded_sequence_and_random_bounds(spark: Any) -> None:
    t = table([("id", "BIGINT"), ("s", "STRING"), ("r", "INT"), ("d", "DOUBLE"), ("txt", "STRING"),
               ("m", "DECIMAL(5, 2)"), ("ts", "TIMESTAMP(3)"), ("ok", "BOOLEAN")],
              connector="datagen", **{
                  "fields.id.kind": "sequence", "fields.id.start": "10", "fields.id.end": "1009",
                  "fields.s.kind": "sequence", "fields.s.start": "1", "fields.s.end": "5000",
                  "fields.r.min": "-3", "fields.r.max": "3", "fields.d.min": "0.5",
                  "fields.d.max": "1.5", "fields.txt.length": "7", "fields.ts.max-past": "1 h",
                  "fields.ok.null-rate": "1"})
    df = read_table(spark, t, False)
    rows = df.collect()
    assert len(rows) == 1000  # the shortest sequence ends the table
    assert sorted(r.id for r in rows) == list(range(10, 1010))
    assert sorted(int(r.s) for r in rows) == list(range(1, 1001))
    assert {r.r for r in rows} == set(range(-3, 4))
    assert all(0.5 <= r.d <= 1.5 and len(r.txt) == 7 and -1000 < r.m < 1000 and r.ok is None
               for r in rows)
    now = datetime.datetime.now()
    assert all(now - datetime.timedelta(hours=1, minutes=1) <= r.ts <= now for r in rows)


def test_datagen_number_of_rows_and_unbounded(spark: Any) -> None:
    t = table([("b", "BIGINT"), ("bin", "BYTES"), ("c", "CHAR(5)"), ("v", "VARCHAR(8)"),
               ("arr", "ARRAY<INT>"), ("m", "MAP<STRING, DOUBLE>"),
               ("r", "ROW<x INT, y STRING>")], connector="datagen", number_of_rows="123",
              **{"fields.bin.length": "4", "fields.arr.length": "2"})
    rows = read_table(spark, t, False).collect()
    assert len(rows) == 123 and all(len(r.bin) == 4 for r in rows)
    assert all(len(r.c) == 5 and len(r.v) == 8 and len(r.arr) == 2 and len(r.m) == 3
               and len(r.r.y) == 100 for r in rows)
    assert len({r.b for r in rows}) > 100  # random over the whole BIGINT range
    unbounded = table([("b", "BIGINT")], connector="datagen")
    assert not is_bounded(unbounded)
    with pytest.raises(FlinkSqlError, match="unbounded table 't' in batch mode"):
        read_table(spark, unbounded, False)
    assert read_table(spark, unbounded, True).isStreaming


# -- print and blackhole ------------------------------------------------------------------------------

def test_print_lines_as_flink(spark: Any) -> None:
    df = spark.createDataFrame(
        [("a", 1, Decimal("1.50"), datetime.datetime(2026, 1, 2, 3, 4), None, [1, 2])],
        "s STRING, n INT, m DECIMAL(4, 2), ts TIMESTAMP_NTZ, x DOUBLE, arr ARRAY<INT>")
    cols = [("s", "STRING"), ("n", "INT"), ("m", "DECIMAL(4, 2)"), ("ts", "TIMESTAMP(3)"),
            ("x", "DOUBLE"), ("arr", "ARRAY<INT>")]
    assert print_lines(df.coalesce(1), table(cols, connector="print")) == [
        "+I[a, 1, 1.50, 2026-01-02T03:04, null, [1, 2]]"]
    named = table(cols, connector="print", print_identifier="out")
    assert print_lines(df.coalesce(1), named) == ["out> +I[a, 1, 1.50, 2026-01-02T03:04, null, [1, 2]]"]
    two = spark.createDataFrame([(1,), (2,)], "n INT").repartition(2)
    lines = print_lines(two, table([("n", "INT")], connector="print", print_identifier="id"))
    assert sorted(line.split("> ")[0] for line in lines) == ["id:1", "id:2"]
    assert format_row([1.0e20, b"\x01\xff"], "-U") == "-U[1.0E20, [1, -1]]"
    # Flink 2.3 printed +I[Alice, 130.1, 1970-01-01T00:00:00Z] for FLOAT and TIMESTAMP_LTZ(3)
    utc = spark.createDataFrame([("Alice", 130.1, datetime.datetime(1970, 1, 1,
                                                                      tzinfo=datetime.timezone.utc))],
                                "name STRING, price FLOAT, w TIMESTAMP")
    assert print_lines(utc.coalesce(1), table([("name", "STRING"), ("price", "FLOAT"),
                                               ("w", "TIMESTAMP_LTZ(3)")], connector="print")) \
        == ["+I[Alice, 130.1, 1970-01-01T00:00:00Z]"]


def test_print_and_blackhole_sinks(spark: Any, capsys: Any) -> None:
    df = spark.createDataFrame([(1,), (2,)], "n INT").coalesce(1)
    assert write_table(df, table([("n", "INT")], connector="print", standard_error="true")) == 2
    assert capsys.readouterr().err.splitlines() == ["+I[1]", "+I[2]"]
    assert write_table(df, table([("n", "INT")], connector="blackhole")) == 2
    assert sink_is_append_only(fs("/x", "csv", [("n", "INT")]))
    assert not sink_is_append_only(table([("n", "INT")], connector="print"))


# -- validation ---------------------------------------------------------------------------------------

def test_validation_messages() -> None:
    with pytest.raises(FlinkSqlError) as unknown:
        validate(table([("a", "INT")], connector="kafkaa"))
    assert str(unknown.value) == (
        "Could not find any factory for identifier 'kafkaa' that implements "
        "'org.apache.flink.table.factories.DynamicTableFactory' in the classpath.\n\n"
        "Available factory identifiers are:\n\nblackhole\ndatagen\nfilesystem\nprint")
    with pytest.raises(FlinkSqlError, match="Missing required options are:\n\nformat"):
        validate(table([("a", "INT")], connector="filesystem", path="/tmp/x"))
    with pytest.raises(FlinkSqlError) as extra:
        validate(table([("a", "INT")], connector="print", colour="red"))
    assert str(extra.value).startswith("Unsupported options found for 'print'.\n\n"
                                       "Unsupported options:\n\ncolour\n\nSupported options:\n\n"
                                       "connector\nprint-identifier\n")
    with pytest.raises(FlinkSqlError, match="Unsupported options found for 'filesystem'"):
        validate(fs("/tmp/x", "csv", [("a", "INT")], **{"sink.typo": "1"}))
    with pytest.raises(FlinkSqlError, match="identifier 'xml' that implements"):
        validate(fs("/tmp/x", "xml", [("a", "INT")]))
    with pytest.raises(FlinkSqlError, match="Unsupported options found for 'datagen'"):
        validate(table([("a", "INT")], connector="datagen", **{"fields.b.kind": "random"}))
    with pytest.raises(FlinkSqlError, match="'fields.a.end' for sequence generator"):
        validate(table([("a", "INT")], connector="datagen", **{"fields.a.kind": "sequence",
                                                               "fields.a.start": "1"}))
    with pytest.raises(FlinkSqlError, match="only supports single physical column"):
        validate(fs("/tmp/x", "raw", [("a", "STRING"), ("b", "STRING")]))
    with pytest.raises(FlinkSqlError, match="can only be used as a sink"):
        read_table(None, table([("a", "INT")], connector="print"), False)


def test_flink_type_text() -> None:
    assert str(parse_type("ROW<a INT NOT NULL, `b c` ARRAY<STRING>>")) == \
        "ROW<`a` INT NOT NULL, `b c` ARRAY<STRING>>"
    assert parse_type("TIMESTAMP(3) WITH LOCAL TIME ZONE").spark_ddl() == "TIMESTAMP"
    assert parse_type("DECIMAL(10, 2)").spark_ddl() == "DECIMAL(10, 2)"
    assert parse_type("INT ARRAY").spark_ddl() == "ARRAY<INT>"
    with pytest.raises(ValueError, match="WIBBLE"):
        parse_type("WIBBLE")


def test_json_written_a_column_at_a_time_as_a_row_at_a_time() -> None:
    import io

    from sessioncluster.spark.flinksql.connectors.formats import (
        file_row_type,
        json_row_encoder,
        writer_factory,
    )

    row_type = file_row_type([(n, parse_type(t)) for n, t in [
        ("s", "STRING"), ("d", "DOUBLE"), ("m", "DECIMAL(10, 2)"), ("ts", "TIMESTAMP(3)"),
        ("lt", "TIMESTAMP_LTZ(3)"), ("day", "DATE"), ("b", "BOOLEAN"), ("i", "INT")]])
    rows = [("a\"b\\c\nd\te\x01\x7f\x1fü", 1e20, Decimal("12.30"),
             datetime.datetime(2026, 1, 2, 3, 4, 5, 600000), datetime.datetime(2026, 1, 2, tzinfo=UTC),
             datetime.date(2026, 1, 2), True, 5),
            (None,) * 8,
            ("", 1e-4, Decimal("100.00"), datetime.datetime(2026, 1, 2, 0, 0, 0, 1000), None,
             datetime.date(1, 1, 1), False, -1)]
    out = io.BytesIO()
    writer = writer_factory("json", row_type, {}).create(out)
    for row in rows:
        writer.add_element(row)
    writer.finish()
    encode = json_row_encoder(row_type, {})
    assert out.getvalue().decode("utf-8") == "".join(encode(r) + "\n" for r in rows)
    assert out.getvalue().decode("utf-8").splitlines()[2] == (
        '{"s":"","d":1.0E-4,"m":1E+2,"ts":"2026-01-02 00:00:00.001","lt":null,'
        '"day":"0001-01-01","b":false,"i":-1}')


def test_the_datastream_connector_is_from_data_streams_own() -> None:
    """A ``datastream`` table comes with its DataStream's JobGraph (from_data_stream); one
    written in DDL has none and fails naming the API, and such a table never ends."""
    table = CatalogTable("t", [Column("word", "STRING")], {"connector": "datastream"})
    with pytest.raises(FlinkSqlError, match=r"from_data_stream\(ds\)"):
        validate(table)
    table.payload = b"graph"
    validate(table)
    assert not is_bounded(table)
    table.options["path"] = "/x"
    with pytest.raises(FlinkSqlError, match="Unsupported options"):
        validate(table)
