"""A TableEnvironment's catalog calls, modules, SQL dialect, TablePipeline and statement-set
EXPLAIN, against the planner in this process (no cluster). Flink 2.3's answers:
/work/briefs/data/lead28/tableenv.py, modules.py and their .out (PyFlink 2.3's own
``create_view`` fails on a py4j conversion there; this one makes the view)."""

from __future__ import annotations

import importlib
import sys
import uuid
import zipfile
from pathlib import Path
from typing import Any

import pytest

from sessioncluster.api.table.catalogobjects import ModuleEntry, ObjectIdentifier, SqlDialect
from sessioncluster.api.table.environment import EnvironmentSettings, TableEnvironment
from sessioncluster.api.table.expressions import col
from sessioncluster.api.table.table_pipeline import TablePipeline
from sessioncluster.spark.flinksql.executor import FlinkSqlPlanner
from sessioncluster.spark.flinksql.model import FlinkSqlError
from tests.unit.test_flinksql_timeattributes import PlannerGateway


@pytest.fixture
def t_env(local_spark: Any, tmp_path: Path) -> TableEnvironment:
    planner = FlinkSqlPlanner(local_spark)
    t_env = TableEnvironment(PlannerGateway(planner), EnvironmentSettings.in_batch_mode())
    t_env.execute_sql(f"""CREATE TABLE src (k STRING, n BIGINT) WITH ('connector' = 'filesystem',
        'path' = '{tmp_path}', 'format' = 'csv')""")
    t_env.execute_sql(f"""CREATE TABLE sink1 (k STRING, n BIGINT) WITH ('connector' =
        'filesystem', 'path' = '{tmp_path / "out"}', 'format' = 'csv')""")
    return t_env


def test_current_catalog_and_modules(t_env: TableEnvironment) -> None:
    assert (t_env.get_current_catalog(), t_env.get_current_database()) == (
        "default_catalog", "default_database")
    assert t_env.list_modules() == ["core"]
    assert [repr(m) for m in t_env.list_full_modules()] == ["ModuleEntry{name='core', used=true}"]
    assert t_env.list_full_modules() == [ModuleEntry("core", True)]


def test_views_tables_and_functions_dropped_as_flinks(t_env: TableEnvironment) -> None:
    t_env.create_view("v1", t_env.from_path("src").where(col("n") > 1))
    assert "v1" in t_env.list_views()
    with pytest.raises(FlinkSqlError, match="already exists"):
        t_env.create_view("v1", t_env.from_path("src"))
    t_env.create_view("v1", t_env.from_path("src"), True)  # ignore_if_exists
    assert (t_env.drop_view("v1"), t_env.drop_view("v1")) == (True, False)
    with pytest.raises(FlinkSqlError, match="View with identifier "
                       "'default_catalog.default_database.v1' does not exist."):
        t_env.drop_view("v1", False)
    assert (t_env.drop_table("sink1"), t_env.drop_table("sink1")) == (True, False)
    with pytest.raises(FlinkSqlError, match="Table with identifier "
                       "'default_catalog.default_database.sink1' does not exist."):
        t_env.drop_table("sink1", False)
    assert t_env.drop_function("no_such_function") is False


def test_a_table_pipeline_and_a_statement_sets_explain(t_env: TableEnvironment) -> None:
    pipeline = t_env.from_path("src").insert_into("sink1")
    assert isinstance(pipeline, TablePipeline)
    assert str(pipeline.get_sink_identifier()) == "`default_catalog`.`default_database`.`sink1`"
    assert pipeline.get_sink_identifier() == ObjectIdentifier.of(
        "default_catalog", "default_database", "sink1")
    assert pipeline.explain().splitlines()[:2] == [
        "== Abstract Syntax Tree ==",
        "LogicalSink(table=[default_catalog.default_database.sink1], fields=[k, n])"]
    statements = t_env.create_statement_set()
    statements.add(pipeline).add(t_env.from_path("src").insert_into("sink1"))
    explained = statements.explain()  # EXPLAIN STATEMENT SET BEGIN ...; END
    assert explained.count("LogicalSink(table=[default_catalog.default_database.sink1]") == 2


def test_only_flinks_default_dialect_is_parsed(t_env: TableEnvironment) -> None:
    config = t_env.get_config()
    assert config.get_sql_dialect() == SqlDialect.DEFAULT
    config.set_sql_dialect(SqlDialect.HIVE)
    assert (config.get_sql_dialect(), config.to_map()["table.sql-dialect"]) == (
        SqlDialect.HIVE, "hive")
    with pytest.raises(FlinkSqlError, match="Could not find any factory for identifier 'hive' "
                       "that implements 'org.apache.flink.table.delegation.ParserFactory'"):
        t_env.execute_sql("SHOW TABLES")
    config.set_sql_dialect(SqlDialect.DEFAULT)
    assert "src" in t_env.list_tables()


def test_column_ranges_as_flinks(t_env: TableEnvironment) -> None:
    """/work/briefs/data/lead28/withcolumns.py and .out: with_columns / without_columns with
    indices, names and range_ in select, group_by and add_columns, and Flink's refusals."""
    from sessioncluster.api.table.expressions import (
        concat,
        range_,
        with_columns,
        without_columns,
    )

    t = t_env.sql_query("SELECT 'a' AS a, 'b' AS b, 3 AS c, 4 AS d")

    def names(table: Any) -> list[str]:
        return table.get_schema().get_field_names()

    assert names(t.select(with_columns(range_(2, 3)))) == ["b", "c"]
    assert names(t.select(with_columns(range_("b", "c")))) == ["b", "c"]
    assert names(t.select(with_columns(1, range_(3, 4)))) == ["a", "c", "d"]
    assert names(t.select(without_columns(1, col("c")))) == ["b", "d"]
    assert names(t.select(without_columns(range_(1, 2)))) == ["c", "d"]
    assert names(t.select(col("d"), with_columns(range_(1, 2)))) == ["d", "a", "b"]
    assert names(t.select(concat(with_columns(range_(1, 2))).alias("x"))) == ["x"]
    assert names(t.group_by(with_columns(range_(1, 2))).select(col("a"), col("b"), col("c").sum)
                 ) == ["a", "b", "EXPR$0"]
    assert names(t.add_columns(concat(with_columns(range_(1, 2))).alias("ab"))) == [
        "a", "b", "c", "d", "ab"]
    with pytest.raises(ValueError, match=r"only accept column names or column indices\."):
        with_columns("d", col("a"))
    with pytest.raises(ValueError, match="The start:3 of withColumns.. or withoutColumns.. "
                       "should not bigger than end:2."):
        t.select(with_columns(range_(3, 2)))
    with pytest.raises(ValueError, match="The start name:b .* should not behind the end:z."):
        t.select(with_columns(range_("b", "z")))
    with pytest.raises(ValueError, match="the table has 4 columns"):
        t.select(with_columns(range_(3, 9)))


#: Flink 2.3's refusal of a permanent object's DROP while a temporary one of the name exists
#: (/work/briefs/data/tabledeps/probe.py and .out, as all of the answers below)
SHADOWED = ("Temporary {0} with identifier '`default_catalog`.`default_database`.`{1}`' "
            "exists. Drop it first before removing the permanent {0}.")


def test_drops_of_temporary_tables_and_views_as_flinks(t_env: TableEnvironment) -> None:
    t_env.execute_sql("CREATE TEMPORARY TABLE tt (a INT) WITH ('connector' = 'datagen')")
    t_env.execute_sql("CREATE TEMPORARY VIEW tv AS SELECT 1 AS a")
    for statement, message in [
            ("DROP TABLE tt", SHADOWED.format("table", "tt")),
            ("DROP TABLE IF EXISTS tt", SHADOWED.format("table", "tt")),
            ("DROP VIEW IF EXISTS tv", SHADOWED.format("view", "tv")),
            ("DROP VIEW tt", "View with identifier 'default_catalog.default_database.tt' "
                             "does not exist."),
            ("DROP TEMPORARY TABLE tv", "Temporary table or view with identifier "
                                        "'default_catalog.default_database.tv' does not exist."),
            ("DROP TEMPORARY VIEW missing", "Temporary table or view with identifier "
             "'default_catalog.default_database.missing' does not exist.")]:
        with pytest.raises(FlinkSqlError) as refused:
            t_env.execute_sql(statement)
        assert str(refused.value) == message, statement
    for drop, message in [(lambda: t_env.drop_table("tt"), SHADOWED.format("table", "tt")),
                          (lambda: t_env.drop_view("tv", False), SHADOWED.format("view", "tv"))]:
        with pytest.raises(FlinkSqlError) as refused:
            drop()
        assert str(refused.value) == message
    assert [t_env.drop_view("tt"), t_env.drop_temporary_view("tt"),
            t_env.drop_temporary_table("tv"), t_env.drop_temporary_table("tt"),
            t_env.drop_temporary_table("tt"), t_env.drop_temporary_view("tv"),
            t_env.drop_temporary_view("tv")] == [False, False, False, True, False, True, False]
    # a temporary view over a permanent one: the temporary goes first, then the permanent
    t_env.execute_sql("CREATE VIEW bv AS SELECT 1 AS a")
    t_env.execute_sql("CREATE TEMPORARY VIEW bv AS SELECT 2 AS a")
    with pytest.raises(FlinkSqlError, match="Temporary view with identifier"):
        t_env.drop_view("bv")
    assert [t_env.drop_temporary_view("bv"), t_env.drop_view("bv"), t_env.drop_view("bv")] == [
        True, True, False]


def test_drops_of_functions_as_flinks(t_env: TableEnvironment) -> None:
    from sessioncluster.api.table.types import DataTypes
    from sessioncluster.api.table.udf import udf

    identity = udf(lambda x: x, result_type=DataTypes.BIGINT())
    t_env.create_temporary_system_function("sysf", identity)
    t_env.create_temporary_function("tmpf", identity)
    with pytest.raises(FlinkSqlError) as refused:
        t_env.drop_function("tmpf")
    assert str(refused.value) == (
        "Could not drop catalog function. A temporary function "
        "'default_catalog.default_database.tmpf' does already exist. Please drop the temporary "
        "function first.")
    for statement, message in [
            ("DROP FUNCTION tmpf", "Function default_database.tmpf does not exist in Catalog "
                                   "default_catalog."),
            ("DROP FUNCTION sysf", "Function default_database.sysf does not exist in Catalog "
                                   "default_catalog."),
            ("DROP TEMPORARY FUNCTION missingf", "Temporary catalog function "
             "`default_catalog`.`default_database`.`missingf` doesn't exist"),
            ("DROP TEMPORARY SYSTEM FUNCTION missingf", "Could not drop temporary system "
             "function. A function named 'missingf' doesn't exist.")]:
        with pytest.raises(FlinkSqlError) as refused:
            t_env.execute_sql(statement)
        assert str(refused.value) == message, statement
    assert [t_env.drop_function("sysf"), t_env.drop_temporary_function("sysf"),
            t_env.drop_temporary_system_function("tmpf"), t_env.drop_temporary_function("tmpf"),
            t_env.drop_temporary_function("tmpf"), t_env.drop_temporary_system_function("sysf"),
            t_env.drop_temporary_system_function("sysf")] == [
        False, False, False, True, False, True, False]


def test_a_python_function_is_imported_at_its_first_use(t_env: TableEnvironment, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Flink 2.3 creates ``CREATE FUNCTION ... AS 'module.fn' LANGUAGE PYTHON`` of a module that
    does not import, and refuses the first statement that calls it."""
    for kind, name in (("TEMPORARY", "nf1"), ("TEMPORARY SYSTEM", "nf2"), ("", "nf3")):
        t_env.execute_sql(f"CREATE {kind} FUNCTION {name} AS 'no_such_mod_xyz.fn' "
                          "LANGUAGE PYTHON")
    t_env.execute_sql("CREATE TEMPORARY FUNCTION nf4 AS 'os.no_such_attr' LANGUAGE PYTHON")
    t_env.execute_sql("CREATE TEMPORARY FUNCTION nf5 AS 'nodot' LANGUAGE PYTHON")
    assert {"nf1", "nf2", "nf3", "nf4", "nf5"} <= set(t_env.list_user_defined_functions())
    cause = "Instantiating python function 'no_such_mod_xyz.fn' failed: ModuleNotFoundError: "\
            "No module named 'no_such_mod_xyz'"
    for call, path, why in [
            ("nf1(1)", "nf1", cause), ("NF2 (1)", "nf2", cause),
            ("nf3(1)", "default_catalog.default_database.nf3", cause),
            ("nf4(1)", "nf4", "Instantiating python function 'os.no_such_attr' failed: "
                              "AttributeError: module 'os' has no attribute 'no_such_attr'"),
            ("nf5(1)", "nf5", "Instantiating python function 'nodot' failed: The fully "
                              "qualified name is invalid: 'nodot'")]:
        with pytest.raises(FlinkSqlError) as refused:
            t_env.execute_sql(f"SELECT {call}")
        assert str(refused.value) == (f"SQL validation failed. Cannot instantiate user-defined "
                                      f"function '{path}'. {why}")
    # a name in a string is no call (the parsed statement's calls are looked at)
    assert t_env.execute_sql("SELECT 'nf1(1)' AS s").get_table_schema().get_field_names() == ["s"]
    # the module importable now (shipped, say): the function is made at its use
    (tmp_path / "no_such_mod_xyz.py").write_text(
        "from sessioncluster.api.table.udf import udf\n"
        "fn = udf(lambda x: x + 1, result_type='BIGINT')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert t_env.execute_sql("SELECT nf1(CAST(1 AS BIGINT)) AS v").get_table_schema() \
            .get_field_names() == ["v"]
    finally:
        sys.modules.pop("no_such_mod_xyz", None)
    assert [t_env.drop_temporary_system_function("nf2"), t_env.drop_function("nf3"),
            t_env.drop_temporary_function("nf5")] == [True, True, True]


def test_python_dependencies_are_flinks_options(tmp_path: Path) -> None:
    """``add_python_file``/``add_python_archive``/``set_python_requirements`` set PyFlink's
    options (probe.out: ``python.files`` is the path), which the session packs as the DataStream
    side packs them."""
    from sessioncluster.dependencies import pack_configured

    (tmp_path / "a.py").write_text("A = 1\n")
    (tmp_path / "b.py").write_text("B = 2\n")
    with zipfile.ZipFile(tmp_path / "data.zip", "w") as zf:
        zf.writestr("words.txt", "alpha\n")
    (tmp_path / "requirements.txt").write_text("")
    (tmp_path / "wheels").mkdir()
    t_env = TableEnvironment(PlannerGateway(None), EnvironmentSettings.in_batch_mode())  # type: ignore[arg-type]
    t_env.add_python_file(str(tmp_path / "a.py"))
    t_env.add_python_file(str(tmp_path / "b.py"))
    t_env.add_python_archive(str(tmp_path / "data.zip"), "data")
    t_env.add_python_archive(str(tmp_path / "data.zip"))
    t_env.set_python_requirements(str(tmp_path / "requirements.txt"), str(tmp_path / "wheels"))
    options = t_env.get_config().to_dict()
    assert options["python.files"] == f"{tmp_path}/b.py,{tmp_path}/a.py"
    assert options["python.archives"] == f"{tmp_path}/data.zip#data,{tmp_path}/data.zip"
    assert options["python.requirements"] == f"{tmp_path}/requirements.txt#{tmp_path}/wheels"
    packed = [dep for dep, _ in pack_configured(options)]
    assert [(d.kind, d.name, d.target_dir) for d in packed] == [
        ("file", "b.py", ""), ("file", "a.py", ""), ("archive", "data.zip", "data"),
        ("archive", "data.zip", "data.zip"), ("requirements", "requirements.txt", "")]
    with pytest.raises(FileNotFoundError, match="add_python_file: .*nope.py does not exist"):
        pack_configured({"python.files": str(tmp_path / "nope.py")})


def test_a_statements_python_functions_run_with_its_python_files(local_spark: Any,
                                                                 tmp_path: Path) -> None:
    """A function named by ``module.fn`` of a shipped file, and one shipped by the client
    whose body imports a shipped module: loaded on the planner's side and run by Spark's
    Python workers with the statement's dependencies on ``sys.path``, and re-registered
    without them for a statement that has none and calls it."""
    from sessioncluster.api.table.types import DataTypes
    from sessioncluster.api.table.udf import udf
    from sessioncluster.client.shipping import dumps_user_code
    from sessioncluster.cluster.connection import runtime_dir
    from sessioncluster.dependencies import materialise, pack_python_file

    name = f"tabledeps_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(
        "from sessioncluster.api.table.udf import udf\n"
        "def helper(x):\n    return x + 100\n"
        "fn = udf(lambda x: helper(x), result_type='BIGINT')\n")
    dep, data = pack_python_file(str(tmp_path / f"{name}.py"))
    materialise(dep, data, runtime_dir() / "deps")  # as a TaskManager has it
    deps = (dep,)
    planner = FlinkSqlPlanner(local_spark)
    planner.plan(f"CREATE TEMPORARY SYSTEM FUNCTION named AS '{name}.fn' LANGUAGE PYTHON",
                 dependencies=deps)
    assert name not in sys.modules  # loaded with the dependencies, forgotten after
    shipped = udf(lambda x: importlib.import_module(name).helper(x) * 2,
                  result_type=DataTypes.BIGINT())
    planner.plan("CREATE TEMPORARY SYSTEM FUNCTION shipped AS 'x.shipped' LANGUAGE PYTHON",
                 function=dumps_user_code(shipped), dependencies=deps)
    query = "SELECT named(CAST(1 AS BIGINT)) AS a, shipped(CAST(2 AS BIGINT)) AS b"
    outcome = planner.plan(query, dependencies=deps)
    assert outcome.job is not None
    assert [tuple(r) for r in outcome.job.run().collect()] == [(101, 204)]
    assert {f.dependencies for f in planner.functions.functions.values()} == {deps}
    planner.plan("SHOW FUNCTIONS")  # a statement without them that calls none: left as they are
    assert {f.dependencies for f in planner.functions.functions.values()} == {deps}
    planner.plan("SELECT named(CAST(1 AS BIGINT))")  # one without them: the function it calls
    assert {k: f.dependencies for k, f in planner.functions.functions.items()} == {
        "named": (), "shipped": deps}
