"""A Python function for ``CREATE TEMPORARY FUNCTION ... AS 'tests.integration.udf_module.
plus_two' LANGUAGE PYTHON``: imported on the JobManager (PYTHONPATH), not shipped."""

from __future__ import annotations

from sessioncluster.api.table.types import DataTypes
from sessioncluster.api.table.udf import udf


@udf(result_type=DataTypes.BIGINT())
def plus_two(i: int) -> int:
    return i + 2
