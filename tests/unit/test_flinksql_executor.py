"""The session's Flink SQL planner on a local SparkSession (no cluster): the catalog, DDL and
utility statements answered at once, queries and INSERTs planned as jobs, and its errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlglot

from sessioncluster.spark.flinksql.columntypes import window_bound_types
from sessioncluster.spark.flinksql.executor import FlinkSqlPlanner
from sessioncluster.spark.flinksql.model import FlinkSqlError


@pytest.fixture(scope="module")
def spark(local_spark: Any) -> Any:
    return local_spark


@pytest.fixture
def planner(spark: Any, tmp_path: Path) -> FlinkSqlPlanner:
    (tmp_path / "orders.csv").write_text("1,apple,3,2.5\n2,pear,1,4.0\n3,apple,2,2.5\n")
    p = FlinkSqlPlanner(spark)
    p.plan(f"""CREATE TABLE orders (id BIGINT, product STRING, qty INT, price DOUBLE,
                 total AS qty * price, PRIMARY KEY (id) NOT ENFORCED)
               WITH ('connector' = 'filesystem', 'path' = '{tmp_path / "orders.csv"}',
                     'format' = 'csv')""")
    return p


def rows(planner: FlinkSqlPlanner, statement: str) -> list[tuple[Any, ...]]:
    outcome = planner.plan(statement)
    if outcome.job is None:
        return outcome.rows
    return [tuple(r) for r in outcome.job.run().collect()]


def test_computed_columns_are_read_as_the_table_declares_them(planner) -> None:
    assert sorted(rows(planner, "SELECT id, total FROM orders")) == [(1, 7.5), (2, 4.0), (3, 5.0)]
    described = {r[0]: r for r in rows(planner, "DESCRIBE orders")}
    # quoted as Flink 2.3's DESCRIBE (/work/briefs/data/types4/probe3.out: AS `amount` * 2)
    assert described["total"][1::3] == ("DOUBLE", "AS `qty` * `price`")
    assert described["id"][2:4] == (False, "PRI(id)")


def test_ddl_is_answered_at_once_and_a_query_is_a_job(planner) -> None:
    outcome = planner.plan("CREATE VIEW apples AS SELECT * FROM orders WHERE product = 'apple'")
    assert (outcome.result_kind, outcome.job, outcome.rows) == ("SUCCESS", None, [("OK",)])
    query = planner.plan("SELECT COUNT(*) AS n FROM apples")
    assert query.job is not None and query.job.name == "collect"
    # Flink 2.3: COUNT(*) is NOT NULL
    assert (query.columns, query.column_types) == (["n"], ["BIGINT NOT NULL"])
    assert rows(planner, "SELECT COUNT(*) AS n FROM apples") == [(2,)]
    assert ("apples",) in rows(planner, "SHOW VIEWS")
    assert {"orders", "apples"} <= {r[0] for r in rows(planner, "SHOW TABLES")}
    planner.plan("DROP VIEW apples")
    assert ("apples",) not in rows(planner, "SHOW VIEWS")


def test_insert_into_a_table_and_a_statement_set(planner, tmp_path: Path) -> None:
    for name in ("totals", "counts"):
        planner.plan(f"""CREATE TABLE {name} (product STRING, v DOUBLE)
                         WITH ('connector' = 'filesystem', 'path' = '{tmp_path / name}',
                               'format' = 'json')""")
    insert = planner.plan("INSERT INTO totals SELECT product, SUM(total) FROM orders "
                          "GROUP BY product")
    assert insert.job is not None
    assert insert.job.name == "insert-into_default_catalog.default_database.totals"
    assert [tuple(r) for r in insert.job.run().collect()] == [(-1,)]
    assert sorted(rows(planner, "SELECT * FROM totals")) == [("apple", 12.5), ("pear", 4.0)]
    both = planner.plan("""EXECUTE STATEMENT SET BEGIN
        INSERT INTO counts SELECT product, CAST(COUNT(*) AS DOUBLE) FROM orders GROUP BY product;
        INSERT OVERWRITE totals SELECT product, MAX(price) FROM orders GROUP BY product;
        END""")
    assert both.columns == ["default_catalog.default_database.counts",
                            "default_catalog.default_database.totals"]
    both.job.run()
    assert sorted(rows(planner, "SELECT * FROM counts")) == [("apple", 2.0), ("pear", 1.0)]
    assert sorted(rows(planner, "SELECT * FROM totals")) == [("apple", 2.5), ("pear", 4.0)]


def test_errors_name_what_is_wrong(planner) -> None:
    with pytest.raises(FlinkSqlError, match="already exists"):
        planner.plan("CREATE TABLE orders (a INT) WITH ('connector' = 'blackhole')")
    with pytest.raises(FlinkSqlError, match="nope.*not found"):
        planner.plan("INSERT INTO nope SELECT 1")
    planner.plan("CREATE TABLE sink1 (a INT) WITH ('connector' = 'blackhole')")
    with pytest.raises(FlinkSqlError, match="query has 2 columns, the sink 1"):
        planner.plan("INSERT INTO sink1 SELECT 1, 2")
    with pytest.raises(FlinkSqlError, match="one statement"):
        planner.plan("SELECT 1; SELECT 2")
    with pytest.raises(FlinkSqlError, match="Object 'nope' not found"):
        planner.plan("SELECT * FROM nope", "STREAMING")
    assert planner.plan("SHOW TABLES", "STREAMING").rows  # DDL and SHOW work in either mode


def test_a_streaming_select_plans_a_collect_job(planner, tmp_path: Path) -> None:
    """A SELECT in STREAMING mode is a job whose one sink is the client (issue 28); an updating
    one keyed by its group keys, as into a print sink."""
    from sessioncluster.spark.flinksql.streamingjob import StreamingStatementJob, is_updating

    words = tmp_path / "words"
    words.mkdir()
    planner.plan(f"""CREATE TABLE words (word STRING) WITH ('connector' = 'filesystem',
        'path' = '{words}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    outcome = planner.plan("SELECT word, COUNT(*) AS cnt FROM words GROUP BY word", "STREAMING")
    job = outcome.job
    assert isinstance(job, StreamingStatementJob) and job.collects and job.name == "collect"
    # Flink 2.3: a count is NOT NULL
    assert (outcome.columns, outcome.column_types) == (["word", "cnt"],
                                                       ["STRING", "BIGINT NOT NULL"])
    assert job.column_types == ["STRING", "BIGINT NOT NULL"]
    assert is_updating(job) and job.inserts[0].key_positions == [0] and not job.bounded
    append = planner.plan("SELECT UPPER(word) AS w FROM words WHERE word <> 'x'", "STREAMING")
    assert isinstance(append.job, StreamingStatementJob) and not is_updating(append.job)
    bounded = planner.plan("SELECT product, SUM(qty) FROM orders GROUP BY product", "STREAMING")
    assert isinstance(bounded.job, StreamingStatementJob) and bounded.job.bounded
    # read once, yet Flink's changelog as a streaming job emits it (+I, -U/+U per change)
    assert is_updating(bounded.job) and bounded.job.inserts[0].row_kinds
    assert bounded.job.inserts[0].operator == "GroupAggregate"
    named = planner.plan("SELECT word FROM words", "STREAMING",
                         {"pipeline.name": "live words", "parallelism.default": "3"}).job
    assert isinstance(named, StreamingStatementJob) and named.name == "live words"
    session = named.inserts[0].frame.sparkSession
    assert session.conf.get("spark.sql.shuffle.partitions") == "3"
    with pytest.raises(FlinkSqlError, match="parallelism.default must be a positive integer"):
        planner.plan("SELECT word FROM words", "STREAMING", {"parallelism.default": "0"})


def test_a_streaming_statement_reads_views_as_their_queries(planner, tmp_path: Path) -> None:
    """Views made by SQL (a view of a view, a view with its own column names) are read by a
    streaming SELECT and INSERT as the queries beneath them: their tables stay streams."""
    words = tmp_path / "words"
    words.mkdir()
    planner.plan(f"""CREATE TABLE words (word STRING) WITH ('connector' = 'filesystem',
        'path' = '{words}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    planner.plan("CREATE TABLE shouted (w STRING) WITH ('connector' = 'blackhole')")
    planner.plan("CREATE TEMPORARY VIEW long_words AS SELECT word FROM words "
                 "WHERE CHAR_LENGTH(word) > 3")
    planner.plan("CREATE VIEW loud (w) AS SELECT UPPER(word) FROM long_words")
    select = planner.plan("SELECT w FROM loud", "STREAMING").job
    assert select.inserts[0].frame.isStreaming and not select.bounded
    assert select.inserts[0].sources == ["words"]
    insert = planner.plan("INSERT INTO shouted SELECT w FROM loud", "STREAMING").job
    assert insert.inserts[0].frame.isStreaming and insert.inserts[0].sources == ["words"]
    planner.plan("DROP TEMPORARY VIEW long_words")
    with pytest.raises(Exception, match="long_words"):
        planner.plan("SELECT w FROM loud", "STREAMING")


def test_columns_of_the_same_name_are_named_apart_as_flink_does(planner) -> None:
    """Flink 2.3 (PyFlink) names a join's second ``id`` ``id0`` and a third ``id1``; a name
    taken by then takes the next free one (``id00``)."""
    outcome = planner.plan("SELECT * FROM orders a JOIN orders b ON a.id = b.id")
    assert outcome.columns == ["id", "product", "qty", "price", "total",
                               "id0", "product0", "qty0", "price0", "total0"]
    assert sorted(rows(planner, "SELECT * FROM orders a JOIN orders b ON a.id = b.id"))[0][:6] \
        == (1, "apple", 3, 2.5, 7.5, 1)
    outcome = planner.plan("SELECT a.id, b.id, c.id, a.qty AS id0 FROM orders a JOIN orders b "
                           "ON a.id = b.id JOIN orders c ON c.id = a.id")
    assert outcome.columns == ["id", "id0", "id1", "id00"]


def test_a_streaming_aggregation_of_an_aggregation_runs_over_its_result(
        planner, tmp_path: Path) -> None:
    """The inner (updating) query is the streaming query; the outer one, over its current
    result, is a batch query after each micro-batch; a join of it with a stream runs on keyed
    state; a non-equi one is refused by name."""
    words = tmp_path / "words"
    words.mkdir()
    planner.plan(f"""CREATE TABLE words (word STRING) WITH ('connector' = 'filesystem',
        'path' = '{words}', 'format' = 'csv', 'source.monitor-interval' = '1s')""")
    nested = "SELECT n, COUNT(*) AS words FROM (SELECT word, COUNT(*) AS n FROM words " \
             "GROUP BY word) GROUP BY n"
    outcome = planner.plan(nested, "STREAMING")
    insert = outcome.job.inserts[0]
    assert outcome.columns == ["n", "words"] and insert.output_mode == "update"
    assert insert.frame.isStreaming and list(insert.frame.columns) == ["word", "n"]
    assert insert.key_positions == [0] and insert.outer.key_positions == [0]
    spark = insert.frame.sparkSession
    assert sorted(insert.outer.rows(spark, [("a", 2), ("b", 1), ("c", 2)])) == [(1, 1), (2, 2)]
    # a join with a stream runs on keyed state, its updating side fed by a query of its own
    streamed = planner.plan("SELECT * FROM (SELECT word, COUNT(*) AS n FROM words GROUP BY "
                            "word) a JOIN words b ON a.word = b.word", "STREAMING")
    assert streamed.columns == ["word", "n", "word0"]
    join = streamed.job.inserts[0]
    assert join.row_kinds and [f.key for f in join.feeds] == ["join-feed-0"]
    assert join.frame.columns[-1] == "__flink_rowkind" and join.replan is not None
    # one without an equality too: all its rows in one key, as Flink's single join instance
    non_equi = planner.plan("SELECT * FROM (SELECT word, COUNT(*) AS n FROM words GROUP BY "
                            "word) a JOIN words b ON a.word < b.word", "STREAMING")
    assert non_equi.job.inserts[0].row_kinds
    joined = planner.plan("SELECT * FROM words a JOIN words b ON a.word = b.word", "STREAMING")
    assert joined.columns == ["word", "word0"]
    planner.plan("CREATE TABLE tally (n INT, words DOUBLE) WITH ('connector' = 'print')")
    into = planner.plan(f"INSERT INTO tally {nested}", "STREAMING").job.inserts[0]
    assert into.output_mode == "update" and into.outer is not None
    assert sorted(into.outer.rows(spark, [("a", 2)])) == [(2, 1.0)]  # cast to the sink's types


def test_set_reset_and_the_runtime_mode(planner) -> None:
    planner.plan("SET 'execution.runtime-mode' = 'batch'")
    assert ("execution.runtime-mode", "batch") in rows(planner, "SET")
    outcome = planner.plan("SELECT 1 AS x", "STREAMING")  # the session's SET wins
    assert outcome.job is not None and [tuple(r) for r in outcome.job.run().collect()] == [(1,)]
    planner.plan("RESET 'execution.runtime-mode'")
    assert rows(planner, "SET") == []


def test_timestamps_have_flinks_precision(planner, tmp_path: Path) -> None:
    """A declared TIMESTAMP(3) and the window bounds, however aliased, answer TIMESTAMP(3) (Flink
    prints three fractional digits); a TIMESTAMP declared without precision is TIMESTAMP(6)."""
    (tmp_path / "bids.csv").write_text("2020-04-15 08:05:00,4.00,2020-04-15 08:05:00\n"
                                       "2020-04-15 08:11:00,3.00,2020-04-15 08:11:00\n")
    planner.plan(f"""CREATE TABLE bids (bidtime TIMESTAMP(3), price DECIMAL(10, 2), t6 TIMESTAMP,
                       WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND)
                     WITH ('connector' = 'filesystem', 'path' = '{tmp_path / "bids.csv"}',
                           'format' = 'csv')""")
    plain = planner.plan("SELECT bidtime, t6, price FROM bids")
    assert plain.column_types == ["TIMESTAMP(3)", "TIMESTAMP(6)", "DECIMAL(10, 2)"]
    tvf = planner.plan("""SELECT window_start AS ws, window_end, window_time, SUM(price) AS p
                          FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
                          GROUP BY window_start, window_end, window_time""")
    # Flink 2.3 (/work/briefs/data/ftypes2/q6.out): window bounds, a count NOT NULL
    assert tvf.column_types == ["TIMESTAMP(3) NOT NULL"] * 3 + ["DECIMAL(38, 2)"]
    legacy = planner.plan("""SELECT TUMBLE_START(bidtime, INTERVAL '10' MINUTE) AS s,
                               TUMBLE_END(bidtime, INTERVAL '10' MINUTE) AS e, COUNT(*) AS n
                             FROM bids GROUP BY TUMBLE(bidtime, INTERVAL '10' MINUTE)""")
    assert legacy.column_types == ["TIMESTAMP(3) NOT NULL"] * 2 + ["BIGINT NOT NULL"]
    cast = planner.plan("SELECT CAST(bidtime AS TIMESTAMP(6)) AS c FROM bids")
    assert cast.column_types == ["TIMESTAMP(6)"]


def test_a_catalog_scope_has_tables_of_its_own(planner) -> None:
    """Statements with a catalog scope (a program's TableEnvironment) see its own tables only;
    two scopes and the shared catalog may each hold a table of the same name."""
    datagen = "(a INT) WITH ('connector' = 'datagen', 'number-of-rows' = '{n}')"
    for scope, n in (("p1", 2), ("p2", 5)):
        conf = {"sessioncluster.catalog-scope": scope}
        planner.plan(f"CREATE TABLE t {datagen.format(n=n)}", configuration=conf)
        with pytest.raises(FlinkSqlError, match="orders"):
            planner.plan("SELECT * FROM orders", configuration=conf)
    planner.plan(f"CREATE TABLE t {datagen.format(n=1)}")
    for scope, n in (("p1", 2), ("p2", 5), (None, 1)):
        conf = {"sessioncluster.catalog-scope": scope} if scope else None
        outcome = planner.plan("SELECT COUNT(*) FROM t", configuration=conf)
        assert outcome.job is not None and outcome.job.run().collect()[0][0] == n
    shared = {r[0] for r in rows(planner, "SHOW TABLES")}
    assert "orders" in shared
    assert "t" in shared


def test_a_select_star_over_a_subquery_keeps_its_window_bounds_timestamp_3() -> None:
    # the Table API's order_by wraps the windowed query: Flink prints its bounds as TIMESTAMP(3)
    ordered = sqlglot.parse_one(
        "SELECT * FROM (SELECT window_start AS ws, COUNT(*) AS n FROM t GROUP BY window_start) "
        "AS q ORDER BY ws", read="spark")
    assert window_bound_types(ordered, ["TIMESTAMP(6)", "BIGINT"]) == ["TIMESTAMP(3)", "BIGINT"]
    joined = sqlglot.parse_one("SELECT * FROM (SELECT window_start FROM t) AS a, u", read="spark")
    assert window_bound_types(joined, ["TIMESTAMP(6)"]) == ["TIMESTAMP(6)"]


def count(planner: FlinkSqlPlanner, table: str) -> int:
    return rows(planner, f"SELECT COUNT(*) AS n FROM {table}")[0][0]


def test_a_temporary_view_shadows_the_permanent_table_until_dropped(planner, spark) -> None:
    """Flink resolves a name to a temporary object first; dropping it shows the permanent one."""
    assert count(planner, "orders") == 3
    # the temporary view's own query reads the permanent table it shadows
    planner.plan("CREATE TEMPORARY VIEW orders AS SELECT * FROM orders WHERE product = 'apple'")
    assert count(planner, "orders") == 2
    assert rows(planner, "SELECT o.id FROM orders AS o WHERE o.id > 1") == [(3,)]
    with pytest.raises(FlinkSqlError, match="Drop it first"):
        _drop_shadowed_view(planner)
    planner.plan("DROP TEMPORARY VIEW orders")
    assert count(planner, "orders") == 3
    # a client's temporary view (create_temporary_view of a DataFrame) is a Spark view
    spark.createDataFrame([(9,)], "id BIGINT").createOrReplaceTempView("orders")
    assert count(planner, "orders") == 1
    assert count(planner, "orders") == 1  # a query does not make the catalog table win again
    planner.plan("DROP TEMPORARY VIEW orders")
    assert count(planner, "orders") == 3


def _drop_shadowed_view(planner: FlinkSqlPlanner) -> None:
    planner.plan("CREATE VIEW apples AS SELECT * FROM orders WHERE product = 'apple'")
    planner.plan("CREATE TEMPORARY VIEW apples AS SELECT * FROM orders WHERE id = 1")
    assert count(planner, "apples") == 1
    try:
        planner.plan("DROP VIEW apples")  # Flink: the temporary one must go first
    finally:
        planner.plan("DROP TEMPORARY VIEW apples")
        assert count(planner, "apples") == 2
        planner.plan("DROP VIEW apples")


def test_a_temporary_table_shadows_the_permanent_table_until_dropped(planner) -> None:
    planner.plan("CREATE TEMPORARY TABLE orders (id BIGINT) "
                 "WITH ('connector' = 'datagen', 'number-of-rows' = '5')")
    assert count(planner, "orders") == 5
    assert [r[0] for r in rows(planner, "DESCRIBE orders")] == ["id"]
    with pytest.raises(FlinkSqlError, match="Temporary table .* exists. Drop it first"):
        planner.plan("DROP TABLE orders")
    planner.plan("DROP TEMPORARY TABLE orders")
    assert count(planner, "orders") == 3
    assert "total" in [r[0] for r in rows(planner, "DESCRIBE orders")]


def test_the_statements_that_change_the_catalog_say_so(planner) -> None:
    """What a JobManager keeps in its HA store for a new leader to plan again."""
    changes = {statement: planner.plan(statement).changes_catalog for statement in (
        "CREATE VIEW apples AS SELECT * FROM orders WHERE product = 'apple'",
        "SET 'parallelism.default' = '2'", "SET", "SHOW TABLES", "DESCRIBE orders",
        "SELECT id FROM orders", "RESET", "DROP VIEW apples")}
    assert [s for s, changed in changes.items() if changed] == [
        "CREATE VIEW apples AS SELECT * FROM orders WHERE product = 'apple'",
        "SET 'parallelism.default' = '2'", "RESET", "DROP VIEW apples"]


def test_a_view_reads_the_files_its_table_has_at_each_query(planner, tmp_path: Path) -> None:
    """A view is planned again at each query, as a catalog table is read again (and so is a
    view a new leader made from its statement, under HA)."""
    directory = tmp_path / "lines"
    directory.mkdir()
    (directory / "a.csv").write_text("x\ny\n")
    planner.plan(f"CREATE TABLE lines (w STRING) WITH ('connector' = 'filesystem', "
                 f"'path' = '{directory}', 'format' = 'csv')")
    planner.plan("CREATE VIEW xs AS SELECT w FROM lines WHERE w = 'x'")
    assert count(planner, "xs") == 1
    (directory / "b.csv").write_text("x\n")
    assert count(planner, "xs") == 2


def test_how_a_select_result_reaches_its_client_is_the_requests_alone() -> None:
    from sessioncluster.common.sqlscript import MAX_TABLE_RESULT_ROWS, RESULT_MODE
    from sessioncluster.spark.flinksql.executor import select_configuration

    session = {RESULT_MODE: "table", MAX_TABLE_RESULT_ROWS: "5", "parallelism.default": "3"}
    # a collect() asks for nothing: the session's SET of the SQL client's mode does not apply
    assert select_configuration({}, session) == {"parallelism.default": "3"}
    cell = {RESULT_MODE: "changelog", MAX_TABLE_RESULT_ROWS: "1000", "parallelism.default": "1"}
    assert select_configuration(cell, session) == {
        RESULT_MODE: "changelog", MAX_TABLE_RESULT_ROWS: "1000", "parallelism.default": "3"}


def test_window_bounds_over_a_timestamp_ltz_rowtime() -> None:
    # Flink: window_start/window_end TIMESTAMP(3) whatever the rowtime; window_time keeps it
    query = sqlglot.parse_one("SELECT window_start, window_end, window_time, COUNT(*) AS n "
                              "FROM w GROUP BY window_start, window_end, window_time",
                              read="spark")
    assert window_bound_types(query, ["TIMESTAMP_LTZ(6)"] * 3 + ["BIGINT"]) == [
        "TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP_LTZ(3)", "BIGINT"]


def test_a_tables_spark_view_is_made_again_only_when_its_files_change(
        planner, tmp_path: Path, monkeypatch) -> None:
    """A query reads the files the table has at its start; the view over unchanged files (same
    paths, sizes, modification times) is the one made before. A dropped table's view is not."""
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq

    from sessioncluster.spark.flinksql import sources

    made: list[str] = []
    read_table = sources.connectors.read_table
    monkeypatch.setattr(sources.connectors, "read_table",
                        lambda spark, table, streaming: made.append(table.name)
                        or read_table(spark, table, streaming))
    directory = tmp_path / "bids"
    directory.mkdir()

    def write(name: str, prices: list[float], mtime_s: int) -> None:
        path = directory / name
        pq.write_table(pa.table({"price": pa.array(prices, pa.float64())}), path)
        os.utime(path, ns=(mtime_s * 10**9, mtime_s * 10**9))

    def total() -> float:
        return rows(planner, "SELECT SUM(price) AS s FROM bids")[0][0]

    create = (f"CREATE TABLE bids (price DOUBLE) WITH ('connector' = 'filesystem', "
              f"'path' = '{directory}', 'format' = 'parquet')")
    write("a.parquet", [1.0, 2.0], 1_000)
    planner.plan(create)
    assert (total(), total(), made) == (3.0, 3.0, ["bids"])
    write("b.parquet", [4.0], 1_000)  # a new file
    assert (total(), made) == (7.0, ["bids"] * 2)
    write("b.parquet", [5.0], 2_000)  # rewritten: the same size, a later modification time
    assert (total(), made) == (8.0, ["bids"] * 3)
    (directory / "a.parquet").unlink()
    assert (total(), total(), made) == (5.0, 5.0, ["bids"] * 4)
    planner.plan("DROP TABLE bids")
    planner.plan(create)  # the same definition over the same files: its view was dropped
    assert (total(), made) == (5.0, ["bids"] * 5)
    # a datagen table is read anew at each query
    planner.plan("CREATE TEMPORARY TABLE gen (id BIGINT) "
                 "WITH ('connector' = 'datagen', 'number-of-rows' = '4')")
    assert count(planner, "gen") == count(planner, "gen") == 4
    assert made.count("gen") == 2


def test_a_streaming_typeof_is_typed_from_the_declared_columns(planner) -> None:
    outcome = planner.plan("SELECT TYPEOF(product) AS t FROM orders", runtime_mode="STREAMING")
    assert (outcome.columns, outcome.column_types) == (["t"], ["STRING"])
    with pytest.raises(FlinkSqlError, match="not supported in STREAMING"):
        planner.plan("SELECT TYPEOF(REVERSE(product)) FROM orders", runtime_mode="STREAMING")
