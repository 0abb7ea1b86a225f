"""The STREAMING runtime inside Spark's Python workers: a JobVertex's operator chain over the
Arrow batches of a micro-batch, and its keyed head in Spark's state store.

Between vertices every record is one Arrow row ``(out int, k binary, ts long, v binary)``:
which output edge of the producer it travels on, its cloudpickled key (for a HASH edge), its
event time (or null), and the cloudpickled record. A stateless vertex is one ``mapInArrow``
(:class:`ChainFunction`); a keyed vertex is ``groupBy("k")`` then
``transformWithStateInPandas`` (:class:`KeyedVertexProcessor`), whose state (the operator's
keyed state, its timers, its windows) is one pickled value per key in Spark's state store
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
from typing import Any, Callable, Iterable, Iterator

import cloudpickle

from ..dependencies import JobEnvironment, prepare
from ..functions import Function, RuntimeContext, TimeDomain, TimerService, as_callable
from ..graph.jobgraph import JobEdge, JobVertex, OperatorSpec, PythonDependency
from ..graph.streamgraph import OperatorKind, Partitioning
from ..operators import (
    _EMPTY,
    CoMapOperator,
    KeyedCoProcessOperator,
    KeyedFunctionOperator,
    KeyedProcessOperator,
    StreamOperator,
    TwoInputOperator,
    WindowOperator,
    _KeyedContext,
    _outputs,
)
from ..state import KeyedStateBackend
from ..taskmanager.task import _chain
from ..window import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    CountSlidingWindowAssigner,
    EventTimeTrigger,
    GlobalWindow,
    MergingWindowAssigner,
    ProcessingTimeTrigger,
)

#: the Arrow schema of records between vertices
RECORD_SCHEMA = "out int, k binary, ts long, v binary"
#: the record counts' key of a watermark vertex's largest output timestamp
MAX_TS = "max_ts"
#: the output index of a sink's rows
SINK_OUT = -1

_loads = pickle.loads


def _dumps(obj: Any) -> bytes:
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
    #: how the source's Spark rows become records: "text", "long", "blob", "records"
    source_format: str = "records"
    #: for a keyed vertex: timers fire by the watermark (EventTime) or the clock (ProcessingTime)
    time_mode: str = "None"
    #: a Spark accumulator of {(vertex id, subtask, "in" | "out"): records}, and of a watermark's
    #: vertex {(vertex id, -1, "max_ts"): its largest output timestamp} (``RecordCounts``)
    counter: Any = None
    #: the job's Python files, archives and requirements (their blobs come from the TaskManager)
    dependencies: list[PythonDependency] = field(default_factory=list)
    _code: dict[str, Any] = field(default_factory=dict)

    def load(self, key: str) -> Any:
        code = self._code.get(key)
        if code is None:
            code = self._code[key] = _loads(self.blobs[key])
        return code

    def count(self, subtask: int, records_in: int, rows: "_Rows") -> None:
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
        if not self.dependencies:
            return None
        from ..taskmanager.task import SlotWorker, TaskManagerUnavailable

        fetch: Callable[[str], bytes | None]
        try:
            fetch = SlotWorker.current().fetch
        except TaskManagerUnavailable:
            # Spark's Python worker on the driver (transformWithState's init) runs beside the
            # JobManager: its BlobServer's directory has the blobs
            fetch = _jobmanager_blob
        return prepare(self.dependencies, fetch)

    def __getstate__(self) -> tuple[Any, ...]:
        return (self.job_id, self.vertex, self.blobs, self.edges, self.timestamped_input,
                self.timestamped_output, self.sink_encoding, self.source_format, self.time_mode,
                self.counter, self.dependencies)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        (self.job_id, self.vertex, self.blobs, self.edges, self.timestamped_input,
         self.timestamped_output, self.sink_encoding, self.source_format, self.time_mode,
         self.counter, self.dependencies) = state
        self._code = {}


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
        return itertools.chain.from_iterable(_loads(b) for b in batch.column(0).to_pylist())
    if fmt == "sequence":
        return itertools.chain.from_iterable(range(a, b + 1) for a, b in zip(
            batch.column("start").to_pylist(), batch.column("end").to_pylist()))
    return _input_records(batch, prog.timestamped_input)


def _input_records(batch: Any, timestamped: bool) -> Iterator[Any]:
    vs = batch.column("v").to_pylist()
    if timestamped:
        return zip(batch.column("ts").to_pylist(), map(_loads, vs))
    return map(_loads, vs)


class _Rows:
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


class _Router:
    """Sends a vertex's ``(tag, record)`` outputs to its edges (or encodes them for its sink).

    This is the per-record hot path of a STREAMING job: the loops append to the columns
    directly, and a vertex with one main output edge has a loop of its own."""

    def __init__(self, prog: VertexProgram) -> None:
        self.ts = prog.timestamped_output
        self.encoding = prog.sink_encoding
        #: (index, side output, key selector or None, input index) per edge
        self.edges = [(e.index, e.side_output,
                       as_callable(prog.load(e.key_selector_key)) if e.key_selector_key else None,
                       e.input_index) for e in prog.edges]

    def route(self, tagged: Iterable[tuple[str | None, Any]], rows: _Rows) -> None:
        ts_on = self.ts
        add_out, add_k, add_ts, add_v = rows.out.append, rows.k.append, rows.ts.append, rows.v.append
        before = len(rows.v)
        if self.encoding is not None:
            as_line = self.encoding != "record"
            for tag, rec in tagged:
                if tag is not None:
                    continue
                ts, value = rec if ts_on else (None, rec)
                add_out(SINK_OUT)
                add_k(None)
                add_ts(ts)
                add_v(str(value).encode("utf-8") if as_line else _dumps(value))
            rows.records += len(rows.v) - before
            return
        edges = self.edges
        if len(edges) == 1 and edges[0][1] is None and edges[0][3] is None:
            index, _, selector, _ = edges[0]
            for tag, rec in tagged:
                if tag is not None:
                    continue
                ts, value = rec if ts_on else (None, rec)
                add_out(index)
                add_k(None if selector is None else _dumps(selector(value)))
                add_ts(ts)
                add_v(_dumps(value))
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
                    pickled = _dumps(value)
                    routed += 1
                add_out(index)
                add_k(None if selector is None else _dumps(selector(value)))
                add_ts(ts)
                add_v(pickled if input_index is None else _dumps((input_index, value)))
        rows.records += routed


def _open(functions: list[Any], ctx: RuntimeContext) -> None:
    for fn in functions:
        if isinstance(fn, (Function, StreamOperator)):
            fn.open(ctx)


def _stateless(vertex: JobVertex, operators: list[OperatorSpec]) -> JobVertex:
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


class _ChainTask:
    """A stateless vertex's chain opened in one Spark task: records in, rows out."""

    def __init__(self, prog: VertexProgram) -> None:
        from pyspark import TaskContext

        self.prog = prog
        vertex = prog.vertex
        ops = [op for op in vertex.operators if not (op.kind.is_source or op.kind.is_sink)]
        self.functions = [prog.load(op.function_key) if op.function_key else None for op in ops]
        tc = TaskContext.get()
        self.subtask = (tc.partitionId() if tc is not None else 0) % max(vertex.parallelism, 1)
        _open(self.functions, RuntimeContext(vertex.name, self.subtask, vertex.parallelism, 0, {}))
        self.router = _Router(prog)
        self.chain_vertex = _stateless(vertex, ops)
        self.two_inputs = prog.timestamped_input and any(e.input_index is not None for e in vertex.inputs)

    def process(self, records: Iterable[Any]) -> _Rows:
        """The rows of the vertex's outputs for ``records`` (counted into its records in/out)."""
        prog = self.prog
        if self.two_inputs:  # a two-input operator takes (input, (timestamp, value))
            records = ((r[1][0], (r[0], r[1][1])) for r in records)
        seen = _Counted(records)
        tagged, _ = _chain(self.chain_vertex, self.functions, iter(seen), keyed=False, tagged=True,
                           timestamped=prog.timestamped_input)
        rows = _Rows()
        self.router.route(tagged, rows)
        prog.count(self.subtask, seen.n, rows)
        return rows


class ChainFunction:
    """``mapInArrow`` of a stateless vertex on its own (a source's chain, or a vertex that reads
    several stages): records through the chained operators, then out to the edges or the sink."""

    def __init__(self, prog: VertexProgram) -> None:
        self.prog = prog

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        with _environment(self.prog):
            task = _ChainTask(self.prog)
            is_source = self.prog.vertex.operators[0].kind.is_source
            for batch in batches:
                rows = task.process(_source_records(self.prog, batch) if is_source
                                    else _input_records(batch, self.prog.timestamped_input))
                if len(rows):
                    yield rows.arrow()


#: the Arrow schema of a region's rows: records with the ``node`` of the vertex that made them
REGION_SCHEMA = "node int, out int, k binary, ts long, v binary"
#: the ``node`` of a region's input: its stage's root
ROOT_NODE = -1


@dataclass(slots=True)
class RegionVertex:
    """A stateless vertex run in a region (``RegionFunction``)."""

    #: the ``node`` of its rows
    node: int
    program: VertexProgram
    #: what it reads: (the producer's node, or ``ROOT_NODE``; the producer's output edge)
    inputs: list[tuple[int, int]]
    #: its output edges read inside the region: their rows stay in the worker
    internal: frozenset[int] = frozenset()


class RegionFunction:
    """``mapInArrow`` of a stage's region: the stateless vertices that read only its root's
    stream, run in one Python task in topological order, each fed the rows of its producers.
    A stream fanned out (several consumers, side outputs, sinks) is computed once: a Spark plan is
    a tree, and consumers in DataFrames of their own would each compute their producer again."""

    def __init__(self, vertices: list[RegionVertex]) -> None:
        self.vertices = vertices

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        with _environment(self.vertices[0].program):
            tasks = [(rv, _ChainTask(rv.program)) for rv in self.vertices]
            for batch in batches:
                produced = {ROOT_NODE: (batch.column("out").to_pylist(), batch.column("ts").to_pylist(),
                                        batch.column("v").to_pylist())}
                node: list[int] = []
                out = _Rows()
                for rv, task in tasks:
                    rows = task.process(_picked(produced, rv.inputs, rv.program.timestamped_input))
                    produced[rv.node] = (rows.out, rows.ts, rows.v)
                    if not rv.internal:
                        node += [rv.node] * len(rows)
                        out.out += rows.out
                        out.k += rows.k
                        out.ts += rows.ts
                        out.v += rows.v
                        continue
                    for o, k, ts, v in zip(rows.out, rows.k, rows.ts, rows.v):
                        if o not in rv.internal:
                            node.append(rv.node)
                            out.out.append(o)
                            out.k.append(k)
                            out.ts.append(ts)
                            out.v.append(v)
                if node:
                    records = out.arrow()
                    yield pa.RecordBatch.from_arrays([pa.array(node, pa.int32()), *records.columns],
                                                     ["node", *records.schema.names])


def _picked(produced: dict[int, tuple[list[int], list[int | None], list[bytes]]],
            inputs: list[tuple[int, int]], timestamped: bool) -> Iterator[Any]:
    """The records a region's vertex reads from the rows its producers made."""
    for producer, edge in inputs:
        outs, stamps, values = produced[producer]
        if outs.count(edge) == len(outs):  # all of them (the common case): no test per row
            yield from zip(stamps, map(_loads, values)) if timestamped else map(_loads, values)
            continue
        for o, ts, v in zip(outs, stamps, values):
            if o == edge:
                yield (ts, _loads(v)) if timestamped else _loads(v)


def _environment(prog: VertexProgram) -> Any:
    """The job's Python dependencies as a context for a task's run of user code."""
    env = prog.environment()
    return contextlib.nullcontext() if env is None else env


# -- a keyed vertex: transformWithStateInPandas ---------------------------------------------


class StreamingTimerService(TimerService):
    """A key's timers in STREAMING mode. Timers of the operator's time mode are Spark's
    (``registerTimer``); the others are kept in the key's state and fire at the key's next
    invocation after they are due. Either way a timer is deduplicated per (domain, timestamp)."""

    def __init__(self, runner: "_KeyRunner") -> None:
        self.runner = runner

    def current_processing_time(self) -> int:
        return self.runner.processing_time

    def current_watermark(self) -> int:
        return self.runner.watermark

    def register_event_time_timer(self, timestamp: int) -> None:
        self.runner.register(TimeDomain.EVENT_TIME, int(timestamp))

    def register_processing_time_timer(self, timestamp: int) -> None:
        self.runner.register(TimeDomain.PROCESSING_TIME, int(timestamp))

    def delete_event_time_timer(self, timestamp: int) -> None:
        self.runner.delete(TimeDomain.EVENT_TIME, int(timestamp))

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self.runner.delete(TimeDomain.PROCESSING_TIME, int(timestamp))


class _KeyRunner:
    """The keyed head operator of a vertex, run for one key at a time with that key's state
    loaded from (and saved back to) the state store."""

    def __init__(self, prog: VertexProgram, handle: Any) -> None:
        self.prog = prog
        self.handle = handle
        vertex = prog.vertex
        head = vertex.operators[0]
        self.head_kind = head.kind
        self.head = prog.load(head.function_key) if head.function_key else None
        if isinstance(self.head, (KeyedProcessOperator, KeyedFunctionOperator, WindowOperator)) or \
                isinstance(self.head, TwoInputOperator) and self.head.keyed:
            pass
        elif head.kind is OperatorKind.REDUCE:
            self.reduce = as_callable(self.head)
        else:
            raise NotImplementedError(
                f"'{vertex.name}': {type(self.head).__name__} is not supported in STREAMING mode yet")
        self.event_mode = prog.time_mode == "EventTime"
        #: timers of the query's time mode are Spark's; in mode None all live in the key's state
        self.spark_timers = prog.time_mode != "None"
        self.backend = KeyedStateBackend()
        ctx = RuntimeContext(vertex.name, 0, vertex.parallelism, 0, {})
        if isinstance(self.head, StreamOperator):
            self.head._backend = self.backend
            _open(self.head.user_functions, ctx.with_keyed_state(self.backend))
        self.timers = StreamingTimerService(self)
        self.kctx = _KeyedContext(self.timers)  # type: ignore[arg-type]
        tail_ops = vertex.operators[1:]
        tail_ops = [op for op in tail_ops if not op.kind.is_sink]
        self.tail_vertex = _stateless(vertex, tail_ops)
        self.tail_functions = [prog.load(op.function_key) if op.function_key else None
                               for op in tail_ops]
        _open(self.tail_functions, ctx)
        self.router = _Router(prog)
        self.key: Any = None
        self.watermark = MIN_WATERMARK
        self.processing_time = 0
        #: the key's pickled state: {"state": {name: value}, "timers": {(domain, ts)}, ...}
        self.data: dict[str, Any] = {}

    # -- the key's state ---------------------------------------------------------------------
    def load(self, key_bytes: bytes, state: Any, timer_values: Any) -> None:
        self.key = _loads(key_bytes)
        self.kctx._key = self.key
        self.backend.current_key = self.key
        self.watermark = timer_values.getCurrentWatermarkInMs() if self.event_mode else MIN_WATERMARK
        if self.watermark is None or self.watermark < 0:
            self.watermark = MIN_WATERMARK
        self.processing_time = timer_values.getCurrentProcessingTimeInMs()
        self.data = _loads(state.get()[0]) if state.exists() else {}
        # the tables are emptied and filled in place: state objects a function made in open()
        # hold them
        tables = self.backend._tables
        for table in tables.values():
            table.clear()
        for name, (kind, value) in self.data.get("state", {}).items():
            self.backend._kinds.setdefault(name, kind)
            tables.setdefault(name, {})[self.key] = value

    def save(self, state: Any) -> None:
        saved = {}
        for name, table in self.backend._tables.items():
            if self.key in table:
                saved[name] = (self.backend._kinds[name], table[self.key])
        for table in self.backend._tables.values():
            table.clear()
        self.data["state"] = saved
        if any(self.data.get(k) for k in ("state", "timers", "windows", "acc", "count", "trigger_timers",
                                          "trigger_state", "sessions")):
            state.update((_dumps(self.data),))
        else:
            state.clear()

    def register(self, domain: TimeDomain, ts: int) -> None:
        timers = self.data.setdefault("timers", set())
        if (domain, ts) in timers:
            return
        timers.add((domain, ts))
        if self.spark_timers and (domain is TimeDomain.EVENT_TIME) == self.event_mode:
            self.handle.registerTimer(ts)

    def delete(self, domain: TimeDomain, ts: int) -> None:
        timers = self.data.get("timers")
        if not timers or (domain, ts) not in timers:
            return
        timers.discard((domain, ts))
        if self.spark_timers and (domain is TimeDomain.EVENT_TIME) == self.event_mode:
            self.handle.deleteTimer(ts)

    # -- records and timers ------------------------------------------------------------------
    def records(self, records: list[tuple[int | None, Any]]) -> Iterator[tuple[str | None, int | None, Any]]:
        head = self.head
        if isinstance(head, KeyedProcessOperator):
            ctx = self.kctx
            pe = head._process_element
            for ts, value in records:
                ctx._timestamp = ts
                yield from _outputs(pe(value, ctx), ts, ctx._side)
        elif isinstance(head, KeyedFunctionOperator):
            call, kind = head._call, head.kind
            for ts, value in records:
                if kind == "map":
                    yield (None, ts, call(value))
                elif kind == "filter":
                    if call(value):
                        yield (None, ts, value)
                else:
                    for item in call(value) or ():
                        yield (None, ts, item)
        elif isinstance(head, TwoInputOperator):  # keyed connect: each record is (input, value)
            ctx, calls = self.kctx, head._calls
            for ts, (idx, value) in records:
                if isinstance(head, KeyedCoProcessOperator):
                    ctx._timestamp = ts
                    yield from _outputs(calls[idx](value, ctx), ts, ctx._side)
                elif isinstance(head, CoMapOperator):
                    yield (None, ts, calls[idx](value))
                else:  # CoFlatMapOperator
                    for item in calls[idx](value) or ():
                        yield (None, ts, item)
        elif isinstance(head, WindowOperator):
            yield from _WindowDriver(head, self).records(records)
        else:
            acc = self.data.get("acc", _EMPTY)
            for ts, value in records:
                acc = value if acc is _EMPTY else self.reduce(acc, value)
                yield (None, ts, acc)  # a running reduce: every update goes out, as in Flink
            self.data["acc"] = acc

    def due_timers(self, fired: int | None) -> Iterator[tuple[str | None, int | None, Any]]:
        """Fire the key's due timers: the one Spark fired (``fired``), and any of the other time
        domain that is due."""
        timers = self.data.get("timers") or set()
        due = []
        for domain, ts in sorted(timers, key=lambda t: (t[1], t[0].value)):
            mine = self.spark_timers and (domain is TimeDomain.EVENT_TIME) == self.event_mode
            if (mine and fired is not None and ts <= fired) or \
                    (not mine and domain is TimeDomain.PROCESSING_TIME and ts <= self.processing_time) or \
                    (not mine and domain is TimeDomain.EVENT_TIME and ts <= self.watermark):
                due.append((domain, ts))
        head = self.head
        for domain, ts in due:
            if (domain, ts) not in timers:
                continue
            timers.discard((domain, ts))
            if isinstance(head, WindowOperator):
                yield from _WindowDriver(head, self).on_timer(ts, domain)
                continue
            on_timer = getattr(getattr(head, "function", None), "on_timer", None)
            if on_timer is None:
                continue
            ctx = self.kctx
            ctx._timestamp = ts
            ctx._domain = domain
            yield from _outputs(on_timer(ts, ctx), ts if domain is TimeDomain.EVENT_TIME else None,
                                ctx._side)
            ctx._domain = None

    def emit(self, outputs: Iterator[tuple[str | None, int | None, Any]], rows: _Rows) -> None:
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
        tagged, _ = _chain(self.tail_vertex, self.tail_functions, iter(main), keyed=False,
                           tagged=True, timestamped=True)
        # the tail keeps timestamps; drop them if the output does not carry event time
        self.router.route(tagged if ts_out else ((t, r[1]) for t, r in tagged), rows)
        if side:
            self.router.route(side, rows)


class _WindowDriver:
    """A WindowOperator in STREAMING mode. With its assigner's default trigger: an event-time
    window fires when the watermark passes its end, late records (behind ``end +
    allowed_lateness``) go to the late side output or are dropped, a late record within the
    lateness fires its window again, and a window's contents are removed at its cleanup time; a
    processing-time window fires when the clock passes its end; a count window fires every
    ``size`` (tumbling) or ``slide`` (sliding, with the last ``size``) records of its key. Any
    other trigger or an evictor runs as in Flink's WindowOperator (``_TriggerDriver``).
    Contents, trigger state and timers live in the key's state."""

    def __init__(self, op: WindowOperator, runner: _KeyRunner) -> None:
        if not getattr(op, "_ready", False):
            op._setup()
        self.op = op
        self.runner = runner
        self.contents: dict[Any, Any] = runner.data.setdefault("windows", {})
        default = EventTimeTrigger if op.assigner.is_event_time() else ProcessingTimeTrigger
        #: a trigger or evictor other than the assigner's own: run by ``_TriggerDriver``
        self.any_trigger = not op._count_shortcut and (op.evictor is not None
                                                       or type(op.trigger) is not default)

    def _fire(self, w: Any) -> Iterator[tuple[str | None, int | None, Any]]:
        self.op._tctx.watermark = self.runner.watermark
        yield from self.op._emit(self.runner.key, w, self.contents)

    def records(self, records: list[tuple[int | None, Any]]) -> Iterator[tuple[str | None, int | None, Any]]:
        op, runner = self.op, self.runner
        if op._count_shortcut:
            yield from self._count(records)
            return
        if self.any_trigger:
            yield from _TriggerDriver(op, runner, self.contents).records(records)
            return
        event_time = op.assigner.is_event_time()
        add = op._adder()
        tctx = op._tctx
        tctx.key = runner.key
        tctx.watermark = runner.watermark
        lateness = op.allowed_lateness if event_time else 0
        domain = TimeDomain.EVENT_TIME if event_time else TimeDomain.PROCESSING_TIME
        for ts, value in records:
            if not event_time:
                t = MIN_WATERMARK if ts is None else ts
                for w in op.assigner.assign_windows(value, t, tctx):
                    if isinstance(op.assigner, MergingWindowAssigner):
                        w = self._merge(w)
                    self.contents[w] = add(self.contents.get(w, _EMPTY), value, t)
                    runner.register(domain, w.max_timestamp())
                continue
            if ts is None:
                raise RuntimeError("a window over event time needs timestamps: assign them with "
                                   "assign_timestamps_and_watermarks(WatermarkStrategy...)")
            windows = op.assigner.assign_windows(value, ts, tctx)
            late_all = True
            for w in windows:
                if w.max_timestamp() + lateness <= runner.watermark:
                    continue  # late for this window
                late_all = False
                if isinstance(op.assigner, MergingWindowAssigner):
                    w = self._merge(w)
                self.contents[w] = add(self.contents.get(w, _EMPTY), value, ts)
                if w.max_timestamp() <= runner.watermark:
                    yield from self._fire(w)  # a late firing within the allowed lateness
                else:
                    runner.register(TimeDomain.EVENT_TIME, w.max_timestamp())
                cleanup = w.max_timestamp() + lateness
                if lateness and cleanup < MAX_WATERMARK:
                    runner.register(TimeDomain.EVENT_TIME, cleanup)
            if late_all and windows:
                if op.late_data_tag is not None:
                    yield (op.late_data_tag.tag_id, ts, value)

    def _count(self, records: list[tuple[int | None, Any]]) -> Iterator[tuple[str | None, int | None, Any]]:
        """``count_window``: the key's count (and, sliding, its last ``size`` records) in its state."""
        op, data = self.op, self.runner.data
        count = data.setdefault("count", {"n": 0, "buffer": []})
        w = GlobalWindow.get()
        if isinstance(op.assigner, CountSlidingWindowAssigner):
            size, slide = op.assigner.size, op.assigner.slide
            buffer = count["buffer"]
            for ts, value in records:
                buffer.append((value, ts))
                del buffer[:-size]
                count["n"] = (count["n"] + 1) % slide
                if count["n"] == 0:
                    self.contents[w] = list(buffer)
                    yield from self._fire(w)
                    del self.contents[w]
            return
        size = op.assigner.size  # type: ignore[attr-defined]
        add = op._adder()
        for ts, value in records:
            self.contents[w] = add(self.contents.get(w, _EMPTY), value, MIN_WATERMARK if ts is None else ts)
            count["n"] += 1
            if count["n"] == size:
                yield from self._fire(w)
                del self.contents[w]
                count["n"] = 0

    def _merge(self, w: Any) -> Any:
        """A session window: merge it with the key's windows it overlaps."""
        from ..window import TimeWindow

        overlapping = [c for c in self.contents if c[0] <= w[1] and w[0] <= c[1]]
        if not overlapping:
            return w
        result = TimeWindow(min([w[0]] + [c[0] for c in overlapping]),
                            max([w[1]] + [c[1] for c in overlapping]))
        acc: Any = _EMPTY
        for c in sorted(overlapping, key=lambda c: c[0]):
            content = self.contents.pop(c)
            acc = content if acc is _EMPTY else self.op._merge_contents(acc, content)
            if c != result:
                self.runner.delete(TimeDomain.EVENT_TIME, c.max_timestamp())
        self.contents[result] = acc
        return result

    def on_timer(self, ts: int, domain: TimeDomain) -> Iterator[tuple[str | None, int | None, Any]]:
        if self.any_trigger:
            yield from _TriggerDriver(self.op, self.runner, self.contents).on_timer(ts, domain)
            return
        lateness = self.op.allowed_lateness
        for w in sorted(self.contents, key=lambda w: (w.max_timestamp(), w[0])):
            if w.max_timestamp() == ts:
                yield from self._fire(w)
            if w.max_timestamp() + lateness <= ts:
                self.contents.pop(w, None)


class _TriggerDriver:
    """A window with any trigger or evictor, as Flink's WindowOperator runs it: the trigger sees
    each element (``on_element``) and its timers (``on_event_time``, ``on_processing_time``);
    FIRE emits the window, PURGE drops its contents, and a window is cleared at its cleanup time.
    The trigger's timers (per window) and window-scoped state, and the key's session windows,
    are kept in the key's state; each timer is also the key's timer, so Spark calls back at its
    time."""

    def __init__(self, op: WindowOperator, runner: "_KeyRunner", contents: dict[Any, Any]) -> None:
        self.op = op
        self.runner = runner
        self.contents = contents
        data = runner.data
        tctx = op._tctx
        tctx.key = runner.key
        tctx.watermark = runner.watermark
        tctx.window = None
        tctx.timers.clear()
        tctx.timers.update(data.get("trigger_timers") or {})
        backend = op._trigger_backend
        backend._tables.clear()
        for name, (kind, values) in (data.get("trigger_state") or {}).items():
            backend._kinds.setdefault(name, kind)
            backend._tables[name] = {(runner.key, w): v for w, v in values.items()}
        #: merging assigners: the key's session windows, sorted by start
        self.order: list[Any] = data.get("sessions") or []
        self.active = set(self.order)

    def _save(self) -> None:
        """The trigger's timers and state back into the key's state; new timers become the key's."""
        op, runner, data = self.op, self.runner, self.runner.data
        timers = dict(op._tctx.timers)
        for domain, ts, _ in timers:
            runner.register(TimeDomain.EVENT_TIME if domain == 0 else TimeDomain.PROCESSING_TIME, ts)
        backend = op._trigger_backend
        state = {name: (backend._kinds[name], {k[1]: v for k, v in table.items()})
                 for name, table in backend._tables.items() if table}
        for key in ("trigger_timers", "trigger_state", "sessions"):
            data.pop(key, None)
        if timers:
            data["trigger_timers"] = timers
        if state:
            data["trigger_state"] = state
        if self.order:
            data["sessions"] = self.order
        backend._tables.clear()
        op._tctx.timers.clear()

    def records(self, records: list[tuple[int | None, Any]]) -> Iterator[tuple[str | None, int | None, Any]]:
        op, runner, contents = self.op, self.runner, self.contents
        tctx, trigger = op._tctx, op.trigger
        event_time = op.assigner.is_event_time()
        add = op._adder()
        try:
            for ts, value in records:
                if event_time and ts is None:
                    raise RuntimeError("a window over event time needs timestamps: assign them with "
                                       "assign_timestamps_and_watermarks(WatermarkStrategy...)")
                t = MIN_WATERMARK if ts is None else ts
                windows = op.assigner.assign_windows(value, t, tctx)
                skipped = True
                for w in windows:
                    if event_time and op._cleanup_time(w) <= runner.watermark:
                        continue  # late for this window
                    skipped = False
                    if op.merging:
                        w = op._merge(w, self.order, self.active, contents, tctx)
                    contents[w] = add(contents.get(w, _EMPTY), value, t)
                    tctx.window = w
                    result = trigger.on_element(value, t, w, tctx)
                    if result.is_fire() and w in contents:
                        yield from op._emit(runner.key, w, contents)
                    if result.is_purge():
                        contents.pop(w, None)
                    op._register_cleanup(tctx, w)
                if (skipped and event_time and op.late_data_tag is not None
                        and t + op.allowed_lateness <= runner.watermark):
                    yield (op.late_data_tag.tag_id, ts, value)
        finally:
            self._save()

    def on_timer(self, ts: int, domain: TimeDomain) -> Iterator[tuple[str | None, int | None, Any]]:
        """Every trigger timer of ``domain`` at or before ``ts``, in time order (a timer set by a
        callback for a time already passed fires in the same round, as in Flink)."""
        op, runner, contents = self.op, self.runner, self.contents
        tctx, trigger = op._tctx, op.trigger
        timers = tctx.timers
        code = 0 if domain is TimeDomain.EVENT_TIME else 1
        is_event = op.assigner.is_event_time()
        try:
            while True:
                due = [k for k in timers if k[0] == code and k[1] <= ts]
                if not due:
                    break
                k = min(due, key=lambda k: (k[1], getattr(k[2], "start", 0), timers[k]))
                del timers[k]
                _, at, w = k
                if op.merging and w not in self.active:
                    continue
                tctx.window = w
                result = (trigger.on_event_time(at, w, tctx) if code == 0
                          else trigger.on_processing_time(at, w, tctx))
                if result.is_fire() and w in contents:
                    yield from op._emit(runner.key, w, contents)
                if result.is_purge():
                    contents.pop(w, None)
                if (code == 0) == is_event and at == op._cleanup_time(w):
                    op._clear_all_state(runner.key, w, contents, tctx)
                    if op.merging and w in self.active:
                        self.active.discard(w)
                        self.order.remove(w)
        finally:
            self._save()


def keyed_processor(prog: VertexProgram) -> Any:
    """The StatefulProcessor of ``transformWithStateInPandas`` running ``prog``'s keyed vertex
    (a subclass made here, so that this module imports without pyspark's SQL extras)."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class _Processor(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.handle = handle
            self.state = handle.getValueState("state", "s binary")
            self.environment = prog.environment()
            if self.environment is not None:
                self.environment.__enter__()  # left in close()
            self.runner = _KeyRunner(prog, handle)

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            runner = self.runner
            runner.load(key[0], self.state, timerValues)
            records: list[tuple[int | None, Any]] = []
            for pdf in rows:
                values = map(_loads, pdf["v"].tolist())
                if prog.timestamped_input:  # Spark gives a long column with nulls as floats
                    records.extend((None if t is None or t != t else int(t), v)
                                   for t, v in zip(pdf["ts"].tolist(), values))
                else:
                    records.extend(zip(itertools.repeat(None), values))
            out = _Rows()
            runner.emit(itertools.chain(runner.records(records), runner.due_timers(None)), out)
            runner.save(self.state)
            prog.count(_subtask(prog), len(records), out)
            if len(out):
                yield out.pandas()

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Any]:
            runner = self.runner
            runner.load(key[0], self.state, timerValues)
            fired = expiredTimerInfo.getExpiryTimeInMs()
            out = _Rows()
            runner.emit(runner.due_timers(fired), out)
            runner.save(self.state)
            prog.count(_subtask(prog), 0, out)
            if len(out):
                yield out.pandas()

        def close(self) -> None:
            environment = getattr(self, "environment", None)
            if environment is not None:
                environment.__exit__(None, None, None)

    return _Processor()


def _subtask(prog: VertexProgram) -> int:
    from pyspark import TaskContext

    tc = TaskContext.get()
    return (tc.partitionId() if tc is not None else 0) % max(prog.vertex.parallelism, 1)


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
                    else None, e.input_index) for i, e in enumerate(vertex.outputs)]


def edge_index(vertex: JobVertex, edge: JobEdge) -> int:
    return next(i for i, e in enumerate(vertex.outputs) if e is edge)


__all__ = ["ChainFunction", "EdgeOut", "RECORD_SCHEMA", "REGION_SCHEMA", "ROOT_NODE", "RegionFunction",
           "RegionVertex", "SINK_OUT", "VertexProgram", "edge_index", "edge_outs", "is_keyed_head",
           "keyed_processor", "watermark_delay"]
