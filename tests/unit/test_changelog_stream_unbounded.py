"""The pure parts of an unbounded from_changelog_stream: a record's values with its RowKind,
the upsert normalization one record at a time, and a built-in group aggregation's changes
emitted per record (Flink's GroupAggFunction; /work/briefs/data/cstream/probe.out, b, b2)."""

from __future__ import annotations

from sessioncluster.api.table.changelog_mode import UpsertKey, changelog_records, upsert_change
from sessioncluster.api.table.conversion import changelog_record_values
from sessioncluster.common.types import Row, RowKind
from sessioncluster.spark.flinksql.builtinaggregates import BuiltinAggregate
from sessioncluster.spark.flinksql.udf_runners import aggregate_changes


def kinds(rows: list[Row]) -> list[tuple]:
    return [(str(r.get_row_kind()), *r) for r in rows]


def test_a_changelog_record_keeps_its_kind() -> None:
    assert changelog_record_values(Row.of_kind(RowKind.DELETE, "Bob", 5), 2) == (("Bob", 5), "-D")
    assert changelog_record_values(("a", 1), 2) == (("a", 1), "+I")


def test_upsert_change_one_record_at_a_time_is_the_bounded_normalization() -> None:
    records = [Row.of_kind(k, n, s) for k, n, s in [
        (RowKind.INSERT, "Carol", 7), (RowKind.UPDATE_AFTER, "Carol", 8),
        (RowKind.UPDATE_AFTER, "Carol", 8), (RowKind.DELETE, "Carol", 8),
        (RowKind.DELETE, "Dan", 1)]]
    last: dict = {}
    one_by_one = [r for record in records for r in upsert_change(record, [0], last)]
    assert kinds(one_by_one) == [("+I", "Carol", 7), ("-U", "Carol", 7), ("+U", "Carol", 8),
                                 ("-D", "Carol", 8)]
    assert kinds(one_by_one) == kinds(changelog_records(records, _upsert(), [0]))
    assert last == {} and UpsertKey([1])(("x", 3)) == (3,)


def _upsert():
    from sessioncluster.api.table.changelog_mode import ChangelogMode
    return ChangelogMode.upsert()


def test_a_key_retracted_to_nothing_is_deleted_then_inserted_per_record() -> None:
    # Flink's GROUP BY name SUM: -U Alice 12, +U Alice 100 gives -D then +I (probe b)
    sums = [BuiltinAggregate("SUM")]
    state, first = aggregate_changes(sums, [1], None, [(12,)], ["+I"])
    assert first == [("+I", [12])]
    state, gone = aggregate_changes(sums, [1], state, [(12,)], ["-U"])
    assert (state, gone) == (None, [("-D", [12])])
    state, back = aggregate_changes(sums, [1], state, [(100,)], ["+U"])
    assert back == [("+I", [100])]


def test_an_aggregation_over_an_upsert_changelog_stream_is_refused_by_name() -> None:
    """Its records are normalized per key before the table (in another order than they
    came), so an aggregation over them would not give Flink's changes: refused; a projection
    of them runs, and so does an aggregation over a changelog of all kinds."""
    import re

    import pytest

    from sessioncluster.api.table.conversion import CHANGELOG_OPTION, CHANGELOG_UPSERT
    from sessioncluster.spark.flinksql.model import CatalogTable, Column, FlinkSqlError
    from sessioncluster.spark.flinksql.statements import Query, parse_statements
    from sessioncluster.spark.flinksql.streamchangelog import UPSERT_REFUSAL, plan_changelog_stream

    name = "__flink_changelog_0123456789ab"
    table = CatalogTable(name, [Column("name", "STRING"), Column("score", "INT")],
                         {"connector": "datastream", CHANGELOG_OPTION: CHANGELOG_UPSERT})
    statement = parse_statements(f"SELECT SUM(score) FROM {name}")[0]
    assert isinstance(statement, Query)
    with pytest.raises(FlinkSqlError, match=re.escape(UPSERT_REFUSAL)):
        plan_changelog_stream(None, statement.ast, {name: table}, None)
