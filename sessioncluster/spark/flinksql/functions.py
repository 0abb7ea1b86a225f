"""The session's catalog of Python user-defined functions, registered on the SparkSession.

A function comes as a ``udf``/``udtf``/``udaf`` wrapper pickled by the client
(``create_temporary_system_function``: an ``ExecuteSql`` with the ``function`` payload), or is
imported on the JobManager (``CREATE TEMPORARY FUNCTION f AS 'module.fn' LANGUAGE PYTHON``). It
is registered on Spark as Spark runs Python:

- a general scalar function: an Arrow-batched Python UDF (``udf(..., useArrow=True)``);
- a ``func_type='pandas'`` scalar function: a scalar ``pandas_udf``;
- an async scalar function (``AsyncScalarFunction``, ``udf`` of an ``async def``): a scalar
  ``arrow_udf`` evaluating each Arrow batch's rows concurrently (:mod:`.asyncscalar`), with the
  ``table.exec.async-scalar.*`` options set when it is created;
- a table function: a Python UDTF (``pyspark.sql.functions.udtf``), called by Flink's
  ``LATERAL TABLE(f(x))`` (rewritten by the planner to Spark's ``LATERAL f(x)``);
- a general aggregate function: a grouped-aggregate ``pandas_udf`` running the function's
  ``create_accumulator``/``accumulate``/``get_value`` over each group's rows;
- a ``func_type='pandas'`` aggregate function: a grouped-aggregate ``pandas_udf``;
- a table aggregate function (``udtaf``): a grouped-aggregate ``pandas_udf`` whose value is the
  array of the rows ``emit_value`` yields (``flat_aggregate`` unnests it); over an unbounded
  table in STREAMING mode, a keyed processor instead (:mod:`.tableaggregate`).

A name Spark has a built-in function of is registered under ``__flink_udf_<name>``, and calls
of it are renamed in the query (Flink lets a temporary system function shadow a built-in one).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
import pickle
import secrets
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterator, TypeVar

from sqlglot import exp

from ...api.table.catalogobjects import NOT_FOUND, TEMPORARY_FUNCTION_EXISTS
from ...api.table.typeparser import spark_type
from ...api.table.types import IntType, RowType, SmallIntType, TinyIntType
from ...api.table.udf import (
    PANDAS,
    UserDefinedAsyncScalarFunctionWrapper,
    UserDefinedFunctionWrapper,
)
from ...graph.jobgraph import PythonDependency
from ...streaming.runtime import dependency_environment
from .asyncscalar import AsyncOptions
from .builtins import FLINK_FUNCTIONS, sql_like
from .model import DEFAULT_CATALOG, DEFAULT_DATABASE, DEFAULT_PATH, FlinkSqlError
from .planner import is_lateral_on_true
from .statements import CreateFunction, Drop, Show
from .udf_runners import (
    AggregateRunner,
    AsyncScalarRunner,
    FunctionRunner,
    PandasAggregateRunner,
    PandasScalarRunner,
    ScalarRunner,
    TableAggregateRunner,
    TableRunner,
    WindowAggregateRunner,
    table_function_class,
)

#: Flink's option of the global job parameters (``k1:v1,k2:v2``) a FunctionContext gives
GLOBAL_JOB_PARAMETERS = "pipeline.global-job-parameters"


#: Flink's integer types narrower than BIGINT, by their class
_INTEGER_KINDS: dict[type, str] = {TinyIntType: "TINYINT", SmallIntType: "SMALLINT",
                                   IntType: "INT"}
#: the name suffix of a table function's variant that gives a row of NULLs where it gives none
OUTER = "__outer"


@dataclass(slots=True)
class CatalogFunction:
    """A Python function of the session's catalog."""

    name: str
    wrapper: UserDefinedFunctionWrapper
    #: the name it is registered under on the SparkSession
    spark_name: str
    #: ``module.fn`` when created by ``CREATE FUNCTION ... AS``, else None
    class_name: str | None = None
    #: the job parameters its FunctionContext gives
    parameters: dict[str, str] = field(default_factory=dict)
    #: a (temporary) system function, not one of the catalog's database
    system: bool = False
    #: a temporary function (``CREATE TEMPORARY [SYSTEM] FUNCTION``): no ALTER FUNCTION finds it
    temporary: bool = False
    #: the Python dependencies its registration runs with (:meth:`FunctionCatalog.
    #: use_dependencies`)
    dependencies: tuple[PythonDependency, ...] = ()


def job_parameters(options: dict[str, str]) -> dict[str, str]:
    """The job parameters a FunctionContext gives: the options, and the entries of
    ``pipeline.global-job-parameters``."""
    parameters = dict(options)
    for item in options.get(GLOBAL_JOB_PARAMETERS, "").split(","):
        key, sep, value = item.partition(":")
        if sep:
            parameters[key.strip()] = value.strip()
    return parameters


def load_wrapper(statement: CreateFunction, payload: bytes) -> UserDefinedFunctionWrapper:
    """The wrapper of a CREATE FUNCTION: shipped by the client, or imported as ``module.fn``."""
    if statement.language.upper() != "PYTHON":
        raise FlinkSqlError(f"CREATE FUNCTION {statement.name} ... LANGUAGE "
                            f"{statement.language}: sessioncluster runs Python functions only "
                            "(LANGUAGE PYTHON)")
    if payload:
        obj = pickle.loads(payload)  # noqa: S301 - the payload of a signed message
    else:
        obj = _imported(statement.class_name)
    if not isinstance(obj, UserDefinedFunctionWrapper):
        raise FlinkSqlError(f"'{statement.class_name}' is {type(obj).__name__}, not a Python "
                            "user-defined function: wrap it with udf(...), udtf(...) or "
                            "udaf(...) and its result type")
    return obj


class FunctionImportError(FlinkSqlError):
    """A ``CREATE FUNCTION ... AS 'module.fn' LANGUAGE PYTHON`` whose function does not import
    (yet): Flink creates it, and refuses a statement that calls it (:meth:`FunctionCatalog.
    check_calls`)."""


def _imported(class_name: str) -> Any:
    """``module.fn`` imported, or Flink 2.3's cause of its failure (its python function's
    instantiation; /work/briefs/data/tabledeps/probe.out)."""
    module_name, _, attribute = class_name.rpartition(".")
    if not module_name or not attribute:
        raise FunctionImportError(f"Instantiating python function '{class_name}' failed: The "
                                  f"fully qualified name is invalid: '{class_name}'")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as exc:
        raise FunctionImportError(f"Instantiating python function '{class_name}' failed: "
                                  f"{type(exc).__name__}: {exc}") from None


@dataclass(slots=True)
class PendingFunction:
    """A function whose ``module.fn`` did not import when it was created: made at first use."""

    statement: CreateFunction
    options: dict[str, str]

    @property
    def path(self) -> str:
        """Its name as Flink's refusal names it (a catalog function's full path)."""
        name = self.statement.name
        return name if self.statement.temporary else f"{DEFAULT_PATH}.{name}"


class FunctionCatalog:
    """The Python functions of one catalog scope, by lower-case name.

    The session's shared catalog (``scope`` "") registers a function under its own name where
    Spark has none of that name; another scope (a program under ``sessioncluster run``, whose
    TableEnvironment has a catalog of its own as in Flink) always under a name of its own, so
    that its functions neither see nor shadow those of other scopes."""

    def __init__(self, spark: Any, scope: str = "") -> None:
        self.spark = spark
        self.functions: dict[str, CatalogFunction] = {}
        #: the functions created of a ``module.fn`` that did not import, by lower-case name
        self.pending: dict[str, PendingFunction] = {}
        #: the Python dependencies of the statement planned now (its TableEnvironment's
        #: ``python.files``... and the session's): its functions run with them
        self.dependencies: tuple[PythonDependency, ...] = ()
        self._prefix = (f"__flink_udf_{hashlib.sha1(scope.encode()).hexdigest()[:12]}_"
                        if scope else "")

    def create(self, statement: CreateFunction, payload: bytes,
               options: dict[str, str]) -> None:
        """Register the function of ``statement`` (replacing one of the same name)."""
        key = statement.name.lower()
        if (key in self.functions or key in self.pending) and statement.if_not_exists:
            return
        try:
            wrapper = load_wrapper(statement, payload)
        except FunctionImportError:  # Flink imports a Python function at its first use
            self._forget(key)
            self.pending[key] = PendingFunction(statement, dict(options))
            return
        self.pending.pop(key, None)
        spark_name = self.functions[key].spark_name if key in self.functions else \
            self._spark_name(statement.name)
        parameters = job_parameters(options)
        register(self.spark, spark_name, wrapper, parameters, self.dependencies)
        self.functions[key] = CatalogFunction(statement.name, wrapper, spark_name,
                                              None if payload else statement.class_name,
                                              parameters, statement.system,
                                              statement.temporary, self.dependencies)

    @contextlib.contextmanager
    def loading(self, dependencies: tuple[PythonDependency, ...]) -> Iterator[None]:
        """While a statement is planned: its Python dependencies' files and requirements on
        this process's ``sys.path`` (a function shipped or named here is loaded with them, and
        pickled for the workers by reference to their modules; no archive: they would change
        the JobManager's working directory), and its functions registered with them."""
        environment = dependency_environment([d for d in dependencies if d.kind != "archive"])
        with environment if environment is not None else contextlib.nullcontext():
            self.use_dependencies(dependencies)
            yield

    def use_dependencies(self, dependencies: tuple[PythonDependency, ...]) -> None:
        """The Python dependencies of the statement planned next (in Flink, a job's Python
        files are those of the TableEnvironment that runs it): a function created now is
        registered with them, one the statement calls again with them when it was with
        others (:meth:`check_calls`), so that its workers have them on ``sys.path``."""
        self.dependencies = dependencies

    def check_calls(self, statement: Any) -> None:
        """Make the pending functions the parsed ``statement`` calls, or refuse it with Flink's
        message (the first use of a function whose module does not import); the functions it
        calls registered with its dependencies where they were with others."""
        called = _called_names(statement)
        for key, pending in list(self.pending.items()):
            if key not in called:
                continue
            try:
                _imported(pending.statement.class_name)
            except FunctionImportError as exc:
                raise FlinkSqlError(f"SQL validation failed. Cannot instantiate user-defined "
                                    f"function '{pending.path}'. {exc}") from None
            del self.pending[key]
            self.create(pending.statement, b"", pending.options)
        for key, function in self.functions.items():
            if function.dependencies != self.dependencies and (
                    key in called or function.spark_name.lower() in called):
                register(self.spark, function.spark_name, function.wrapper, function.parameters,
                         self.dependencies)
                self.functions[key] = dataclasses.replace(function,
                                                          dependencies=self.dependencies)

    def register_on(self, session: Any) -> None:
        """Register every function of the catalog on ``session`` too (a SparkSession of its own,
        as a streaming statement's, does not share the functions of the session's), with the
        dependencies of the statement planned now (its views may call any of them)."""
        for function in self.functions.values():
            register(session, function.spark_name, function.wrapper, function.parameters,
                     self.dependencies)

    def _spark_name(self, name: str) -> str:
        if self._prefix:
            return self._prefix + name
        if self.spark.catalog.functionExists(name):  # a built-in one of Spark's
            return f"__flink_udf_{name}"
        return name

    def drop(self, statement: Drop) -> bool:
        """``DROP [TEMPORARY [SYSTEM]] FUNCTION``: False if there was none of that kind (and
        IF EXISTS), else Flink 2.3's error (/work/briefs/data/tabledeps/probe.out)."""
        key = statement.name.lower()
        function = self.functions.get(key) or self.pending.get(key)
        kind = None if function is None else _kind(function)
        if kind is None or kind[0] != statement.temporary \
                or statement.temporary and kind[1] != statement.system:
            if statement.if_exists:
                return False
            raise FlinkSqlError(_missing_function(statement), NOT_FOUND
                                if kind is None or kind[1] or statement.temporary
                                else TEMPORARY_FUNCTION_EXISTS)
        self._forget(key)
        return True

    def _forget(self, key: str) -> None:
        """The function ``key`` off the catalog and the SparkSession."""
        self.pending.pop(key, None)
        function = self.functions.pop(key, None)
        if function is None:
            return
        self.spark.sql(f"DROP TEMPORARY FUNCTION IF EXISTS `{function.spark_name}`")
        if function.wrapper.kind == "table":
            self.spark.sql(f"DROP TEMPORARY FUNCTION IF EXISTS `{function.spark_name}{OUTER}`")

    def names(self, database: bool = True) -> list[str]:
        """The functions' names, sorted; ``database`` False: the system functions' only."""
        return sorted([f.name for f in self.functions.values() if database or f.system]
                      + [p.statement.name for p in self.pending.values()
                         if database or p.statement.system])

    def listed(self, show: Show) -> list[str]:
        """``SHOW [USER] FUNCTIONS``: Flink's built-in functions (not USER) and these, sorted as
        Java sorts strings; another database than the session's leaves out the temporary
        catalog functions (Flink 2.3 lists the rest for any database name)."""
        database = show.name is None or show.name.split(".")[-1].strip("`") == DEFAULT_DATABASE
        names = set(self.names(database))
        if show.kind == "FUNCTIONS":
            names.update(FLINK_FUNCTIONS)
        if show.like is not None:
            pattern = sql_like(show.like, show.ilike)
            names = {n for n in names if bool(pattern.fullmatch(n)) != show.not_like}
        return sorted(names)

    def scalar_names(self) -> frozenset[str]:
        """The names (lower case; the Spark ones too) of the scalar functions."""
        return frozenset(n.lower() for k, f in self.functions.items()
                         if f.wrapper.kind == "scalar" for n in (k, f.spark_name))

    def table_aggregate(self, called: str) -> CatalogFunction | None:
        """The table aggregate function a call names (by its name or its Spark name)."""
        called = called.lower()
        return self._current(next((f for k, f in self.functions.items()
                                   if f.wrapper.kind == "table_aggregate"
                                   and called in (k, f.spark_name.lower())), None))

    def aggregate(self, called: str, pandas: bool = False) -> CatalogFunction | None:
        """The general aggregate function (``udaf``, not ``func_type='pandas'``; either when
        ``pandas``) a call names (by its name or its Spark name)."""
        called = called.lower()
        return self._current(next((f for k, f in self.functions.items()
                                   if f.wrapper.kind == "aggregate"
                                   and (pandas or f.wrapper.func_type != PANDAS)
                                   and called in (k, f.spark_name.lower())), None))

    def _current(self, function: CatalogFunction | None) -> CatalogFunction | None:
        """``function`` as the statement planned now runs it: with its dependencies (a call
        through a view is not among the statement's own, :meth:`check_calls`)."""
        if function is None or function.dependencies == self.dependencies:
            return function
        return dataclasses.replace(function, dependencies=self.dependencies)

    def aggregate_calls(self, query: exp.Expr) -> list[str]:
        """The names (as registered) of the Python aggregate functions (``udaf``, not table
        aggregates) ``query`` calls, by their names or Spark names."""
        names = {n.lower(): f.name for k, f in self.functions.items()
                 if f.wrapper.kind == "aggregate" for n in (k, f.spark_name)}
        return [names[c.name.lower()] for c in query.find_all(exp.Anonymous)
                if c.name.lower() in names]

    def rename_calls(self, query: exp.Expr) -> exp.Expr:
        """``query`` with calls of functions registered under another name renamed, and the
        value of a ROW-valued aggregate function taken out of its array (:func:`returns_row`)."""
        query = self._typed_integers(self._outer_joins(query))
        renamed = {k: f.spark_name for k, f in self.functions.items() if f.spark_name != f.name}
        boxed = {n.lower() for k, f in self.functions.items() if returns_row(f.wrapper)
                 for n in (k, f.spark_name)}
        if not renamed and not boxed:
            return query

        def rename(node: exp.Expression) -> exp.Expression:
            if not isinstance(node, exp.Anonymous):
                return node
            name = node.name.lower()
            call = node
            if name in renamed:
                call = exp.Anonymous(this=renamed[name], expressions=node.expressions)
            if name in boxed and not (isinstance(node.parent, exp.Anonymous)
                                      and node.parent.name.lower() == "element_at"):
                return exp.Anonymous(this="element_at",
                                     expressions=[call, exp.Literal.number(1)])
            return call

        return query.transform(rename)


    def _typed_integers(self, query: exp.Expr) -> exp.Expr:
        """Each call of a scalar function of a TINYINT/SMALLINT/INT result within an aggregate
        call cast to that type, so that the aggregate is typed over it as Flink types it (SUM
        of an INT is an INT; Spark's of an untyped Python function's is a BIGINT)."""
        kinds = {}
        for key, function in self.functions.items():
            types = function.wrapper.result_data_types() \
                if function.wrapper.kind == "scalar" else []
            kind = _INTEGER_KINDS.get(type(types[0])) if len(types) == 1 else None
            if kind is not None:
                kinds.update({key.lower(): kind, function.spark_name.lower(): kind})

        def found(tree: exp.Expr) -> list[exp.Anonymous]:
            return [c for c in tree.find_all(exp.Anonymous) if c.name.lower() in kinds
                    and c.find_ancestor(exp.AggFunc) is not None
                    and not isinstance(c.parent, exp.Cast)]

        if not kinds or not found(query):
            return query
        query = query.copy()
        for call in found(query):
            call.replace(exp.Cast(this=call.copy(),
                                  to=exp.DataType.build(kinds[call.name.lower()])))
        return query

    def _outer_joins(self, query: exp.Expr) -> exp.Expr:
        """``LEFT JOIN LATERAL TABLE(f(x)) ON TRUE`` of a table function of the catalog as the
        ``CROSS JOIN`` of its :data:`OUTER` variant: Spark plans the LEFT JOIN as a join of
        f's rows with the distinct x, out of Flink's order (each input row, then its rows)."""
        outer = {n.lower(): f.spark_name + OUTER for k, f in self.functions.items()
                 if f.wrapper.kind == "table" for n in (k, f.spark_name)}
        if not any(_outer_call(j, outer) for j in query.find_all(exp.Join)):
            return query
        query = query.copy()
        for join in list(query.find_all(exp.Join)):
            call = _outer_call(join, outer)
            if call is not None:
                call.set("this", outer[call.name.lower()])
                join.set("side", None)
                join.set("on", None)
                join.set("kind", "CROSS")
        return query


def _outer_call(join: exp.Join, outer: dict[str, str]) -> exp.Anonymous | None:
    """The call of the ``LEFT JOIN LATERAL TABLE(f(x)) ON TRUE`` of a function named in
    ``outer``; None for another join."""
    if join.side != "LEFT" or not is_lateral_on_true(join):
        return None
    calls = join.this.this.expressions
    call = calls[0] if len(calls) == 1 else None
    return call if isinstance(call, exp.Anonymous) and call.name.lower() in outer else None


def _called_names(node: Any) -> set[str]:
    """The lower-case names of the functions a parsed statement calls: in each sqlglot tree of
    its fields (a query, an INSERT's, a statement set's, an EXPLAIN's statement)."""
    if isinstance(node, exp.Expression):
        return {c.name.lower() for c in node.find_all(exp.Anonymous)}
    if isinstance(node, (list, tuple)):
        return set().union(*(_called_names(n) for n in node))
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return set().union(*(_called_names(getattr(node, f.name))
                             for f in dataclasses.fields(node)))
    return set()


def _kind(function: CatalogFunction | PendingFunction) -> tuple[bool, bool]:
    """(temporary, system) of a function."""
    made = function.statement if isinstance(function, PendingFunction) else function
    return made.temporary, made.system


def _missing_function(statement: Drop) -> str:
    """Flink 2.3's message of a DROP FUNCTION that finds no function of its kind."""
    name = statement.name
    if statement.system:
        return (f"Could not drop temporary system function. A function named '{name}' doesn't "
                "exist.")
    if statement.temporary:
        return (f"Temporary catalog function `{DEFAULT_CATALOG}`.`{DEFAULT_DATABASE}`.`{name}` "
                "doesn't exist")
    return f"Function {DEFAULT_DATABASE}.{name} does not exist in Catalog {DEFAULT_CATALOG}."


def returns_row(wrapper: UserDefinedFunctionWrapper) -> bool:
    """True for an aggregate function whose value is a ROW: Spark's grouped-aggregate pandas
    function returns it in a one-element array, which each call takes the element out of
    (:meth:`FunctionCatalog.rename_calls`)."""
    types = wrapper.result_data_types()
    return wrapper.kind == "aggregate" and len(types) == 1 and isinstance(types[0], RowType)


def register(spark: Any, spark_name: str, wrapper: UserDefinedFunctionWrapper,
             parameters: dict[str, str], dependencies: Dependencies = ()) -> None:
    """Register ``wrapper`` on ``spark`` as ``spark_name`` (see the module's docstring), run
    with the Python ``dependencies`` on the workers' ``sys.path``."""
    from pyspark.sql.functions import udtf

    token = secrets.token_hex(8)
    function = wrapper.function
    types = wrapper.result_data_types()
    if wrapper.kind == "table":
        names = wrapper.result_names()
        fields = (types[0].field_types() if len(types) == 1 and isinstance(types[0], RowType)
                  else types)
        schema = ", ".join(f"`{n}` {spark_type(str(t))}" for n, t in zip(names, fields))
        runner = _shipped(TableRunner(function, token, wrapper.name, parameters, len(names)),
                          dependencies)
        spark.udtf.register(spark_name, udtf(table_function_class(runner), returnType=schema))
        spark.udtf.register(spark_name + OUTER, udtf(table_function_class(runner, outer=True),
                                                     returnType=schema))
        return
    ddl = spark_type(f"ARRAY<{types[0]}>" if wrapper.kind == "table_aggregate"
                     or returns_row(wrapper) else str(types[0]))
    with warnings.catch_warnings():  # PandasUDFType's deprecation: our runners have no hints
        warnings.simplefilter("ignore", UserWarning)
        spark_function = _spark_function(wrapper, ddl, token, parameters, dependencies)
    if not wrapper.is_deterministic():
        spark_function = spark_function.asNondeterministic()
    spark.udf.register(spark_name, spark_function)


Dependencies = tuple[PythonDependency, ...]
_R = TypeVar("_R", bound=FunctionRunner)


def _shipped(runner: _R, dependencies: Dependencies) -> _R:
    """``runner`` run with the Python ``dependencies`` (:class:`.udf_runners.FunctionRunner`)."""
    runner.dependencies = dependencies
    return runner


def _spark_function(wrapper: UserDefinedFunctionWrapper, ddl: str, token: str,
                    parameters: dict[str, str], dependencies: Dependencies) -> Any:
    from pyspark.sql.functions import PandasUDFType, pandas_udf, udf

    function = wrapper.function
    if wrapper.kind == "table_aggregate":  # its rows as one array per group
        spark_function = pandas_udf(_shipped(TableAggregateRunner(
            function, token, wrapper.name, parameters), dependencies), ddl,
            PandasUDFType.GROUPED_AGG)
    elif wrapper.kind == "aggregate":
        spark_function = pandas_udf(_aggregate_runner(wrapper, token, parameters, dependencies),
                                    ddl, PandasUDFType.GROUPED_AGG)
    elif isinstance(wrapper, UserDefinedAsyncScalarFunctionWrapper):
        spark_function = _async_function(wrapper, ddl, token, parameters, dependencies)
    elif wrapper.func_type == PANDAS:
        spark_function = pandas_udf(_shipped(PandasScalarRunner(
            function, token, wrapper.name, parameters), dependencies), ddl,
            PandasUDFType.SCALAR)
    else:
        spark_function = udf(_shipped(ScalarRunner(
            function, token, wrapper.name, parameters, str(wrapper.result_data_types()[0])),
            dependencies), ddl, useArrow=True)
    return spark_function


def _aggregate_runner(wrapper: UserDefinedFunctionWrapper, token: str,
                      parameters: dict[str, str], dependencies: Dependencies = ()
                      ) -> AggregateRunner | PandasAggregateRunner:
    make = PandasAggregateRunner if wrapper.func_type == PANDAS else AggregateRunner
    runner = _shipped(make(wrapper.function, token, wrapper.name, parameters), dependencies)
    runner.boxed = returns_row(wrapper)
    return runner


def register_window_function(spark: Any, function: CatalogFunction) -> str:
    """Register the aggregate function ``function`` on ``spark`` as a scalar function of a
    window's collected rows (:class:`WindowAggregateRunner`); the name it is registered under."""
    from pyspark.sql.functions import udf

    wrapper = function.wrapper
    types = wrapper.result_data_types()
    ddl = spark_type(f"ARRAY<{types[0]}>" if returns_row(wrapper) else str(types[0]))
    runner = WindowAggregateRunner(_aggregate_runner(wrapper, secrets.token_hex(8),
                                                     function.parameters,
                                                     function.dependencies))
    with warnings.catch_warnings():  # "Cannot infer the eval type": the runner has no hints
        warnings.simplefilter("ignore", UserWarning)
        spark_function = udf(runner, ddl)
    if not wrapper.is_deterministic():
        spark_function = spark_function.asNondeterministic()
    name = f"__flink_window_{function.spark_name}"
    spark.udf.register(name, spark_function)
    return name


def _async_function(wrapper: UserDefinedAsyncScalarFunctionWrapper, ddl: str, token: str,
                    parameters: dict[str, str], dependencies: Dependencies) -> Any:
    """An async scalar function as a scalar Arrow UDF (Arrow arrays in and out)."""
    from pyspark.sql.functions import ArrowUDFType, arrow_udf
    from pyspark.sql.pandas.types import to_arrow_type

    runner = _shipped(AsyncScalarRunner(wrapper.function, token, wrapper.name, parameters,
                                        str(wrapper.result_data_types()[0]),
                                        AsyncOptions.of(parameters)), dependencies)
    spark_function = arrow_udf(runner, ddl, ArrowUDFType.SCALAR)
    runner.arrow_type = to_arrow_type(spark_function.returnType)  # pickled when registered
    return spark_function
