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
    """cloudpickle's Pickler, keeping the file names of the user's code for tracebacks, and
    shipping by value every class and function of the user's own packages that it meets, however
    deep inside the pickled object (a FileSink's BulkWriterFactory, a bucket assigner)."""

    dispatch_table = ChainMap({CodeType: _code_reduce_keeping_filename},
                              cloudpickle.Pickler.dispatch_table)

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file)
        self.registered: set[str] = set()

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, type) or callable(obj) and hasattr(obj, "__code__"):
            package = _user_package(obj)
            if (package is not None and package.__name__ not in self.registered
                    and package.__name__ not in cloudpickle.list_registry_pickle_by_value()):
                cloudpickle.register_pickle_by_value(package)
                self.registered.add(package.__name__)
        return super().reducer_override(obj)


def dumps_user_code(obj: Any) -> bytes:
    """``obj`` cloudpickled for the TaskManagers (see ``UserCodePickler``)."""
    buffer = io.BytesIO()
    pickler = UserCodePickler(buffer)
    try:
        pickler.dump(obj)
        return buffer.getvalue()
    finally:
        for name in pickler.registered:
            cloudpickle.unregister_pickle_by_value(sys.modules[name])


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

