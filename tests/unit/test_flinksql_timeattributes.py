"""Flink's ``*ROWTIME*`` / ``*PROCTIME*`` markers of time attributes in a query's schema and in
DESCRIBE, and a window table function's columns over a PROCTIME() or TIMESTAMP_LTZ column,
against PyFlink 2.3's answers (/work/briefs/data/ftypes3/probe.py: probe.out, probe2.out;
joins, set operations and BATCH's refusal of a proctime window: /work/briefs/data/types4/
probe.py, probe2.py and their .out)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from sessioncluster.api.table.result import ResolvedSchema, TableSchema
from sessioncluster.api.table.types import DataTypes
from sessioncluster.spark.flinksql.executor import FlinkSqlPlanner
from sessioncluster.spark.flinksql.model import FlinkSqlError
from sessioncluster.spark.flinksql.statements import CreateTable, Query, parse_statements
from sessioncluster.spark.flinksql.timeattributes import (
    marked,
    query_attributes,
    table_attributes,
)

DDL = [
    "CREATE TEMPORARY TABLE ev (id INT, amount INT, ts TIMESTAMP(3), pt AS PROCTIME(), "
    "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector'='datagen',"
    "'number-of-rows'='3')",
    "CREATE TEMPORARY VIEW evv AS SELECT id, ts, pt FROM ev",
    "CREATE TEMPORARY TABLE ev2 (id INT, ts TIMESTAMP_LTZ(3), WATERMARK FOR ts AS ts) "
    "WITH ('connector'='datagen','number-of-rows'='3')",
    "CREATE TEMPORARY TABLE plain (id INT NOT NULL, name STRING) "
    "WITH ('connector'='datagen','number-of-rows'='3')",
    "CREATE TEMPORARY TABLE cc (id INT, amount INT, doubled AS amount * 2, "
    "up AS UPPER(CAST(id AS STRING)), ts TIMESTAMP(3), pt AS PROCTIME(), "
    "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector'='datagen',"
    "'number-of-rows'='3')",
    "CREATE TEMPORARY VIEW ccv AS SELECT id, doubled, ts, pt FROM cc"]
TUMBLE_TS = "SELECT * FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '10' SECOND))"
TUMBLE_PT = "SELECT * FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(pt), INTERVAL '10' SECOND))"
EV = ["INT", "INT", "TIMESTAMP(3) *ROWTIME*", "TIMESTAMP_LTZ(3) NOT NULL *PROCTIME*"]
BOUNDS = ["TIMESTAMP(3) NOT NULL", "TIMESTAMP(3) NOT NULL"]
#: query -> Flink 2.3's column types in STREAMING (get_resolved_schema(), print_schema())
STREAMING = {
    "SELECT * FROM ev": EV,
    "SELECT * FROM evv": ["INT", *EV[2:]],
    "SELECT id, ts FROM ev": EV[1:3],
    "SELECT * FROM ev2": ["INT", "TIMESTAMP_LTZ(3) *ROWTIME*"],
    "SELECT id, CAST(ts AS TIMESTAMP(3)) AS t2, pt AS p FROM ev":
        ["INT", "TIMESTAMP(3)", EV[3]],
    TUMBLE_TS: [*EV, *BOUNDS, "TIMESTAMP(3) NOT NULL *ROWTIME*"],
    TUMBLE_PT: [*EV, *BOUNDS, EV[3]],
    "SELECT * FROM TABLE(TUMBLE(TABLE ev2, DESCRIPTOR(ts), INTERVAL '10' SECOND))":
        ["INT", "TIMESTAMP_LTZ(3) *ROWTIME*", *BOUNDS, "TIMESTAMP_LTZ(3) NOT NULL *ROWTIME*"],
    "SELECT window_start, window_end, window_time, COUNT(*) AS c FROM TABLE(TUMBLE(TABLE ev, "
    "DESCRIPTOR(pt), INTERVAL '10' SECOND)) GROUP BY window_start, window_end, window_time":
        [*BOUNDS, EV[3], "BIGINT NOT NULL"],
    "SELECT * FROM TABLE(HOP(TABLE ev, DESCRIPTOR(pt), INTERVAL '5' SECOND, "
    "INTERVAL '10' SECOND))": [*EV, *BOUNDS, EV[3]],
    "SELECT id, COUNT(*) AS c, MAX(ts) AS mt FROM ev GROUP BY id":
        ["INT", "BIGINT NOT NULL", "TIMESTAMP(3) *ROWTIME*"],
    # a join keeps both sides' time attributes: a regular, an outer, an interval join alike
    "SELECT a.id, a.ts, a.pt, b.name FROM ev AS a JOIN plain AS b ON a.id = b.id":
        ["INT", *EV[2:], "STRING"],
    "SELECT a.ts AS ats, b.ts AS bts FROM ev AS a JOIN ev2 AS b ON a.id = b.id":
        [EV[2], "TIMESTAMP_LTZ(3) *ROWTIME*"],
    "SELECT a.id, b.ts AS bts, b.pt AS bpt FROM ev AS a LEFT JOIN ev AS b ON a.id = b.id":
        ["INT", EV[2], "TIMESTAMP_LTZ(3) *PROCTIME*"],
    "SELECT a.ts AS ats, a.pt AS apt, b.id FROM ev AS a RIGHT JOIN plain AS b ON a.id = b.id":
        [EV[2], "TIMESTAMP_LTZ(3) *PROCTIME*", "INT NOT NULL"],
    "SELECT a.id, a.ts AS ats, b.ts AS bts, a.pt FROM ev AS a JOIN ev AS b ON a.id = b.id "
    "AND a.ts BETWEEN b.ts - INTERVAL '5' SECOND AND b.ts": ["INT", EV[2], EV[2], EV[3]],
    "SELECT a.pt AS apt, b.pt AS bpt FROM ev AS a JOIN ev AS b ON a.id = b.id "
    "AND a.pt BETWEEN b.pt - INTERVAL '5' SECOND AND b.pt": [EV[3], EV[3]],
    "SELECT ts, pt, name FROM ev AS a JOIN plain AS b ON a.id = b.id": [*EV[2:], "STRING"],
    "WITH w AS (SELECT id, ts FROM ev) SELECT w.ts, p.name FROM w JOIN plain AS p "
    "ON w.id = p.id": [EV[2], "STRING"],
    # a set operation: the left query's time attributes
    "SELECT id, ts, pt FROM ev UNION ALL SELECT id, ts, pt FROM ev": EV[1:],
    "SELECT id, ts FROM ev UNION ALL SELECT id, CAST(NULL AS TIMESTAMP(3)) FROM plain":
        EV[1:3],
    "SELECT id, CAST(ts AS TIMESTAMP(3)) AS ts FROM ev UNION ALL SELECT id, ts FROM ev":
        ["INT", "TIMESTAMP(3)"],
    "SELECT id, ts FROM ev UNION SELECT id, ts FROM ev": EV[1:3],
    "SELECT * FROM (SELECT id, ts, pt FROM ev UNION ALL SELECT id, ts, pt FROM ev) AS u": EV[1:],
}
#: Flink 2.3's BATCH answers where they differ: no rowtime marks a column
BATCH = {
    "SELECT * FROM ev": ["INT", "INT", "TIMESTAMP(3)", EV[3]],
    "SELECT * FROM ev2": ["INT", "TIMESTAMP_LTZ(3)"],
    TUMBLE_TS: ["INT", "INT", "TIMESTAMP(3)", EV[3], *BOUNDS, "TIMESTAMP(3) NOT NULL"],
    TUMBLE_PT: ["INT", "INT", "TIMESTAMP(3)", EV[3], *BOUNDS, EV[3]],
    "SELECT id, COUNT(*) AS c, MAX(ts) AS mt FROM ev GROUP BY id":
        ["INT", "BIGINT NOT NULL", "TIMESTAMP(3)"],
}


@pytest.fixture(scope="module")
def planner(local_spark: Any) -> FlinkSqlPlanner:
    p = FlinkSqlPlanner(local_spark)
    for ddl in DDL:
        p.plan(ddl)
    yield p
    for drop in ("DROP TEMPORARY VIEW evv", "DROP TEMPORARY TABLE ev",
                 "DROP TEMPORARY TABLE ev2", "DROP TEMPORARY TABLE plain",
                 "DROP TEMPORARY VIEW ccv", "DROP TEMPORARY TABLE cc",
                 "DROP TEMPORARY VIEW IF EXISTS pv", "DROP TEMPORARY TABLE IF EXISTS sink"):
        p.plan(drop)


def test_a_tables_time_attributes_and_their_markers() -> None:
    """A watermark's column is a rowtime, a PROCTIME() column a proctime; a rowtime is marked
    in STREAMING only; a query of a join marks nothing."""
    table = parse_statements(DDL[0])[0]
    assert isinstance(table, CreateTable)
    attributes = table_attributes(table.table)
    assert attributes == [("id", None), ("amount", None), ("ts", "ROWTIME"), ("pt", "PROCTIME")]
    types = ["INT", "INT", "TIMESTAMP(3)", "TIMESTAMP_LTZ(3) NOT NULL"]
    assert marked(types, attributes, True) == EV
    assert marked(types, attributes, False) == [*types[:3], EV[3]]
    assert marked(types, None, True) == types

    def tables(name: str) -> Any:
        return attributes if name == "ev" else None

    def of(query: str) -> Any:
        statement = parse_statements(query)[0]
        assert isinstance(statement, Query)
        return query_attributes(statement.ast, tables)

    assert of("WITH w AS (SELECT ts AS t FROM ev) SELECT * FROM (SELECT t FROM w) AS s(u)") \
        == [("u", "ROWTIME")]
    assert of("SELECT a.ts, b.pt FROM ev AS a JOIN ev AS b ON a.id = b.id") \
        == [("ts", "ROWTIME"), ("pt", "PROCTIME")]
    assert of("SELECT ts FROM ev AS a JOIN ev AS b ON a.id = b.id") == [("ts", None)]  # ambiguous
    assert of("SELECT * FROM (VALUES (1, 2)) AS v(x, y)") == [("x", None), ("y", None)]
    assert of("SELECT ts + INTERVAL '1' SECOND AS x, pt FROM nope") is None


#: the queries of a window table function over a PROCTIME() column, which Flink 2.3 types in
#: BATCH mode but refuses to run there
PROCTIME_WINDOWS = {q for q in STREAMING if "DESCRIPTOR(pt)" in q}
BATCH_SCHEMA = {"sessioncluster.schema-runtime-mode": "batch"}


@pytest.mark.parametrize("query", list(STREAMING))
def test_a_querys_time_attributes_are_marked_as_flinks(planner: FlinkSqlPlanner,
                                                       query: str) -> None:
    assert planner.plan(query, "STREAMING").column_types == STREAMING[query]
    batch = planner.plan(f"SELECT * FROM ({query}) LIMIT 0", "BATCH", BATCH_SCHEMA).column_types
    assert batch == BATCH.get(query, [t.replace(" *ROWTIME*", "") for t in STREAMING[query]])
    # a Table's schema in STREAMING, planned in BATCH (TableEnvironment.query_schema)
    schema = planner.plan(f"SELECT * FROM ({query}) LIMIT 0", "BATCH",
                          {"sessioncluster.schema-runtime-mode": "streaming"})
    assert schema.column_types == STREAMING[query]


@pytest.mark.parametrize("statement", [
    *sorted(PROCTIME_WINDOWS), f"EXPLAIN {TUMBLE_PT}",
    "CREATE TEMPORARY VIEW pv AS " + TUMBLE_PT, "SELECT * FROM pv",
    "WITH c AS (SELECT id, pt FROM ev) SELECT * FROM TABLE(TUMBLE(TABLE c, DESCRIPTOR(pt), "
    "INTERVAL '10' SECOND))",
    "CREATE TEMPORARY TABLE sink (id INT, ws TIMESTAMP(3)) WITH ('connector'='blackhole')",
    *[f"{verb}INSERT INTO sink SELECT id, window_start FROM TABLE(TUMBLE(TABLE ev, "
      "DESCRIPTOR(pt), INTERVAL '10' SECOND))" for verb in ("", "EXPLAIN ")],
    "EXECUTE STATEMENT SET BEGIN INSERT INTO sink SELECT id, window_start FROM TABLE(TUMBLE("
    "TABLE ev, DESCRIPTOR(pt), INTERVAL '10' SECOND)); END"])
def test_batch_refuses_a_window_over_a_proctime_as_flink(planner: FlinkSqlPlanner,
                                                         statement: str) -> None:
    """Flink 2.3's TableException, at execute_sql and explain_sql in BATCH (the schema is
    given: sql_query(q).print_schema()), and of an INSERT or a statement set of one
    (probe4.out); a window over the rowtime runs."""
    if statement.startswith("CREATE"):
        planner.plan(statement, "BATCH")  # a view of it is made
        return
    with pytest.raises(FlinkSqlError, match="^Processing time Window TableFunction is not "
                                            r"supported yet\.$"):
        planner.plan(statement, "BATCH")
    assert planner.plan(TUMBLE_TS, "BATCH").column_types == BATCH[TUMBLE_TS]


def test_describe_marks_time_attributes_as_flinks(planner: FlinkSqlPlanner) -> None:
    """Flink 2.3's DESCRIBE: the PROCTIME() column TIMESTAMP_LTZ(3) *PROCTIME*, null FALSE;
    the rowtime column marked in STREAMING only; a view's columns as its query's; the watermark
    quoted."""
    streaming = planner.plan("DESCRIBE ev", "STREAMING").rows
    assert [r[1:3] for r in streaming] == [
        ("INT", True), ("INT", True), ("TIMESTAMP(3) *ROWTIME*", True),
        ("TIMESTAMP_LTZ(3) *PROCTIME*", False)]
    assert streaming[3][4] == "AS PROCTIME()"
    assert streaming[2][5] == "`ts` - INTERVAL '1' SECOND"  # the watermark quoted as Flink's
    assert planner.plan("DESCRIBE ev", "BATCH").rows[2][1] == "TIMESTAMP(3)"
    assert [r[1:3] for r in planner.plan("DESCRIBE evv", "STREAMING").rows] == [
        ("INT", True), ("TIMESTAMP(3) *ROWTIME*", True), ("TIMESTAMP_LTZ(3) *PROCTIME*", False)]
    assert planner.plan("DESCRIBE ev2", "STREAMING").rows[1][1::4] == (
        "TIMESTAMP_LTZ(3) *ROWTIME*", "`ts`")


def test_a_marked_schema_is_printed_and_typed_as_flinks() -> None:
    """Flink 2.3: str(get_schema()) / TableResult.get_table_schema() the legacy layout,
    str(get_resolved_schema()) / print_schema() the resolved one; the types' DataTypes."""
    schema = TableSchema(["ts", "pt"], STREAMING["SELECT * FROM ev"][2:])
    assert str(schema) == ("root\n |-- ts: TIMESTAMP(3) *ROWTIME*\n"
                           " |-- pt: TIMESTAMP_LTZ(3) NOT NULL *PROCTIME*\n")
    resolved = ResolvedSchema(schema.get_field_names(), schema.get_field_type_texts())
    assert str(resolved) == ("(\n  `ts` TIMESTAMP(3) *ROWTIME*,\n"
                             "  `pt` TIMESTAMP_LTZ(3) NOT NULL *PROCTIME*\n)")
    assert schema.get_field_data_types() == [DataTypes.TIMESTAMP(3),
                                             DataTypes.TIMESTAMP_LTZ(3, False)]


class PlannerGateway:
    """A TableEnvironment's gateway answered by the planner in this process (no cluster)."""

    def __init__(self, planner: FlinkSqlPlanner) -> None:
        self.planner = planner

    def execute_flink_sql(self, statement: str, runtime_mode: Any,
                          configuration: dict[str, str], *, function: Any = None) -> Any:
        import pyarrow as pa

        from sessioncluster.client.shipping import dumps_user_code

        payload = b"" if function is None else dumps_user_code(function)
        outcome = self.planner.plan(statement, runtime_mode.name, configuration, payload)
        table = pa.table({n: [r[i] for r in outcome.rows] for i, n in enumerate(outcome.columns)})
        return SimpleNamespace(job_id="", result_kind=outcome.result_kind,
                               columns=outcome.columns, column_types=outcome.column_types,
                               table=table, row_kinds=None)

    def job(self, job_id: str) -> Any:
        raise AssertionError(f"no job runs here: {job_id}")


#: Flink 2.3's print_schema() of from_path('cc') (/work/briefs/data/types4/probe.out)
CC_RESOLVED = """(
  `id` INT,
  `amount` INT,
  `doubled` INT AS `amount` * 2,
  `up` STRING AS UPPER(CAST(`id` AS STRING)),
  `ts` TIMESTAMP(3){rowtime},
  `pt` TIMESTAMP_LTZ(3) NOT NULL *PROCTIME* AS PROCTIME(),
  WATERMARK FOR `ts`: TIMESTAMP(3) AS `ts` - INTERVAL '5' SECOND
)"""
#: its str(get_schema())
CC_LEGACY = """root
 |-- id: INT
 |-- amount: INT
 |-- doubled: INT AS `amount` * 2
 |-- up: STRING AS UPPER(CAST(`id` AS STRING))
 |-- ts: TIMESTAMP(3){rowtime}
 |-- pt: TIMESTAMP_LTZ(3) NOT NULL *PROCTIME* AS PROCTIME()
 |-- WATERMARK FOR ts: TIMESTAMP(3) AS `ts` - INTERVAL '5' SECOND
"""


@pytest.mark.parametrize("streaming", [True, False])
def test_a_catalog_tables_schema_shows_its_expressions_and_watermark_as_flinks(
        planner: FlinkSqlPlanner, streaming: bool) -> None:
    """Flink 2.3's from_path(t) schema: a computed column with its expression, the watermark
    line; a query of the table (select, sql_query) without them."""
    from sessioncluster.api.table.environment import EnvironmentSettings, TableEnvironment

    settings = EnvironmentSettings.in_streaming_mode() if streaming \
        else EnvironmentSettings.in_batch_mode()
    t_env = TableEnvironment(PlannerGateway(planner), settings)
    rowtime = " *ROWTIME*" if streaming else ""
    cc = t_env.from_path("cc")
    assert str(cc.get_resolved_schema()) == CC_RESOLVED.format(rowtime=rowtime)
    assert str(cc.get_schema()) == CC_LEGACY.format(rowtime=rowtime)
    assert str(t_env.from_path("ev2").get_resolved_schema()) == (
        f"(\n  `id` INT,\n  `ts` TIMESTAMP_LTZ(3){rowtime},\n"
        "  WATERMARK FOR `ts`: TIMESTAMP_LTZ(3) AS `ts`\n)")
    assert str(t_env.from_path("plain").get_resolved_schema()) == (
        "(\n  `id` INT NOT NULL,\n  `name` STRING\n)")
    assert str(t_env.from_path("cc").select(cc.id).get_resolved_schema()) == "(\n  `id` INT\n)"
    assert str(t_env.sql_query("SELECT * FROM cc").get_resolved_schema()) == (
        "(\n  `id` INT,\n  `amount` INT,\n  `doubled` INT,\n  `up` STRING,\n"
        f"  `ts` TIMESTAMP(3){rowtime},\n  `pt` TIMESTAMP_LTZ(3) NOT NULL *PROCTIME*\n)")
    assert cc.get_schema().get_field_names() == ["id", "amount", "doubled", "up", "ts", "pt"]
    # a view's: its columns alone (probe3.out: from_path('ccv').print_schema())
    assert str(t_env.from_path("ccv").get_resolved_schema()) == (
        f"(\n  `id` INT,\n  `doubled` INT,\n  `ts` TIMESTAMP(3){rowtime},\n"
        "  `pt` TIMESTAMP_LTZ(3) NOT NULL *PROCTIME*\n)")


@pytest.mark.parametrize("window", ["TUMBLE(pt, INTERVAL '10' SECOND)",
                                    "HOP(pt, INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
                                    "SESSION(pt, INTERVAL '10' SECOND)"])
def test_batch_refuses_a_legacy_group_window_over_a_proctime_as_flink(
        planner: FlinkSqlPlanner, window: str) -> None:
    """Flink 2.3's ValidationException at execute_sql, explain_sql and an INSERT in BATCH
    (/work/briefs/data/lead26/probe_gw.out); the same window over the rowtime is planned."""
    name = window.split("(")[0]
    query = (f"SELECT {name}_START({window.split('(', 1)[1]} AS s, COUNT(*) AS c FROM ev "
             f"GROUP BY {window}")
    for statement in (query, f"EXPLAIN {query}"):
        with pytest.raises(FlinkSqlError, match="^Window can not be defined over a proctime "
                                                "attribute column for batch mode$"):
            planner.plan(statement, "BATCH")
    assert planner.plan(query.replace("pt,", "ts,"), "BATCH").columns == ["s", "c"]
