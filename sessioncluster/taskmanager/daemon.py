"""Spark's Python daemon, with the TaskManager in front (``spark.python.daemon.module``).

Spark starts this module once per executor. It forks the TaskManager agent (ZeroMQ side) and
then hands over to pyspark's own daemon, which forks one warm worker per task slot. pyspark's
rule: no thread before the fork, so nothing here may create a ZeroMQ context; the agent makes
its own after the fork, and so does each slot worker.
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import sys
import time

IPC_ENV = "SESSIONCLUSTER_TM_IPC"
CONNECTION_ENV = "SESSIONCLUSTER_CONNECTION_FILE"
SLOTS_ENV = "SESSIONCLUSTER_SLOTS"
#: what every slot worker imports (pyspark's worker, our Task), loaded once before the forks
WORKER_MODULES = ("pyspark.worker", "sessioncluster.taskmanager.task")


def executor_id(jvm_pid: int) -> str:
    """The Spark executor id of the JVM that started us ("driver" in ``local`` mode)."""
    import psutil

    try:
        args = psutil.Process(jvm_pid).cmdline()
    except psutil.Error:
        return "driver"
    for i, arg in enumerate(args[:-1]):
        if arg == "--executor-id":
            return args[i + 1]
    m = re.search(r"--executor-id[= ](\S+)", " ".join(args))
    return m.group(1) if m else "driver"


def lock_path(lock_dir: str, jvm_pid: int) -> str:
    return os.path.join(lock_dir, f"tm-jvm-{jvm_pid}.lock")


def claim_executor(jvm_pid: int, ipc: str, lock_dir: str) -> tuple[int | None, str]:
    """Whether this daemon is its executor's first: ``(fd, ipc)`` holding the executor's lock
    when it is, else ``(None, ipc of the agent that holds it)``.

    Spark keeps one Python daemon per worker environment, and a SQL Python UDF's differs from
    an RDD task's (``SPARK_SIMPLIFIED_TRACEBACK``), so one executor JVM may start several
    daemons. An executor is one TaskManager: the first daemon forks its agent, which keeps the
    lock (an ``flock``, released when the agent exits); the others' workers use that agent."""
    path = lock_path(lock_dir, jvm_pid)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None, read_claim(path)
    os.ftruncate(fd, 0)
    os.pwrite(fd, ipc.encode(), 0)
    return fd, ipc


def read_claim(path: str, timeout: float = 5.0) -> str:
    """The ipc address the executor's first daemon wrote (it writes just after locking)."""
    deadline = time.monotonic() + timeout
    while True:
        with open(path, encoding="utf-8") as f:
            ipc = f.read()
        if ipc.startswith("ipc://") or time.monotonic() > deadline:
            return ipc
        time.sleep(0.01)


def start_agent() -> None:
    """Fork the TaskManager agent, if this executor belongs to a session cluster and has none."""
    connection_file = os.environ.get(CONNECTION_ENV)
    if not connection_file:
        return
    from ..cluster.connection import runtime_dir

    daemon_pid, jvm_pid = os.getpid(), os.getppid()
    lock_fd, os.environ[IPC_ENV] = claim_executor(
        jvm_pid, f"ipc://{runtime_dir()}/tm-{daemon_pid}.ipc", str(runtime_dir()))
    if lock_fd is None:
        return
    pid = os.fork()
    if pid != 0:
        os.close(lock_fd)  # the agent's copy keeps the lock; the slot workers get none
        return
    # The agent: stdout is Spark's pipe for the daemon's port, stdin its kill channel.
    code = 0
    try:
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(2, 1)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        from .agent import run_agent

        run_agent(connection_file, os.environ[IPC_ENV], daemon_pid=daemon_pid, jvm_pid=jvm_pid,
                  tm_id=executor_id(jvm_pid), slots=int(os.environ.get(SLOTS_ENV, "1")))
        os.unlink(lock_path(str(runtime_dir()), jvm_pid))
    except BaseException as exc:  # noqa: BLE001 - the agent must never return into the daemon
        print(f"sessioncluster TaskManager agent died: {exc!r}", file=sys.stderr)
        code = 1
    os._exit(code)


def preload_for_workers() -> None:
    """Import what every slot worker runs, then freeze it out of the cycle collector.

    pyspark's daemon runs ``gc.collect()`` after each task of a reused worker; without the
    freeze each collection walks every object of these modules again (20 ms a task, 50 ms once
    pyarrow and pandas are in). The forked workers also keep the imported pages shared, as
    ``gc.freeze``'s documentation advises before a fork."""
    import gc
    import importlib

    for name in WORKER_MODULES:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()


def main() -> None:
    start_agent()
    preload_for_workers()
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
