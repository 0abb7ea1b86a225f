"""The process that runs an application cluster's ``main`` (a child of the JobManager):
``python -m sessioncluster.client.appmain --session NAME --parent PID program.py [args]``.

It runs the program as ``sessioncluster run`` does, with the cluster as its current session,
and ends with its parent: if the JobManager goes, so does it.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from types import FrameType


def _watch_parent(pid: int) -> None:
    """End this process as soon as the JobManager ``pid`` is gone (even if killed -9)."""
    while os.getppid() == pid:
        time.sleep(0.5)
    os._exit(143)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sessioncluster.client.appmain")
    p.add_argument("--session", required=True)
    p.add_argument("--parent", type=int, required=True)
    p.add_argument("program")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    threading.Thread(target=_watch_parent, args=(a.parent,), name="watch-jobmanager",
                     daemon=True).start()
    signal.signal(signal.SIGTERM, _interrupt)  # the cluster stops: end main like Ctrl-C would
    from .run import ProgramError, run_program

    try:
        return run_program(a.program, a.args, a.session)
    except ProgramError as exc:
        print(f"sessioncluster application: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
