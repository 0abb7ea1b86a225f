"""The STREAMING side of the JobManager's SparkSession: the session of a streaming job
(:func:`streaming_session`) and the warm-up query run once the session is ready
(:func:`warm_up`), so that the first STREAMING job finds Spark's streaming machinery loaded."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable

from ..streaming.runtime import RECORD_SCHEMA
from .sources import write_control
from .streaming import ROCKSDB_PROVIDER


def streaming_session(spark: Any, state_partitions: int) -> Any:
    """A SparkSession of its own (same SparkContext) for streaming queries: keyed state in
    RocksDB, ``state_partitions`` partitions of it."""
    session = spark.newSession()
    session.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
    session.conf.set("spark.sql.shuffle.partitions", str(state_partitions))
    return session


def warm_up(spark: Any, directory: Path, stopping: Callable[[], bool]) -> float:
    """A one-row keyed streaming query (a Parquet file source, a watermark, ``mapInArrow``,
    ``transformWithStateInPandas`` with event-time timers on RocksDB, ``foreachBatch``), run
    once after the session is ready: the first STREAMING job then finds
    Spark's streaming classes, the state store's native library and their Python workers loaded
    (its first micro-batch took 9-13 s on a cold session here, 2-5 s on a warm one). It ends
    early when ``stopping()`` (the session stops). Its seconds."""
    import time

    import pyspark.sql.functions as F

    t0 = time.monotonic()
    session = streaming_session(spark, 1)
    session.sparkContext.setJobGroup("warm-up", "sessioncluster warm-up (STREAMING)")
    try:
        (directory / "input").mkdir(parents=True, exist_ok=True)
        write_control(directory / "input", 0, "part-0")  # one record of RECORD_SCHEMA
        df = session.readStream.schema(RECORD_SCHEMA).parquet(str(directory / "input"))
        df = (df.withColumn("et", F.timestamp_millis(F.col("ts"))).withWatermark("et", "0 milliseconds")
              .drop("et").mapInArrow(_pass_through, RECORD_SCHEMA).groupBy("k")
              .transformWithStateInPandas(_warm_processor(), RECORD_SCHEMA, "Append", "EventTime"))
        query = (df.writeStream.foreachBatch(lambda batch, _: batch.count())
                 .option("checkpointLocation", str(directory / "checkpoint"))
                 .trigger(availableNow=True).start())
        deadline = time.monotonic() + 300
        while not query.awaitTermination(0.5):
            if stopping() or time.monotonic() > deadline:
                query.stop()
                break
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        if session.sparkContext._jsc is not None:  # not stopped: this thread runs other jobs
            session.sparkContext.setLocalProperty("spark.jobGroup.id", None)
            session.sparkContext.setLocalProperty("spark.job.description", None)
    return time.monotonic() - t0


def _pass_through(batches: Any) -> Any:
    yield from batches


def _warm_processor() -> Any:
    """A StatefulProcessor that keeps a count and sets a timer per key (made here, so that this
    module imports without pyspark's SQL extras)."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class _Warm(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.handle = handle
            self.count = handle.getValueState("n", "n long")

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:  # noqa: N802,N803
            n = (self.count.get()[0] if self.count.exists() else 0) + sum(len(pdf) for pdf in rows)
            self.count.update((n,))
            self.handle.registerTimer(timerValues.getCurrentWatermarkInMs() + 1)
            return iter(())

        def close(self) -> None:
            pass

    return _Warm()

