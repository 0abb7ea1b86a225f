"""Spark's scheduler events as the JobManager sees them: slotted dataclasses made by the
listener bridge (spark/driver.py) from Spark's Java events, dispatched by type."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True, frozen=True)
class StageSubmitted:
    stage_id: int
    #: the job group of the Spark job that submitted it (= our job id), if any
    job_group: str | None
    name: str
    num_tasks: int
    parent_ids: list[int] = field(default_factory=list)
    #: the stage's RDDs, and the RDDs of other stages it reads over a shuffle
    rdd_ids: list[int] = field(default_factory=list)
    input_rdd_ids: list[int] = field(default_factory=list)


@dataclass(slots=True, frozen=True)
class TaskStarted:
    stage_id: int
    spark_task_id: int
    #: the partition index = the subtask index of the stage's vertices
    subtask: int
    spark_attempt: int
    executor_id: str
    time: float


@dataclass(slots=True, frozen=True)
class TaskEnded:
    stage_id: int
    spark_task_id: int
    subtask: int
    spark_attempt: int
    executor_id: str
    #: Spark's TaskEndReason class name: Success, ExceptionFailure, TaskKilled, ExecutorLostFailure, ...
    reason: str
    #: the reason's text ("" on success)
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
class JobStarted:
    spark_job_id: int
    #: the job group it runs in (= our job id), if any
    job_group: str | None


SparkEvent = (StageSubmitted | TaskStarted | TaskEnded | ExecutorAdded | ExecutorRemoved
              | JobStarted)
#: events about one task of a stage: routed to the job that owns the stage
TaskSparkEvent = TaskStarted | TaskEnded
