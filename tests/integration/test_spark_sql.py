"""spark/sql.py on a local SparkSession of its own (no session cluster): a result over the
byte limit stops the query's job group, and no later job of that group runs."""

from __future__ import annotations

from typing import Iterator

import pytest

from sessioncluster.jobmanager.runner import cancel_job_group
from sessioncluster.spark.sql import ResultTooLargeError, collect_arrow_ipc

pytestmark = pytest.mark.integration

GROUP = "b" * 32


@pytest.fixture(scope="module")
def spark() -> Iterator[object]:
    from pyspark.sql import SparkSession

    s = (SparkSession.builder.master("local[1]").appName("test_spark_sql")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .getOrCreate())
    yield s
    s.stop()


def test_result_over_the_limit_cancels_the_group_and_its_future_jobs(spark) -> None:  # type: ignore[no-untyped-def]
    sc = spark.sparkContext  # type: ignore[attr-defined]
    sc.setJobGroup(GROUP, "too large", interruptOnCancel=True)
    df = spark.range(200_000).selectExpr("id", "repeat('x', 100) AS pad")  # type: ignore[attr-defined]
    stopped: list[str] = []

    def stop() -> None:
        stopped.append(GROUP)
        cancel_job_group(sc, GROUP)

    with pytest.raises(ResultTooLargeError, match="larger than the JobManager's limit"):
        collect_arrow_ipc(df, limit=64 * 1024, stop=stop)
    assert stopped == [GROUP]
    # cancelJobGroupAndFutureJobs: a later action of the same group does not run
    with pytest.raises(Exception, match="cancel"):
        sc.parallelize(range(10), 1).count()
    sc.setJobGroup("c" * 32, "another group")
    assert sc.parallelize(range(10), 1).count() == 10  # other groups run as before
    assert collect_arrow_ipc(spark.range(3), limit=1 << 20)[1] == 3  # type: ignore[attr-defined]
