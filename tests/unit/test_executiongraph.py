"""The ExecutionGraph: vertices, attempts, state changes, accumulators and job status."""

from __future__ import annotations

import hashlib

import pytest

from sessioncluster.graph.executiongraph import Execution, ExecutionGraph
from sessioncluster.graph.jobgraph import build_job_graph
from sessioncluster.graph.lifecycle import ExecutionState as E
from sessioncluster.graph.lifecycle import IllegalStateTransition
from sessioncluster.graph.lifecycle import JobStatus as J
from sessioncluster.graph.streamgraph import ChainingStrategy, Partitioning, StreamGraph
from sessioncluster.graph.streamgraph import OperatorKind as K


def put_blob(obj, what):
    return hashlib.sha256(repr(obj).encode()).hexdigest()


def first(t):
    return t[0]


def add(a, b):
    return a + b


def job_graph():
    """[source -> map] (parallelism 2) -HASH-> [reduce -> sink] (parallelism 3)."""
    g = StreamGraph()
    src = g.add_node(K.SOURCE_COLLECTION, [1, 2], parallelism=2, chaining=ChainingStrategy.HEAD)
    m = g.add_node(K.MAP, abs, parallelism=2)
    r = g.add_node(K.REDUCE, add, parallelism=3)
    sink = g.add_node(K.SINK_COLLECT, parallelism=3)
    g.add_edge(src, m)
    g.add_edge(m, r, Partitioning.HASH, key_selector=first)
    g.add_edge(r, sink)
    return build_job_graph(g, [sink], "job", put_blob)


@pytest.fixture
def heard():
    return []


@pytest.fixture
def eg(heard):
    return ExecutionGraph("job-1", job_graph(),
                          listener=lambda ex, prev: heard.append((ex, prev, ex.state)),
                          validate=True)


def ids(eg):
    return [jv.vertex_id for jv in eg.job_graph.vertices]


def test_one_execution_job_vertex_per_job_vertex(eg):
    up, down = ids(eg)
    assert list(eg.job_vertices) == [up, down]
    assert [len(eg.job_vertices[v].task_vertices) for v in (up, down)] == [2, 3]
    for ejv in eg.job_vertices.values():
        assert [tv.subtask_index for tv in ejv.task_vertices] == list(range(ejv.parallelism))
        for tv in ejv.task_vertices:
            [ex] = tv.executions
            assert (ex.attempt_number, ex.state, ex.spark_task_id) == (0, E.CREATED, None)
            assert list(ex.state_times) == ["CREATED"]
    assert len(eg.all_executions()) == 5
    assert eg.status is J.INITIALIZING
    [produced] = eg.job_vertices[up].produced
    assert produced.dataset_id == f"{up}->{down}"
    assert [p.partition_number for p in produced.partitions] == [0, 1]
    assert eg.job_vertices[down].produced == []


def test_execution_binds_attempt_zero_then_creates_new_attempts(eg):
    up, _ = ids(eg)
    ex0 = eg.execution(up, 1, 100)
    assert (ex0.attempt_number, ex0.spark_task_id) == (0, 100)
    assert eg.execution(up, 1, 100) is ex0
    ex0.transition_to(E.FAILED)
    ex1 = eg.execution(up, 1, 101)
    assert (ex1.attempt_number, ex1.spark_task_id, ex1.state) == (1, 101, E.CREATED)
    tv = eg.job_vertices[up].task_vertices[1]
    assert tv.executions == [ex0, ex1] and tv.current_execution is ex1
    assert eg.execution(up, 1, 100) is ex0  # an old task id still finds its attempt
    # the other subtask is untouched
    assert eg.job_vertices[up].task_vertices[0].executions[0].spark_task_id is None


@pytest.mark.parametrize("vertex,subtask", [("nope", 0), (None, 2), (None, -1)])
def test_execution_of_unknown_vertex_or_subtask_is_none(eg, vertex, subtask):
    assert eg.execution(vertex or ids(eg)[0], subtask, 7) is None


def test_transition_records_every_step_and_listener_hears_them_in_order(eg, heard):
    ex = eg.execution(ids(eg)[0], 0, 5)
    assert ex.transition_to(E.RUNNING, when=1000.0) is True
    assert ex.state is E.RUNNING
    steps = ["SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING"]
    assert list(ex.state_times) == ["CREATED", *steps]
    assert all(ex.state_times[s] == 1000.0 for s in steps)
    assert [(e, p.value, s.value) for e, p, s in heard] == [
        (ex, "CREATED", "SCHEDULED"), (ex, "SCHEDULED", "DEPLOYING"),
        (ex, "DEPLOYING", "INITIALIZING"), (ex, "INITIALIZING", "RUNNING")]


def test_stale_reports_return_false_and_change_nothing(eg, heard):
    ex = eg.execution(ids(eg)[0], 0, 5)
    ex.transition_to(E.RUNNING)
    heard.clear()
    assert ex.transition_to(E.SCHEDULED) is False
    assert ex.transition_to(E.RUNNING) is False
    assert ex.state is E.RUNNING and heard == []
    ex.transition_to(E.FINISHED)
    assert ex.transition_to(E.FAILED) is False  # a late report about an ended attempt
    assert ex.state is E.FINISHED


def test_no_legal_route_raises(eg, heard):
    ex = eg.execution(ids(eg)[0], 0, 5)
    with pytest.raises(IllegalStateTransition, match="CREATED -> CANCELING"):
        ex.transition_to(E.CANCELING)  # Flink cancels a CREATED execution directly
    assert ex.state is E.CREATED and heard == []


def test_late_running_report_while_canceling_is_stale(eg):
    ex = eg.execution(ids(eg)[0], 0, 5)
    ex.transition_to(E.RUNNING)
    ex.transition_to(E.CANCELING)
    assert ex.transition_to(E.RUNNING) is False
    assert ex.state is E.CANCELING


def test_finished_while_canceling_becomes_canceled(eg, heard):
    ex = eg.execution(ids(eg)[0], 0, 5)
    ex.transition_to(E.RUNNING)
    assert ex.transition_to(E.CANCELING)
    assert ex.transition_to(E.FINISHED) is True
    assert ex.state is E.CANCELED
    assert "FINISHED" not in ex.state_times
    assert heard[-1][1:] == (E.CANCELING, E.CANCELED)


def finish(ex, **accumulators):
    ex.accumulators = dict(accumulators)
    ex.transition_to(E.FINISHED)


def test_final_accumulators_count_only_finished_attempts(eg):
    up, down = ids(eg)
    failed = eg.execution(up, 0, 10)
    failed.transition_to(E.RUNNING)
    failed.accumulators = {"lines": ("IntCounter", 5), "numRecordsIn": ("IntCounter", 99)}
    failed.transition_to(E.FAILED)
    finish(eg.execution(up, 0, 11), lines=("IntCounter", 5), numRecordsIn=("IntCounter", 3),
           numRecordsOut=("IntCounter", 3))
    finish(eg.execution(up, 1, 12), lines=("IntCounter", 2))
    running = eg.execution(down, 0, 13)
    running.transition_to(E.RUNNING)
    running.accumulators = {"lines": ("IntCounter", 100)}
    final = eg.final_accumulators()
    assert {k: v.get_local_value() for k, v in final.items()} == {"lines": 7}


def test_final_accumulators_use_the_first_finished_attempt_only(eg):
    up, _ = ids(eg)
    finish(eg.execution(up, 0, 10), n=("IntCounter", 4))
    later = eg.execution(up, 0, 11)  # a speculative duplicate that also finished
    finish(later, n=("IntCounter", 4))
    assert eg.final_accumulators()["n"].get_local_value() == 4


def test_live_accumulators_use_the_latest_non_failed_attempt(eg):
    up, down = ids(eg)
    a0 = eg.execution(up, 0, 10)
    a0.transition_to(E.RUNNING)
    a0.accumulators = {"n": ("IntCounter", 5)}
    a0.transition_to(E.FAILED)
    a1 = eg.execution(up, 0, 11)
    a1.transition_to(E.RUNNING)
    a1.accumulators = {"n": ("IntCounter", 2), "numRecordsOut": ("IntCounter", 2)}
    failed_only = eg.execution(up, 1, 12)
    failed_only.accumulators = {"n": ("IntCounter", 50)}
    failed_only.transition_to(E.FAILED)
    finish(eg.execution(down, 2, 13), n=("IntCounter", 1))
    live = eg.live_accumulators()
    assert {k: v.get_local_value() for k, v in live.items()} == {"n": 3}
    assert eg.final_accumulators()["n"].get_local_value() == 1


def test_vertex_records_sum_records_in_and_out(eg):
    up, down = ids(eg)
    finish(eg.execution(up, 0, 1), numRecordsIn=("IntCounter", 4), numRecordsOut=("IntCounter", 4))
    ex = eg.execution(up, 1, 2)
    ex.transition_to(E.RUNNING)
    ex.accumulators = {"numRecordsIn": ("IntCounter", 6), "numRecordsOut": ("IntCounter", 5),
                       "other": ("IntCounter", 1000)}
    assert eg.vertex_records(up) == (10, 9)
    assert eg.vertex_records(down) == (0, 0)


def test_invariants_catch_a_non_terminal_earlier_attempt(eg):
    up, _ = ids(eg)
    a0 = eg.execution(up, 0, 10)
    a0.transition_to(E.RUNNING)
    a0.vertex.executions.append(Execution(a0.vertex, 1, 11))
    with pytest.raises(AssertionError, match="attempt #0 is RUNNING but a later attempt exists"):
        eg.check_invariants()


def test_a_new_spark_attempt_ends_the_attempt_before_it(eg, heard):
    """Spark's retry of a task is reported before the failed attempt's end (the worker's report
    and Spark's listener come by different ways): the earlier attempt ends FAILED, its late end
    is stale, and its error is still kept."""
    up, _ = ids(eg)
    a0 = eg.execution(up, 0, 10)
    a0.transition_to(E.RUNNING)
    a1 = eg.execution(up, 0, 11)
    assert (a0.state, a1.state, a1.attempt_number) == (E.FAILED, E.CREATED, 1)
    a1.transition_to(E.RUNNING)
    eg.check_invariants()
    assert eg.execution(up, 0, 10) is a0
    assert a0.transition_to(E.FAILED) is False and a0.transition_to(E.FINISHED) is False
    a1.transition_to(E.FINISHED)
    assert eg.final_accumulators() == {} and a0.state is E.FAILED


def test_invariants_hold_after_a_proper_retry(eg):
    up, _ = ids(eg)
    a0 = eg.execution(up, 0, 10)
    a0.transition_to(E.RUNNING)
    a0.transition_to(E.FAILED)
    eg.execution(up, 0, 11).transition_to(E.FINISHED)
    eg.check_invariants()


def test_without_validate_no_check_runs_on_transition():
    eg = ExecutionGraph("j", job_graph(), validate=False)
    up = eg.job_graph.vertices[0].vertex_id
    a0 = eg.execution(up, 0, 10)
    a0.transition_to(E.RUNNING)
    a1 = Execution(a0.vertex, 1, 11)
    a0.vertex.executions.append(a1)
    assert a1.transition_to(E.SCHEDULED) is True
    with pytest.raises(AssertionError):
        eg.check_invariants()


def test_job_status_follows_the_table(eg):
    for status in (J.CREATED, J.RUNNING, J.FAILING, J.RESTARTING, J.RUNNING, J.FINISHED):
        eg.transition(status)
        assert eg.status is status
    assert set(eg.status_times) == {"INITIALIZING", "CREATED", "RUNNING", "FAILING",
                                    "RESTARTING", "FINISHED"}
    with pytest.raises(IllegalStateTransition):
        eg.transition(J.RUNNING)
    assert eg.status is J.FINISHED


@pytest.mark.parametrize("path", [[J.RUNNING], [J.CREATED, J.FINISHED], [J.CREATED, J.CANCELED]])
def test_illegal_job_status_changes_raise(eg, path):
    *ok, bad = path
    for status in ok:
        eg.transition(status)
    with pytest.raises(IllegalStateTransition):
        eg.transition(bad)
    assert eg.status is (ok[-1] if ok else J.INITIALIZING)


def spread_states(eg):
    """Put the 5 subtasks' current attempts in different states."""
    up, down = ids(eg)
    eg.execution(up, 0, 1).transition_to(E.RUNNING)
    eg.execution(up, 1, 2).transition_to(E.FINISHED)
    eg.execution(down, 0, 3).transition_to(E.SCHEDULED)
    eg.execution(down, 1, 4).transition_to(E.DEPLOYING)
    # down subtask 2 stays CREATED


def test_cancel_pending_leaves_every_current_attempt_terminal(eg):
    spread_states(eg)
    eg.cancel_pending()
    states = {(ex.vertex.job_vertex.job_vertex.vertex_id, ex.vertex.subtask_index): ex.state
              for ex in eg.all_executions()}
    up, down = ids(eg)
    assert states == {(up, 0): E.CANCELED, (up, 1): E.FINISHED, (down, 0): E.CANCELED,
                      (down, 1): E.CANCELED, (down, 2): E.CANCELED}
    running = eg.job_vertices[up].task_vertices[0].current_execution
    assert "CANCELING" in running.state_times  # Flink cancels a running task via CANCELING
    created = eg.job_vertices[down].task_vertices[2].current_execution
    assert "CANCELING" not in created.state_times  # and a CREATED one directly
    eg.check_invariants()


def test_fail_pending_leaves_every_current_attempt_terminal(eg):
    spread_states(eg)
    eg.fail_pending("boom")
    for ejv in eg.job_vertices.values():
        for tv in ejv.task_vertices:
            ex = tv.current_execution
            assert ex.state.is_terminal
            assert ex.error == (None if ex.state is E.FINISHED else "boom")
    assert [ex.state for ex in eg.all_executions()].count(E.FAILED) == 4
    assert not eg.all_finished()


def test_all_finished(eg):
    assert not eg.all_finished()
    for i, ex in enumerate(eg.all_executions()):
        eg.execution(ex.vertex.job_vertex.job_vertex.vertex_id, ex.vertex.subtask_index,
                     i).transition_to(E.FINISHED)
    assert eg.all_finished()
    assert all(ejv.aggregate_state is E.FINISHED for ejv in eg.job_vertices.values())


def test_start_canceling_moves_only_deployed_attempts(eg):
    src, red = ids(eg)
    running = eg.execution(src, 0, spark_task_id=1)
    running.transition_to(E.RUNNING)
    done = eg.execution(src, 1, spark_task_id=2)
    done.transition_to(E.FINISHED)
    eg.start_canceling()
    assert running.state is E.CANCELING
    assert done.state is E.FINISHED
    assert all(tv.current_execution.state is E.CREATED for tv in eg.job_vertices[red].task_vertices)
