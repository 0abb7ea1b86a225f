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


def test_jobmanager_command_line_takes_every_option() -> None:
    assert dests(process.build_parser()) == names()


def test_magics_take_every_option() -> None:
    parser = SessionClusterMagics.flink_session.parser  # made by IPython's magic_arguments
    assert names() <= dests(parser)


def test_start_forwards_every_option_and_refuses_others() -> None:
    params = inspect.signature(sessioncluster.start).parameters
    assert list(params) == ["name", "timeout", "quiet", "options"]
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
