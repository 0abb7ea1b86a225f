"""``sessioncluster run``: run a PyFlink DataStream program unchanged on a running session
(Flink's ``flink run -py``).

The program runs in this process as ``__main__`` with ``sys.argv = [program, args...]``; while it
runs, an import hook resolves its ``import pyflink...`` lines to ``sessioncluster.pyflink`` (and
only then: the hook and the aliases are removed afterwards, and no ``pyflink`` package is ever put
on ``sys.path``). ``get_execution_environment()`` gives environments on the chosen session that
print ``Job has been submitted with JobID <id>`` as Flink's CLI does; detached (``-d``), each
``execute()`` returns at once with a result that knows only the job id.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import runpy
import sys
import traceback
from contextlib import contextmanager
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from .current import (
    SESSION_ENV,
    ContextStreamExecutionEnvironment,
    clear_current,
    current,
    set_current,
    set_environment_factory,
)

if TYPE_CHECKING:
    from .session import Session

ALIAS = "pyflink"
MIRROR = "sessioncluster.pyflink"


# -- the import hook ----------------------------------------------------------------------------

class _AliasLoader(importlib.abc.Loader):
    """Loads ``pyflink.X`` as the already imported module ``sessioncluster.pyflink.X``."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        pass  # executed already, under its own name


class PyFlinkAliasFinder(importlib.abc.MetaPathFinder):
    """A ``sys.meta_path`` finder that answers ``pyflink`` and ``pyflink.*`` with the modules of
    ``sessioncluster.pyflink`` (their classes keep their sessioncluster module names, so the
    functions of a program pickle by reference to modules the TaskManagers have)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != ALIAS and not fullname.startswith(ALIAS + "."):
            return None
        mirror = MIRROR + fullname[len(ALIAS):]
        spec = importlib.util.find_spec(mirror)
        if spec is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: sessioncluster runs PyFlink's DataStream API "
                f"(pyflink.common, pyflink.datastream), not {fullname}", name=fullname)
        return importlib.util.spec_from_loader(
            fullname, _AliasLoader(mirror), is_package=spec.submodule_search_locations is not None)


@contextmanager
def pyflink_alias() -> Iterator[PyFlinkAliasFinder]:
    """While inside, ``import pyflink...`` gives ``sessioncluster.pyflink...``; afterwards no trace
    is left (the finder and every ``pyflink`` entry of ``sys.modules`` it made are gone)."""
    finder = PyFlinkAliasFinder()
    saved = {name: mod for name, mod in sys.modules.items()
             if name == ALIAS or name.startswith(ALIAS + ".")}
    for name in saved:
        del sys.modules[name]  # a real PyFlink imported before must not answer the program
    sys.meta_path.insert(0, finder)
    try:
        yield finder
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n == ALIAS or n.startswith(ALIAS + ".")]:
            del sys.modules[name]
        sys.modules.update(saved)


# -- the environment of a program run by `sessioncluster run` ---------------------------------

class DetachedJobExecutionResult:
    """What ``execute()`` returns in detached mode: the job id only (Flink's
    ``DetachedJobExecutionResult``)."""

    _UNAVAILABLE = ("Job was submitted in detached mode. Results of job execution, such as "
                    "accumulators, runtime, etc. are not available.")

    def __init__(self, job_id: str, job_name: str) -> None:
        self.job_id = job_id
        self.job_name = job_name

    def get_job_id(self) -> str:
        return self.job_id

    def get_net_runtime(self) -> int:
        raise RuntimeError(self._UNAVAILABLE)

    def get_accumulator_result(self, name: str) -> Any:
        raise RuntimeError(self._UNAVAILABLE)

    def all_accumulator_results(self) -> dict[str, Any]:
        raise RuntimeError(self._UNAVAILABLE)

    def __repr__(self) -> str:
        return f"DetachedJobExecutionResult(job_id={self.job_id!r})"


class RunStreamExecutionEnvironment(ContextStreamExecutionEnvironment):
    """The environment of a program under ``sessioncluster run`` (Flink's
    ``StreamContextEnvironment``): prints each submitted JobID; detached, ``execute()`` does not
    wait for the job."""

    def __init__(self, session: "Session", detached: bool, savepoint_path: str | None = None,
                 allow_non_restored_state: bool = False) -> None:
        super().__init__(session)
        self.detached = detached
        if savepoint_path:  # `run -s DIR`: the program's STREAMING jobs restore from DIR
            from ..common.configuration import Configuration

            conf = Configuration().set_string("execution.savepoint.path",
                                              os.path.abspath(os.path.expanduser(savepoint_path)))
            if allow_non_restored_state:
                conf.set_boolean("execution.savepoint.ignore-unclaimed-state", True)
            self.configure(conf)

    def execute_async(self, *args: Any, **kwargs: Any) -> Any:
        client = super().execute_async(*args, **kwargs)
        print(f"Job has been submitted with JobID {client.job_id}", flush=True)
        return client

    def execute(self, job_name: str | None = None) -> Any:
        name = job_name or "Flink Streaming Job"
        if self.detached:
            client = self.execute_async(name)
            return DetachedJobExecutionResult(client.job_id, name)
        result = super().execute(name)
        print(f"Job with JobID {result.job_id} has finished.\nJob Runtime: {result.net_runtime} ms",
              flush=True)
        return result


# -- the runner ---------------------------------------------------------------------------------

class ProgramError(RuntimeError):
    """The program cannot be run (no such file, no session)."""


def _session(name: str | None) -> "Session":
    from .session import connect

    name = name or os.environ.get(SESSION_ENV, "").strip() or None
    if name is None:
        raise ProgramError(f"no session to run on: give --session NAME or set {SESSION_ENV}=NAME "
                           "(start one with 'sessioncluster start --name NAME')")
    try:
        return connect(name)
    except LookupError as exc:
        raise ProgramError(f"{exc}; start it with 'sessioncluster start --name {name}'") from None


def _user_traceback(tb: TracebackType | None, program: str) -> TracebackType | None:
    """The traceback from the program's first frame on (without the runner's frames)."""
    t = tb
    while t is not None:
        if os.path.abspath(t.tb_frame.f_code.co_filename) == program:
            return t
        t = t.tb_next
    return tb


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_program(program: str, args: Sequence[str] = (), session_name: str | None = None,
                detached: bool = False, savepoint_path: str | None = None,
                allow_non_restored_state: bool = False) -> int:
    """Run ``program`` (a PyFlink DataStream program) on a session; its exit status."""
    path = os.path.abspath(program)
    if not os.path.isfile(path):
        raise ProgramError(f"no program file {program!r}")
    session = _session(session_name)
    previous = current()
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    set_current(session)
    set_environment_factory(lambda s: RunStreamExecutionEnvironment(
        s, detached, savepoint_path, allow_non_restored_state))
    sys.argv = [program, *args]
    sys.path.insert(0, os.path.dirname(path))  # as `python program.py` does
    try:
        with pyflink_alias():
            try:
                runpy.run_path(path, run_name="__main__")
            except SystemExit as exc:
                return _exit_code(exc)
            except KeyboardInterrupt:
                return 130
            except BaseException as exc:  # noqa: BLE001 - the program's own error: report, exit 1
                sys.stdout.flush()
                traceback.print_exception(type(exc), exc, _user_traceback(exc.__traceback__, path))
                return 1
        return 0
    finally:
        sys.stdout.flush()
        sys.argv, sys.path[:] = saved_argv, saved_path
        set_environment_factory(None)
        clear_current(session)
        if previous is not None:
            set_current(previous)


def cmd_run(args: Any) -> int:
    """The ``sessioncluster run`` command (its arguments parsed by ``cli.py``)."""
    return run_program(args.program, args.args, args.session, args.detached,
                       args.from_savepoint, args.allow_non_restored_state)
