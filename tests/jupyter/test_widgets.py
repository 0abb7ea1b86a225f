"""The live widgets in this process, fed by fake events and snapshots (no kernel, no Spark)."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any, Callable

import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("jupyter_bokeh")

from sessioncluster.graph.states import ExecutionState as E  # noqa: E402
from sessioncluster.graph.states import JobStatus as J
from sessioncluster.jupyter.widgets import ClusterWidget, JobWidget  # noqa: E402
from sessioncluster.protocol.messages import (  # noqa: E402
    AccumulatorsUpdated,
    ExecutionStateChanged,
    JobStatusChanged,
    Message,
    TaskManagerChanged,
)

from .samples import JOB_ID, job_details, overview, taskmanager  # noqa: E402
from .test_state import running_details  # noqa: E402


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
