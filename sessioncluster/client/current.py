"""The current session of this process, and the environment ``get_execution_environment()`` gives.

PyFlink programs get their environment with ``StreamExecutionEnvironment.get_execution_environment()``;
here it runs on the *current session*: the one this process started or connected last
(``sessioncluster.start/connect``, ``%flink_session start/connect``, ``sessioncluster run
--session``), else the session named by ``SESSIONCLUSTER_SESSION`` (connected to on first use).

Like Flink's ``StreamExecutionEnvironmentFactory`` (which ``flink run`` installs), a runner may
install an *environment factory* that makes the environments of the program it runs (detached,
printing JobIDs). The current session and factory are per process by nature (one program, one
cluster client), so they live in one guarded holder.

This module is the bottom of the client: the environment and the session import it, it imports
neither (``client/session.py`` installs ``connect`` here, as Flink's client installs its
environment factory).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .environment import StreamExecutionEnvironment
    from .session import Session

#: the environment variable naming the session ``get_execution_environment()`` connects to
SESSION_ENV = "SESSIONCLUSTER_SESSION"

EnvironmentFactory = Callable[["Session"], "StreamExecutionEnvironment"]


class NoCurrentSessionError(LookupError):
    """No session to run a program on: none started or connected, no SESSIONCLUSTER_SESSION."""


class _CurrentHolder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.session: "Session | None" = None
        self.factory: EnvironmentFactory | None = None
        #: connects to a running session by name (``session.connect``)
        self.connect: Callable[[str], "Session"] | None = None
        #: each TableEnvironment gets a catalog of its own (a program under ``sessioncluster run``)
        self.own_catalogs = False


_holder = _CurrentHolder()


def set_current(session: "Session") -> None:
    """Make ``session`` the current one of this process (``start`` and ``connect`` call this)."""
    with _holder.lock:
        _holder.session = session


def clear_current(session: "Session | None" = None) -> None:
    """Forget the current session (only if it is ``session``, when given; ``stop`` calls this)."""
    with _holder.lock:
        if session is None or _holder.session is session:
            _holder.session = None


def current() -> "Session | None":
    """The current session of this process, or None."""
    with _holder.lock:
        return _holder.session


def current_or_connect() -> "Session":
    """The current session, else the one named by ``SESSIONCLUSTER_SESSION`` (connected now and
    made current), else :class:`NoCurrentSessionError` saying how to get one."""
    session = current()
    if session is not None:
        if _alive(session):
            return session
        clear_current(session)  # stopped since: fall back to SESSIONCLUSTER_SESSION
    name = os.environ.get(SESSION_ENV, "").strip()
    if not name:
        raise NoCurrentSessionError(
            "no session cluster to run on: this process started or connected none, and "
            f"{SESSION_ENV} is not set. Start one with 'sessioncluster start --name NAME' and run "
            f"with {SESSION_ENV}=NAME (or 'sessioncluster run --session NAME program.py'), or "
            "call sessioncluster.start()/connect(NAME), or '%flink_session start' in Jupyter.")
    with _holder.lock:
        connect = _holder.connect
    if connect is None:
        raise NoCurrentSessionError(f"{SESSION_ENV}={name}: sessioncluster.client.session is not "
                                    "imported, so no session can be connected")
    try:
        session = connect(name)
    except LookupError as exc:
        raise NoCurrentSessionError(f"{SESSION_ENV}={name}: {exc}. Start it with "
                                    f"'sessioncluster start --name {name}'") from exc
    set_current(session)
    return session


def _alive(session: "Session") -> bool:
    from ..cluster.connection import pid_alive

    info = getattr(session, "info", None)
    return info is None or pid_alive(info.jobmanager_pid)


def set_environment_factory(factory: EnvironmentFactory | None) -> None:
    """Install (or, with None, remove) the factory of the environments
    ``get_execution_environment()`` returns."""
    with _holder.lock:
        _holder.factory = factory


def environment_factory() -> EnvironmentFactory | None:
    """The factory installed by :func:`set_environment_factory`, if any."""
    with _holder.lock:
        return _holder.factory


def set_own_catalogs(own: bool) -> None:
    """Whether each TableEnvironment made from now on has a catalog of its own, as in a Flink
    program (``sessioncluster run`` turns this on), or uses the session's shared catalog."""
    with _holder.lock:
        _holder.own_catalogs = own


def own_catalogs() -> bool:
    """See :func:`set_own_catalogs`."""
    with _holder.lock:
        return _holder.own_catalogs


def set_connect(connect: Callable[[str], "Session"]) -> None:
    """How :func:`current_or_connect` connects to a session by name (``client/session.py``
    installs its ``connect`` when it is imported)."""
    with _holder.lock:
        _holder.connect = connect
