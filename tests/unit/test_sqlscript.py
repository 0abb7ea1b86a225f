"""A SQL script split into statements as Flink's SQL client splits one (no parsing)."""

from __future__ import annotations

import pytest

from sessioncluster.common.sqlscript import UnclosedBlockError, split_statements


def test_semicolons_in_quotes_backticks_and_comments_do_not_split() -> None:
    script = ("CREATE TABLE t (a INT) WITH ('x' = 'a;b');  -- one; two\n"
              "SELECT `x;y`, \"q;\" FROM t /* c; */ ;\n;  ")
    assert split_statements(script) == [
        "CREATE TABLE t (a INT) WITH ('x' = 'a;b')",
        "-- one; two\nSELECT `x;y`, \"q;\" FROM t /* c; */"]


def test_statement_sets_travel_whole_in_both_forms() -> None:
    script = ("EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT CASE WHEN x THEN 1 END FROM t; "
              "INSERT INTO b SELECT 2; END; BEGIN STATEMENT SET; INSERT INTO c SELECT 3; END;"
              "SELECT 4")
    assert split_statements(script) == [
        "EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT CASE WHEN x THEN 1 END FROM t; "
        "INSERT INTO b SELECT 2; END",
        "BEGIN STATEMENT SET;\nINSERT INTO c SELECT 3;\nEND",
        "SELECT 4"]


def test_comments_only_is_no_statement_and_an_open_block_is_an_error() -> None:
    assert split_statements("-- nothing\n ; /* here; */") == []
    with pytest.raises(UnclosedBlockError):
        split_statements("EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1;")
