"""Interactive SQL on a real session: queries run as jobs on the JobManager's SparkSession."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import sessioncluster
from sessioncluster.client.session import SqlExecutionException
from sessioncluster.graph.lifecycle import ExecutionState, JobStatus
from sessioncluster.jobmanager.blobserver import BlobServer
from sessioncluster.jobmanager.resourcemanager import ResourceManager
from sessioncluster.jobmanager.sqljob import SqlJob, sql_job_name, task_failure
from sessioncluster.protocol.messages import RegisterTaskManager
from sessioncluster.spark.events import StageSubmitted, TaskEnded, TaskStarted
from sessioncluster.spark.sql import spark_error_text

from ..helpers import wait_until

pytestmark = pytest.mark.integration


def sql_job(session: sessioncluster.Session, query_start: str):
    """The newest job of ``session`` whose name starts with ``SQL: <query_start>``."""
    jobs = [j for j in session.jobs() if j.name.startswith(f"SQL: {query_start}")]
    assert jobs, f"no SQL job for {query_start!r} in {[j.name for j in session.jobs()]}"
    return max(jobs, key=lambda j: j.start_time)


def test_sql_returns_pandas(session) -> None:
    df = session.sql("SELECT sum(id) AS s FROM range(1000)", dialect="spark")
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["s"]
    assert df["s"].tolist() == [499500]
    job = sql_job(session, "SELECT sum(id) AS s FROM range(1000)")
    assert job.status is JobStatus.FINISHED


def test_group_by_over_a_pandas_view_matches_pandas(session) -> None:
    pdf = pd.DataFrame({
        "word": [w for w in "to be or not to be that is the question".split()] * 30,
        "n": range(300),
        "x": [i / 4 for i in range(300)],
    })
    session.create_temporary_view("words", pdf)
    result = session.execute_sql("SELECT word, count(*) AS c, sum(n) AS total, avg(x) AS mean "
                                 "FROM words GROUP BY word ORDER BY word")
    out = result.table.to_pandas()
    expected = (pdf.groupby("word").agg(c=("n", "size"), total=("n", "sum"), mean=("x", "mean"))
                .reset_index().sort_values("word").reset_index(drop=True))
    pd.testing.assert_frame_equal(out, expected, check_dtype=False)

    # the query (Flink SQL) is a job named as Flink names it: FINISHED, with one JobVertex per
    # Spark stage (a shuffle: >= 2)
    details = session.job(result.job_id).details()
    assert details.summary.name == "collect"
    assert details.summary.status is JobStatus.FINISHED
    assert len(details.job_graph.vertices) >= 2
    assert details.job_graph.edges, "a stage reading a shuffle has an input edge"
    assert all(e.ship_strategy.value == "HASH" for e in details.job_graph.edges)
    for v in details.job_graph.vertices:
        assert v.parallelism >= 1 and v.name
    tms = {tm.tm_id for tm in session.status().taskmanagers}
    assert details.executions
    for ex in details.executions:
        assert ex.state is ExecutionState.FINISHED, ex
        assert ex.tm_id in tms
    per_vertex = {v.vertex_id: v.parallelism for v in details.job_graph.vertices}
    for vid, parallelism in per_vertex.items():
        assert sorted(ex.subtask for ex in details.executions if ex.vertex_id == vid) == \
            list(range(parallelism))


def test_bad_query_raises_spark_reason_and_session_goes_on(session) -> None:
    with pytest.raises(SqlExecutionException) as info:
        session.sql("SELECT * FROM no_such_table_xyz", dialect="spark")
    text = str(info.value)
    assert "TABLE_OR_VIEW_NOT_FOUND" in text and "no_such_table_xyz" in text
    assert "\tat " not in text and "org.apache.spark.sql.catalyst" not in text  # no JVM stack
    assert info.value.status is JobStatus.FAILED
    assert session.job(info.value.job_id).get_job_status() is JobStatus.FAILED

    with pytest.raises(SqlExecutionException, match="PARSE_SYNTAX_ERROR"):
        session.sql("SELEC 1", dialect="spark")

    assert session.sql("SELECT 40 + 2 AS answer", dialect="spark")["answer"].tolist() == [42]


def test_failing_task_fails_the_job_with_the_reason(session) -> None:
    with pytest.raises(SqlExecutionException, match="USER_RAISED_EXCEPTION") as info:
        session.sql("SELECT assert_true(id < 50) FROM range(100)", dialect="spark")
    details = session.job(info.value.job_id).details()
    assert details.summary.status is JobStatus.FAILED
    failed = [ex for ex in details.executions if ex.state is ExecutionState.FAILED]
    assert failed and all(ex.error is not None for ex in failed)


def test_create_temporary_view_takes_only_pandas(session) -> None:
    with pytest.raises(TypeError, match="pandas DataFrame"):
        session.create_temporary_view("nope", [1, 2, 3])


def test_empty_result_keeps_its_columns(session) -> None:
    df = session.sql("SELECT id, CAST(id AS STRING) AS s FROM range(10) WHERE id < 0", dialect="spark")
    assert list(df.columns) == ["id", "s"] and len(df) == 0


def test_cancel_stops_a_long_query_and_the_session_goes_on(session) -> None:
    # every row sleeps 20 ms in the executor JVM: minutes of work unless cancelled
    query = ("SELECT count(*) AS n FROM range(0, 40000, 1, 4) "
             "WHERE reflect('java.lang.Thread', 'sleep', CAST(20 + id % 2 AS BIGINT)) IS NULL")
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["df"] = session.sql(query, dialect="spark")
        except Exception as exc:  # noqa: BLE001 - checked below
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    # the session answers other requests while the query runs
    job = wait_until(lambda: next((j for j in session.jobs() if j.name == sql_job_name(query)
                                   and j.status is JobStatus.RUNNING), None), what="the SQL job")
    client = session.job(job.job_id)
    wait_until(lambda: any(ex.state is ExecutionState.RUNNING
                           for ex in client.details().executions), what="a running task")
    client.cancel()
    thread.join(120)
    assert not thread.is_alive()
    error = outcome.get("error")
    assert isinstance(error, SqlExecutionException), outcome
    assert error.status is JobStatus.CANCELED and "cancelled" in str(error)
    details = client.details()
    assert details.summary.status is JobStatus.CANCELED
    assert {ex.state for ex in details.executions} <= {ExecutionState.CANCELED,
                                                       ExecutionState.FINISHED}
    assert session.sql("SELECT 7 AS seven", dialect="spark")["seven"].tolist() == [7]


# -- without a cluster: the JobGraph from Spark's stage events, the error texts ----------------


def test_stage_events_build_the_job_graph(tmp_path: Path) -> None:
    """Stage events as Spark sends them for GROUP BY ... ORDER BY under adaptive execution:
    parents name skipped stages, the RDDs read over the shuffle name the stages that ran."""
    loop = asyncio.new_event_loop()
    published: list[Any] = []
    rm = ResourceManager(BlobServer(tmp_path / "blobs"), lambda ident, msg: None,
                         published.append, lambda events: None)
    for tm in ("0", "1"):
        rm.on_register([tm.encode()], RegisterTaskManager(tm, "127.0.0.1", 1, 2, 3, 1))
    spark = type("FakeSpark", (), {"sparkContext": None})()
    job = SqlJob("a" * 32, "SELECT k, sum(v) FROM t GROUP BY k ORDER BY k", spark, rm, loop,
                 lambda topic, msg: published.append(msg), lambda j: None)
    job._set_status(JobStatus.CREATED)
    job._set_status(JobStatus.RUNNING)
    stages = [(0, 2, [], [2, 1, 0], []), (2, 1, [1], [7, 5, 4, 6, 3], [2]),
              (4, 1, [3], [8, 4, 3], [2]), (7, 1, [6], [11, 9, 10], [8])]
    task_id = 0
    for stage_id, tasks, parents, rdds, reads in stages:
        job.on_stage_submitted(StageSubmitted(stage_id, job.job_id, "collect", tasks, parents, rdds,
                                              reads))
        for subtask in range(tasks):
            task_id += 1
            job.on_spark_task_event(TaskStarted(stage_id, task_id, subtask, 0, str(subtask % 2), 1.0))
            job.on_spark_task_event(TaskEnded(stage_id, task_id, subtask, 0, str(subtask % 2),
                                              "Success", "", 2.0))
    job.on_stage_submitted(StageSubmitted(2, job.job_id, "again", 1))
    assert job._settled({0, 2, 4, 7}, every_subtask=True)
    assert not job._settled({0, 2, 4, 7, 9}, every_subtask=True)

    loop.run_until_complete(_finish(job, {0, 2, 4, 7}))
    details = job.details()
    graph = details.job_graph
    assert [v.vertex_id for v in graph.vertices] == ["stage-0", "stage-2", "stage-4", "stage-7"]
    assert [v.parallelism for v in graph.vertices] == [2, 1, 1, 1]
    assert sorted((e.source, e.target) for e in graph.edges) == [
        ("stage-0", "stage-2"), ("stage-0", "stage-4"), ("stage-4", "stage-7")]
    assert {e.ship_strategy.value for e in graph.edges} == {"HASH"}
    assert details.summary.status is JobStatus.FINISHED
    assert details.summary.tasks_total == details.summary.tasks_finished == 5
    assert all(ex.state is ExecutionState.FINISHED and ex.tm_id in ("0", "1") and ex.slot == 0
               for ex in details.executions)
    assert rm.slot_of_task == {}  # every slot was given back
    reply = job.final_reply()
    assert reply.status is JobStatus.FINISHED and reply.arrow == b"rows" and reply.rows == 3
    assert job.final_reply().arrow == b""  # the rows are handed over once
    loop.close()


async def _finish(job: SqlJob, stages: set[int]) -> None:
    job._spark_done(b"rows", 3, None, stages)
    await asyncio.wait_for(job.done.wait(), 5)


def test_failed_task_and_error_texts() -> None:
    err = task_failure(TaskEnded(0, 1, 0, 0, "0", "ExceptionFailure",
                                 "ExceptionFailure(org.apache.spark.SparkRuntimeException,"
                                 "[USER_RAISED_EXCEPTION] '(id < 5)' is not true! SQLSTATE: P0001,"
                                 "[Ljava.lang.StackTraceElement;@1f,...", 2.0))
    assert err.exc_type == "SparkRuntimeException"
    assert err.message == "[USER_RAISED_EXCEPTION] '(id < 5)' is not true! SQLSTATE: P0001"

    class Py4JJavaError(Exception):
        pass

    text = spark_error_text(Py4JJavaError(
        "An error occurred while calling o1.getResult.\n: org.apache.spark.SparkException: "
        "Exception thrown in awaitResult: \n\tat org.apache.spark.util.X.y(X.scala:1)\n"
        "Caused by: org.apache.spark.SparkArithmeticException: [DIVIDE_BY_ZERO] Division by zero.\n"
        "== SQL ==\nSELECT 1/0\n\tat org.apache.spark.sql.Z.z(Z.scala:2)\n"))
    assert text == ("SparkArithmeticException: [DIVIDE_BY_ZERO] Division by zero.\n"
                    "== SQL ==\nSELECT 1/0")
    assert "maxResultSize" in spark_error_text(RuntimeError(
        "Total size of serialized results of 3 tasks (300 MiB) is bigger than "
        "spark.driver.maxResultSize (256.0 MiB)"))
    assert sql_job_name("SELECT  a,\n  b FROM t" + " " * 10 + "x" * 100) == "SQL: " + (
        "SELECT a, b FROM t " + "x" * 100)[:60]
