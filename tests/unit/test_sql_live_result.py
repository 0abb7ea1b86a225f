"""A streaming query's live result in a cell (``jupyter/sqlresult.py``): a changelog
materialised into a table, the newest ``max_rows`` kept with a count of the dropped ones, the
append / changelog / single modes, and ``{name}`` substitution of kernel variables."""

from __future__ import annotations

import collections
import random

import pytest

from sessioncluster.jupyter.sqlresult import LiveResult, substitute
from sessioncluster.spark.flinksql.updating import changelog


def word_counts(mode: str = "table", max_rows: int = 1000) -> LiveResult:
    return LiveResult(["word", "cnt"], ["STRING", "BIGINT"], mode, max_rows)


def test_table_mode_materialises_a_changelog_keeping_each_rows_place() -> None:
    result = word_counts()
    result.apply([("+I", ("a", 1)), ("+I", ("b", 1))])
    result.apply([("-U", ("a", 1)), ("+U", ("a", 2))])
    assert result.rows() == [("a", 2), ("b", 1)]  # a updated in place, not moved last
    result.apply([("-D", ("b", 1)), ("+I", ("c", 5))])
    assert result.rows() == [("a", 2), ("c", 5)]
    assert result.frame().to_dict("list") == {"word": ["a", "c"], "cnt": [2, 5]}


def test_table_mode_equals_the_final_counts_of_a_random_changelog() -> None:
    rng = random.Random(7)
    previous: dict = {}
    result = word_counts()
    counts: collections.Counter[str] = collections.Counter()
    for _ in range(50):  # micro-batches of an updating GROUP BY, as the JobManager emits them
        batch = [rng.choice("abcdefg") for _ in range(rng.randint(1, 6))]
        counts.update(batch)
        rows = [(w, counts[w]) for w in sorted(set(batch))]
        result.apply(changelog(previous, rows, [0]))
    assert sorted(result.rows()) == sorted(counts.items())


def test_an_update_split_over_two_fetches_still_ends_right() -> None:
    result = word_counts()
    result.apply([("+I", ("a", 1)), ("+I", ("b", 1)), ("-U", ("a", 1))])
    assert result.rows() == [("b", 1)]
    result.apply([("+U", ("a", 2))])
    assert result.rows() == [("b", 1), ("a", 2)]


def test_max_rows_keeps_the_newest_and_counts_the_dropped() -> None:
    result = word_counts(max_rows=3)
    result.apply([("+I", (w, 1)) for w in "abcde"])
    assert result.rows() == [("c", 1), ("d", 1), ("e", 1)]
    assert result.dropped == 2
    assert "2 older rows dropped (--max-rows 3)" in result.summary()
    result.apply([("-U", ("a", 1)), ("+U", ("a", 2))])  # a was dropped: its update comes back
    assert result.rows() == [("d", 1), ("e", 1), ("a", 2)]
    assert result.dropped == 3
    assert "dropped" in result.html("RUNNING")


def test_changelog_mode_shows_the_last_changes_with_their_op() -> None:
    result = word_counts("changelog", max_rows=3)
    result.apply([("+I", ("a", 1)), ("+I", ("b", 1)), ("-U", ("a", 1)), ("+U", ("a", 2))])
    assert result.header() == ["op", "word", "cnt"]
    assert result.rows() == [("+I", "b", 1), ("-U", "a", 1), ("+U", "a", 2)]
    assert result.dropped == 1
    assert result.cells()[0] == ["+I", "b", "1"]


def test_append_mode_adds_rows_and_bounds_them() -> None:
    result = LiveResult(["window_start", "n"], ["TIMESTAMP(3)", "BIGINT"], "append", 2)
    import datetime as dt

    t = dt.datetime(2026, 1, 1, 8, 0)
    result.apply([("+I", (t, 3)), ("+I", (t + dt.timedelta(seconds=10), 4))])
    result.apply([("+I", (t + dt.timedelta(seconds=20), 1))])
    assert [c for c in result.cells()] == [["2026-01-01 08:00:10.000", "4"],
                                           ["2026-01-01 08:00:20.000", "1"]]
    assert result.dropped == 1


def test_single_mode_fills_the_template_with_the_last_row() -> None:
    result = LiveResult(["total", "label"], ["BIGINT", "STRING"], "single",
                        template="<h1>{0}</h1><p>{label}</p>")
    assert result.single() == ""
    result.apply([("+I", (1, "<b>")), ("-U", (1, "<b>")), ("+U", (42, "<b>"))])
    assert result.single() == "<h1>42</h1><p>&lt;b&gt;</p>"  # values escaped
    assert "<h1>42</h1>" in result.html("FINISHED")


def test_html_escapes_values_and_text_lists_them() -> None:
    result = word_counts()
    result.apply([("+I", ("<script>", None))])
    html = result.html("RUNNING")
    assert "<script>" not in html and "&lt;script&gt;" in html and "&lt;NULL&gt;" in html
    assert result.text("CANCELED").splitlines() == ["word\tcnt", "<script>\t<NULL>",
                                                    "1 row (table mode) [CANCELED]"]


def test_unhashable_values_are_matched_by_content() -> None:
    result = LiveResult(["k", "tags"], ["STRING", "ARRAY<STRING>"])
    result.apply([("+I", ("a", ["x"])), ("-U", ("a", ["x"])), ("+U", ("a", ["x", "y"]))])
    assert result.rows() == [("a", ["x", "y"])]


def test_bad_mode_and_max_rows() -> None:
    with pytest.raises(ValueError, match="unknown result mode 'tableau'"):
        LiveResult(["a"], ["INT"], "tableau")
    with pytest.raises(ValueError, match="at least 1"):
        LiveResult(["a"], ["INT"], max_rows=0)


def test_substitute_kernel_variables() -> None:
    ns = {"table_name": "bids", "limit": 5}
    assert substitute("SELECT * FROM {table_name} LIMIT {limit}", ns) == \
        "SELECT * FROM bids LIMIT 5"
    assert substitute("SELECT '{{table_name}}', '{not a name}'", ns) == \
        "SELECT '{table_name}', '{not a name}'"
    assert substitute("SELECT MAP['{', 1]", ns) == "SELECT MAP['{', 1]"
    with pytest.raises(NameError, match="no variable 'missing'.*--no-substitute"):
        substitute("SELECT {missing}", ns)


def test_result_mode_defaults_and_append_of_an_updating_query() -> None:
    from IPython.core.error import UsageError

    from sessioncluster.jupyter.sqlcell import LiveOptions, result_mode

    assert result_mode(LiveOptions(), updating=True) == "table"
    assert result_mode(LiveOptions(), updating=False) == "append"
    assert result_mode(LiveOptions("changelog"), updating=True) == "changelog"
    with pytest.raises(UsageError, match="--mode table or --mode changelog"):
        result_mode(LiveOptions("append"), updating=True)


def test_cell_flags_become_flink_options() -> None:
    import argparse

    from IPython.core.error import UsageError

    from sessioncluster.jupyter.magics import cell_configuration

    none = {"parallelism": None, "job_name": None, "resume": False, "resume_from": None}
    args = argparse.Namespace(**{**none, "parallelism": 3, "job_name": "live counts"})
    assert cell_configuration(args) == {"parallelism.default": "3",
                                        "pipeline.name": "live counts"}
    assert cell_configuration(argparse.Namespace(**none)) == {}
    with pytest.raises(UsageError, match="at least 1"):
        cell_configuration(argparse.Namespace(**{**none, "parallelism": 0}))
    with pytest.raises(UsageError, match="not both"):
        cell_configuration(argparse.Namespace(**{**none, "resume": True, "resume_from": "x"}))


def _resume(tmp_path, **flags):
    import argparse

    from sessioncluster.jupyter.magics import SessionClusterMagics

    magics = SessionClusterMagics(None)
    args = argparse.Namespace(**{"resume": False, "resume_from": None, "savepoint_dir": None,
                                 **flags})
    return magics._resume_configuration(args, None, ("s", "", "SELECT 1"))


def test_resume_takes_the_newest_savepoint_of_the_directory(tmp_path) -> None:
    import os

    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="nothing to resume from"):  # no silent fresh start
        _resume(tmp_path, resume=True, savepoint_dir=str(tmp_path))
    with pytest.raises(UsageError, match="nothing to resume from"):
        _resume(tmp_path, resume=True)
    for i, name in enumerate(["savepoint-aaaaaa-1", "savepoint-bbbbbb-2"]):
        (tmp_path / name).mkdir()
        os.utime(tmp_path / name, (1000 + i, 1000 + i))
    (tmp_path / "other").mkdir()
    assert _resume(tmp_path, resume=True, savepoint_dir=str(tmp_path)) == {
        "execution.savepoint.path": str(tmp_path / "savepoint-bbbbbb-2")}
    assert _resume(tmp_path, resume_from=str(tmp_path / "other")) == {
        "execution.savepoint.path": str(tmp_path / "other")}
    with pytest.raises(UsageError, match="no such"):
        _resume(tmp_path, resume_from=str(tmp_path / "missing"))


def test_chart_draws_the_rows_shown_and_follows_updates() -> None:
    from sessioncluster.jupyter.sqlchart import ChartFigure, chart_data

    result = word_counts()
    bar = ChartFigure("bar", result.header(), result.types, "word", "cnt")
    result.apply([("+I", ("b", 1)), ("+I", ("a", 3))])
    bar.update(result)
    assert (bar.source.data["x"], bar.source.data["y"]) == (["b", "a"], [1.0, 3.0])
    assert list(bar.factors.factors) == ["b", "a"]
    result.apply([("-U", ("b", 1)), ("+U", ("b", 4))])
    bar.update(result)
    assert bar.source.data["y"] == [4.0, 3.0]  # the bar of b grew in place

    import datetime as dt

    t = dt.datetime(2026, 1, 1)
    windows = LiveResult(["window_start", "n"], ["TIMESTAMP(3)", "BIGINT"], "append")
    line = ChartFigure("line", windows.header(), windows.types, "window_start", "n")
    windows.apply([("+I", (t + dt.timedelta(seconds=10), 2)), ("+I", (t, None))])
    line.update(windows)
    assert line.source.data["x"] == [t, t + dt.timedelta(seconds=10)]  # sorted by x
    assert line.source.data["y"] == [0.0, 2.0]  # NULL drawn as 0
    assert chart_data(["op", "word", "cnt"], [("+I", "a", 1)], "word", "cnt", True) == \
        {"x": ["a"], "y": [1.0]}
    with pytest.raises(ValueError, match="no column 'total'.*word, cnt"):
        ChartFigure("area", result.header(), result.types, "word", "total")


def test_a_snapshot_replaces_the_table_and_the_jobs_drops_are_said() -> None:
    result = word_counts(max_rows=3)
    result.apply([("+I", ("a", 1))])
    result.replace([("b", 2), ("c", 1)])
    assert result.rows() == [("b", 2), ("c", 1)]
    result.dropped_by_job = 4
    assert "4 older rows dropped (--max-rows 3)" in result.summary()
    result.apply([("-U", ("b", 2)), ("+U", ("b", 3))])
    assert result.rows() == [("b", 3), ("c", 1)]
    with pytest.raises(ValueError, match="snapshot"):
        word_counts("changelog").replace([("a", 1)])
