"""Top-N over a bounded insert-only source in STREAMING mode gives Flink's changelog record by
record (:mod:`sessioncluster.spark.flinksql.topn`): the replay of Flink's rank functions, and
the records Spark computes with it, against the rows PyFlink 2.3 printed for the same queries
(``EnvironmentSettings.in_streaming_mode()``, ``parallelism.default`` 1, the same rows given
by ``from_elements``)."""

from __future__ import annotations

from typing import Any

import pytest

from sessioncluster.spark.flinksql.planner import to_spark_sql
from sessioncluster.spark.flinksql.rankfunctions import RankRange, replay, replay_retractable
from sessioncluster.spark.flinksql.statements import Query, parse_statements
from sessioncluster.spark.flinksql.topn import changes, find_top_n

#: the rows of ``nums`` in their source order
NUMS = [("a", 1), ("b", 5), ("a", 3), ("a", 2), ("b", 5), ("a", 3), ("b", 1)]
RANKED = "SELECT {out} FROM (SELECT k, v, ROW_NUMBER() OVER ({over}) AS rn FROM nums) WHERE {cond}"

# what PyFlink 2.3 printed (op, then the row)
FLINK: dict[str, list[tuple[Any, ...]]] = {
    RANKED.format(out="k, v, rn", over="PARTITION BY k ORDER BY v DESC", cond="rn <= 2"): [
        ("+I", "a", 1, 1), ("+I", "b", 5, 1), ("-U", "a", 1, 1), ("+U", "a", 3, 1),
        ("+I", "a", 1, 2), ("-U", "a", 1, 2), ("+U", "a", 2, 2), ("+I", "b", 5, 2),
        ("-U", "a", 2, 2), ("+U", "a", 3, 2)],
    RANKED.format(out="k, v", over="PARTITION BY k ORDER BY v DESC", cond="rn <= 2"): [
        ("+I", "a", 1), ("+I", "b", 5), ("+I", "a", 3), ("-D", "a", 1), ("+I", "a", 2),
        ("+I", "b", 5), ("-D", "a", 2), ("+I", "a", 3)],
    RANKED.format(out="k, v", over="PARTITION BY k ORDER BY v ASC", cond="rn = 1"): [
        ("+I", "a", 1), ("+I", "b", 5), ("+U", "b", 1)],
    RANKED.format(out="k, v, rn", over="PARTITION BY k ORDER BY v ASC", cond="rn = 1"): [
        ("+I", "a", 1, 1), ("+I", "b", 5, 1), ("+U", "b", 1, 1)],
    RANKED.format(out="k, v", over="ORDER BY v DESC", cond="rn = 1"): [
        ("+I", "a", 1), ("-U", "a", 1), ("+U", "b", 5)],
    RANKED.format(out="k, v, rn", over="ORDER BY v DESC", cond="rn <= 3"): [
        ("+I", "a", 1, 1), ("-U", "a", 1, 1), ("+U", "b", 5, 1), ("+I", "a", 1, 2),
        ("-U", "a", 1, 2), ("+U", "a", 3, 2), ("+I", "a", 1, 3), ("-U", "a", 1, 3),
        ("+U", "a", 2, 3), ("-U", "a", 3, 2), ("+U", "b", 5, 2), ("-U", "a", 2, 3),
        ("+U", "a", 3, 3)],
    RANKED.format(out="k, v", over="ORDER BY v DESC", cond="rn <= 3"): [
        ("+I", "a", 1), ("+I", "b", 5), ("+I", "a", 3), ("-D", "a", 1), ("+I", "a", 2),
        ("-D", "a", 2), ("+I", "b", 5)],
    RANKED.format(out="*", over="PARTITION BY k ORDER BY v ASC", cond="rn < 3"): [
        ("+I", "a", 1, 1), ("+I", "b", 5, 1), ("+I", "a", 3, 2), ("-U", "a", 3, 2),
        ("+U", "a", 2, 2), ("+I", "b", 5, 2), ("-U", "b", 5, 1), ("+U", "b", 1, 1),
        ("-U", "b", 5, 2), ("+U", "b", 5, 2)],
    RANKED.format(out="k, v, rn", over="PARTITION BY k ORDER BY v DESC",
                  cond="rn BETWEEN 2 AND 3"): [
        ("+I", "a", 1, 2), ("-U", "a", 1, 2), ("+U", "a", 2, 2), ("+I", "a", 1, 3),
        ("+I", "b", 5, 2), ("-U", "a", 2, 2), ("+U", "a", 3, 2), ("-U", "a", 1, 3),
        ("+U", "a", 2, 3), ("+I", "b", 1, 3)],
    RANKED.format(out="k, v", over="PARTITION BY k ORDER BY v DESC",
                  cond="rn BETWEEN 2 AND 3"): [
        ("+I", "a", 1), ("-U", "a", 1), ("+U", "a", 2), ("+I", "a", 1), ("+I", "b", 5),
        ("-U", "a", 2), ("+U", "a", 3), ("-U", "a", 1), ("+U", "a", 2), ("+I", "b", 1)],
    RANKED.format(out="k, v, rn", over="PARTITION BY k ORDER BY v DESC", cond="rn = 2"): [
        ("+I", "a", 1, 2), ("-U", "a", 1, 2), ("+U", "a", 2, 2), ("+I", "b", 5, 2),
        ("-U", "a", 2, 2), ("+U", "a", 3, 2)],
    # a view (a STREAMING query reads it as a common table expression) and *
    "WITH s AS (SELECT k, v FROM nums WHERE v < 5) SELECT * FROM (SELECT *, ROW_NUMBER() OVER "
    "(ORDER BY v DESC) AS rn FROM s) WHERE rn <= 2": [
        ("+I", "a", 1, 1), ("-U", "a", 1, 1), ("+U", "a", 3, 1), ("+I", "a", 1, 2),
        ("-U", "a", 1, 2), ("+U", "a", 2, 2), ("-U", "a", 2, 2), ("+U", "a", 3, 2)],
    "SELECT k, v, rn FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC, k) "
    "AS rn FROM nums WHERE v > 1) WHERE rn <= 2": [
        ("+I", "b", 5, 1), ("+I", "a", 3, 1), ("+I", "a", 2, 2), ("+I", "b", 5, 2),
        ("-U", "a", 2, 2), ("+U", "a", 3, 2)],
}


OVER_SUMS = ("SELECT k, s{rn} FROM (SELECT k, s, ROW_NUMBER() OVER (ORDER BY s DESC) AS rn FROM "
             "(SELECT k, SUM(v) AS s FROM nums GROUP BY k)) WHERE rn <= {n}")
# what PyFlink 2.3 printed for a Top-N over a group aggregation (RetractableTopNFunction)
FLINK_OVER_CHANGES: dict[str, list[tuple[Any, ...]]] = {
    OVER_SUMS.format(rn=", rn", n=1): [
        ("+I", "a", 1, 1), ("-D", "a", 1, 1), ("+I", "b", 5, 1), ("-D", "b", 5, 1),
        ("+I", "a", 6, 1), ("-D", "a", 6, 1), ("+I", "b", 10, 1), ("-D", "b", 10, 1),
        ("+I", "a", 9, 1), ("-D", "a", 9, 1), ("+I", "b", 11, 1)],
    OVER_SUMS.format(rn="", n=1): [
        ("+I", "a", 1), ("-D", "a", 1), ("+I", "b", 5), ("-D", "b", 5), ("+I", "a", 6),
        ("-D", "a", 6), ("+I", "b", 10), ("-D", "b", 10), ("+I", "a", 9), ("-D", "a", 9),
        ("+I", "b", 11)],
    OVER_SUMS.format(rn="", n=2): [
        ("+I", "a", 1), ("+I", "b", 5), ("-D", "a", 1), ("+I", "a", 4), ("-D", "a", 4),
        ("+I", "a", 6), ("-D", "b", 5), ("+I", "b", 10), ("-D", "a", 6), ("+I", "a", 9),
        ("-D", "b", 10), ("+I", "b", 11)],
    OVER_SUMS.format(rn=", rn", n=2): [
        ("+I", "a", 1, 1), ("-U", "a", 1, 1), ("+U", "b", 5, 1), ("+I", "a", 1, 2),
        ("-D", "a", 1, 2), ("+I", "a", 4, 2), ("-D", "a", 4, 2), ("-U", "b", 5, 1),
        ("+U", "a", 6, 1), ("+I", "b", 5, 2), ("-D", "b", 5, 2), ("-U", "a", 6, 1),
        ("+U", "b", 10, 1), ("+I", "a", 6, 2), ("-D", "a", 6, 2), ("+I", "a", 9, 2),
        ("-U", "b", 10, 1), ("+U", "a", 9, 1), ("-D", "a", 9, 2), ("-U", "a", 9, 1),
        ("+U", "b", 11, 1), ("+I", "a", 9, 2)],
}


OVER_GROUPS = ("SELECT k, v, s{rn} FROM (SELECT k, v, s, ROW_NUMBER() OVER (PARTITION BY k ORDER BY "
               "s {order}) AS rn FROM (SELECT k, v, SUM(v) AS s FROM nums GROUP BY k, v)) "
               "WHERE rn <= {n}")
# partitioned, over the sums per (k, v): what PyFlink 2.3's collect() gave
FLINK_OVER_GROUPS: dict[str, list[tuple[Any, ...]]] = {
    OVER_GROUPS.format(rn=", rn", order="DESC", n=2): [
        ("+I", "a", 1, 1, 1), ("+I", "b", 5, 5, 1), ("-U", "a", 1, 1, 1), ("+U", "a", 3, 3, 1),
        ("+I", "a", 1, 1, 2), ("-U", "a", 1, 1, 2), ("+U", "a", 2, 2, 2), ("-D", "b", 5, 5, 1),
        ("+I", "b", 5, 10, 1), ("-U", "a", 3, 3, 1), ("+U", "a", 2, 2, 1), ("-U", "a", 2, 2, 2),
        ("+U", "a", 1, 1, 2), ("-U", "a", 2, 2, 1), ("+U", "a", 3, 6, 1), ("-U", "a", 1, 1, 2),
        ("+U", "a", 2, 2, 2), ("+I", "b", 1, 1, 2)],
    OVER_GROUPS.format(rn="", order="ASC", n=1): [
        ("+I", "a", 1, 1), ("+I", "b", 5, 5), ("-D", "b", 5, 5), ("+I", "b", 5, 10),
        ("-D", "b", 5, 10), ("+I", "b", 1, 1)],
}


def sums_changelog() -> list[tuple[str, str, int]]:
    """``SELECT k, SUM(v) AS s FROM nums GROUP BY k``'s changelog (``+I``, then ``-U``/``+U``
    per row)."""
    sums: dict[str, int] = {}
    out = []
    for k, v in NUMS:
        seen = k in sums
        if seen:
            out.append(("-U", k, sums[k]))
        sums[k] = sums.get(k, 0) + v
        out.append(("+U" if seen else "+I", k, sums[k]))
    return out


def query(text: str) -> Any:
    statement = parse_statements(text)[0]
    assert isinstance(statement, Query)
    return statement.ast


def replayed(text: str) -> list[tuple[Any, ...]]:
    """The records of the pure replay, partitions interleaved in source order."""
    top_n = find_top_n(query(text))
    assert top_n is not None
    keep = [c.lower() for c in top_n.columns] if top_n.columns else ["k", "v", "rn"]
    partition = [p.name for p in top_n.partition]
    # the two WHEREs used above
    rows = [r for r in NUMS if "v > 1" not in text or r[1] > 1]
    rows = [r for r in rows if "v < 5" not in text or r[1] < 5]
    groups: dict[Any, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(tuple(r[0] for _ in partition), []).append(i)
    out = []
    for positions in groups.values():
        inputs = [((rows[i][1],) + ((rows[i][0],) if len(top_n.order) > 1 else ()), rows[i])
                  for i in positions]
        for index, sub, kind, row, rank in replay(inputs, top_n.ranks):
            full = {"k": row[0], "v": row[1], "rn": rank}
            out.append((positions[index], sub, kind, *[full[c] for c in keep]))
    return [r[2:] for r in sorted(out, key=lambda r: (r[0], r[1]))]


@pytest.mark.parametrize("text", list(FLINK))
def test_replay_gives_flinks_records(text: str) -> None:
    assert replayed(text) == FLINK[text]


@pytest.mark.parametrize("text", list(FLINK_OVER_CHANGES))
def test_retractable_replay_gives_flinks_records(text: str) -> None:
    top_n = find_top_n(query(text))
    assert top_n is not None and top_n.over_changes
    with_rn = top_n.columns is not None and "rn" in top_n.columns
    records = [(kind, (s,), (k, s)) for kind, k, s in sums_changelog()]
    got = [(kind, *row, *([rank] if with_rn else []))
           for _, _, kind, row, rank in replay_retractable(records, top_n.ranks)]
    assert got == FLINK_OVER_CHANGES[text]


def test_ties_keep_their_arrival_order() -> None:
    ranks = RankRange(1, 2, True, True, ((True, False),))
    rows = [((5,), ("x",)), ((5,), ("y",)), ((5,), ("z",)), ((6,), ("w",))]
    assert list(replay(rows, ranks)) == [
        (0, 0, "+I", ("x",), 1), (1, 0, "+I", ("y",), 2),
        (3, 0, "-U", ("x",), 1), (3, 1, "+U", ("w",), 1),
        (3, 2, "-U", ("y",), 2), (3, 3, "+U", ("x",), 2)]


@pytest.mark.parametrize("text", [
    "SELECT k, v FROM nums",
    "SELECT k, SUM(v) FROM nums GROUP BY k",
    "SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v) AS rn "
    "FROM nums) WHERE rn <= 2 AND v > 1",
    "SELECT k, v FROM (SELECT k, v, RANK() OVER (PARTITION BY k ORDER BY v) AS rn "
    "FROM nums) WHERE rn <= 2",
    "SELECT k, s FROM (SELECT k, s, ROW_NUMBER() OVER (ORDER BY s DESC) AS rn FROM "
    "(SELECT a.k, a.v AS s FROM nums AS a JOIN nums AS b ON a.k = b.k)) WHERE rn <= 1",
    # ordered by an expression of the aggregation: its monotonicity is not worked out here
    "SELECT k, n FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY n DESC) AS rn FROM "
    "(SELECT k, COUNT(*) + 1 AS n FROM nums GROUP BY k)) WHERE rn <= 1",
    "SELECT k, v + 1 FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v) AS rn "
    "FROM nums) WHERE rn <= 2",
])
def test_other_shapes_are_not_rewritten(text: str) -> None:
    assert find_top_n(query(text)) is None


@pytest.fixture(scope="module")
def spark(local_spark: Any) -> Any:
    local_spark.conf.set("spark.sql.shuffle.partitions", "3")
    # three partitions: the source order runs across them
    rows = local_spark.sparkContext.parallelize(NUMS, 3)
    local_spark.createDataFrame(rows, ["k", "v"]).createOrReplaceTempView("nums")
    return local_spark


ALL = {**FLINK, **FLINK_OVER_CHANGES, **FLINK_OVER_GROUPS}


@pytest.mark.parametrize("text", list(ALL))
def test_spark_gives_flinks_records(spark: Any, text: str) -> None:
    top_n = find_top_n(query(text))
    assert top_n is not None
    frame = changes(spark, top_n, lambda q: to_spark_sql(q, {}))
    assert [(r[-1], *r[:-1]) for r in frame.collect()] == ALL[text]
