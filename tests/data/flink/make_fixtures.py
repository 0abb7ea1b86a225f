"""Makes the fixtures under tests/data/flink/ with real Flink (PyFlink 2.3, a local mini-cluster).

Run with a Python that has ``apache-flink==2.3.0`` (not the project's interpreter):

    /work/flinkvenv/bin/python tests/data/flink/make_fixtures.py

It replaces ``filesink/``, ``filesink_rows/``, ``filesink_inprogress/``, ``csv_table/`` and
``json_table/`` beside this file and writes ``expected.json``: the records each fixture was
written from, and the rows real Flink reads back from its own files (what this project's formats
must read too).
"""

from __future__ import annotations

import datetime
import json
import shutil
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from pyflink.common import Duration, Encoder, Row, Types, WatermarkStrategy
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSink, FileSource, StreamFormat
from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment

HERE = Path(__file__).resolve().parent

#: lines for the DataStream FileSink (no line breaks inside: a line is a record)
LINES = ["hello", "with, comma", "\"quoted\"", "ünïcödé ✓", "  spaces around  ", "tab\there",
         "", "last"] + [f"line {i}" for i in range(12)]

#: rows of the filesystem tables: (name, n, price, ok, ts, amount, day, note, dt)
TABLE_ROWS: list[tuple[Any, ...]] = [
    ("alice", 1, 1.5, True, datetime.datetime(2026, 11, 24, 8, 0, 0, 123000), Decimal("12.30"),
     datetime.date(2026, 11, 24), "plain", "2026-11-24"),
    ("bob, jr.", 2, -0.25, False, datetime.datetime(2026, 11, 24, 9, 30), Decimal("0.05"),
     datetime.date(2026, 1, 2), "with \"quotes\"", "2026-11-24"),
    ("carol", 3, 1e20, True, datetime.datetime(2026, 11, 25, 0, 0, 1), Decimal("-7.00"),
     datetime.date(1999, 12, 31), None, "2026-11-25"),
    ("dävid ✓", 4, 0.0, False, datetime.datetime(2026, 11, 25, 23, 59, 59, 999000),
     Decimal("99999999.99"), datetime.date(2026, 11, 25), "multi\nline", "2026-11-25"),
    ("", 5, 3.25, None, None, None, None, "tab\there; semi", "2026-11-25"),
    (None, None, None, True, datetime.datetime(2026, 11, 26, 12, 0), Decimal("1.00"),
     datetime.date(2026, 11, 26), "", "2026-11-26"),
    ("eve", 6, 0.0001, True, datetime.datetime(2026, 11, 24, 12, 0, 0, 100000), Decimal("100.00"),
     datetime.date(2026, 11, 24), "#hash & 'apostrophe'", "2026-11-24"),
    ("frank", 7, 123456789.0, False, datetime.datetime(2026, 11, 24, 13, 0), Decimal("120.00"),
     datetime.date(2026, 11, 24), "-dash-first", "2026-11-24"),
]

COLUMNS = [("name", DataTypes.STRING()), ("n", DataTypes.BIGINT()),
           ("price", DataTypes.DOUBLE()), ("ok", DataTypes.BOOLEAN()),
           ("ts", DataTypes.TIMESTAMP(3)), ("amount", DataTypes.DECIMAL(10, 2)),
           ("day", DataTypes.DATE()), ("note", DataTypes.STRING()), ("dt", DataTypes.STRING())]
DDL_COLUMNS = ("name STRING, n BIGINT, price DOUBLE, ok BOOLEAN, ts TIMESTAMP(3), "
               "amount DECIMAL(10, 2), `day` DATE, note STRING, dt STRING")


def fresh(name: str) -> Path:
    path = HERE / name
    shutil.rmtree(path, ignore_errors=True)
    return path


def file_sink_fixtures() -> None:
    """(a) DataStream FileSink, row format, simple string encoder, the default date-time bucket
    assigner, BATCH mode, parallelism 2: strings, and Rows (written as Flink's Row.toString)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(2)
    lines = env.from_collection(LINES, type_info=Types.STRING())
    # from_collection runs with parallelism 1: two sink subtasks, two part files
    lines.rebalance().sink_to(FileSink.for_row_format(
        str(fresh("filesink")), Encoder.simple_string_encoder()).build()).set_parallelism(2)
    rows = env.from_collection([Row("alice", 1), Row("bob", None)],
                               type_info=Types.ROW_NAMED(["name", "n"],
                                                         [Types.STRING(), Types.LONG()]))
    rows.sink_to(FileSink.for_row_format(str(fresh("filesink_rows")),
                                         Encoder.simple_string_encoder()).build())
    env.execute("fixtures: FileSink")

    # STREAMING without checkpoints, an unbounded source (a monitored directory), cancelled:
    # nothing was committed, the part file stays in progress and hidden
    # (".part-<uid>-0.inprogress.<uuid>"), and Flink's FileSource reads none of it
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(1)
    watched = (FileSource.for_record_stream_format(StreamFormat.text_line_format(),
                                                   str(HERE / "filesink"))
               .monitor_continuously(Duration.of_seconds(1)).build())
    env.from_source(watched, WatermarkStrategy.no_watermarks(), "watched").sink_to(
        FileSink.for_row_format(str(fresh("filesink_inprogress")),
                                Encoder.simple_string_encoder()).build())
    client = env.execute_async("fixtures: FileSink, in progress")
    time.sleep(15)
    client.cancel().result()


def table_fixtures() -> dict[str, Any]:
    """(b, c) Flink SQL ``filesystem`` tables, csv and json, ``PARTITIONED BY (dt)``, BATCH;
    returns the rows Flink reads back from each (as JSON-able lists), or the error it
    fails with."""
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", "1")
    t_env.get_config().set("table.local-time-zone", "UTC")
    source = t_env.from_elements(TABLE_ROWS, DataTypes.ROW(
        [DataTypes.FIELD(n, t) for n, t in COLUMNS]))
    t_env.create_temporary_view("source_rows", source)
    read_back: dict[str, Any] = {}
    for fmt in ("csv", "json"):
        path = fresh(f"{fmt}_table")
        t_env.execute_sql(f"CREATE TABLE {fmt}_table ({DDL_COLUMNS}) PARTITIONED BY (dt) "
                          f"WITH ('connector' = 'filesystem', 'path' = '{path}', "
                          f"'format' = '{fmt}')")
        t_env.execute_sql(f"INSERT INTO {fmt}_table SELECT * FROM source_rows").wait()
        try:
            with t_env.execute_sql(f"SELECT * FROM {fmt}_table").collect() as results:
                read_back[fmt] = sorted((jsonable(list(r)) for r in results), key=json.dumps)
        except Exception as exc:  # noqa: BLE001 - Flink's csv cannot read its own null numbers
            read_back[fmt] = [[f"fails: {root_cause(exc)}"]]
    return read_back


def json_row_serialized() -> list[str]:
    """(e) The table rows (without ``dt``) as PyFlink's DataStream ``JsonRowSerializationSchema``
    writes them (its Java schema called directly; ``n`` as an INT: py4j passes ints so)."""
    from pyflink.datastream.formats.json import JsonRowSerializationSchema
    from pyflink.java_gateway import get_gateway

    StreamExecutionEnvironment.get_execution_environment()  # starts the JVM
    info = Types.ROW_NAMED([n for n, _ in COLUMNS[:-1]], [
        Types.STRING(), Types.INT(), Types.DOUBLE(), Types.BOOLEAN(), Types.SQL_TIMESTAMP(),
        Types.BIG_DEC(), Types.SQL_DATE(), Types.STRING()])
    schema = JsonRowSerializationSchema.builder().with_type_info(info).build()
    j_schema = schema._j_serialization_schema
    j_schema.open(None)
    gateway = get_gateway()
    jvm = gateway.jvm
    out = []
    for row in TABLE_ROWS:
        values = list(row[:-1])
        values[4] = None if values[4] is None else jvm.java.sql.Timestamp.valueOf(
            values[4].isoformat(sep=" "))
        values[5] = None if values[5] is None else jvm.java.math.BigDecimal(str(values[5]))
        values[6] = None if values[6] is None else jvm.java.sql.Date.valueOf(values[6].isoformat())
        array = gateway.new_array(jvm.Object, len(values))
        for i, v in enumerate(values):
            array[i] = v
        out.append(bytes(j_schema.serialize(jvm.org.apache.flink.types.Row.of(array))).decode())
    return out


def root_cause(exc: Exception) -> str:
    """The last 'Caused by' of a Java exception's text."""
    causes = [line.strip() for line in str(exc).splitlines() if line.startswith("Caused by:")]
    return causes[-1] if causes else str(exc).splitlines()[0]


def jsonable(values: list[Any]) -> list[Any]:
    out = []
    for v in values:
        if isinstance(v, (datetime.date, datetime.datetime)):
            v = v.isoformat(sep=" ") if isinstance(v, datetime.datetime) else v.isoformat()
        elif isinstance(v, Decimal):
            v = str(v)
        out.append(v)
    return out


def main() -> None:
    file_sink_fixtures()
    read_back = table_fixtures()
    expected = {
        "lines": LINES,
        "rows_as_text": ["+I[alice, 1]", "+I[bob, null]"],
        "columns": [n for n, _ in COLUMNS],
        "table_rows": [jsonable(list(r)) for r in TABLE_ROWS],
        "flink_reads_back": read_back,
        "json_row_serialized": json_row_serialized(),
    }
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
