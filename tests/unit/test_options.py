"""The start options are declared once and every front end takes exactly that set."""

from __future__ import annotations

import argparse
import inspect

import pytest

import sessioncluster
from sessioncluster import cli
from sessioncluster.jobmanager import process
from sessioncluster.jupyter.magics import SessionClusterMagics
from sessioncluster.options import StartOptions, names


def dests(parser: argparse.ArgumentParser) -> set[str]:
    return {a.dest for a in parser._actions if a.option_strings and a.dest != "help"}


def subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise LookupError(name)


def test_cli_start_and_demo_take_every_option() -> None:
    parser = cli.build_parser()
    assert dests(subparser(parser, "start")) == names()
    assert dests(subparser(parser, "demo")) == names() | {"keep"}
    # `run --target per-job|application` starts a cluster: it takes every start option too
    assert names() <= dests(subparser(parser, "run"))


def test_jobmanager_command_line_takes_every_option() -> None:
    assert dests(process.build_parser()) == names() | {"application", "owner", "standby"}


def test_magics_take_every_option() -> None:
    parser = SessionClusterMagics.flink_session.parser  # made by IPython's magic_arguments
    assert names() <= dests(parser)


def test_start_forwards_every_option_and_refuses_others() -> None:
    params = inspect.signature(sessioncluster.start).parameters
    assert list(params) == ["name", "timeout", "quiet", "application", "owner", "options"]
    assert params["options"].kind is inspect.Parameter.VAR_KEYWORD
    for name in names() - {"name"}:
        StartOptions.from_kwargs(**{name: getattr(StartOptions(), name)})
    with pytest.raises(TypeError, match="unknown start option.*slot.*the options are"):
        sessioncluster.start("x", slot=2)


def test_the_jobmanager_gets_what_the_client_asked_for() -> None:
    options = StartOptions(name="s", taskmanagers=3, slots=2, spark_master="spark://h:7077",
                           parallelism=4, bind="127.0.0.1")
    parsed = StartOptions.from_namespace(process.build_parser().parse_args(options.argv()))
    assert parsed == options


def test_default_parallelism_is_every_slot() -> None:
    assert StartOptions(taskmanagers=2, slots=1).default_parallelism == 2
    assert StartOptions(taskmanagers=3, slots=2).default_parallelism == 6
    assert StartOptions(taskmanagers=0, slots=2).default_parallelism == 2  # local[2]
    assert StartOptions(taskmanagers=2, parallelism=5).default_parallelism == 5


def test_bad_values_are_refused() -> None:
    with pytest.raises(ValueError, match="slots must be"):
        StartOptions(slots=0)
    with pytest.raises(ValueError, match="parallelism must be"):
        StartOptions(parallelism=0)


def test_master_url() -> None:
    assert StartOptions(taskmanagers=0, slots=2).master_url == "local[2,2]"
    assert StartOptions(taskmanagers=2, slots=1, memory=512).master_url == "local-cluster[2,1,512]"
    assert StartOptions(spark_master="spark://h:7077").master_url == "spark://h:7077"


def test_a_spark_cluster_gets_t_executors_of_s_cores_and_the_hook_on_its_path() -> None:
    from sessioncluster.spark.driver import cluster_conf

    assert cluster_conf(StartOptions(taskmanagers=2)) == {}  # local-cluster inherits everything
    conf = cluster_conf(StartOptions(taskmanagers=3, slots=2, memory=512,
                                     spark_master="spark://h:7077"))
    assert conf["spark.executor.instances"] == "3" and conf["spark.cores.max"] == "6"
    assert conf["spark.executor.cores"] == "2" and conf["spark.executor.memory"] == "512m"
    import os
    import site

    here = os.path.dirname(os.path.dirname(os.path.abspath(sessioncluster.__file__)))
    path = conf["spark.executorEnv.PYTHONPATH"].split(os.pathsep)
    if here in map(os.path.abspath, site.getsitepackages()):
        assert here not in path  # pip-installed: never put one site-packages before another's
    else:
        assert path[0] == here  # a source tree or an editable install: first
    with pytest.raises(ValueError, match="taskmanagers must be >= 1 on a Spark cluster"):
        StartOptions(taskmanagers=0, spark_master="yarn")


@pytest.mark.parametrize("argv, error", [
    (["run", "--taskmanagers", "3", "p.py"], "--taskmanagers starts a cluster"),
    (["run", "-t", "per-job", "--session", "dev", "p.py"], "--session names a running session"),
    (["run", "-t", "per-job", "-d", "p.py"], "--target application -d"),
    (["run", "-t", "application", "-s", "/sp", "p.py"], "-s/--fromSavepoint goes with"),
    (["run", "-t", "per-job", "--name", "bad name", "p.py"], "invalid session name"),
    (["run", "-t", "per-job", "--slots", "0", "p.py"], "slots must be"),
])
def test_run_targets_refuse_options_that_do_not_fit(argv: list[str], error: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 1
    assert error in capsys.readouterr().err
