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


class _State:
    """A ValueState of one key (the keyed runtime's, here a field)."""

    def __init__(self) -> None:
        self.held = None

    def value(self):
        return self.held

    def update(self, value) -> None:
        self.held = value

    def clear(self) -> None:
        self.held = None


# probe c2's upsert changelog, three files (/work/briefs/data/cstream/probe.out)
_UPSERT_FILES = [[(RowKind.INSERT, "Alice", 12), (RowKind.INSERT, "Bob", 5)],
                 [(RowKind.UPDATE_AFTER, "Alice", 100), (RowKind.DELETE, "Bob", 5)],
                 [(RowKind.INSERT, "Carol", 7), (RowKind.UPDATE_AFTER, "Carol", 8),
                  (RowKind.UPDATE_AFTER, "Carol", 8)]]


def _normalized_by_key(numbered: list) -> list[Row]:
    """The numbered records through the keyed normalize, one key after another (as a
    micro-batch's keys are processed: not in the records' order)."""
    from sessioncluster.api.table.changelog_mode import UpsertNormalize

    key = UpsertKey([0], numbered=True)
    out: list[Row] = []
    for k in sorted({key(r) for r in numbered}, reverse=True):
        normalize, state = UpsertNormalize([0], numbered=True), _State()
        normalize.state = state
        out += [row for r in numbered if key(r) == k
                for row in normalize.process_element(r, None)]
    return out


def test_upsert_records_numbered_before_the_normalize_keep_their_order() -> None:
    """Numbered as they come (NumberRecords), regrouped by key by the normalize, the changes
    carry the record's number and their place (-U 0, +U 1): in that order they are the
    bounded normalization of the records in their order (Flink's p=1 order, probe c)."""
    from sessioncluster.api.table.changelog_mode import NumberRecords

    number = NumberRecords()
    records = [Row.of_kind(k, n, s) for batch in _UPSERT_FILES for k, n, s in batch]
    numbered = [number(r) for r in records]
    assert [n for n, _ in numbered] == list(range(numbered[0][0], numbered[0][0] + len(records)))
    changes = _normalized_by_key(numbered)
    assert [r[0] for r in changes] != [r[0] for r in changelog_records(records, _upsert(), [0])]
    in_order = sorted(changes, key=lambda r: (r[2], r[3]))
    assert [(str(r.get_row_kind()), r[0], r[1], r[3]) for r in in_order] == [
        ("+I", "Alice", 12, 0), ("+I", "Bob", 5, 0), ("-U", "Alice", 12, 0),
        ("+U", "Alice", 100, 1), ("-D", "Bob", 5, 0), ("+I", "Carol", 7, 0),
        ("-U", "Carol", 7, 0), ("+U", "Carol", 8, 1)]
    assert kinds([Row.of_kind(r.get_row_kind(), r[0], r[1]) for r in in_order]) == \
        kinds(changelog_records(records, _upsert(), [0]))


def test_a_global_sum_over_the_numbered_upsert_changes_is_flinks() -> None:
    """Probe c2: SUM(score), COUNT(*) over the upsert changelog, applied record by record in
    the records' numbered order."""
    from sessioncluster.api.table.changelog_mode import NumberRecords

    number = NumberRecords()
    records = [Row.of_kind(k, n, s) for batch in _UPSERT_FILES for k, n, s in batch]
    in_order = sorted(_normalized_by_key([number(r) for r in records]),
                      key=lambda r: (r[2], r[3]))
    functions = [BuiltinAggregate("SUM"), BuiltinAggregate("COUNT")]
    state, emitted = None, []
    for row in in_order:
        state, changes = aggregate_changes(functions, [1, 0], state, [(row[1],)],
                                           [row.get_row_kind().short_string()])
        emitted += [(kind, *values) for kind, values in changes]
    assert emitted == [
        ("+I", 12, 1), ("-U", 12, 1), ("+U", 17, 2),
        ("-U", 17, 2), ("+U", 5, 1), ("-U", 5, 1), ("+U", 105, 2), ("-U", 105, 2),
        ("+U", 100, 1),
        ("-U", 100, 1), ("+U", 107, 2), ("-U", 107, 2), ("+U", 100, 1), ("-U", 100, 1),
        ("+U", 108, 2)]


def test_record_columns_read_a_numbered_record_s_position(local_spark) -> None:
    """An upsert changelog's record (numbered by its normalize) gives its own position and
    sub-position; another changelog's records are numbered as they come, sub-position 0."""
    import pickle

    import pyarrow as pa
    from pyspark.sql.types import DataType

    from sessioncluster.spark.flinksql.connectors.datastream import RecordColumns

    schema = DataType.fromDDL("name STRING, score INT, ts BIGINT, kind STRING, seq BIGINT, "
                              "sub BIGINT")
    numbered = Row.of_kind(RowKind.UPDATE_AFTER, "Alice", 100, 41, 1)
    batch = pa.RecordBatch.from_pydict({"v": [pickle.dumps(numbered)], "ts": [7]})
    out = next(RecordColumns(2, schema, True, numbered=True)(iter([batch]))).to_pylist()
    assert out == [{"name": "Alice", "score": 100, "ts": 7, "kind": "+U", "seq": 41, "sub": 1}]
    plain = [Row.of_kind(RowKind.INSERT, "Bob", 5), Row.of_kind(RowKind.DELETE, "Bob", 5)]
    batch = pa.RecordBatch.from_pydict({"v": [pickle.dumps(r) for r in plain], "ts": [1, 2]})
    rows = next(RecordColumns(2, schema, True)(iter([batch]))).to_pylist()
    assert [(r["kind"], r["sub"]) for r in rows] == [("+I", 0), ("-D", 0)]
    assert rows[1]["seq"] == rows[0]["seq"] + 1


def test_an_insert_of_it_into_an_append_only_sink_is_refused_as_flink_does() -> None:
    """Flink 2.3 (/work/briefs/data/cstream2/probe.out, probe2.out): a csv or json filesystem
    sink refuses the changelog table, naming its scan (under a projection too); a
    canal-json/debezium-json one, print and blackhole take it."""
    from sessioncluster.api.table.conversion import CHANGELOG_ALL, CHANGELOG_OPTION
    from sessioncluster.spark.flinksql.model import CatalogTable, Column
    from sessioncluster.spark.flinksql.streamchangelog import append_only_refusal

    columns = [Column("name", "STRING"), Column("score", "INT")]
    changelog = CatalogTable("__flink_changelog_0123456789ab", columns,
                             {"connector": "datastream", CHANGELOG_OPTION: CHANGELOG_ALL})
    plain = CatalogTable("plain", columns, {"connector": "datastream"})

    def sink(**options: str) -> CatalogTable:
        return CatalogTable("sink", columns, options)

    csv = sink(connector="filesystem", path="/tmp/x", format="csv")
    assert append_only_refusal(csv, [plain, changelog]) == (
        "Table sink 'default_catalog.default_database.sink' doesn't support consuming update "
        "and delete changes which is produced by node TableSourceScan(table=[["
        "*anonymous_datastream_source$1*]], fields=[name, score])")
    assert append_only_refusal(sink(connector="filesystem", path="/x", format="json"),
                               [changelog]) is not None
    assert append_only_refusal(csv, [plain]) is None
    for taking in (sink(connector="filesystem", path="/x", format="canal-json"),
                   sink(connector="filesystem", path="/x", format="debezium-json"),
                   sink(connector="print"), sink(connector="blackhole")):
        assert append_only_refusal(taking, [changelog]) is None


def test_insert_only_mode_fails_at_a_record_of_another_kind_with_flinks_message() -> None:
    """Probe (d) (/work/briefs/data/cstream2/probe-d.out): the job fails at the first record
    that is not an insertion, its RowKind's name in Flink's message."""
    import pytest

    from sessioncluster.client.table_environment import _InsertOnly

    check = _InsertOnly()
    assert check.map(Row.of_kind(RowKind.INSERT, "Alice", 12)) == Row("Alice", 12)
    with pytest.raises(RuntimeError) as failure:
        check.map(Row.of_kind(RowKind.UPDATE_BEFORE, "Alice", 12))
    assert str(failure.value) == ("Error during input conversion. Conversion expects "
                                  "insert-only records but DataStream API record contains: "
                                  "UPDATE_BEFORE")
