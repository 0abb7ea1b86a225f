"""sessioncluster's JupyterLab extension: a sidebar of the session clusters in
``$SESSIONCLUSTER_HOME`` and a server extension that lists them and proxies each one's REST API
(and dashboard) behind Jupyter's own authentication, adding the session's token server-side."""

from __future__ import annotations

from typing import Any

from .handlers import setup_handlers

__version__ = "0.1.0"


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "sessioncluster-jupyterlab"}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "sessioncluster_jupyterlab"}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    setup_handlers(server_app.web_app)
    server_app.log.info("sessioncluster_jupyterlab: serving the session clusters of this server")
