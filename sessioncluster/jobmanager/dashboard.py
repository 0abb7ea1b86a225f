"""The web dashboard: static pages at ``/`` that read the REST API and update live.

The pages hold no data, so they are served without authentication; every API path they call
needs the token. Opening ``/?token=<REST token>`` (the link ``sessioncluster dashboard NAME``
prints) puts the token in an HttpOnly, SameSite=Strict cookie and redirects to ``./``, so the
token leaves the address bar and the browser's history. The pages call the API by relative URLs,
so the same files work behind a proxy under any prefix (the JupyterLab extension's).
"""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Any

import tornado.web

#: the dashboard's cookie, holding the REST token
TOKEN_COOKIE = "sessioncluster-token"
#: the header a cookie-authorised PATCH or POST must carry (no cross-site form can set it)
REQUEST_HEADER = "X-Sessioncluster-Request"
#: index.html, app.js and style.css
WEB_DIR = Path(__file__).with_name("web")


class DashboardHandler(tornado.web.RequestHandler):
    """``GET /``: the dashboard's page; ``/?token=...`` logs the browser in first."""

    token: str

    def initialize(self, token: str) -> None:
        self.token = token

    def check_xsrf_cookie(self) -> None:
        """GET only: nothing to protect."""

    def get(self) -> None:
        given = self.get_query_argument("token", None)
        if given is not None:
            if not hmac.compare_digest(given, self.token):
                self.set_status(401)
                self.set_header("Content-Type", "text/plain; charset=UTF-8")
                self.finish("Unauthorized: this link's token is not the session's (a session "
                            "started again has a new key: ask `sessioncluster dashboard NAME`)")
                return
            self.set_cookie(TOKEN_COOKIE, self.token, path="/", httponly=True, samesite="Strict")
            self.redirect("./")
            return
        self.set_header("Content-Type", "text/html; charset=UTF-8")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Frame-Options", "SAMEORIGIN")
        self.finish((WEB_DIR / "index.html").read_bytes())


class WebFileHandler(tornado.web.StaticFileHandler):
    """The dashboard's scripts and styles (revalidated, so a new version shows at once)."""

    def set_extra_headers(self, path: str) -> None:
        self.set_header("Cache-Control", "no-cache")


def dashboard_routes(token: str) -> list[tuple[str, type, dict[str, Any]]]:
    """The dashboard's paths, ahead of the API's."""
    return [(r"/", DashboardHandler, {"token": token}),
            (r"/web/(app\.js|style\.css)", WebFileHandler, {"path": str(WEB_DIR)})]
