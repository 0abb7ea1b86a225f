"""The server extension's handlers.

* ``GET  <base>/sessioncluster/api/sessions``: every session of ``$SESSIONCLUSTER_HOME`` with its
  TaskManagers and jobs (read from each JobManager's REST API here, on the server).
* ``GET|PATCH|POST <base>/sessioncluster/proxy/<name>/<path>``: ``<path>`` of that session's
  REST API, or its dashboard (``/`` and ``web/...``), with ``Authorization: Bearer <token>``
  added here. The key and the token never reach the browser; the browser is authenticated by
  Jupyter (and Jupyter checks its XSRF token on PATCH and POST).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

import tornado.httpclient
import tornado.web
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.utils import url_path_join

from sessioncluster.cluster.connection import ConnectionInfo, home, pid_alive, rest_token

#: how long a request to a JobManager may take before the session counts as unreachable
REQUEST_TIMEOUT_S = 10.0
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: the REST paths and the dashboard's files: no "..", no scheme or host, no backslash
_PATH = re.compile(r"^(?:[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*)?$")
#: response headers passed back to the browser
_PASSED_HEADERS = ("Content-Type", "Cache-Control", "Location")


class SessionGone(Exception):
    """The session's JobManager is not running (or does not answer)."""


def _connection(name: str) -> ConnectionInfo:
    if not _NAME.match(name):
        raise tornado.web.HTTPError(404, f"no session {name!r}")
    path = home() / "sessions" / name / "connection.json"
    try:
        return ConnectionInfo.read(path)
    except FileNotFoundError:
        raise tornado.web.HTTPError(404, f"no session {name!r} in {home()}") from None


async def _rest(info: ConnectionInfo, path: str, method: str = "GET", body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tornado.httpclient.HTTPResponse:
    """One request to the session's REST API, with its token; SessionGone when it cannot be had."""
    if not info.rest or not pid_alive(info.jobmanager_pid):
        raise SessionGone(f"session {info.name}: JobManager is not running")
    request = tornado.httpclient.HTTPRequest(
        f"{info.rest}/{path}", method=method, body=body if method in ("PATCH", "POST") else None,
        headers={**(headers or {}), "Authorization": f"Bearer {rest_token(info.key)}"},
        request_timeout=REQUEST_TIMEOUT_S, follow_redirects=False, allow_nonstandard_methods=True)
    try:
        return await tornado.httpclient.AsyncHTTPClient().fetch(request, raise_error=False)
    except OSError as exc:  # refused, reset, timed out
        raise SessionGone(f"session {info.name}: JobManager does not answer ({exc})") from exc


async def _session_row(name: str) -> dict[str, Any]:
    row: dict[str, Any] = {"name": name, "alive": False, "error": None, "taskmanagers": [], "jobs": []}
    try:
        info = _connection(name)
        tms, jobs = await asyncio.gather(_rest(info, "taskmanagers"), _rest(info, "jobs/overview"))
        if tms.code != 200 or jobs.code != 200:
            raise SessionGone(f"session {name}: the REST API answered {tms.code}/{jobs.code}")
    except SessionGone as exc:
        row["error"] = str(exc)
        return row
    except tornado.web.HTTPError as exc:
        row["error"] = exc.log_message
        return row
    now = time.time()
    row["alive"] = True
    row["taskmanagers"] = [
        {"id": tm["id"], "slots": tm["slotsNumber"], "slotsUsed": tm["slotsNumber"] - tm["freeSlots"],
         "heartbeatAgo": max(0.0, now - tm["timeSinceLastHeartbeat"] / 1000),
         "state": tm.get("state", "REGISTERED")}
        for tm in json.loads(tms.body)["taskmanagers"]]
    overview = json.loads(jobs.body)["jobs"]
    overview.sort(key=lambda j: j["start-time"], reverse=True)
    row["jobs"] = [{"jid": j["jid"], "name": j["name"], "state": j["state"],
                    "finished": j["tasks"].get("finished", 0), "total": j["tasks"]["total"],
                    "duration": j["duration"]} for j in overview]
    return row


class SessionsHandler(APIHandler):
    """``GET sessioncluster/api/sessions``."""

    @tornado.web.authenticated
    async def get(self) -> None:
        root = home() / "sessions"
        names = sorted(p.parent.name for p in root.glob("*/connection.json")) if root.is_dir() else []
        rows = await asyncio.gather(*(_session_row(n) for n in names))
        self.finish(json.dumps({"home": str(home()), "sessions": rows}))


class ProxyHandler(JupyterHandler):
    """``sessioncluster/proxy/<name>/<path>``: the session's REST API and dashboard."""

    def _error(self, status: int, text: str) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(json.dumps({"errors": [text]}))

    async def _forward(self, name: str, path: str) -> None:
        if not _PATH.match(path) or ".." in path.split("/"):
            self._error(400, f"not a path of the session's REST API: {path!r}")
            return
        try:
            info = _connection(name)
        except tornado.web.HTTPError as exc:
            self._error(exc.status_code, exc.log_message or "not found")
            return
        query = self.request.query
        headers = {k: v for k, v in self.request.headers.items()
                   if k in ("Accept", "Content-Type")}
        try:
            resp = await _rest(info, path + (f"?{query}" if query else ""), self.request.method or "GET",
                               self.request.body, headers)
        except SessionGone as exc:
            self._error(503, str(exc))
            return
        self.set_status(resp.code)
        for header in _PASSED_HEADERS:
            if header in resp.headers:
                self.set_header(header, resp.headers[header])
        self.finish(resp.body or b"")

    @tornado.web.authenticated
    async def get(self, name: str, path: str) -> None:
        await self._forward(name, path)

    @tornado.web.authenticated
    async def patch(self, name: str, path: str) -> None:
        await self._forward(name, path)

    @tornado.web.authenticated
    async def post(self, name: str, path: str) -> None:
        await self._forward(name, path)


class ProxyRootHandler(JupyterHandler):
    """``sessioncluster/proxy/<name>`` → ``.../<name>/`` (the dashboard's relative URLs need it)."""

    @tornado.web.authenticated
    def get(self, name: str) -> None:
        self.redirect(f"{name}/")


def setup_handlers(web_app: Any) -> None:
    base = url_path_join(web_app.settings["base_url"], "sessioncluster")
    web_app.add_handlers(".*$", [
        (url_path_join(base, "api", "sessions"), SessionsHandler),
        (url_path_join(base, "proxy", r"(?P<name>[^/]+)") + "/(?P<path>.*)", ProxyHandler),
        (url_path_join(base, "proxy", r"(?P<name>[^/]+)"), ProxyRootHandler),
    ])

