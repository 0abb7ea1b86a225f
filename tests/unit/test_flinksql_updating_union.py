"""A ``UNION ALL`` of an updating query with a stream or another updating query in STREAMING
over an unbounded source: each updating input fed by a query of its own, the union's records
their changes and the streams' rows ``+I``, compared with Flink 2.3's
(/work/briefs/data/setops/probe1.out: U2, U3; a.csv, b.csv are its file0, file1)."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from sessioncluster.spark.flinksql.changelogjoin import KeyRows
from sessioncluster.spark.flinksql.distinctsetops import SetOperation, set_changes, set_operation
from sessioncluster.spark.flinksql.executor import FlinkSqlPlanner
from sessioncluster.spark.flinksql.model import FlinkSqlError
from sessioncluster.spark.flinksql.statements import Query, parse_statements
from sessioncluster.spark.flinksql.updatingunion import updating_union_inputs, wrapped_union_refusal

AGG = "SELECT w, COUNT(*) AS n FROM words GROUP BY w"
FILES = ["a,1\nb,2\na,3\n", "b,4\nc,5\n"]


@pytest.fixture
def planner(local_spark: Any, tmp_path: Path) -> FlinkSqlPlanner:
    (tmp_path / "words").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "o.csv").write_text("a,1\nc,5\ne,9\n")
    p = FlinkSqlPlanner(local_spark)
    p.plan(f"""CREATE TABLE words (w STRING, v INT) WITH ('connector' = 'filesystem',
        'path' = '{tmp_path / "words"}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    p.plan(f"""CREATE TABLE other (w STRING, v INT) WITH ('connector' = 'filesystem',
        'path' = '{tmp_path / "other"}', 'format' = 'csv')""")
    return p


def _ast(text: str) -> Any:
    statement = parse_statements(text)[0]
    assert isinstance(statement, Query)
    return statement.ast


def test_a_union_all_of_an_updating_query_is_found_and_others_are_not() -> None:
    assert len(updating_union_inputs(_ast(f"{AGG} UNION ALL SELECT w, v FROM t"))) == 2
    three = f"{AGG} UNION ALL (SELECT w, v FROM t UNION ALL SELECT w, v FROM u)"
    assert len(updating_union_inputs(_ast(three))) == 3
    for text in ("SELECT w FROM t UNION ALL SELECT w FROM u", f"{AGG} UNION SELECT w, v FROM t",
                 f"SELECT * FROM ({AGG} UNION ALL SELECT w, v FROM t) WHERE n > 1"):
        assert updating_union_inputs(_ast(text)) is None


def test_a_union_all_with_a_bounded_table_reads_the_table_first(planner, tmp_path: Path) -> None:
    """Flink's U1 per file (probe1.out): the bounded table's rows before any file, then the
    aggregation's changelog (refused before: Spark unions no static table with a stream)."""
    got = _records(planner, f"{AGG} UNION ALL SELECT w, CAST(v AS BIGINT) FROM other", tmp_path,
                   ["", *SPLIT])
    assert [got[0], *_per_file(got[1:])] == [Counter(rows) for rows in [
        ["+I['a', 1]", "+I['c', 5]", "+I['e', 9]"],
        ["+I['a', 1]", "+I['b', 1]", "-U['a', 1]", "+U['a', 2]"],
        ["-U['b', 1]", "+U['b', 2]", "+I['c', 1]"], ["-U['a', 2]", "+U['a', 3]", "+I['d', 1]"]]]
    planner.plan("CREATE TABLE g (w STRING, n BIGINT) WITH ('connector' = 'datagen', "
                 "'number-of-rows' = '3')")
    with pytest.raises(FlinkSqlError, match="UNION ALL of the bounded table 'g' with an "
                                            "unbounded one is not supported"):
        planner.plan(f"{AGG} UNION ALL SELECT w, n FROM g", "STREAMING")


@pytest.mark.parametrize("text, name", [
    ("SELECT w FROM words INTERSECT SELECT w FROM other ORDER BY w", "INTERSECT"),
    ("(SELECT w FROM words EXCEPT SELECT w FROM other) INTERSECT ALL SELECT w FROM other",
     "INTERSECT ALL"),
    ("SELECT w FROM other EXCEPT (SELECT w FROM words UNION SELECT w FROM other)", "EXCEPT")])
def test_another_set_operation_over_an_unbounded_table_is_refused_by_name(
        planner, text: str, name: str) -> None:
    """Flink runs them; here a sorted set operation or one with another as an input is
    refused when planned, naming it (Spark's Structured Streaming would refuse it when it
    starts); over bounded tables it runs."""
    with pytest.raises(FlinkSqlError, match=f"^{name} over the unbounded table 'words'"):
        planner.plan(text, "STREAMING")
    bounded = planner.plan("SELECT w FROM other EXCEPT SELECT w FROM other WHERE v > 1",
                           "STREAMING").job.inserts[0]
    assert [tuple(r) for r in bounded.frame.collect()] == [  # Flink's changelog of it
        ("a", "+I"), ("c", "+I"), ("e", "+I"), ("c", "-D"), ("e", "-D")]


def _records(planner: FlinkSqlPlanner, text: str, tmp_path: Path,
             files: list[str] = FILES) -> list[Counter]:
    """The union's records after each of ``files``, as multisets (the order of the two
    inputs' records is a race in Flink too)."""
    insert = planner.plan(text, "STREAMING").job.inserts[0]
    assert insert.row_kinds and insert.operator in ("Union", "GroupAggregate", "Join")
    frame, feeds = insert.replan(tmp_path / "checkpoint", "insert-0-") \
        if insert.replan is not None else (insert.frame, [])
    name = f"union_{len(feeds)}"
    union = frame.writeStream.format("memory").queryName(name) \
        .option("checkpointLocation", str(tmp_path / "union")).start()
    running = [f.start(100, f"{name}_feed{i}") for i, f in enumerate(feeds)]
    spark, seen, out = frame.sparkSession, 0, []
    try:
        for i, text in enumerate(files):
            (tmp_path / "words" / f"f{i}.csv").write_text(text)
            for query in running:
                query.processAllAvailable()
            union.processAllAvailable()
            rows = [f"{r[-1]}{list(r)[:-1]}" for r in spark.table(name).collect()]
            out.append(Counter(rows[seen:]))
            seen = len(rows)
    finally:
        for query in [*running, union]:
            query.stop()
    return out


def test_a_union_all_of_an_updating_query_and_a_stream_is_both_changelogs(
        planner, tmp_path: Path) -> None:
    """Flink's U2 after file1 exactly; after file0 its key ``a``'s ``+I``/``-U``/``+U`` of
    one file are one ``+I[a, 2]`` here (an updating query's changes per micro-batch)."""
    got = _records(planner, f"{AGG} UNION ALL SELECT w, CAST(v AS BIGINT) FROM words", tmp_path)
    assert got == [Counter(["+I['a', 2]", "+I['b', 1]", "+I['a', 1]", "+I['b', 2]",
                            "+I['a', 3]"]),
                   Counter(["+I['b', 4]", "+I['c', 5]", "-U['b', 1]", "+U['b', 2]",
                            "+I['c', 1]"])]


def test_a_union_all_of_two_updating_queries(planner, tmp_path: Path) -> None:
    """Flink's U3 after file1 exactly (after file0, per micro-batch as above)."""
    got = _records(planner, f"{AGG} UNION ALL SELECT w, CAST(SUM(v) AS BIGINT) AS n "
                            "FROM words GROUP BY w", tmp_path)
    assert got == [Counter(["+I['a', 2]", "+I['b', 1]", "+I['a', 4]", "+I['b', 2]"]),
                   Counter(["-U['b', 1]", "+U['b', 2]", "+I['c', 1]", "-U['b', 2]",
                            "+U['b', 6]", "+I['c', 5]"])]


#: probe2's file0 in two micro-batches (``a``'s second row in the second): key ``a``'s ``-U``/``+U``
#: of file0 as Flink's, each file's records are Flink's exactly; then its file1 and file2
SPLIT = ["a,1\nb,2\n", "a,3\n", "b,4\nc,5\n", "a,6\nd,7\n"]
UNION = f"{AGG} UNION ALL SELECT w, CAST(v AS BIGINT) FROM words"


def _per_file(batches: list[Counter]) -> list[Counter]:
    """The records of :data:`SPLIT`'s micro-batches per file of Flink's probe."""
    return [batches[0] + batches[1], batches[2], batches[3]]


@pytest.mark.parametrize("stream, flink", [
    ("CAST(v AS BIGINT)", [["+U['a', 2]", "+I['b', 2]", "+I['a', 3]"],  # U13
                           ["+I['b', 4]", "+I['c', 5]", "+U['b', 2]"],
                           ["+I['a', 6]", "+I['d', 7]", "-U['a', 2]", "+U['a', 3]"]]),
    ("1", [["+U['a', 2]"], ["+U['b', 2]"], ["-U['a', 2]", "+U['a', 3]"]])])  # U13b
def test_a_filter_over_a_union_all_filters_each_record_its_kind_kept(
        planner, tmp_path: Path, stream: str, flink: list[list[str]]) -> None:
    """Flink's U13 (/work/briefs/data/setcount/U13_flink_rows.out, setops2/probe2.out) and
    U13b (the stream's ``n`` an INT literal): AGG's ``-U[a, 1]`` filtered out, its
    ``+U[a, 2]`` kept."""
    got = _records(planner, f"SELECT * FROM ({AGG} UNION ALL SELECT w, {stream} FROM words) "
                            "WHERE n > 1", tmp_path, SPLIT)
    assert _per_file(got) == [Counter(rows) for rows in flink]


def test_a_filter_and_projection_over_a_union_all(planner, tmp_path: Path) -> None:
    """Flink's U13c (setops2/probe2.out): a ``-U`` kept whose ``+U`` is filtered out."""
    got = _records(planner, f"SELECT w, n * 10 AS m FROM ({UNION}) AS u WHERE u.n < 2",
                   tmp_path, SPLIT)
    assert _per_file(got) == [Counter(["+I['a', 10]", "+I['a', 10]", "+I['b', 10]",
                                       "-U['a', 10]"]),
                              Counter(["-U['b', 10]", "+I['c', 10]"]),
                              Counter(["+I['d', 10]"])]


def test_a_projection_that_reads_not_an_aggregate_prunes_it(planner, tmp_path: Path) -> None:
    """Flink's U13d (setops2/probe2.out): AGG's ``n`` pruned into the aggregation, which then
    emits ``+I`` per new key and no update; the stream's rows ``+I`` each. A filter over one
    aggregation that reads not its aggregate prunes it too."""
    got = _records(planner, f"SELECT w FROM ({UNION})", tmp_path, SPLIT)
    assert _per_file(got) == [Counter(["+I['a']"] * 3 + ["+I['b']"] * 2),
                              Counter(["+I['b']", "+I['c']", "+I['c']"]),
                              Counter(["+I['a']", "+I['d']", "+I['d']"])]


def test_a_filter_over_an_aggregation_reading_not_its_aggregate(planner, tmp_path: Path) -> None:
    """The aggregation's ``n`` pruned: each new key ``+I`` once (Flink's GroupAggregate with no
    aggregate emits no update)."""
    got = _records(planner, f"SELECT w FROM ({AGG}) WHERE w <> 'c'", tmp_path, SPLIT)
    assert _per_file(got) == [Counter(["+I['a']", "+I['b']"]), Counter(), Counter(["+I['d']"])]


@pytest.mark.parametrize("text, message", [
    (f"SELECT w FROM ({AGG} UNION ALL SELECT n, w FROM (SELECT w, COUNT(*) AS n FROM words "
     "GROUP BY w))", "^A projection over an updating query that reads not its aggregate 'n'"),
    (f"SELECT COUNT(*) FROM ({UNION}) WHERE n > 1", "^An aggregation, join, sort or subquery "
                                                    "over a UNION ALL")])
def test_an_unprunable_projection_or_an_aggregation_over_a_union_all_is_refused_by_name(
        planner, text: str, message: str) -> None:
    """An aggregate that is one input's and not another's cannot be pruned (a per-record
    projection would emit its updates, which Flink's pruned plan does not): refused by name."""
    with pytest.raises(FlinkSqlError, match=message):
        planner.plan(text, "STREAMING")
    grouped = f"SELECT w, SUM(n) FROM ({UNION}) GROUP BY w"
    assert wrapped_union_refusal(_ast(grouped)) is None
    assert wrapped_union_refusal(_ast("SELECT * FROM (SELECT w FROM t) WHERE w > 'a'")) is None


@pytest.mark.parametrize("text, flink", [
    ("SELECT w FROM words UNION SELECT w FROM other",  # U4
     [["+I['a']", "+I['c']", "+I['e']"], ["+I['b']"], [], ["+I['d']"]]),
    (f"{AGG} UNION SELECT w, CAST(v AS BIGINT) FROM other",  # U8
     [["+I['a', 1]", "+I['c', 5]", "+I['e', 9]"], ["+I['b', 1]", "+I['a', 2]"],
      ["-D['b', 1]", "+I['b', 2]", "+I['c', 1]"], ["-D['a', 2]", "+I['a', 3]", "+I['d', 1]"]]),
    ("SELECT w FROM words EXCEPT SELECT w FROM other",  # U6
     [[], ["+I['b']"], [], ["+I['d']"]]),
    ("SELECT w FROM other EXCEPT SELECT w FROM words",  # U7
     [["+I['a']", "+I['c']", "+I['e']"], ["-D['a']"], ["-D['c']"], []])])
def test_a_union_or_except_over_an_unbounded_table_counts_each_row(
        planner, tmp_path: Path, text: str, flink: list[list[str]]) -> None:
    """Flink's U4, U8, U6, U7 per file (probe1.out; setops2/probe2.out again): the bounded
    table's rows first (before any file), then ``+I`` when a row comes into the result,
    ``-D`` when it leaves it."""
    got = _records(planner, text, tmp_path, ["", *SPLIT])
    assert [got[0], *_per_file(got[1:])] == [Counter(rows) for rows in flink]


@pytest.mark.parametrize("where, flink", [
    ("n > 1", [["+U['a', 2]"], ["+U['b', 2]"], ["-U['a', 2]", "+U['a', 3]"]]),  # S1
    ("n < 2", [["+I['a', 1]", "+I['b', 1]", "-U['a', 1]"], ["-U['b', 1]", "+I['c', 1]"],
               ["+I['d', 1]"]])])  # S3
def test_a_filter_over_a_group_aggregation_filters_each_record_its_kind_kept(
        planner, tmp_path: Path, where: str, flink: list[list[str]]) -> None:
    """Flink's S1 and S3 (setops2/probe2.out): a ``+U`` kept without its ``-U``, and a row's
    ``-U`` when its new count leaves the filter."""
    got = _records(planner, f"SELECT * FROM ({AGG}) WHERE {where}", tmp_path, SPLIT)
    assert _per_file(got) == [Counter(rows) for rows in flink]


def test_a_having_filters_each_record_of_the_aggregation(planner, tmp_path: Path) -> None:
    """Flink's S2 (setops2/probe2.out): as S1, the filter over the aggregation."""
    insert = planner.plan(f"{AGG} HAVING COUNT(*) > 1", "STREAMING").job.inserts[0]
    assert insert.frame.columns == ["w", "n", "__flink_rowkind"]
    got = _records(planner, f"{AGG} HAVING COUNT(*) > 1", tmp_path, SPLIT)
    assert _per_file(got) == [Counter(["+U['a', 2]"]), Counter(["+U['b', 2]"]),
                              Counter(["-U['a', 2]", "+U['a', 3]"])]


TABLE = "SELECT w, CAST(v AS BIGINT) FROM other"
#: Flink's inputs per file of probe1/probe3 (before any file: the bounded table ``other``)
OTHER = [("a", 1), ("c", 5), ("e", 9)]
WORDS = [[("a", 1), ("b", 2), ("a", 3)], [("b", 4), ("c", 5)], [("a", 6), ("d", 7)]]
#: AGG's changelog per file, in Flink's order
AGG_CHANGES = [[("+I", ("a", 1)), ("+I", ("b", 1)), ("-U", ("a", 1)), ("+U", ("a", 2))],
               [("-U", ("b", 1)), ("+U", ("b", 2)), ("+I", ("c", 1))],
               [("-U", ("a", 2)), ("+U", ("a", 3)), ("+I", ("d", 1))]]


def _step_records(operation: SetOperation, agg_left: bool | None) -> list[list[str]]:
    """:func:`set_changes` fed Flink's records in Flink's order, key by key: the bounded table
    ``other`` first (the right side unless ``agg_left`` is False), then per file ``words``'
    ``w`` (``agg_left`` None) or AGG's changelog; its records per file."""
    states: dict[tuple, KeyRows] = defaultdict(KeyRows)

    def fed(from_left: bool, kind: str, row: tuple) -> list[str]:
        out = set_changes(operation, states[row], [(from_left, kind, row)])
        return [f"{k}{list(r)}" for k, r in out]

    other_left = agg_left is False
    before = [r for row in OTHER
              for r in fed(other_left, "+I", row if agg_left is not None else row[:1])]
    files = [[("+I", w[:1]) for w in rows] for rows in WORDS] if agg_left is None \
        else AGG_CHANGES
    return [before, *[[r for kind, row in changes for r in fed(not other_left, kind, row)]
                      for changes in files]]


@pytest.mark.parametrize("operation, agg_left, flink", [
    (SetOperation("INTERSECT"), None, [[], ["+I['a']"], ["+I['c']"], []]),  # U5
    (SetOperation("INTERSECT", unique_left=True), True,  # U9: a -U with no +U
     [[], ["+I['a', 1]", "-U['a', 1]"], [], []]),
    (SetOperation("INTERSECT"), False, [[], ["+I['a', 1]", "-D['a', 1]"], [], []]),  # I1
    (SetOperation("EXCEPT", unique_left=True), True,  # E1: a +U with no -U
     [[], ["+I['b', 1]", "+U['a', 2]"], ["-U['b', 1]", "+U['b', 2]", "+I['c', 1]"],
      ["-U['a', 2]", "+U['a', 3]", "+I['d', 1]"]]),
    (SetOperation("EXCEPT"), False,  # E2
     [["+I['a', 1]", "+I['c', 5]", "+I['e', 9]"], ["-D['a', 1]", "+I['a', 1]"], [], []]),
    (SetOperation("EXCEPT", all=True), None,  # U10
     [[], ["+I['b']", "+U['a']"], ["-U['b']", "+U['b']", "+U['b']"],
      ["-U['a']", "+U['a']", "+U['a']", "+I['d']"]]),
    (SetOperation("INTERSECT", all=True), None,  # U11
     [[], ["+U['a']", "-U['a']", "+U['a']"], ["+U['c']"], ["-U['a']", "+U['a']"]]),
    (SetOperation("EXCEPT", all=True), True,  # EA1
     [[], ["+I['b', 1]", "+I['a', 2]"], ["-D['b', 1]", "+I['b', 2]", "+I['c', 1]"],
      ["-D['a', 2]", "+I['a', 3]", "+I['d', 1]"]]),
    (SetOperation("INTERSECT", all=True), True,  # IA1
     [[], ["+U['a', 1]", "-U['a', 1]"], [], []])])
def test_the_count_per_row_gives_flinks_records_in_flinks_order(
        operation: SetOperation, agg_left: bool | None, flink: list[list[str]]) -> None:
    """Flink's U5, U9-U11 (probe1.out) and E1, E2, I1, EA1, IA1
    (/work/briefs/data/setops3/probe3.out) record by record, in Flink's order: a count per
    row of each side; a semi/anti join's records as they are when the left side's rows are
    unique; an ALL's GroupAggregate records replicated."""
    assert _step_records(operation, agg_left) == flink


def test_a_set_operations_form_and_its_left_rows_uniqueness_are_found() -> None:
    """Flink drops the GroupAggregate over the semi/anti join when the left input's rows are
    unique (probe3.out's plans of U9 and E1 but not E4)."""
    found = {text: set_operation(_ast(text)) for text in [
        f"{AGG} INTERSECT {TABLE}", f"{TABLE} EXCEPT {AGG}", f"{AGG} EXCEPT ALL {TABLE}",
        f"SELECT n FROM ({AGG}) EXCEPT {TABLE}", f"SELECT DISTINCT w FROM t EXCEPT {TABLE}",
        f"SELECT w, COUNT(*) FROM t GROUP BY w, v EXCEPT {TABLE}"]}
    assert [f[0] if f else None for f in found.values()] == [
        SetOperation("INTERSECT", unique_left=True), SetOperation("EXCEPT"),
        SetOperation("EXCEPT", all=True), SetOperation("EXCEPT"),
        SetOperation("EXCEPT", unique_left=True), SetOperation("EXCEPT")]
    assert set_operation(_ast("SELECT w FROM t UNION ALL SELECT w FROM u")) is None


@pytest.mark.parametrize("text, flink", [
    (f"{AGG} INTERSECT {TABLE}",  # U9
     [[], ["+I['a', 1]", "-U['a', 1]"], [], []]),
    (f"{TABLE} EXCEPT {AGG}",  # E2
     [["+I['a', 1]", "+I['c', 5]", "+I['e', 9]"], ["-D['a', 1]", "+I['a', 1]"], [], []]),
    ("SELECT w FROM words EXCEPT ALL SELECT w FROM other",  # U10
     [[], ["+I['b']", "+U['a']"], ["-U['b']", "+U['b']", "+U['b']"],
      ["-U['a']", "+U['a']", "+U['a']", "+I['d']"]]),
    (f"{AGG} INTERSECT ALL {TABLE}",  # IA1
     [[], ["+U['a', 1]", "-U['a', 1]"], [], []])])
def test_an_intersect_or_except_over_an_unbounded_table_is_flinks_per_file(
        planner, tmp_path: Path, text: str, flink: list[list[str]]) -> None:
    """Flink's U9, U10 (probe1.out), E2 and IA1 (/work/briefs/data/setops3/probe3.out) per
    file, run: the bounded table's rows first, an updating input fed by its changelog."""
    got = _records(planner, text, tmp_path, ["", *SPLIT])
    assert [got[0], *_per_file(got[1:])] == [Counter(rows) for rows in flink]
