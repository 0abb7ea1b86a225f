"""PyFlink's Python user-defined functions for the Table API and SQL (``pyflink.table.udf``).

``udf``, ``udtf`` and ``udaf`` wrap a Python function or a ``ScalarFunction``/``TableFunction``/
``AggregateFunction`` object with its types. A wrapper is what ``create_temporary_system_function``
ships (cloudpickled by value, like all user code) to the JobManager, which registers it on the
session's SparkSession (``spark/flinksql/functions.py``); calling a wrapper
(``add_one(col('a'))``) is an Expression calling the function by its name in the catalog. A
wrapper not registered yet gets a generated name, registered by the TableEnvironment before the
first statement that calls it.
"""

from __future__ import annotations

import abc
import functools
import inspect
import itertools
import re
import secrets
from typing import Any, Callable, Iterable

from .expression import Expression, to_expr
from .typeparser import parse_type
from .types import DataType, RowType

__all__ = [
    "AggregateFunction", "AsyncScalarFunction", "FunctionContext", "ScalarFunction", "TableAggregateFunction",
    "TableFunction", "UserDefinedAggregateFunctionWrapper", "UserDefinedFunction",
    "UserDefinedAsyncScalarFunctionWrapper", "UserDefinedFunctionWrapper",
    "UserDefinedScalarFunctionWrapper",
    "UserDefinedTableAggregateFunctionWrapper",
    "UserDefinedTableFunctionWrapper", "udaf", "udf", "udtaf", "udtf",
]

#: PyFlink's values of ``func_type``
GENERAL, PANDAS = "general", "pandas"


class FunctionContext:
    """What ``open()`` of a user-defined function is given: the job's global parameters."""

    def __init__(self, job_parameters: dict[str, str] | None = None) -> None:
        self._job_parameters = dict(job_parameters or {})

    def get_job_parameter(self, key: str, default_value: str) -> str:
        """The global job parameter ``key`` (``pipeline.global-job-parameters``), else
        ``default_value``."""
        return self._job_parameters.get(key, default_value)


class UserDefinedFunction(abc.ABC):  # noqa: B024 - PyFlink's has no abstract method
    """The base of Python user-defined functions: ``open`` once per worker before the first
    call, ``close`` at the end."""

    def open(self, function_context: FunctionContext) -> None:  # noqa: B027 - a hook
        """Set up (once per Python worker, before the first call)."""

    def close(self) -> None:  # noqa: B027 - a hook
        """Tear down."""

    def is_deterministic(self) -> bool:
        return True


class ScalarFunction(UserDefinedFunction):
    """A scalar function: ``eval(*args)`` gives one value per row."""

    @abc.abstractmethod
    def eval(self, *args: Any) -> Any:
        """The value for one row's arguments (or, ``func_type='pandas'``, of pandas Series)."""


class AsyncScalarFunction(UserDefinedFunction):
    """An async scalar function: ``async def eval(*args)`` gives one value per row; a batch's
    rows are evaluated concurrently (``table.exec.async-scalar.*`` options)."""

    @abc.abstractmethod
    async def eval(self, *args: Any) -> Any:
        """The value for one row's arguments (a coroutine)."""


class TableFunction(UserDefinedFunction):
    """A table function: ``eval(*args)`` yields (or returns an iterable of) rows."""

    @abc.abstractmethod
    def eval(self, *args: Any) -> Iterable[Any]:
        """The rows for one row's arguments."""


class AggregateFunction(UserDefinedFunction):
    """An aggregate function: an accumulator per group, ``accumulate``d row by row."""

    @abc.abstractmethod
    def create_accumulator(self) -> Any:
        """A new, empty accumulator."""

    @abc.abstractmethod
    def accumulate(self, accumulator: Any, *args: Any) -> None:
        """Add one row's arguments to ``accumulator``."""

    @abc.abstractmethod
    def get_value(self, accumulator: Any) -> Any:
        """The result of ``accumulator``."""

    def retract(self, accumulator: Any, *args: Any) -> None:
        """Remove one row's arguments (for retracting inputs)."""
        raise NotImplementedError(f"{type(self).__name__} has no retract()")

    def merge(self, accumulator: Any, accumulators: list[Any]) -> None:
        """Merge ``accumulators`` into ``accumulator``."""
        raise NotImplementedError(f"{type(self).__name__} has no merge()")

    def get_result_type(self) -> DataType | str | None:
        return None

    def get_accumulator_type(self) -> DataType | str | None:
        return None


class TableAggregateFunction(UserDefinedFunction):
    """A table aggregate function: rows accumulated per group, then ``emit_value`` yields the
    group's result rows (``flat_aggregate``)."""

    @abc.abstractmethod
    def create_accumulator(self) -> Any:
        """A new, empty accumulator."""

    @abc.abstractmethod
    def accumulate(self, accumulator: Any, *args: Any) -> None:
        """Add one row's arguments."""

    @abc.abstractmethod
    def emit_value(self, accumulator: Any) -> Iterable[Any]:
        """The rows of ``accumulator``."""

    def retract(self, accumulator: Any, *args: Any) -> None:
        """Remove one row's arguments (over an updating input: ``-U``/``-D``)."""
        raise RuntimeError("Method retract is not implemented")  # PyFlink's

    def merge(self, accumulator: Any, accumulators: list[Any]) -> None:  # noqa: B027
        """Merge other accumulators into ``accumulator`` (not called here)."""

    def get_result_type(self) -> DataType | str | None:
        return None

    def get_accumulator_type(self) -> DataType | str | None:
        return None


class _DelegatingScalarFunction(ScalarFunction):
    """A plain Python function as a ScalarFunction."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func

    def eval(self, *args: Any) -> Any:
        return self.func(*args)


class _DelegatingAsyncScalarFunction(AsyncScalarFunction):
    """An ``async def`` function as an AsyncScalarFunction."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func

    async def eval(self, *args: Any) -> Any:
        return await self.func(*args)


class _DelegatingTableFunction(TableFunction):
    """A plain Python (generator) function as a TableFunction."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func

    def eval(self, *args: Any) -> Iterable[Any]:
        return self.func(*args)


_NAME_TOKEN = secrets.token_hex(3)
_NAME_COUNTER = itertools.count(1)


def as_data_type(t: DataType | str | None, what: str) -> DataType | None:
    """A DataType given as one or as Flink SQL type text (``'BIGINT'``, ``'ROW<a INT>'``)."""
    if t is None or isinstance(t, DataType):
        return t
    if isinstance(t, str):
        try:
            return parse_type(t)
        except Exception as exc:
            raise ValueError(f"{what} {t!r} is not a Flink SQL type: {exc}") from None
    raise TypeError(f"{what} is a DataType (DataTypes.BIGINT()) or Flink SQL type text, "
                    f"not {t!r}")


class UserDefinedFunctionWrapper:
    """A user-defined function with its types, as ``udf``/``udtf``/``udaf`` give it; calling it
    is an Expression calling the function by its catalog name."""

    #: 'scalar', 'table' or 'aggregate'
    kind = "scalar"

    def __init__(self, func: Any, input_types: Any, func_type: str = GENERAL,
                 deterministic: bool | None = None, name: str | None = None) -> None:
        if func_type not in (GENERAL, PANDAS):
            raise ValueError(f"func_type is 'general' or 'pandas', not {func_type!r}")
        self._func = func
        if input_types is not None and not isinstance(input_types, (list, tuple)):
            input_types = [input_types]
        self._input_types = ([as_data_type(t, "an input type") for t in input_types]
                             if input_types is not None else None)
        self._func_type = func_type
        self._deterministic = (deterministic if deterministic is not None else
                               getattr(func, "is_deterministic", lambda: True)())
        default = getattr(func, "__name__", None) or type(func).__name__
        self._name = name or default
        #: the name this wrapper is called by in SQL text (set when registered or first called)
        self.catalog_name: str | None = None
        #: the result columns' names when applied to whole rows (:meth:`alias`)
        self.alias_names: tuple[str, ...] | None = None

    def alias(self, *alias_names: str) -> "UserDefinedFunctionWrapper":
        """Name the result columns of the function applied to whole rows, as PyFlink's
        (``join_lateral(split.alias('a'))``, ``aggregate(count_sum.alias('cnt', 'sum'))``)."""
        self.alias_names = alias_names
        return self

    @property
    def function(self) -> UserDefinedFunction:
        """The user's function as a UserDefinedFunction object (a plain function delegated to)."""
        if isinstance(self._func, UserDefinedFunction):
            return self._func
        if self.kind == "table":
            return _DelegatingTableFunction(self._func)
        return _DelegatingScalarFunction(self._func)

    @property
    def func_type(self) -> str:
        return self._func_type

    @property
    def name(self) -> str:
        return self._name

    def is_deterministic(self) -> bool:
        return bool(self._deterministic)

    def sql_name(self) -> str:
        """The name calls render with: the registered name, else a generated one (which the
        TableEnvironment registers before running a statement that has it)."""
        if self.catalog_name is None:
            base = re.sub(r"\W", "_", self._name).strip("_") or "udf"
            self.catalog_name = f"pyudf_{base}_{_NAME_TOKEN}_{next(_NAME_COUNTER)}"
            _UNREGISTERED[self.catalog_name] = self
        return self.catalog_name

    def __call__(self, *args: Any) -> Expression:
        exprs = [to_expr(a) for a in args]
        name = self.sql_name()
        if self.kind == "aggregate":
            expr = Expression(lambda c: c.note(f"{name}({', '.join(a.to_sql(c) for a in exprs)})"),
                              aggregate=(name, tuple(exprs)))
        else:
            expr = Expression(lambda c: f"{name}({', '.join(a.to_sql(c) for a in exprs)})")
        expr.udf = self
        return expr

    def result_data_types(self) -> list[DataType]:
        """The types of the columns this function gives (one for a scalar or aggregate
        function; a ROW's fields when it returns a ROW)."""
        raise NotImplementedError

    def result_names(self) -> list[str]:
        """The column names of the result when expanded (map, flat_map, aggregate)."""
        types = self.result_data_types()
        if len(types) == 1 and isinstance(types[0], RowType):
            return types[0].field_names()
        if self.kind == "table":
            return [f"f{i}" for i in range(len(types))]
        return ["_c0"]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r}, func_type={self._func_type!r})"


class UserDefinedScalarFunctionWrapper(UserDefinedFunctionWrapper):
    """``udf(...)``'s result."""

    kind = "scalar"

    def __init__(self, func: Any, input_types: Any, result_type: Any, func_type: str = GENERAL,
                 deterministic: bool | None = None, name: str | None = None) -> None:
        super().__init__(func, input_types, func_type, deterministic, name)
        self._result_type = as_data_type(result_type, "result_type")
        if self._result_type is None:
            raise TypeError("Invalid returnType: returnType should be DataType but is None")

    def result_data_types(self) -> list[DataType]:
        assert self._result_type is not None
        return [self._result_type]


class UserDefinedAsyncScalarFunctionWrapper(UserDefinedScalarFunctionWrapper):
    """``udf(...)``'s result for an AsyncScalarFunction or an ``async def`` function."""

    def __init__(self, func: Any, input_types: Any, result_type: Any, func_type: str = GENERAL,
                 deterministic: bool | None = None, name: str | None = None) -> None:
        if func_type == PANDAS:
            raise ValueError("Async scalar functions do not support pandas func_type. "
                             "Please use func_type='general' (default) for async functions.")
        super().__init__(func, input_types, result_type, func_type, deterministic, name)

    @property
    def function(self) -> UserDefinedFunction:
        if isinstance(self._func, UserDefinedFunction):
            return self._func
        return _DelegatingAsyncScalarFunction(self._func)


class UserDefinedTableFunctionWrapper(UserDefinedFunctionWrapper):
    """``udtf(...)``'s result."""

    kind = "table"

    def __init__(self, func: Any, input_types: Any, result_types: Any,
                 deterministic: bool | None = None, name: str | None = None) -> None:
        super().__init__(func, input_types, GENERAL, deterministic, name)
        if result_types is None:
            raise TypeError("Invalid result_types: result_types should be a DataType or a "
                            "list of DataTypes but is None")
        if not isinstance(result_types, (list, tuple)):
            result_types = [result_types]
        self._result_types = [as_data_type(t, "result_types") for t in result_types]

    def result_data_types(self) -> list[DataType]:
        return [t for t in self._result_types if t is not None]


class UserDefinedAggregateFunctionWrapper(UserDefinedFunctionWrapper):
    """``udaf(...)``'s result."""

    kind = "aggregate"

    def __init__(self, func: Any, input_types: Any, result_type: Any, accumulator_type: Any,
                 func_type: str = GENERAL, deterministic: bool | None = None,
                 name: str | None = None) -> None:
        if func_type == GENERAL and not isinstance(func, AggregateFunction):
            raise TypeError(f"a general udaf takes an AggregateFunction object, not {func!r}: "
                            "use func_type='pandas' for a function of pandas Series")
        super().__init__(func, input_types, func_type, deterministic, name)
        if result_type is None and isinstance(func, AggregateFunction):
            result_type = func.get_result_type()
        if accumulator_type is None and isinstance(func, AggregateFunction):
            accumulator_type = func.get_accumulator_type()
        self._result_type = as_data_type(result_type, "result_type")
        if self._result_type is None:
            raise TypeError("Invalid result_type: result_type should be DataType but is None")
        self._accumulator_type = as_data_type(accumulator_type, "accumulator_type")

    @property
    def function(self) -> UserDefinedFunction:
        if isinstance(self._func, UserDefinedFunction):
            return self._func
        return _DelegatingScalarFunction(self._func)  # a pandas UDAF: Series -> value

    def result_data_types(self) -> list[DataType]:
        assert self._result_type is not None
        return [self._result_type]


class UserDefinedTableAggregateFunctionWrapper(UserDefinedFunctionWrapper):
    """``udtaf(...)``'s result."""

    kind = "table_aggregate"

    def __init__(self, func: Any, input_types: Any, result_type: Any, accumulator_type: Any,
                 deterministic: bool | None = None, name: str | None = None) -> None:
        if not isinstance(func, TableAggregateFunction):
            raise TypeError(f"udtaf takes a TableAggregateFunction object, not {func!r}")
        super().__init__(func, input_types, GENERAL, deterministic, name)
        self._result_type = as_data_type(result_type if result_type is not None
                                         else func.get_result_type(), "result_type")
        if self._result_type is None:
            raise TypeError("Invalid result_type: result_type should be DataType but is None")
        self._accumulator_type = as_data_type(accumulator_type if accumulator_type is not None
                                              else func.get_accumulator_type(),
                                              "accumulator_type")

    def result_data_types(self) -> list[DataType]:
        assert self._result_type is not None
        return [self._result_type]


#: wrappers called before they were registered, by their generated names
_UNREGISTERED: dict[str, UserDefinedFunctionWrapper] = {}


def unregistered_in(statement: str) -> list[UserDefinedFunctionWrapper]:
    """The wrappers with generated names that ``statement`` calls."""
    return [w for name, w in list(_UNREGISTERED.items()) if f"{name}(" in statement]


def _wrap(f: Any, make: Callable[[Any], UserDefinedFunctionWrapper]) -> Any:
    """The decorator form (``f`` None) or the call form."""
    if f is None:
        return functools.partial(_wrap, make=make)
    return make(f)


def udf(f: Any = None, input_types: Any = None, result_type: Any = None,
        deterministic: bool | None = None, name: str | None = None,
        func_type: str = GENERAL, udf_type: str | None = None) -> Any:
    """A scalar function of a Python function or a ScalarFunction (decorator or call form);
    ``func_type='pandas'`` takes and returns pandas Series (a vectorized function). An
    AsyncScalarFunction or an ``async def`` function gives an async scalar function."""
    func_type = udf_type or func_type

    def make(g: Any) -> UserDefinedFunctionWrapper:
        if isinstance(g, AsyncScalarFunction) or inspect.iscoroutinefunction(g):
            return UserDefinedAsyncScalarFunctionWrapper(g, input_types, result_type, func_type,
                                                         deterministic, name)
        return UserDefinedScalarFunctionWrapper(g, input_types, result_type, func_type,
                                                deterministic, name)

    return _wrap(f, make)


def udtf(f: Any = None, input_types: Any = None, result_types: Any = None,
         deterministic: bool | None = None, name: str | None = None) -> Any:
    """A table function of a Python generator function or a TableFunction."""
    return _wrap(f, lambda g: UserDefinedTableFunctionWrapper(
        g, input_types, result_types, deterministic, name))


def udaf(f: Any = None, input_types: Any = None, result_type: Any = None,
         accumulator_type: Any = None, deterministic: bool | None = None,
         name: str | None = None, func_type: str = GENERAL) -> Any:
    """An aggregate function of an AggregateFunction, or (``func_type='pandas'``) of a Python
    function from pandas Series to one value."""
    return _wrap(f, lambda g: UserDefinedAggregateFunctionWrapper(
        g, input_types, result_type, accumulator_type, func_type, deterministic, name))


def udtaf(f: Any = None, input_types: Any = None, result_type: Any = None,
          accumulator_type: Any = None, deterministic: bool | None = None,
          name: str | None = None, func_type: str = GENERAL) -> Any:
    """A table aggregate function of a TableAggregateFunction (``flat_aggregate``)."""
    if func_type != GENERAL:
        raise ValueError(f"udtaf supports func_type='general' only, not {func_type!r}")
    return _wrap(f, lambda g: UserDefinedTableAggregateFunctionWrapper(
        g, input_types, result_type, accumulator_type, deterministic, name))
