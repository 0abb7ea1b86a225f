"""The Spark listener bridge reads a stage's details only for a job that uses them."""

from __future__ import annotations

from typing import Any

from sessioncluster.spark.driver import SparkListenerBridge
from sessioncluster.spark.events import StageSubmitted


class _Seq:
    """A Scala Seq as py4j shows it: size() and apply(i)."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def size(self) -> int:
        return len(self.items)

    def apply(self, i: int) -> Any:
        return self.items[i]


class _Rdd:
    def __init__(self, rdd_id: int, parents: list[int]) -> None:
        self._id, self._parents = rdd_id, parents

    def id(self) -> int:
        return self._id

    def parentIds(self) -> _Seq:  # noqa: N802 - Spark's name
        return _Seq(self._parents)


class _StageInfo:
    """Spark's StageInfo for a stage of two RDDs reading RDD 1 over a shuffle; counts the
    calls, each of which is a py4j round trip in the JobManager."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def __getattribute__(self, name: str) -> Any:
        if not name.startswith("_") and name != "calls":
            self.calls.append(name)
        return object.__getattribute__(self, name)

    def stageId(self) -> int:  # noqa: N802
        return 7

    def name(self) -> str:
        return "collect at x.py:1"

    def numTasks(self) -> int:  # noqa: N802
        return 2

    def parentIds(self) -> _Seq:  # noqa: N802
        return _Seq([6])

    def rddInfos(self) -> _Seq:  # noqa: N802
        return _Seq([_Rdd(3, [2]), _Rdd(2, [1])])


class _Properties:
    def getProperty(self, name: str) -> str:  # noqa: N802
        return "f" * 32 if name == "spark.jobGroup.id" else ""


class _Event:
    def __init__(self, calls: list[str]) -> None:
        self.info = _StageInfo(calls)

    def stageInfo(self) -> _StageInfo:  # noqa: N802
        return self.info

    def properties(self) -> _Properties:
        return _Properties()


def _bridge(wanted: bool) -> SparkListenerBridge:
    return SparkListenerBridge(lambda ev: None, stage_details=lambda group: wanted)


def test_a_stage_of_a_job_that_reads_its_rdds_has_them() -> None:
    calls: list[str] = []
    ev = _bridge(True).stage_submitted(_Event(calls))
    assert ev == StageSubmitted(7, "f" * 32, "collect at x.py:1", 2, [6], [3, 2], [1])


def test_a_stage_of_a_datastream_job_is_its_id_and_group_only() -> None:
    calls: list[str] = []
    ev = _bridge(False).stage_submitted(_Event(calls))
    assert ev == StageSubmitted(7, "f" * 32, "", 0)
    assert calls == ["stageId"], "a DataStream job's stage costs one py4j call for its id"
