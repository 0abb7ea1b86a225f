"""A ``%%flink_sql`` cell's job control without Spark: ``--run-as-one`` (the cell's INSERTs as
one statement set), the JobManager's result buffer bounded to the newest ``--max-rows`` of an
append-only query (the drops counted and seen by the client as a gap), resuming from a retained
checkpoint, a restored query's current result, views read by a streaming query, and the chart's
static rendering."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from sessioncluster.client.jobclient import CloseableIterator
from sessioncluster.common.sqlscript import as_statement_set, leading_words
from sessioncluster.graph.lifecycle import JobStatus
from sessioncluster.jobmanager import savepoint
from sessioncluster.jobmanager.streamresults import JobResults, ResultBuffer
from sessioncluster.jupyter.sqlcell import retained_checkpoint
from sessioncluster.jupyter.sqlresult import LiveResult
from sessioncluster.spark.flinksql.catalog import Catalog
from sessioncluster.spark.flinksql.microbatch import ChangelogState
from sessioncluster.spark.streaming import StreamQuery


# -- --run-as-one ------------------------------------------------------------------------------
def test_leading_words_skip_comments() -> None:
    assert leading_words("-- load\n/* both */ insert into t select 1") == ["INSERT"]
    assert leading_words("CREATE TABLE t (a INT)", 2) == ["CREATE", "TABLE"]
    assert leading_words("(SELECT 1)") == []


def test_run_as_one_makes_the_inserts_one_statement_set_where_the_last_was() -> None:
    cell = ["CREATE TABLE a (x INT)", "INSERT INTO a SELECT 1", "CREATE TABLE b (x INT)",
            "-- second\nINSERT INTO b SELECT 2", "SELECT * FROM a"]
    got = as_statement_set(cell)
    assert got == ["CREATE TABLE a (x INT)", "CREATE TABLE b (x INT)",
                   "EXECUTE STATEMENT SET\nBEGIN\nINSERT INTO a SELECT 1;\n"
                   "-- second\nINSERT INTO b SELECT 2;\nEND", "SELECT * FROM a"]
    assert as_statement_set(cell[:2]) == cell[:2]  # one INSERT: a job of its own anyway


def test_run_as_one_statement_set_parses_as_one() -> None:
    from sessioncluster.spark.flinksql.statements import StatementSet, parse_statements

    block = as_statement_set(["INSERT INTO a SELECT 1", "INSERT INTO b SELECT 2"])
    statements = parse_statements(block[0])
    assert len(statements) == 1 and isinstance(statements[0], StatementSet)
    assert [i.target for i in statements[0].inserts] == ["a", "b"]


# -- the JobManager's result buffer -------------------------------------------------------------
def _values(n: int, start: int = 0) -> list[bytes]:
    return [pickle.dumps(("+I", (i,))) for i in range(start, start + n)]


def test_append_only_buffer_keeps_the_newest_max_rows_unread_and_counts_the_rest() -> None:
    buffer = ResultBuffer(max_rows=3)
    buffer.add(("q", 0), _values(2))
    got, next_seq = buffer.since(0, 100)
    assert len(got) == 2 and next_seq == 2 and buffer.dropped == 0
    buffer.add(("q", 1), _values(5, 2))  # 5 unread, 3 kept: 2 and 3 dropped
    got, next_seq = buffer.since(next_seq, 100)
    assert [pickle.loads(v)[1][0] for v in got] == [4, 5, 6] and next_seq == 7
    assert buffer.dropped == 2
    buffer.add(("q", 2), _values(3, 7))  # the read ones go first, never counted
    assert buffer.dropped == 2 and len(buffer.items) == 3


def test_updating_buffer_keeps_every_change_within_its_byte_bound() -> None:
    buffer = ResultBuffer(max_bytes=10_000)  # no max_rows: an updating query's
    buffer.add(("q", 0), _values(50))
    assert buffer.dropped == 0 and len(buffer.items) == 50
    buffer.add(("q", 1), [b"x" * 4000] * 3)
    assert buffer.size <= 10_000 and buffer.dropped > 0
    assert buffer.items[-1][0] == buffer.next_seq - 1  # the newest kept


def test_a_batch_delivered_again_is_not_added_twice() -> None:
    buffer = ResultBuffer(max_rows=10)
    assert buffer.add(("q", 0), _values(2)) and not buffer.add(("q", 0), _values(2))
    assert len(buffer.items) == 2


class _Gateway:
    """The JobManager's answer to a fetch, from a real JobResults (no socket)."""

    def __init__(self, results: JobResults) -> None:
        self.results = results

    def request(self, msg: object, _reply: object) -> object:
        return self.results.fetch(None, msg.after, 100_000, False,  # type: ignore[attr-defined]
                                  JobStatus.RUNNING, None)


class _Client:
    def __init__(self, results: JobResults) -> None:
        self.job_id, self.job_name = results.job_id, "collect"
        self.session = type("S", (), {"gateway": _Gateway(results)})()


def test_the_client_counts_what_the_job_dropped_from_the_sequence_gap() -> None:
    results = JobResults("j1")
    results.build_sinks(["sink-0"], max_rows=4)
    stream = CloseableIterator(_Client(results))  # type: ignore[arg-type]
    results.buffers["sink-0"].add(("q", 0), _values(3))
    assert [r[1][0] for r in stream.poll()] == [0, 1, 2] and stream.dropped == 0
    results.buffers["sink-0"].add(("q", 1), _values(10, 3))
    assert [r[1][0] for r in stream.poll()] == [9, 10, 11, 12] and stream.dropped == 6
    view = LiveResult(["n"], ["INT"], "append", 4)
    view.dropped_by_job = stream.dropped
    assert "6 older rows dropped (--max-rows 4)" in view.summary()


# -- resume ----------------------------------------------------------------------------------
def _checkpoint(root: Path, key: str, batches: int) -> Path:
    query = root / key
    (query / "commits").mkdir(parents=True)
    (query / "offsets").mkdir()
    for b in range(batches):
        (query / "commits" / str(b)).write_text("v1")
        (query / "offsets" / str(b)).write_text("v1")
    return query


def test_a_retained_checkpoint_is_found_and_restored_like_a_savepoint(tmp_path: Path) -> None:
    job_dir = tmp_path / "checkpoints" / "job1"
    assert retained_checkpoint(str(job_dir)) is None  # no directory
    (job_dir / "insert-0").mkdir(parents=True)
    assert retained_checkpoint(str(job_dir)) is None  # no committed micro-batch
    assert not savepoint.is_retained_checkpoint(job_dir)
    query = _checkpoint(job_dir, "insert-0", 3)
    ChangelogState(query / "changelog").save(2, {("x",): ("x", 2)})
    assert retained_checkpoint(str(job_dir)) == str(job_dir)
    target = tmp_path / "checkpoints" / "job2"
    info = savepoint.restore(job_dir, [StreamQuery("insert-0", [], None, [], [])], target, False)
    assert info.checkpoint_id == 2
    assert sorted(p.name for p in (target / "insert-0" / "commits").iterdir()) == ["0", "1", "2"]
    assert ChangelogState(target / "insert-0" / "changelog").latest() == {("x",): ("x", 2)}
    with pytest.raises(savepoint.SavepointError, match="no query of this job"):
        savepoint.restore(job_dir, [StreamQuery("other", [], None, [], [])], target, False)


def test_changelog_state_latest_is_the_current_result(tmp_path: Path) -> None:
    state = ChangelogState(tmp_path / "changelog")
    assert state.latest() == {}
    state.save(0, {("a",): ("a", 1)})
    state.save(1, {("a",): ("a", 2), ("b",): ("b", 1)})
    assert state.latest() == {("a",): ("a", 2), ("b",): ("b", 1)}


# -- views -------------------------------------------------------------------------------------
def test_view_text_resolves_a_temporary_view_before_a_permanent_one() -> None:
    catalog = Catalog()
    catalog.views["v"] = ("v", "CREATE VIEW v AS SELECT 1")
    assert catalog.view_text("V") == "CREATE VIEW v AS SELECT 1"
    catalog.temporary_views["v"] = "v"
    catalog.temporary_view_texts["v"] = "CREATE TEMPORARY VIEW v AS SELECT 2"
    assert catalog.view_text("v") == "CREATE TEMPORARY VIEW v AS SELECT 2"
    catalog.temporary_views["w"] = "w"  # a client's create_temporary_view: no SQL
    assert catalog.view_text("w") is None and catalog.view_text("t") is None


# -- the chart ---------------------------------------------------------------------------------
def test_chart_static_html_is_a_standalone_bokeh_page_of_the_final_rows() -> None:
    from sessioncluster.jupyter.sqlchart import ChartFigure

    view = LiveResult(["word", "cnt"], ["STRING", "BIGINT"], "table")
    view.apply([("+I", ("apple", 3)), ("+I", ("banana", 5))])
    chart = ChartFigure("bar", view.header(), view.types, "word", "cnt")
    chart.update(view)
    page = chart.static_html()
    assert page.startswith('<iframe class="sc-sql-chart" srcdoc="')
    assert "apple" in page and "banana" in page and "Bokeh" in page


def test_keys_of_a_projection_of_an_updating_view_are_the_views_keys() -> None:
    import sqlglot

    from sessioncluster.spark.flinksql.dialect import Flink
    from sessioncluster.spark.flinksql.updating import key_positions

    view = "WITH v AS (SELECT word, COUNT(*) AS cnt FROM t GROUP BY word) "
    for select, keys in [("SELECT word, cnt FROM v", [0]), ("SELECT cnt, word FROM v", [1]),
                         ("SELECT * FROM v", [0]), ("SELECT word, COUNT(*) FROM t GROUP BY word",
                                                    [0])]:
        query = sqlglot.parse_one((view if "FROM v" in select else "") + select, read=Flink)
        assert key_positions(query) == keys, select
