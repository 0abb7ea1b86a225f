"""Application mode (Flink's ``run-application``): a cluster started for one program, whose
``main`` runs on the JobManager's side, not in the client.

The client uploads the program (a blob, by its SHA-256) with :class:`RunApplication`; the
JobManager writes it into the session directory and runs it in a child process
(``python -m sessioncluster.client.appmain``), which uses the cluster as its current session,
writes its stdout and stderr to ``application.log`` in the session directory, and ends when its
parent does. When ``main`` returns the application is FINISHED, when it raises (or exits
non-zero) FAILED with its traceback kept; either way the cluster then shuts down. Its outcome
stays in ``application.json`` of the session directory after the cluster has gone.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from ..cluster.appstatus import LOG_FILE, write_status
from ..cluster.files import write_private
from ..protocol.messages import ApplicationState, ApplicationStatus, RunApplication
from ..spark.driver import executor_python_path
from .blobserver import BlobServer

log = logging.getLogger("sessioncluster.application")

#: how long a ready application cluster waits for its program before it shuts down
SUBMIT_TIMEOUT = 120.0
#: how long a stopped application's main has to end after SIGTERM before SIGKILL
KILL_GRACE = 5.0


class ApplicationError(ValueError):
    """A program that cannot be run as this cluster's application."""


def _traceback_of(log_path: Path, limit: int = 64 * 1024) -> str:
    """The program's last traceback in its log (or the log's tail if there is none)."""
    try:
        with open(log_path, "rb") as f:
            f.seek(max(0, os.path.getsize(log_path) - limit))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    at = text.rfind("Traceback (most recent call last):")
    return text[at:].strip() if at >= 0 else "\n".join(text.strip().splitlines()[-20:])


class ApplicationRunner:
    """Runs one application's ``main`` in a child of the JobManager and reports its end."""

    def __init__(self, session_name: str, session_dir: Path, blobs: BlobServer,
                 loop: asyncio.AbstractEventLoop, job_ids: Callable[[], list[str]],
                 on_end: Callable[[ApplicationStatus], None]) -> None:
        self.session_name = session_name
        self.dir = session_dir
        self.blobs = blobs
        self.loop = loop
        self.job_ids = job_ids
        self.on_end = on_end
        self.status: ApplicationStatus | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._cancelled = False
        self._task: asyncio.Future[None] | None = None

    def start(self, msg: RunApplication) -> ApplicationStatus:
        """Store the uploaded program and start its ``main``; raises ApplicationError if it
        cannot be run, or if this cluster runs an application already."""
        if self.status is not None:
            raise ApplicationError(f"cluster '{self.session_name}' runs an application already "
                                   f"({self.status.program})")
        name = os.path.basename(msg.file_name)
        if not name or name != msg.file_name or not re.fullmatch(r"[\w.-]+", name):
            raise ApplicationError(f"bad program file name {msg.file_name!r}")
        self.blobs.put(msg.blob_key, msg.program)  # ValueError if the key is not its SHA-256
        program = self.dir / "application" / name
        write_private(program, msg.program)
        log_path = self.dir / LOG_FILE
        cwd = msg.cwd if msg.cwd and os.path.isdir(msg.cwd) else str(program.parent)
        cmd = [sys.executable, "-m", "sessioncluster.client.appmain", "--session",
               self.session_name, "--parent", str(os.getpid()), str(program), *msg.args]
        # main imports the JobManager's own sessioncluster, whatever its working directory
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": executor_python_path()}
        env.pop("SESSIONCLUSTER_KEY", None)  # the child reads the connection file
        with open(log_path, "ab") as out:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                         cwd=cwd, env=env, close_fds=True)
        self.status = ApplicationStatus(name, list(msg.args), ApplicationState.RUNNING,
                                        self.proc.pid, str(log_path), time.time())
        self._write()
        log.info("application %s started in pid %d", name, self.proc.pid)
        self._task = asyncio.ensure_future(self._wait(), loop=self.loop)
        return self.status

    async def _wait(self) -> None:
        assert self.proc is not None and self.status is not None
        code = await self.loop.run_in_executor(None, self.proc.wait)
        status = self.status
        status.exit_code, status.end_time = code, time.time()
        status.job_ids = self.job_ids()
        if self._cancelled:
            status.state = ApplicationState.CANCELED
            status.error = f"the cluster '{self.session_name}' was stopped while main ran"
        elif code == 0:
            status.state = ApplicationState.FINISHED
        else:
            status.state = ApplicationState.FAILED
            status.error = _traceback_of(Path(status.log)) or f"main exited with code {code}"
        self._write()
        log.info("application %s %s (exit code %s)", status.program, status.state.value, code)
        self.on_end(status)

    async def stop(self) -> None:
        """Stop ``main`` if it still runs (the cluster is stopping): SIGTERM, then SIGKILL
        after a grace; returns once its end is recorded."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            self._cancelled = True
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(asyncio.shield(self._task), KILL_GRACE)  # type: ignore[arg-type]
            except asyncio.TimeoutError:
                proc.kill()
        if self._task is not None:
            await self._task

    def _write(self) -> None:
        assert self.status is not None
        write_status(self.dir, self.status)
