"""The live cluster widget: the JobManager's endpoint, every TaskManager (id, host, pid, slots
used/total, heartbeat age, library-cache entries), running and recent jobs.

>>> from sessioncluster.jupyter import ClusterWidget
>>> ClusterWidget(session)                     # doctest: +SKIP

``TaskManagerChanged`` (registered, lost) and ``JobStatusChanged`` events on topic ``cluster``
update it as they arrive; each batch of them also brings a fresh ``ClusterOverview`` (at most
one a second) for slot use, heartbeats and library caches. Refresh fetches one at once.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

import ipywidgets as widgets

from ...client.gateway import DispatcherError, DispatcherGateway, JobManagerGoneError
from ...protocol.messages import (
    ClusterOverview,
    JobStatusChanged,
    RequestOverview,
    TaskManagerChanged,
)
from ..html import cluster_view_html
from ..models import ClusterView
from ..snapshot import Publisher, Snapshot, SnapshotDisplay, cluster_text
from ._feed import POKE, EventSource, Follower

if TYPE_CHECKING:
    from ...client.session import Session

log = logging.getLogger("sessioncluster.jupyter")

REFRESH_SECONDS = 1.0


class ClusterWidget(widgets.VBox):
    """The live view of one session cluster, until ``close()`` or until its JobManager is gone.

    ``history`` records ``(kind, value)`` pairs: ``taskmanager`` ``(tm_id, change)``, ``job``
    ``(job_id, status)``, ``overview`` (the number of TaskManagers), ``stopped`` and
    ``snapshot`` (a new snapshot was published in place, with its text).

    Displayed, its output carries a static snapshot (``text/html``, ``text/plain``) beside the
    widget view, updated in place whenever what it shows changes (a TaskManager registers or
    is lost, a job starts or ends, the session stops).
    """

    def __init__(self, session: "Session", *, events: EventSource | None = None,
                 fetch_overview: Callable[[], ClusterOverview] | None = None,
                 jobmanager_alive: Callable[[], bool] | None = None,
                 publish: Publisher | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.session = session
        self.view = ClusterView(session.name, dispatcher=session.info.dispatcher,
                                jobmanager_pid=session.info.jobmanager_pid)
        self._view_lock = threading.Lock()  # the follower changes the view; a display reads it
        self.history: list[tuple[str, Any]] = []
        self._gateway: DispatcherGateway | None = None
        if fetch_overview is None or jobmanager_alive is None:
            self._gateway = DispatcherGateway(session.info)
        self._fetch_overview = fetch_overview or self._fetch_from_dispatcher
        gateway = self._gateway
        self._alive = jobmanager_alive or (
            lambda: gateway is not None and gateway.jobmanager_alive())
        self.body = widgets.HTML(cluster_view_html(self.view))
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh",
                                             tooltip="fetch a fresh overview now")
        self.refresh_button.on_click(lambda _b: self.refresh())
        self.children = [self.body, self.refresh_button]
        self._dirty = True
        self._last_refresh = 0.0
        self.snapshot = SnapshotDisplay(self, self._snapshot, publish)
        self._follower = Follower(f"sessioncluster-cluster-{session.name}",
                                  events or session.events, "cluster", self._step)
        self.stopped = self._follower.stopped
        self._follower.start()

    def __repr__(self) -> str:
        state = "stopped" if self.view.stopped else f"{len(self.view.taskmanagers)} TaskManagers"
        return f"<ClusterWidget '{self.view.name}' {state}>"

    def _ipython_display_(self) -> None:
        """Display the widget view with its snapshot, under the snapshot's display id."""
        self.snapshot.show()

    def _snapshot(self) -> Snapshot:
        with self._view_lock:
            return {"text/plain": cluster_text(self.view),
                    "text/html": cluster_view_html(self.view)}

    def refresh(self) -> None:
        """Fetch a fresh ClusterOverview now (on the widget's thread)."""
        self._follower.poke()

    def stop_following(self) -> None:
        """Stop the live updates; the widget keeps showing its last state."""
        self._follower.stop()

    def close(self) -> None:
        """Stop following the cluster and close the widget."""
        self._follower.stop()
        super().close()

    def mark_stopped(self) -> None:
        """The session was stopped (by ``%flink_session stop``): show it and stop following."""
        self._mark_stopped()
        if self.stopped.is_set():
            self._render()  # the follower has ended already
        else:
            self._follower.poke()  # it renders and ends

    def _mark_stopped(self) -> None:
        if not self.view.stopped:
            self.view.stopped = True
            self.history.append(("stopped", True))

    def _fetch_from_dispatcher(self) -> ClusterOverview:
        assert self._gateway is not None
        return self._gateway.request(RequestOverview(), ClusterOverview, timeout=10.0)

    def _step(self, batch: list[Any]) -> bool:
        go_on = True
        force = False
        for msg in batch:
            if msg is POKE:
                force = True
                continue
            with self._view_lock:
                changed = self.view.apply_event(msg)
            if changed:
                self._dirty = True
                if isinstance(msg, TaskManagerChanged):
                    self.history.append(("taskmanager", (msg.tm_id, msg.change)))
                elif isinstance(msg, JobStatusChanged):
                    self.history.append(("job", (msg.job_id, msg.status.value)))
        try:
            if self.view.stopped:
                raise JobManagerGoneError("the session was stopped")
            if force or (self._dirty and time.monotonic() - self._last_refresh >= REFRESH_SECONDS):
                overview = self._fetch_overview()
                with self._view_lock:
                    self.view.apply_overview(overview)
                self.history.append(("overview", len(self.view.taskmanagers)))
                self._last_refresh = time.monotonic()
                self._dirty = False
            elif not batch and not self._alive():
                raise JobManagerGoneError("the JobManager is gone")
        except (JobManagerGoneError, DispatcherError):
            self._mark_stopped()
            go_on = False
        self._render()
        if not go_on and self._gateway is not None:
            self._gateway.close()
        return go_on

    def _render(self) -> None:
        html = cluster_view_html(self.view)
        if self.body.value != html:
            self.body.value = html
        self.refresh_button.disabled = self.view.stopped
        try:
            if self.snapshot.update():
                self.history.append(("snapshot", cluster_text(self.view)))
        except Exception:  # a closed kernel socket must not end the thread with a traceback
            log.exception("could not update the cluster widget's snapshot")
