"""The live job widget: status, elapsed, progress, the JobGraph as a Bokeh DAG, subtasks,
accumulators (Histograms as Bokeh bar charts), the user's traceback, and a Cancel button.

>>> client = env.execute_async("word count")      # doctest: +SKIP
>>> client.widget()                                # doctest: +SKIP

Everything shown is pushed: the job's events (``JobStatusChanged``, ``ExecutionStateChanged``,
``AccumulatorsUpdated``) update the view; a ``JobDetails`` snapshot is fetched when the widget
starts, once more after its subscription has surely taken effect, at most once a second while
subtasks change state (records in/out are only in snapshots), and once at the end.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from html import escape
from typing import TYPE_CHECKING, Any, Callable

import cloudpickle
import ipywidgets as widgets
from jupyter_bokeh import BokehModel

from ...client.gateway import DispatcherError, DispatcherGateway, JobManagerGoneError
from ...graph.jobgraph import JobGraph
from ...graph.lifecycle import JobStatus
from ...protocol.messages import (
    ExecutionStateChanged,
    FetchStreamResults,
    JobDetails,
    JobDetailsReply,
    RequestJobDetails,
    StreamResults,
)
from ..html import accumulators_table, error_block, job_header, job_view_html, subtasks_table
from ..models import JobView, is_histogram
from ..snapshot import Publisher, Snapshot, SnapshotDisplay, job_text
from ..streaming_html import latest_results, streaming_panel
from ._feed import POKE, EventSource, Follower
from .bokeh_views import DagFigure, HistogramFigure, load_bokehjs

if TYPE_CHECKING:
    from ...client.jobclient import JobClient

log = logging.getLogger("sessioncluster.jupyter")

#: a second snapshot this long after subscribing covers events sent before the SUB took effect
SETTLE_SECONDS = 0.5
#: at most one snapshot per this many seconds while subtasks change state
REFRESH_SECONDS = 1.0
#: rows of a streaming job's latest results in the widget
LATEST_RESULTS = 10

#: the job widgets that were displayed (``shown_widgets``)
_shown: "weakref.WeakSet[JobWidget]" = weakref.WeakSet()


class _BokehModel(BokehModel):
    """A BokehModel that can be closed twice: jupyter_bokeh's close() is not idempotent, and
    ipywidgets' ``__del__`` closes a widget again, so a replaced (closed) DAG view printed a
    KeyError on stderr, into whichever notebook cell ran when it was collected."""

    def close(self) -> None:
        if self.comm is None:  # closed already
            return
        super().close()

_BAR_STYLE = {JobStatus.FINISHED: "success", JobStatus.FAILED: "danger",
              JobStatus.FAILING: "danger", JobStatus.CANCELED: "warning",
              JobStatus.CANCELLING: "warning"}


class JobWidget(widgets.VBox):
    """The live view of one job, following its events until it ends.

    ``history`` records every change the widget made, as ``(kind, value)`` pairs with kinds
    ``status``, ``progress``, ``vertex_states``, ``accumulators``, ``error``, ``cancel``,
    ``notice`` and ``snapshot`` (the final snapshot was published, with the status it shows);
    ``stopped`` (a ``threading.Event``) is set once the widget stopped following
    the job (it ended, the JobManager is gone, or ``close()``).

    ``events``, ``fetch_details`` and ``jobmanager_alive`` default to the job's session; tests
    pass their own.

    Displayed, its output carries a static snapshot (``text/html`` with the JobGraph as SVG,
    and ``text/plain``) beside the widget view; the snapshot is updated in place when the
    widget stops following the job (see :mod:`sessioncluster.jupyter.snapshot`).
    """

    def __init__(self, client: "JobClient", *, events: EventSource | None = None,
                 fetch_details: Callable[[], JobDetails] | None = None,
                 jobmanager_alive: Callable[[], bool] | None = None,
                 publish: Publisher | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        load_bokehjs()
        self.client = client
        self.job_id = client.job_id
        self.view = JobView(client.job_id, client.job_name)
        self._view_lock = threading.Lock()  # the follower changes the view; a display reads it
        self.history: list[tuple[str, Any]] = []
        self._gateway: DispatcherGateway | None = None
        if fetch_details is None or jobmanager_alive is None:
            self._gateway = DispatcherGateway(client.session.info)
        self._fetch_details = fetch_details or self._fetch_from_dispatcher
        gateway = self._gateway
        self._alive = jobmanager_alive or (
            lambda: gateway is not None and gateway.jobmanager_alive())

        self.header = widgets.HTML(job_header(self.view))
        self.progress = widgets.IntProgress(value=0, min=0, max=1, description="subtasks",
                                            layout=widgets.Layout(width="340px"))
        self.progress_label = widgets.Label("0/0")
        self.cancel_button = widgets.Button(description="Cancel", icon="stop",
                                            button_style="danger", tooltip="cancel this job")
        self.cancel_button.on_click(self._on_cancel)
        # a STREAMING job: stop with a savepoint, its rate, watermark, checkpoints, results
        self.savepoint_button = widgets.Button(description="Stop with savepoint", icon="save",
                                               tooltip="take a savepoint, then stop the job",
                                               layout=widgets.Layout(display="none"))
        self.savepoint_button.on_click(self._on_stop_with_savepoint)
        self.streaming = widgets.HTML("", layout=widgets.Layout(display="none"))
        self.results = widgets.HTML("", layout=widgets.Layout(display="none"))
        self._streaming_info: dict[str, Any] | None = None
        self.notice = widgets.HTML("")
        self.dag_box = widgets.Box()
        self.accumulators = widgets.HTML(accumulators_table({}, final=False))
        self.histograms = widgets.HBox()
        self.error = widgets.HTML("", layout=widgets.Layout(display="none"))
        self.subtasks = widgets.HTML("")
        self.subtask_panel = widgets.Accordion(children=[self.subtasks], titles=("Subtasks",))
        self.children = [
            self.header,
            widgets.HBox([self.progress, self.progress_label, self.cancel_button,
                          self.savepoint_button]),
            self.notice, self.error, self.streaming, self.results, self.dag_box,
            self.accumulators, self.histograms,
            self.subtask_panel,
        ]
        self._dag: DagFigure | None = None
        self._dag_shape: tuple[Any, ...] = ()
        self._histogram_figures: dict[str, HistogramFigure] = {}
        self._started = time.monotonic()
        self._settled = False
        self._dirty = False
        self._final = False
        self._last_refresh = 0.0
        self._notice_text = ""
        self.snapshot = SnapshotDisplay(self, self._snapshot, publish)
        self._follower = Follower(f"sessioncluster-job-{client.job_id[:8]}",
                                  events or client.session.events, client.job_id, self._step)
        self.stopped = self._follower.stopped
        self._follower.start()

    def __repr__(self) -> str:
        return f"<JobWidget {self.view.name!r} {self.job_id} {self.view.status.value}>"

    def _ipython_display_(self) -> None:
        """Display the widget view with its snapshot, under the snapshot's display id."""
        _shown.add(self)
        self.snapshot.show()

    def _snapshot(self) -> Snapshot:
        with self._view_lock:
            html = job_view_html(self.view)
            text = job_text(self.view, self._notice_text)
        if self._notice_text:
            html += f'<div style="color: #a94442;">{escape(self._notice_text)}</div>'
        return {"text/plain": text, "text/html": html}

    # -- user actions -----------------------------------------------------------------------
    def cancel(self) -> None:
        """Cancel the job (what the Cancel button does)."""
        self._on_cancel(self.cancel_button)

    def _on_cancel(self, _button: widgets.Button) -> None:
        if self.view.terminal:
            return
        self.cancel_button.disabled = True
        self.cancel_button.description = "Cancelling…"
        self.history.append(("cancel", self.job_id))
        try:
            self.client.cancel()
        except (DispatcherError, JobManagerGoneError) as exc:
            self._notice(f"cancel failed: {exc}")
            self.cancel_button.disabled = False
            self.cancel_button.description = "Cancel"

    def stop_with_savepoint(self, directory: str | None = None) -> str:
        """Take a savepoint of the STREAMING job, then stop it; its location."""
        location = self.client.stop_with_savepoint(False, directory).result()
        self.history.append(("savepoint", location))
        return location

    def _on_stop_with_savepoint(self, _button: widgets.Button) -> None:
        if self.view.terminal:
            return
        self.savepoint_button.disabled = True
        self.savepoint_button.description = "Taking savepoint…"

        def take() -> None:
            try:
                location = self.stop_with_savepoint()
            except Exception as exc:  # noqa: BLE001 - shown in the widget
                self._notice(f"savepoint failed: {exc}")
                self.savepoint_button.disabled = False
                self.savepoint_button.description = "Stop with savepoint"
                return
            self.notice.value = f'<div>savepoint <code>{escape(location)}</code></div>'

        threading.Thread(target=take, name=f"savepoint-{self.job_id[:8]}", daemon=True).start()

    def close(self) -> None:
        """Stop following the job and close the widget."""
        self._follower.stop()
        super().close()

    # -- following (the follower thread) ----------------------------------------------------
    def _fetch_from_dispatcher(self) -> JobDetails:
        assert self._gateway is not None
        return self._gateway.request(RequestJobDetails(self.job_id), JobDetailsReply,
                                     timeout=10.0).details

    def _refresh(self) -> None:
        details = self._fetch_details()
        with self._view_lock:
            self.view.apply_details(details)
        self._streaming_info = details.streaming
        self._last_refresh = time.monotonic()
        self._dirty = False
        self._final = self.view.terminal

    def _step(self, batch: list[Any]) -> bool:
        """Apply a batch of events, fetch a snapshot when one is due, render; False: done."""
        try:
            go_on = self._advance(batch)
        except (JobManagerGoneError, DispatcherError) as exc:
            self._notice(f"stopped following the job: {exc}")
            go_on = False
        self._render()
        if not go_on:
            self._publish_snapshot()
            if self._gateway is not None:
                self._gateway.close()
        return go_on

    def _publish_snapshot(self) -> None:
        """The final snapshot, in place of the one shown (never fails the follower)."""
        try:
            if self.snapshot.update():
                self.history.append(("snapshot", self.view.status.value))
        except Exception:  # a closed kernel socket must not end the thread with a traceback
            log.exception("could not update the job widget's snapshot")

    def _advance(self, batch: list[Any]) -> bool:
        if self._last_refresh == 0.0:
            self._refresh()  # the first snapshot, right after subscribing
        for msg in batch:
            if msg is POKE:
                self._dirty = True
            else:
                with self._view_lock:
                    changed = self.view.apply_event(msg)
                if changed and isinstance(msg, ExecutionStateChanged):
                    self._dirty = True
        if self.view.terminal:
            if not self._final:
                self._refresh()  # the final records, accumulators and error
            return False
        now = time.monotonic()
        if not self._settled and now - self._started >= SETTLE_SECONDS:
            self._settled = True
            self._refresh()
        elif (self._dirty or self._streaming_info is not None) and \
                now - self._last_refresh >= REFRESH_SECONDS:
            self._refresh()  # a streaming job changes without events: its rate, checkpoints
        if not batch and not self._alive():
            self._notice("the JobManager is gone")
            return False
        return True

    # -- rendering (the follower thread) ----------------------------------------------------
    def _record(self, kind: str, value: Any) -> None:
        last = next((v for k, v in reversed(self.history) if k == kind), None)
        if last != value:
            self.history.append((kind, value))

    def _notice(self, text: str) -> None:
        self.history.append(("notice", text))
        self._notice_text = text
        self.notice.value = f'<div style="color: #a94442;">{escape(text)}</div>'

    def _render(self) -> None:
        view = self.view
        header = job_header(view)
        if self.header.value != header:
            self.header.value = header

        done, total = view.progress
        if self.progress.max != max(total, 1):
            self.progress.max = max(total, 1)
        if self.progress.value != done:
            self.progress.value = done
        self.progress.bar_style = _BAR_STYLE.get(view.status, "")
        self.progress_label.value = f"{done}/{total}"
        if view.terminal and not self.cancel_button.disabled:
            self.cancel_button.disabled = True
            self.cancel_button.button_style = ""  # nothing left to cancel: no red button
            self.cancel_button.icon = ""
        if view.terminal:
            self.cancel_button.description = view.status.value.capitalize()

        if view.job_graph is not None:
            shape = _shape(view.job_graph)
            if self._dag is None or shape != self._dag_shape:  # a SQL job's graph grows
                self._dag, self._dag_shape = DagFigure(view.job_graph), shape
                self._dag.update(view)
                old = self.dag_box.children
                self.dag_box.children = [_BokehModel(self._dag.figure)]
                for child in old:
                    child.close()
            else:
                self._dag.update(view)

        accs = dict(view.accumulators)
        scalars = {k: v for k, v in accs.items() if not is_histogram(v)}
        text = (accumulators_table(scalars, final=view.accumulators_final)
                if scalars or not accs else "")  # histograms alone: only their charts
        if self.accumulators.value != text:
            self.accumulators.value = text
        new_figures = False
        for name, value in sorted(accs.items()):
            if not is_histogram(value):
                continue
            fig = self._histogram_figures.get(name)
            if fig is None:
                fig = self._histogram_figures[name] = HistogramFigure(name)
                new_figures = True
            fig.update(value)
        if new_figures:
            self.histograms.children = [_BokehModel(f.figure)
                                        for f in self._histogram_figures.values()]

        if view.error_text:
            html = error_block(view.error_text)
            if self.error.value != html:
                self.error.value = html
                self.error.layout.display = None

        if self._streaming_info is not None:
            self._render_streaming(self._streaming_info)

        subtasks = subtasks_table(view)
        if self.subtasks.value != subtasks:
            self.subtasks.value = subtasks

        # what was shown, in the order a reader sees it (after the traits were set)
        self._record("status", view.status.value)
        self._record("progress", [done, total])
        if view.job_graph is not None:
            self._record("vertex_states", view.vertex_states())
        self._record("accumulators", accs)
        if view.error_text:
            self._record("error", view.error_text)


    def _render_streaming(self, info: dict[str, Any]) -> None:
        self.savepoint_button.layout.display = None
        if self.view.terminal:
            self.savepoint_button.disabled = True
        panel = streaming_panel(info)
        if self.streaming.value != panel:
            self.streaming.value = panel
            self.streaming.layout.display = None
        latest = self._latest_results()
        if latest is not None:
            html = latest_results(latest)
            if self.results.value != html:
                self.results.value = html
                self.results.layout.display = None
        self._record("checkpoints", info.get("counts", {}).get("completed", 0))

    def _latest_results(self) -> list[Any] | None:
        """The collect sink's latest records (without taking them from the job's iterator)."""
        if self._gateway is None:
            return None
        try:
            reply = self._gateway.request(FetchStreamResults(self.job_id, None, 0, LATEST_RESULTS,
                                                             peek=True), StreamResults, timeout=10.0)
        except DispatcherError:
            return None  # no collect sink, or several
        out = []
        for v in reply.values:
            try:
                out.append(cloudpickle.loads(v))
            except Exception:  # noqa: BLE001 - a print sink's lines are text
                out.append(v.decode("utf-8", "replace"))
        return out


def shown_widgets(job_id: str) -> list[JobWidget]:
    """The job widgets of ``job_id`` that were displayed and still exist."""
    return [w for w in list(_shown) if w.job_id == job_id]


def _shape(graph: JobGraph) -> tuple[Any, ...]:
    return (tuple(v.vertex_id for v in graph.vertices),
            tuple((e.source, e.target) for e in graph.edges))
