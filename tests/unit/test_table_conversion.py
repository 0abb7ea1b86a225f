"""The pure parts of PyFlink's DataStream <-> Table conversions: the columns Flink derives from
a DataStream's records, the projection of from_data_stream's fields or Schema, and a Table's
rows as a DataStream's records; the table of an unbounded DataStream (its columns from the
output type or a Schema, its CREATE TABLE, its records as rows)."""

from __future__ import annotations

import pytest

from sessioncluster.api.table.conversion import (
    as_records,
    datastream_table_sql,
    insert_only,
    projection,
    record_values,
    rowtime_column,
    rowtime_value,
    stream_column_names,
    stream_rows,
    type_columns,
    unbounded_columns,
    unbounded_watermark,
)
from sessioncluster.api.table.descriptor import Schema
from sessioncluster.api.table.expressions import col
from sessioncluster.common.typeinfo import Types
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
    # Flink 2.3: a Schema that declares physical columns keeps those only, in its order
    # (print_schema of this one over a stream of (name, score): `score` DOUBLE, `twice`)
    assert projection(["name", "score"], [schema]) == \
        ["CAST(`score` AS DOUBLE) AS `score`", "score * 2 AS `twice`"]
    computed = Schema.new_builder().column_by_expression("twice", "score * 2").build()
    assert projection(["name", "score"], [computed]) == ["`name`", "`score`", "score * 2 AS `twice`"]
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


def test_columns_of_an_unbounded_stream_from_its_output_type() -> None:
    named = Types.ROW_NAMED(["word", "n", "avg"], [Types.STRING(), Types.LONG(), Types.DOUBLE()])
    assert type_columns(named) == [("word", "STRING"), ("n", "BIGINT"), ("avg", "DOUBLE")]
    assert type_columns(Types.TUPLE([Types.STRING(), Types.INT()])) == [("f0", "STRING"),
                                                                        ("f1", "INT")]
    assert type_columns(Types.STRING()) == [("f0", "STRING")]
    with pytest.raises(ValueError, match="declare the column in a Schema"):
        type_columns(Types.PICKLED_BYTE_ARRAY())


def test_columns_of_an_unbounded_stream_from_a_schema_or_failing_clearly() -> None:
    named = Types.ROW_NAMED(["word", "n"], [Types.STRING(), Types.INT()])
    retyped = Schema.new_builder().column("n", "BIGINT").build()
    assert unbounded_columns(retyped, named) == [("word", "STRING"), ("n", "BIGINT")]
    declared = Schema.new_builder().column("word", "STRING").build()
    assert unbounded_columns(declared, None) == [("word", "STRING")]
    with pytest.raises(ValueError, match="Unable to find a field named 'x'"):
        unbounded_columns(Schema.new_builder().column("x", "INT").build(), named)
    with pytest.raises(ValueError, match="output_type=Types.ROW_NAMED.*or a Schema"):
        unbounded_columns(None, None)


def test_source_watermark_is_the_streams_bounded_out_of_orderness() -> None:
    schema = (Schema.new_builder().column_by_metadata("rowtime", "TIMESTAMP_LTZ(3)")
              .watermark("rowtime", "SOURCE_WATERMARK()").build())
    assert unbounded_watermark(schema, "rowtime", 2000) == \
        "WATERMARK FOR `rowtime` AS `rowtime` - INTERVAL '2000' MILLISECOND"
    with pytest.raises(ValueError, match="assign_timestamps_and_watermarks"):
        unbounded_watermark(schema, "rowtime", None)
    own = Schema.new_builder().watermark("ts", "ts - INTERVAL '1' SECOND").build()
    assert unbounded_watermark(own, None, None) == own.watermark
    assert unbounded_watermark(None, None, 5) is None


def test_create_table_of_an_unbounded_stream() -> None:
    sql = datastream_table_sql("t1", [("word", "STRING")], ("rowtime", "TIMESTAMP_LTZ(3)"),
                               "WATERMARK FOR `rowtime` AS `rowtime`")
    assert sql == ("CREATE TEMPORARY TABLE `t1` (`word` STRING, `rowtime` TIMESTAMP_LTZ(3), "
                   "WATERMARK FOR `rowtime` AS `rowtime`) WITH ('connector' = 'datastream', "
                   "'rowtime' = 'rowtime')")


def test_records_of_an_unbounded_stream_as_column_values() -> None:
    assert record_values(Row(word="a", n=2), 2) == ("a", 2)
    assert record_values(("a", 2), 2) == ("a", 2)
    assert record_values("a", 1) == ("a",)
    with pytest.raises(ValueError, match="has 1 fields"):
        record_values(("a",), 2)
    retraction = Row("a")
    retraction.set_row_kind(RowKind.DELETE)
    with pytest.raises(ValueError, match="insert-only"):
        record_values(retraction, 1)


def test_output_type_of_a_stream_as_declared_or_kept() -> None:
    from sessioncluster.client.environment import StreamExecutionEnvironment
    from sessioncluster.client.table_environment import output_type
    from sessioncluster.pyflink.common import Duration, WatermarkStrategy
    from sessioncluster.pyflink.datastream.connectors.file_system import FileSource, StreamFormat

    env = StreamExecutionEnvironment(None)  # type: ignore[arg-type] - builds graphs only
    source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(), "/in")
              .monitor_continuously(Duration.of_millis(200)).build())
    lines = env.from_source(source, WatermarkStrategy.no_watermarks(), "lines")
    assert output_type(lines) == Types.STRING()  # a line of text
    assert output_type(lines.filter(lambda line: bool(line))) == Types.STRING()
    assert output_type(lines.map(lambda line: line.upper())) is None  # not declared
    pairs = Types.TUPLE([Types.STRING(), Types.INT()])
    summed = lines.map(lambda w: (w, 1), output_type=pairs).key_by(lambda p: p[0]).sum(1)
    assert output_type(summed) == pairs
