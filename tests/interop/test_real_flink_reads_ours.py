"""What this project writes, read by real Flink (opt-in: set ``SESSIONCLUSTER_REAL_FLINK_PYTHON``
to a Python with ``apache-flink`` 2.3, e.g. /work/flinkvenv/bin/python; see
tests/data/flink/README.md).

A job on the shared session writes text lines and CSV lines (CsvBulkWriters' text, one record a
line) and JSON lines (JsonRowSerializationSchema) with ``sink_to``; CsvBulkWriters also write a
file directly. A subprocess runs real PyFlink: its FileSource over the text output, Flink SQL
``filesystem`` csv tables over the CSV, PyFlink's JsonRowDeserializationSchema over the JSON
lines, and prints what it reads."""

from __future__ import annotations

import datetime
import io
import json
import os
import subprocess
import textwrap
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import sessioncluster
from sessioncluster.pyflink.common import Encoder, Types
from sessioncluster.pyflink.datastream.connectors.file_system import FileSink
from sessioncluster.pyflink.datastream.formats.csv import CsvBulkWriters, CsvSchema
from sessioncluster.pyflink.datastream.formats.json import JsonRowSerializationSchema
from sessioncluster.pyflink.table import DataTypes

FLINK_PYTHON = os.environ.get("SESSIONCLUSTER_REAL_FLINK_PYTHON")
pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not FLINK_PYTHON, reason="SESSIONCLUSTER_REAL_FLINK_PYTHON not set")]

LINES = ["hello", "with, comma", "\"quoted\"", "ünïcödé ✓", "  spaces around  ", "tab\there", "",
         "last"] + [f"line {i}" for i in range(30)]
DDL = ("name STRING, n BIGINT, price DOUBLE, ok BOOLEAN, ts TIMESTAMP(3), amount DECIMAL(10, 2), "
       "`day` DATE, note STRING")
#: no null numbers, booleans, dates or timestamps here: Flink's csv format writes them as empty
#: fields and cannot read those back (Flink's own limitation), unless a null literal is set
ROWS: list[tuple[Any, ...]] = [
    ("alice", 1, 1.5, True, datetime.datetime(2026, 11, 24, 8, 0, 0, 123000), Decimal("12.30"),
     datetime.date(2026, 11, 24), "plain"),
    ("bob, jr.", 2, -0.25, False, datetime.datetime(2026, 11, 24, 9, 30), Decimal("0.05"),
     datetime.date(2026, 1, 2), "with \"quotes\""),
    ("carol", 3, 1e20, True, datetime.datetime(2026, 11, 25, 0, 0, 1), Decimal("-7.00"),
     datetime.date(1999, 12, 31), None),
    ("dävid ✓", 4, 0.0, False, datetime.datetime(2026, 11, 25, 23, 59, 59, 999000),
     Decimal("99999999.99"), datetime.date(2026, 11, 25), "multi\nline"),
    ("", 5, 3.25, True, datetime.datetime(2026, 11, 26, 12, 0), Decimal("100.00"),
     datetime.date(2026, 11, 26), "tab\there; semi"),
]
NULLS: list[tuple[Any, ...]] = [("x", None, None, None, None, None, None, None)]
NAMES = ["name", "n", "price", "ok", "ts", "amount", "day", "note"]
ROW_INFO = Types.ROW_NAMED(NAMES, [Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.BOOLEAN(),
                                   Types.SQL_TIMESTAMP(), Types.BIG_DEC(), Types.SQL_DATE(),
                                   Types.STRING()])


def schema(null_literal: str | None = None) -> CsvSchema:
    builder = (CsvSchema.builder().add_string_column("name").add_number_column("n")
               .add_number_column("price", DataTypes.DOUBLE()).add_boolean_column("ok")
               .add_column("ts", DataTypes.TIMESTAMP(3))
               .add_column("amount", DataTypes.DECIMAL(10, 2))
               .add_column("day", DataTypes.DATE()).add_string_column("note"))
    if null_literal is not None:
        builder = builder.set_null_value(null_literal)
    return builder.build()


def csv_text(row: tuple[Any, ...], null_literal: str | None = None) -> str:
    """A record as CsvBulkWriters write it, without its line break (for a text sink)."""
    buffer = io.BytesIO()
    writer = CsvBulkWriters.for_schema(schema(null_literal)).create(buffer)
    writer.add_element(row)
    writer.finish()
    return buffer.getvalue().decode("utf-8").removesuffix("\n")


FLINK_READER = textwrap.dedent('''
    import json, sys
    from decimal import Decimal
    from pyflink.common import WatermarkStrategy
    from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
    from pyflink.datastream.connectors.file_system import FileSource, StreamFormat
    from pyflink.table import EnvironmentSettings, TableEnvironment

    jobs = json.loads(sys.argv[1])
    out = {}
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(),
                                                 jobs["text"]).build()
    with env.from_source(source, WatermarkStrategy.no_watermarks(), "text").execute_and_collect() as it:
        out["text"] = list(it)
    if "json" in jobs:  # PyFlink's DataStream JsonRowDeserializationSchema (its Java schema)
        from pyflink.common import Types
        from pyflink.datastream.formats.json import JsonRowDeserializationSchema
        info = Types.ROW_NAMED(jobs["names"], [
            Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.BOOLEAN(), Types.SQL_TIMESTAMP(),
            Types.BIG_DEC(), Types.SQL_DATE(), Types.STRING()])
        j_schema = JsonRowDeserializationSchema.builder().type_info(info).build()
        j_schema = j_schema._j_deserialization_schema
        j_schema.open(None)
        source = FileSource.for_record_stream_format(StreamFormat.text_line_format(),
                                                     jobs["json"]).build()
        with env.from_source(source, WatermarkStrategy.no_watermarks(), "json").execute_and_collect() as it:
            rows = [j_schema.deserialize(line.encode("utf-8")) for line in it]
        out["json"] = [[v if v is None or isinstance(v, (str, int, float, bool)) else str(v)
                        for v in (r.getField(i) for i in range(r.getArity()))] for r in rows]
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    for name, (path, options) in jobs["csv"].items():
        extra = "".join(f", '{k}' = '{v}'" for k, v in options.items())
        t_env.execute_sql(f"CREATE TABLE {name} ({jobs['ddl']}) WITH ('connector' = 'filesystem', "
                          f"'path' = '{path}', 'format' = 'csv'{extra})")
        with t_env.execute_sql(f"SELECT * FROM {name}").collect() as rows:
            out[name] = [[str(v) if isinstance(v, Decimal) else
                          (v.isoformat() if hasattr(v, "isoformat") else v) for v in r]
                         for r in rows]
    print("RESULT:" + json.dumps(out))
''')


def read_with_flink(tmp_path: Path, jobs: dict[str, Any]) -> dict[str, Any]:
    script = tmp_path / "flink_reads.py"
    script.write_text(FLINK_READER)
    done = subprocess.run([str(FLINK_PYTHON), str(script), json.dumps(jobs)], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    results = [line for line in done.stdout.splitlines() if line.startswith("RESULT:")]
    assert done.returncode == 0 and results, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(results[-1].removeprefix("RESULT:"))


def as_flink_prints(row: tuple[Any, ...], null_string: Any = "") -> list[Any]:
    """A row as the reader script prints what Flink read: a null string read as "" (CSV cannot
    tell them apart), decimals at the column's scale, dates and timestamps in ISO form."""
    out = []
    for v in row:
        if isinstance(v, Decimal):
            v = str(v.quantize(Decimal("0.01")))
        elif isinstance(v, (datetime.date, datetime.datetime)):
            v = v.isoformat()
        out.append(v)
    if out[0] is None:
        out[0] = null_string
    if out[-1] is None:
        out[-1] = null_string
    return out


def as_java_prints(row: tuple[Any, ...]) -> list[Any]:
    """A row as the reader script prints the Java Row that Flink's JSON schema read: timestamps,
    decimals and dates as their Java ``toString``."""
    out: list[Any] = []
    for v in row:
        if isinstance(v, datetime.datetime):
            v = v.isoformat(sep=" ")
            v = (v[:-3].rstrip("0") if "." in v else v + ".0")  # java.sql.Timestamp.toString
        elif isinstance(v, (Decimal, datetime.date)):
            v = str(v)
        out.append(v)
    return out


def test_real_flink_reads_text_and_csv(env: sessioncluster.StreamExecutionEnvironment,
                                       tmp_path: Path) -> None:
    text_out, csv_out, null_out = tmp_path / "text", tmp_path / "csv", tmp_path / "csv-nulls"
    env.from_collection(LINES).sink_to(
        FileSink.for_row_format(str(text_out), Encoder.simple_string_encoder()).build())
    env.from_collection(ROWS).map(csv_text).sink_to(
        FileSink.for_row_format(str(csv_out), Encoder.simple_string_encoder()).build())
    env.from_collection(ROWS + NULLS).map(lambda r: csv_text(r, "NULL")).sink_to(
        FileSink.for_row_format(str(null_out), Encoder.simple_string_encoder()).build())
    serialization = JsonRowSerializationSchema.builder().with_type_info(ROW_INFO).build()
    json_out = tmp_path / "json"
    env.from_collection(ROWS + NULLS).map(lambda r: serialization.serialize(r).decode()).sink_to(
        FileSink.for_row_format(str(json_out), Encoder.simple_string_encoder()).build())
    env.execute("written for real Flink")

    bulk = tmp_path / "bulk"
    bulk.mkdir()
    with open(bulk / "part-0.csv", "wb") as f:
        writer = CsvBulkWriters.for_schema(schema()).create(f)
        for row in ROWS:
            writer.add_element(row)
        writer.finish()

    got = read_with_flink(tmp_path, {
        "text": str(text_out), "ddl": DDL, "json": str(json_out), "names": NAMES,
        "csv": {"ours": [str(csv_out), {}], "bulk": [str(bulk), {}],
                "nulls": [str(null_out), {"csv.null-literal": "NULL"}]}})
    assert sorted(got["text"]) == sorted(LINES)
    expected = sorted(as_flink_prints(r) for r in ROWS)
    assert sorted(got["ours"]) == expected
    assert sorted(got["bulk"]) == expected
    assert sorted(got["nulls"], key=json.dumps) == sorted(
        (as_flink_prints(r, None) for r in ROWS + NULLS), key=json.dumps)
    # Flink's JSON reader gives a decimal of the value read, without its scale (100.00 as 100)
    by_value = [[Decimal(v) if i == 5 and v is not None else v for i, v in enumerate(r)]
                for r in got["json"]]
    assert sorted(by_value, key=str) == sorted(
        ([Decimal(v) if i == 5 and v is not None else v for i, v in enumerate(as_java_prints(r))]
         for r in ROWS + NULLS), key=str)
