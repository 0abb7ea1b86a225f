"""The client-side job and cluster views: snapshots and events merge, nothing moves back."""

from __future__ import annotations

from dataclasses import replace

from sessioncluster.graph.lifecycle import ExecutionState as E
from sessioncluster.graph.lifecycle import JobStatus as J
from sessioncluster.graph.lifecycle import aggregate_state
from sessioncluster.jupyter.models import ClusterView, JobView, is_histogram
from sessioncluster.protocol.messages import (
    AccumulatorsUpdated,
    ExecutionStateChanged,
    JobStatusChanged,
    TaskManagerChanged,
)

from .samples import JOB_ID, job_details, overview, taskmanager


def running_details():
    d = job_details(J.RUNNING)
    d.summary.end_time = None
    d.error, d.error_text = None, None
    d.executions = [replace(ex, state=E.CREATED, attempt=0) for ex in d.executions
                    if ex.attempt == 0]
    d.accumulators = {}
    return d


def test_aggregate_state_as_flinks_web_ui() -> None:
    assert aggregate_state([E.FINISHED, E.FINISHED]) is E.FINISHED
    assert aggregate_state([E.FINISHED, E.DEPLOYING]) is E.RUNNING
    assert aggregate_state([E.SCHEDULED, E.DEPLOYING]) is E.DEPLOYING
    assert aggregate_state([E.RUNNING, E.FAILED]) is E.FAILED
    assert aggregate_state([E.CANCELED, E.FINISHED]) is E.RUNNING  # as the JobMaster says
    assert aggregate_state([E.CANCELED, E.CANCELED]) is E.CANCELED
    assert aggregate_state([]) is E.CREATED


def test_events_advance_the_view() -> None:
    view = JobView(JOB_ID, "")
    view.apply_details(running_details())
    assert view.status is J.RUNNING and view.progress == (0, 5)
    assert view.apply_event(ExecutionStateChanged(JOB_ID, "v-src", 0, 0, E.RUNNING, "1", 0, 1.0))
    assert view.vertices["v-src"].state is E.RUNNING
    for sub in (0, 1):
        view.apply_event(ExecutionStateChanged(JOB_ID, "v-src", sub, 0, E.FINISHED, "1", sub, 2.0))
    assert view.vertices["v-src"].state is E.FINISHED and view.progress == (2, 5)
    assert view.apply_event(AccumulatorsUpdated(JOB_ID, {"n": 3}))
    assert view.apply_event(JobStatusChanged(JOB_ID, "word count", J.FINISHED, 1010.0))
    assert view.terminal and view.elapsed() == 10.0
    assert view.apply_event(AccumulatorsUpdated(JOB_ID, {"n": 9}, final=True))
    assert not view.apply_event(AccumulatorsUpdated(JOB_ID, {"n": 4}))  # final stays final
    assert view.accumulators == {"n": 9}
    assert not view.apply_event(JobStatusChanged("another job", "x", J.FAILED, 1.0))


def test_late_and_stale_reports_never_move_back() -> None:
    view = JobView(JOB_ID, "")
    view.apply_details(running_details())
    view.apply_event(ExecutionStateChanged(JOB_ID, "v-src", 0, 0, E.FINISHED, "1", 0, 2.0))
    # an older snapshot and a late event say RUNNING: FINISHED stays
    late = ExecutionStateChanged(JOB_ID, "v-src", 0, 0, E.RUNNING, "1", 0, 1.0)
    assert not view.apply_event(late)
    view.apply_details(running_details())
    assert view.executions[("v-src", 0, 0)].state is E.FINISHED
    view.apply_event(JobStatusChanged(JOB_ID, "x", J.CANCELLING, 3.0))
    assert not view.apply_event(JobStatusChanged(JOB_ID, "x", J.RUNNING, 2.0))
    assert view.status is J.CANCELLING


def test_a_new_attempt_becomes_the_subtasks_current_one() -> None:
    view = JobView(JOB_ID, "")
    view.apply_details(job_details())
    current = {(e.vertex_id, e.subtask): e for e in view.current_executions()}
    assert current[("v-src", 1)].attempt == 1 and current[("v-src", 1)].state is E.FINISHED
    assert view.vertices["v-count"].state is E.FAILED
    assert view.progress == (3, 5)
    assert "ValueError: bad record 'x'" in (view.error_text or "")
    assert view.accumulators_final  # the snapshot of an ended job holds the final values


def test_histogram_values() -> None:
    assert is_histogram({1: 2, 3: 4})
    assert not is_histogram({}) and not is_histogram({"a": 1}) and not is_histogram([1])


def test_cluster_view_follows_taskmanagers_and_jobs() -> None:
    view = ClusterView("dev")
    view.apply_overview(overview(), now=100.0)
    assert set(view.taskmanagers) == {"1", "2"}
    assert [j.job_id for j in view.running_jobs()] == ["j-run"]
    assert view.apply_event(TaskManagerChanged("3", "REGISTERED", taskmanager("3")))
    assert view.apply_event(TaskManagerChanged("2", "LOST", taskmanager("2")))
    assert view.taskmanagers["2"].state == "LOST" and "3" in view.taskmanagers
    assert view.apply_event(JobStatusChanged("j-run", "live job", J.FINISHED, 60.0))
    assert view.apply_event(JobStatusChanged("j-new", "new job", J.RUNNING, 61.0))
    assert [j.job_id for j in view.running_jobs()] == ["j-new"]
    assert [j.job_id for j in view.recent_jobs()] == ["j-run", "j-done"]
    # an older overview does not bring j-run back to RUNNING, nor TaskManager 2
    view.apply_overview(overview(), now=101.0)
    assert view.jobs["j-run"].status is J.FINISHED
