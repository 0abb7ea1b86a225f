"""A Top-N over a group aggregation ordered by a key that only improves (a ``COUNT`` or ``MAX``
descending, a ``MIN`` ascending) gives Flink's changelog record by record: the planner's
choice of ``UpdatableTopNFunction`` / ``FastTop1Function`` (:mod:`.topn`), their replay
(:mod:`.updatabletopn`) and the records Spark computes with it, against the rows PyFlink 2.3
printed for the same queries (``EnvironmentSettings.in_streaming_mode()``,
``parallelism.default`` 1, the rows given by ``from_elements``)."""

from __future__ import annotations

from typing import Any

import pytest

from sessioncluster.spark.flinksql.planner import to_spark_sql
from sessioncluster.spark.flinksql.rankfunctions import RankRange
from sessioncluster.spark.flinksql.statements import Query, parse_statements
from sessioncluster.spark.flinksql.topn import changes, find_top_n, rank_refusal
from sessioncluster.spark.flinksql.updatabletopn import replay_updatable

#: the rows of ``w`` (word, g, v) in their source order
WORDS = [("x", "p", 4), ("y", "q", 2), ("x", "p", 1), ("z", "p", 7), ("y", "q", 3),
         ("z", "q", 1), ("w", "p", 2), ("y", "p", 9), ("w", "q", 5), ("z", "p", 2)]
NUMS = [("a", 1), ("b", 5), ("a", 3), ("a", 2), ("b", 5), ("a", 3), ("b", 1)]
OVER = ("SELECT {out} FROM (SELECT word, {agg}, ROW_NUMBER() OVER (ORDER BY {order}) AS rn "
        "FROM (SELECT word, {call} AS {agg} FROM w GROUP BY word)) WHERE rn <= {n}")
GROUPED = ("SELECT {out} FROM (SELECT g, word, cnt, ROW_NUMBER() OVER (PARTITION BY g ORDER BY "
           "cnt DESC) AS rn FROM (SELECT g, word, COUNT(*) AS cnt FROM w GROUP BY g, word)) "
           "WHERE rn <= {n}")

# what PyFlink 2.3 printed (op, then the row)
FLINK: dict[str, list[tuple[Any, ...]]] = {
    OVER.format(out="word, cnt, rn", agg="cnt", call="COUNT(*)", order="cnt DESC", n=2): [
        ("+I", "x", 1, 1), ("+I", "y", 1, 2), ("-U", "x", 1, 1), ("+U", "x", 2, 1),
        ("-U", "y", 1, 2), ("+U", "y", 2, 2), ("-U", "x", 2, 1), ("-U", "y", 2, 2),
        ("+U", "y", 3, 1), ("+U", "x", 2, 2), ("-U", "x", 2, 2), ("+U", "z", 3, 2)],
    OVER.format(out="word, cnt", agg="cnt", call="COUNT(*)", order="cnt DESC", n=2): [
        ("+I", "x", 1), ("+I", "y", 1), ("-U", "x", 1), ("+U", "x", 2), ("-U", "y", 1),
        ("+U", "y", 2), ("-U", "y", 2), ("+U", "y", 3), ("-D", "x", 2), ("+I", "z", 3)],
    GROUPED.format(out="g, word, cnt, rn", n=2): [
        ("+I", "p", "x", 1, 1), ("+I", "q", "y", 1, 1), ("-U", "p", "x", 1, 1),
        ("+U", "p", "x", 2, 1), ("+I", "p", "z", 1, 2), ("-U", "q", "y", 1, 1),
        ("+U", "q", "y", 2, 1), ("+I", "q", "z", 1, 2), ("-U", "p", "z", 1, 2),
        ("+U", "p", "z", 2, 2)],
    GROUPED.format(out="g, word, cnt", n=1): [
        ("+I", "p", "x", 1), ("+I", "q", "y", 1), ("-U", "p", "x", 1), ("+U", "p", "x", 2),
        ("-U", "q", "y", 1), ("+U", "q", "y", 2)],
    OVER.format(out="word, mx, rn", agg="mx", call="MAX(v)", order="mx DESC", n=2): [
        ("+I", "x", 4, 1), ("+I", "y", 2, 2), ("-U", "x", 4, 1), ("+U", "z", 7, 1),
        ("-U", "y", 2, 2), ("+U", "x", 4, 2), ("-U", "z", 7, 1), ("+U", "y", 9, 1),
        ("-U", "x", 4, 2), ("+U", "z", 7, 2)],
    OVER.format(out="word, mn, rn", agg="mn", call="MIN(v)", order="mn ASC", n=2): [
        ("+I", "x", 4, 1), ("-U", "x", 4, 1), ("+U", "y", 2, 1), ("+I", "x", 4, 2),
        ("-U", "y", 2, 1), ("-U", "x", 4, 2), ("+U", "x", 1, 1), ("+U", "y", 2, 2),
        ("-U", "y", 2, 2), ("+U", "z", 1, 2)],
    "SELECT k, c, rn FROM (SELECT k, c, ROW_NUMBER() OVER (ORDER BY c DESC) AS rn FROM "
    "(SELECT k, COUNT(*) AS c FROM nums GROUP BY k)) WHERE rn <= 1": [
        ("+I", "a", 1, 1), ("-U", "a", 1, 1), ("+U", "a", 2, 1), ("-U", "a", 2, 1),
        ("+U", "a", 3, 1), ("-U", "a", 3, 1), ("+U", "a", 4, 1)],
}
# counts ascending do not only improve: RetractableTopNFunction, as PyFlink 2.3 printed it
FLINK_RETRACTED = {
    OVER.format(out="word, cnt, rn", agg="cnt", call="COUNT(*)", order="cnt ASC", n=2): [
        ("+I", "x", 1, 1), ("+I", "y", 1, 2), ("-U", "x", 1, 1), ("+U", "y", 1, 1),
        ("-D", "y", 1, 2), ("+I", "x", 2, 2), ("-U", "x", 2, 2), ("+U", "z", 1, 2),
        ("-U", "y", 1, 1), ("+U", "z", 1, 1), ("-U", "z", 1, 2), ("+U", "x", 2, 2),
        ("-U", "z", 1, 1), ("+U", "x", 2, 1), ("-U", "x", 2, 2), ("+U", "y", 2, 2),
        ("-U", "x", 2, 1), ("+U", "w", 1, 1), ("-U", "y", 2, 2), ("+U", "x", 2, 2),
        ("-U", "w", 1, 1), ("+U", "x", 2, 1), ("-U", "x", 2, 2), ("+U", "z", 2, 2),
        ("-U", "z", 2, 2), ("+U", "w", 2, 2)],
}


def query(text: str) -> Any:
    statement = parse_statements(text)[0]
    assert isinstance(statement, Query)
    return statement.ast


def upserts(key: Any, value: Any) -> list[tuple[Any, Any]]:
    """A group aggregation's ``+I``/``+U`` records over ``WORDS`` (an unchanged value none)."""
    state: dict[Any, Any] = {}
    out = []
    for row in WORDS:
        k, old = key(row), state.get(key(row))
        new = value(old, row)
        if new != old:
            state[k] = new
            out.append((k, new))
    return out


@pytest.mark.parametrize("call, ranks, expected", [
    (lambda o, r: (o or 0) + 1, RankRange(1, 2, True, False, ((True, False),)), 0),
    (lambda o, r: (o or 0) + 1, RankRange(1, 2, False, False, ((True, False),)), 1),
    (lambda o, r: max(o or r[2], r[2]), RankRange(1, 2, True, False, ((True, False),)), 4),
    (lambda o, r: min(o or r[2], r[2]), RankRange(1, 2, True, False, ((False, True),)), 5),
])
def test_the_replay_gives_flinks_records(call: Any, ranks: RankRange, expected: int) -> None:
    records = [(k, (n,), (k, n)) for k, n in upserts(lambda r: r[0], call)]
    got = [(kind, *row, *([rank] if ranks.output_number else []))
           for _, _, kind, row, rank in replay_updatable(records, ranks)]
    assert got == list(FLINK.values())[expected]


@pytest.mark.parametrize("text, fast", [
    (OVER.format(out="word, cnt", agg="cnt", call="COUNT(*)", order="cnt DESC", n=2), True),
    (OVER.format(out="word, mx", agg="mx", call="MAX(v)", order="mx DESC, word", n=2), True),
    (OVER.format(out="word, cnt", agg="cnt", call="COUNT(*)", order="cnt ASC", n=2), False),
    (OVER.format(out="word, mn", agg="mn", call="MIN(v)", order="mn DESC", n=2), False),
    (OVER.format(out="word, s", agg="s", call="SUM(v)", order="s DESC", n=2), False),
    # the partition key is not within the aggregation's keys
    ("SELECT word, c FROM (SELECT word, c, ROW_NUMBER() OVER (PARTITION BY c ORDER BY c DESC) "
     "AS rn FROM (SELECT word, COUNT(*) AS c FROM w GROUP BY word)) WHERE rn <= 2", False),
    # the aggregation's key is not among the ranked columns: no unique key
    ("SELECT c FROM (SELECT c, ROW_NUMBER() OVER (ORDER BY c DESC) AS rn FROM "
     "(SELECT word, COUNT(*) AS c FROM w GROUP BY word)) WHERE rn <= 2", False),
])
def test_the_planners_choice(text: str, fast: bool) -> None:
    top_n = find_top_n(query(text))
    assert top_n is not None and top_n.over_changes
    assert bool(top_n.row_key) == fast


@pytest.mark.parametrize("text, refusal", [
    # PyFlink 2.3's TableException messages
    ("SELECT word, v, r FROM (SELECT word, v, RANK() OVER (ORDER BY v DESC) AS r FROM w) "
     "WHERE r <= 2", "RANK() on streaming table is not supported currently"),
    ("SELECT word, v, r FROM (SELECT word, v, DENSE_RANK() OVER (PARTITION BY g ORDER BY v "
     "DESC) AS r FROM w) WHERE r <= 2", "DENSE_RANK() on streaming table is not supported "
     "currently"),
    ("SELECT word, cnt, r FROM (SELECT word, cnt, RANK() OVER (ORDER BY cnt DESC) AS r FROM "
     "(SELECT word, COUNT(*) AS cnt FROM w GROUP BY word)) WHERE r <= 2",
     "RANK() on streaming table is not supported currently"),
    (OVER.format(out="word, cnt", agg="cnt", call="COUNT(*)", order="cnt DESC", n=2), None),
])
def test_a_top_n_by_rank_is_refused_as_flink_does(text: str, refusal: str | None) -> None:
    assert rank_refusal(query(text)) == refusal


@pytest.fixture(scope="module")
def spark(local_spark: Any) -> Any:
    local_spark.conf.set("spark.sql.shuffle.partitions", "3")
    # three partitions: the source order runs across them
    rows = local_spark.sparkContext.parallelize
    local_spark.createDataFrame(rows(WORDS, 3), ["word", "g", "v"]).createOrReplaceTempView("w")
    local_spark.createDataFrame(rows(NUMS, 3), ["k", "v"]).createOrReplaceTempView("nums")
    return local_spark


ALL = {**FLINK, **FLINK_RETRACTED}


@pytest.mark.parametrize("text", list(ALL))
def test_spark_gives_flinks_records(spark: Any, text: str) -> None:
    top_n = find_top_n(query(text))
    assert top_n is not None
    frame = changes(spark, top_n, lambda q: to_spark_sql(q, {}))
    assert [(r[-1], *r[:-1]) for r in frame.collect()] == ALL[text]
