"""The pure parts of an unbounded Table as a DataStream's source (``to_data_stream`` /
``to_changelog_stream`` in STREAMING), without Spark: a Table's rows and changes as the
records between vertices (``RECORD_SCHEMA``: a pickled named Row with its RowKind, the rowtime
as the record's timestamp), Flink's error for an updating Table, and a Table's source refused by
a planner that has no Flink SQL planner to plan it."""

from __future__ import annotations

import datetime
import pickle
from pathlib import Path

import pyarrow as pa
import pytest

from sessioncluster.api.table.conversion import (
    insert_only_table,
    row_record,
    rowtime_millis,
)
from sessioncluster.common.types import Row, RowKind
from sessioncluster.graph.jobgraph import JobVertex, OperatorSpec
from sessioncluster.graph.streamgraph import OperatorKind
from sessioncluster.spark.flinksql.tablestream import TableRecords, record_batch, record_columns
from sessioncluster.spark.sources import StreamingPlanError, source_frame


def test_a_row_record_has_the_column_names_and_its_kind() -> None:
    record = row_record(("a", 2), ["word", "c"], "-U")
    assert record.word == "a" and record.c == 2
    assert record.get_row_kind() is RowKind.UPDATE_BEFORE
    expected = Row(word="a", c=2)
    assert record != expected  # a Row's kind is part of it, as in PyFlink
    expected.set_row_kind(RowKind.UPDATE_BEFORE)
    assert record == expected


def test_rowtime_as_epoch_milliseconds() -> None:
    assert rowtime_millis(None) is None
    assert rowtime_millis(datetime.datetime(1970, 1, 1, 0, 0, 12, 345678)) == 12345
    utc = datetime.datetime(2026, 1, 1, 0, 0, 1, 500999, tzinfo=datetime.timezone.utc)
    assert rowtime_millis(utc) == 1767225601500
    later = datetime.timezone(datetime.timedelta(hours=2))
    assert rowtime_millis(datetime.datetime(1970, 1, 1, 2, 0, 1, tzinfo=later)) == 1000


def test_changes_as_record_columns_stamped_with_the_rowtime() -> None:
    ts = datetime.datetime(1970, 1, 1, 0, 0, 3)
    columns = record_columns([("+I", ("a", ts)), ("-D", ("b", None))], ["word", "ts"], "ts")
    assert columns["out"] == [0, 0] and columns["k"] == [None, None]
    assert columns["ts"] == [3000, None]
    records = [pickle.loads(v) for v in columns["v"]]
    assert [(r.word, r.get_row_kind()) for r in records] == [("a", RowKind.INSERT),
                                                            ("b", RowKind.DELETE)]
    assert record_columns([("+I", ("a",))], ["word"], None)["ts"] == [None]


def test_record_batch_has_the_record_schema() -> None:
    batch = record_batch(record_columns([("+I", ("a", 1))], ["word", "n"], None))
    assert batch.schema.names == ["out", "k", "ts", "v"]
    assert [str(t) for t in batch.schema.types] == ["int32", "binary", "int64", "binary"]


def test_table_records_of_arrow_batches_insert_only_or_with_their_kinds() -> None:
    rows = pa.RecordBatch.from_pydict({"word": ["a", "b"], "n": [1, 2]})
    out = list(TableRecords(["word", "n"], None, False)(iter([rows])))
    records = [pickle.loads(v) for v in out[0].column("v").to_pylist()]
    assert [(r.word, r.n, str(r.get_row_kind())) for r in records] == [("a", 1, "+I"),
                                                                      ("b", 2, "+I")]
    kinds = pa.RecordBatch.from_pydict({"word": ["a", "a"], "n": [1, 2], "__kind": ["-U", "+U"]})
    out = list(TableRecords(["word", "n"], None, True)(iter([kinds])))
    records = [pickle.loads(v) for v in out[0].column("v").to_pylist()]
    assert [(tuple(r), str(r.get_row_kind())) for r in records] == [(("a", 1), "-U"),
                                                                   (("a", 2), "+U")]


def test_an_updating_table_is_refused_with_flinks_message() -> None:
    insert_only_table(None)  # insert-only: nothing to refuse
    with pytest.raises(ValueError, match=r"Table sink '\*anonymous_datastream_sink\$1\*' doesn't "
                                         r"support consuming update changes which is produced "
                                         r"by node GroupAggregate\(groupBy=\[w\]"):
        insert_only_table("GroupAggregate(groupBy=[w], select=[w, COUNT(*) AS c])")


def test_a_table_source_needs_the_sql_planner(tmp_path: Path) -> None:
    vertex = JobVertex("v0", "Source: Table", [OperatorSpec(0, OperatorKind.SOURCE_TABLE,
                                                                "Source: Table")], 1)
    with pytest.raises(StreamingPlanError, match="Table's query"):
        source_frame(None, vertex, lambda keys: {}, tmp_path)
    assert source_frame(None, vertex, lambda keys: {}, tmp_path,
                        lambda v: f"frame of {v.name}") == ("frame of Source: Table", "records")


TVF = ("SELECT window_start, window_end, window_time, COUNT(*) AS c FROM TABLE(TUMBLE(TABLE t, "
       "DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end, window_time")


def test_a_window_tvfs_result_has_window_time_as_its_rowtime_in_batch() -> None:
    """Flink: window_time is the time attribute of a window TVF's result; the probe of a BATCH
    Table tells it without planning the query (the Table's rows are read to their end)."""
    from sessioncluster.api.table.conversion import WINDOW_TIME
    from sessioncluster.spark.flinksql.tablestream import probe, window_aggregation

    assert probe(None, TVF, {}, "BATCH").rows == [(True, False, WINDOW_TIME)]
    assert probe(None, "SELECT word, ts FROM t", {}, "BATCH").rows == [(True, False, "")]
    assert window_aggregation(TVF)
    assert not window_aggregation("SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), "
                                  "INTERVAL '10' SECOND))")
    assert not window_aggregation("SELECT word, COUNT(*) FROM t GROUP BY word")


def test_the_rowtime_of_a_window_tvfs_result_is_the_output_column_of_window_time() -> None:
    """Flink 2.3's resolved schema (STREAMING) marks *ROWTIME* the column that is window_time,
    aliased, through a subquery, plus an INTERVAL; none when window_time is not selected."""
    from sessioncluster.spark.flinksql.tablestream import window_rowtime

    def rowtime(sql: str) -> str | None:
        from sessioncluster.spark.flinksql.statements import parse_statements

        (statement,) = parse_statements(sql)
        return window_rowtime(statement.ast)  # type: ignore[attr-defined]

    window = "TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND))"
    group = "GROUP BY window_start, window_end, window_time"
    assert rowtime(TVF) == "window_time"
    assert rowtime(f"SELECT window_start, window_time AS wt, COUNT(*) AS c FROM {window} "
                   f"{group}") == "wt"
    assert rowtime(f"SELECT window_start, COUNT(*) AS c FROM {window} "
                   "GROUP BY window_start, window_end") is None
    assert rowtime(f"SELECT wt, c FROM (SELECT window_time AS wt, COUNT(*) AS c FROM {window} "
                   f"{group})") == "wt"
    assert rowtime(f"SELECT window_time + INTERVAL '1' SECOND AS x, COUNT(*) AS c FROM "
                   f"{window} {group}") == "x"
    assert rowtime("SELECT word, ts FROM t") is None


def test_a_bounded_tables_records_get_their_rowtime_as_timestamps() -> None:
    from sessioncluster.api.table.conversion import rowtime_strategy

    strategy = rowtime_strategy(2)
    end = datetime.datetime(1970, 1, 1, 0, 0, 20)
    record = row_record((end - datetime.timedelta(seconds=10), end,
                         end - datetime.timedelta(milliseconds=1), 3),
                        ["window_start", "window_end", "window_time", "c"])
    assert strategy.timestamp_assigner.extract_timestamp(record, -1) == 19_999
    assert strategy.max_out_of_orderness == 0
