"""The STREAMING runtime inside Spark's Python workers: a JobVertex's operator chain over the
Arrow batches of a micro-batch (a keyed head in Spark's state store: ``streaming.keyed``).

Between vertices every record is one Arrow row ``(out int, k binary, ts long, v binary)``:
which output edge of the producer it travels on, its cloudpickled key (for a HASH edge), its
event time (or null), and the cloudpickled record. A stateless vertex is one ``mapInArrow``
(:class:`ChainFunction`); a keyed vertex is ``groupBy("k")`` then
``transformWithStateInPandas`` (``streaming.keyed.keyed_processor``), whose state (the operator's keyed state
and timers, its windows among them: ``runtime.streaming_driver``) is one pickled value per key in
Spark's state store
(RocksDB), checkpointed with each micro-batch. Sinks get ``v`` as the record (collect) or as the
UTF-8 line ``str(record)`` (print, text files).

User code arrives as the BlobServer's bytes and is unpickled here, in the worker, never on the
JobManager.
"""

from __future__ import annotations

import contextlib
import itertools
import pickle
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator, Sequence

import cloudpickle

from ..api.functions import MIN_WATERMARK, RuntimeContext, TimeDomain, as_callable
from ..common.printsink import line_formatter
from ..common.typeinfo import read_back
from ..dependencies import JobEnvironment, prepare
from ..graph.jobgraph import JobEdge, JobVertex, OperatorSpec, PythonDependency
from ..graph.streamgraph import OperatorKind, Partitioning
from ..runtime.chain import chain
from ..runtime.filesink import WRITE_TABLE_ROWS, batch_copy
from ..runtime.operators import WindowPreAggregator, open_function
from . import report as reports

#: the Arrow schema of records between vertices
RECORD_SCHEMA = "out int, k binary, ts long, v binary"
#: the record counts' key of a watermark vertex's largest output timestamp
MAX_TS = "max_ts"
#: the output index of a sink's rows
SINK_OUT = -1
#: the output index of a sink's rows whose ``v`` is an Arrow IPC stream: a table of records a
#: FileSource hands straight to the bulk FileSink chained to it (``runtime.filesink.batch_copy``)
SINK_TABLE_OUT = -2
#: the output index of a control record (``spark/streaming.py``): it moves a watermark and is
#: dropped right behind it, so it must be an index no vertex's rows have
CONTROL_OUT = -3

#: a record or key from its bytes (:func:`dumps`)
loads = pickle.loads


def dumps(obj: Any) -> bytes:
    """A record or key as bytes: the C pickler (several times faster per record than
    cloudpickle's), cloudpickle for what it cannot pickle (a lambda inside a record)."""
    try:
        return pickle.dumps(obj, protocol=5)
    except Exception:  # noqa: BLE001 - pickle raises many kinds
        return cloudpickle.dumps(obj)


@dataclass(slots=True)
class EdgeOut:
    """One output edge of a vertex as its producer sees it."""

    index: int
    side_output: str | None
    #: the key selector's blob key, for a HASH edge
    key_selector_key: str | None
    #: into a two-input vertex: the input (0 or 1)
    input_index: int | None = None
    #: into a window that pre-aggregates (``JobEdge.window_partials_streaming``): the window
    #: operator's blob key
    window_operator_key: str | None = None


@dataclass(slots=True)
class VertexProgram:
    """What a worker needs to run one vertex: its operators, code, edges and sink encoding."""

    job_id: str
    vertex: JobVertex
    blobs: dict[str, bytes]
    edges: list[EdgeOut]
    #: the input records carry event time
    timestamped_input: bool
    #: the output records carry event time
    timestamped_output: bool
    #: "record" (pickled record), "line" (UTF-8 str(record)) or None (not a sink)
    sink_encoding: str | None = None
    #: how the source's Spark rows become records: "text", "long", "blob", "records", "files"
    source_format: str = "records"
    #: for a keyed vertex: the domain of the timers Spark keeps (the query's time mode), None
    #: when it keeps none
    time_mode: TimeDomain | None = None
    #: every source of the job ends (so a keyed vertex's records all come in one micro-batch,
    #: the one that reads the end of input, ``spark.sources``)
    bounded: bool = False
    #: a Spark accumulator of {(vertex id, subtask, "in" | "out"): records}, and of a watermark's
    #: vertex {(vertex id, -1, "max_ts"): its largest output timestamp} (``RecordCounts``)
    counter: Any = None
    #: the job's Python files, archives and requirements (their blobs come from the TaskManager)
    dependencies: list[PythonDependency] = field(default_factory=list)
    #: the job's global job parameters (``RuntimeContext.get_job_parameter``)
    job_parameters: dict[str, str] = field(default_factory=dict)
    _code: dict[str, Any] = field(default_factory=dict)

    def load(self, key: str) -> Any:
        code = self._code.get(key)
        if code is None:
            code = self._code[key] = loads(self.blobs[key])
        return code

    def count(self, subtask: int, records_in: int, rows: "Rows") -> None:
        """Add to the vertex's records in and out, and to its largest output timestamp if it
        has a watermark (Spark merges them on the driver)."""
        if self.counter is None or not (records_in or rows.records):
            return
        vid = self.vertex.vertex_id
        update: dict[tuple[str, int, str], int] = {(vid, subtask, "in"): records_in,
                                                   (vid, subtask, "out"): rows.records}
        if self.watermarked:
            stamps = [t for t in rows.ts if t is not None]
            if stamps:
                update[(vid, -1, MAX_TS)] = max(stamps)
        self.counter.add(update)

    @property
    def watermarked(self) -> bool:
        """True when a watermark strategy is in the vertex's chain."""
        return watermark_delay(self.vertex) is not None

    def environment(self) -> JobEnvironment | None:
        """The job's Python dependencies, made ready on this machine (None: it has none); the
        user's code is loaded and run inside it."""
        return dependency_environment(self.dependencies)

    def __getstate__(self) -> tuple[Any, ...]:
        return (self.job_id, self.vertex, self.blobs, self.edges, self.timestamped_input,
                self.timestamped_output, self.sink_encoding, self.source_format, self.time_mode,
                self.bounded, self.counter, self.dependencies, self.job_parameters)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        (self.job_id, self.vertex, self.blobs, self.edges, self.timestamped_input,
         self.timestamped_output, self.sink_encoding, self.source_format, self.time_mode,
         self.bounded, self.counter, self.dependencies, self.job_parameters) = state
        self._code = {}


def dependency_environment(dependencies: Sequence[PythonDependency]) -> JobEnvironment | None:
    """A job's Python dependencies made ready on this machine (None: it has none): their
    blobs from the TaskManager of a Spark Python worker, or from the JobManager's BlobServer
    directory beside it (the JobManager itself, a Python worker of Spark's driver)."""
    if not dependencies:
        return None
    from ..taskmanager.slotworker import SlotWorker, TaskManagerUnavailable

    fetch: Callable[[str], bytes | None]
    try:
        fetch = SlotWorker.current().fetch
    except TaskManagerUnavailable:
        fetch = _jobmanager_blob
    return prepare(list(dependencies), fetch)


def _jobmanager_blob(key: str) -> bytes | None:
    import os
    from pathlib import Path

    from ..cluster.blobstore import BlobStore, blob_dir
    from ..cluster.connection import ConnectionInfo
    from ..taskmanager.daemon import CONNECTION_ENV

    info = ConnectionInfo.read(Path(os.environ[CONNECTION_ENV]))
    return BlobStore(blob_dir(info.name)).get(key)


# -- records in and out ----------------------------------------------------------------------


def _source_records(prog: VertexProgram, batch: Any) -> Iterator[Any]:
    """The records of one Arrow batch of the source's rows."""
    fmt = prog.source_format
    if fmt == "text":
        return iter(batch.column(0).to_pylist())
    if fmt == "long":
        return iter(batch.column("value").to_pylist())
    if fmt == "blob":
        return itertools.chain.from_iterable(loads(b) for b in batch.column(0).to_pylist())
    if fmt == "files":
        # a FileSource: the paths Spark listed, each file read whole by the source's format
        source_format = prog.load(prog.vertex.operators[0].function_key or "")
        return itertools.chain.from_iterable(source_format.read_file(p)
                                             for p in batch.column("path").to_pylist())
    if fmt == "sequence":
        return itertools.chain.from_iterable(range(a, b + 1) for a, b in zip(
            batch.column("start").to_pylist(), batch.column("end").to_pylist()))
    return _input_records(batch, prog.timestamped_input)


def _input_records(batch: Any, timestamped: bool) -> Iterator[Any]:
    vs = batch.column("v").to_pylist()
    if timestamped:
        return zip(batch.column("ts").to_pylist(), map(loads, vs))
    return map(loads, vs)


class Rows:
    """Output rows, built column by column, and the records they carry (a record sent on two
    edges is two rows and one record, as Flink counts a collect once)."""

    __slots__ = ("out", "k", "ts", "v", "records")

    def __init__(self) -> None:
        self.out: list[int] = []
        self.k: list[bytes | None] = []
        self.ts: list[int | None] = []
        self.v: list[bytes] = []
        self.records = 0

    def __len__(self) -> int:
        return len(self.v)

    def arrow(self) -> Any:
        import pyarrow as pa

        return pa.RecordBatch.from_arrays(
            [pa.array(self.out, pa.int32()), pa.array(self.k, pa.binary()),
             pa.array(self.ts, pa.int64()), pa.array(self.v, pa.binary())],
            ["out", "k", "ts", "v"])

    def pandas(self) -> Any:
        # numpy object columns (ints and None for ``ts``): Spark's Arrow conversion takes them
        # as they are, and a DataFrame of them costs a fifth of one of typed pandas Series (it
        # is made once per key of a micro-batch)
        import numpy as np
        import pandas as pd

        return pd.DataFrame({"out": np.array(self.out, dtype=np.int32),
                             "k": _objects(self.k), "ts": _objects(self.ts), "v": _objects(self.v)},
                            copy=False)


def _objects(values: list[Any]) -> Any:
    import numpy as np

    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


class Router:
    """Sends a vertex's ``(tag, record)`` outputs to its edges (or encodes them for its sink).

    This is the per-record hot path of a STREAMING job: the loops append to the columns
    directly, and a vertex with one main output edge has a loop of its own."""

    def __init__(self, prog: VertexProgram, subtask: int = 0) -> None:
        self.ts = prog.timestamped_output
        self.encoding = prog.sink_encoding
        vertex = prog.vertex
        #: a print sink's line of a record (Flink's text and prefix), else ``str``
        self.line: Callable[[Any], str] = (
            line_formatter(vertex.operators[-1].config, subtask, vertex.parallelism)
            if vertex.operators[-1].kind is OperatorKind.SINK_PRINT else str)
        #: a declared output type's values as they cross Java in Flink (FLOAT: 32 bits)
        self.convert = read_back(vertex.operators[-1].config.get("output_type"), self.ts)
        #: (index, side output, key selector or None, input index) per edge
        self.edges = [(e.index, e.side_output,
                       as_callable(prog.load(e.key_selector_key)) if e.key_selector_key else None,
                       e.input_index) for e in prog.edges]
        #: the one edge into a window that pre-aggregates takes partials (``route_partials``)
        self.pre_aggregator = next((WindowPreAggregator(prog.load(e.window_operator_key))
                                    for e in prog.edges if e.window_operator_key), None)

    def route(self, tagged: Iterable[tuple[str | None, Any]], rows: Rows) -> None:
        ts_on = self.ts
        add_out, add_k, add_ts, add_v = rows.out.append, rows.k.append, rows.ts.append, rows.v.append
        before = len(rows.v)
        if self.encoding is not None:
            as_line, line = self.encoding != "record", self.line
            for tag, rec in tagged:
                if tag is not None:
                    continue
                ts, value = rec if ts_on else (None, rec)
                add_out(SINK_OUT)
                add_k(None)
                add_ts(ts)
                add_v(line(value).encode("utf-8") if as_line else dumps(value))
            rows.records += len(rows.v) - before
            return
        if self.convert is not None:
            convert = self.convert
            tagged = ((tag, convert(rec) if tag is None else rec) for tag, rec in tagged)
        if self.pre_aggregator is not None:
            self.route_partials(tagged, rows, self.pre_aggregator)
            return
        edges = self.edges
        if len(edges) == 1 and edges[0][1] is None and edges[0][3] is None:
            index, _, selector, _ = edges[0]
            for tag, rec in tagged:
                if tag is not None:
                    continue
                ts, value = rec if ts_on else (None, rec)
                add_out(index)
                add_k(None if selector is None else dumps(selector(value)))
                add_ts(ts)
                add_v(dumps(value))
            rows.records += len(rows.v) - before
            return
        routed = 0
        for tag, rec in tagged:
            ts, value = rec if ts_on else (None, rec)
            pickled: bytes | None = None
            for index, side_output, selector, input_index in edges:
                if side_output != tag:
                    continue
                if pickled is None:
                    pickled = dumps(value)
                    routed += 1
                add_out(index)
                add_k(None if selector is None else dumps(selector(value)))
                add_ts(ts)
                add_v(pickled if input_index is None else dumps((input_index, value)))
        rows.records += routed


    def route_partials(self, tagged: Iterable[tuple[str | None, Any]], rows: Rows,
                       pre_aggregator: WindowPreAggregator) -> None:
        """The main output into a window that pre-aggregates: one row per (key, window) of
        these records, ``(window, partial)`` as in BATCH (records out: the partials). Its
        timestamp is the window's max timestamp, but no later than the largest of the records:
        Spark's watermark after this vertex is the largest timestamp of its rows, which must
        stay the records' (the window operator reads no partial's timestamp)."""
        index, _, selector, _ = self.edges[0]
        assert selector is not None  # a HASH edge
        latest: list[int] = []

        def main() -> Iterator[Any]:
            top = MIN_WATERMARK
            for tag, rec in tagged:
                if tag is None:
                    if self.ts and rec[0] is not None and rec[0] > top:
                        top = rec[0]
                    yield rec
            latest.append(top)

        combined, _ = pre_aggregator.combine(main(), selector, self.ts)
        top = latest[0] if latest else MIN_WATERMARK
        keys: dict[Any, bytes] = {}
        for (key, window), partial in combined.items():
            k = keys.get(key)
            if k is None:
                k = keys[key] = dumps(key)
            rows.out.append(index)
            rows.k.append(k)
            rows.ts.append(min(window.max_timestamp(), top))
            rows.v.append(dumps((window, partial)))
        rows.records += len(combined)


def open_functions(functions: list[Any], ctx: RuntimeContext) -> None:
    """``open`` each of a chain's functions with the subtask's context (STREAMING)."""
    for fn in functions:
        open_function(fn, ctx, batch=False)


def stateless_vertex(vertex: JobVertex, operators: list[OperatorSpec]) -> JobVertex:
    """``vertex`` with only ``operators``, and no edges: a chain to run on its own."""
    return replace(vertex, operators=operators, inputs=[], outputs=[])


class _Counted:
    """Records passed through, counted."""

    __slots__ = ("records", "n")

    def __init__(self, records: Iterable[Any]) -> None:
        self.records = records
        self.n = 0

    def __iter__(self) -> Iterator[Any]:
        for rec in self.records:
            self.n += 1
            yield rec


# -- stateless vertices: mapInArrow ---------------------------------------------------------


class ChainTask:
    """A stateless vertex's chain opened in one Spark task: records in, rows out."""

    def __init__(self, prog: VertexProgram) -> None:
        from pyspark import TaskContext

        self.prog = prog
        vertex = prog.vertex
        ops = [op for op in vertex.operators if not (op.kind.is_source or op.kind.is_sink)]
        self.functions = [prog.load(op.function_key) if op.function_key else None for op in ops]
        tc = TaskContext.get()
        self.subtask = (tc.partitionId() if tc is not None else 0) % max(vertex.parallelism, 1)
        self.report = reports.begin(prog.job_id, vertex, prog.job_parameters)
        open_functions(self.functions, self.report.context())
        self.report.running()
        self.router = Router(prog, self.subtask)
        self.chain_vertex = stateless_vertex(vertex, ops)
        self.two_inputs = prog.timestamped_input and any(e.input_index is not None for e in vertex.inputs)

    def process(self, records: Iterable[Any]) -> Rows:
        """The rows of the vertex's outputs for ``records`` (counted into its records in/out)."""
        prog = self.prog
        if self.two_inputs:  # a two-input operator takes (input, (timestamp, value))
            records = ((r[1][0], (r[0], r[1][1])) for r in records)
        reports.activate(self.report)
        seen = _Counted(records)
        tagged, _ = chain(self.chain_vertex, self.functions, iter(seen), keyed=False, tagged=True,
                          timestamped=prog.timestamped_input)
        rows = Rows()
        self.router.route(tagged, rows)
        prog.count(self.subtask, seen.n, rows)
        self.report.count(seen.n, rows.records)
        return rows

    def copy(self, read: Callable[[str], Iterator[Any]], paths: list[str]) -> Iterator[Rows]:
        """A FileSource chained straight into a bulk FileSink: the files' records as Arrow
        tables (``read``), handed to the sink in rows of their own (``SINK_TABLE_OUT``: an IPC
        stream of up to ``WRITE_TABLE_ROWS`` records), no Row made; counted as records in and
        out. One row at a time: a micro-batch's files may be larger than an executor's heap,
        and the JVM takes each Arrow batch it is given whole."""
        reports.activate(self.report)
        for path in paths:
            for data, n in ipc_streams(read(path)):
                rows = Rows()
                rows.out.append(SINK_TABLE_OUT)
                rows.k.append(None)
                rows.ts.append(None)
                rows.v.append(data)
                rows.records += n
                yield self._copied(rows)

    def _copied(self, rows: Rows) -> Rows:
        self.prog.count(self.subtask, rows.records, rows)
        self.report.count(rows.records, rows.records)
        return rows


def ipc_streams(tables: Iterable[Any]) -> Iterator[tuple[bytes, int]]:
    """Arrow tables as IPC streams of up to ``WRITE_TABLE_ROWS`` records each, with their
    record counts. A format may read a whole file as one table: it is sliced (no copy), so that
    each row an executor's JVM holds is a few MB, not a file."""
    import pyarrow as pa

    sink: Any = None
    writer: Any = None
    n = 0
    for table in tables:
        start = 0
        while start < table.num_rows:
            if writer is None:
                sink = pa.BufferOutputStream()
                writer = pa.ipc.new_stream(sink, table.schema)
            piece = table.slice(start, WRITE_TABLE_ROWS - n)
            writer.write(piece)
            n += piece.num_rows
            start += piece.num_rows
            if n >= WRITE_TABLE_ROWS:
                writer.close()
                yield sink.getvalue().to_pybytes(), n
                sink = writer = None
                n = 0
    if writer is not None:
        writer.close()
        yield sink.getvalue().to_pybytes(), n


def table_copy(prog: VertexProgram) -> Callable[[str], Iterator[Any]] | None:
    """For a FileSource vertex that is just the source and a bulk FileSink: how its files go
    to the sink as Arrow tables (``runtime.filesink.batch_copy``); else None."""
    ops = prog.vertex.operators
    if (prog.source_format != "files" or len(ops) != 2 or ops[-1].kind is not OperatorKind.SINK_TEXT
            or prog.timestamped_output or not ops[0].function_key or not ops[-1].function_key):
        return None
    return batch_copy(prog.load(ops[0].function_key), prog.load(ops[-1].function_key))


def tables_of(ipc_streams: Iterable[bytes]) -> Iterator[Any]:
    """The Arrow tables of ``SINK_TABLE_OUT`` rows."""
    import pyarrow as pa

    for data in ipc_streams:
        yield pa.ipc.open_stream(data).read_all()


class ChainFunction:
    """``mapInArrow`` of a stateless vertex on its own (a source's chain, or a vertex that reads
    several stages): records through the chained operators, then out to the edges or the sink."""

    def __init__(self, prog: VertexProgram) -> None:
        self.prog = prog

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        with reports.reporting(), user_code_environment(self.prog):
            task = ChainTask(self.prog)
            is_source = self.prog.vertex.operators[0].kind.is_source
            copy = table_copy(self.prog) if is_source else None
            if task.router.pre_aggregator is not None:
                # the task's records in one pass: one partial per (key, window) of the partition
                rows = task.process(itertools.chain.from_iterable(
                    _source_records(self.prog, b) if is_source
                    else _input_records(b, self.prog.timestamped_input) for b in batches))
                if len(rows):
                    yield rows.arrow()
                return
            for batch in batches:
                if copy is not None:
                    for rows in task.copy(copy, batch.column("path").to_pylist()):
                        yield rows.arrow()
                    continue
                rows = task.process(_source_records(self.prog, batch) if is_source
                                    else _input_records(batch, self.prog.timestamped_input))
                if len(rows):
                    yield rows.arrow()


def user_code_environment(prog: VertexProgram) -> Any:
    """The job's Python dependencies as a context for a task's run of user code."""
    env = prog.environment()
    return contextlib.nullcontext() if env is None else env


#: Spark's time mode of a keyed vertex's query by the domain of its timers
def watermark_delay(vertex: JobVertex) -> int | None:
    """The bounded out-of-orderness (ms) of a watermark strategy in the vertex's chain."""
    delays = [op.config["watermark_delay_ms"] for op in vertex.operators
              if "watermark_delay_ms" in op.config]
    return max(delays) if delays else None


def is_keyed_head(vertex: JobVertex) -> bool:
    """True when the vertex starts with a keyed operator (it reads a HASH exchange)."""
    return any(e.ship_strategy is Partitioning.HASH for e in vertex.inputs)


def edge_outs(vertex: JobVertex) -> list[EdgeOut]:
    return [EdgeOut(i, e.side_output, e.key_selector_key if e.ship_strategy is Partitioning.HASH
                    else None, e.input_index,
                    e.combiner_key if e.window_partials_streaming else None)
            for i, e in enumerate(vertex.outputs)]


def edge_index(vertex: JobVertex, edge: JobEdge) -> int:
    return next(i for i, e in enumerate(vertex.outputs) if e is edge)


__all__ = ["ChainFunction", "EdgeOut", "RECORD_SCHEMA",
           "SINK_OUT", "SINK_TABLE_OUT", "VertexProgram", "edge_index",
           "edge_outs", "is_keyed_head", "table_copy", "tables_of",
           "watermark_delay"]
