"""The ExecutionState / JobStatus transition tables and path_to."""

from __future__ import annotations

import pytest

from sessioncluster.graph.lifecycle import (
    EXECUTION_TRANSITIONS,
    JOB_TRANSITIONS,
    TERMINAL_EXECUTION_STATES,
    TERMINAL_JOB_STATUSES,
    IllegalStateTransition,
    check_execution_transition,
    check_job_transition,
    path_to,
)
from sessioncluster.graph.lifecycle import (
    ExecutionState as E,
)
from sessioncluster.graph.lifecycle import (
    JobStatus as J,
)


@pytest.mark.parametrize("start,finish", sorted(EXECUTION_TRANSITIONS))
def test_every_listed_execution_transition_is_legal(start, finish):
    check_execution_transition(start, finish)


@pytest.mark.parametrize("start,finish", [
    (E.FINISHED, E.RUNNING),
    (E.CANCELED, E.RUNNING),
    (E.FAILED, E.FINISHED),
    (E.CREATED, E.RUNNING),  # legal only step by step
    (E.RUNNING, E.CREATED),
    (E.CREATED, E.FINISHED),
    (E.RUNNING, E.RUNNING),
])
def test_illegal_execution_transitions_raise(start, finish):
    with pytest.raises(IllegalStateTransition, match=f"{start} -> {finish}"):
        check_execution_transition(start, finish)


def test_terminal_execution_states():
    assert TERMINAL_EXECUTION_STATES == {E.FINISHED, E.CANCELED, E.FAILED}
    assert [s for s in E if s.is_terminal] == [E.FINISHED, E.CANCELED, E.FAILED]
    for state in TERMINAL_EXECUTION_STATES:
        assert not [t for t in EXECUTION_TRANSITIONS if t[0] is state]
        for other in E:
            with pytest.raises(IllegalStateTransition):
                check_execution_transition(state, other)


def test_every_non_terminal_execution_state_can_fail():
    for state in E:
        if not state.is_terminal:
            check_execution_transition(state, E.FAILED)


@pytest.mark.parametrize("start,finish", sorted(JOB_TRANSITIONS))
def test_every_listed_job_transition_is_legal(start, finish):
    check_job_transition(start, finish)


@pytest.mark.parametrize("start,finish", [
    (J.FINISHED, J.RUNNING),
    (J.CANCELED, J.RUNNING),
    (J.FAILED, J.RESTARTING),
    (J.INITIALIZING, J.RUNNING),
    (J.RUNNING, J.CANCELED),  # only through CANCELLING
    (J.RUNNING, J.FAILED),  # only through FAILING
])
def test_illegal_job_transitions_raise(start, finish):
    with pytest.raises(IllegalStateTransition, match=f"{start} -> {finish}"):
        check_job_transition(start, finish)


def test_running_to_finished_is_a_legal_job_transition():
    check_job_transition(J.RUNNING, J.FINISHED)


def test_terminal_job_statuses_have_no_outgoing_transitions():
    assert TERMINAL_JOB_STATUSES == {J.FINISHED, J.CANCELED, J.FAILED}
    assert {s for s in J if s.is_globally_terminal} == TERMINAL_JOB_STATUSES
    for status in TERMINAL_JOB_STATUSES:
        assert not [t for t in JOB_TRANSITIONS if t[0] is status]
        for other in J:
            with pytest.raises(IllegalStateTransition):
                check_job_transition(status, other)


def test_path_walks_the_regular_path():
    assert path_to(E.CREATED, E.RUNNING) == [E.SCHEDULED, E.DEPLOYING, E.INITIALIZING, E.RUNNING]
    assert path_to(E.DEPLOYING, E.FINISHED) == [E.INITIALIZING, E.RUNNING, E.FINISHED]


def test_path_of_a_direct_transition_is_one_step():
    assert path_to(E.SCHEDULED, E.DEPLOYING) == [E.DEPLOYING]
    assert path_to(E.CREATED, E.CANCELED) == [E.CANCELED]
    assert path_to(E.RUNNING, E.FAILED) == [E.FAILED]


@pytest.mark.parametrize("start,target", [
    (E.RUNNING, E.SCHEDULED),
    (E.RUNNING, E.CREATED),
    (E.INITIALIZING, E.DEPLOYING),
    (E.RUNNING, E.RUNNING),
])
def test_stale_target_gives_no_steps(start, target):
    assert path_to(start, target) == []


def test_cancel_from_running_goes_through_canceling():
    assert path_to(E.RUNNING, E.CANCELED) == [E.CANCELING, E.CANCELED]
    assert path_to(E.DEPLOYING, E.CANCELED) == [E.CANCELING, E.CANCELED]


@pytest.mark.parametrize("start", sorted(TERMINAL_EXECUTION_STATES))
@pytest.mark.parametrize("target", [E.RUNNING, E.FINISHED, E.FAILED, E.CANCELED, E.SCHEDULED])
def test_terminal_start_gives_no_steps(start, target):
    assert path_to(start, target) == []


def test_no_route_gives_none():
    assert path_to(E.CREATED, E.CANCELING) is None


@pytest.mark.parametrize("target", [E.SCHEDULED, E.RUNNING, E.FINISHED])
def test_regular_report_while_canceling_is_stale(target):
    assert path_to(E.CANCELING, target) == []
    assert path_to(E.CANCELING, E.CANCELED) == [E.CANCELED]


@pytest.mark.parametrize("start", list(E))
@pytest.mark.parametrize("target", list(E))
def test_every_path_is_made_of_legal_steps(start, target):
    steps = path_to(start, target)
    if not steps:
        return
    assert steps[-1] is target
    state = start
    for step in steps:
        check_execution_transition(state, step)
        state = step
