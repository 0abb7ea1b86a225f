"""PyFlink's ``TableEnvironment``, ``EnvironmentSettings`` and ``TableConfig``.

The TableEnvironment builds Flink SQL text (it never parses SQL) and sends each statement to the
JobManager through a :class:`FlinkSqlGateway` (the session: ``Session.execute_flink_sql``), with
the runtime mode of its settings and its TableConfig's options. Local data (``from_elements``,
``from_pandas``) becomes a temporary view of the session. ``client/table_environment.py`` binds
``TableEnvironment.create(...)`` to the current session.
"""

from __future__ import annotations

import datetime
import itertools
import secrets
from typing import Any, Iterable, Protocol, Sequence

from ...common.configuration import Configuration
from ...common.execution_mode import RuntimeExecutionMode
from ...common.time import Duration, format_duration_ms, parse_duration_ms
from ...common.types import Row, rows_as_tuples
from .catalogobjects import (
    DEFAULT_CATALOG,
    DEFAULT_DATABASE,
    NOT_FOUND,
    TEMPORARY_FUNCTION_EXISTS,
    ModuleEntry,
    SqlDialect,
)
from .descriptor import TableDescriptor
from .result import DEFAULT_MAX_COLUMN_WIDTH, TableResult, TableSchema
from .sqltext import quote_identifier, quote_path, quote_string
from .statement_set import StatementSet
from .table import Table, unnamed_view_name
from .types import DataType, RowType
from .udf import UserDefinedFunctionWrapper, unregistered_in

#: Flink's option naming the runtime mode
RUNTIME_MODE = "execution.runtime-mode"
#: Flink's option of the printed column width
MAX_COLUMN_WIDTH = "table.display.max-column-width"
#: Flink's option: an INSERT's ``execute_sql`` returns once its job has ended, not when it runs
DML_SYNC = "table.dml-sync"
#: Flink's options of a TableEnvironment's Python dependencies: files (comma-separated),
#: archives (comma-separated ``path[#target_dir]``), requirements (``file[#cache_dir]``);
#: the session packs them with each statement (``dependencies.pack_configured``)
PYTHON_FILES = "python.files"
PYTHON_ARCHIVES = "python.archives"
PYTHON_REQUIREMENTS = "python.requirements"


class FlinkSqlGateway(Protocol):
    """What a TableEnvironment needs of the session (``client/session.py``'s ``Session``)."""

    def execute_flink_sql(self, statement: str, runtime_mode: RuntimeExecutionMode,
                          configuration: dict[str, str], *, function: Any = None) -> Any:
        """Run one Flink SQL statement; a ``SqlStatementResult`` (job_id, result_kind,
        columns, column_types, table (pyarrow), row_kinds). ``function``: the Python function
        (a udf/udtf/udaf wrapper) a ``CREATE FUNCTION`` registers, shipped as user code."""

    def create_temporary_view(self, name: str, df: Any) -> None:
        """Register a pandas DataFrame as the temporary view ``name``."""

    def job(self, job_id: str) -> Any:
        """The JobClient of a job of the session."""


class EnvironmentSettings:
    """The runtime mode (and built-in catalog names) a TableEnvironment is created with."""

    class Builder:
        """``EnvironmentSettings.new_instance().in_batch_mode().build()``."""

        def __init__(self) -> None:
            self._configuration = Configuration()
            self._configuration.set_string(RUNTIME_MODE, "streaming")

        def in_batch_mode(self) -> "EnvironmentSettings.Builder":
            self._configuration.set_string(RUNTIME_MODE, "batch")
            return self

        def in_streaming_mode(self) -> "EnvironmentSettings.Builder":
            self._configuration.set_string(RUNTIME_MODE, "streaming")
            return self

        def with_configuration(self, config: Configuration) -> "EnvironmentSettings.Builder":
            self._configuration.add_all(config)
            return self

        def with_built_in_catalog_name(self, name: str) -> "EnvironmentSettings.Builder":
            self._configuration.set_string("table.builtin-catalog-name", name)
            return self

        def with_built_in_database_name(self, name: str) -> "EnvironmentSettings.Builder":
            self._configuration.set_string("table.builtin-database-name", name)
            return self

        def build(self) -> "EnvironmentSettings":
            return EnvironmentSettings(self._configuration)

    def __init__(self, configuration: Configuration | None = None) -> None:
        self._configuration = Configuration(configuration)
        if not self._configuration.contains_key(RUNTIME_MODE):
            self._configuration.set_string(RUNTIME_MODE, "streaming")

    @staticmethod
    def new_instance() -> "EnvironmentSettings.Builder":
        return EnvironmentSettings.Builder()

    @staticmethod
    def in_batch_mode() -> "EnvironmentSettings":
        return EnvironmentSettings.new_instance().in_batch_mode().build()

    @staticmethod
    def in_streaming_mode() -> "EnvironmentSettings":
        return EnvironmentSettings.new_instance().in_streaming_mode().build()

    @staticmethod
    def from_configuration(config: Configuration) -> "EnvironmentSettings":
        return EnvironmentSettings(config)

    def is_streaming_mode(self) -> bool:
        return self.runtime_mode() is not RuntimeExecutionMode.BATCH

    def runtime_mode(self) -> RuntimeExecutionMode:
        """BATCH or STREAMING (AUTOMATIC runs as STREAMING, as a Table program does in Flink)."""
        mode = RuntimeExecutionMode.parse(self._configuration.get_string(RUNTIME_MODE,
                                                                         "streaming"))
        return RuntimeExecutionMode.STREAMING if mode is RuntimeExecutionMode.AUTOMATIC else mode

    def get_built_in_catalog_name(self) -> str:
        return self._configuration.get_string("table.builtin-catalog-name", "default_catalog")

    def get_built_in_database_name(self) -> str:
        return self._configuration.get_string("table.builtin-database-name", "default_database")

    def get_configuration(self) -> Configuration:
        return self._configuration

    def to_configuration(self) -> Configuration:
        return Configuration(self._configuration)


class TableConfig:
    """The options of a TableEnvironment, sent with every statement."""

    def __init__(self, configuration: Configuration | None = None) -> None:
        self._configuration = Configuration(configuration)

    def get_configuration(self) -> Configuration:
        return self._configuration

    def add_configuration(self, configuration: Configuration) -> None:
        self._configuration.add_all(configuration)

    def set(self, key: str, value: str) -> "TableConfig":
        """Set the option ``key`` (``get_config().set("parallelism.default", "4")``)."""
        self._configuration.set_string(key, str(value))
        return self

    def get(self, key: str, default_value: str | None = None) -> str | None:
        if not self._configuration.contains_key(key):
            return default_value
        return self._configuration.get_string(key, "")

    def get_local_timezone(self) -> str:
        return self.get("table.local-time-zone", "default") or "default"

    def set_local_timezone(self, timezone_id: str) -> None:
        self.set("table.local-time-zone", timezone_id)

    def set_idle_state_retention(self, duration: datetime.timedelta | Duration) -> None:
        """``table.exec.state.ttl``: how long state that was not updated is kept (0: for ever),
        as Flink writes it (``1 h``, ``1500 ms``). Kept as an option: a streaming SQL job's
        state here has no TTL."""
        millis = (duration.millis if isinstance(duration, Duration)
                  else round(duration.total_seconds() * 1000))
        self.set(STATE_TTL, format_duration_ms(millis))

    def get_idle_state_retention(self) -> datetime.timedelta:
        """``table.exec.state.ttl`` (0 when unset)."""
        text = self.get(STATE_TTL, "0 ms") or "0 ms"
        try:
            millis = parse_duration_ms(text)
        except ValueError:
            raise ValueError(f"Could not parse value '{text}' for key '{STATE_TTL}'.") from None
        return datetime.timedelta(milliseconds=millis)

    def get_max_generated_code_length(self) -> int:
        """``table.generated-code.max-length`` (Flink's default 4000; no code is generated here)."""
        return int(self.get(MAX_CODE_LENGTH, "4000") or 4000)

    def set_max_generated_code_length(self, max_generated_code_length: int) -> None:
        self.set(MAX_CODE_LENGTH, str(max_generated_code_length))

    def set_python_executable(self, python_exec: str) -> None:
        """``python.executable`` (kept as an option: Python functions run in the session's
        Python here)."""
        self.set(PYTHON_EXECUTABLE, python_exec)

    def get_python_executable(self) -> str | None:
        return self.get(PYTHON_EXECUTABLE)

    def to_dict(self) -> dict[str, str]:
        return self._configuration.to_dict()

    def to_map(self) -> dict[str, str]:
        """The options set, as a dict."""
        return self.to_dict()

    @staticmethod
    def get_default() -> "TableConfig":
        return TableConfig()

    def set_sql_dialect(self, sql_dialect: int) -> None:
        """``table.sql-dialect``: :class:`SqlDialect` ``DEFAULT`` (Flink SQL) or ``HIVE``
        (refused when a statement runs: no Hive parser here)."""
        self.set(DIALECT, SqlDialect.NAMES[sql_dialect])

    def get_sql_dialect(self) -> int:
        name = (self.get(DIALECT, "default") or "default").lower()
        return next((d for d, n in SqlDialect.NAMES.items() if n == name), SqlDialect.DEFAULT)


#: Flink's option of the SQL dialect
DIALECT = "table.sql-dialect"
#: Flink's options of the idle state retention, the generated code's length and the Python
STATE_TTL = "table.exec.state.ttl"
MAX_CODE_LENGTH = "table.generated-code.max-length"
PYTHON_EXECUTABLE = "python.executable"
#: a statement's configuration key naming the catalog it runs against: under
#: ``sessioncluster run`` each TableEnvironment has a catalog of its own, as each Flink
#: TableEnvironment has; without it, the session's shared catalog (the ``%%flink_sql`` magic,
#: ``Session.sql`` and a notebook's TableEnvironments share one, as Zeppelin's do)
CATALOG_SCOPE = "sessioncluster.catalog-scope"
#: the runtime mode whose schema a query planned in BATCH for its columns is (STREAMING's marks
#: its rowtime columns ``*ROWTIME*``)
SCHEMA_RUNTIME_MODE = "sessioncluster.schema-runtime-mode"

_TMP_TOKEN = secrets.token_hex(3)
_TMP_COUNTER = itertools.count(1)


def temporary_table_name() -> str:
    """A fresh view name for local data (``_tmp_table_<process token>_<n>``: unique on a session
    that several clients share)."""
    return f"_tmp_table_{_TMP_TOKEN}_{next(_TMP_COUNTER)}"


class TableEnvironment:
    """Builds Table API programs and runs Flink SQL on a session (``pyflink.table``'s)."""

    def __init__(self, gateway: FlinkSqlGateway, environment_settings: EnvironmentSettings
                 | None = None) -> None:
        self.gateway = gateway
        self.settings = environment_settings or EnvironmentSettings.in_streaming_mode()
        self._config = TableConfig(self.settings.get_configuration())
        #: the generated names of the Python functions this environment registered
        self._registered_functions: set[str] = set()

    # -- configuration ---------------------------------------------------------------------------
    def get_config(self) -> TableConfig:
        return self._config

    def runtime_mode(self) -> RuntimeExecutionMode:
        return self.settings.runtime_mode()

    # -- Python dependencies (PyFlink's: options of the TableConfig) -----------------------------
    def add_python_file(self, file_path: str) -> None:
        """Ship a module (``.py``), a package directory, or a zip/wheel/egg with this
        environment's statements: their Python functions import it (``python.files``)."""
        files = self._config.get(PYTHON_FILES)
        self._config.set(PYTHON_FILES, f"{file_path},{files}" if files else file_path)

    def add_python_archive(self, archive_path: str, target_dir: str | None = None) -> None:
        """Ship a zip or tar archive, extracted in the workers' working directory under
        ``target_dir`` (default: the archive's file name) (``python.archives``)."""
        archive = f"{archive_path}#{target_dir}" if target_dir is not None else archive_path
        archives = self._config.get(PYTHON_ARCHIVES)
        self._config.set(PYTHON_ARCHIVES, f"{archives},{archive}" if archives else archive)

    def set_python_requirements(self, requirements_file_path: str,
                                requirements_cache_dir: str | None = None) -> None:
        """Have pip install a requirements file for this environment's Python functions (from
        ``requirements_cache_dir``'s packages only, when given) (``python.requirements``)."""
        self._config.set(PYTHON_REQUIREMENTS, requirements_file_path if requirements_cache_dir
                         is None else f"{requirements_file_path}#{requirements_cache_dir}")

    # -- statements ------------------------------------------------------------------------------
    def execute_sql(self, stmt: str) -> TableResult:
        """Run one Flink SQL statement (DDL, DML, a query, SHOW, SET...)."""
        for wrapper in unregistered_in(stmt):  # a Python function called in the Table API
            name = wrapper.sql_name()
            if name not in self._registered_functions:
                self._create_function("TEMPORARY SYSTEM", name, wrapper)
                self._registered_functions.add(name)
        mode = self.runtime_mode()
        result = self.gateway.execute_flink_sql(stmt, mode, self._config.to_dict())
        width = int(self._config.get(MAX_COLUMN_WIDTH, str(DEFAULT_MAX_COLUMN_WIDTH)) or
                    DEFAULT_MAX_COLUMN_WIDTH)
        return TableResult(result, streaming=mode is RuntimeExecutionMode.STREAMING,
                           job_client=self.gateway.job, max_column_width=width)

    def sql_query(self, query: str) -> Table:
        """A Table of a Flink SQL query (not run until the Table is executed)."""
        return Table(query, self)

    def explain_sql(self, stmt: str, *extra_details: Any) -> str:
        details = ", ".join(getattr(d, "name", str(d)) for d in extra_details)
        rows = self.execute_sql(f"EXPLAIN {details + ' ' if details else ''}{stmt}").rows()
        return str(rows[0][0]) if rows else ""

    def query_schema(self, query: str) -> TableSchema:
        """The columns of ``query`` and their types, as the JobManager's planner sees them
        (planned in BATCH mode: in STREAMING a query would start a job that runs on)."""
        configuration = {**self._config.to_dict(), RUNTIME_MODE: "batch",
                         SCHEMA_RUNTIME_MODE: self.runtime_mode().name.lower()}
        result = self.gateway.execute_flink_sql(f"SELECT * FROM ({query}) LIMIT 0",
                                                RuntimeExecutionMode.BATCH, configuration)
        return TableResult(result).get_table_schema()

    def create_statement_set(self) -> StatementSet:
        return StatementSet(self)

    # -- tables and views ------------------------------------------------------------------------
    def create_temporary_table(self, path: str, descriptor: TableDescriptor) -> None:
        """``CREATE TEMPORARY TABLE <path>`` of a TableDescriptor."""
        self.execute_sql(descriptor.create_table_sql(path, temporary=True))

    def create_table(self, path: str, descriptor: TableDescriptor,
                     ignore_if_exists: bool = False) -> bool:
        """``CREATE TABLE <path>`` of a TableDescriptor in the session's catalog."""
        self.execute_sql(descriptor.create_table_sql(path, if_not_exists=ignore_if_exists))
        return True

    def from_descriptor(self, descriptor: TableDescriptor) -> Table:
        """A Table reading an anonymous temporary table of the descriptor."""
        name = unnamed_view_name()
        self.create_temporary_table(name, descriptor)
        return self.from_path(name)

    def from_path(self, path: str) -> Table:
        """The table or view registered at ``path``."""
        return Table(f"SELECT * FROM {quote_path(path)}", self, path=path)

    def create_temporary_view(self, view_path: str, table: Any, *fields: Any) -> None:
        """Register ``table`` as the temporary view ``view_path``."""
        if not isinstance(table, Table):
            raise TypeError("create_temporary_view() of a DataStream needs a "
                            "StreamTableEnvironment (StreamTableEnvironment.create(env))")
        if fields:
            table = table.alias(*[getattr(f, "name", f) for f in fields])
        self.execute_sql(f"CREATE TEMPORARY VIEW {quote_path(view_path)} AS {table.query_sql}")

    def create_view(self, view_path: str, table: Table, ignore_if_exists: bool = False) -> None:
        """Register ``table`` as the permanent view ``view_path`` of the catalog (``CREATE
        VIEW``)."""
        exists = "IF NOT EXISTS " if ignore_if_exists else ""
        self.execute_sql(f"CREATE VIEW {exists}{quote_path(view_path)} AS {table.query_sql}")

    def drop_table(self, table_path: str, ignore_if_not_exists: bool = True) -> bool:
        """Drop the permanent table ``table_path``; False if there was none (and
        ``ignore_if_not_exists``, else Flink's error). A temporary table of the path must be
        dropped first (:meth:`drop_temporary_table`): Flink's error, as for :meth:`drop_view`."""
        return self._drop("TABLE", table_path, ignore_if_not_exists)

    def drop_view(self, view_path: str, ignore_if_not_exists: bool = True) -> bool:
        """Drop the permanent view ``view_path``; False if there was none."""
        return self._drop("VIEW", view_path, ignore_if_not_exists)

    def drop_function(self, path: str) -> bool:
        """Drop the catalog function ``path``; False if there was none (a temporary system
        function is none); Flink's error while a temporary function of the path exists."""
        try:
            return self._drop("FUNCTION", path, True)
        except Exception as error:  # the gateway's error, of the type it raises
            if getattr(error, "code", "") != TEMPORARY_FUNCTION_EXISTS:
                raise
            # Flink's TableEnvironment.dropFunction words it so (its SQL DROP FUNCTION: "does
            # not exist in Catalog")
            error.args = (f"Could not drop catalog function. A temporary function "
                          f"'{DEFAULT_CATALOG}.{DEFAULT_DATABASE}.{path.split('.')[-1]}' does "
                          "already exist. Please drop the temporary function first.",)
            raise

    def drop_temporary_table(self, table_path: str) -> bool:
        """Drop the temporary table; False if there was none (a view is none)."""
        return self._drop("TEMPORARY TABLE", table_path, True)

    def drop_temporary_view(self, view_path: str) -> bool:
        """Drop the temporary view; False if there was none (a table is none)."""
        return self._drop("TEMPORARY VIEW", view_path, True)

    def _drop(self, kind: str, path: str, ignore_if_not_exists: bool) -> bool:
        name = quote_identifier(path) if "SYSTEM" in kind else quote_path(path)
        try:
            self.execute_sql(f"DROP {kind} {name}")
        except Exception as error:  # the gateway's error, Flink's message and a code
            if ignore_if_not_exists and getattr(error, "code", "") == NOT_FOUND:
                return False
            raise
        return True

    def _names(self, statement: str) -> list[str]:
        return [str(r[0]) for r in self.execute_sql(statement).rows()]

    def list_tables(self) -> list[str]:
        return self._names("SHOW TABLES")

    def list_views(self) -> list[str]:
        return self._names("SHOW VIEWS")

    def list_temporary_tables(self) -> list[str]:
        return self._names("SHOW TABLES")

    def list_temporary_views(self) -> list[str]:
        return self._names("SHOW VIEWS")

    def list_catalogs(self) -> list[str]:
        return self._names("SHOW CATALOGS")

    def list_databases(self) -> list[str]:
        return self._names("SHOW DATABASES")

    def list_functions(self) -> list[str]:
        return self._names("SHOW FUNCTIONS")

    def get_current_catalog(self) -> str:
        return DEFAULT_CATALOG

    def get_current_database(self) -> str:
        return DEFAULT_DATABASE

    def list_modules(self) -> list[str]:
        return self._names("SHOW MODULES")

    def list_full_modules(self) -> list[ModuleEntry]:
        return [ModuleEntry(str(r[0]), bool(r[1]))
                for r in self.execute_sql("SHOW FULL MODULES").rows()]

    def use_catalog(self, catalog_name: str) -> None:
        self.execute_sql(f"USE CATALOG {quote_identifier(catalog_name)}")

    def use_database(self, database_name: str) -> None:
        self.execute_sql(f"USE {quote_identifier(database_name)}")

    # -- functions -------------------------------------------------------------------------------
    def create_temporary_system_function(self, name: str, function: Any) -> None:
        """Register a Python function (``udf``/``udtf``/``udaf``'s) as a temporary system
        function ``name``, callable in SQL and (by the wrapper) in the Table API."""
        self._create_function("TEMPORARY SYSTEM", name, function)

    def create_temporary_function(self, path: str, function: Any) -> None:
        """Register a Python function as the temporary catalog function ``path``."""
        self._create_function("TEMPORARY", path, function)

    def register_function(self, name: str, function: Any) -> None:
        """Deprecated in PyFlink: :meth:`create_temporary_system_function`."""
        self.create_temporary_system_function(name, function)

    def drop_temporary_system_function(self, name: str) -> bool:
        """Drop the temporary system function ``name``; False if there was none."""
        return self._drop("TEMPORARY SYSTEM FUNCTION", name, True)

    def drop_temporary_function(self, path: str) -> bool:
        """Drop the temporary catalog function ``path``; False if there was none (a system
        function is none)."""
        return self._drop("TEMPORARY FUNCTION", path, True)

    def list_user_defined_functions(self) -> list[str]:
        return self._names("SHOW USER FUNCTIONS")

    def _create_function(self, kind: str, path: str, function: Any) -> None:
        if not isinstance(function, UserDefinedFunctionWrapper):
            raise TypeError(f"a Python function to register is made by udf(), udtf() or "
                            f"udaf() (with its result type), not {function!r}")
        target = quote_identifier(path) if "SYSTEM" in kind else quote_path(path)
        fn = function.function
        inner = getattr(fn, "func", fn)
        where = f"{getattr(inner, '__module__', '')}.{getattr(inner, '__qualname__', function.name)}"
        statement = (f"CREATE {kind} FUNCTION {target} AS {quote_string(where)} "
                     "LANGUAGE PYTHON")
        self.gateway.execute_flink_sql(statement, self.runtime_mode(), self._config.to_dict(),
                                       function=function)
        if function.catalog_name is None:
            function.catalog_name = path.split(".")[-1]

    # -- local data ------------------------------------------------------------------------------
    def from_elements(self, elements: Iterable[Any], schema: Any = None,
                      verify_schema: bool = True) -> Table:
        """A Table of Python values: tuples, lists, Rows, dicts or atomic values; ``schema`` is
        a ``DataTypes.ROW([...])``, an atomic DataType, a list of column names, or None
        (columns ``_1``, ``_2``...)."""
        rows = list(elements)
        names, types, arrow_types = _element_schema(rows, schema)
        columns = _element_columns(rows, names)
        import pyarrow as pa

        arrays = [pa.array(c, type=t) if t is not None else pa.array(c)
                  for c, t in zip(columns, arrow_types)]
        return self._register(pa.Table.from_arrays(arrays, names=names), types)

    def from_pandas(self, pdf: Any, schema: Any = None, splits_num: int = 1) -> Table:
        """A Table of a pandas DataFrame (``schema``: a ROW type, a list of column names or a
        list of DataTypes)."""
        import pyarrow as pa

        table = pa.Table.from_pandas(pdf, preserve_index=False)
        types = None
        if isinstance(schema, RowType):
            table = table.rename_columns(schema.field_names()).cast(schema.arrow_schema())
            types = [str(t) for t in schema.field_types()]
        elif isinstance(schema, (list, tuple)) and all(isinstance(t, DataType) for t in schema):
            table = table.cast(pa.schema([pa.field(n, t.to_arrow()) for n, t in
                                          zip(table.column_names, schema)]))
            types = [str(t) for t in schema]
        elif isinstance(schema, (list, tuple)):
            table = table.rename_columns([str(n) for n in schema])
        return self._register(table, types)

    def _register(self, table: Any, types: Sequence[str] | None) -> Table:
        import pandas as pd

        name = temporary_table_name()
        # Arrow-backed columns keep their exact types (nullable INT, nested ROWs) on the way
        self.gateway.create_temporary_view(name, table.to_pandas(types_mapper=pd.ArrowDtype))
        return Table(f"SELECT * FROM {quote_identifier(name)}", self, table.column_names, types)


def _element_schema(rows: list[Any], schema: Any) -> tuple[list[str], list[str] | None, list[Any]]:
    """Column names, Flink types (if known) and Arrow types (None: inferred) of elements."""
    if isinstance(schema, RowType):
        return (schema.field_names(), [str(t) for t in schema.field_types()],
                [t.to_arrow() for t in schema.field_types()])
    if isinstance(schema, DataType):
        return ["f0"], [str(schema)], [schema.to_arrow()]
    if isinstance(schema, (list, tuple)):
        return [str(n) for n in schema], None, [None] * len(schema)
    if schema is not None:
        raise TypeError(f"from_elements: schema is a DataTypes.ROW, a DataType, a list of names "
                        f"or None, not {schema!r}")
    first = rows[0] if rows else None
    if isinstance(first, Row):
        try:
            names = list(first.as_dict())
        except TypeError:
            names = [f"_{i + 1}" for i in range(len(first))]
    elif isinstance(first, dict):
        names = list(first)
    elif isinstance(first, (tuple, list)):
        names = [f"_{i + 1}" for i in range(len(first))]
    elif first is None:
        raise ValueError("from_elements of no elements needs a schema")
    else:
        names = ["f0"]
    return names, None, [None] * len(names)


def _element_columns(rows: list[Any], names: list[str]) -> list[list[Any]]:
    """The columns of the elements, values converted for Arrow (nested Rows as tuples)."""
    columns: list[list[Any]] = [[] for _ in names]
    for r in rows:
        if isinstance(r, dict):
            values = [r.get(n) for n in names]
        elif isinstance(r, (Row, tuple, list)):
            values = list(r)
        else:
            values = [r]
        if len(values) != len(names):
            raise ValueError(f"from_elements: the element {r!r} has {len(values)} fields; the "
                             f"schema has {len(names)}: {names}")
        for column, v in zip(columns, values):
            column.append(rows_as_tuples(v))
    return columns
