"""A group aggregation over the rows of a Python table function (``LATERAL TABLE``), or keyed by
a Python scalar function, over a bounded source in STREAMING mode gives Flink's changelog
(:mod:`sessioncluster.spark.flinksql.boundedchangelog`): Spark's Python UDTF and UDF against the
records PyFlink 2.3 printed for the same queries (``parallelism.default`` 1, the lines given by
``from_elements``; tests/pyflink_programs/table_streaming_changelog_udf.py)."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from sessioncluster.spark.flinksql.boundedchangelog import changelog_query, ordered_changes
from sessioncluster.spark.flinksql.planner import to_spark_sql
from tests.unit.test_flinksql_bounded_changelog import query

#: the lines in their source order
LINES = ["to be or not", "to be that is", "the question to be"]
SCALARS = frozenset({"first_letter"})


@pytest.fixture(scope="module")
def spark(local_spark: Any) -> Any:
    from pyspark.sql.functions import udf, udtf

    # three partitions: the source order runs across them (no shuffle before the numbering)
    lines = local_spark.sparkContext.parallelize([(line,) for line in LINES], 3)
    local_spark.createDataFrame(lines, ["line"]).createOrReplaceTempView("lines")

    @udtf(returnType="word: string")
    class Split:
        def eval(self, line: str) -> Iterator[tuple[str]]:
            for word in line.split():
                yield (word,)

    local_spark.udtf.register("splitwords", Split)
    local_spark.udf.register("first_letter", udf(lambda w: w[0], "string"))
    return local_spark


def changes(spark: Any, text: str) -> list[tuple[Any, ...]]:
    rewritten = changelog_query(query(text), scalars=SCALARS)
    assert rewritten is not None
    frame = ordered_changes(spark.sql(to_spark_sql(rewritten, {})))
    return [(r[-1], *r[:-1]) for r in frame.collect()]


WORDS = "(SELECT word FROM lines, LATERAL TABLE(splitwords(line)) AS T(word))"

# what PyFlink 2.3 printed (op, then the row)
FLINK = {
    "SELECT word, COUNT(*) AS cnt FROM lines, LATERAL TABLE(splitwords(line)) AS T(word) "
    "GROUP BY word": [
        ("+I", "to", 1), ("+I", "be", 1), ("+I", "or", 1), ("+I", "not", 1),
        ("-U", "to", 1), ("+U", "to", 2), ("-U", "be", 1), ("+U", "be", 2),
        ("+I", "that", 1), ("+I", "is", 1), ("+I", "the", 1), ("+I", "question", 1),
        ("-U", "to", 2), ("+U", "to", 3), ("-U", "be", 2), ("+U", "be", 3)],
    f"SELECT first_letter(word) AS i, COUNT(*) AS cnt, MAX(word) AS last_word FROM {WORDS} "
    "GROUP BY first_letter(word)": [
        ("+I", "t", 1, "to"), ("+I", "b", 1, "be"), ("+I", "o", 1, "or"), ("+I", "n", 1, "not"),
        ("-U", "t", 1, "to"), ("+U", "t", 2, "to"), ("-U", "b", 1, "be"), ("+U", "b", 2, "be"),
        ("-U", "t", 2, "to"), ("+U", "t", 3, "to"), ("+I", "i", 1, "is"),
        ("-U", "t", 3, "to"), ("+U", "t", 4, "to"), ("+I", "q", 1, "question"),
        ("-U", "t", 4, "to"), ("+U", "t", 5, "to"), ("-U", "b", 2, "be"), ("+U", "b", 3, "be")],
}


#: joins with a table function that Spark plans as a join of its rows (out of their order):
#: they keep their final rows, all +I
JOINED = [
    "SELECT word, COUNT(*) FROM lines LEFT JOIN LATERAL TABLE(splitwords(line)) AS T(word) "
    "ON TRUE GROUP BY word",
    "SELECT word, COUNT(*) FROM lines JOIN LATERAL TABLE(splitwords(line)) AS T(word) "
    "ON word <> 'it' GROUP BY word",
]


@pytest.mark.parametrize("text", list(FLINK))
def test_the_changelog_is_flinks(spark: Any, text: str) -> None:
    assert changes(spark, text) == FLINK[text]


@pytest.mark.parametrize("text", [
    # a table function over an aggregation's changelog
    "SELECT word, COUNT(*) FROM (SELECT line, COUNT(*) AS c FROM lines GROUP BY line) AS s, "
    "LATERAL TABLE(splitwords(line)) AS T(word) GROUP BY word",
    f"SELECT c, COUNT(*) FROM (SELECT word, COUNT(*) AS c FROM {WORDS} GROUP BY word) AS s, "
    "LATERAL TABLE(splitwords(word)) AS T(w) GROUP BY c",
    *JOINED,
    "SELECT a.line, COUNT(*) FROM lines a CROSS JOIN lines b GROUP BY a.line",
    # a call of a function not known as scalar (it may aggregate)
    f"SELECT word, other_udf(word) FROM {WORDS} GROUP BY word",
])
def test_other_shapes_are_left_as_they_are(text: str) -> None:
    assert changelog_query(query(text), scalars=SCALARS) is None


def test_a_scalar_key_needs_the_function_known_as_scalar() -> None:
    text = f"SELECT first_letter(word), COUNT(*) FROM {WORDS} GROUP BY first_letter(word)"
    assert changelog_query(query(text)) is None
    assert changelog_query(query(text), scalars=SCALARS) is not None
