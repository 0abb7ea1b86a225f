"""Spark SQL on the JobManager's SparkSession, called in worker threads (never on the event
loop): the query's rows as Arrow IPC bytes within a size limit, temporary views, the stages a
job group ran, and one reading of Spark's errors for every kind of job."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any, Callable

log = logging.getLogger("sessioncluster.spark")

#: Query results larger than this (as Arrow IPC bytes) fail the job instead of filling memory.
MAX_RESULT_BYTES = 256 * 1024 * 1024
#: How long the query's thread waits for Spark's listener bus to deliver the query's events.
LISTENER_FLUSH_TIMEOUT_MS = 10_000


class ResultTooLargeError(RuntimeError):
    """A job's result exceeds the JobManager's result limit."""


def spark_error_text(exc: BaseException, too_large_hint: str = "aggregate it or add a LIMIT") -> str:
    """Why a Spark action failed, as ``Class: message``: the user's own error from a slot
    worker (``UserCodeError``, with the user's traceback), else the root JVM or analysis
    exception without plan or JVM stack. ``too_large_hint`` says what to do about a result over
    Spark's limit."""
    if isinstance(exc, ResultTooLargeError):
        return f"{type(exc).__name__}: {exc}"
    text = str(exc)
    marker = "UserCodeError: "
    if marker in text:
        return text.split(marker, 1)[1].split("\n\tat ", 1)[0].strip()
    if "spark.driver.maxResultSize" in text:
        return (f"{ResultTooLargeError.__name__}: the result is larger than Spark's result limit "
                f"(spark.driver.maxResultSize); {too_large_hint}")
    try:
        from pyspark.errors.exceptions.captured import (
            AnalysisException,
            CapturedException,
            ParseException,
        )
    except ImportError:  # pragma: no cover - pyspark is a dependency
        CapturedException = AnalysisException = ParseException = ()  # type: ignore[assignment,misc]
    if isinstance(exc, CapturedException):
        name = type(exc).__name__
        message = text.strip()
        if isinstance(exc, AnalysisException) and not isinstance(exc, ParseException):
            message = message.split(";\n", 1)[0]  # the analyzed plan follows
    else:
        name, message = _jvm_reason(text, type(exc).__name__)
    lines = [line for line in message.splitlines() if not line.startswith("\tat ")]
    return f"{name}: " + "\n".join(lines[:40]).strip()


def _jvm_reason(text: str, default_name: str) -> tuple[str, str]:
    """The root cause of a Py4J error text: its exception's short class name and message."""
    lines = text.splitlines()
    causes = [i for i, line in enumerate(lines) if line.startswith("Caused by: ")]
    if causes:
        start = causes[-1]
        head = lines[start][len("Caused by: "):]
    else:
        start = next((i for i, line in enumerate(lines)
                      if "Exception: " in line or "Error: " in line), -1)
        if start < 0:
            return default_name, lines[0] if lines else ""
        head = lines[start].strip().lstrip(": ")
    cls, sep, message = head.partition(": ")
    if not sep or " " in cls:
        return default_name, head
    rest = []
    for line in lines[start + 1:]:
        if line.startswith("\tat ") or line.startswith("Caused by: "):
            break
        rest.append(line)
    return cls.rsplit(".", 1)[-1], "\n".join([message, *rest])


def _too_large(limit: int) -> ResultTooLargeError:
    return ResultTooLargeError(
        f"the query's result is larger than the JobManager's limit of "
        f"{limit / (1024 * 1024):.4g} MiB of Arrow data; aggregate it or add a LIMIT")


class _CountingReader:
    """A read-only stream that fails once more than ``limit`` bytes were read through it."""

    def __init__(self, raw: Any, limit: int) -> None:
        self.raw = raw
        self.limit = limit
        self.count = 0
        self.exceeded = False
        self.closed = False

    def _counted(self, n: int) -> int:
        self.count += n
        if self.count > self.limit:
            self.exceeded = True
            raise _too_large(self.limit)
        return n

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self._counted(len(data))
        return data

    def readinto(self, buffer: Any) -> int:
        return self._counted(self.raw.readinto(buffer))

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True


def collect_arrow_ipc(df: Any, limit: int = MAX_RESULT_BYTES,
                      stop: Callable[[], None] | None = None) -> tuple[bytes, int]:
    """Run ``df`` and return its rows as Arrow IPC stream bytes, and their count.

    Reads the batches as Spark streams them to the driver and raises
    :class:`ResultTooLargeError` as soon as more than ``limit`` bytes arrived (pyspark's own
    ``toArrow`` would first hold the whole result), after calling ``stop()`` to cancel the
    query's Spark jobs. Timestamps come in UTC, as ``toArrow`` gives them.
    """
    import pyarrow as pa
    from pyspark.errors.exceptions.captured import unwrap_spark_exception
    from pyspark.sql.pandas.serializers import ArrowCollectSerializer
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.util import _create_local_socket

    large = str(df.sparkSession.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false"))
    schema = to_arrow_schema(df.schema, error_on_duplicated_field_names_in_struct=True,
                             timezone="UTC", prefers_large_types=large.lower() == "true")
    port, secret, server = df._jdf.collectAsArrowToPython()
    sockfile, sock = _create_local_socket((port, secret))
    reader = _CountingReader(sockfile, limit)
    try:
        batches = list(ArrowCollectSerializer().load_stream(reader))  # type: ignore[arg-type]
    except Exception:
        if not reader.exceeded:
            raise
        batches = []
    finally:
        sockfile.close()
        sock.close()
        if reader.exceeded and stop is not None:
            stop()
        try:
            with unwrap_spark_exception():
                server.getResult()  # joins Spark's serving thread; raises the query's error
        except Exception:
            if not reader.exceeded:
                raise
    if reader.exceeded:
        raise _too_large(limit)
    table = pa.Table.from_batches(batches).cast(schema) if batches else schema.empty_table()
    del batches
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    rows = table.num_rows
    del table
    buffer = sink.getvalue()
    if buffer.size > limit:
        raise _too_large(limit)
    return buffer.to_pybytes(), rows


def submitted_stages(sc: Any, group: str) -> set[int] | None:
    """The Spark stages of job group ``group`` that were submitted (not skipped).

    First waits until Spark's listener bus delivered every event posted so far, so that the
    status store is complete and every event of the group is on its way to the JobManager's
    loop. ``None`` when Spark could not tell.
    """
    try:
        sc._jsc.sc().listenerBus().waitUntilEmpty(LISTENER_FLUSH_TIMEOUT_MS)
        tracker = sc._jsc.statusTracker()
        stages: set[int] = set()
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            if info is None:
                continue
            for stage_id in info.stageIds():
                stage = tracker.getStageInfo(stage_id)
                if stage is not None and stage.submissionTime() > 0:
                    stages.add(int(stage_id))
        log.debug("job group %s ran stages %s", group, sorted(stages))
        return stages
    except Exception as exc:  # noqa: BLE001 - only the graph's completeness depends on it
        log.warning("could not read the stages of job group %s: %s", group, exc)
        return None


def create_temporary_view(spark: Any, name: str, data: bytes | Any, schema: Any = None) -> int:
    """Name ``data`` as the temporary view ``name`` of ``spark``; the number of rows.

    ``data`` is Arrow IPC stream bytes (a client's pandas DataFrame) or an RDD of records (a
    DataStream's sink), which is cached so that queries do not run the stream again; without a
    ``schema`` Spark infers one from the first record."""
    if isinstance(data, bytes):
        import pyarrow as pa
        from pyspark.sql.pandas.types import from_arrow_schema

        table = pa.ipc.open_stream(data).read_all()
        # a naive timestamp (pandas' datetime64, Flink's TIMESTAMP) stays one: TIMESTAMP_NTZ
        schema = from_arrow_schema(table.schema, prefer_timestamp_ntz=True)
        df, rows = spark.createDataFrame(table, schema=schema), table.num_rows
    else:
        df = spark.createDataFrame(data, schema=schema).cache()
        rows = df.count()
    df.createOrReplaceTempView(name)
    return rows


def create_temporary_view_in_thread(spark: Any, name: str, arrow: bytes,
                                    loop: asyncio.AbstractEventLoop,
                                    done: Callable[[int, str | None], None]) -> None:
    """:func:`create_temporary_view` in a thread of its own; ``done(rows, error)`` on ``loop``."""

    def run() -> None:
        try:
            rows = create_temporary_view(spark, name, arrow)
        except Exception as exc:  # noqa: BLE001 - reported to the client
            loop.call_soon_threadsafe(done, 0, spark_error_text(exc))
        else:
            loop.call_soon_threadsafe(done, rows, None)

    threading.Thread(target=run, name=f"TemporaryView-{name[:20]}", daemon=True).start()
