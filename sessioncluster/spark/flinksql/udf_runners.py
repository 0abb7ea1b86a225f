"""What runs a Python user-defined function inside Spark's Python workers (the executors).

Each runner is pickled by Spark together with the user's function (which travels by value); it
calls ``open(FunctionContext)`` once per Python worker before the first call (the opened
function is kept per worker under the registration's token), converts Flink's values (``Row``)
to Spark's and checks a scalar function's results against its declared ``result_type``. Kept
light: a worker imports this module, not the planner.
"""

from __future__ import annotations

import atexit
import datetime
import decimal
import pickle
from collections import OrderedDict
from typing import Any, Iterator

from ...api.table.udf import (
    AggregateFunction,
    FunctionContext,
    TableAggregateFunction,
    UserDefinedFunction,
)
from ...common.types import Row, pyflink_value, rows_as_tuples
from ...graph.jobgraph import PythonDependency
from .asyncscalar import AsyncOptions, evaluate

#: the opened function of each registration, per Python worker (token -> function), the
#: most recently used last; past :data:`MAX_OPENED` the least recently used is closed
_OPENED: OrderedDict[str, UserDefinedFunction] = OrderedDict()
#: how many registrations' functions a worker keeps open (a long session registers many)
MAX_OPENED = 64

#: the Python values Spark accepts for a Flink type's name (checked on a scalar result)
_PY_TYPES: dict[str, tuple[type, ...]] = {
    "TINYINT": (int,), "SMALLINT": (int,), "INT": (int,), "INTEGER": (int,), "BIGINT": (int,),
    "FLOAT": (float, int), "DOUBLE": (float, int), "BOOLEAN": (bool,),
    "STRING": (str,), "VARCHAR": (str,), "CHAR": (str,), "BYTES": (bytes, bytearray),
    "DECIMAL": (decimal.Decimal, int, float), "DATE": (datetime.date,),
    "TIMESTAMP": (datetime.datetime,), "TIMESTAMP_LTZ": (datetime.datetime,),
}


def python_types(type_text: str) -> tuple[type, ...] | None:
    """The Python types a result of Flink type ``type_text`` may have (None: not checked)."""
    base = type_text.split("(")[0].split("<")[0].strip().upper()
    return _PY_TYPES.get(base)


def _close(function: UserDefinedFunction) -> None:
    try:
        function.close()
    except Exception:  # noqa: BLE001, S110 - a failing close() must not hide the exit
        pass


def _close_all() -> None:
    for function in _OPENED.values():
        _close(function)


atexit.register(_close_all)


class FunctionRunner:
    """Opens the user's function once per worker. ``dependencies``: the Python files, archives
    and requirements of the statement that registered it (a TableEnvironment's
    ``add_python_file``...), on the worker's ``sys.path`` while it runs, as a DataStream job's
    are (:mod:`sessioncluster.dependencies`); the function travels pickled apart then, and is
    unpickled on the worker inside them (it may import their modules as it loads)."""

    dependencies: tuple[PythonDependency, ...] = ()
    #: False: no user code (a built-in aggregate beside Python ones), run in whatever
    #: environment the worker has
    user_code = True

    def __init__(self, function: UserDefinedFunction, token: str, name: str,
                 job_parameters: dict[str, str]) -> None:
        self.function: UserDefinedFunction | bytes = function
        self.token = token
        self.name = name
        self.job_parameters = job_parameters

    def __getstate__(self) -> dict[str, Any]:
        # pickled apart, with or without dependencies: a worker unpickles it in ``opened``
        # once the runner's own dependencies (none, say) replaced the previous runner's, so
        # that none of its modules imports from another statement's files
        state = dict(self.__dict__)
        if not isinstance(self.function, bytes):
            from pyspark import cloudpickle  # Spark's: its pickle-by-value registry

            state["function"] = cloudpickle.dumps(self.function)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def opened(self) -> Any:
        if self.user_code:
            use_dependencies(self.dependencies)
        function = _OPENED.get(self.token)
        if function is not None:
            _OPENED.move_to_end(self.token)
            return function
        loaded = self.function
        function = pickle.loads(loaded) if isinstance(loaded, bytes) else loaded  # noqa: S301
        function.open(FunctionContext(self.job_parameters))
        _OPENED[self.token] = function
        while len(_OPENED) > MAX_OPENED:
            _close(_OPENED.popitem(last=False)[1])
        return function


#: the Python dependencies on this worker's sys.path: their tuple -> their environment (one
#: at most: the runner of another statement's functions exits them first)
_ACTIVE: dict[tuple[PythonDependency, ...], Any] = {}


def use_dependencies(dependencies: tuple[PythonDependency, ...]) -> None:
    """Have ``dependencies`` (only) on this process's ``sys.path``, made ready once; the
    previous ones' directories off it and their modules forgotten."""
    if dependencies in _ACTIVE or not dependencies and not _ACTIVE:
        return
    for environment in _ACTIVE.values():
        environment.__exit__(None, None, None)
    _ACTIVE.clear()
    if dependencies:
        from ...streaming.runtime import dependency_environment

        environment = dependency_environment(dependencies)
        assert environment is not None
        environment.__enter__()
        _ACTIVE[dependencies] = environment


#: a Flink value as Spark takes it: a ``Row`` as a tuple (nested ones too)
to_spark = rows_as_tuples


class ScalarRunner(FunctionRunner):
    """A general scalar function, row by row (Spark calls it on Arrow batches)."""

    def __init__(self, function: UserDefinedFunction, token: str, name: str,
                 job_parameters: dict[str, str], result_type: str) -> None:
        super().__init__(function, token, name, job_parameters)
        self.result_type = result_type
        self.accepted = python_types(result_type)

    def __call__(self, *args: Any) -> Any:
        return self.checked(self.opened().eval(*[pyflink_value(a) for a in args]))

    def checked(self, result: Any) -> Any:
        """``result`` as Spark takes it, once checked against the declared result type."""
        if result is not None and self.accepted is not None \
                and not isinstance(result, self.accepted):
            raise TypeError(f"the Python function {self.name!r} returned {result!r} "
                            f"({type(result).__name__}), but its result_type is "
                            f"{self.result_type}")
        return to_spark(result)


class AsyncScalarRunner(ScalarRunner):
    """An async scalar function as an Arrow UDF: each Arrow batch's rows evaluated
    concurrently on the worker's event loop (:mod:`.asyncscalar`), results in the rows' order.
    ``arrow_type`` is the result's Arrow type (set on the driver, where Spark parses it)."""

    def __init__(self, function: UserDefinedFunction, token: str, name: str,
                 job_parameters: dict[str, str], result_type: str,
                 options: AsyncOptions) -> None:
        super().__init__(function, token, name, job_parameters, result_type)
        self.options = options
        self.arrow_type: Any = None

    def __call__(self, *arrays: Any) -> Any:
        import pyarrow as pa

        rows = list(zip(*[[_flink_value(v) for v in a.to_pylist()] for a in arrays]))
        results = evaluate(self._checked, rows, self.options,
                           describe=lambda row: str(Row(*row)))
        return pa.array(results, type=self.arrow_type)

    async def _checked(self, *args: Any) -> Any:
        return self.checked(await self.opened().eval(*args))


def _flink_value(value: Any) -> Any:
    """An Arrow value (``to_pylist``) as Flink gives it: a struct's dict as a ``Row``."""
    if isinstance(value, dict):
        return Row(**{k: _flink_value(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_flink_value(v) for v in value]
    return value


class PandasScalarRunner(FunctionRunner):
    """A vectorized (``func_type='pandas'``) scalar function: pandas Series in and out."""

    def __call__(self, *series: Any) -> Any:
        return self.opened().eval(*series)


class TableRunner(FunctionRunner):
    """A table function: each row's ``eval`` results as Spark's UDTF rows."""

    def __init__(self, function: UserDefinedFunction, token: str, name: str,
                 job_parameters: dict[str, str], width: int) -> None:
        super().__init__(function, token, name, job_parameters)
        self.width = width

    def rows(self, *args: Any) -> Iterator[tuple[Any, ...]]:
        results = self.opened().eval(*[pyflink_value(a) for a in args])
        if results is None:
            return
        for r in results:
            if isinstance(r, Row):
                yield tuple(to_spark(v) for v in r)
            elif isinstance(r, (tuple, list)) and self.width > 1:
                yield tuple(to_spark(v) for v in r)
            else:
                yield (to_spark(r),)


def table_function_class(runner: TableRunner, outer: bool = False) -> type:
    """The class Spark's ``udtf`` takes (instantiated by Spark without arguments). ``outer``:
    a row of NULLs for a call that gives no rows (a ``LEFT JOIN LATERAL .. ON TRUE``'s)."""

    class FlinkTableFunction:
        def eval(self, *args: Any) -> Iterator[tuple[Any, ...]]:
            given = False
            for row in runner.rows(*args):
                given = True
                yield row
            if outer and not given:
                yield (None,) * runner.width

    FlinkTableFunction.__name__ = FlinkTableFunction.__qualname__ = runner.name
    return FlinkTableFunction


def _values(series: Any) -> list[Any]:
    """A pandas Series as Python values, nulls as None."""
    import pandas as pd

    return [None if v is None or v is pd.NA or isinstance(v, float) and v != v else v
            for v in series.astype(object).tolist()]


class AggregateRunner(FunctionRunner):
    """A general aggregate function as a grouped-aggregate pandas function: each group's rows
    accumulated one by one into a new accumulator, then ``get_value``. ``boxed``: the value is
    a ROW, returned in a one-element array (Spark's grouped-aggregate pandas functions return
    no struct, but an array of them; the query takes the element out)."""

    boxed = False

    def __call__(self, *series: Any) -> Any:
        function = self.opened()
        assert isinstance(function, AggregateFunction)
        accumulator = function.create_accumulator()
        for row in zip(*[_arguments(s) for s in series]):  # a ROW argument as a Row
            function.accumulate(accumulator, *row)
        value = to_spark(function.get_value(accumulator))
        return [value] if self.boxed else value


class PandasAggregateRunner(FunctionRunner):
    """A vectorized aggregate function: each group's pandas Series to one value (``boxed``
    as :class:`AggregateRunner`'s)."""

    boxed = False

    def __call__(self, *series: Any) -> Any:
        value = self.opened().eval(*series)
        return [to_spark(value)] if self.boxed else value


class WindowAggregateRunner:
    """A Python aggregate function (``runner``: an :class:`AggregateRunner` or a
    :class:`PandasAggregateRunner`) as a scalar function over one window's rows, which Spark's
    window aggregation collected (a list of structs of the call's arguments)."""

    def __init__(self, runner: AggregateRunner | PandasAggregateRunner) -> None:
        self.runner = runner

    def __call__(self, rows: list[Any]) -> Any:
        import pandas as pd

        columns = list(zip(*[tuple(r) for r in rows]))
        return self.runner(*[pd.Series(list(c)) for c in columns])


def _arguments(column: Any) -> list[Any]:
    """A grouped-aggregate function's argument as Python values; a ROW argument (Spark's
    struct: a DataFrame, or a Series of dicts) as Rows of its field names."""
    import pandas as pd

    if isinstance(column, pd.DataFrame):
        names = [str(c) for c in column.columns]
        return [Row(**dict(zip(names, values))) for values in
                zip(*[_values(column[c]) for c in column.columns])]
    return [Row(**v) if isinstance(v, dict) else pyflink_value(v) for v in _values(column)]


class TableAggregateRunner(FunctionRunner):
    """A table aggregate function as a grouped-aggregate pandas function: each group's rows
    accumulated into a new accumulator, then the rows of ``emit_value`` as one array (which
    the query unnests)."""

    def __call__(self, *columns: Any) -> Any:
        function = self.opened()
        assert isinstance(function, TableAggregateFunction)
        accumulator = function.create_accumulator()
        for row in zip(*[_arguments(c) for c in columns]):
            function.accumulate(accumulator, *row)
        return _emitted(function, accumulator)


def _emitted(function: TableAggregateFunction, accumulator: Any) -> list[Any]:
    """The rows ``emit_value`` yields, as Spark values (copied now: they may be the
    accumulator's own objects, which the next ``accumulate`` changes)."""
    return [to_spark(tuple(r) if isinstance(r, Row) else r)
            for r in function.emit_value(accumulator) or []]


def group_changes(function: TableAggregateFunction, accumulator: Any,
                  rows: list[tuple[Any, ...]], kinds: list[str] | None = None
                  ) -> tuple[Any, list[Any], list[Any]]:
    """Flink's ``GroupTableAggFunction`` on one key's rows of one bundle (here: micro-batch):
    the accumulator (a new one when None), the rows it emitted before (Flink retracts them:
    ``emit_value`` of the accumulator as it was, not a stored copy) and the rows it emits
    after accumulating ``rows`` (retracting each whose RowKind in ``kinds`` is ``-U``/``-D``:
    PyFlink's RuntimeError when the function has no ``retract``)."""
    retracted: list[Any] = []
    if accumulator is None:
        accumulator = function.create_accumulator()
    else:
        retracted = _emitted(function, accumulator)
    for row, kind in zip(rows, kinds or ["+I"] * len(rows)):
        if kind in ("-U", "-D"):
            function.retract(accumulator, *row)
        else:
            function.accumulate(accumulator, *row)
    return accumulator, retracted, _emitted(function, accumulator)


def table_aggregate_changelog(retracted: list[Any], emitted: list[Any]
                              ) -> list[tuple[str, list[Any]]]:
    """One key's changes as Flink 2.3 emits them: ``-D`` for every row emitted before (changed
    or not), then ``+I`` for every row emitted now; each kind with its rows (none left out)."""
    out: list[tuple[str, list[Any]]] = []
    if retracted:
        out.append(("-D", retracted))
    if emitted:
        out.append(("+I", emitted))
    return out


def aggregate_changes(functions: list[AggregateFunction], widths: list[int], state: Any,
                      rows: list[tuple[Any, ...]], kinds: list[str] | None = None
                      ) -> tuple[Any, list[tuple[str, list[Any]]]]:
    """Flink's Python ``GroupAggFunction`` on one key's rows of one bundle (here: micro-batch):
    ``state`` (the accumulators and the count of rows; None for a new key) with ``rows``
    accumulated (each function its ``widths`` arguments; a ``-U``/``-D`` row retracted), and
    the key's changes: ``+I`` of a new key's values, ``-U``/``+U`` of changed ones, nothing
    for unchanged ones, ``-D`` when its last row is retracted (the state then None). Flink 2.3
    emits once per bundle (/work/briefs/data/udafstream/probe1.out)."""
    if state is None:
        accumulators, count, before = [f.create_accumulator() for f in functions], 0, None
    else:
        accumulators, count = state
        before = _values_of(functions, accumulators)
    for row, kind in zip(rows, kinds or ["+I"] * len(rows)):
        offset = 0
        retracting = kind in ("-U", "-D")
        for function, accumulator, width in zip(functions, accumulators, widths):
            arguments = row[offset:offset + width]
            offset += width
            if retracting:
                function.retract(accumulator, *arguments)
            else:
                function.accumulate(accumulator, *arguments)
        count += -1 if retracting else 1
    if count <= 0 and kinds is not None:
        return None, [] if before is None else [("-D", before)]
    after = _values_of(functions, accumulators)
    if before is None:
        return (accumulators, count), [("+I", after)]
    if after == before:
        return (accumulators, count), []
    return (accumulators, count), [("-U", before), ("+U", after)]


def _values_of(functions: list[AggregateFunction], accumulators: list[Any]) -> list[Any]:
    return [to_spark(f.get_value(a)) for f, a in zip(functions, accumulators)]


class GroupAggregateRunner:
    """General aggregate functions of one grouping select on keyed state: the key's
    accumulators and count of rows, its changes (:func:`aggregate_changes`); each value in
    a one-element array when its ``AggregateRunner`` is ``boxed``. ``per_record``: the
    changes of each row, as Flink's built-in ``GroupAggFunction`` emits them (not once per
    bundle, as its Python one)."""

    def __init__(self, runners: list[AggregateRunner], widths: list[int],
                 per_record: bool = False) -> None:
        self.runners = runners
        self.widths = widths
        self.per_record = per_record

    def changes(self, state: Any, rows: list[tuple[Any, ...]], kinds: list[str] | None
                ) -> tuple[Any, list[tuple[str, list[Any]]]]:
        """The key's new state and its changes, each with one value per function."""
        functions = [r.opened() for r in self.runners]
        if self.per_record:
            changes: list[tuple[str, list[Any]]] = []
            for i, row in enumerate(rows):
                state, emitted = aggregate_changes(functions, self.widths, state, [row],
                                                   None if kinds is None else [kinds[i]])
                changes += emitted
        else:
            state, changes = aggregate_changes(functions, self.widths, state, rows, kinds)
        return state, [(kind, [[v] if r.boxed else v for r, v in zip(self.runners, values)])
                       for kind, values in changes]


def table_aggregate_changes(runner: TableAggregateRunner, state: Any,
                            rows: list[tuple[Any, ...]], kinds: list[str] | None
                            ) -> tuple[Any, list[tuple[str, list[Any]]]]:
    """A table aggregate function's new accumulator and changes of one key's rows (each
    change with one value: the array of its rows)."""
    function = runner.opened()
    assert isinstance(function, TableAggregateFunction)
    accumulator, retracted, emitted = group_changes(function, state, rows, kinds)
    return accumulator, [(kind, [r]) for kind, r in table_aggregate_changelog(retracted, emitted)]


def keyed_processor(changes: Any, keys: list[str], arguments: list[str], outputs: list[str],
                    kind_column: str, change_columns: tuple[str, ...] | None = None) -> Any:
    """The StatefulProcessor of ``transformWithStateInPandas`` running Python aggregate
    functions per key: ``changes(state, rows, kinds)`` (:func:`table_aggregate_changes`, a
    :class:`GroupAggregateRunner`'s) gives the key's new state (None: cleared) and its changes,
    each a RowKind and one value per column of ``outputs``; the state (cloudpickled) in the
    state store; the changes out as rows of ``keys``, ``outputs`` and their RowKind (made here,
    so that this module imports without pyspark's SQL extras). ``change_columns``: the input's
    RowKind column then the columns of its order (a sequence, and a sub-position within it),
    when it is an updating query's changes (``-U``/``-D`` retracted, in their order)."""
    import pandas as pd
    from pyspark import cloudpickle
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class KeyedAggregateProcessor(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.state = handle.getValueState("accumulator", "accumulator binary")

        def handleInputRows(self, key: Any, rows: Iterator[Any],  # noqa: N802
                            timerValues: Any) -> Iterator[Any]:  # noqa: N803
            stored = self.state.get()  # None for a new key (one round trip to the state server)
            state = cloudpickle.loads(stored[0]) if stored is not None else None
            arguments_rows: list[tuple[Any, ...]] = []
            kinds: list[str] | None = None
            if change_columns is not None:
                kind, *order = change_columns
                frame = pd.concat(list(rows), ignore_index=True).sort_values(order,
                                                                             kind="stable")
                rows, kinds = iter([frame]), frame[kind].tolist()
            for frame in rows:
                arguments_rows += zip(*[_arguments(frame[a]) for a in arguments])
            state, out = changes(state, arguments_rows, kinds)
            if state is None:
                self.state.clear()
            else:
                self.state.update((cloudpickle.dumps(state),))
            if out:
                columns: dict[str, list[Any]] = {k: [v] * len(out) for k, v in zip(keys, key)}
                for i, name in enumerate(outputs):
                    columns[name] = [values[i] for _, values in out]
                columns[kind_column] = [kind for kind, _ in out]
                yield pd.DataFrame(columns)

        def close(self) -> None:
            pass

    return KeyedAggregateProcessor()
