"""A client of a session's REST API (Flink's paths and JSON), as Flink's CLI uses its own.

Example::

    rest = RestClient.of(sessioncluster.connect("dev"))
    rest.get("/jobs/overview")["jobs"]
    rest.cancel(job_id)
    location = rest.savepoint(job_id, "/tmp/savepoints", stop=True)
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from ..cluster.connection import ConnectionInfo, rest_token


class RestError(RuntimeError):
    """An error answer of the REST API: its HTTP status and Flink's ``errors`` list."""

    def __init__(self, status: int, errors: list[str]) -> None:
        super().__init__(f"HTTP {status}: {'; '.join(errors) or 'no error text'}")
        self.status = status
        self.errors = errors


@dataclass(frozen=True, slots=True)
class RestClient:
    """GET/PATCH/POST on one session's REST API with its bearer token."""

    url: str
    token: str
    timeout: float = 30.0

    @classmethod
    def of(cls, session: Any) -> "RestClient":
        """The REST client of a :class:`~sessioncluster.Session` (or its ConnectionInfo)."""
        info: ConnectionInfo = getattr(session, "info", session)
        if not info.rest:
            raise RuntimeError(f"session '{info.name}' serves no REST API (started with it disabled?)")
        return cls(info.rest.rstrip("/"), rest_token(info.key))

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """The decoded JSON answer; :class:`RestError` for an error status, ConnectionError when
        the JobManager does not answer."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {self.token}",
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as reply:
                text = reply.read()
        except urllib.error.HTTPError as exc:
            try:
                errors = json.loads(exc.read()).get("errors", [])
            except ValueError:
                errors = [exc.reason]
            raise RestError(exc.code, [str(e) for e in errors]) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ConnectionError(f"the REST API at {self.url} does not answer: {exc}") from None
        return json.loads(text) if text else {}

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def jobs(self) -> list[dict[str, Any]]:
        """``/jobs/overview``: every job, newest first."""
        jobs = self.get("/jobs/overview")["jobs"]
        return sorted(jobs, key=lambda j: j.get("start-time", 0), reverse=True)

    def cancel(self, job_id: str) -> None:
        """``PATCH /jobs/:id?mode=cancel``."""
        self.request("PATCH", f"/jobs/{job_id}?mode=cancel")

    def savepoint(self, job_id: str, directory: str | None = None, stop: bool = False,
                  poll: float = 0.2) -> str:
        """Trigger a savepoint (``POST /jobs/:id/savepoints``, or ``/stop`` with ``stop``), wait
        for it and return its location; :class:`RestError` when it fails."""
        if stop:
            body: dict[str, Any] = {"drain": False}
            if directory:
                body["targetDirectory"] = directory
            trigger = self.request("POST", f"/jobs/{job_id}/stop", body)
        else:
            body = {"cancel-job": False}
            if directory:
                body["target-directory"] = directory
            trigger = self.request("POST", f"/jobs/{job_id}/savepoints", body)
        request_id = trigger["request-id"]
        while True:
            answer = self.get(f"/jobs/{job_id}/savepoints/{request_id}")
            if answer["status"]["id"] == "COMPLETED":
                operation = answer.get("operation") or {}
                if "location" in operation:
                    return str(operation["location"])
                cause = operation.get("failure-cause") or {}
                raise RestError(200, [cause.get("stack-trace") or cause.get("class") or "failed"])
            time.sleep(poll)
