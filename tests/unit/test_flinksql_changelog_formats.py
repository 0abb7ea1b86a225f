"""Flink's changelog JSON formats (canal-json, debezium-json, maxwell-json, ogg-json) of the
filesystem connector on a local SparkSession, against the lines Flink 2.3 wrote
(/work/briefs/data/lead30/cdcjson_probe.py and .out): an updating query's changelog fed over
two micro-batches, an insert-only INSERT in BATCH, and Flink's refusals."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sessioncluster.api.formats.base import FileFormatError
from sessioncluster.api.table.types import DataTypes
from sessioncluster.spark.flinksql.boundedchangelog import changelog_query, ordered_changes
from sessioncluster.spark.flinksql.connectors import sink_is_append_only, write_table
from sessioncluster.spark.flinksql.connectors.changelogjson import (
    file_records,
    streaming_source_refusal,
)
from sessioncluster.spark.flinksql.connectors.changelogsource import changelog_sources
from sessioncluster.spark.flinksql.connectors.formats import file_row_type, json_row_decoder
from sessioncluster.spark.flinksql.executor import FlinkSqlPlanner
from sessioncluster.spark.flinksql.microbatch import write_batch
from sessioncluster.spark.flinksql.model import CatalogTable, Column, FlinkSqlError
from sessioncluster.spark.flinksql.planner import to_spark_sql
from sessioncluster.spark.flinksql.statements import Query, parse_statements
from sessioncluster.spark.flinksql.updating import OuterQuery

#: Flink's lines for ``SELECT w, SUM(x), COUNT(*) FROM src GROUP BY w`` over ('a', 1), ('b', 2),
#: ('a', 3), ('b', -2): each -U written as a delete, each +U as an insert
FLINK_UPDATING = {
    "canal-json": ['{"data":[{"w":"a","n":1,"c":1}],"type":"INSERT"}',
                   '{"data":[{"w":"b","n":2,"c":1}],"type":"INSERT"}',
                   '{"data":[{"w":"a","n":1,"c":1}],"type":"DELETE"}',
                   '{"data":[{"w":"a","n":4,"c":2}],"type":"INSERT"}',
                   '{"data":[{"w":"b","n":2,"c":1}],"type":"DELETE"}',
                   '{"data":[{"w":"b","n":0,"c":2}],"type":"INSERT"}'],
    "debezium-json": ['{"before":null,"after":{"w":"a","n":1,"c":1},"op":"c"}',
                      '{"before":null,"after":{"w":"b","n":2,"c":1},"op":"c"}',
                      '{"before":{"w":"a","n":1,"c":1},"after":null,"op":"d"}',
                      '{"before":null,"after":{"w":"a","n":4,"c":2},"op":"c"}',
                      '{"before":{"w":"b","n":2,"c":1},"after":null,"op":"d"}',
                      '{"before":null,"after":{"w":"b","n":0,"c":2},"op":"c"}'],
    "maxwell-json": ['{"data":{"w":"a","n":1,"c":1},"type":"insert"}',
                     '{"data":{"w":"b","n":2,"c":1},"type":"insert"}',
                     '{"data":{"w":"a","n":1,"c":1},"type":"delete"}',
                     '{"data":{"w":"a","n":4,"c":2},"type":"insert"}',
                     '{"data":{"w":"b","n":2,"c":1},"type":"delete"}',
                     '{"data":{"w":"b","n":0,"c":2},"type":"insert"}'],
    "ogg-json": ['{"before":null,"after":{"w":"a","n":1,"c":1},"op_type":"I"}',
                 '{"before":null,"after":{"w":"b","n":2,"c":1},"op_type":"I"}',
                 '{"before":{"w":"a","n":1,"c":1},"after":null,"op_type":"D"}',
                 '{"before":null,"after":{"w":"a","n":4,"c":2},"op_type":"I"}',
                 '{"before":{"w":"b","n":2,"c":1},"after":null,"op_type":"D"}',
                 '{"before":null,"after":{"w":"b","n":0,"c":2},"op_type":"I"}'],
}


@dataclass
class MicroBatchInsert:
    """An updating query's INSERT as ``microbatch`` reads it."""

    table: CatalogTable
    output_mode: str = "update"
    key_positions: list[int] = field(default_factory=lambda: [0])
    row_kinds: bool = False
    outer: OuterQuery | None = None


def committed_lines(path: Path) -> list[str]:
    """The visible part files' lines, the files in the order they were written."""
    files = sorted((p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")),
                   key=lambda p: p.stat().st_mtime_ns)
    return [line for p in files for line in p.read_text().splitlines()]


def _sink(path: Path, fmt: str, columns: list[tuple[str, str]], **options: str) -> CatalogTable:
    return CatalogTable("s", [Column(n, t) for n, t in columns],
                        {"connector": "filesystem", "path": str(path), "format": fmt, **options})


@pytest.mark.parametrize("fmt", sorted(FLINK_UPDATING))
def test_an_updating_querys_changelog_is_written_as_flink_writes_it(
        local_spark: Any, tmp_path: Path, fmt: str) -> None:
    """The aggregation's updated rows of two micro-batches (a, b; then a, b again) become
    Flink's records, line for line."""
    sink = _sink(tmp_path / "out", fmt, [("w", "STRING"), ("n", "INT"), ("c", "BIGINT")])
    assert not sink_is_append_only(sink)
    insert = MicroBatchInsert(sink)
    schema = "w STRING, n INT, c BIGINT"
    for batch_id, rows in enumerate([[("a", 1, 1), ("b", 2, 1)], [("a", 4, 2), ("b", 0, 2)]]):
        write_batch(insert, local_spark.createDataFrame(rows, schema), batch_id,
                    tmp_path / "state")
    assert committed_lines(tmp_path / "out") == FLINK_UPDATING[fmt]


@pytest.fixture
def planner(local_spark: Any) -> FlinkSqlPlanner:
    return FlinkSqlPlanner(local_spark)


@pytest.mark.parametrize("fmt, flink", [
    ("canal-json", ['{"data":[{"w":"a","x":1}],"type":"INSERT"}',
                    '{"data":[{"w":"b","x":2}],"type":"INSERT"}']),
    ("debezium-json", ['{"before":null,"after":{"w":"a","x":1},"op":"c"}',
                       '{"before":null,"after":{"w":"b","x":2},"op":"c"}'])])
def test_an_insert_only_query_in_batch_and_reading_the_table_refused(
        planner: FlinkSqlPlanner, tmp_path: Path, fmt: str, flink: list[str]) -> None:
    """Flink 2.3 in BATCH mode: each row an insert; reading the table back is refused, its
    format being a changelog source's."""
    planner.plan(f"CREATE TABLE bs (w STRING, x INT) WITH ('connector' = 'filesystem', "
                 f"'path' = '{tmp_path / 'bs'}', 'format' = '{fmt}')")
    job = planner.plan("INSERT INTO bs VALUES ('a', 1), ('b', 2)").job
    assert job is not None
    job.run().collect()
    assert sorted(committed_lines(tmp_path / "bs")) == sorted(flink)
    message = ("^Querying a table in batch mode is currently only possible for INSERT-only "
               "table sources. But the source for table 'default_catalog.default_database.bs' "
               "produces other changelog messages than just INSERT.")
    with pytest.raises(FlinkSqlError, match=message):
        planner.plan("SELECT * FROM bs")
    planner.plan("SELECT * FROM bs", "STREAMING")  # a bounded changelog source in STREAMING


def test_an_updating_query_into_a_changelog_sink_is_planned(planner: FlinkSqlPlanner,
                                                             tmp_path: Path) -> None:
    """A changelog format's sink takes an updating query in STREAMING mode; a ``json`` one
    still refuses it with Flink's message."""
    (tmp_path / "words").mkdir()
    planner.plan(f"CREATE TABLE words (w STRING, x INT) WITH ('connector' = 'filesystem', "
                 f"'path' = '{tmp_path / 'words'}', 'format' = 'csv', "
                 "'source.monitor-interval' = '1s')")
    for name, fmt in (("cs", "canal-json"), ("js", "json")):
        planner.plan(f"CREATE TABLE {name} (w STRING, n BIGINT) WITH ('connector' = "
                     f"'filesystem', 'path' = '{tmp_path / name}', 'format' = '{fmt}')")
    job = planner.plan("INSERT INTO cs SELECT w, COUNT(*) FROM words GROUP BY w", "STREAMING").job
    assert job is not None and job.inserts[0].output_mode == "update"
    with pytest.raises(FlinkSqlError, match="doesn't support consuming update changes"):
        planner.plan("INSERT INTO js SELECT w, COUNT(*) FROM words GROUP BY w", "STREAMING")


def test_debezium_schema_include_is_refused_for_a_sink(local_spark: Any, tmp_path: Path) -> None:
    sink = _sink(tmp_path / "d", "debezium-json", [("w", "STRING")],
                 **{"debezium-json.schema-include": "true"})
    with pytest.raises(FlinkSqlError, match="^Debezium JSON serialization doesn't support "
                                            "'debezium-json.schema-include' option been set"):
        write_table(local_spark.createDataFrame([("a",)], "w STRING"), sink)


def _changes(spark: Any, text: str, tables: dict[str, CatalogTable]) -> list[str]:
    """The records of a bounded STREAMING query over the changelog tables, in order."""
    statement = parse_statements(text)[0]
    assert isinstance(statement, Query)
    rewritten = changelog_query(changelog_sources(spark, statement.ast, tables))
    assert rewritten is not None
    frame = ordered_changes(spark.sql(to_spark_sql(rewritten, {})))
    return [f"{r[-1]}{list(r)[:-1]}" for r in frame.collect()]


@pytest.mark.parametrize("fmt", ["canal-json", "debezium-json"])
def test_a_bounded_changelog_table_is_read_record_by_record_as_flink(
        local_spark: Any, tmp_path: Path, fmt: str) -> None:
    """Flink 2.3 reading the files it wrote (cdcjson_probe.out): each delete a ``-D``, and
    ``SUM`` over them retracts."""
    (tmp_path / "cs").mkdir()
    (tmp_path / "cs" / "part-0").write_text("\n".join(FLINK_UPDATING[fmt]) + "\n")
    sink = _sink(tmp_path / "cs", fmt, [("w", "STRING"), ("n", "INT"), ("c", "BIGINT")])
    tables = {"cs": sink}
    assert _changes(local_spark, "SELECT * FROM cs", tables) == [
        "+I['a', 1, 1]", "+I['b', 2, 1]", "-D['a', 1, 1]", "+I['a', 4, 2]", "-D['b', 2, 1]",
        "+I['b', 0, 2]"]
    assert _changes(local_spark, "SELECT SUM(n) AS total FROM cs", tables) == [
        "+I[1]", "-U[1]", "+U[3]", "-U[3]", "+U[2]", "-U[2]", "+U[6]", "-U[6]", "+U[4]"]
    monitored = _sink(tmp_path / "cs", fmt, [("w", "STRING")], **{"source.monitor-interval": "1s"})
    assert streaming_source_refusal(monitored) is not None
    assert streaming_source_refusal(_sink(tmp_path, "json", [("w", "STRING")])) is None


@pytest.mark.parametrize("fmt, message", [
    ("canal-json", '{"data":[{"w":"a","n":2}],"old":[{"n":1}],"type":"UPDATE"}'),
    ("debezium-json", '{"before":{"w":"a","n":1},"after":{"w":"a","n":2},"op":"u"}'),
    ("debezium-json", '{"schema":{},"payload":{"before":{"w":"a","n":1},'
                      '"after":{"w":"a","n":2},"op":"u"}}'),
    ("maxwell-json", '{"data":{"w":"a","n":2},"old":{"n":1},"type":"update"}'),
    ("ogg-json", '{"before":{"w":"a","n":1},"after":{"w":"a","n":2},"op_type":"U"}')])
def test_an_update_message_is_its_update_before_and_after(tmp_path: Path, fmt: str,
                                                          message: str) -> None:
    """Each format's update (Flink's documentation of the formats: canal's and maxwell's
    ``old`` holds the fields that changed) is a ``-U`` of the row before and a ``+U``."""
    path = tmp_path / "f"
    path.write_text(message + "\n")
    row = json_row_decoder(file_row_type([("w", DataTypes.STRING()), ("n", DataTypes.INT())]))
    assert list(file_records(str(path), fmt, row, False)) == [("-U", ("a", 1)), ("+U", ("a", 2))]


def test_a_malformed_message_names_its_file_and_line_or_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text('{"data":[{"w":"a"}],"type":"INSERT"}\n{"type":"UPSERT"}\n')
    row = json_row_decoder(file_row_type([("w", DataTypes.STRING())]))
    with pytest.raises(FileFormatError, match=r"f, line 2: Corrupt canal-json message .*Unknown"):
        list(file_records(str(path), "canal-json", row, False))
    assert list(file_records(str(path), "canal-json", row, True)) == [("+I", ("a",))]


def test_a_monitored_changelog_table_is_a_changelog_stream(planner: FlinkSqlPlanner,
                                                          tmp_path: Path) -> None:
    """Flink's records (cdcjson_probe.out) in two files, two micro-batches: the table's own
    records with their kinds, and a global SUM over them retracting record by record."""
    from collections import Counter

    (tmp_path / "cs").mkdir()
    planner.plan(f"CREATE TABLE cs (w STRING, n INT, c BIGINT) WITH ('connector' = "
                 f"'filesystem', 'path' = '{tmp_path / 'cs'}', 'format' = 'canal-json', "
                 "'source.monitor-interval' = '1s')")
    lines = FLINK_UPDATING["canal-json"]
    got = {}
    for query in ("SELECT * FROM cs", "SELECT SUM(n) AS total FROM cs"):
        insert = planner.plan(query, "STREAMING").job.inserts[0]
        assert insert.row_kinds
        name = f"cs_{len(got)}"
        stream = insert.frame.writeStream.format("memory").queryName(name).option(
            "checkpointLocation", str(tmp_path / name)).start()
        spark, seen, out = insert.frame.sparkSession, 0, []
        try:
            for i, part in enumerate((lines[:3], lines[3:])):
                path = tmp_path / "cs" / f"{name}-{i}.json"
                if not path.exists():
                    path.write_text("\n".join(part) + "\n")
                stream.processAllAvailable()
                rows = [f"{r[-1]}{list(r)[:-1]}" for r in spark.table(name).collect()]
                out.append(Counter(rows[seen:]))
                seen = len(rows)
        finally:
            stream.stop()
        got[query] = out
        for f in (tmp_path / "cs").iterdir():
            f.unlink()
    assert got["SELECT * FROM cs"] == [
        Counter(["+I['a', 1, 1]", "+I['b', 2, 1]", "-D['a', 1, 1]"]),
        Counter(["+I['a', 4, 2]", "-D['b', 2, 1]", "+I['b', 0, 2]"])]
    assert got["SELECT SUM(n) AS total FROM cs"] == [
        Counter(["+I[1]", "-U[1]", "+U[3]", "-U[3]", "+U[2]"]),
        Counter(["-U[2]", "+U[6]", "-U[6]", "+U[4]"])]
