"""User code shipped to the cluster: cloudpickled by value where the TaskManagers cannot import it
(``__main__``, the user's own packages), with the file names of its code kept for tracebacks."""

from __future__ import annotations

import io
import os
import sys
import sysconfig
from collections import ChainMap
from types import CodeType, ModuleType
from typing import Any

import cloudpickle

from ..api.functions import FieldAggregation, Function, as_callable
from ..graph.streamgraph import OperatorKind
from ..runtime.operators import StreamOperator


class UnpicklableFunctionError(TypeError):
    """A function (or what it captures) cannot be shipped to the cluster."""


_INSTALLED_PATHS = tuple(
    os.path.realpath(p) + os.sep
    for p in {sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")} if p
)


def _user_package(obj: Any) -> ModuleType | None:
    """The top-level package of ``obj``'s module when it is the user's own code (not installed,
    not this package): the TaskManagers cannot import it, so it travels by value."""
    name = getattr(obj, "__module__", None) or getattr(type(obj), "__module__", None)
    if not name or name == "__main__":
        return None  # cloudpickle ships __main__ by value anyway
    top = name.split(".")[0]
    if top in ("sessioncluster", "builtins") or top in sys.builtin_module_names:
        return None
    module = sys.modules.get(top)
    path = getattr(module, "__file__", None)
    if module is None or path is None or os.path.realpath(path).startswith(_INSTALLED_PATHS):
        return None
    return module


def _code_reduce_keeping_filename(code: CodeType) -> Any:
    """cloudpickle's reducer for a code object, with the code's own file name kept.

    cloudpickle 3.1.2 and later write ``<dynamic-code>`` as every function's file name (for
    payloads that do not depend on where a function was defined); a traceback from a
    TaskManager then cannot point at the user's cell or file. The name is the one argument
    equal to that marker."""
    rebuild, args = cloudpickle.Pickler.dispatch_table[CodeType](code)
    return rebuild, tuple(code.co_filename if arg == "<dynamic-code>" else arg for arg in args)


class UserCodePickler(cloudpickle.Pickler):
    """cloudpickle's Pickler, keeping the file names of the user's code for tracebacks."""

    dispatch_table = ChainMap({CodeType: _code_reduce_keeping_filename},
                              cloudpickle.Pickler.dispatch_table)


def dumps_user_code(obj: Any) -> bytes:
    # an operator travels with the user's functions inside: their packages decide
    functions = obj.user_functions if isinstance(obj, StreamOperator) else [obj]
    packages = {p for p in map(_user_package, functions) if p is not None}
    for package in packages:
        cloudpickle.register_pickle_by_value(package)
    try:
        buffer = io.BytesIO()
        UserCodePickler(buffer).dump(obj)
        return buffer.getvalue()
    finally:
        for package in packages:
            cloudpickle.unregister_pickle_by_value(package)


def check_function(fn: Any, kind: OperatorKind | None) -> None:
    if fn is None:
        return
    if (kind is OperatorKind.REDUCE and isinstance(fn, FieldAggregation)) or isinstance(fn, StreamOperator):
        return
    if isinstance(fn, Function) or callable(fn):
        as_callable(fn)
        return
    raise TypeError(f"{fn!r} is not a function: pass a callable or a "
                    f"{'MapFunction/FlatMapFunction/...' if kind else 'KeySelector'} object")

