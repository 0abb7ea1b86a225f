"""The keyed vertices of the STREAMING runtime: a JobVertex whose head operator is keyed runs
as ``groupBy("k")`` then Spark's keyed operator (:func:`keyed_processor`), one key at a
time, the key's operator state and timers (its windows among them:
``runtime.streaming_driver``) one pickled value in Spark's state store (RocksDB), checkpointed with
each micro-batch."""

from __future__ import annotations

import functools
import itertools
from typing import Any, Iterator

from ..api.functions import TimeDomain
from ..graph.jobgraph import JobVertex
from ..graph.streamgraph import OperatorKind
from ..runtime.chain import chain
from ..runtime.operators import KeyedFunctionOperator, ReduceOperator, StreamOperator
from ..runtime.output import Record
from ..runtime.streaming_driver import KeyedStreamingDriver
from . import report as reports
from .runtime import Router, Rows, VertexProgram, dumps, loads, open_functions, stateless_vertex

#: Spark's time mode of a keyed vertex's query by the domain of its timers
SPARK_TIME_MODES = {None: "None", TimeDomain.EVENT_TIME: "EventTime",
                    TimeDomain.PROCESSING_TIME: "ProcessingTime"}


def time_domain(spark_time_mode: str) -> TimeDomain | None:
    """The TimeDomain of a Spark time mode ("EventTime", "ProcessingTime", "None")."""
    return next(d for d, m in SPARK_TIME_MODES.items() if m == spark_time_mode)


class KeyedVertex:
    """A keyed vertex in a Python worker: its head operator, run by the STREAMING driver for one
    key at a time with the key's snapshot in Spark's state store, then its chained tail."""

    def __init__(self, prog: VertexProgram, handle: Any) -> None:
        self.prog = prog
        self.handle = handle
        vertex = prog.vertex
        head = vertex.operators[0]
        function = prog.load(head.function_key) if head.function_key else None
        operator: StreamOperator
        if head.kind is OperatorKind.REDUCE:
            operator = ReduceOperator(function)  # a running reduce: every update goes out
        elif isinstance(function, StreamOperator) and function.keyed:
            operator = function
        elif head.kind in (OperatorKind.MAP, OperatorKind.FLAT_MAP, OperatorKind.FILTER):
            operator = KeyedFunctionOperator(head.kind.value, function)  # a plain function
        else:
            raise NotImplementedError(
                f"'{vertex.name}': {type(function).__name__} is not supported in STREAMING mode yet")
        ctx = reports.context_of(vertex)
        self.driver = KeyedStreamingDriver(operator, ctx, prog.time_mode)
        tail_ops = [op for op in vertex.operators[1:] if not op.kind.is_sink]
        self.tail_vertex = stateless_vertex(vertex, tail_ops)
        self.tail_functions = [prog.load(op.function_key) if op.function_key else None
                               for op in tail_ops]
        open_functions(self.tail_functions, ctx)
        self.router = Router(prog, _subtask(prog))
        #: its input is partials pre-aggregated before the shuffle
        self.partials = takes_partials(vertex)

    def fire(self, key: bytes, state: Any, timer_values: Any, fired: int) -> "Rows":
        """Spark fired the key's timer at ``fired``. In event time every timer of the key up to
        the watermark fires now, in order, as Flink's watermark fires them: Spark holds only the
        key's earliest timer (``KeyedStreamingDriver.close_key``), so it calls each key once."""
        if self.driver.spark_domain is TimeDomain.EVENT_TIME:
            fired = max(fired, timer_values.getCurrentWatermarkInMs())
        return self.run(key, state, timer_values, [], fired)

    def run(self, key: bytes, state: Any, timer_values: Any, records: list[tuple[int | None, Any]],
            fired: int | None = None) -> "Rows":
        """One call of Spark for ``key``: its records (or the timer Spark fired at ``fired``);
        the output rows."""
        driver = self.driver
        row = state.get()  # None without a value (one round trip to Spark's state server)
        snapshot = loads(row[0]) if row is not None else None
        driver.open_key(loads(key), snapshot, timer_values.getCurrentWatermarkInMs(),
                        timer_values.getCurrentProcessingTimeInMs())
        outputs = driver.process(records, self.partials) if records else []
        outputs += driver.fire_timers(fired)
        if records and self.prog.bounded:
            # a bounded job's records all come in the micro-batch that reads its end of input,
            # after which Spark's watermark is Flink's final one: fired now, the key's windows
            # need no call of their own in the next micro-batch (a state round trip each)
            outputs += driver.end_of_input()
        result = driver.close_key()
        if result.snapshot:
            state.update((dumps(result.snapshot),))
        elif row is not None:
            state.clear()
        for ts in sorted(result.register):
            self.handle.registerTimer(ts)
        for ts in sorted(result.delete):
            self.handle.deleteTimer(ts)
        rows = Rows()
        self.emit(outputs, rows)
        return rows

    def emit(self, outputs: list[Record], rows: Rows) -> None:
        """The head's outputs through the chained tail, then to the edges or the sink."""
        ts_out = self.prog.timestamped_output
        if not self.tail_vertex.operators:  # main and side outputs in one pass
            self.router.route((((tag, (ts, value)) if ts_out else (tag, value))
                               for tag, ts, value in outputs), rows)
            return
        main: list[Any] = []
        side: list[tuple[str | None, Any]] = []
        for tag, ts, value in outputs:
            rec = (ts, value)
            if tag is None:
                main.append(rec)
            else:
                side.append((tag, rec if ts_out else value))
        tagged, _ = chain(self.tail_vertex, self.tail_functions, iter(main), keyed=False,
                          tagged=True, timestamped=True)
        # the tail keeps timestamps; drop them if the output does not carry event time
        self.router.route(tagged if ts_out else ((t, r[1]) for t, r in tagged), rows)
        if side:
            self.router.route(side, rows)


class PandasInterface:
    """``transformWithStateInPandas``: a key's rows come as pandas frames, its output goes as
    one (fast over many rows of a key, as a keyed stream's records)."""

    method = "transformWithStateInPandas"

    @staticmethod
    def records(prog: VertexProgram, frames: Iterator[Any]) -> list[tuple[int | None, Any]]:
        """A key's records from Spark's pandas batches of its rows."""
        records: list[tuple[int | None, Any]] = []
        for pdf in frames:
            values = map(loads, pdf["v"].tolist())
            if prog.timestamped_input:  # Spark gives a long column with nulls as floats
                records.extend((None if t is None or t != t else int(t), v)
                               for t, v in zip(pdf["ts"].tolist(), values))
            else:
                records.extend(zip(itertools.repeat(None), values))
        return records

    @staticmethod
    def output(rows: Rows) -> Iterator[Any]:
        if len(rows):
            yield rows.pandas()


class RowInterface:
    """``transformWithState`` (Spark's Row interface): Spark turns all the rows the expired
    timers of a micro-batch give into one Arrow batch, where it turns each key's frame into one
    (half the cost of firing 1,000 keys' windows), and a key's input needs no frame; but it
    reads each input cell on its own, so it serves few rows per key (pre-aggregated windows)."""

    method = "transformWithState"

    @staticmethod
    def records(prog: VertexProgram, rows: Iterator[Any]) -> list[tuple[int | None, Any]]:
        """A key's records from Spark's rows of it."""
        if prog.timestamped_input:
            return [(row.ts, loads(row.v)) for row in rows]
        return [(None, loads(row.v)) for row in rows]

    @staticmethod
    def output(rows: Rows) -> Iterator[Any]:
        return map(_record_row(), rows.out, rows.k, rows.ts, rows.v)


@functools.cache
def _record_row() -> Any:
    """The Row factory of a record's columns (made once per worker: ``output`` runs per key)."""
    from pyspark.sql import Row

    return Row("out", "k", "ts", "v")


def takes_partials(vertex: JobVertex) -> bool:
    """True when the keyed vertex's input is window partials pre-aggregated before the
    shuffle (``JobEdge.window_partials_streaming``)."""
    return bool(vertex.inputs) and all(e.window_partials_streaming for e in vertex.inputs)


def spark_interface(vertex: JobVertex) -> type[PandasInterface] | type[RowInterface]:
    """The interface of Spark's keyed operator a keyed vertex runs on: rows for one whose
    input is pre-aggregated window partials, pandas frames otherwise."""
    return RowInterface if takes_partials(vertex) else PandasInterface


def keyed_processor(prog: VertexProgram,
                    interface: type[PandasInterface] | type[RowInterface]) -> Any:
    """The StatefulProcessor of Spark's keyed operator (``interface.method``) running
    ``prog``'s keyed vertex (a subclass made here, so that this module imports without
    pyspark's SQL extras)."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class _Processor(StatefulProcessor):
        @reports.guarded
        def init(self, handle: Any) -> None:
            from pyspark import TaskContext

            self.handle = handle
            self.state = handle.getValueState("state", "s binary")
            if TaskContext.get() is None:
                # Spark's pre-init in a Python process of the driver, at a query's first
                # micro-batch: it only wants the state variables' schemas; no subtask runs here
                return
            self.report = reports.begin(prog.job_id, prog.vertex, prog.job_parameters)
            self.environment = prog.environment()
            if self.environment is not None:
                self.environment.__enter__()  # left in close()
            self.vertex = KeyedVertex(prog, handle)
            self.report.running()

        @reports.guarded
        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            records = interface.records(prog, rows)
            out = self.vertex.run(key[0], self.state, timerValues, records)
            prog.count(_subtask(prog), len(records), out)
            self.report.count(len(records), out.records)
            return interface.output(out)

        @reports.guarded
        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Any]:
            out = self.vertex.fire(key[0], self.state, timerValues,
                                   expiredTimerInfo.getExpiryTimeInMs())
            prog.count(_subtask(prog), 0, out)
            self.report.count(0, out.records)
            return interface.output(out)

        def close(self) -> None:
            report = getattr(self, "report", None)
            if report is not None:
                report.finished()
            environment = getattr(self, "environment", None)
            if environment is not None:
                environment.__exit__(None, None, None)

    return _Processor()


def _subtask(prog: VertexProgram) -> int:
    from pyspark import TaskContext

    tc = TaskContext.get()
    return (tc.partitionId() if tc is not None else 0) % max(prog.vertex.parallelism, 1)
