"""MATCH_RECOGNIZE's DEFINE calling ``TIMESTAMPADD`` by MONTH, QUARTER, YEAR and WEEK, ``[NOT]
LIKE [ESCAPE]`` and ``[NOT] SIMILAR TO``, against the rows real Flink 2.3 gave for the same
queries (parallelism 1, a filesystem CSV table with a TIMESTAMP(3) rowtime and a watermark;
BATCH and STREAMING printed the same rows: /work/briefs/data/matchrec3/probe_define.py and
.out), and what it refuses as Flink does; the measures' month arithmetic by Spark."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
import sqlglot
from sqlglot import exp

from sessioncluster.spark.flinksql.dialect import Flink
from sessioncluster.spark.flinksql.executor import FlinkSqlPlanner
from sessioncluster.spark.flinksql.matchexpr import compile_condition
from sessioncluster.spark.flinksql.matchrecognize import partition_matches, read_plan
from sessioncluster.spark.flinksql.model import FlinkSqlError
from sessioncluster.spark.flinksql.sqlfunctions import add_months, like_regex

#: id, name, ts (its DATE is d); month ends, Feb 29 of 2024, names with LIKE's and regular
#: expressions' operators
EVENTS = [(1, "alpha", "2024-01-31 10:00:00"), (2, "Beta", "2024-02-29 10:00:00"),
          (3, "al_pha", "2024-03-31 10:00:00"), (4, "a%z", "2024-05-31 10:00:00"),
          (5, "ALPHA", "2024-06-30 10:00:00"), (6, "a.c", "2024-08-31 10:00:00"),
          (7, "", "2024-11-30 10:00:00"), (8, "bxa", "2024-12-31 23:59:59"),
          (9, "b", "2025-02-28 10:00:00"), (10, "", "2025-03-31 10:00:00")]


def rows() -> list[dict[str, Any]]:
    out = []
    for i, name, ts in EVENTS:
        at = datetime.datetime.fromisoformat(ts)
        out.append({"id": i, "name": name, "ts": at, "d": at.date()})
    return out


def query(measures: str, pattern: str, define: str) -> str:
    return (f"SELECT * FROM ev MATCH_RECOGNIZE (ORDER BY ts MEASURES {measures} ONE ROW PER "
            f"MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN ({pattern}) DEFINE {define}) AS T")


def one(define: str) -> str:
    return query("A.id AS aid", "A", f"A AS {define}")


def two(define: str) -> str:
    return query("A.id AS aid, B.id AS bid", "A B", f"B AS {define}")


#: Flink 2.3's rows, the ids of each match in its order
RECORDED = {
    "month_eq": (two("B.ts = TIMESTAMPADD(MONTH, 1, A.ts)"), ["1 2", "4 5"]),
    "month_le": (two("B.ts <= TIMESTAMPADD(MONTH, 2, A.ts)"),
                 ["1 2", "2 3", "3 4", "4 5", "7 8", "8 9", "9 10"]),
    "month_neg": (two("TIMESTAMPADD(MONTH, -1, B.ts) = A.ts"), ["2 3", "9 10"]),
    "year": (one("TIMESTAMPADD(YEAR, 1, A.ts) = TIMESTAMP '2025-02-28 10:00:00'"), ["2"]),
    "quarter": (one("TIMESTAMPADD(QUARTER, 1, A.ts) < TIMESTAMP '2024-07-01 00:00:00'"),
                ["1", "2", "3"]),
    "quarter_eq": (one("TIMESTAMPADD(QUARTER, 1, A.ts) = TIMESTAMP '2025-02-28 10:00:00'"),
                   ["7"]),
    "week": (two("B.ts > TIMESTAMPADD(WEEK, 8, A.ts)"), ["3 4", "5 6", "6 7", "8 9"]),
    "date_month": (one("TIMESTAMPADD(MONTH, 1, A.d) = DATE '2024-02-29'"), ["1"]),
    "like": (one("A.name LIKE 'a%'"), ["1", "3", "4", "6"]),
    "like_underscore": (one("A.name LIKE '_l%'"), ["1", "3"]),
    "not_like": (one("A.name NOT LIKE 'a%'"), ["2", "5", "7", "8", "9", "10"]),
    "like_dot": (one("A.name LIKE 'a.c'"), ["6"]),
    "like_escape": (one("A.name LIKE 'a!%%' ESCAPE '!'"), ["4"]),
    "like_escape_us": (one("A.name LIKE '%!_%' ESCAPE '!'"), ["3"]),
    "like_empty": (one("A.name LIKE ''"), ["7", "10"]),
    "like_case": (one("A.name LIKE 'ALP%'"), ["5"]),
    "not_like_null": (one("NOT (A.name LIKE 'zz%')"), [str(i) for i in range(1, 11)]),
    "like_two_vars": (two("B.name LIKE A.name || '%'"), ["7 8"]),
    "like_percent_mid": (one("A.name LIKE '%a'"), ["1", "2", "3", "8"]),
    "similar": (one("A.name SIMILAR TO '(a|b)%'"), ["1", "3", "4", "6", "8", "9"]),
    "not_similar": (one("A.name NOT SIMILAR TO '(a|b)%'"), ["2", "5", "7", "10"]),
    "similar_class": (one("A.name SIMILAR TO '[a-c]_*'"), ["1", "3", "4", "6", "8", "9"]),
}


def matched(sql: str) -> list[str]:
    node = sqlglot.parse_one(sql, dialect=Flink()).find(exp.MatchRecognize)
    assert node is not None
    plan = read_plan(node)
    return [" ".join(str(compile_condition(e)(atoms)) for _, e in plan.measures)
            for _, atoms in partition_matches(plan, rows())]


@pytest.mark.parametrize("name", list(RECORDED))
def test_define_matches_as_flinks(name: str) -> None:
    sql, expected = RECORDED[name]
    assert matched(sql) == expected


def test_a_like_pattern_refused_as_flink_refuses_it() -> None:
    with pytest.raises(FlinkSqlError, match="^Invalid escape sequence 'a!x', 1$"):
        matched(one("A.name LIKE 'a!x' ESCAPE '!'"))
    with pytest.raises(FlinkSqlError, match="Invalid escape sequence 'ab!', 2"):
        like_regex("ab!", "!")


def test_months_added_as_flink_adds_them() -> None:
    jan31 = datetime.datetime(2024, 1, 31, 10)
    assert add_months(jan31, 1) == datetime.datetime(2024, 2, 29, 10)
    assert add_months(jan31, 13) == datetime.datetime(2025, 2, 28, 10)
    assert add_months(jan31, -2) == datetime.datetime(2023, 11, 30, 10)
    assert add_months(datetime.date(2024, 3, 31), -1) == datetime.date(2024, 2, 29)


#: Flink 2.3's measures of TIMESTAMPADD: MONTH 1 and -1, YEAR 1, QUARTER 1, WEEK 2 of ts (rows
#: 1, 3, 7 and 8 of probe_define.out's "arith"; its MONTH 1 of the DATE d is a DATE there, a
#: TIMESTAMP in Spark's measures here)
ARITH = {
    "1": ("2024-02-29 10:00:00", "2023-12-31 10:00:00", "2025-01-31 10:00:00",
          "2024-04-30 10:00:00", "2024-02-14 10:00:00"),
    "3": ("2024-04-30 10:00:00", "2024-02-29 10:00:00", "2025-03-31 10:00:00",
          "2024-06-30 10:00:00", "2024-04-14 10:00:00"),
    "7": ("2024-12-30 10:00:00", "2024-10-30 10:00:00", "2025-11-30 10:00:00",
          "2025-02-28 10:00:00", "2024-12-14 10:00:00"),
    "8": ("2025-01-31 23:59:59", "2024-11-30 23:59:59", "2025-12-31 23:59:59",
          "2025-03-31 23:59:59", "2025-01-14 23:59:59"),
}


def test_measures_add_months_as_flink(local_spark: Any, tmp_path: Path) -> None:
    """The measures (Spark's) and DEFINE (Python's) agree with Flink on month arithmetic."""
    (tmp_path / "ev.csv").write_text("".join(f"{i},{n},{ts},{ts[:10]}\n" for i, n, ts in EVENTS))
    planner = FlinkSqlPlanner(local_spark)
    planner.plan(f"""CREATE TABLE ev (id INT, name STRING, ts TIMESTAMP(3), d DATE,
                       WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
                     WITH ('connector' = 'filesystem', 'path' = '{tmp_path / "ev.csv"}',
                           'format' = 'csv')""")
    outcome = planner.plan(query(
        "A.id AS aid, TIMESTAMPADD(MONTH, 1, A.ts) AS m1, TIMESTAMPADD(MONTH, -1, A.ts) AS mm1, "
        "TIMESTAMPADD(YEAR, 1, A.ts) AS y1, TIMESTAMPADD(QUARTER, 1, A.ts) AS q1, "
        "TIMESTAMPADD(WEEK, 2, A.ts) AS w2", "A",
        "A AS A.name LIKE 'al%' OR A.id IN (7, 8)"))
    assert outcome.job is not None
    found = {str(r[0]): tuple(str(v) for v in r[1:]) for r in outcome.job.run().collect()}
    assert found == ARITH


#: Flink 2.3's LIKE without ESCAPE over names with a backslash: it is no escape character
#: (probe_like_backslash.py and .out; the same in DEFINE and in a WHERE)
BACKSLASH_NAMES = ["a%z", "a\\%z", "a\\xz", "a_z", "a\\_z", "abz", "a\\z", "x\\"]
BACKSLASH = {"a\\%z": [2, 3, 5, 7], "a\\_z": [2, 3, 5], "a\\\\z": [], "a\\%%": [2, 3, 5, 7],
             "%\\": [8], "a\\%_": [2, 3, 5, 7], "a\\xz": [3], "%\\_%": [2, 3, 5, 7]}


@pytest.mark.parametrize("pattern", list(BACKSLASH))
def test_a_backslash_is_no_escape_without_escape(pattern: str) -> None:
    assert [i for i, name in enumerate(BACKSLASH_NAMES, 1)
            if like_regex(pattern).fullmatch(name)] == BACKSLASH[pattern]
