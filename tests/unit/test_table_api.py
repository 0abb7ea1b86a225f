"""PyFlink's Table API on the client: the Flink SQL text of each operation, Flink's tableau
printing, and the rows (with their RowKind) of a TableResult.

The gateway here is an in-process recorder standing in for ``Session.execute_flink_sql``: these
tests check the text the client sends and how it renders what comes back, nothing that runs.
Where Spark SQL's grammar equals Flink SQL's, the text must also parse as Spark SQL (sqlglot).
"""

from __future__ import annotations

import datetime
import decimal
import io
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import pandas as pd
import pyarrow as pa
import pytest
import sqlglot

from sessioncluster.api.table.environment import EnvironmentSettings, TableConfig, TableEnvironment
from sessioncluster.api.table.expressions import (
    CURRENT_ROW,
    UNBOUNDED_RANGE,
    call,
    col,
    concat,
    if_then_else,
    lit,
)
from sessioncluster.api.table.result import (
    ChangesDroppedError,
    ResultKind,
    TableResult,
    cell_string,
    format_tableau,
)
from sessioncluster.api.table.types import DataTypes
from sessioncluster.api.table.window import Over, Session, Slide, Tumble
from sessioncluster.common.configuration import Configuration
from sessioncluster.common.execution_mode import RuntimeExecutionMode
from sessioncluster.common.types import Row, RowKind


@dataclass
class StatementResult:
    """The fields of the lead's ``SqlStatementResult``."""

    job_id: str = ""
    result_kind: str = "SUCCESS"
    columns: list[str] = field(default_factory=list)
    column_types: list[str] = field(default_factory=list)
    table: Any = field(default_factory=lambda: pa.table({}))
    row_kinds: list[RowKind] | None = None


class RecordingGateway:
    """Records the statements and views a TableEnvironment sends; answers with ``answer``."""

    def __init__(self, answer: Callable[[str], StatementResult] | None = None) -> None:
        self.statements: list[tuple[str, RuntimeExecutionMode, dict[str, str]]] = []
        self.views: dict[str, pd.DataFrame] = {}
        self.answer = answer or (lambda stmt: StatementResult())

    def execute_flink_sql(self, statement: str, runtime_mode: RuntimeExecutionMode,
                          configuration: dict[str, str]) -> StatementResult:
        self.statements.append((statement, runtime_mode, configuration))
        return self.answer(statement)

    def create_temporary_view(self, name: str, df: Any) -> None:
        self.views[name] = df

    def job(self, job_id: str) -> Any:
        return ("job", job_id)

    @property
    def last(self) -> str:
        return self.statements[-1][0]


def norm(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip()


def spark_parses(sql: str) -> None:
    sqlglot.parse_one(sql, read="spark")


@pytest.fixture
def gateway() -> RecordingGateway:
    return RecordingGateway()


@pytest.fixture
def t_env(gateway: RecordingGateway) -> TableEnvironment:
    return TableEnvironment(gateway, EnvironmentSettings.in_batch_mode())


@pytest.fixture
def orders(t_env: TableEnvironment) -> Any:
    return t_env.from_path("orders")


# -- expressions --------------------------------------------------------------------------------
@pytest.mark.parametrize("expr, sql", [
    (col("a") + 1, "(`a` + 1)"),
    (2 * col("a"), "(2 * `a`)"),
    (col("a") / col("b") - 1, "((`a` / `b`) - 1)"),
    (col("a") % 3, "MOD(`a`, 3)"),
    (-col("a"), "(- `a`)"),
    ((col("a") > 1) & (col("b") <= 2), "((`a` > 1) AND (`b` <= 2))"),
    ((col("a") == 1) | ~(col("b") != 'x'), "((`a` = 1) OR (NOT (`b` <> 'x')))"),
    (col("a").cast(DataTypes.BIGINT()), "CAST(`a` AS BIGINT)"),
    (col("a").is_null, "(`a` IS NULL)"),
    (col("a").is_not_null, "(`a` IS NOT NULL)"),
    (col("s").like("H%"), "(`s` LIKE 'H%')"),
    (col("a").in_(1, 2, 3), "(`a` IN (1, 2, 3))"),
    (col("a").between(1, 5), "(`a` BETWEEN 1 AND 5)"),
    (if_then_else(col("a") > 0, "pos", "neg"), "CASE WHEN (`a` > 0) THEN 'pos' ELSE 'neg' END"),
    (concat(col("a"), "-", col("b")), "CONCAT(`a`, '-', `b`)"),
    (col("s").upper_case, "UPPER(`s`)"),
    (col("s").lower_case, "LOWER(`s`)"),
    (col("s").char_length, "CHAR_LENGTH(`s`)"),
    (col("s").substring(1, 3), "SUBSTRING(`s`, 1, 3)"),
    (col("b").sum.alias("total"), "SUM(`b`) AS `total`"),
    (col("b").count.distinct, "COUNT(DISTINCT `b`)"),
    (col("b").avg, "AVG(`b`)"),
    (col("b").min, "MIN(`b`)"),
    (col("b").max, "MAX(`b`)"),
    (call("ABS", col("a")), "ABS(`a`)"),
    (lit("it's"), "'it''s'"),
    (lit(1.5), "1.5E0"),
    (lit(True), "TRUE"),
    (lit(None), "NULL"),
    (lit(decimal.Decimal("1.50")), "1.50"),
    (lit(1, DataTypes.TINYINT()), "CAST(1 AS TINYINT)"),
    (lit(datetime.date(2024, 1, 2)), "DATE '2024-01-02'"),
    (lit(datetime.datetime(2024, 1, 2, 3, 4, 5)), "TIMESTAMP '2024-01-02 03:04:05'"),
])
def test_expression_renders_as_flink_sql(expr: Any, sql: str) -> None:
    assert expr.to_sql() == sql
    spark_parses(f"SELECT {sql} FROM t")


@pytest.mark.parametrize("expr, sql", [
    (lit(10).seconds, "INTERVAL '10' SECOND"),
    (lit(5).minutes, "INTERVAL '5' MINUTE"),
    (lit(2).hours, "INTERVAL '2' HOUR"),
    (lit(3).days, "INTERVAL '3' DAY"),
    (lit(250).millis, "INTERVAL '0.250' SECOND"),
])
def test_interval_literals(expr: Any, sql: str) -> None:
    assert expr.to_sql() == sql
    spark_parses(f"SELECT ts + {sql} FROM t")


def test_an_expression_has_no_truth_value() -> None:
    with pytest.raises(TypeError, match="&"):
        bool(col("a") > 1)


# -- relational operations ----------------------------------------------------------------------
def test_select_where_filter(orders: Any) -> None:
    t = orders.select(col("name"), col("revenue") * 2).where(col("revenue") > 10)
    assert norm(t.query_sql) == (
        "SELECT * FROM (SELECT `name`, (`revenue` * 2) AS `_c1` FROM (SELECT * FROM `orders`)) "
        "WHERE (`revenue` > 10)")
    assert t.filter(col("name") == "Jack").query_sql.endswith("WHERE (`name` = 'Jack')")
    with pytest.raises(TypeError, match="call_sql"):
        t.where("revenue > 10")
    assert t.get_column_names() == ["name", "_c1"]
    spark_parses(t.query_sql)


def test_group_by_select_names_aggregates_as_flink(orders: Any) -> None:
    t = orders.group_by(col("name")).select(col("name"), col("revenue").sum,
                                            col("revenue").count.alias("n"), col("revenue").max)
    # Flink numbers every aggregate met, aliased or not: the last one is EXPR$2
    assert t.get_column_names() == ["name", "EXPR$0", "n", "EXPR$2"]
    assert norm(t.query_sql) == (
        "SELECT `name`, SUM(`revenue`) AS `EXPR$0`, COUNT(`revenue`) AS `n`, "
        "MAX(`revenue`) AS `EXPR$2` FROM (SELECT * FROM `orders`) GROUP BY `name`")
    spark_parses(t.query_sql)
    other = orders.select(col("revenue").cast(DataTypes.BIGINT()), col("revenue").sum + 1)
    assert other.get_column_names() == ["revenue-BIGINT", "_c1"]


def test_tumble_window_renders_a_window_tvf(orders: Any) -> None:
    t = (orders.window(Tumble.over(lit(10).minutes).on(col("ts")).alias("w"))
         .group_by(col("name"), col("w"))
         .select(col("name"), col("w").start.alias("ws"), col("w").end.alias("we"),
                 col("revenue").sum.alias("rev")))
    assert norm(t.query_sql) == norm(
        "WITH `_window_input` AS (SELECT * FROM `orders`) "
        "SELECT `name`, window_start AS `ws`, window_end AS `we`, SUM(`revenue`) AS `rev` "
        "FROM TABLE(TUMBLE(TABLE `_window_input`, DESCRIPTOR(`ts`), INTERVAL '10' MINUTE)) "
        "GROUP BY `name`, window_start, window_end")
    assert t.get_column_names() == ["name", "ws", "we", "rev"]


def test_slide_and_session_windows(orders: Any) -> None:
    hop = (orders.window(Slide.over(lit(1).hours).every(lit(10).minutes).on(col("ts")).alias("w"))
           .group_by(col("w")).select(col("w").rowtime.alias("wt"), col("revenue").count))
    assert ("FROM TABLE(HOP(TABLE `_window_input`, DESCRIPTOR(`ts`), INTERVAL '10' MINUTE, "
            "INTERVAL '1' HOUR)) GROUP BY window_start, window_end") in hop.query_sql
    assert "window_time AS `wt`" in hop.query_sql
    session = (orders.window(Session.with_gap(lit(30).seconds).on(col("ts")).alias("s"))
               .group_by(col("s"), col("name")).select(col("name"), col("s").end.alias("e")))
    # a session per key, as Flink's group window keeps them: the TVF partitioned by the keys
    assert ("TABLE(SESSION(TABLE `_window_input` PARTITION BY `name`, DESCRIPTOR(`ts`), "
            "INTERVAL '30' SECOND)) GROUP BY `name`, window_start, window_end") in session.query_sql


def test_window_aggregation_must_group_by_its_window(orders: Any) -> None:
    w = orders.window(Tumble.over(lit(1).minutes).on(col("ts")).alias("w"))
    with pytest.raises(ValueError, match="group_by"):
        w.group_by(col("name")).select(col("name"))
    with pytest.raises(NotImplementedError, match="row-count"):
        Tumble.over(lit(10).rows)


def test_over_window(orders: Any) -> None:
    w = Over.partition_by(col("name")).order_by(col("ts")).preceding(UNBOUNDED_RANGE).alias("w")
    t = orders.over_window(w).select(col("name"), col("revenue").sum.over(col("w")).alias("s"))
    assert norm(t.query_sql) == (
        "SELECT `name`, SUM(`revenue`) OVER (PARTITION BY `name` ORDER BY `ts` RANGE BETWEEN "
        "UNBOUNDED PRECEDING AND CURRENT ROW) AS `s` FROM (SELECT * FROM `orders`)")
    spark_parses(t.query_sql)
    rows = Over.order_by(col("ts")).preceding(lit(2).rows).following(CURRENT_ROW).alias("r")
    t2 = orders.over_window(rows).select(col("revenue").avg.over(col("r")).alias("a"))
    assert "OVER (ORDER BY `ts` ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)" in t2.query_sql
    spark_parses(t2.query_sql)


def test_joins(t_env: TableEnvironment) -> None:
    left = t_env.from_path("l").select(col("a"), col("b"))
    right = t_env.from_path("r").select(col("c"), col("d"))
    inner = left.join(right, col("a") == col("c"))
    assert norm(inner.query_sql) == (
        "SELECT * FROM (SELECT `a`, `b` FROM (SELECT * FROM `l`)) AS `_l` INNER JOIN "
        "(SELECT `c`, `d` FROM (SELECT * FROM `r`)) AS `_r` ON (`a` = `c`)")
    assert inner.get_column_names() == ["a", "b", "c", "d"]
    for method, kind in [("left_outer_join", "LEFT OUTER JOIN"),
                         ("right_outer_join", "RIGHT OUTER JOIN"),
                         ("full_outer_join", "FULL OUTER JOIN")]:
        t = getattr(left, method)(right, col("a") == col("c"))
        assert f" {kind} " in t.query_sql
        spark_parses(t.query_sql)
    cross = left.join(right).where(col("a") == col("c"))
    assert " CROSS JOIN " in cross.query_sql
    spark_parses(cross.query_sql)
    with pytest.raises(ValueError, match="predicate"):
        left.full_outer_join(right, None)
    with pytest.raises(ValueError, match=r"^join relations with ambiguous names: \[b\]$"):
        left.join(t_env.from_path("r").select(col("c"), col("d").alias("b")))


@pytest.mark.parametrize("method, op", [("union_all", "UNION ALL"), ("union", "UNION"),
                                        ("intersect", "INTERSECT"), ("minus", "EXCEPT"),
                                        ("minus_all", "EXCEPT ALL")])
def test_set_operations(t_env: TableEnvironment, method: str, op: str) -> None:
    a, b = t_env.from_path("a"), t_env.from_path("b")
    t = getattr(a, method)(b)
    assert t.query_sql == f"SELECT * FROM (SELECT * FROM `a`) {op} SELECT * FROM (SELECT * FROM `b`)"
    spark_parses(t.where(col("x") > 1).query_sql)


def test_order_by_offset_fetch_limit(orders: Any) -> None:
    sorted_ = orders.order_by(col("revenue").desc, col("name"))
    assert sorted_.query_sql == "SELECT * FROM (SELECT * FROM `orders`) ORDER BY `revenue` DESC, `name`"
    top = sorted_.offset(2).fetch(3)
    assert top.query_sql == ("SELECT * FROM (SELECT * FROM `orders`) ORDER BY `revenue` DESC, "
                             "`name` LIMIT 3 OFFSET 2")
    assert sorted_.limit(5).query_sql.endswith("ORDER BY `revenue` DESC, `name` LIMIT 5")
    assert orders.limit(4, 1).query_sql == "SELECT * FROM (SELECT * FROM `orders`) LIMIT 4 OFFSET 1"
    assert orders.offset(1).fetch(4).query_sql == orders.limit(4, 1).query_sql
    for t in (sorted_, top, orders.limit(4, 1)):
        spark_parses(t.query_sql)


def test_distinct_and_column_operations(t_env: TableEnvironment) -> None:
    t = t_env.from_path("t").select(col("a"), col("b"), col("c"))
    # the columns named: a bounded STREAMING DISTINCT is planned as a GROUP BY of them
    assert t.distinct().query_sql.startswith("SELECT DISTINCT `a`, `b`, `c` FROM (")
    added = t.add_columns((col("a") + 1).alias("a1"), concat(col("b"), "x"))
    assert added.query_sql.startswith("SELECT *, (`a` + 1) AS `a1`, CONCAT(`b`, 'x') AS `_c1` FROM")
    assert added.get_column_names() == ["a", "b", "c", "a1", "_c1"]
    replaced = t.add_or_replace_columns((col("b") * 2).alias("b"), lit(0).alias("z"))
    assert replaced.query_sql.startswith("SELECT `a`, (`b` * 2) AS `b`, `c`, 0 AS `z` FROM")
    assert replaced.get_column_names() == ["a", "b", "c", "z"]
    renamed = t.rename_columns(col("a").alias("x"), col("c").alias("y"))
    assert renamed.query_sql.startswith("SELECT `a` AS `x`, `b`, `c` AS `y` FROM")
    assert renamed.get_column_names() == ["x", "b", "y"]
    dropped = t.drop_columns(col("b"))
    assert dropped.query_sql.startswith("SELECT `a`, `c` FROM")
    aliased = t.alias("p", "q", "r")
    assert aliased.query_sql.startswith("SELECT `a` AS `p`, `b` AS `q`, `c` AS `r` FROM")
    for x in (added, replaced, renamed, dropped, aliased, t.distinct()):
        spark_parses(x.query_sql)
    with pytest.raises(ValueError, match="no column"):
        t.drop_columns(col("nope"))


def test_column_names_unknown_are_asked_of_the_jobmanager() -> None:
    def answer(stmt: str) -> StatementResult:
        return StatementResult(result_kind="SUCCESS_WITH_CONTENT", columns=["id", "word"],
                               column_types=["BIGINT", "STRING"])
    gw = RecordingGateway(answer)
    t = TableEnvironment(gw, EnvironmentSettings.in_batch_mode()).sql_query("SELECT * FROM words")
    dropped = t.drop_columns(col("id"))
    assert gw.last == "SELECT * FROM (SELECT * FROM words) LIMIT 0"
    assert dropped.query_sql == "SELECT `word` FROM (SELECT * FROM words)"
    # Flink 2.3 (/work/briefs/data/ftypes3/probe.out): get_schema() prints as the legacy
    # TableSchema, get_resolved_schema() and print_schema() as the ResolvedSchema
    assert str(t.get_schema()) == "root\n |-- id: BIGINT\n |-- word: STRING\n"
    assert str(t.get_resolved_schema()) == "(\n  `id` BIGINT,\n  `word` STRING\n)"
    assert t.word.to_sql() == "`word`"  # a column as an attribute, as in PyFlink
    with pytest.raises(AttributeError):
        _ = t.nope


def test_udf_operations_take_python_functions_only(t_env: TableEnvironment) -> None:
    t = t_env.from_path("t")
    for op in (lambda: t.map(None), lambda: t.flat_map(None), lambda: t.aggregate(None),
               lambda: t.join_lateral(None), lambda: t.group_by(col("a")).aggregate(None),
               lambda: t.flat_aggregate(None),
               lambda: t_env.create_temporary_system_function("f", None)):
        with pytest.raises(TypeError, match=r"udf\(\)|udtf\(\)|udaf\(\)|udtaf\(\)"):
            op()


# -- statements sent ----------------------------------------------------------------------------
def test_execute_insert_explain_and_views(t_env: TableEnvironment,
                                          gateway: RecordingGateway) -> None:
    t = t_env.from_path("src").where(col("a") > 1)
    t.execute_insert("db.sink")
    assert gateway.last == "INSERT INTO `db`.`sink` SELECT * FROM (SELECT * FROM `src`) WHERE (`a` > 1)"
    t.execute_insert("sink", overwrite=True)
    assert gateway.last.startswith("INSERT OVERWRITE `sink` SELECT")
    t.explain()
    assert gateway.last == f"EXPLAIN {t.query_sql}"
    t_env.create_temporary_view("v", t)
    assert gateway.last == f"CREATE TEMPORARY VIEW `v` AS {t.query_sql}"
    t.execute()
    assert gateway.last == t.query_sql
    stmt, mode, conf = gateway.statements[-1]
    assert mode is RuntimeExecutionMode.BATCH and conf["execution.runtime-mode"] == "batch"


def test_str_of_a_table_registers_it_for_sql(t_env: TableEnvironment,
                                             gateway: RecordingGateway) -> None:
    t = t_env.from_path("src")
    name = str(t)
    assert name.startswith("UnnamedTable_") and str(t) == name
    assert [s for s, _, _ in gateway.statements] == [
        f"CREATE TEMPORARY VIEW `{name}` AS SELECT * FROM `src`"]


def test_statement_set(t_env: TableEnvironment, gateway: RecordingGateway) -> None:
    ss = t_env.create_statement_set()
    ss.add_insert("first_sink", t_env.from_path("src"))
    ss.add_insert_sql("INSERT INTO second_sink SELECT * FROM simple_source;")
    ss.execute()
    assert gateway.last == ("EXECUTE STATEMENT SET\nBEGIN\n"
                            "INSERT INTO `first_sink` SELECT * FROM `src`;\n"
                            "INSERT INTO second_sink SELECT * FROM simple_source;\nEND")
    with pytest.raises(ValueError, match="empty"):
        t_env.create_statement_set().execute()


def test_settings_and_config_go_with_every_statement(gateway: RecordingGateway) -> None:
    assert EnvironmentSettings.in_streaming_mode().is_streaming_mode()
    assert not EnvironmentSettings.new_instance().in_batch_mode().build().is_streaming_mode()
    t_env = TableEnvironment(gateway, EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "2")
    assert t_env.get_config().get("parallelism.default") == "2"
    t_env.execute_sql("SHOW TABLES")
    _, mode, conf = gateway.statements[-1]
    assert mode is RuntimeExecutionMode.STREAMING
    assert conf["parallelism.default"] == "2"
    conf_env = TableEnvironment(gateway, EnvironmentSettings.new_instance().with_configuration(
        Configuration().set_string("execution.runtime-mode", "batch")).build())
    assert conf_env.runtime_mode() is RuntimeExecutionMode.BATCH
    assert TableConfig().get("missing", "d") == "d"


# -- local data ---------------------------------------------------------------------------------
def _registered(gateway: RecordingGateway, name: str) -> pa.Table:
    # what Session.create_temporary_view sends to the JobManager
    return pa.Table.from_pandas(gateway.views[name], preserve_index=False)


def test_from_elements_registers_a_view_of_the_declared_types(t_env: TableEnvironment,
                                                              gateway: RecordingGateway) -> None:
    schema = DataTypes.ROW([DataTypes.FIELD("id", DataTypes.TINYINT()),
                            DataTypes.FIELD("data", DataTypes.STRING()),
                            DataTypes.FIELD("n", DataTypes.INT())])
    t = t_env.from_elements([(1, "Hi", None), Row(2, "Hello", 7)], schema)
    (name,) = gateway.views
    assert re.fullmatch(r"_tmp_table_[0-9a-f]+_\d+", name)
    assert t.query_sql == f"SELECT * FROM `{name}`"
    arrow = _registered(gateway, name)
    assert arrow.schema.types == [pa.int8(), pa.string(), pa.int32()]
    assert arrow.to_pylist() == [{"id": 1, "data": "Hi", "n": None},
                                 {"id": 2, "data": "Hello", "n": 7}]
    assert t.get_schema().get_field_data_types() == [DataTypes.TINYINT(), DataTypes.STRING(),
                                                     DataTypes.INT()]


def test_from_elements_without_schema_names_columns_as_pyflink(t_env: TableEnvironment,
                                                               gateway: RecordingGateway) -> None:
    t = t_env.from_elements([(1, "Hi"), (2, "Hello")])
    assert t.get_column_names() == ["_1", "_2"]
    named = t_env.from_elements([(1, "Hi")], ["id", "data"])
    assert named.get_column_names() == ["id", "data"]
    arrow = _registered(gateway, named.query_sql.split("`")[1])
    assert arrow.schema.types == [pa.int64(), pa.string()]  # PyFlink's default: BIGINT
    nested = t_env.from_elements(
        [(1, Row(x=1, y="a"), [1, 2])],
        DataTypes.ROW([DataTypes.FIELD("k", DataTypes.INT()),
                       DataTypes.FIELD("r", DataTypes.ROW([DataTypes.FIELD("x", DataTypes.INT()),
                                                           DataTypes.FIELD("y", DataTypes.STRING())])),
                       DataTypes.FIELD("a", DataTypes.ARRAY(DataTypes.INT()))]))
    arrow = _registered(gateway, nested.query_sql.split("`")[1])
    assert arrow.to_pylist() == [{"k": 1, "r": {"x": 1, "y": "a"}, "a": [1, 2]}]


def test_from_pandas(t_env: TableEnvironment, gateway: RecordingGateway) -> None:
    pdf = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    t = t_env.from_pandas(pdf, DataTypes.ROW([DataTypes.FIELD("f0", DataTypes.INT()),
                                              DataTypes.FIELD("f1", DataTypes.STRING())]))
    arrow = _registered(gateway, t.query_sql.split("`")[1])
    assert arrow.schema.names == ["f0", "f1"] and arrow.schema.types == [pa.int32(), pa.string()]
    t2 = t_env.from_pandas(pdf, ["x", "y"])
    assert t2.get_column_names() == ["x", "y"]
    t3 = t_env.from_pandas(pdf, [DataTypes.SMALLINT(), DataTypes.STRING()])
    arrow = _registered(gateway, t3.query_sql.split("`")[1])
    assert arrow.schema.names == ["a", "b"] and arrow.schema.types == [pa.int16(), pa.string()]


# -- results ------------------------------------------------------------------------------------
def _result(columns: list[str], types: list[str], rows: list[tuple[Any, ...]],
            kinds: list[RowKind] | None = None, kind: str = "SUCCESS_WITH_CONTENT") -> Any:
    arrays = [list(c) for c in zip(*rows)] if rows else [[] for _ in columns]
    table = pa.table({n: a for n, a in zip(columns, arrays)}) if columns else pa.table({})
    return StatementResult("j1", kind, columns, types, table, kinds)


def test_print_batch_as_flink(capsys: pytest.CaptureFixture[str]) -> None:
    # Flink's TableEnvironmentImpl: widths from the types (BIGINT 20, STRING 30), right-aligned
    TableResult(_result(["id", "data"], ["BIGINT", "STRING"], [(1, "Hi"), (2, "Hello")])).print()
    assert capsys.readouterr().out == (
        "+----------------------+--------------------------------+\n"
        "|                   id |                           data |\n"
        "+----------------------+--------------------------------+\n"
        "|                    1 |                             Hi |\n"
        "|                    2 |                          Hello |\n"
        "+----------------------+--------------------------------+\n"
        "2 rows in set\n")


def test_print_streaming_has_an_op_column() -> None:
    # the layout of Flink's streaming print (a column name wider than its type keeps its width)
    res = _result(["ID", "Login", "Public_Repos", "Followers"],
                  ["BIGINT", "STRING", "INT", "INT"],
                  [(71, "uggedal", 47, 180), (71, "uggedal", 48, None), (74, "mmower", 78, 59)],
                  [RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.DELETE])
    out = io.StringIO()
    TableResult(res, streaming=True).print(out)
    assert out.getvalue() == (
        "+----+----------------------+--------------------------------+--------------+-------------+\n"
        "| op |                   ID |                          Login | Public_Repos |   Followers |\n"
        "+----+----------------------+--------------------------------+--------------+-------------+\n"
        "| +I |                   71 |                        uggedal |           47 |         180 |\n"
        "| -U |                   71 |                        uggedal |           48 |      <NULL> |\n"
        "| -D |                   74 |                         mmower |           78 |          59 |\n"
        "+----+----------------------+--------------------------------+--------------+-------------+\n"
        "3 rows in set\n")


def test_print_empty_ok_and_truncation() -> None:
    assert TableResult(_result(["a"], ["INT"], [])).tableau() == "Empty set\n"
    assert TableResult(_result([], [], [], kind="SUCCESS")).tableau() == (
        "+--------+\n| result |\n+--------+\n|     OK |\n+--------+\n1 row in set\n")
    shown = TableResult(StatementResult("", "SUCCESS_WITH_CONTENT", ["table name"], ["STRING"],
                                        pa.table({"t": ["orders"]})), streaming=True)
    assert shown.tableau() == ("+------------+\n| table name |\n+------------+\n"
                               "|     orders |\n+------------+\n1 row in set\n")
    long = "x" * 40
    text = TableResult(_result(["s"], ["STRING"], [(long,)])).tableau()
    assert "| " + "x" * 27 + "... |" in text
    assert format_tableau(["b"], ["BOOLEAN"], [[True], [None]], None).splitlines()[3:5] == [
        "|   TRUE |", "| <NULL> |"]


@pytest.mark.parametrize("value, type_text, text", [
    (1.0, "DOUBLE", "1.0"), (1e7, "DOUBLE", "1.0E7"), (0.0001, "DOUBLE", "1.0E-4"),
    (123456789.125, "DOUBLE", "1.23456789125E8"), (0.1, "FLOAT", "0.1"),
    (decimal.Decimal("1.50"), "DECIMAL(10, 2)", "1.50"), (False, "BOOLEAN", "FALSE"),
    (datetime.datetime(2021, 4, 13, 19, 12, 11, 123000), "TIMESTAMP(3)", "2021-04-13 19:12:11.123"),
    (datetime.datetime(2021, 4, 13, 19, 12, 11), "TIMESTAMP(3)", "2021-04-13 19:12:11.000"),
    (datetime.datetime(2021, 4, 13, 19, 12, 11), "TIMESTAMP(0)", "2021-04-13 19:12:11"),
    (datetime.date(2021, 4, 13), "DATE", "2021-04-13"), ([1, 2], "ARRAY<INT>", "[1, 2]"),
    (None, "INT", "<NULL>"),
])
def test_cells_as_flink_casts_them_to_string(value: Any, type_text: str, text: str) -> None:
    assert cell_string(value, type_text) == text


def test_collect_rows_with_their_row_kinds() -> None:
    res = _result(["word", "cnt"], ["STRING", "BIGINT"], [("a", 1), ("a", 1), ("a", 2)],
                  [RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER])
    result = TableResult(res, streaming=True, job_client=lambda job_id: ("client", job_id))
    with result.collect() as rows:
        got = list(rows)
    assert [r.get_row_kind() for r in got] == [RowKind.INSERT, RowKind.UPDATE_BEFORE,
                                               RowKind.UPDATE_AFTER]
    assert got[2][0] == "a" and got[2][1] == 2
    with pytest.raises(AttributeError):  # PyFlink's collected rows are positional
        got[2].word
    assert result.get_result_kind() is ResultKind.SUCCESS_WITH_CONTENT
    assert result.get_table_schema().get_field_names() == ["word", "cnt"]
    assert result.get_job_client() == ("client", "j1")
    batch = TableResult(_result(["x"], ["INT"], [(1,)]))
    assert [r.get_row_kind() for r in batch.collect()] == [RowKind.INSERT]


# -- PyFlink's module paths ---------------------------------------------------------------------
def test_pyflink_table_modules_resolve() -> None:
    from sessioncluster.client.run import pyflink_alias

    with pyflink_alias():
        import pyflink.table as py_table  # type: ignore[import-not-found]
        import pyflink.table.expressions as py_expressions  # type: ignore[import-not-found]
        import pyflink.table.window as py_window  # type: ignore[import-not-found]
        PyDataTypes, PySettings = py_table.DataTypes, py_table.EnvironmentSettings
        PyTableEnvironment = py_table.TableEnvironment
        StreamTableEnvironment = py_table.StreamTableEnvironment
        py_col, PyTumble = py_expressions.col, py_window.Tumble
    assert PyDataTypes is DataTypes and PySettings is EnvironmentSettings
    assert issubclass(PyTableEnvironment, TableEnvironment)
    assert issubclass(StreamTableEnvironment, PyTableEnvironment)
    assert py_col is col and PyTumble is Tumble


def test_stream_table_environment_takes_the_mode_of_its_stream_environment(
        gateway: RecordingGateway) -> None:
    from sessioncluster.client.environment import StreamExecutionEnvironment
    from sessioncluster.client.table_environment import StreamTableEnvironment

    env = StreamExecutionEnvironment(gateway)  # type: ignore[arg-type]
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(3)
    t_env = StreamTableEnvironment.create(env)
    assert t_env.runtime_mode() is RuntimeExecutionMode.BATCH
    assert t_env.get_config().get("parallelism.default") == "3"
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    assert StreamTableEnvironment.create(env).runtime_mode() is RuntimeExecutionMode.STREAMING
    with pytest.raises(AttributeError):  # a DataStream, not None
        t_env.from_data_stream(None)


def test_to_pandas_applies_a_changelog() -> None:
    rows = [("a", 1), ("b", 1), ("a", 1), ("a", 2), ("b", 1)]
    kinds = [RowKind.INSERT, RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER,
             RowKind.DELETE]
    gw = RecordingGateway(lambda stmt: _result(["word", "cnt"], ["STRING", "BIGINT"], rows, kinds))
    t_env = TableEnvironment(gw, EnvironmentSettings.in_streaming_mode())
    df = t_env.sql_query("SELECT word, COUNT(*) AS cnt FROM words GROUP BY word").to_pandas()
    assert df.to_dict("records") == [{"word": "a", "cnt": 2}]
    batch = TableEnvironment(RecordingGateway(lambda stmt: _result(["id", "data"], ["BIGINT", "STRING"],
                                                                   [(1, "Hi"), (2, "Hello")])),
                             EnvironmentSettings.in_batch_mode())
    pdf = batch.from_path("t").to_pandas()
    assert list(pdf.columns) == ["id", "data"] and str(pdf["id"].dtype) == "int64"


def test_table_descriptors_render_create_table(t_env: TableEnvironment,
                                               gateway: RecordingGateway) -> None:
    from sessioncluster.api.table.descriptor import FormatDescriptor, Schema, TableDescriptor

    schema = (Schema.new_builder()
              .column("id", DataTypes.BIGINT())
              .column("data", DataTypes.STRING())
              .column("ts", DataTypes.TIMESTAMP(3))
              .column_by_expression("pt", "PROCTIME()")
              .watermark("ts", "ts - INTERVAL '5' SECOND")
              .primary_key("id")
              .build())
    descriptor = (TableDescriptor.for_connector("filesystem")
                  .schema(schema)
                  .option("path", "/tmp/in")
                  .format(FormatDescriptor.for_format("csv").option("field-delimiter", "|").build())
                  .partitioned_by("data")
                  .comment("orders")
                  .build())
    t_env.create_temporary_table("src", descriptor)
    assert gateway.last == (
        "CREATE TEMPORARY TABLE `src` (\n  `id` BIGINT,\n  `data` STRING,\n  `ts` TIMESTAMP(3),\n"
        "  `pt` AS PROCTIME(),\n  WATERMARK FOR `ts` AS ts - INTERVAL '5' SECOND,\n"
        "  PRIMARY KEY (`id`) NOT ENFORCED\n) COMMENT 'orders' PARTITIONED BY (`data`) WITH (\n"
        "  'connector' = 'filesystem',\n  'path' = '/tmp/in',\n  'format' = 'csv',\n"
        "  'csv.field-delimiter' = '|'\n)")
    sink = (TableDescriptor.for_connector("print")
            .schema(Schema.new_builder().column("id", DataTypes.BIGINT()).build()).build())
    t_env.from_path("src").select(col("id")).execute_insert(sink)
    create, insert = [s for s, _, _ in gateway.statements[-2:]]
    name = create.split("`")[1]
    assert create.startswith(f"CREATE TEMPORARY TABLE `{name}` (\n  `id` BIGINT\n) WITH (")
    assert insert == f"INSERT INTO `{name}` SELECT `id` FROM (SELECT * FROM `src`)"
    from_descriptor = t_env.from_descriptor(sink)
    assert from_descriptor.query_sql.startswith("SELECT * FROM `UnnamedTable_")
    with pytest.raises(ValueError, match="schema"):
        TableDescriptor.for_connector("datagen").build().create_table_sql("x")


class _GappedStream:
    """A streaming result's reader whose job dropped changes unread after the first one."""

    def __init__(self) -> None:
        self.dropped, self.closed = 0, False
        self._items = iter([("+I", ("a", 1)), ("-U", ("a", 1)), ("+U", ("a", 3))])

    def __iter__(self) -> "_GappedStream":
        return self

    def __next__(self) -> Any:
        item = next(self._items)
        if item[0] == "-U":
            self.dropped = 7  # the fetch that brought it found a gap before it
        return item

    def close(self) -> None:
        self.closed = True


def test_a_streaming_collect_with_a_gap_in_its_changelog_fails_loudly() -> None:
    stream = _GappedStream()
    client = type("Client", (), {"stream": lambda self: stream})()
    from sessioncluster.client.session import SqlStatementResult

    result = SqlStatementResult("j1", "SUCCESS_WITH_CONTENT", ["w", "n"], ["STRING", "BIGINT"],
                                pa.table({}), None, "update")
    rows = TableResult(result, streaming=True, job_client=lambda job_id: client).collect()
    assert list(next(rows)) == ["a", 1]
    with pytest.raises(ChangesDroppedError, match="7 changes .* dropped unread"):
        next(rows)
    assert stream.closed  # the job is cancelled


def test_an_empty_map_is_a_dict_in_a_batch_and_a_streaming_result() -> None:
    """Arrow gives a MAP as its pairs, so an empty MAP looked like an empty ARRAY (and printed
    ``[]`` where Flink prints ``{}``): a batch result's Arrow type decides; a streaming
    result's values come as Spark gives them (a MAP a dict, a struct a pyspark Row), each made
    PyFlink's on the JobManager."""
    import pyarrow as pa
    from pyspark.sql import Row as SparkRow

    from sessioncluster.api.table.result import arrow_rows, changelog_row
    from sessioncluster.common.types import pyflink_value

    maps = pa.array([[], [("a", 1)], None], type=pa.map_(pa.string(), pa.int32()))
    lists = pa.array([[], [1], None], type=pa.list_(pa.int32()))
    nested = pa.array([{"m": []}, {"m": [("b", 2)]}, None],
                      type=pa.struct([("m", pa.map_(pa.string(), pa.int32()))]))
    rows = arrow_rows(pa.table({"m": maps, "l": lists, "r": nested}))
    assert [r[:2] for r in rows] == [[{}, []], [{"a": 1}, [1]], [None, None]]
    assert rows[0][2].m == {} and rows[1][2].m == {"b": 2} and rows[2][2] is None
    spark_values = ({}, [], {"a": 1}, [SparkRow(m={}, l=[SparkRow(x=1)])])
    row = changelog_row("+I", tuple(pyflink_value(v) for v in spark_values))
    assert list(row)[:3] == [{}, [], {"a": 1}] and row.get_row_kind() == RowKind.INSERT
    (nested,) = row[3]
    assert isinstance(nested, Row) and nested.m == {} and nested.l[0].x == 1
