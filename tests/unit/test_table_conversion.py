"""The pure parts of PyFlink's DataStream <-> Table conversions: the columns Flink derives from
a DataStream's records, the projection of from_data_stream's fields or Schema, and a Table's
rows as a DataStream's records."""

from __future__ import annotations

import pytest

from sessioncluster.api.table.conversion import (
    as_records,
    insert_only,
    projection,
    rowtime_column,
    rowtime_value,
    stream_column_names,
    stream_rows,
)
from sessioncluster.api.table.descriptor import Schema
from sessioncluster.api.table.expressions import col
from sessioncluster.common.types import Row, RowKind


def test_column_names_as_flink_derives_them() -> None:
    assert stream_column_names([Row(name="a", score=1)]) == ["name", "score"]
    assert stream_column_names([("a", 1)]) == ["f0", "f1"]
    assert stream_column_names([Row("a", 1)]) == ["f0", "f1"]
    assert stream_column_names(["a"]) == ["f0"]
    with pytest.raises(ValueError, match="needs a Schema"):
        stream_column_names([])


def test_stream_rows_are_insert_only_tuples() -> None:
    assert stream_rows([Row(a=1, b=2), (3, 4)], ["a", "b"]) == [(1, 2), (3, 4)]
    assert stream_rows(["x"], ["f0"]) == [("x",)]
    retraction = Row(1, 2)
    retraction.set_row_kind(RowKind.UPDATE_BEFORE)
    with pytest.raises(ValueError, match="insert-only"):
        stream_rows([retraction], ["a", "b"])
    with pytest.raises(ValueError, match="has 1 fields"):
        stream_rows([(1,)], ["a", "b"])


def test_projection_of_fields_by_name_or_by_position() -> None:
    assert projection(["a", "b"], []) is None
    assert projection(["a", "b"], [col("b"), col("a").alias("x")]) == \
        ["`b`", "`a` AS `x`"]
    assert projection(["f0", "f1"], [col("word"), col("n")]) == \
        ["`f0` AS `word`", "`f1` AS `n`"]
    with pytest.raises(ValueError, match="no field 'c'"):
        projection(["a", "b"], [col("a"), col("c")])


def test_projection_of_a_schema() -> None:
    schema = (Schema.new_builder().column("score", "DOUBLE")
              .column_by_expression("twice", "score * 2").build())
    assert projection(["name", "score"], [schema]) == \
        ["`name`", "CAST(`score` AS DOUBLE) AS `score`", "score * 2 AS `twice`"]
    with pytest.raises(ValueError, match="Unable to find a field named 'other'"):
        projection(["name"], [Schema.new_builder().column("other", "INT").build()])
    watermarked = Schema.new_builder().column("score", "INT").watermark("score", "score").build()
    assert projection(["score"], [watermarked]) == ["CAST(`score` AS INT) AS `score`"]


def test_rows_as_records_keep_or_drop_their_kind() -> None:
    before = Row("a", 1)
    before.set_row_kind(RowKind.UPDATE_BEFORE)
    changelog = as_records([before], ["w", "n"], changelog=True)
    assert changelog[0].get_row_kind() is RowKind.UPDATE_BEFORE and changelog[0]["w"] == "a"
    assert as_records([before], ["w", "n"], changelog=False)[0].get_row_kind() is RowKind.INSERT
    with pytest.raises(ValueError, match="doesn't support consuming update changes"):
        insert_only([before])


def test_a_rowtime_metadata_column_takes_the_records_timestamps() -> None:
    import datetime

    schema = (Schema.new_builder().column_by_metadata("rowtime", "TIMESTAMP_LTZ(3)")
              .watermark("rowtime", "SOURCE_WATERMARK()").build())
    assert rowtime_column(schema) == "rowtime" and rowtime_column(None) is None
    assert rowtime_value(1500) == datetime.datetime(1970, 1, 1, 0, 0, 1, 500_000,
                                                    tzinfo=datetime.timezone.utc)
    assert rowtime_value(None) is None
    # the rowtime column (added after the record's fields) is cast to its declared type
    assert projection(["f0", "rowtime"], [schema]) == \
        ["`f0`", "CAST(`rowtime` AS TIMESTAMP_LTZ(3)) AS `rowtime`"]
    other = Schema.new_builder().column_by_metadata("p", "INT", "partition").build()
    with pytest.raises(ValueError, match="Invalid metadata key 'partition'"):
        rowtime_column(other)
    computed = (Schema.new_builder().column_by_expression("ts", "TO_TIMESTAMP_LTZ(f1, 3)")
                .watermark("ts", "ts - INTERVAL '1' SECOND").build())
    assert projection(["f0", "f1"], [computed]) == \
        ["`f0`", "`f1`", "TO_TIMESTAMP_LTZ(f1, 3) AS `ts`"]
