"""The changelog step of a table aggregate function on keyed state (issue 27), without Spark:
what Flink 2.3's GroupTableAggFunction emits for one key's bundle of rows."""

from __future__ import annotations

from typing import Any, Iterator

import pytest
import sqlglot

from sessioncluster.api.table.udf import TableAggregateFunction, udtaf
from sessioncluster.spark.flinksql.dialect import Flink
from sessioncluster.spark.flinksql.functions import CatalogFunction, FunctionCatalog
from sessioncluster.spark.flinksql.tableaggregate import table_aggregation, updating_node
from sessioncluster.spark.flinksql.udf_runners import group_changes, table_aggregate_changelog
from sessioncluster.spark.flinksql.updating import retract_refusal
from tests.integration.test_flat_aggregate_streaming import Top2


class TopList(Top2):
    """Emits the accumulator's own list: the retracted rows must be copies."""

    def emit_value(self, accumulator: list[Any]) -> Iterator[Any]:
        yield accumulator


def steps(function: TableAggregateFunction, bundles: list[list[int]]
          ) -> list[list[tuple[str, list[Any]]]]:
    accumulator = None
    out = []
    for bundle in bundles:
        accumulator, retracted, emitted = group_changes(function, accumulator,
                                                        [(v,) for v in bundle])
        out.append(table_aggregate_changelog(retracted, emitted))
    return out


def test_first_bundle_inserts_later_ones_retract_everything_emitted_before() -> None:
    # Flink 2.3 printed for key a: +I[a, 5] +I[a, 1] | -D[a, 5] -D[a, 1] +I[a, 5] +I[a, 3]
    # | -D[a, 5] -D[a, 3] +I[a, 7] +I[a, 5]
    assert steps(Top2(), [[1, 5], [3], [7]]) == [
        [("+I", [(5,), (1,)])],
        [("-D", [(5,), (1,)]), ("+I", [(5,), (3,)])],
        [("-D", [(5,), (3,)]), ("+I", [(7,), (5,)])],
    ]


def test_an_unchanged_result_is_still_retracted_and_emitted_again() -> None:
    # Flink 2.3 for key b after "b,1": -D[b, 9] -D[b, 2] +I[b, 9] +I[b, 2]
    assert steps(Top2(), [[2, 9], [1]])[1] == [("-D", [(9,), (2,)]), ("+I", [(9,), (2,)])]


def test_retracted_rows_are_copies_of_what_was_emitted() -> None:
    assert steps(TopList(), [[4], [6]])[1] == [("-D", [[4, None]]), ("+I", [[6, 4]])]


def test_nothing_emitted_nothing_retracted() -> None:
    assert table_aggregate_changelog([], []) == []


def test_the_table_aggregation_of_a_flat_aggregate_query_and_flinks_node_name() -> None:
    functions = FunctionCatalog(None)
    wrapper = udtaf(Top2(), result_type="ROW<a BIGINT>")
    functions.functions["top2"] = CatalogFunction("Top2", wrapper, "top2")
    query = sqlglot.parse_one(
        "SELECT key, `_u`.`_r`.`a` AS a FROM (SELECT `key`, top2(`v`) AS `_rows` FROM (SELECT * "
        "FROM src) GROUP BY `key`) AS `_g` CROSS JOIN UNNEST(`_rows`) AS `_u`(`_r`)", read=Flink)
    found = table_aggregation(query, functions)
    assert found is not None
    select, call, function = found
    assert function.name == "Top2" and call.name.lower() == "top2"
    assert updating_node(select, call, function) == \
        "PythonGroupTableAggregate(groupBy=[key], select=[key, Top2(v) AS (a)])"
    plain = sqlglot.parse_one("SELECT key, COUNT(*) FROM src GROUP BY key", read=Flink)
    assert table_aggregation(plain, functions) is None


class RetractingTop2(Top2):
    """Top2 with a ``retract`` (it forgets the value: enough for the refusal's test)."""

    def retract(self, accumulator: list[Any], v: int) -> None:
        accumulator[:] = [a for a in accumulator if a != v] + [None]


def flat_aggregate_over(inner: str, function: TableAggregateFunction) -> tuple[Any, Any]:
    functions = FunctionCatalog(None)
    functions.functions["top2"] = CatalogFunction(
        "Top2", udtaf(function, result_type="ROW<a BIGINT>"), "top2")
    query = sqlglot.parse_one(
        "SELECT k, `_u`.`_r`.`a` AS a FROM (SELECT `k`, top2(`s`) AS `_rows` FROM "
        f"({inner}) GROUP BY `k`) AS `_g` CROSS JOIN UNNEST(`_rows`) AS `_u`(`_r`)", read=Flink)
    return query, functions


def test_a_table_aggregate_function_without_retract_over_an_updating_query_is_refused() -> None:
    """PyFlink 2.3 (/work/briefs/data/updwin/probe1.py, 2a): the job fails with "Method retract
    is not implemented" once the updating input retracts; with ``retract`` it runs (2b)."""
    updating = "SELECT k, w, SUM(v) AS s FROM vals GROUP BY k, w"
    message = retract_refusal(*flat_aggregate_over(updating, Top2()))
    assert message is not None and message.startswith("Method retract is not implemented")
    assert "GroupAggregate(groupBy=[k, w]" in message
    assert retract_refusal(*flat_aggregate_over(updating, RetractingTop2())) is None
    assert retract_refusal(*flat_aggregate_over("SELECT k, v AS s FROM vals", Top2())) is None


def test_the_base_retract_raises_pyflinks_error() -> None:
    with pytest.raises(RuntimeError, match="Method retract is not implemented"):
        Top2().retract([None, None], 1)


class ListTop2(TableAggregateFunction):
    """Top 2 of a list it keeps: ``retract`` removes one value (the probe's Top2R)."""

    def create_accumulator(self) -> list[int]:
        return []

    def accumulate(self, accumulator: list[int], v: int) -> None:
        accumulator.append(v)

    def retract(self, accumulator: list[int], v: int) -> None:
        accumulator.remove(v)

    def emit_value(self, accumulator: list[int]) -> Iterator[Any]:
        yield from ((v,) for v in sorted(accumulator, reverse=True)[:2])


def test_an_updating_inputs_retractions_call_retract() -> None:
    """Key x of /work/briefs/data/updwin/probe2.out (the sums per (k, w) of x: p 1, q 5; then
    p 4; then q 1), PyFlink 2.3: +I 5, +I 1 | -D 5, -D 1, +I 5, +I 4 | -D 5, -D 4, +I 4, +I 1."""
    function, accumulator, out = ListTop2(), None, []
    for rows, kinds in [([(1,), (5,)], ["+I", "+I"]), ([(1,), (4,)], ["-U", "+U"]),
                        ([(5,), (1,)], ["-U", "+U"])]:
        accumulator, retracted, emitted = group_changes(function, accumulator, rows, kinds)
        out.append(table_aggregate_changelog(retracted, emitted))
    assert out == [[("+I", [(5,), (1,)])], [("-D", [(5,), (1,)]), ("+I", [(5,), (4,)])],
                   [("-D", [(5,), (4,)]), ("+I", [(4,), (1,)])]]
    with pytest.raises(RuntimeError, match="Method retract is not implemented"):
        group_changes(Top2(), None, [(1,), (1,)], ["+I", "-D"])
