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


#: how many one-record runs the warm-up makes at most (each a micro-batch of its own)
WARM_UP_RUNS = 15


def warm_up(spark: Any, directory: Path, stopping: Callable[[], bool],
            busy: Callable[[], bool] = lambda: False, runs: int = WARM_UP_RUNS) -> float:
    """A one-row keyed streaming query (a Parquet file source, a watermark, ``mapInArrow``,
    ``transformWithStateInPandas`` with event-time timers on RocksDB, ``foreachBatch``), run
    after the session is ready: the first STREAMING job then finds Spark's streaming classes,
    the state store's native library and their Python workers loaded (its first micro-batch
    took 9-13 s on a cold session here, 2-5 s on a warm one). It runs ``runs`` times, one new
    record each (``availableNow``, from its checkpoint: one micro-batch a run), as the first
    micro-batches of a job keep getting faster; it starts no further run once ``busy()`` (a
    job came: the warm-up gives it the cores, and never stops a query under it) and ends early
    when ``stopping()`` (the session stops). Its seconds."""
    import time

    t0 = time.monotonic()
    session = streaming_session(spark, 1)
    session.sparkContext.setJobGroup("warm-up", "sessioncluster warm-up (STREAMING)")
    try:
        (directory / "input").mkdir(parents=True, exist_ok=True)
        for run in range(runs):
            if stopping() or (run > 0 and busy()):
                break
            write_control(directory / "input", run, f"part-{run}")  # one record of RECORD_SCHEMA
            if not _one_run(session, directory, stopping, time.monotonic() + 300):
                break
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        if session.sparkContext._jsc is not None:  # not stopped: this thread runs other jobs
            session.sparkContext.setLocalProperty("spark.jobGroup.id", None)
            session.sparkContext.setLocalProperty("spark.job.description", None)
    return time.monotonic() - t0


def _one_run(session: Any, directory: Path, stopping: Callable[[], bool],
             deadline: float) -> bool:
    """The warm-up query over the files it has not read yet, to its end; False when it was
    stopped (the session stops, or it took past ``deadline``)."""
    import time

    import pyspark.sql.functions as F

    df = session.readStream.schema(RECORD_SCHEMA).parquet(str(directory / "input"))
    df = (df.withColumn("et", F.timestamp_millis(F.col("ts"))).withWatermark("et", "0 milliseconds")
          .drop("et").mapInArrow(_pass_through, RECORD_SCHEMA).groupBy("k")
          .transformWithStateInPandas(_warm_processor(), RECORD_SCHEMA, "Append", "EventTime"))
    query = (df.writeStream.foreachBatch(lambda batch, _: batch.count())
             .option("checkpointLocation", str(directory / "checkpoint"))
             .trigger(availableNow=True).start())
    while not query.awaitTermination(0.5):
        if stopping() or time.monotonic() > deadline:
            query.stop()
            return False
    return True


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

