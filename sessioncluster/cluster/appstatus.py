"""An application cluster's outcome on disk: ``application.json`` in its session directory,
written by the JobManager while the application runs and when it ends, read by the client and
the CLI (also after the cluster has gone)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ..protocol.messages import ApplicationState, ApplicationStatus
from .files import write_private

#: the application cluster's file of outcome, in its session directory
STATUS_FILE = "application.json"
#: the application's stdout and stderr, in its session directory
LOG_FILE = "application.log"


def read_status(session_dir: Path) -> ApplicationStatus | None:
    """The application of a session directory (running or ended), if it ran one."""
    try:
        raw = json.loads((session_dir / STATUS_FILE).read_text())
        raw["state"] = ApplicationState(raw["state"])
        return ApplicationStatus(**raw)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def write_status(session_dir: Path, status: ApplicationStatus) -> None:
    """Record ``status`` as the session directory's application (0600, atomically)."""
    write_private(session_dir / STATUS_FILE,
                  json.dumps(dataclasses.asdict(status), indent=1, default=str))


def ended_applications(sessions: Path) -> list[str]:
    """The names of the application clusters under ``sessions`` that have ended (their
    outcome is kept, their connection file gone)."""
    if not sessions.exists():
        return []
    return sorted(p.parent.name for p in sessions.glob(f"*/{STATUS_FILE}")
                  if not (p.parent / "connection.json").exists())
