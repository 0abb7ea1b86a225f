"""The pure parts of Flink SQL in STREAMING mode: watermark delays, which queries Flink calls
updating (and the node it names), the changelog of an updating query and its per-batch state,
and the window struct a streaming window aggregation groups by."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessioncluster.spark.flinksql.microbatch import ChangelogState
from sessioncluster.spark.flinksql.model import CatalogTable, Column, FlinkSqlError, WatermarkSpec
from sessioncluster.spark.flinksql.planner import to_spark_sql
from sessioncluster.spark.flinksql.statements import Query, parse_statements
from sessioncluster.spark.flinksql.streamingsession import watermark_delay_ms
from sessioncluster.spark.flinksql.updating import (
    changelog,
    key_positions,
    outer_key_positions,
    over_updating,
    over_updating_refusal,
    result_changes,
    split_over_updating,
    updating_node,
)
from sessioncluster.spark.flinksql.updatingjoin import window_over_join_refusal


def query(text: str):
    statement = parse_statements(text)[0]
    assert isinstance(statement, Query)
    return statement.ast


def bids(watermark: str | None = "ts - INTERVAL '5' SECOND") -> CatalogTable:
    columns = [Column("ts", "TIMESTAMP(3)"), Column("item", "STRING"), Column("price", "INT")]
    spec = WatermarkSpec("ts", watermark) if watermark is not None else None
    return CatalogTable("Bid", columns, {"connector": "filesystem"}, spec)


@pytest.mark.parametrize("expression, ms", [
    ("ts - INTERVAL '5' SECOND", 5000), ("ts - INTERVAL '2' MINUTE", 120_000), ("ts", 0),
    ("ts - INTERVAL '0.5' SECOND", 500)])
def test_watermark_delay(expression: str, ms: int) -> None:
    assert watermark_delay_ms(bids(expression)) == ms


def test_no_watermark_and_an_unsupported_strategy() -> None:
    assert watermark_delay_ms(bids(None)) is None
    with pytest.raises(FlinkSqlError, match="bounded out-of-orderness"):
        watermark_delay_ms(bids("ts + INTERVAL '5' SECOND"))


@pytest.mark.parametrize("text", [
    "SELECT item, price FROM Bid WHERE price > 2",
    "SELECT window_start, window_end, COUNT(*) FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(ts), "
    "INTERVAL '10' MINUTES)) GROUP BY window_start, window_end",
    "SELECT TUMBLE_START(ts, INTERVAL '1' MINUTE), COUNT(*) FROM Bid "
    "GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE)",
    "SELECT item, SUM(price) OVER (PARTITION BY item ORDER BY ts) FROM Bid"])
def test_append_only_queries(text: str) -> None:
    assert updating_node(query(text)) is None


def test_a_group_aggregate_is_updating_with_flinks_node_name() -> None:
    assert updating_node(query("SELECT item, COUNT(*) AS cnt FROM Bid GROUP BY item")) == \
        "GroupAggregate(groupBy=[item], select=[item, COUNT(*) AS cnt])"
    assert updating_node(query("SELECT COUNT(*) FROM Bid")) == "GroupAggregate(select=[COUNT(*)])"
    assert updating_node(query("SELECT DISTINCT item FROM Bid")) is not None


@pytest.mark.parametrize("text, operation", [
    ("SELECT s, COUNT(*) FROM (SELECT item, SUM(price) AS s FROM Bid GROUP BY item) GROUP BY s",
     "An aggregation"),
    ("SELECT DISTINCT s FROM (SELECT item, SUM(price) AS s FROM Bid GROUP BY item)",
     "An aggregation"),
    ("WITH c AS (SELECT item, COUNT(*) AS n FROM Bid GROUP BY item), "
     "d AS (SELECT n FROM c WHERE n > 1) SELECT n, COUNT(*) FROM d GROUP BY n", "An aggregation"),
    ("SELECT * FROM (SELECT item, COUNT(*) AS n FROM Bid GROUP BY item) a JOIN Bid b "
     "ON a.item = b.item", "A join"),
    ("SELECT item, SUM(n) OVER (PARTITION BY item ORDER BY n) FROM "
     "(SELECT item, COUNT(*) AS n FROM Bid GROUP BY item)", "An OVER aggregation")])
def test_a_stateful_operation_over_an_updating_query_is_found(text: str, operation: str) -> None:
    found = over_updating(query(text))
    assert found is not None and found.operation.startswith(operation)
    message = over_updating_refusal(found)
    assert "GroupAggregate(groupBy=[item]" in message and "BATCH" in message


def test_a_window_tvf_over_an_updating_query_is_refused_with_flinks_message() -> None:
    """Flink 2.3 refuses a window TVF over an updating view: "The window function requires the
    timecol is a time attribute type, but is TIMESTAMP(3)."""
    found = over_updating(query(
        "WITH c AS (SELECT item, COUNT(*) AS n, MAX(ts) AS ts FROM Bid GROUP BY item) "
        "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE c, DESCRIPTOR(ts), "
        "INTERVAL '10' SECOND)) GROUP BY window_start, window_end"))
    assert found is not None
    assert over_updating_refusal(found).startswith(
        "The window function requires the timecol is a time attribute type")


JOINED = "WITH j AS (SELECT b.item, b.ts, c.price AS p FROM Bid b JOIN Bid c ON {on}) "


@pytest.mark.parametrize("text", [
    JOINED.format(on="b.item = c.item") + "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE("
    "TABLE j, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end",
    "WITH j AS (SELECT b.item, b.ts FROM Bid b, Bid c WHERE b.item = c.item), "
    "k AS (SELECT * FROM j WHERE item > 'a') SELECT window_start, COUNT(*) FROM TABLE(HOP("
    "TABLE k, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) "
    "GROUP BY window_start, window_end"])
def test_a_window_tvf_over_a_regular_join_is_refused_with_flinks_message(text: str) -> None:
    """PyFlink 2.3 (/work/briefs/data/updwin/probe1.out, 3a and 3c) refuses a window TVF over a
    regular join, of two append-only streams too; a legacy GROUP BY TUMBLE over it runs (3b)."""
    assert window_over_join_refusal(query(text)) == (
        "The window function requires the timecol is a time attribute type, but is "
        "TIMESTAMP(3): the rows of a regular join have no time attribute")


@pytest.mark.parametrize("text", [
    JOINED.format(on="b.item = c.item AND b.ts BETWEEN c.ts - INTERVAL '1' SECOND AND c.ts")
    + "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE j, DESCRIPTOR(ts), "
    "INTERVAL '10' SECOND)) GROUP BY window_start, window_end",
    JOINED.format(on="b.item = c.item") + "SELECT TUMBLE_START(ts, INTERVAL '10' SECOND), "
    "COUNT(*) FROM j GROUP BY TUMBLE(ts, INTERVAL '10' SECOND)",
    "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(ts), "
    "INTERVAL '10' SECOND)) GROUP BY window_start, window_end"])
def test_a_window_over_an_interval_join_a_legacy_window_and_a_table_are_not_refused(
        text: str) -> None:
    assert window_over_join_refusal(query(text)) is None


@pytest.mark.parametrize("text", [
    "SELECT item, COUNT(*) FROM Bid GROUP BY item",
    "SELECT s FROM (SELECT item, SUM(price) AS s FROM Bid GROUP BY item) WHERE s > 2",
    "SELECT n, COUNT(*) FROM (SELECT window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE Bid, "
    "DESCRIPTOR(ts), INTERVAL '10' MINUTES)) GROUP BY window_start, window_end) GROUP BY n"])
def test_what_reads_an_updating_query_statelessly_is_not_found(text: str) -> None:
    assert over_updating(query(text)) is None


def test_an_aggregation_over_an_updating_subquery_is_cut_below_it() -> None:
    """The updating query becomes a query of its own; the rest reads its result by a name."""
    q = query("SELECT n, COUNT(*) AS c FROM (SELECT item, COUNT(*) AS n FROM Bid "
              "WHERE price > 1 GROUP BY item) AS counts GROUP BY n")
    inner, rest, name = split_over_updating(q, over_updating(q))
    assert norm(inner.sql(dialect="spark")) == (
        f"WITH {name} AS (SELECT item, COUNT(*) AS n FROM Bid WHERE price > 1 GROUP BY item) "
        f"SELECT * FROM {name}")
    assert norm(rest.sql(dialect="spark")) == \
        f"SELECT n, COUNT(*) AS c FROM {name} AS counts GROUP BY n"
    assert key_positions(rest) == [0] and key_positions(inner) == [0]


def test_an_aggregation_over_an_updating_view_keeps_the_views_it_needs() -> None:
    q = query("WITH cheap AS (SELECT * FROM Bid WHERE price < 5), "
              "counts AS (SELECT item, COUNT(*) AS n FROM cheap GROUP BY item), "
              "big AS (SELECT n FROM counts WHERE n > 1) SELECT n, COUNT(*) FROM big GROUP BY n")
    inner, rest, name = split_over_updating(q, over_updating(q))
    assert name == "counts"
    assert [c.alias for c in inner.args["with_"].expressions] == ["cheap", "counts"]
    assert [c.alias for c in rest.args["with_"].expressions] == ["big"]


def test_an_aggregation_that_also_reads_a_stream_is_not_cut() -> None:
    q = query("SELECT b.item, COUNT(*) FROM (SELECT item, COUNT(*) AS n FROM Bid GROUP BY item) "
              "a, Bid b WHERE a.item = b.item GROUP BY b.item")
    assert split_over_updating(q, over_updating(q)) is None


def test_result_changes_delete_what_is_gone() -> None:
    previous: dict = {}
    result_changes(previous, [(1, 2), (2, 1)], [0])
    changes = result_changes(previous, [(1, 1), (3, 1)], [0])
    assert changes == [("-D", (2, 1)), ("-U", (1, 2)), ("+U", (1, 1)), ("+I", (3, 1))]
    assert sorted(previous.values()) == [(1, 1), (3, 1)]


def test_result_changes_pair_a_keys_matches_with_their_updates() -> None:
    """A join of word counts with a table holding two rows of ``b``: each match of ``b`` is
    updated (-U/+U), as Flink's join forwards its input's update; identical rows are two."""
    previous: dict = {}
    first = [("b", 1, "bravo"), ("a", 1, "alpha"), ("b", 1, "beta")]
    assert sorted(result_changes(previous, first, [0])) == sorted(("+I", r) for r in first)
    changes = result_changes(previous, [("b", 2, "beta"), ("a", 1, "alpha"), ("b", 2, "bravo")],
                             [0])
    assert changes == [("-U", ("b", 1, "beta")), ("+U", ("b", 2, "beta")),
                       ("-U", ("b", 1, "bravo")), ("+U", ("b", 2, "bravo"))]
    assert result_changes(previous, [("a", 1, "alpha"), ("a", 1, "alpha")], [0]) == [
        ("-D", ("b", 2, "beta")), ("-D", ("b", 2, "bravo")), ("+I", ("a", 1, "alpha"))]


def test_a_join_or_over_aggregation_with_bounded_tables_is_cut_with_the_inner_keys() -> None:
    q = query("SELECT a.item, a.n, d.descr FROM (SELECT item, COUNT(*) AS n FROM Bid "
              "GROUP BY item) a JOIN dims d ON a.item = d.item")
    found = over_updating(q)
    assert split_over_updating(q, found) is None  # dims read as a stream
    inner, rest, name = split_over_updating(q, found, lambda t: t == "dims")
    assert outer_key_positions(rest, found, ["item", "n", "descr"]) == [0]
    q = query("SELECT * FROM (SELECT item, n, ROW_NUMBER() OVER (ORDER BY n DESC) AS rn FROM "
              "(SELECT item, COUNT(*) AS n FROM Bid GROUP BY item)) WHERE rn <= 2")
    found = over_updating(q)
    assert found is not None and found.operation == "An OVER aggregation"
    inner, rest, name = split_over_updating(q, found)
    assert outer_key_positions(rest, found, ["item", "n", "rn"]) == [0]
    assert outer_key_positions(rest, found, ["x", "rn"]) == [0, 1]  # no key named: every column


def norm(text: str) -> str:
    return " ".join(text.split())


def test_key_positions_are_the_columns_without_aggregates() -> None:
    assert key_positions(query("SELECT item, COUNT(*), price FROM Bid GROUP BY item, price")) \
        == [0, 2]


def test_changelog_inserts_then_retracts_and_updates() -> None:
    emitted: dict = {}
    assert changelog(emitted, [("x", 1), ("y", 1)], [0]) == [("+I", ("x", 1)), ("+I", ("y", 1))]
    assert changelog(emitted, [("x", 2), ("y", 1)], [0]) == [("-U", ("x", 1)), ("+U", ("x", 2))]
    assert emitted == {("x",): ("x", 2), ("y",): ("y", 1)}


def test_changelog_state_per_batch(tmp_path: Path) -> None:
    state = ChangelogState(tmp_path / "changelog")
    assert state.before(0) == {} and not state.done(0)
    state.save(0, {("x",): ("x", 1)})
    state.save(1, {("x",): ("x", 2)})
    assert state.done(1)
    assert state.before(1) == {("x",): ("x", 1)}  # batch 1 run again starts from batch 0's
    state.save(2, {("x",): ("x", 3)})
    state.save(3, {("x",): ("x", 4)})
    assert sorted(p.name for p in (tmp_path / "changelog").iterdir()) == ["2.state", "3.state"]


def test_streaming_window_aggregation_groups_by_the_window_struct() -> None:
    tvf = query("SELECT window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(ts), "
                "INTERVAL '10' MINUTES)) GROUP BY window_start, window_end")
    streaming = to_spark_sql(tvf, {"Bid": bids()}, streaming=True)
    assert "__w AS __window0" in streaming and "GROUP BY window_start, window_end, __window0" \
        in streaming
    assert "__window" not in to_spark_sql(tvf, {"Bid": bids()})
    legacy = query("SELECT COUNT(*) FROM Bid GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE), item")
    assert "GROUP BY __s0, __e0, __w, item" in to_spark_sql(legacy, {"Bid": bids()},
                                                           streaming=True)


def test_a_session_tvf_grouped_by_other_keys_than_its_partition_is_refused() -> None:
    """Flink keeps a session per PARTITION BY key (across all rows without one:
    /work/briefs/data/lead30/session_tvf_probe.out), Spark per grouping key: grouped by other
    keys, the sessions would differ, so STREAMING refuses it by name (BATCH runs it)."""
    for partition, keys in ((",", ", item"), ("PARTITION BY item,", ""),
                            ("PARTITION BY item,", ", item, price")):
        tvf = query(f"SELECT window_start, window_end, COUNT(*) AS n FROM TABLE(SESSION(TABLE "
                    f"Bid {partition} DESCRIPTOR(ts), INTERVAL '5' MINUTES)) "
                    f"GROUP BY window_start, window_end{keys}")
        with pytest.raises(FlinkSqlError, match="^A SESSION window TVF aggregation whose GROUP "
                                                "BY keys"):
            to_spark_sql(tvf, {"Bid": bids()}, streaming=True)
        assert to_spark_sql(tvf, {"Bid": bids()}, streaming=False)


def test_streaming_session_windows_group_by_sparks_session_window() -> None:
    """A SESSION window's bounds exist only once its rows' sessions merged: GROUP BY the
    session_window struct, window_start/_end/_time its fields."""
    tvf = query("SELECT window_start, window_end, item, COUNT(*) AS n FROM TABLE(SESSION(TABLE "
                "Bid PARTITION BY item, DESCRIPTOR(ts), INTERVAL '5' MINUTES)) "
                "GROUP BY window_start, window_end, item")
    streaming = to_spark_sql(tvf, {"Bid": bids()}, streaming=True)
    assert "SESSION_WINDOW(`ts`, '300000 milliseconds') AS __window0" in streaming
    assert streaming.startswith("SELECT __window0.start AS window_start, __window0.end AS "
                                "window_end, item, COUNT(*) AS n")
    assert streaming.endswith("GROUP BY item, __window0")
    legacy = query("SELECT item, SESSION_START(ts, INTERVAL '1' MINUTE) AS s, "
                   "SESSION_ROWTIME(ts, INTERVAL '1' MINUTE) AS t, COUNT(*) AS n FROM Bid "
                   "GROUP BY SESSION(ts, INTERVAL '1' MINUTE), item")
    streaming = to_spark_sql(legacy, {"Bid": bids()}, streaming=True)
    assert "SESSION_WINDOW(`ts`, '60000 milliseconds') AS __w" in streaming
    assert "__w.start AS s, __w.end - INTERVAL '0.001' SECOND AS t" in streaming
    assert streaming.endswith("GROUP BY __w, item")
    assert "SESSION_WINDOW" not in to_spark_sql(legacy, {"Bid": bids()})  # BATCH: unchanged


def test_stop_job_goes_to_the_dispatcher_with_the_savepoint_directory() -> None:
    from sessioncluster.spark.flinksql.statements import StopJob
    from sessioncluster.spark.flinksql.streaming import stop_job

    job = "0" * 32
    assert stop_job(StopJob(job), {}).stop_job == (job, None)
    assert stop_job(StopJob(job, with_savepoint=True), {"state.savepoints.dir": "/sp"}).stop_job \
        == (job, "/sp")
    with pytest.raises(FlinkSqlError, match="state.savepoints.dir"):
        stop_job(StopJob(job, with_savepoint=True), {})


def test_a_statement_sets_vertices_sources_then_one_per_insert() -> None:
    from sessioncluster.jobmanager.streamingsqljob import statement_vertices
    from sessioncluster.spark.flinksql.streamingjob import StreamingInsert, StreamingStatementJob

    sink = CatalogTable("out", [Column("n", "BIGINT")], {"connector": "print"})
    job = StreamingStatementJob("insert", lambda: None, [], [
        StreamingInsert(sink, None, "append", [], ["a", "b"]),
        StreamingInsert(sink, None, "update", [0], ["b"]),
        StreamingInsert(sink, None, "append", [], ["a"], True),
        # a bounded group aggregation's changelog, its RowKinds computed with it
        StreamingInsert(sink, None, "append", [], ["a"], True, operator="GroupAggregate")])
    shape = [(v.name, sorted(inputs)) for v, inputs in statement_vertices(job)]
    assert shape == [("Source: a", []), ("Source: b", []),
                     ("Calc -> Sink: out", ["source-a", "source-b"]),
                     ("GroupAggregate -> Sink: out", ["source-b"]),
                     ("PythonGroupTableAggregate -> Sink: out", ["source-a"]),
                     ("GroupAggregate -> Sink: out", ["source-a"])]


def test_flinks_restart_strategy_options_of_a_statement() -> None:
    from sessioncluster.api.restart import RestartStrategyConfiguration as R
    from sessioncluster.jobmanager.streamingsqljob import restart_strategy

    assert restart_strategy({}) is None
    assert restart_strategy({"restart-strategy.type": "none"}) == R("none")
    assert restart_strategy({"restart-strategy.type": "fixed-delay",
                             "restart-strategy.fixed-delay.attempts": "3",
                             "restart-strategy.fixed-delay.delay": "2 s"}) == \
        R("fixed-delay", 3, 2000)
    assert restart_strategy({"restart-strategy.type": "failure-rate",
                             "restart-strategy.failure-rate.max-failures-per-interval": "4",
                             "restart-strategy.failure-rate.failure-rate-interval": "5 min"}) == \
        R("failure-rate", 4, 1000, 300_000)


def test_several_joins_nest_the_first_and_an_aggregation_reads_the_join() -> None:
    """Flink's left-deep tree of joins: the first join becomes a subquery the next one reads;
    an aggregation over a join reads the join as a subquery (its columns by position)."""
    from sessioncluster.spark.flinksql.updatingjoin import nest_first_join, nest_join

    two = query("SELECT o.id, a.n, b.s FROM orders o JOIN (SELECT customer, COUNT(*) AS n FROM "
                "orders GROUP BY customer) a ON o.customer = a.customer JOIN (SELECT customer, "
                "SUM(v) AS s FROM cust GROUP BY customer) b ON o.customer = b.customer")
    nested = nest_first_join(two, two)
    assert len(nested.args["joins"]) == 1 and [e.alias for e in nested.expressions] == \
        ["id", "n", "s"]
    inner = nested.args["from_"].this.this
    assert [e.this.sql() for e in inner.expressions] == ["o.id", "a.n", "o.customer"]
    unqualified = query("SELECT id FROM orders o JOIN (SELECT customer, COUNT(*) AS n FROM "
                        "orders GROUP BY customer) a ON o.customer = a.customer JOIN cust b "
                        "ON o.customer = b.customer")
    with pytest.raises(FlinkSqlError, match="Column 'id' .* names no table"):
        nest_first_join(unqualified, unqualified)
    grouped = query("SELECT c.n, COUNT(*) AS cnt FROM orders o JOIN (SELECT customer, COUNT(*) "
                    "AS n FROM orders GROUP BY customer) c ON o.customer = c.customer "
                    "WHERE o.id > 1 GROUP BY c.n")
    aggregation = nest_join(grouped, grouped)
    assert aggregation.args.get("where") is None and not aggregation.args.get("joins")
    assert aggregation.args["from_"].this.this.args["where"].this.sql() == "o.id > 1"


@pytest.mark.parametrize("text, having", [
    ("SELECT COUNT(*) AS n, MAX(x) AS m FROM t WHERE x > 100", "HAVING COUNT(*) > 0"),
    ("SELECT SUM(x) AS s FROM t HAVING SUM(x) > 3", "HAVING (SUM(x) > 3) AND COUNT(*) > 0"),
])
def test_a_streaming_global_aggregation_has_no_row_before_its_first_input(text: str,
                                                                         having: str) -> None:
    """Flink's global GroupAggregate emits nothing before its first record; Structured
    Streaming's gives (0, NULL) for a micro-batch whose rows were all filtered out."""
    query = parse_statements(text)[0].ast
    assert to_spark_sql(query, {}, streaming=True).endswith(having)
    assert "COUNT(*) > 0" not in to_spark_sql(query, {})  # BATCH: Flink's one row of no input
    grouped = parse_statements("SELECT k, COUNT(*) AS n FROM t GROUP BY k")[0].ast
    assert "HAVING" not in to_spark_sql(grouped, {}, streaming=True)
