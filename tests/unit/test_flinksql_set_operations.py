"""Set operations (``UNION``, ``INTERSECT``, ``EXCEPT``, ``ALL`` too) over unbounded tables in
STREAMING whose updating input selects not its group keys, or is a global aggregation, as Flink
2.3 runs them (/work/briefs/data/setops3/probe3.out E4, E6, I2; /work/briefs/data/setops4/
probe4.out E7, U7, EA4, IA4, G1-G6): the aggregation's changelog keyed by its group keys (or
by nothing), the key columns dropped from each record (Flink's Calc, RowKind kept), then the
count per row."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp
from test_flinksql_updating_union import (  # noqa: F401 (planner: the fixture)
    AGG,
    AGG_CHANGES,
    WORDS,
    _ast,
    _records,
    planner,
)

from sessioncluster.spark.flinksql.changelogjoin import KeyRows
from sessioncluster.spark.flinksql.distinctsetops import SetOperation, set_changes, set_operation
from sessioncluster.spark.flinksql.model import FlinkSqlError

N = f"SELECT n FROM ({AGG})"
COUNT = "SELECT COUNT(*) FROM words"
V = "SELECT CAST(v AS BIGINT) FROM other"
#: ``other``'s ``v`` (read before any file)
OTHER_V = [(1,), (5,), (9,)]
#: AGG's changelog per file, its key ``w`` dropped (Flink's ``Calc(select=[n])``)
N_CHANGES = [[(kind, row[1:]) for kind, row in changes] for changes in AGG_CHANGES]


def _count_changes() -> list[list[tuple[str, tuple]]]:
    """``COUNT(*)``'s changelog per file, record by record as Flink's GroupAggregate emits
    it: ``+I[1]``, then ``-U[n]``/``+U[n+1]`` per row."""
    out, n = [], 0
    for rows in WORDS:
        out.append([])
        for _ in rows:
            out[-1] += [("+I", (1,))] if n == 0 else [("-U", (n,)), ("+U", (n + 1,))]
            n += 1
    return out


def _fed(operation: SetOperation, changes: list[list[tuple[str, tuple]]],
         agg_left: bool) -> list[list[str]]:
    """:func:`set_changes` fed ``other``'s ``v`` first (the side not ``agg_left``; a UNION's
    one side), then per file the updating input's ``changes`` in Flink's order; its records
    per file."""
    states: dict[tuple, KeyRows] = defaultdict(KeyRows)

    def fed(from_left: bool, kind: str, row: tuple) -> list[str]:
        return [f"{k}{list(r)}" for k, r in set_changes(operation, states[row],
                                                         [(from_left, kind, row)])]

    union = operation.name == "UNION"  # one side: a count per row of all inputs' records
    before = [r for row in OTHER_V for r in fed(union or not agg_left, "+I", row)]
    return [before, *[[r for kind, row in file for r in fed(agg_left, kind, row)]
                      for file in changes]]


@pytest.mark.parametrize("text, flink", [
    (f"{N} EXCEPT {V}", [[], ["+I[2]"], [], ["+I[3]"]]),  # E4
    ("SELECT COUNT(*) AS n FROM words GROUP BY w EXCEPT " + V,  # E7
     [[], ["+I[2]"], [], ["+I[3]"]]),
    (f"{V} EXCEPT {N}", [["+I[1]", "+I[5]", "+I[9]"], ["-D[1]"], ["+I[1]", "-D[1]"], []]),  # E6
    (f"{N} INTERSECT {V}", [[], ["+I[1]"], ["-D[1]", "+I[1]"], []]),  # I2
    (f"{N} UNION {V}", [["+I[1]", "+I[5]", "+I[9]"], ["+I[2]"], [], ["+I[3]"]]),  # U7
    (f"{N} EXCEPT ALL {V}", [[], ["+U[1]", "-U[1]", "+I[2]"], ["-U[2]", "+U[2]", "+U[2]"],  # EA4
                             ["-U[2]", "-U[2]", "+U[2]", "+I[3]", "+U[1]"]]),
    (f"{N} INTERSECT ALL {V}", [[], ["+U[1]", "-U[1]", "+U[1]", "-U[1]", "+U[1]"],  # IA4
                                ["-U[1]", "+U[1]"], ["-U[1]", "+U[1]"]]),
    (f"{COUNT} EXCEPT {V}", [[], ["+I[2]", "-D[2]", "+I[3]"], ["-D[3]", "+I[4]", "-D[4]"],  # G1
                             ["+I[6]", "-D[6]", "+I[7]"]]),
    (f"{V} EXCEPT {COUNT}", [["+I[1]", "+I[5]", "+I[9]"], ["-D[1]", "+I[1]"], ["-D[5]"],  # G2
                             ["+I[5]"]]),
    (f"{COUNT} INTERSECT {V}", [[], ["+I[1]", "-D[1]"], ["+I[5]"], ["-D[5]"]]),  # G3
    (f"{COUNT} UNION {V}", [["+I[1]", "+I[5]", "+I[9]"], ["+I[2]", "-D[2]", "+I[3]"],  # G4
                            ["-D[3]", "+I[4]", "-D[4]"], ["+I[6]", "-D[6]", "+I[7]"]]),
    (f"{COUNT} EXCEPT ALL {V}", [[], ["+I[2]", "-D[2]", "+I[3]"],  # G5
                                 ["-D[3]", "+I[4]", "-D[4]"], ["+I[6]", "-D[6]", "+I[7]"]]),
    (f"{COUNT} INTERSECT ALL {V}", [[], ["+U[1]", "-U[1]"], ["+U[5]"], ["-U[5]"]])])  # G6
def test_an_input_without_its_group_keys_or_a_global_aggregation_is_flinks_record_by_record(
        text: str, flink: list[list[str]]) -> None:
    """probe3.out E4, E6, I2 and probe4.out E7, U7, EA4, IA4, G1-G6 record by record, in
    Flink's order: the set operation found in the query (no unique left input: Flink keeps
    its GroupAggregate, probe4.out's plans of G1 and E7), fed the aggregation's changelog
    without its key."""
    found = set_operation(_ast(text))
    assert found is not None
    operation, inputs = found
    assert not operation.unique_left
    agg_left = inputs[0].find(exp.Table).name == "words"
    changes = _count_changes() if "GROUP BY" not in text else N_CHANGES
    assert _fed(operation, changes, agg_left) == flink


def test_an_aggregation_not_selecting_its_group_keys_is_a_projection_of_one_that_does() -> None:
    """probe4.out E7's plan is E4's: ``Calc(select=[n])`` over ``GroupAggregate(groupBy=[w],
    select=[w, COUNT(*) AS n])``; an unnamed column is Flink's ``EXPR$i``."""
    _, inputs = set_operation(_ast("SELECT COUNT(*), MAX(v) AS m FROM words GROUP BY w, v "
                                   f"EXCEPT {V}"))
    assert inputs[0].sql() == (
        'SELECT "EXPR$0", "m" FROM (SELECT COUNT(*) AS "EXPR$0", MAX(v) AS m, '
        "w AS __flink_key0, v AS __flink_key1 FROM words GROUP BY w, v) AS __flink_keyed")


@pytest.mark.parametrize("text, files, flink", [
    # E4 (probe3.out) per file, file0 in micro-batches of a row each (AGG's -U/+U as Flink's)
    (f"{N} EXCEPT {V}", [["a,1", "b,2", "a,3"], ["b,4\nc,5"], ["a,6\nd,7"]],
     [[], ["+I[2]"], [], ["+I[3]"]]),
    # G1 (probe4.out) per file, each row a micro-batch (COUNT(*)'s -U/+U per row as Flink's)
    (f"{COUNT} EXCEPT {V}", [["a,1", "b,2", "a,3"], ["b,4", "c,5"], ["a,6", "d,7"]],
     [[], ["+I[2]", "-D[2]", "+I[3]"], ["-D[3]", "+I[4]", "-D[4]"],
      ["+I[6]", "-D[6]", "+I[7]"]])])
def test_an_input_without_its_keys_or_a_global_aggregation_runs_as_flinks_per_file(
        planner: Any, tmp_path: Path, text: str, files: list[list[str]],  # noqa: F811
        flink: list[list[str]]) -> None:
    """Run: the aggregation's changelog fed keyed by its group keys (or by nothing), its
    records' keys dropped, then counted per row; Flink's records per file."""
    batches = _records(planner, text, tmp_path, ["", *[f"{r}\n" for f in files for r in f]])
    ends = [1, *[1 + sum(len(f) for f in files[:i + 1]) for i in range(len(files))]]
    per_file = [sum(batches[a:b], Counter()) for a, b in zip([0, *ends], ends)]
    assert per_file == [Counter(rows) for rows in flink]


def test_another_updating_input_is_refused_by_name(planner: Any) -> None:  # noqa: F811
    """An aggregation over an aggregation as an input: refused by name (Flink runs it)."""
    with pytest.raises(FlinkSqlError, match="^An updating input of EXCEPT is not supported"):
        planner.plan(f"SELECT MAX(n) AS m FROM ({AGG}) EXCEPT {V}", "STREAMING")
