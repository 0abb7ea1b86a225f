"""``from_changelog_stream`` / ``ChangelogMode`` (:mod:`sessioncluster.api.table.changelog_mode`)
and the bounded STREAMING queries over its changelog table (:mod:`.boundedchangelog`), against
what PyFlink 2.3 printed (/work/briefs/data/changelog/probe.py, probe.out: parallelism 1)."""

from __future__ import annotations

from typing import Any

import pytest

from sessioncluster.api.table.changelog_mode import (
    CHANGELOG_VIEW_PREFIX,
    ChangelogMode,
    changelog_records,
    positioned,
)
from sessioncluster.api.table.descriptor import Schema
from sessioncluster.common.types import Row, RowKind
from sessioncluster.spark.flinksql.boundedchangelog import changelog_query, ordered_changes
from sessioncluster.spark.flinksql.model import FlinkSqlError
from sessioncluster.spark.flinksql.planner import to_spark_sql
from sessioncluster.spark.flinksql.statements import Query, parse_statements
from sessioncluster.spark.flinksql.streamingquery import StreamingQuery

INS, UB, UA, D = RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE
ALL = [(INS, "Alice", 12), (INS, "Bob", 5), (UB, "Alice", 12), (UA, "Alice", 100),
       (D, "Bob", 5), (INS, "Carol", 7)]
UPSERT = [(INS, "Alice", 12), (INS, "Bob", 5), (UA, "Alice", 100), (D, "Bob", 5), (INS, "Carol", 7),
          (UA, "Carol", 8)]
VIEW = f"{CHANGELOG_VIEW_PREFIX}t"
#: the Table from_changelog_stream gives (its SQL), read as a view
TABLE = f"SELECT name, score FROM {VIEW}"


def records(kinds: list[tuple[RowKind, str, int]]) -> list[Row]:
    return [Row.of_kind(k, n, s) for k, n, s in kinds]


def kinds(rows: list[Row]) -> list[tuple[Any, ...]]:
    return [(str(r.get_row_kind()), *r) for r in rows]


def test_changelog_modes_as_flinks() -> None:
    # Flink's ChangelogMode.toString() and containsOnly(INSERT), as the probe printed them
    assert ChangelogMode.insert_only().to_string() == "[INSERT]"
    assert ChangelogMode.upsert().to_string() == "[INSERT, UPDATE_AFTER, ~DELETE]"
    assert ChangelogMode.all().to_string() == "[INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE]"
    assert [m.contains_only_inserts() for m in (ChangelogMode.insert_only(),
                                                ChangelogMode.upsert(), ChangelogMode.all())] \
        == [True, False, False]
    assert ChangelogMode.upsert().is_upsert() and not ChangelogMode.all().is_upsert()


def test_schema_names_its_primary_key() -> None:
    schema = Schema.new_builder().column("name", "STRING NOT NULL").column("score", "INT") \
        .primary_key("name").build()
    assert schema.key_columns == ["name"]
    assert Schema.new_builder().from_schema(schema).build().key_columns == ["name"]


def test_all_mode_keeps_the_records_kinds() -> None:
    assert kinds(changelog_records(records(ALL), ChangelogMode.all(), None)) == [
        ("+I", "Alice", 12), ("+I", "Bob", 5), ("-U", "Alice", 12), ("+U", "Alice", 100),
        ("-D", "Bob", 5), ("+I", "Carol", 7)]


def test_upsert_mode_is_normalized_as_flinks() -> None:
    # Flink's print of from_changelog_stream(ds, pk schema, ChangelogMode.upsert())
    assert kinds(changelog_records(records(UPSERT), ChangelogMode.upsert(), [0])) == [
        ("+I", "Alice", 12), ("+I", "Bob", 5), ("-U", "Alice", 12), ("+U", "Alice", 100),
        ("-D", "Bob", 5), ("+I", "Carol", 7), ("-U", "Carol", 7), ("+U", "Carol", 8)]
    # an unchanged row gives nothing, a delete of an unknown key nothing
    same = records([(INS, "a", 1), (UA, "a", 1), (D, "b", 2)])
    assert kinds(changelog_records(same, ChangelogMode.upsert(), [0])) == [("+I", "a", 1)]


def test_insert_only_mode_refuses_other_kinds_as_flink() -> None:
    with pytest.raises(RuntimeError, match="Error during input conversion. Conversion expects "
                       "insert-only records but DataStream API record contains: UPDATE_BEFORE"):
        changelog_records(records(ALL), ChangelogMode.insert_only(), None)


@pytest.fixture(scope="module")
def spark(local_spark: Any) -> Any:
    rows = positioned(changelog_records(records(ALL), ChangelogMode.all(), None))
    local_spark.createDataFrame(rows, ["name", "score", "__cl_seq", "__cl_sub",
                                       "__flink_rowkind"]).createOrReplaceTempView(VIEW)
    local_spark.createDataFrame([("Alice", 1)], ["name", "x"]).createOrReplaceTempView("other")
    return local_spark


def changes(spark: Any, text: str) -> list[tuple[Any, ...]]:
    statement = parse_statements(text)[0]
    assert isinstance(statement, Query)
    rewritten = changelog_query(statement.ast)
    assert rewritten is not None
    frame = ordered_changes(spark.sql(to_spark_sql(rewritten, {})))
    return [(r[-1], *r[:-1]) for r in frame.collect()]


def test_the_table_itself_is_its_changelog(spark: Any) -> None:
    assert changes(spark, TABLE) == [
        ("+I", "Alice", 12), ("+I", "Bob", 5), ("-U", "Alice", 12), ("+U", "Alice", 100),
        ("-D", "Bob", 5), ("+I", "Carol", 7)]
    assert changes(spark, f"SELECT name FROM ({TABLE}) WHERE score > 6") == [
        ("+I", "Alice"), ("-U", "Alice"), ("+U", "Alice"), ("+I", "Carol")]


def test_group_sum_applies_the_retractions_as_flink(spark: Any) -> None:
    # a key whose rows are all retracted is deleted, then inserted again
    assert changes(spark, f"SELECT name, SUM(score) AS total FROM ({TABLE}) GROUP BY name") == [
        ("+I", "Alice", 12), ("+I", "Bob", 5), ("-D", "Alice", 12), ("+I", "Alice", 100),
        ("-D", "Bob", 5), ("+I", "Carol", 7)]


def test_global_aggregate_over_a_view_of_it_as_flink(spark: Any) -> None:
    text = f"WITH ch AS ({TABLE}) SELECT SUM(score) AS total, COUNT(*) AS n FROM ch"
    assert changes(spark, text) == [
        ("+I", 12, 1), ("-U", 12, 1), ("+U", 17, 2), ("-U", 17, 2), ("+U", 5, 1), ("-U", 5, 1),
        ("+U", 105, 2), ("-U", 105, 2), ("+U", 100, 1), ("-U", 100, 1), ("+U", 107, 2)]


def test_another_shape_is_refused(spark: Any) -> None:
    join = parse_statements(f"SELECT * FROM ({TABLE}) AS c JOIN other ON c.name = other.name")[0]
    assert isinstance(join, Query)
    assert changelog_query(join.ast) is None
    with pytest.raises(FlinkSqlError, match="from_changelog_stream"):
        StreamingQuery.plan(spark, join.ast, {}, True, None)
