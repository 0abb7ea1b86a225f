"""The session's Flink SQL planner: its catalog, and each statement planned on Spark.

One :class:`FlinkSqlPlanner` per JobManager (per session), called from worker threads one
statement at a time. A catalog table is a Spark temporary view of a hidden name over its
connector, made again at a query that reads it if its files changed since (:mod:`.sources`: files
added meanwhile are read); a view is a Spark temporary view of the planned query; every other name
a query reads is one of the session's Spark temporary views (a DataStream or pandas DataFrame
registered with ``create_temporary_view``).
Names resolve as Flink's do: a temporary table or view shadows a permanent one (see
:mod:`.catalog`).
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

from sqlglot import exp

from ...api.table.conversion import TO_DATASTREAM
from ...api.table.environment import CATALOG_SCOPE, DIALECT, SCHEMA_RUNTIME_MODE
from ...api.table.typeparser import spark_type
from ...common.sqlscript import CLIENT_RESULT_KEYS
from ...graph.jobgraph import PythonDependency
from . import altercatalog, connectors, matchrecognize, querytypes, streaming, tablestream
from .catalog import HIDDEN_PREFIX, Catalog
from .columntypes import (
    declared_columns,
    field_type_text,
    flink_type,
    flink_types,
    not_null_in_view,
    refined_types,
    spark_columns,
    typeof_from_spark,
    typeof_not_typed,
    window_bound_types,
    with_view_types,
)
from .connectors.changelogjson import batch_source_refusal
from .connectors.changelogsource import changelog_sources, with_changelog_streams
from .ctas import RECOVERED, CreateTableAs
from .ctasplan import ctas_insert
from .dialect import cte_names, renamed_tables, table_names
from .explainstatement import explain_statement
from .functions import FunctionCatalog
from .model import (
    DEFAULT_CATALOG,
    DEFAULT_DATABASE,
    DEFAULT_PATH,
    CatalogTable,
    Column,
    FlinkSqlError,
)
from .outcome import StatementJob, StatementOutcome
from .planner import flink_named, to_spark_sql
from .pythonwindow import plan_mixed_aggregations
from .showcreate import describe_table, object_path, show_create_table, show_create_view
from .sources import SourceViews
from .statements import (
    AlterFunction,
    AlterTable,
    AlterView,
    CreateFunction,
    CreateTable,
    CreateView,
    Describe,
    Drop,
    Explain,
    Insert,
    Query,
    Reset,
    Set,
    Show,
    Statement,
    StatementSet,
    StopJob,
    Use,
    parse_statements,
    planned_queries,
)
from .timeattributes import (
    Attributes,
    catalog_attributes,
    marked,
    proctime_window_refusal,
    query_attributes,
)

#: Flink's names of its built-in catalog and database, in the names of an INSERT's result
#: the statements that change the catalog or the session's options
_CATALOG_CHANGES = (CreateTable, CreateView, CreateFunction, Drop, Set, Reset, AlterTable,
                    AlterView, AlterFunction)


def select_configuration(request: dict[str, str], session: dict[str, str]) -> dict[str, str]:
    """A streaming SELECT's configuration: the session's options (``SET``) over the request's,
    except how the result reaches its client (:data:`CLIENT_RESULT_KEYS`), which is the
    request's alone: a session's ``SET`` of the SQL client's result mode must not turn another
    client's ``collect()`` into snapshots of a materialised table."""
    shared = {k: v for k, v in session.items() if k not in CLIENT_RESULT_KEYS}
    own = {k: v for k, v in request.items() if k in CLIENT_RESULT_KEYS}
    return {**request, **shared, **own}


class FlinkSqlPlanner:
    """Plans Flink SQL statements on one SparkSession, against the session's catalog."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        #: the catalog of the statement being planned
        self.catalog = Catalog()
        #: ``SET`` options of the session (a TableEnvironment sends its own with each statement)
        self.options: dict[str, str] = {}
        #: the session's Python user-defined functions
        self.functions = FunctionCatalog(spark)
        #: the Spark views the catalog tables are read through
        self.sources = SourceViews(spark)
        #: catalog scope -> its catalog; "" is the session's shared catalog
        self._catalogs = {"": self.catalog}
        #: catalog scope -> its Python functions
        self._function_catalogs = {"": self.functions}
        self._lock = threading.RLock()

    # -- the one entry point ----------------------------------------------------------------
    def plan(self, text: str, runtime_mode: str = "BATCH",
             configuration: dict[str, str] | None = None,
             function: bytes = b"",
             dependencies: tuple[PythonDependency, ...] = ()) -> StatementOutcome:
        """Plan one statement: rows to answer with now, or the job that runs it (named
        ``pipeline.name`` when set, as Flink names a SQL job); ``function`` is the pickled
        Python function of a ``CREATE FUNCTION`` sent by ``create_temporary_system_function``,
        or the DataStream (a pickled ``SubmitJob``) of a ``datastream`` table's CREATE TABLE
        sent by ``from_data_stream``; ``dependencies``: the statement's Python files, archives
        and requirements (its TableEnvironment's ``python.files``... and the session's), with
        which its Python functions load here and run on the workers."""
        # a Table into a DataStream: planned only (a function sent is the Table's UDF's
        # registration, on its way to the same probe)
        if (configuration or {}).get(TO_DATASTREAM) and not function:
            return tablestream.probe(self, text, configuration or {}, runtime_mode, dependencies)
        outcome = self._plan_text(text, runtime_mode, configuration, function, dependencies)
        name = (configuration or {}).get("pipeline.name") or self.options.get("pipeline.name")
        if outcome.job is not None and name:
            outcome.job.name = name
        return outcome

    def _plan_text(self, text: str, runtime_mode: str, configuration: dict[str, str] | None,
                   function: bytes, dependencies: tuple[PythonDependency, ...] = ()
                   ) -> StatementOutcome:
        statements = parse_statements(text)
        if len(statements) != 1:
            raise FlinkSqlError(f"execute_sql takes one statement; this text has "
                                f"{len(statements)}. Run them one at a time (the %%flink_sql "
                                "magic runs a cell's statements in turn).")
        key = "execution.runtime-mode"  # a SET in the session wins over the client's default
        mode = (self.options.get(key) or (configuration or {}).get(key) or runtime_mode).upper()
        statement = statements[0]
        if not isinstance(statement, (Set, Reset)):  # SET/RESET: a way back from a dialect
            _check_dialect(self.options.get(DIALECT) or (configuration or {}).get(DIALECT))
        scope = (configuration or {}).get(CATALOG_SCOPE, "")
        with self._lock:
            self.catalog = self._catalogs.setdefault(scope, Catalog(scope))
            self.functions = self._function_catalogs.setdefault(
                scope, FunctionCatalog(self.spark, scope))
            with self.functions.loading(dependencies):
                return self._plan_parsed(statement, text, mode, configuration, function)

    def _plan_parsed(self, statement: Statement, text: str, mode: str,
                     configuration: dict[str, str] | None, function: bytes) -> StatementOutcome:
        """One statement planned, in this scope's catalog."""
        with self._lock:
            if isinstance(statement, CreateFunction):
                self.functions.create(statement, function, {**(configuration or {}),
                                                            **self.options})
                return StatementOutcome.ok(changes_catalog=True)
            self.functions.check_calls(statement)  # a function's first use imports it
            if isinstance(statement, CreateTable) and function:
                # an unbounded DataStream's table: its JobGraph (``from_data_stream``)
                statement.table.payload = function
            if isinstance(statement, CreateTableAs):  # its table made now, then its INSERT
                query, recovered = Query(statement.query), bool((configuration or {}).get(RECOVERED))
                planned = self._query(query) if mode == "BATCH" else self._streaming_query(
                    query, select_configuration(configuration or {}, self.options))
                insert = ctas_insert(statement, planned.columns, planned.column_types,
                                     self.catalog, self._create_table, recovered)
                outcome = self._plan_statement(insert, mode, configuration, text)
                outcome.changes_catalog = not recovered
                return outcome
            return self._plan_statement(statement, mode, configuration, text)

    def _plan_statement(self, statement: Statement, mode: str,
                        configuration: dict[str, str] | None, text: str) -> StatementOutcome:
        """A statement other than CREATE FUNCTION planned, in ``mode``."""
        with self._lock:
            if mode != "BATCH" and isinstance(statement, Query):
                return self._streaming_query(
                    statement, select_configuration(configuration or {}, self.options))
            if mode != "BATCH" and isinstance(statement, (Insert, StatementSet)):
                inserts = [statement] if isinstance(statement, Insert) else statement.inserts
                inserts = [dataclasses.replace(i, query=self._streaming_inlined(i.query))
                           for i in inserts]
                job = streaming.plan_inserts(self.spark,
                                             with_changelog_streams(self.catalog.all_tables()),
                                             list(inserts),
                                             self.conform,
                                             {**(configuration or {}), **self.options},
                                             self.functions)
                return StatementOutcome("SUCCESS_WITH_CONTENT", job.columns(),
                                        job.column_types, job=job)
            if mode == "BATCH" and SCHEMA_RUNTIME_MODE not in (configuration or {}):
                self._refuse_proctime_window(statement)
            if isinstance(statement, Explain):
                return explain_statement(self, statement, streaming=mode != "BATCH")
            streaming_schema = mode != "BATCH" or str((configuration or {}).get(
                SCHEMA_RUNTIME_MODE, "")).upper() == "STREAMING"
            outcome = (self._create_view(statement, text) if isinstance(statement, CreateView)
                       else self._plan(statement, streaming_schema))
            outcome.changes_catalog = isinstance(statement, _CATALOG_CHANGES) and not (
                isinstance(statement, Set) and statement.key is None)  # SET alone lists
            return outcome

    def _plan(self, statement: Statement, streaming_schema: bool = False) -> StatementOutcome:
        """``streaming_schema``: a query's or DESCRIBE's types are STREAMING's (its rowtime
        columns marked)."""
        if isinstance(statement, Query):
            return self._query(statement, streaming_schema)
        if isinstance(statement, Insert):
            return self._inserts([statement])
        if isinstance(statement, StatementSet):
            return self._inserts(list(statement.inserts))
        if isinstance(statement, CreateTable):
            return self._create_table(statement)
        if isinstance(statement, Drop):
            return self._drop(statement)
        if isinstance(statement, Show):
            return self._show(statement)
        if isinstance(statement, Describe):
            return self._describe(statement, streaming_schema)
        if isinstance(statement, Use):
            return _use(statement)
        if isinstance(statement, (Set, Reset)):
            return self._set(statement)
        if isinstance(statement, StopJob):
            return streaming.stop_job(statement, self.options)
        if isinstance(statement, (AlterTable, AlterView, AlterFunction)):
            return self._alter(statement)
        raise FlinkSqlError(f"{type(statement).__name__} statements are not supported by "
                            "sessioncluster yet")

    # -- queries ----------------------------------------------------------------------------
    def spark_sql(self, query: Any) -> str:
        """The query as Spark SQL: each name it reads resolved as Flink resolves it (the views of
        the catalog tables made anew); a MATCH_RECOGNIZE read from a view of its matches
        (:mod:`.matchrecognize`)."""
        return self._planned(query)[0]

    def _planned(self, query: Any) -> tuple[str, querytypes.TableColumns]:
        """The query as Spark SQL (its TYPEOF calls answered), and the Flink types of the
        columns of the tables and views it reads, by name."""
        query = matchrecognize.rewrite(query, self.frame)
        names = table_names(query) - cte_names(query)
        schemas: dict[str, CatalogTable] = {}
        renames: dict[str, str] = {}
        for name in names:
            spark_name, schema = self.resolve(name)
            if spark_name != name:
                renames[name] = spark_name
            if schema is not None:
                schemas[name] = schemas[spark_name] = schema
        read = dict(schemas)  # not the common table expressions': their types are Spark's

        def columns(name: str) -> querytypes.Columns | None:
            return declared_columns(read[name]) if name in read else None

        query = plan_mixed_aggregations(self.spark, query, self.functions)
        query = self.functions.rename_calls(renamed_tables(query, renames))
        self._with_cte_schemas(query, schemas)
        query = querytypes.resolve_typeof(
            query, columns,
            lambda tree, calls: typeof_from_spark(self.spark, tree, calls,
                                                  lambda probe: to_spark_sql(probe, schemas)))
        return to_spark_sql(query, schemas), columns

    def _declared_columns(self, name: str) -> querytypes.Columns | None:
        """STREAMING: a catalog table's declared columns, or a Spark view's."""
        table = self.catalog.all_tables().get(name.lower())
        return declared_columns(table) if table else spark_columns(self.spark, name)

    def frame(self, query: Any) -> Any:
        """The query's DataFrame, its columns named as Flink names them."""
        return flink_named(self.spark.sql(self.spark_sql(query)))

    def resolve(self, name: str) -> tuple[str, CatalogTable | None]:
        """The Spark view a query reads ``name`` as, and its schema (None if there is none):
        a temporary table, a temporary view (Spark's own name), a permanent view, a permanent
        table, in this order; another name is left to Spark."""
        catalog, key = self.catalog, name.lower()
        if key in catalog.temporary_tables:
            table = catalog.temporary_tables[key]
            return self.sources.register(table, catalog.hidden_name("temporary", key)), table
        if key not in catalog.temporary_views and not self._spark_view_exists(name):
            if key in catalog.views:  # planned again: it reads the files there are now
                name, text = catalog.views[key]
                spark_name = self._register_view(text, catalog.hidden_name("view", key))
                return spark_name, self._view_schema(spark_name, name)
            if key in catalog.tables:
                table = catalog.tables[key]
                return self.sources.register(table, catalog.hidden_name("table", key)), table
            if self._other_catalogs_table(name):
                raise FlinkSqlError(f"Object '{name}' not found")
        return name, self._view_schema(name, name)

    def _register_view(self, text: str, spark_name: str) -> str:
        """Make ``spark_name`` the Spark view of the ``CREATE VIEW`` statement ``text``."""
        statement = parse_statements(text)[0]
        assert isinstance(statement, CreateView)
        self._view_frame(statement).createOrReplaceTempView(spark_name)
        return spark_name

    def _view_frame(self, statement: CreateView) -> Any:
        """The view's rows, its columns named by the statement's column list, if any."""
        sql, tables = self._planned(statement.query)
        frame = flink_named(self.spark.sql(sql))
        if statement.columns:
            if len(statement.columns) != len(frame.columns):
                raise FlinkSqlError(
                    f"VIEW definition and input fields not match:\n\tDef fields: "
                    f"{statement.columns}.\n\tInput fields: {list(frame.columns)}.")
            frame = frame.toDF(*statement.columns)
        return with_view_types(frame, querytypes.query_columns(statement.query, tables))

    def _spark_view_exists(self, name: str) -> bool:
        return bool(self.spark.catalog.tableExists(name))

    def _view_schema(self, spark_name: str, name: str) -> CatalogTable | None:
        """A Spark view as a table of its columns (None if there is no such view)."""
        if not self._spark_view_exists(spark_name):
            return None
        fields = self.spark.table(spark_name).schema.fields
        return CatalogTable(name, [Column(f.name, field_type_text(f)) for f in fields])

    def _other_catalogs_table(self, name: str) -> bool:
        """Whether ``name`` is an object of another catalog scope only."""
        return any(catalog.holds(name) for catalog in self._catalogs.values()
                   if catalog is not self.catalog)

    def _with_cte_schemas(self, query: Any, schemas: dict[str, CatalogTable]) -> None:
        """Add the schema of each of the query's common table expressions (which a window
        function's ``TABLE <cte>`` reads), analysed by Spark in order."""
        for with_ in query.find_all(exp.With):
            ctes = list(with_.expressions)
            for i, cte in enumerate(ctes):
                probe = exp.select("*").from_(exp.to_identifier(cte.alias)).limit(0)
                for earlier in ctes[: i + 1]:
                    probe = probe.with_(exp.to_identifier(earlier.alias), as_=earlier.this.copy())
                fields = self.spark.sql(to_spark_sql(probe, schemas)).schema.fields
                schemas[cte.alias] = CatalogTable(cte.alias, [Column(f.name, flink_type(f.dataType))
                                                              for f in fields])

    def _query(self, statement: Query, streaming_schema: bool = False) -> StatementOutcome:
        sql, tables = self._planned(statement.ast)
        frame = flink_named(self.spark.sql(sql))  # analysed now: a wrong column fails here
        columns = list(frame.columns)
        types = marked(refined_types(window_bound_types(statement.ast, flink_types(frame.schema)),
                                     querytypes.query_columns(statement.ast, tables)),
                       self._time_attributes(statement.ast), streaming_schema)
        return StatementOutcome("SUCCESS_WITH_CONTENT", columns, types,
                                job=StatementJob("collect", lambda: frame, types))

    def _streaming_query(self, statement: Query, configuration: dict[str, str]
                         ) -> StatementOutcome:
        """A SELECT in STREAMING mode: a job whose rows (a changelog) the client fetches as
        they come."""
        inlined = self._streaming_inlined(statement.ast)
        attributes = self._attributes_of(inlined)
        statement = Query(querytypes.resolve_typeof(inlined, self._declared_columns,
                                                    typeof_not_typed))
        ctes = {cte.alias_or_name.lower() for cte in statement.ast.find_all(exp.CTE)}
        tables = with_changelog_streams(self.catalog.all_tables())
        for name in table_names(statement.ast):
            if name.lower() not in tables and name.lower() not in ctes \
                    and not self._spark_view_exists(name):
                raise FlinkSqlError(f"Object '{name}' not found")
        # the calls of Python functions by their Spark names (a program's own catalog scope
        # registers them under names of its own), as plan_inserts renames an INSERT's
        job = streaming.plan_select(self.spark, tables, self.functions.rename_calls(statement.ast),
                                    configuration, self.functions)
        from pyspark.sql.types import StructType

        fields = job.inserts[0].result_fields
        job.column_types = marked(refined_types(
            window_bound_types(statement.ast, flink_types(StructType(fields))),
            querytypes.query_columns(inlined, self._declared_columns)),
            attributes, True)
        return StatementOutcome("SUCCESS_WITH_CONTENT", [f.name for f in fields],
                                job.column_types, job=job)

    def _time_attributes(self, query: Any) -> Attributes | None:
        """The time attributes of the query's columns (a view's of the tables beneath; None
        for a view that shadows a table of its name)."""
        return self._attributes_of(self._views_inlined(query))

    def _attributes_of(self, inlined: Any) -> Attributes | None:
        """The time attributes of a query whose views are inlined (None: none known)."""
        return None if inlined is None else query_attributes(
            inlined, catalog_attributes(self.catalog.all_tables()))

    def _refuse_proctime_window(self, statement: Statement) -> None:
        """Flink 2.3 plans no window (a table function or a legacy group window) over a
        PROCTIME() column in BATCH mode, in a query, an INSERT, a statement set or their
        EXPLAIN (though it gives the query's schema), and reads no changelog source: its
        message."""
        tables = catalog_attributes(self.catalog.all_tables())
        for query in map(self._views_inlined, planned_queries(statement)):
            refusal = None if query is None else proctime_window_refusal(query, tables) \
                or batch_source_refusal(query, self.catalog.all_tables())
            if refusal is not None:
                raise FlinkSqlError(refusal)

    def _streaming_inlined(self, query: Any) -> Any:
        """STREAMING: ``query`` with its views inlined and its bounded changelog-format tables
        read as their changelogs (:func:`.changelogsource.changelog_sources`)."""
        return changelog_sources(self.spark, self._inline_views(query), self.catalog.all_tables())

    def _views_inlined(self, query: Any) -> Any:
        """:meth:`_inline_views` of ``query``; None for a view that shadows a table of its name."""
        try:
            return self._inline_views(query)
        except FlinkSqlError:
            return None

    def _inline_views(self, query: Any) -> Any:
        """STREAMING: ``query`` with each view made by SQL (``CREATE [TEMPORARY] VIEW``) it
        reads, directly or through other views, as a common table expression of its own name
        (views read by others first), so that it reads the catalog tables beneath, as Flink's
        planner expands a view."""
        ctes: dict[str, exp.Expression] = {}
        self._view_ctes(query, ctes, set())
        if not ctes:
            return query
        query = query.copy()
        with_ = query.args.get("with_")
        own = list(with_.expressions) if with_ is not None else []
        views = [exp.CTE(this=body, alias=exp.TableAlias(this=exp.to_identifier(name)))
                 for name, body in ctes.items()]
        query.set("with_", exp.With(expressions=[*views, *own]))
        return query

    def _view_ctes(self, query: Any, ctes: dict[str, exp.Expression], reading: set[str]) -> None:
        """Add the views ``query`` reads (and those they read) to ``ctes``, in dependency order."""
        own = {c.lower() for c in cte_names(query)}
        for name in sorted(table_names(query)):
            key = name.lower()
            if key in own or name in ctes:
                continue
            text = self.catalog.view_text(name)
            if text is None:
                continue
            if key in reading:
                raise FlinkSqlError(f"View '{DEFAULT_PATH}.{name}' reads itself")
            view = parse_statements(text)[0]
            assert isinstance(view, CreateView)
            self._view_ctes(view.query, ctes, reading | {key})
            body: Any = view.query.copy()
            if view.columns:  # the column list renames the query's columns by position
                body = exp.select("*").from_(exp.Subquery(this=body, alias=exp.TableAlias(
                    this=exp.to_identifier("__view"),
                    columns=[exp.to_identifier(c, quoted=True) for c in view.columns])))
            ctes[name] = body

    def _inserts(self, inserts: list[Insert]) -> StatementOutcome:
        writes = []
        for insert in inserts:
            table = self.table(insert.target)
            frame = self.frame(insert.query)
            writes.append((table, self.conform(frame, table, insert), insert.overwrite))
        columns = [f"{DEFAULT_PATH}.{table.name}" for table, _, _ in writes]

        def run() -> Any:
            for table, frame, overwrite in writes:
                connectors.write_table(frame, table, overwrite=overwrite, printed=job.printed)
            return self.spark.createDataFrame([tuple(-1 for _ in columns)],
                                              ", ".join(f"`{c}` BIGINT" for c in columns))

        job = StatementJob("insert-into_" + ",".join(columns), run, ["BIGINT"] * len(columns))
        return StatementOutcome("SUCCESS_WITH_CONTENT", columns, ["BIGINT"] * len(columns),
                                job=job)

    def conform(self, frame: Any, table: CatalogTable, insert: Insert,
                passed: tuple[str, ...] = ()) -> Any:
        """The query's columns cast to the sink's physical columns, by position (or by the
        INSERT's column list), as Flink's implicit insert casts do; the ``passed`` columns
        (last in ``frame``) kept as they are, last."""
        targets = table.physical_columns
        extra = [f"`{c}`" for c in passed]
        frame_columns = [c for c in frame.columns if c not in passed]
        names = list(insert.columns) if insert.columns else [c.name for c in targets]
        if len(frame_columns) != len(names):
            raise FlinkSqlError(
                f"Column types of query result and sink for '{DEFAULT_PATH}.{table.name}' do "
                f"not match. The query has {len(frame_columns)} columns, the sink "
                f"{len(names)}: [{', '.join(names)}].")
        by_name = {c.name: c for c in targets}
        cast = []
        for source, name in zip(frame_columns, names):
            if name not in by_name:
                raise FlinkSqlError(f"Unknown target column '{name}' of '{table.name}'")
            ddl = spark_type(by_name[name].type or "STRING")
            cast.append(f"CAST(`{source}` AS {ddl}) AS `{name}`")
        missing = [c.name for c in targets if c.name not in names]
        cast += [f"CAST(NULL AS {spark_type(by_name[n].type or 'STRING')}) AS `{n}`"
                 for n in missing]
        frame = frame.selectExpr(*cast, *extra)
        return frame.select(*[f"`{c.name}`" for c in targets], *extra)

    # -- DDL and utility statements ---------------------------------------------------------
    def table(self, name: str) -> CatalogTable:
        table = self.catalog.table(name)
        if table is None:
            raise FlinkSqlError(f"Table '{DEFAULT_PATH}.{name}' was not found.")
        return table

    def _taken(self, key: str, temporary: bool) -> bool:
        """Whether a table or view of that kind (temporary or permanent) has the name ``key``."""
        c = self.catalog
        if temporary:
            return key in c.temporary_tables or key in c.temporary_views
        return key in c.tables or key in c.views

    def _create_table(self, statement: CreateTable) -> StatementOutcome:
        table = statement.table
        key = table.name.lower()
        if self._taken(key, table.temporary):
            if statement.if_not_exists:
                return StatementOutcome.ok()
            what = "Temporary table" if table.temporary else "table"
            raise FlinkSqlError(f"Could not execute CreateTable in path `default_catalog`."
                                f"`default_database`.`{table.name}`: {what} already exists")
        connectors.validate(table)
        if table.temporary:
            self.catalog.temporary_tables[key] = table
        else:
            self.catalog.tables[key] = table
        return StatementOutcome.ok()

    def _create_view(self, statement: CreateView, text: str) -> StatementOutcome:
        key, temporary, catalog = statement.name.lower(), statement.temporary, self.catalog
        views = catalog.temporary_views if temporary else catalog.views
        if self._taken(key, temporary):
            if key in views and statement.if_not_exists:
                return StatementOutcome.ok()
            raise FlinkSqlError(f"Could not execute CreateView in path `default_catalog`."
                                f"`default_database`.`{statement.name}`: view already exists")
        frame = self._view_frame(statement)
        if temporary:
            frame.createOrReplaceTempView(statement.name)
            catalog.temporary_views[key] = statement.name
            catalog.temporary_view_texts[key] = text
        else:
            frame.createOrReplaceTempView(catalog.hidden_name("view", key))
            catalog.views[key] = (statement.name, text)
        return StatementOutcome.ok()

    def _drop(self, statement: Drop) -> StatementOutcome:
        """``DROP [TEMPORARY [SYSTEM]] TABLE|VIEW|FUNCTION``, as Flink 2.3 answers it."""
        if statement.kind == "FUNCTION":
            self.functions.drop(statement)
            return StatementOutcome.ok()
        key, permanent = statement.name.lower(), self.catalog.views if \
            statement.kind == "VIEW" else self.catalog.tables
        spark_view = statement.kind == "VIEW" and key not in permanent \
            and self._spark_view_exists(statement.name) \
            and not statement.name.startswith(HIDDEN_PREFIX)  # a client's temporary view
        dropped = self.catalog.drop(statement, spark_view)
        if dropped is not None:
            self.sources.drop(dropped)
        return StatementOutcome.ok()

    def _alter(self, statement: AlterTable | AlterView | AlterFunction) -> StatementOutcome:
        """``ALTER TABLE|VIEW|FUNCTION`` (:mod:`.altercatalog`)."""
        if isinstance(statement, AlterTable):
            altercatalog.alter_table(self.catalog, self.sources.drop, statement)
        elif isinstance(statement, AlterView):
            altercatalog.alter_view(self.catalog, self.sources.drop, statement, self._view_frame)
        else:
            altercatalog.alter_function(self.functions, statement, self.options)
        return StatementOutcome.ok()

    def _show(self, statement: Show) -> StatementOutcome:
        what = statement.kind.upper()
        if what == "TABLES":
            names = sorted(self.catalog.names() | set(self._view_names()))
            return _listing("table name", names)
        if what == "VIEWS":
            return _listing("view name", sorted(self._view_names()))
        if what in ("FUNCTIONS", "USER FUNCTIONS"):
            return _listing("function name", self.functions.listed(statement))
        if what == "CATALOGS":
            return _listing("catalog name", ["default_catalog"])
        if what == "DATABASES":
            return _listing("database name", ["default_database"])
        if what == "CURRENT CATALOG":
            return _listing("current catalog name", ["default_catalog"])
        if what == "CURRENT DATABASE":
            return _listing("current database name", ["default_database"])
        if what == "MODULES":  # Flink's built-in functions are its one module, 'core'
            return _listing("module name", ["core"])
        if what == "FULL MODULES":
            return StatementOutcome("SUCCESS_WITH_CONTENT", ["module name", "used"],
                                    ["STRING", "BOOLEAN"], [("core", True)])
        if what in ("CREATE TABLE", "CREATE VIEW") and statement.name is not None:
            return _listing("result", [self._show_create(what, statement.name)])
        raise FlinkSqlError(f"SHOW {what} is not supported by sessioncluster yet")

    def _show_create(self, what: str, name: str) -> str:
        """``SHOW CREATE TABLE|VIEW name``: the catalog object's DDL (:mod:`.showcreate`)."""
        key, catalog = name.lower(), self.catalog
        table = catalog.table(name)
        text = catalog.view_text(name)
        path = object_path(name)
        if table is None and text is None:
            kind = "Table" if what == "CREATE TABLE" else "View"
            raise FlinkSqlError(f"Could not execute SHOW {what}. {kind} with identifier {path} "
                                "does not exist.")
        if what == "CREATE TABLE" and table is None:
            raise FlinkSqlError(f"SHOW CREATE TABLE is only supported for tables, but {path} is "
                                "a view. Please use SHOW CREATE VIEW instead.")
        if what == "CREATE VIEW" and text is None:
            raise FlinkSqlError(f"SHOW CREATE VIEW is only supported for views, but {path} is "
                                "a table. Please use SHOW CREATE TABLE instead.")
        if table is not None:
            return show_create_table(table)
        assert text is not None
        view = parse_statements(text)[0]
        assert isinstance(view, CreateView)
        spark_name, _ = self.resolve(name)
        columns = view.columns or list(self.spark.table(spark_name).columns)
        return show_create_view(view.name, key in catalog.temporary_views, columns, view.query)

    def _view_names(self) -> list[str]:
        """The catalog's views, and the session's Spark temporary views (DataStreams and
        DataFrames registered with create_temporary_view)."""
        # SHOW VIEWS, not catalog.listTables(): that one costs ~270 ms (it describes every table)
        spark_views = [r.viewName for r in self.spark.sql("SHOW VIEWS").collect()
                       if r.isTemporary and not r.viewName.startswith(HIDDEN_PREFIX)]
        catalog = self.catalog
        return sorted(set(spark_views) | {name for name, _ in catalog.views.values()}
                      | set(catalog.temporary_views.values()))

    def _describe(self, statement: Describe, streaming: bool = False) -> StatementOutcome:
        """Flink's DESCRIBE: a type marked ``*ROWTIME*`` (``streaming`` only) or ``*PROCTIME*``
        (its NOT NULL in the ``null`` column) where the column is a time attribute."""
        spark_name, _ = self.resolve(statement.name)
        table = self.catalog.table(statement.name) if spark_name != statement.name else None
        columns = ["name", "type", "null", "key", "extras", "watermark"]
        types = ["STRING", "STRING", "BOOLEAN", "STRING", "STRING", "STRING"]
        if table is None:
            frame = self.spark.table(spark_name)  # a view: Spark's schema of it
            text = self.catalog.view_text(statement.name)
            view = parse_statements(text)[0] if text is not None else None
            attributes = self._time_attributes(view.query) if isinstance(view, CreateView) \
                else None
            described: list[tuple[Any, ...]] = [
                (f.name, t, not not_null_in_view(f), None, None, None) for f, t in zip(
                    frame.schema.fields, marked(flink_types(frame.schema), attributes,
                                                streaming))]
            return StatementOutcome("SUCCESS_WITH_CONTENT", columns, types, described)
        computed: dict[str, str] = {}
        if any(not c.is_physical for c in table.columns):  # their types are Spark's answer
            schema = self.spark.table(spark_name).schema
            computed = dict(zip(schema.names, flink_types(schema)))
        return StatementOutcome("SUCCESS_WITH_CONTENT", columns, types,
                                describe_table(table, computed, streaming))

    def _set(self, statement: Set | Reset) -> StatementOutcome:
        if isinstance(statement, Reset):
            if statement.key is None:
                self.options.clear()
            else:
                self.options.pop(statement.key, None)
            return StatementOutcome.ok()
        if statement.key is None:
            rows = sorted(self.options.items())
            return StatementOutcome("SUCCESS_WITH_CONTENT", ["key", "value"],
                                    ["STRING", "STRING"], rows)
        self.options[statement.key] = statement.value or ""
        return StatementOutcome.ok()


def _use(statement: Use) -> StatementOutcome:
    """``USE``: the one catalog and database there are (Flink's default ones)."""
    if statement.catalog is not None and statement.catalog != DEFAULT_CATALOG:
        raise FlinkSqlError(f"A catalog with name [{statement.catalog}] does not exist.")
    if statement.database is not None and statement.database != DEFAULT_DATABASE:
        raise FlinkSqlError(f"A database with name [{statement.database}] does not exist in "
                            f"the catalog: [{DEFAULT_CATALOG}].")
    return StatementOutcome.ok()


def _check_dialect(dialect: str | None) -> None:
    """Flink's own SQL only: another dialect (``hive``) fails as Flink without its parser's jar
    does, rather than be parsed as Flink SQL."""
    if dialect and dialect.strip().lower() != "default":
        raise FlinkSqlError(f"Could not find any factory for identifier '{dialect.strip().lower()}' "
                            "that implements 'org.apache.flink.table.delegation.ParserFactory' in "
                            "the classpath. (sessioncluster parses Flink's default dialect only; "
                            f"SET '{DIALECT}' = 'default')")


def _listing(column: str, names: list[str]) -> StatementOutcome:
    return StatementOutcome("SUCCESS_WITH_CONTENT", [column], ["STRING"], [(n,) for n in names])
