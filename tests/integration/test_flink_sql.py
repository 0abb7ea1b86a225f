"""Flink SQL on a real session, in BATCH: Flink's own documentation examples (the Bid table of
the window TVF pages) with the filesystem connector, checked against the rows Flink's
documentation gives; INSERT INTO, the catalog statements, and bad statements."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest

import sessioncluster
from sessioncluster.client.session import SqlExecutionException
from sessioncluster.common import RuntimeExecutionMode

pytestmark = pytest.mark.integration

# Flink's docs (dev/table/sql/queries/window-tvf.md): the Bid table's rows
BIDS = [("2020-04-15 08:05:00", "4.00", "C"), ("2020-04-15 08:07:00", "2.00", "A"),
        ("2020-04-15 08:09:00", "5.00", "D"), ("2020-04-15 08:11:00", "3.00", "B"),
        ("2020-04-15 08:13:00", "1.00", "E"), ("2020-04-15 08:17:00", "6.00", "F")]


def t(hhmm: str) -> dt.datetime:
    return dt.datetime.fromisoformat(f"2020-04-15 {hhmm}:00")


@pytest.fixture(scope="module")
def bids(session: sessioncluster.Session, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The Bid table of Flink's docs, as a CSV file behind the filesystem connector."""
    path = tmp_path_factory.mktemp("bid") / "bids.csv"
    path.write_text("".join(f"{ts},{price},{item}\n" for ts, price, item in BIDS))
    session.execute_sql("DROP TABLE IF EXISTS Bid")
    session.execute_sql(f"""
        CREATE TABLE Bid (
            bidtime TIMESTAMP(3),
            price DECIMAL(10, 2),
            item STRING,
            WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND
        ) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')""")
    return "Bid"


def rows(session: sessioncluster.Session, query: str) -> list[tuple]:
    result = session.execute_sql(query)
    assert result.result_kind == "SUCCESS_WITH_CONTENT"
    return [tuple(r.values()) for r in result.table.to_pylist()]


def test_a_ddl_statement_answers_ok_and_runs_no_job(session, bids) -> None:
    before = {j.job_id for j in session.jobs()}
    result = session.execute_sql("CREATE TABLE IF NOT EXISTS Bid (x INT) WITH ('connector' = "
                                 "'blackhole')")
    assert (result.result_kind, result.job_id) == ("SUCCESS", "")
    assert result.table.to_pylist() == [{"result": "OK"}]
    assert {j.job_id for j in session.jobs()} == before
    assert ("Bid",) in rows(session, "SHOW TABLES")


def test_describe_shows_the_rowtime_and_watermark(session, bids) -> None:
    """PyFlink 2.3: the rowtime marker in STREAMING only, the watermark in both modes."""
    described = {r[0]: r for r in rows(session, "DESCRIBE Bid")}
    assert described["bidtime"][1] == "TIMESTAMP(3)"  # BATCH: no time attributes
    assert "INTERVAL '1' SECOND" in described["bidtime"][5]
    assert described["price"][1] == "DECIMAL(10, 2)"
    streaming = session.execute_sql("DESCRIBE Bid", runtime_mode=RuntimeExecutionMode.STREAMING
                                    ).table.to_pylist()
    assert {r["name"]: r["type"] for r in streaming}["bidtime"] == "TIMESTAMP(3) *ROWTIME*"


def test_tumble_window_tvf_gives_flinks_documented_rows(session, bids) -> None:
    got = rows(session, """
        SELECT window_start, window_end, SUM(price) AS price
        FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
        GROUP BY window_start, window_end""")
    assert sorted(got) == [(t("08:00"), t("08:10"), Decimal("11.00")),
                           (t("08:10"), t("08:20"), Decimal("10.00"))]
    job = max((j for j in session.jobs() if j.name == "collect"), key=lambda j: j.start_time)
    assert job.status.name == "FINISHED"


def test_hop_window_tvf_gives_flinks_documented_rows(session, bids) -> None:
    got = rows(session, """
        SELECT window_start, window_end, SUM(price) AS price
        FROM TABLE(HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES))
        GROUP BY window_start, window_end""")
    assert sorted(got) == [(t("08:00"), t("08:10"), Decimal("11.00")),
                           (t("08:05"), t("08:15"), Decimal("15.00")),
                           (t("08:10"), t("08:20"), Decimal("10.00")),
                           (t("08:15"), t("08:25"), Decimal("6.00"))]


def test_insert_into_a_filesystem_table_and_read_it_back(session, bids, tmp_path: Path) -> None:
    out = tmp_path / "totals"
    session.execute_sql("DROP TABLE IF EXISTS totals")
    session.execute_sql(f"""
        CREATE TABLE totals (item STRING, total DECIMAL(10, 2))
        WITH ('connector' = 'filesystem', 'path' = '{out}', 'format' = 'json')""")
    result = session.execute_sql("INSERT INTO totals SELECT item, SUM(price) FROM Bid "
                                 "GROUP BY item")
    assert result.columns == ["default_catalog.default_database.totals"]
    assert result.job_id and result.table.to_pylist() == [
        {"default_catalog.default_database.totals": -1}]
    assert sorted(rows(session, "SELECT item, total FROM totals")) == sorted(
        (item, Decimal(price)) for _, price, item in BIDS)
    assert not [p for p in out.rglob("*") if p.name.startswith(".")]  # nothing in progress


def test_alter_table_set_path_reads_the_new_path(session, tmp_path: Path) -> None:
    """ALTER TABLE ... SET of a filesystem table's path (Flink 2.3: OK, SHOW CREATE TABLE shows
    the new path): the next query reads the files there."""
    for name, text in (("old", "1,a\n"), ("new", "2,b\n3,c\n")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "part.csv").write_text(text)
    session.execute_sql("DROP TABLE IF EXISTS moved")
    session.execute_sql(f"CREATE TABLE moved (id INT, tag STRING) WITH ('connector' = "
                        f"'filesystem', 'path' = '{tmp_path / 'old'}', 'format' = 'csv')")
    assert rows(session, "SELECT id, tag FROM moved") == [(1, "a")]
    result = session.execute_sql(f"ALTER TABLE moved SET ('path' = '{tmp_path / 'new'}')")
    assert result.table.to_pylist() == [{"result": "OK"}]
    assert sorted(rows(session, "SELECT id, tag FROM moved")) == [(2, "b"), (3, "c")]
    assert f"'path' = '{tmp_path / 'new'}'" in rows(session, "SHOW CREATE TABLE moved")[0][0]
    session.execute_sql("DROP TABLE moved")


def test_a_query_reads_the_sessions_views_too(session) -> None:
    import pandas as pd

    session.create_temporary_view("flink_sql_words", pd.DataFrame({"w": ["a", "b", "a"]}))
    assert sorted(rows(session, "SELECT w, COUNT(*) AS n FROM flink_sql_words GROUP BY w")) == [
        ("a", 2), ("b", 1)]


def test_a_temporary_view_shadows_a_catalog_table_until_dropped(session, bids) -> None:
    """Flink's name resolution: the session's temporary view (a DataFrame registered with
    create_temporary_view, or CREATE TEMPORARY VIEW) wins over the catalog table Bid."""
    import pandas as pd

    assert rows(session, "SELECT COUNT(*) FROM Bid") == [(6,)]
    session.create_temporary_view("Bid", pd.DataFrame({"item": ["X", "Y"]}))
    for _ in range(2):  # a query does not register the catalog table over it
        assert sorted(rows(session, "SELECT item FROM Bid")) == [("X",), ("Y",)]
    session.execute_sql("DROP TEMPORARY VIEW Bid")
    assert rows(session, "SELECT COUNT(*) FROM Bid") == [(6,)]
    session.execute_sql("CREATE TEMPORARY VIEW Bid AS SELECT * FROM Bid WHERE price > 3")
    assert sorted(rows(session, "SELECT item FROM Bid")) == [("C",), ("D",), ("F",)]
    session.execute_sql("DROP TEMPORARY VIEW Bid")
    assert rows(session, "SELECT COUNT(*) FROM Bid") == [(6,)]


def test_bad_statements_fail_clearly_and_the_session_goes_on(session, bids) -> None:
    with pytest.raises(SqlExecutionException, match="SQL parse failed"):
        session.execute_sql("SELECT * FROMM Bid")
    with pytest.raises(SqlExecutionException, match="no_such_table"):
        session.execute_sql("SELECT * FROM no_such_table")
    with pytest.raises(SqlExecutionException, match="kafkaa"):
        session.execute_sql("CREATE TABLE k (a INT) WITH ('connector' = 'kafkaa')")
    assert rows(session, "SELECT COUNT(*) FROM Bid") == [(6,)]


def test_a_views_column_list_names_its_columns(session) -> None:
    """``CREATE VIEW v (a, b) AS ...`` (Flink's docs: CREATE VIEW): the list names the query's
    columns; a list of another length is Flink's error. Checked against PyFlink 2.3."""
    session.execute_sql("CREATE TEMPORARY VIEW flink_sql_pairs (n, word) AS VALUES (1, 'x'), "
                        "(2, 'y')")
    session.execute_sql("CREATE VIEW flink_sql_pairs2 (k, w) AS SELECT n, word FROM "
                        "flink_sql_pairs WHERE n > 1")
    try:
        assert sorted(rows(session, "SELECT word, n FROM flink_sql_pairs")) == [("x", 1),
                                                                             ("y", 2)]
        assert rows(session, "SELECT w, k FROM flink_sql_pairs2") == [("y", 2)]
        with pytest.raises(SqlExecutionException, match="VIEW definition and input fields "
                                                        "not match"):
            session.execute_sql("CREATE VIEW flink_sql_bad (a) AS SELECT n, word FROM "
                                "flink_sql_pairs")
        text = rows(session, "SHOW CREATE VIEW flink_sql_pairs2")[0][0]
        assert text.startswith("CREATE VIEW `default_catalog`.`default_database`."
                               "`flink_sql_pairs2` (\n  `k`,\n  `w`\n)\nAS SELECT `n`, `word`")
    finally:
        session.execute_sql("DROP VIEW IF EXISTS flink_sql_pairs2")
        session.execute_sql("DROP TEMPORARY VIEW IF EXISTS flink_sql_pairs")


def test_show_create_table_and_use(session, bids) -> None:
    """SHOW CREATE TABLE in Flink's layout; USE of the one catalog and database there are, and
    Flink's errors for another one or for a view/table mix-up."""
    text = rows(session, "SHOW CREATE TABLE Bid")[0][0]
    assert text.startswith("CREATE TABLE `default_catalog`.`default_database`.`Bid` (\n"
                           "  `bidtime` TIMESTAMP(3),\n  `price` DECIMAL(10, 2),\n"
                           "  `item` VARCHAR(2147483647),\n"
                           "  WATERMARK FOR `bidtime` AS `bidtime` - INTERVAL '1' SECOND\n)\n"
                           "WITH (\n  'connector' = 'filesystem',\n  'format' = 'csv',\n")
    with pytest.raises(SqlExecutionException, match="SHOW CREATE VIEW is only supported for "
                                                    "views, but .* is a table"):
        session.execute_sql("SHOW CREATE VIEW Bid")
    with pytest.raises(SqlExecutionException, match="Table with identifier .*`nope` does not "
                                                    "exist"):
        session.execute_sql("SHOW CREATE TABLE nope")
    for statement in ("USE CATALOG default_catalog", "USE default_database",
                      "USE default_catalog.default_database"):
        assert session.execute_sql(statement).result_kind == "SUCCESS"
    with pytest.raises(SqlExecutionException, match=r"A catalog with name \[nope\] does not "
                                                    "exist"):
        session.execute_sql("USE CATALOG nope")
    with pytest.raises(SqlExecutionException, match=r"A database with name \[nope\] does not "
                                                    r"exist in the catalog: \[default_catalog\]"):
        session.execute_sql("USE nope")
    assert rows(session, "SELECT COUNT(*) FROM Bid") == [(6,)]


def test_integer_overflow_and_casts_are_javas_as_flinks(session, bids) -> None:
    """Flink 2.3 (Java's arithmetic, where Spark's ANSI mode raises): INT + and SUM wrap
    within the INT, a DOUBLE cast to BIGINT saturates, a DOUBLE divided by 0 is Infinity."""
    assert rows(session, "SELECT CAST(price AS INT) + 2147483645, CAST(CAST(price AS DOUBLE) * "
                         "1e20 AS BIGINT), CAST(price AS DOUBLE) / 0 FROM Bid WHERE item = 'F'") \
        == [(-2147483645, 9223372036854775807, float("inf"))]
    assert rows(session, "SELECT SUM(CAST(price AS INT) * 1000000000) FROM Bid") \
        == [(-474836480,)]


def test_typeof_and_a_values_views_types_are_flinks(session, capsys) -> None:
    """Flink 2.3's answers (flink_batch.out, fbuiltins/flink1.out): DESCRIBE of a VALUES view,
    TYPEOF evaluated at planning, a TIMESTAMP(0) column printed without a fraction."""
    from sessioncluster.pyflink.table import EnvironmentSettings, TableEnvironment

    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode(), session=session)
    t_env.execute_sql("""CREATE TEMPORARY VIEW typed_orders(order_id, product, amount, ts) AS
        VALUES (1, 'apple', 3, TIMESTAMP '2024-01-01 10:00:01'),
               (4, 'plum', 9, TIMESTAMP '2024-01-01 10:00:15')""")
    try:
        with t_env.execute_sql("DESCRIBE typed_orders").collect() as described:
            assert [tuple(r)[:3] for r in described] == [
                ("order_id", "INT", False), ("product", "VARCHAR(5)", False),
                ("amount", "INT", False), ("ts", "TIMESTAMP(0)", False)]
        with t_env.execute_sql("SELECT TYPEOF(product), TYPEOF(product || 'x'), TYPEOF(1.5), "
                               "TYPEOF(CAST(NULL AS INT)) FROM typed_orders "
                               "WHERE order_id = 1").collect() as typed:
            assert [tuple(r) for r in typed] == [
                ("VARCHAR(5) NOT NULL", "VARCHAR(6) NOT NULL", "DECIMAL(2, 1) NOT NULL", "INT")]
        result = t_env.execute_sql("SELECT * FROM typed_orders ORDER BY amount DESC LIMIT 1")
        assert [str(t) for t in result.get_resolved_schema().get_column_data_types()] == [
            "INT NOT NULL", "VARCHAR(5) NOT NULL", "INT NOT NULL", "TIMESTAMP(0) NOT NULL"]
        capsys.readouterr()
        result.print()
        printed = capsys.readouterr().out
        assert "| 2024-01-01 10:00:15 |" in printed and ".000000" not in printed
        # Flink 2.3 (/work/briefs/data/ftypes2/q5.out): a count and a grouping key NOT NULL,
        # COLLECT a MULTISET printed {value=count}, a set operation's least restrictive type
        orders = t_env.from_path("typed_orders")
        counted = orders.group_by(orders.product).select(orders.product,
                                                         orders.amount.count.alias("n"))
        assert str(counted.get_resolved_schema()) == \
            "(\n  `product` VARCHAR(5) NOT NULL,\n  `n` BIGINT NOT NULL\n)"
        collected = t_env.execute_sql("SELECT product, COLLECT(amount) AS amounts FROM "
                                      "typed_orders GROUP BY product")
        assert collected.get_table_schema().get_field_type_texts() == [
            "VARCHAR(5) NOT NULL", "MULTISET<INT NOT NULL> NOT NULL"]
        capsys.readouterr()
        collected.print()
        assert "|                          {3=1} |" in capsys.readouterr().out
        united = t_env.sql_query("SELECT product FROM typed_orders UNION ALL SELECT 'banana'")
        assert united.get_schema().get_field_type_texts() == ["VARCHAR(6) NOT NULL"]
    finally:
        t_env.execute_sql("DROP TEMPORARY VIEW typed_orders")


def test_create_table_as_select_makes_the_table_and_runs_its_insert(session,
                                                                    tmp_path: Path) -> None:
    """BATCH CTAS into a filesystem csv table: Flink 2.3's schema (SHOW CREATE TABLE) and the
    files its job writes (/work/briefs/data/ctas/probe_ctas*.out)."""
    out = tmp_path / "ctas_counts"
    session.execute_sql("DROP TABLE IF EXISTS ctas_counts")
    session.execute_sql("CREATE TEMPORARY VIEW ctas_v AS SELECT * FROM (VALUES ('a', 1), "
                        "('b', 2), ('a', 3)) AS x(word, k)")
    result = session.execute_sql(
        f"CREATE TABLE ctas_counts WITH ('connector'='filesystem','path'='{out}',"
        "'format'='csv') AS SELECT word, COUNT(*) AS n FROM ctas_v GROUP BY word")
    assert result.job_id and result.table.to_pylist() == [
        {"default_catalog.default_database.ctas_counts": -1}]
    assert rows(session, "SHOW CREATE TABLE ctas_counts")[0][0] == (
        "CREATE TABLE `default_catalog`.`default_database`.`ctas_counts` (\n"
        "  `word` CHAR(1) NOT NULL,\n  `n` BIGINT NOT NULL\n)\nWITH (\n"
        "  'connector' = 'filesystem',\n  'format' = 'csv',\n"
        f"  'path' = '{out}'\n)\n")
    written = sorted(line for f in out.rglob("*") if f.is_file()
                     and not f.name.startswith((".", "_")) for line in f.read_text().splitlines())
    assert written == ["a,2", "b,1"]  # Flink's file: 'a,2\nb,1\n'
    assert sorted(rows(session, "SELECT * FROM ctas_counts")) == [("a", 2), ("b", 1)]
    session.execute_sql("DROP TEMPORARY VIEW ctas_v")
