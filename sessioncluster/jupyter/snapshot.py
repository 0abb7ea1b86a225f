"""Static snapshots beside a live widget's view, updated in place.

A live widget's output is one bundle: the widget view (``application/vnd.jupyter.widget-view+json``)
plus a ``text/html`` and a ``text/plain`` snapshot of what it shows, published with a display id.
A front end with the widget manager and the widget's state renders the live view; GitHub,
nbviewer, ``jupyter nbconvert --to html`` and a notebook opened without its kernel render the
richest other type, the HTML snapshot. When the job ends (or the cluster changes) the widget's
thread publishes ``update_display_data`` with the same display id and a new snapshot (the widget
view unchanged), so a saved notebook holds the final state.

Where an update lands. A display update is routed by its parent header: JupyterLab keeps the
future of each executed cell and also routes updates by display id; nbclient (``nbconvert
--execute``) and nbval only read the messages of the cell they are executing and look the display
id up across the notebook. So an update is sent with the parent header of each cell that showed
the widget (captured at display time: the widget's thread has no cell of its own), and once more
with the kernel's current parent header when another cell is running by then.
"""

from __future__ import annotations

import re
import threading
import uuid
from typing import Any, Callable

from ..graph.lifecycle import ExecutionState
from .html import format_value
from .models import ClusterView, JobView, is_histogram

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

#: ``publish(data, display_id, parent_header or None, update)``
Publisher = Callable[[dict[str, Any], str, "dict[str, Any] | None", bool], None]
#: the ``text/plain`` and ``text/html`` of a snapshot
Snapshot = dict[str, str]


def _display_publisher() -> Any:
    from IPython import get_ipython

    shell = get_ipython()
    return getattr(shell, "display_pub", None)


def current_parent() -> dict[str, Any] | None:
    """The parent header outputs of this thread go to now (ipykernel), or None elsewhere."""
    header = getattr(_display_publisher(), "parent_header", None)
    return dict(header) if isinstance(header, dict) and header.get("msg_id") else None


def ipython_publish(data: dict[str, Any], display_id: str, parent: dict[str, Any] | None,
                    update: bool) -> None:
    """Publish through IPython's display publisher, as a reply to ``parent`` when given (the
    parent is set for this thread only: ipykernel's ``set_thread_parent``)."""
    from IPython.display import publish_display_data

    pub = _display_publisher()
    set_parent = getattr(pub, "set_thread_parent", None)
    token = set_parent(parent) if parent is not None and set_parent is not None else None
    try:
        publish_display_data(data, metadata={}, transient={"display_id": display_id},
                             update=update)
    finally:
        if token is not None:
            pub.reset_thread_parent(token)


class SnapshotDisplay:
    """The output of one live widget: widget view + snapshot under one display id.

    ``show()`` publishes it (``display_data``) and remembers the cell it went to; ``update()``
    publishes ``update_display_data`` when the snapshot changed. ``sent`` lists what was
    published, as ``(kind, snapshot)`` pairs with kinds ``display`` and ``update``.
    """

    def __init__(self, widget: Any, render: Callable[[], Snapshot],
                 publish: Publisher | None = None,
                 parent: Callable[[], "dict[str, Any] | None"] | None = None) -> None:
        self._widget = widget
        self._render = render
        self._publish = publish or ipython_publish
        self._parent = parent or current_parent
        self.display_id = uuid.uuid4().hex
        self.sent: list[tuple[str, Snapshot]] = []
        self._parents: list[dict[str, Any] | None] = []
        self._last: Snapshot | None = None
        self._lock = threading.Lock()

    @property
    def shown(self) -> bool:
        return bool(self._parents)

    def _bundle(self, snapshot: Snapshot) -> dict[str, Any]:
        data = {k: v for k, v in self._widget._repr_mimebundle_().items() if k == WIDGET_VIEW}
        return {**data, **snapshot}

    def show(self) -> None:
        """Display the widget with its current snapshot (in the calling cell)."""
        with self._lock:
            parent = self._parent()
            if all(_msg_id(p) != _msg_id(parent) for p in self._parents) or parent is None:
                self._parents.append(parent)
            snapshot = self._render()
            self._last = snapshot
            self._publish(self._bundle(snapshot), self.display_id, None, False)
            self.sent.append(("display", snapshot))

    def update(self) -> bool:
        """Publish the current snapshot in place if it changed; True when it did."""
        with self._lock:
            if not self._parents:
                return False  # never displayed (e.g. a child of another widget)
            snapshot = self._render()
            if self._last is not None and _masked(snapshot) == _masked(self._last):
                return False  # nothing but a heartbeat age or a time
            self._last = snapshot
            data = self._bundle(snapshot)
            targets = list(self._parents)
            now = self._parent()
            if now is not None and all(_msg_id(p) != _msg_id(now) for p in targets):
                targets.append(None)  # the running cell's (see the module's docstring)
            for parent in targets:
                self._publish(data, self.display_id, parent, True)
            self.sent.append(("update", snapshot))
            return True


_VOLATILE = re.compile(r'<span class="sc-volatile">[^<]*</span>')


def _masked(snapshot: Snapshot) -> Snapshot:
    return {k: _VOLATILE.sub("", v) for k, v in snapshot.items()}


def _msg_id(header: dict[str, Any] | None) -> Any:
    return None if header is None else header.get("msg_id")


# -- the text/plain snapshots ------------------------------------------------------------------

def job_text(view: JobView, notice: str = "") -> str:
    """A job as text, without what differs between two runs of the same program (durations,
    the TaskManager and slot of each subtask)."""
    done, total = view.progress
    lines = [f"Job {view.name!r} ({view.job_id}): {view.status.value}"
             + (f", {done}/{total} subtasks finished" if total else "")]
    for v in view.vertices.values():
        records = (f", {v.records_in:,} records in, {v.records_out:,} out"
                   if v.state is ExecutionState.FINISHED else "")
        lines.append(f"  {v.name} (parallelism {v.parallelism}): {v.state.value}{records}")
    if view.accumulators:
        lines.append("accumulators" + (":" if view.accumulators_final else " (live):"))
        for name in sorted(view.accumulators):
            value = view.accumulators[name]
            text = (", ".join(f"{k}: {value[k]}" for k in sorted(value)) if is_histogram(value)
                    else format_value(value))
            lines.append(f"  {name}: {format_value(text)}")
    if view.error_text:
        last = view.error_text.strip().splitlines()[-1]
        lines.append(f"error: {last}")
    if notice:
        lines.append(notice)
    return "\n".join(lines)


def cluster_text(view: ClusterView) -> str:
    """A session cluster as text: its state, TaskManagers and slots, and how many jobs."""
    state = "stopped" if view.stopped else ("ready" if view.ready else "starting")
    live = [tm for tm in view.taskmanagers.values() if tm.state == "REGISTERED"]
    slots = sum(tm.slots for tm in live)
    running = len(view.running_jobs())
    ended = sum(1 for j in view.jobs.values() if j.status.is_globally_terminal)
    return (f"session cluster {view.name!r}: {state}, {len(live)} of "
            f"{view.expected_taskmanagers} TaskManagers ({slots} slots), "
            f"{running} running and {ended} ended jobs")
