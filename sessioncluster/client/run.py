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

import dataclasses
import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import runpy
import shutil
import signal
import sys
import time
import traceback
import uuid
from contextlib import contextmanager
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from ..cluster.connection import check_name, pid_alive, session_dir
from ..cluster.leader import running_jobmanager
from ..options import StartOptions, names
from .current import (
    SESSION_ENV,
    clear_current,
    current,
    own_catalogs,
    set_current,
    set_environment_factory,
    set_own_catalogs,
)
from .environment import ContextStreamExecutionEnvironment

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

    def get_all_accumulator_results(self) -> dict[str, Any]:
        raise RuntimeError(self._UNAVAILABLE)

    def __repr__(self) -> str:
        return f"DetachedJobExecutionResult(job_id={self.job_id!r})"


class RunStreamExecutionEnvironment(ContextStreamExecutionEnvironment):
    """The environment of a program under ``sessioncluster run`` (Flink's
    ``StreamContextEnvironment``): prints each submitted JobID; detached, ``execute()`` does not
    wait for the job. Its runtime mode is Flink's default, STREAMING, unless the program or
    ``-Dexecution.runtime-mode`` sets another (a session's own environments default to BATCH)."""

    def __init__(self, session: "Session", detached: bool, savepoint_path: str | None = None,
                 allow_non_restored_state: bool = False,
                 properties: Mapping[str, str] | None = None) -> None:
        from ..common.configuration import Configuration
        from ..common.execution_mode import RuntimeExecutionMode

        super().__init__(session)
        self.detached = detached
        self.set_runtime_mode(RuntimeExecutionMode.STREAMING)
        conf = Configuration()
        for key, value in (properties or {}).items():  # `run -Dkey=value`, as Flink's CLI
            conf.set_string(key, value)
        if savepoint_path:  # `run -s DIR`: the program's STREAMING jobs restore from DIR
            conf.set_string("execution.savepoint.path",
                            os.path.abspath(os.path.expanduser(savepoint_path)))
        if allow_non_restored_state:
            conf.set_boolean("execution.savepoint.ignore-unclaimed-state", True)
        if conf.to_dict():
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


def check_program(program: str) -> str:
    """The program's absolute path; ProgramError if there is no such file."""
    path = os.path.abspath(program)
    if not os.path.isfile(path):
        raise ProgramError(f"no program file {program!r}")
    return path


def run_program(program: str, args: Sequence[str] = (), session_name: str | None = None,
                detached: bool = False, savepoint_path: str | None = None,
                allow_non_restored_state: bool = False, session: "Session | None" = None,
                properties: Mapping[str, str] | None = None) -> int:
    """Run ``program`` (a PyFlink DataStream program) on a session (``session``, else the one
    named ``session_name``, else ``$SESSIONCLUSTER_SESSION``); its exit status. ``properties``
    configure its environments (Flink's ``-Dkey=value``, e.g. ``execution.runtime-mode``)."""
    path = check_program(program)
    if session is None:
        session = _session(session_name)
    previous, previous_own_catalogs = current(), own_catalogs()
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    set_current(session)
    set_own_catalogs(True)  # the program's TableEnvironments: a catalog each, as in Flink
    set_environment_factory(lambda s: RunStreamExecutionEnvironment(
        s, detached, savepoint_path, allow_non_restored_state, properties))
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
        set_own_catalogs(previous_own_catalogs)
        clear_current(session)
        if previous is not None:
            set_current(previous)


# -- per-job and application clusters ---------------------------------------------------------

#: ``sessioncluster run --target``: Flink's deployment targets
TARGETS = ("session", "per-job", "application")


def cluster_name(target: str, given: str | None) -> str:
    """A per-job or application cluster's name: as given, else new and unique."""
    if given:
        return given
    return f"{target}-{uuid.uuid4().hex[:8]}"


@contextmanager
def _signals_interrupt() -> Iterator[None]:
    """While inside, SIGTERM (and SIGHUP) interrupt this process as Ctrl-C does, so that the
    cluster it started is stopped on the way out."""
    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    saved = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _stop_quietly(session: "Session") -> None:
    """Stop a cluster this client started; a second Ctrl-C does not cut the stop short."""
    saved = {sig: signal.signal(sig, signal.SIG_IGN)
             for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        session.stop()
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _check_new(name: str) -> None:
    if running_jobmanager(name) is not None:
        raise ProgramError(f"a cluster named '{name}' is running already; a per-job or "
                           "application cluster needs a name of its own (or none: one is made)")


def run_per_job(program: str, args: Sequence[str], options: StartOptions,
                savepoint_path: str | None = None, allow_non_restored_state: bool = False,
                properties: Mapping[str, str] | None = None) -> int:
    """Flink's per-job mode: start a cluster of its own for the program, run the program here
    against it, and stop the cluster when the program ends, fails or is interrupted (Ctrl-C,
    SIGTERM); if this process is killed outright, the JobManager sees its owner gone and
    stops by itself. The program's exit status."""
    from .session import start

    check_program(program)
    _check_new(options.name)
    t0 = time.monotonic()
    code = 1
    with _signals_interrupt():
        try:
            session = start(quiet=True, owner=os.getpid(), **dataclasses.asdict(options))
        except KeyboardInterrupt:
            print(f"interrupted; per-job cluster '{options.name}' stopped", file=sys.stderr)
            return 130
        try:
            print(f"Per-job cluster '{options.name}' ready in {time.monotonic() - t0:.1f} s "
                  f"(JobManager pid {session.info.jobmanager_pid}, {options.master_url})",
                  file=sys.stderr, flush=True)
            code = run_program(program, args, savepoint_path=savepoint_path,
                               allow_non_restored_state=allow_non_restored_state, session=session,
                               properties=properties)
        except KeyboardInterrupt:
            code = 130
        finally:
            _stop_quietly(session)
            print(f"Per-job cluster '{options.name}' stopped", file=sys.stderr, flush=True)
    if code == 0:
        shutil.rmtree(session_dir(options.name), ignore_errors=True)
    else:
        print(f"its JobManager's log: {session_dir(options.name) / 'jobmanager.log'}",
              file=sys.stderr)
    return code


def run_application(program: str, args: Sequence[str], options: StartOptions,
                    detached: bool = False, poll: float = 0.2) -> int:
    """Flink's application mode: start a cluster for the program, upload the program to it (a
    blob) and have its ``main`` run in the JobManager's process tree; the cluster stops when
    ``main`` ends. Detached, return once it runs; else follow its output until it ends
    (Ctrl-C stops following, not the application); the application's exit status."""
    from ..cluster.appstatus import read_status
    from ..protocol.messages import ApplicationStarted, RunApplication
    from .session import start

    path = check_program(program)
    _check_new(options.name)
    with open(path, "rb") as f:
        source = f.read()
    t0 = time.monotonic()
    with _signals_interrupt():
        try:
            session = start(quiet=True, application=True, **dataclasses.asdict(options))
        except KeyboardInterrupt:
            print(f"interrupted; application cluster '{options.name}' stopped", file=sys.stderr)
            return 130
        try:
            reply = session.gateway.request(
                RunApplication(os.path.basename(path), hashlib.sha256(source).hexdigest(), source,
                               list(args), os.getcwd()), ApplicationStarted, timeout=60.0)
        except BaseException:
            _stop_quietly(session)  # the program never started: the cluster has no purpose
            raise
    status = reply.status
    print(f"Application cluster '{options.name}' ready in {time.monotonic() - t0:.1f} s "
          f"(JobManager pid {session.info.jobmanager_pid}, {options.master_url}); "
          f"{status.program} runs in pid {status.pid}, its output in {status.log}",
          file=sys.stderr, flush=True)
    session.gateway.close()
    if detached:
        print(f"Follow it with 'sessioncluster status {options.name}'.", file=sys.stderr)
        return 0
    directory = session_dir(options.name)
    try:
        with _signals_interrupt():
            # the JobManager records the outcome before it exits
            _follow(status.log, lambda: not pid_alive(session.info.jobmanager_pid), poll)
    except KeyboardInterrupt:
        print(f"\nstopped following; the application goes on in cluster '{options.name}' "
              f"('sessioncluster stop {options.name}' ends it)", file=sys.stderr)
        return 130
    final = read_status(directory)
    if final is None or not final.state.is_terminal:
        print(f"application cluster '{options.name}' ended without recording its outcome "
              f"(its JobManager's log: {directory / 'jobmanager.log'})", file=sys.stderr)
        return 1
    print(format_application(options.name, final, with_error=False), file=sys.stderr)
    return 0 if final.state.value == "FINISHED" else (final.exit_code or 1)


def _follow(log_path: str, ended: Any, poll: float) -> None:
    """Print what is appended to ``log_path`` until ``ended()`` (then the rest)."""
    offset = 0
    while True:
        done = ended()
        try:
            with open(log_path, "rb") as f:
                f.seek(offset)
                chunk = f.read()
        except FileNotFoundError:
            chunk = b""
        if chunk:
            offset += len(chunk)
            sys.stdout.write(chunk.decode(errors="replace"))
            sys.stdout.flush()
        if done:
            return
        time.sleep(poll)


def format_application(name: str, status: Any, with_error: bool = True) -> str:
    """An application's state in a few lines (``sessioncluster status``); ``with_error``: and
    its traceback, if it failed."""
    took = (f" after {status.end_time - status.start_time:.1f} s"
            if status.end_time is not None else "")
    jobs = f", jobs {', '.join(status.job_ids)}" if status.job_ids else ""
    lines = [f"application {status.program} of cluster '{name}': {status.state.value}{took}"
             f"{'' if status.exit_code is None else f' (exit code {status.exit_code})'}{jobs}",
             f"  its output: {status.log}"]
    if status.error and with_error:
        lines.append("  " + status.error.replace("\n", "\n  "))
    return "\n".join(lines)


def parse_properties(items: Sequence[str]) -> dict[str, str]:
    """Flink's dynamic properties, ``-Dkey=value`` each."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ProgramError(f"-D{item}: a property is -Dkey=value, e.g. "
                               "-Dexecution.runtime-mode=STREAMING")
        out[key.strip()] = value.strip()
    return out


def cmd_run(args: Any) -> int:
    """The ``sessioncluster run`` command (its arguments parsed by ``cli.py``)."""
    given = {k: getattr(args, k) for k in sorted(names())
             if getattr(args, k, None) is not None}
    properties = parse_properties(args.properties or [])
    if args.target == "session":
        if given:
            raise ProgramError(f"--{next(iter(given)).replace('_', '-')} starts a cluster: it "
                               "goes with --target per-job or application; a session is started "
                               "with 'sessioncluster start'")
        return run_program(args.program, args.args, args.session, args.detached,
                           args.from_savepoint, args.allow_non_restored_state,
                           properties=properties)
    if args.session:
        raise ProgramError(f"--session names a running session; --target {args.target} starts "
                           "a cluster of its own (name it with --name)")
    given["name"] = check_name(cluster_name(args.target, given.get("name")))
    options = StartOptions(**given)
    if args.target == "per-job":
        if args.detached:
            raise ProgramError("a per-job cluster runs the program in this process and stops "
                               "with it: for a detached program use --target application -d")
        return run_per_job(args.program, args.args, options, args.from_savepoint,
                           args.allow_non_restored_state, properties)
    if args.from_savepoint or properties:
        flag = "-s/--fromSavepoint" if args.from_savepoint else "-D"
        raise ProgramError(f"{flag} goes with --target session or per-job")
    return run_application(args.program, args.args, options, args.detached)
