"""A Python worker's import environment per function runner (without Spark): a runner without
dependencies that runs after one with them cannot import the other's modules, not even while
Spark unpickles it."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from typing import Any

import pytest

from sessioncluster.dependencies import JobEnvironment, materialise, pack_python_file
from sessioncluster.spark.flinksql import udf_runners
from sessioncluster.spark.flinksql.udf_runners import ScalarRunner

MODULE = "runner_shipped_mod"


def test_a_runner_without_dependencies_does_not_import_the_previous_runners(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "client"
    source.mkdir()
    (source / f"{MODULE}.py").write_text(
        "from sessioncluster.api.table.udf import ScalarFunction\n"
        "class Plus(ScalarFunction):\n    def eval(self, x):\n        return x + 1\n")
    # the client has the module: its function is pickled by reference to it
    monkeypatch.syspath_prepend(str(source))
    plus = __import__(MODULE).Plus()
    without = pickle.dumps(ScalarRunner(plus, "t-without", "plus", {}, "BIGINT"))
    with_runner = ScalarRunner(plus, "t-with", "plus", {}, "BIGINT")
    dep, data = pack_python_file(str(source / f"{MODULE}.py"))
    with_runner.dependencies = (dep,)
    shipped = pickle.dumps(with_runner)
    sys.path.remove(str(source))
    del sys.modules[MODULE]
    # the worker: the runner with the module's file ran before (its environment still entered)
    root = tmp_path / "deps"
    environment = JobEnvironment([(dep, materialise(dep, data, root))], root)
    monkeypatch.setattr(udf_runners, "_ACTIVE", {(dep,): environment})
    environment.__enter__()
    try:
        assert pickle.loads(shipped)(1) == 2  # noqa: S301
        runner = pickle.loads(without)  # noqa: S301 - Spark unpickles it before any call
        with pytest.raises(ModuleNotFoundError, match=MODULE):
            runner(1)
        assert udf_runners._ACTIVE == {} and MODULE not in sys.modules
        assert all(not p.startswith(str(root)) for p in sys.path)
    finally:
        environment.__exit__(None, None, None)


def test_a_statement_registers_again_only_the_functions_it_calls_with_other_dependencies(
        local_spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark import cloudpickle

    from sessioncluster.api.table.udf import udf
    from sessioncluster.graph.jobgraph import PythonDependency
    from sessioncluster.spark.flinksql import functions
    from sessioncluster.spark.flinksql.statements import CreateFunction, parse_statement

    catalog = functions.FunctionCatalog(local_spark, scope="deps-registrations")
    for name in ("dep_f", "dep_g"):
        catalog.create(CreateFunction(name, "", "PYTHON", temporary=True, system=True),
                       cloudpickle.dumps(udf(lambda x: x + 1, result_type="BIGINT")), {})
    registered: list[tuple[str, tuple[Any, ...]]] = []
    real = functions.register
    monkeypatch.setattr(functions, "register", lambda spark, name, wrapper, parameters, deps=():
                        registered.append((name, deps)) or real(spark, name, wrapper,
                                                                 parameters, deps))
    deps = (PythonDependency("file", "k" * 64, "m.py"),)
    catalog.use_dependencies(deps)
    assert registered == []  # a switch registers nothing by itself
    catalog.check_calls(parse_statement("SELECT dep_f(CAST(1 AS BIGINT))"))
    assert [(n.rsplit("_", 1)[-1], d) for n, d in registered] == [("f", deps)]
    catalog.check_calls(parse_statement("SELECT dep_f(CAST(1 AS BIGINT))"))
    assert len(registered) == 1  # unchanged: not again
    assert catalog.functions["dep_g"].dependencies == ()  # not called: left as it was
    catalog.use_dependencies(())
    catalog.check_calls(parse_statement("SELECT dep_f(1), dep_g(2)"))
    assert [(n.rsplit("_", 1)[-1], d) for n, d in registered[1:]] == [("f", ())]
    for name in ("dep_f", "dep_g"):
        catalog.drop(parse_statement(f"DROP TEMPORARY SYSTEM FUNCTION {name}"))


class Opened:
    """A scalar function recording its open() and close() calls in ``log``."""

    log: list[str] = []

    def __init__(self, name: str) -> None:
        self.name = name

    def open(self, context: Any) -> None:
        Opened.log.append("open " + self.name)

    def close(self) -> None:
        Opened.log.append("close " + self.name)

    def eval(self, x: int) -> int:
        return x


def test_a_worker_keeps_the_most_recently_used_functions_open(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from collections import OrderedDict

    monkeypatch.setattr(udf_runners, "_OPENED", OrderedDict())
    monkeypatch.setattr(udf_runners, "MAX_OPENED", 2)
    Opened.log = []
    runners = {n: ScalarRunner(Opened(n), "t-" + n, n, {}, "BIGINT") for n in "abc"}
    for name in "abac":  # a is used again before c comes: b is the least recently used
        runners[name].opened()
    assert Opened.log == ["open a", "open b", "open c", "close b"]
    assert list(udf_runners._OPENED) == ["t-a", "t-c"]
    runners["b"].opened()  # opened again, as a new task would
    assert Opened.log[-2:] == ["open b", "close a"]
