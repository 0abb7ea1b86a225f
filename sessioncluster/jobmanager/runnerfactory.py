"""Which JobRunner runs a submission (Flink's JobManagerRunnerFactory), and the session's
Flink SQL statements planned for it.

A JobGraph runs on a :class:`JobMaster` (BATCH) or a :class:`StreamingJob`; a Flink SQL query
or batch INSERT on a :class:`SqlJob`; a streaming INSERT on a :class:`StreamingSqlJob`. A
statement is planned against the session's catalog when it is submitted; a job recovered by
HA is planned again from its statement.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from pathlib import Path
from typing import Any, Callable, Protocol

from ..common.execution_mode import RuntimeExecutionMode
from ..options import StartOptions
from ..protocol.messages import ExecuteSql, Message, SubmitJob
from ..spark.cache import CacheRegistry
from ..spark.flinksql.ctas import RECOVERED
from ..spark.flinksql.executor import FlinkSqlPlanner
from ..spark.flinksql.outcome import StatementJob, StatementOutcome
from ..spark.flinksql.streamingjob import StreamingStatementJob
from .blobserver import BlobServer
from .catalog_log import CatalogLog
from .jobmaster import JobMaster
from .resourcemanager import ResourceManager
from .runner import JobRunner
from .sqljob import SqlJob, sql_job_name
from .streamingjob import StreamingJob
from .streamingsqljob import StreamingSqlJob

log = logging.getLogger("sessioncluster.jobmanager")


class RunnerServices(Protocol):
    """What the runners share of their JobManager (its SparkSession and catalog are made
    after the JobManager, and the catalog again when an HA leader restores it)."""

    spark: Any
    flink_sql: FlinkSqlPlanner | None
    rm: ResourceManager
    loop: asyncio.AbstractEventLoop
    blobs: BlobServer
    dir: Path
    caches: CacheRegistry
    settings: StartOptions
    catalog_log: CatalogLog | None

    def publish(self, topic: str, msg: Message) -> None: ...


class JobRunnerFactory:
    """Makes the runner of each submission (see the module's docstring)."""

    def __init__(self, services: RunnerServices) -> None:
        self.services = services

    def create(self, job_id: str, submission: Message, done: Callable[[JobRunner], None],
               statement: StatementJob | None = None) -> JobRunner:
        """The runner of ``submission``; ``statement`` is a Flink SQL statement's planned work
        (None for a JobGraph, or a statement recovered by HA, planned here)."""
        s = self.services
        if isinstance(submission, SubmitJob):
            if submission.job_graph.runtime_mode is RuntimeExecutionMode.STREAMING:
                return StreamingJob(job_id, submission.job_graph, s.spark, s.rm, s.loop,
                                    s.publish, done, s.blobs.get, s.dir, s.flink_sql)
            return JobMaster(job_id, submission.job_graph, s.spark.sparkContext, s.rm, s.loop,
                             s.publish, done, s.caches)
        if not isinstance(submission, ExecuteSql):
            raise TypeError(f"no runner for {submission.type!r}")
        if statement is None and submission.dialect == "flink":  # recovered (HA)
            statement = self._recovered_statement(submission)
        if isinstance(statement, StreamingStatementJob):
            return StreamingSqlJob(job_id, statement, s.rm, s.loop, s.publish, done, s.dir)
        return SqlJob(job_id, submission.query, s.spark, s.rm, s.loop, s.publish, done,
                      max_result_bytes=s.settings.max_result_mb * 1024 * 1024,
                      statement=statement)

    def plan_statement(self, msg: ExecuteSql) -> StatementOutcome:
        """Plan a Flink SQL statement against the session's catalog (in a worker thread); a
        statement that changes the catalog goes to the HA catalog log."""
        planner = self.services.flink_sql
        if planner is None:
            raise RuntimeError("the session's SparkSession is not up yet")
        outcome = planner.plan(msg.query, msg.runtime_mode, msg.configuration, msg.function,
                               tuple(msg.dependencies))
        if outcome.changes_catalog and self.services.catalog_log is not None:
            self.services.catalog_log.append(msg)
        return outcome

    def _recovered_statement(self, msg: ExecuteSql) -> StatementJob:
        """A recovered Flink SQL job's work: a streaming INSERT planned now (it runs as a
        streaming job, from its latest checkpoint), else planned when the job runs; a CTAS's
        INSERT into the table the catalog log made again."""
        msg = dataclasses.replace(msg, configuration={**(msg.configuration or {}),
                                                      RECOVERED: "true"})
        key = "execution.runtime-mode"
        planner = self.services.flink_sql
        options = planner.options if planner is not None else {}
        mode = options.get(key) or (msg.configuration or {}).get(key) or msg.runtime_mode
        if str(mode).upper() == "STREAMING":
            try:
                job = self.plan_statement(msg).job
            except Exception:  # noqa: BLE001 - planned again when it runs, failing it there
                log.warning("recovered statement of job %s could not be planned", msg.job_id,
                            exc_info=True)
                job = None
            if isinstance(job, StreamingStatementJob):
                return job
        return self._planned_when_run(msg)

    def _planned_when_run(self, msg: ExecuteSql) -> StatementJob:
        """A recovered Flink SQL job's work, planned when the job runs."""
        def run() -> Any:
            job = self.plan_statement(msg).job
            if job is None:
                raise ValueError(f"{msg.query!r} is not a query or an INSERT")
            return job.run()
        return StatementJob(sql_job_name(msg.query), run)
