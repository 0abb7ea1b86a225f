"""The live widgets in this process, fed by fake events and snapshots (no kernel, no Spark)."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any, Callable

import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("jupyter_bokeh")

from sessioncluster.graph.lifecycle import ExecutionState as E  # noqa: E402
from sessioncluster.graph.lifecycle import JobStatus as J
from sessioncluster.jupyter.widgets import ClusterWidget, JobWidget  # noqa: E402
from sessioncluster.protocol.messages import (  # noqa: E402
    AccumulatorsUpdated,
    ExecutionStateChanged,
    JobStatusChanged,
    Message,
    TaskManagerChanged,
)

from .samples import JOB_ID, job_details, overview, taskmanager  # noqa: E402
from .test_models import running_details  # noqa: E402


class FakeEvents:
    """Session.events: callbacks by topic; ``publish`` calls them as the event thread would."""

    def __init__(self) -> None:
        self.callbacks: dict[str | None, list[Callable[[str, Message], None]]] = {}
        self.subscribed = threading.Event()

    def subscribe(self, topic: str | None,
                  callback: Callable[[str, Message], None]) -> Callable[[], None]:
        self.callbacks.setdefault(topic, []).append(callback)
        self.subscribed.set()
        return lambda: self.callbacks[topic].remove(callback)

    def publish(self, topic: str, msg: Message) -> None:
        for cb in list(self.callbacks.get(topic, [])):
            cb(topic, msg)


class FakeClient:
    def __init__(self) -> None:
        self.job_id, self.job_name = JOB_ID, "word count"
        self.session = None
        self.cancelled = 0

    def cancel(self) -> None:
        self.cancelled += 1


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0) -> None:
    done = threading.Event()
    deadline = threading.Timer(timeout, done.set)
    deadline.start()
    try:
        while not predicate():
            if done.wait(0.01):
                raise AssertionError("condition not reached")
    finally:
        deadline.cancel()


def kinds(history: list[tuple[str, Any]], kind: str) -> list[Any]:
    return [v for k, v in history if k == kind]


def test_job_widget_follows_events_to_the_end() -> None:
    events, client = FakeEvents(), FakeClient()
    server = {"details": running_details()}
    w = JobWidget(client, events=events, fetch_details=lambda: server["details"],
                  jobmanager_alive=lambda: True)
    wait_for(lambda: kinds(w.history, "vertex_states"))
    assert "RUNNING" in kinds(w.history, "status")
    assert w.dag_box.children, "the Bokeh DAG is shown once the JobGraph is known"
    events.publish(JOB_ID, ExecutionStateChanged(JOB_ID, "v-src", 0, 0, E.RUNNING, "1", 0, 1.0))
    events.publish(JOB_ID, AccumulatorsUpdated(JOB_ID, {"lines": 10, "lengths": {1: 2}}))
    wait_for(lambda: {"lines": 10, "lengths": {1: 2}} in kinds(w.history, "accumulators"))
    assert len(w.histograms.children) == 1  # the Histogram as a Bokeh bar chart
    assert "lines" in w.accumulators.value and "lengths" not in w.accumulators.value
    final = job_details(J.FINISHED)
    final.error, final.error_text = None, None
    final.accumulators = {"lines": 42, "lengths": {1: 5, 2: 1}}
    server["details"] = final
    events.publish(JOB_ID, JobStatusChanged(JOB_ID, "word count", J.FINISHED, 1003.5))
    assert w.stopped.wait(10)
    statuses = kinds(w.history, "status")
    assert statuses == ["RUNNING", "FINISHED"]
    assert kinds(w.history, "accumulators")[-1] == {"lines": 42, "lengths": {1: 5, 2: 1}}
    assert kinds(w.history, "vertex_states")[0]["v-src"] == "CREATED"
    assert kinds(w.history, "vertex_states")[-1]["v-count"] == "FAILED"
    assert w.cancel_button.disabled and w.progress.value == 3 and w.progress.max == 5
    assert "FINISHED" in w.header.value and "word count" in w.header.value
    assert events.callbacks[JOB_ID] == []  # unsubscribed at the end


def test_job_widget_shows_the_users_traceback() -> None:
    events, client = FakeEvents(), FakeClient()
    w = JobWidget(client, events=events, fetch_details=lambda: job_details(J.FAILED),
                  jobmanager_alive=lambda: True)
    assert w.stopped.wait(10)
    assert w.error.layout.display is None
    assert "ValueError: bad record" in w.error.value
    assert kinds(w.history, "error") and kinds(w.history, "status") == ["FAILED"]


def test_cancel_button_cancels_through_the_client() -> None:
    events, client = FakeEvents(), FakeClient()
    w = JobWidget(client, events=events, fetch_details=running_details,
                  jobmanager_alive=lambda: True)
    wait_for(lambda: kinds(w.history, "status"))
    w.cancel_button.click()
    assert client.cancelled == 1 and w.cancel_button.disabled
    assert kinds(w.history, "cancel") == [JOB_ID]
    w.close()
    assert w.stopped.wait(10)


def test_job_widget_stops_when_the_jobmanager_is_gone() -> None:
    events, client = FakeEvents(), FakeClient()
    alive = threading.Event()
    alive.set()
    w = JobWidget(client, events=events, fetch_details=running_details,
                  jobmanager_alive=alive.is_set)
    wait_for(lambda: kinds(w.history, "status"))
    alive.clear()
    assert w.stopped.wait(10)
    assert any("gone" in n for n in kinds(w.history, "notice"))


def test_cluster_widget_follows_taskmanagers_and_jobs() -> None:
    events = FakeEvents()
    session = type("S", (), {"name": "dev", "info": type("I", (), {
        "dispatcher": "tcp://127.0.0.1:5555", "jobmanager_pid": 1234})()})()
    fetched: list[int] = []

    def fetch():
        fetched.append(1)
        o = overview()
        if len(fetched) > 1:
            o.taskmanagers.append(taskmanager("3"))
        return o

    w = ClusterWidget(session, events=events, fetch_overview=fetch, jobmanager_alive=lambda: True)
    wait_for(lambda: kinds(w.history, "overview"))
    assert "tcp://127.0.0.1:5555" in w.body.value and "host-a" in w.body.value
    events.publish("cluster", TaskManagerChanged("3", "REGISTERED", taskmanager("3")))
    events.publish("cluster", JobStatusChanged("j-new", "fresh job", J.RUNNING, 70.0))
    wait_for(lambda: ("job", ("j-new", "RUNNING")) in w.history)
    assert ("taskmanager", ("3", "REGISTERED")) in w.history
    wait_for(lambda: "fresh job" in w.body.value and "4003" in w.body.value)
    events.publish("cluster", TaskManagerChanged("3", "LOST", replace(taskmanager("3"))))
    wait_for(lambda: ("taskmanager", ("3", "LOST")) in w.history)
    w.mark_stopped()
    assert w.stopped.wait(10)
    assert "stopped" in w.body.value and w.refresh_button.disabled


def test_a_streaming_job_shows_its_checkpoints_and_a_stop_with_savepoint_button() -> None:
    from sessioncluster.protocol.messages import CheckpointInfo

    events, client = FakeEvents(), FakeClient()
    saved: list[str] = []

    class Future:
        def result(self) -> str:
            return "/tmp/savepoints/savepoint-abc"

    client.stop_with_savepoint = lambda advance, directory: (saved.append("asked"), Future())[1]  # type: ignore[attr-defined]
    checkpoints = [CheckpointInfo(i, "COMPLETED", 1_700_000_000_000 + i, 1_700_000_000_050 + i, 50,
                                  2048, 7) for i in (1, 2)]
    info = {"checkpoints": checkpoints, "counts": {"completed": 2, "failed": 0}, "restored": None,
            "savepoints": [], "interval_ms": 500, "records_per_second": 12.5, "watermark": None,
            "restarts": 0}
    details = replace(running_details(), streaming=info)
    w = JobWidget(client, events=events, fetch_details=lambda: details, jobmanager_alive=lambda: True)
    wait_for(lambda: 2 in kinds(w.history, "checkpoints"))
    assert w.savepoint_button.layout.display is None
    assert "12.5</b> records/s" in w.streaming.value and "checkpoints <b>2</b>" in w.streaming.value
    assert w.streaming.value.count("<tr>") == 3  # header + two checkpoints
    assert w.stop_with_savepoint() == "/tmp/savepoints/savepoint-abc" and saved == ["asked"]
    w.close()


class FakeFrontEnd:
    """What a widget published: ``(kind, data, display_id, parent)``; kind ``display`` or
    ``update``. ``cell`` is the parent header outputs go to now."""

    def __init__(self) -> None:
        self.cell: dict[str, Any] | None = {"msg_id": "cell-1"}
        self.sent: list[tuple[str, dict[str, Any], str, Any]] = []

    def publish(self, data: dict[str, Any], display_id: str, parent: Any, update: bool) -> None:
        self.sent.append(("update" if update else "display", data, display_id,
                          (parent or self.cell or {}).get("msg_id")))

    def parent(self) -> dict[str, Any] | None:
        return self.cell


def _snapshot_widget(front: FakeFrontEnd, widget: Any) -> None:
    from sessioncluster.jupyter.snapshot import SnapshotDisplay

    widget.snapshot = SnapshotDisplay(widget, widget._snapshot, front.publish, front.parent)


def test_job_widget_snapshot_is_updated_in_place_when_the_job_ends() -> None:
    from sessioncluster.jupyter.snapshot import WIDGET_VIEW

    events, client, front = FakeEvents(), FakeClient(), FakeFrontEnd()
    server = {"details": running_details()}
    w = JobWidget(client, events=events, fetch_details=lambda: server["details"],
                  jobmanager_alive=lambda: True)
    _snapshot_widget(front, w)
    wait_for(lambda: kinds(w.history, "status"))
    w._ipython_display_()  # what display(w) and a cell's value do
    (kind, data, display_id, cell), = front.sent
    assert kind == "display" and cell == "cell-1"
    assert set(data) == {WIDGET_VIEW, "text/html", "text/plain"}
    assert data[WIDGET_VIEW]["model_id"] == w.model_id
    assert "RUNNING" in data["text/plain"] and "<svg" in data["text/html"]
    front.cell = {"msg_id": "cell-2"}  # the job ends while a later cell runs
    server["details"] = job_details(J.FAILED)
    events.publish(JOB_ID, JobStatusChanged(JOB_ID, "word count", J.FAILED, 1003.5))
    assert w.stopped.wait(10)
    updates = [s for s in front.sent if s[0] == "update"]
    # to the cell that showed it, and to the running one (nbclient reads only that one's)
    assert [(u[2], u[3]) for u in updates] == [(display_id, "cell-1"), (display_id, "cell-2")]
    final = updates[0][1]
    assert final[WIDGET_VIEW] == data[WIDGET_VIEW]
    text, page = final["text/plain"], final["text/html"]
    assert text.startswith(f"Job 'word count' ({JOB_ID}): FAILED, 3/5 subtasks finished")
    assert "  lines: 4242" in text and "  lengths: 1: 3, 2: 7, 5: 1" in text
    assert "error: ValueError: bad record 'x'" in text
    assert "<svg" in page and "FAILED" in page and "ValueError: bad record" in page
    assert "4242" in page and "final value" in page
    assert kinds(w.history, "snapshot") == ["FAILED"]


def test_snapshot_text_leaves_out_what_races() -> None:
    from sessioncluster.jupyter.models import JobView
    from sessioncluster.jupyter.snapshot import job_text

    view = JobView(JOB_ID, "word count")
    view.apply_details(job_details(J.FINISHED))
    text = job_text(view)
    assert "s\n" not in text and "slot" not in text and "TaskManager" not in text
    assert "Keyed Aggregation -> Sink: Collect (parallelism 2)" in text


def test_an_undisplayed_widget_publishes_nothing() -> None:
    events, client, front = FakeEvents(), FakeClient(), FakeFrontEnd()
    w = JobWidget(client, events=events, fetch_details=lambda: job_details(J.FINISHED),
                  jobmanager_alive=lambda: True)
    _snapshot_widget(front, w)
    assert w.stopped.wait(10)
    assert front.sent == [] and not kinds(w.history, "snapshot")


def test_cluster_widget_snapshot_follows_taskmanagers() -> None:
    events, front = FakeEvents(), FakeFrontEnd()
    session = type("S", (), {"name": "dev", "info": type("I", (), {
        "dispatcher": "tcp://127.0.0.1:5555", "jobmanager_pid": 1234})()})()
    server = {"overview": overview()}
    w = ClusterWidget(session, events=events, fetch_overview=lambda: server["overview"],
                      jobmanager_alive=lambda: True)
    _snapshot_widget(front, w)
    wait_for(lambda: kinds(w.history, "overview"))
    w._ipython_display_()
    first = front.sent[0][1]
    assert "2 of 2 TaskManagers (4 slots)" in first["text/plain"]
    grown = overview()
    grown.taskmanagers.append(taskmanager("3"))
    server["overview"] = grown
    events.publish("cluster", TaskManagerChanged("3", "REGISTERED", taskmanager("3")))
    wait_for(lambda: any("3 of 2 TaskManagers" in t for t in kinds(w.history, "snapshot")))
    update = next(s for s in front.sent if s[0] == "update")
    assert update[2] == front.sent[0][2] and update[3] == "cell-1"
    assert "4003" in update[1]["text/html"]
    w.mark_stopped()
    assert w.stopped.wait(10)
    assert "stopped" in front.sent[-1][1]["text/plain"]
