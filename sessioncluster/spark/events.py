"""Spark's listener events as the JobManager uses them: slotted dataclasses made by the listener
bridge (:mod:`.driver`) from the JVM's events, dispatched by type (no event names as strings)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True, frozen=True)
class StageSubmitted:
    """A Spark stage was submitted (Spark's ``SparkListenerStageSubmitted``)."""

    stage_id: int
    #: the Spark job group of the stage's job (= the job id of a sessioncluster job)
    job_group: str | None
    name: str = ""
    num_tasks: int = 0
    parent_ids: list[int] = field(default_factory=list)
    #: the RDDs the stage computes, and those it reads from other stages (over a shuffle)
    rdd_ids: list[int] = field(default_factory=list)
    input_rdd_ids: list[int] = field(default_factory=list)


@dataclass(slots=True, frozen=True)
class StageCompleted:
    """A Spark stage ended (Spark's ``SparkListenerStageCompleted``)."""

    stage_id: int
    failure_reason: str | None = None


@dataclass(slots=True, frozen=True)
class TaskStarted:
    """A Spark task attempt started on an executor."""

    stage_id: int
    spark_task_id: int
    #: the task's partition index = the subtask index
    subtask: int
    spark_attempt: int
    executor_id: str
    time: float


@dataclass(slots=True, frozen=True)
class TaskEnded:
    """A Spark task attempt ended; ``reason`` is Spark's end reason class (``Success``,
    ``ExceptionFailure``, ``TaskKilled``, ``ExecutorLostFailure``, ...)."""

    stage_id: int
    spark_task_id: int
    subtask: int
    spark_attempt: int
    executor_id: str
    reason: str
    #: Spark's text of a failure reason ("" on success)
    text: str
    time: float

    @property
    def succeeded(self) -> bool:
        return self.reason == "Success"


@dataclass(slots=True, frozen=True)
class ExecutorAdded:
    executor_id: str


@dataclass(slots=True, frozen=True)
class ExecutorRemoved:
    executor_id: str
    reason: str


@dataclass(slots=True, frozen=True)
class JobEnded:
    """A Spark job (one action) ended."""

    spark_job_id: int
    succeeded: bool


#: A Spark listener event about one task of a stage.
TaskEventOfStage = TaskStarted | TaskEnded
SparkEvent = (StageSubmitted | StageCompleted | TaskStarted | TaskEnded | ExecutorAdded | ExecutorRemoved
              | JobEnded)
