"""Spark's Python daemon, with the TaskManager in front (``spark.python.daemon.module``).

Spark starts this module once per executor. It forks the TaskManager agent (ZeroMQ side) and
then hands over to pyspark's own daemon, which forks one warm worker per task slot. pyspark's
rule: no thread before the fork, so nothing here may create a ZeroMQ context; the agent makes
its own after the fork, and so does each slot worker.
"""

from __future__ import annotations

import os
import re
import signal
import sys

IPC_ENV = "SESSIONCLUSTER_TM_IPC"
CONNECTION_ENV = "SESSIONCLUSTER_CONNECTION_FILE"
SLOTS_ENV = "SESSIONCLUSTER_SLOTS"


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


def start_agent() -> None:
    """Fork the TaskManager agent, if this executor belongs to a session cluster."""
    connection_file = os.environ.get(CONNECTION_ENV)
    if not connection_file:
        return
    from ..cluster.connection import runtime_dir

    daemon_pid, jvm_pid = os.getpid(), os.getppid()
    os.environ[IPC_ENV] = f"ipc://{runtime_dir()}/tm-{daemon_pid}.ipc"
    pid = os.fork()
    if pid != 0:
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
    except BaseException as exc:  # noqa: BLE001 - the agent must never return into the daemon
        print(f"sessioncluster TaskManager agent died: {exc!r}", file=sys.stderr)
        code = 1
    os._exit(code)


def main() -> None:
    start_agent()
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
