"""One local SparkSession (``local[1]``, no cluster, no UI) for the unit tests of the parts that
plan on Spark: started once per run, each module's ``local_spark`` starting from the same SQL
settings (one shuffle partition, UTC, no whole-stage codegen or adaptive execution: a unit
test's tiny queries spend most of their time compiling) and no temporary views, and stopped at the end."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

#: the SQL settings every module starts from; a module changes them on its ``local_spark``
SQL_DEFAULTS = {"spark.sql.shuffle.partitions": "1", "spark.sql.session.timeZone": "UTC", "spark.sql.codegen.wholeStage": "false", "spark.sql.adaptive.enabled": "false"}


@pytest.fixture(scope="session")
def _local_spark_session() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[1]").appName("sessioncluster-unit")
               .config("spark.ui.enabled", "false").config(map=SQL_DEFAULTS).getOrCreate())
    yield session
    session.stop()


@pytest.fixture(scope="module")
def local_spark(_local_spark_session: Any) -> Any:
    """The run's local SparkSession, its SQL settings back at :data:`SQL_DEFAULTS` and the
    temporary views of the modules before gone."""
    for key, value in SQL_DEFAULTS.items():
        _local_spark_session.conf.set(key, value)
    for table in _local_spark_session.catalog.listTables():
        if table.isTemporary:
            _local_spark_session.catalog.dropTempView(table.name)
    return _local_spark_session
