"""Flink's ExecutionState and JobStatus, and the legal transitions between them.

Every state change in the ExecutionGraph goes through :func:`check_execution_transition`
or :func:`check_job_transition`; an illegal one raises :class:`IllegalStateTransition`,
which is a bug in the runtime, never a user error.
"""

from __future__ import annotations

import enum


class IllegalStateTransition(RuntimeError):
    """A state change that the transition table does not allow."""


class ExecutionState(str, enum.Enum):
    """The state of one Execution (one attempt of one subtask), with Flink's names.

    Flink's diagram (the legal transitions are the table ``EXECUTION_TRANSITIONS``)::

        CREATED --> SCHEDULED --> DEPLOYING --> INITIALIZING --> RUNNING --> FINISHED
           |            |             |              |              |
           |            +-------------+--------------+--------------+--> CANCELING --> CANCELED
           +------------+-----------------------------------------------------------^
           |
           +--> FAILED   (from every state that is not terminal, CANCELING included)

    CREATED and SCHEDULED may be cancelled at once; a deployed attempt goes through
    CANCELING. FINISHED, CANCELED and FAILED are terminal.
    """

    CREATED = "CREATED"
    SCHEDULED = "SCHEDULED"
    DEPLOYING = "DEPLOYING"
    INITIALIZING = "INITIALIZING"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    CANCELING = "CANCELING"
    CANCELED = "CANCELED"
    FAILED = "FAILED"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_EXECUTION_STATES

    def __str__(self) -> str:
        return self.value


class JobStatus(str, enum.Enum):
    """The status of a job, with Flink's names (``pyflink.common.JobStatus``'s members and the
    runtime's INITIALIZING; SUSPENDED and RECONCILING belong to Flink's HA recovery, which a job
    here never enters)."""

    INITIALIZING = "INITIALIZING"
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    FAILING = "FAILING"
    FAILED = "FAILED"
    CANCELLING = "CANCELLING"
    CANCELED = "CANCELED"
    FINISHED = "FINISHED"
    RESTARTING = "RESTARTING"
    SUSPENDED = "SUSPENDED"
    RECONCILING = "RECONCILING"

    @property
    def is_globally_terminal(self) -> bool:
        return self in TERMINAL_JOB_STATUSES

    def is_globally_terminal_state(self) -> bool:
        """PyFlink's: FINISHED, CANCELED or FAILED (complete; never restarted or recovered)."""
        return self.is_globally_terminal

    def is_terminal_state(self) -> bool:
        """PyFlink's: globally terminal, or SUSPENDED (terminal for this JobManager only)."""
        return self.is_globally_terminal or self is JobStatus.SUSPENDED

    def __str__(self) -> str:
        return self.value


TERMINAL_EXECUTION_STATES = frozenset(
    {ExecutionState.FINISHED, ExecutionState.CANCELED, ExecutionState.FAILED}
)
TERMINAL_JOB_STATUSES = frozenset({JobStatus.FINISHED, JobStatus.CANCELED, JobStatus.FAILED})

_E = ExecutionState
#: The regular life of an Execution; reports may skip states, which are then walked in order.
EXECUTION_PATH: tuple[ExecutionState, ...] = (
    _E.CREATED, _E.SCHEDULED, _E.DEPLOYING, _E.INITIALIZING, _E.RUNNING, _E.FINISHED,
)

EXECUTION_TRANSITIONS: frozenset[tuple[ExecutionState, ExecutionState]] = frozenset(
    {
        (_E.CREATED, _E.SCHEDULED),
        (_E.SCHEDULED, _E.DEPLOYING),
        (_E.DEPLOYING, _E.INITIALIZING),
        (_E.INITIALIZING, _E.RUNNING),
        (_E.RUNNING, _E.FINISHED),
        # cancellation: Flink cancels a CREATED or SCHEDULED execution directly
        (_E.CREATED, _E.CANCELED),
        (_E.SCHEDULED, _E.CANCELED),
        (_E.SCHEDULED, _E.CANCELING),
        (_E.DEPLOYING, _E.CANCELING),
        (_E.INITIALIZING, _E.CANCELING),
        (_E.RUNNING, _E.CANCELING),
        (_E.CANCELING, _E.CANCELED),
        # failure from any non-terminal state
        (_E.CREATED, _E.FAILED),
        (_E.SCHEDULED, _E.FAILED),
        (_E.DEPLOYING, _E.FAILED),
        (_E.INITIALIZING, _E.FAILED),
        (_E.RUNNING, _E.FAILED),
        (_E.CANCELING, _E.FAILED),
    }
)

_J = JobStatus
JOB_TRANSITIONS: frozenset[tuple[JobStatus, JobStatus]] = frozenset(
    {
        (_J.INITIALIZING, _J.CREATED),
        (_J.INITIALIZING, _J.FAILED),
        (_J.INITIALIZING, _J.CANCELLING),
        (_J.CREATED, _J.RUNNING),
        (_J.CREATED, _J.FAILED),
        (_J.CREATED, _J.CANCELLING),
        (_J.RUNNING, _J.FINISHED),
        (_J.RUNNING, _J.FAILING),
        (_J.RUNNING, _J.CANCELLING),
        (_J.RUNNING, _J.RESTARTING),
        (_J.FAILING, _J.FAILED),
        (_J.FAILING, _J.RESTARTING),
        (_J.FAILING, _J.CANCELLING),
        (_J.RESTARTING, _J.RUNNING),
        (_J.RESTARTING, _J.CANCELLING),
        (_J.RESTARTING, _J.FAILED),
        (_J.CANCELLING, _J.CANCELED),
        (_J.CANCELLING, _J.FAILED),
    }
)


def check_execution_transition(start: ExecutionState, finish: ExecutionState) -> None:
    """Raise :class:`IllegalStateTransition` unless ``start -> finish`` is in the table."""
    if (start, finish) not in EXECUTION_TRANSITIONS:
        raise IllegalStateTransition(f"illegal ExecutionState transition {start} -> {finish}")


def check_job_transition(start: JobStatus, finish: JobStatus) -> None:
    """Raise :class:`IllegalStateTransition` unless ``start -> finish`` is in the table."""
    if (start, finish) not in JOB_TRANSITIONS:
        raise IllegalStateTransition(f"illegal JobStatus transition {start} -> {finish}")


def path_to(start: ExecutionState, target: ExecutionState) -> list[ExecutionState] | None:
    """The legal steps from ``start`` to ``target``, walking the regular path where a report
    skipped states (a worker may report RUNNING before Spark's task-start event arrives).

    Returns ``[]`` when ``target`` lies behind ``start`` on the regular path (a stale report),
    and ``None`` when no legal route exists.
    """
    if start == target:
        return []
    if (start, target) in EXECUTION_TRANSITIONS:
        return [target]
    if start in EXECUTION_PATH and target in EXECUTION_PATH:
        i, j = EXECUTION_PATH.index(start), EXECUTION_PATH.index(target)
        return list(EXECUTION_PATH[i + 1 : j + 1]) if j > i else []
    if start.is_terminal or (start is ExecutionState.CANCELING and target in EXECUTION_PATH):
        return []  # a late report about an attempt that already ended or is being cancelled
    if target is ExecutionState.CANCELED and (start, ExecutionState.CANCELING) in EXECUTION_TRANSITIONS:
        return [ExecutionState.CANCELING, ExecutionState.CANCELED]
    return None


def aggregate_state(states: list[ExecutionState]) -> ExecutionState:
    """A JobVertex's state from its subtasks' current attempts, as Flink's web UI shows it.

    >>> aggregate_state([ExecutionState.FINISHED, ExecutionState.RUNNING])
    <ExecutionState.RUNNING: 'RUNNING'>
    """
    if not states:
        return ExecutionState.CREATED
    for s in (ExecutionState.FAILED, ExecutionState.CANCELING, ExecutionState.CANCELED):
        if s in states and (s is not ExecutionState.CANCELED or len(set(states)) == 1):
            return s
    if all(s is ExecutionState.FINISHED for s in states):
        return ExecutionState.FINISHED
    if any(s in (ExecutionState.RUNNING, ExecutionState.FINISHED) for s in states):
        return ExecutionState.RUNNING
    order = list(ExecutionState)
    return max(states, key=order.index)
