"""The Task: one subtask of one JobVertex, run inside a Spark task by a slot worker.

A :class:`VertexTask` is what the JobMaster ships in Spark's closure: the vertex's operator
chain with BlobServer keys, never the user's code itself. In the slot worker it runs Flink's
ten stages of a Task, reporting each state change to its TaskManager over ``ipc://``:

1. library cache (fetch the blobs)           -> DEPLOYING
2. user-code loading (cloudpickle.loads)
3. input/output registration                 -> INITIALIZING
4. restore (nothing to restore in BATCH mode)
5. switch to RUNNING                         -> RUNNING
6. invoke (open the rich functions, run the chain)
7. accumulators (final snapshot)
8. clean-up (close the rich functions)
9. final state                               -> FINISHED / FAILED
10. unregister from the TaskManager
"""

from __future__ import annotations

import itertools
import operator
import os
import sys
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import cloudpickle
import zmq

from ..accumulators import Accumulator, IntCounter, snapshot
from ..connection import ConnectionInfo
from ..functions import FieldAggregation, Function, ProcessFunction, RuntimeContext, as_callable
from ..graph.executiongraph import RECORDS_IN, RECORDS_OUT
from ..graph.jobgraph import JobVertex
from ..graph.states import ExecutionState
from ..graph.streamgraph import OperatorKind, Partitioning
from ..protocol.messages import BlobReply, FetchBlob, TaskError, TaskEvent
from ..protocol.wire import MessageSigner
from .daemon import CONNECTION_ENV, IPC_ENV

BATCH_RECORDS = 1024
#: unpickled user functions and collections a slot worker keeps (the agent's library cache
#: keeps their bytes, bounded by size)
LOADED_USER_CODE = 32
LIVE_REPORT_SECONDS = 0.2
_INTERNAL_PATHS = tuple(
    os.path.dirname(m.__file__) + os.sep for m in (sys.modules["sessioncluster"], cloudpickle)  # type: ignore[arg-type]
)


class TaskManagerUnavailable(RuntimeError):
    """The slot worker cannot reach its TaskManager agent."""


class UserCodeError(RuntimeError):
    """A user function raised; the message carries the user's own traceback."""


class SlotWorker:
    """The per-process side of a slot worker: its connection to the TaskManager agent and
    the user code it has already loaded (pyspark reuses the worker process across tasks)."""

    _current: "SlotWorker | None" = None

    def __init__(self) -> None:
        ipc = os.environ.get(IPC_ENV)
        conn = os.environ.get(CONNECTION_ENV)
        if not ipc or not conn:
            raise TaskManagerUnavailable(
                "no sessioncluster TaskManager on this executor: spark.python.daemon.module must "
                "be sessioncluster.taskmanager.daemon (is pyspark 4.3.x installed?)")
        from pathlib import Path

        info = ConnectionInfo.read(Path(conn))
        self.signer = MessageSigner(info.key, sender=f"worker-{os.getpid()}")
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 2000)
        self.sock.connect(ipc)
        #: user code already unpickled in this process, most recently used last (bounded:
        #: pyspark reuses the worker for every job of the session)
        self.loaded: OrderedDict[str, Any] = OrderedDict()
        self.pid = os.getpid()

    @classmethod
    def current(cls) -> "SlotWorker":
        """This process's SlotWorker (a forked child makes its own)."""
        if cls._current is None or cls._current.pid != os.getpid():
            cls._current = cls()
        return cls._current

    def report(self, event: TaskEvent) -> None:
        self.signer.send(self.sock, event)

    def load(self, key: str, timeout: float = 60.0) -> Any:
        """User code by key: from this process, else the TaskManager's library cache."""
        have = key in self.loaded
        self.signer.send(self.sock, FetchBlob(key, need_data=not have))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self.sock.poll(int(left * 1000)):
                raise TaskManagerUnavailable(f"the TaskManager did not answer for blob {key[:12]}")
            got = self.signer.recv(self.sock)
            if got is None:
                continue
            reply = got[1]
            if isinstance(reply, BlobReply) and reply.key == key:
                break
        if reply.error:
            raise RuntimeError(f"cannot load user code {key[:12]}: {reply.error}")
        if not have:
            if reply.data is None:
                raise RuntimeError(f"the BlobServer has no blob {key[:12]}")
            self.loaded[key] = cloudpickle.loads(reply.data)
            while len(self.loaded) > LOADED_USER_CODE:
                self.loaded.popitem(last=False)
        self.loaded.move_to_end(key)
        return self.loaded[key]


@dataclass(slots=True)
class Output:
    """What the last operator of a vertex hands on: plain records to a FORWARD consumer in
    the same Spark stage, or batches for an exchange (HASH / REBALANCE) or the client."""

    kind: str  # "forward", "hash", "rebalance", "collect", "print", "text"
    partitions: int = 1
    key_selector_key: str | None = None
    combiner_key: str | None = None
    #: for "collect": at most this many records per subtask
    limit: int | None = None


@dataclass(slots=True)
class VertexTask:
    """Picklable by reference: the Spark closure of one JobVertex."""

    job_id: str
    vertex: JobVertex
    #: "source" (a collection blob), "source_rdd" (records Spark reads: lines, rows),
    #: "forward" (plain records), "exchange" (batches), "keyed" (batches of (key, record))
    input_kind: str
    output: Output
    #: for a collection source: the key of the data and its length
    data_key: str | None = None

    def __call__(self, split_index: int, iterator: Iterable[Any]) -> Iterator[Any]:
        return _run(self, split_index, iterator)


def identity_partitioner(partition: int) -> int:
    """Partition function for exchanges: the sending task already chose the target partition."""
    return partition


# -------------------------------------------------------------------------------------------


def _run(task: VertexTask, subtask: int, upstream: Iterable[Any]) -> Iterator[Any]:
    from pyspark import TaskContext

    tc = TaskContext.get()
    stage_id, spark_task_id, attempt = tc.stageId(), tc.taskAttemptId(), tc.attemptNumber()
    vertex = task.vertex
    worker = SlotWorker.current()
    accumulators: dict[str, Accumulator[Any]] = {RECORDS_IN: IntCounter(), RECORDS_OUT: IntCounter()}
    #: code object of each user function -> the operator it belongs to, to name the operator
    #: of a failure from its traceback (no bookkeeping per record)
    operator_of: dict[Any, str] = {}

    def report(state: ExecutionState, error: TaskError | None = None) -> None:
        worker.report(TaskEvent(task.job_id, vertex.vertex_id, subtask, stage_id, spark_task_id,
                                attempt, state, time.time(), snapshot(accumulators), error))

    opened: list[Function] = []
    try:
        # 1. library cache and 2. user-code loading
        report(ExecutionState.DEPLOYING)
        functions = [worker.load(op.function_key) if op.function_key and not op.kind.is_source else None
                     for op in vertex.operators]
        for op, fn in zip(vertex.operators, functions):
            _register_code(operator_of, fn, op.name)
        key_selector = combiner = None
        if task.output.key_selector_key:
            key_selector = as_callable(worker.load(task.output.key_selector_key))
            _register_code(operator_of, key_selector, "key_by")
        if task.output.combiner_key:
            combiner = as_callable(worker.load(task.output.combiner_key))
        # 3. input/output registration and 4. restore (BATCH mode: no state to restore)
        report(ExecutionState.INITIALIZING)
        ctx = RuntimeContext(vertex.name, subtask, vertex.parallelism, attempt, accumulators)
        # 5. RUNNING
        report(ExecutionState.RUNNING)
        # 6. invoke
        for fn in functions:
            if isinstance(fn, Function):
                opened.append(fn)
                fn.open(ctx)
        records_in = accumulators[RECORDS_IN]
        last_report = [time.monotonic()]

        def live(it: Iterable[Any]) -> Iterator[Any]:
            """Count records in; report live accumulators at most every 200 ms."""
            for n, rec in enumerate(it, 1):
                records_in.value = n
                if n & 15 == 0 and time.monotonic() - last_report[0] >= LIVE_REPORT_SECONDS:
                    last_report[0] = time.monotonic()
                    report(ExecutionState.RUNNING)
                yield rec

        if task.input_kind == "source":
            data = worker.load(task.data_key) if task.data_key else []
            n = len(data)
            records: Iterator[Any] = live(data[subtask * n // vertex.parallelism:
                                               (subtask + 1) * n // vertex.parallelism])
        elif task.input_kind in ("source_rdd", "forward"):
            records = live(upstream)
        else:
            batches = (cloudpickle.loads(b) for _, b in upstream)
            records = live(itertools.chain.from_iterable(batches))
        if task.input_kind != "keyed" and vertex.operators[0].kind is OperatorKind.REDUCE:
            raise RuntimeError("a reduce must follow key_by()")  # guarded by the API

        records = _chain(vertex, functions, records, task.input_kind == "keyed")
        yield from _emit(task, subtask, records, key_selector, combiner,
                         accumulators[RECORDS_OUT])
        # 7. accumulators, 8. clean-up
        for fn in opened:
            fn.close()
        opened.clear()
        # 9. final state (with the final accumulators) and 10. unregister
        report(ExecutionState.FINISHED)
    except GeneratorExit:
        report(ExecutionState.CANCELED)
        raise
    except BaseException as exc:  # noqa: BLE001 - every failure is reported, then re-raised
        error = _task_error(exc, _failed_operator(exc, operator_of, vertex.name),
                            f"{subtask + 1}/{vertex.parallelism}")
        for fn in opened:
            try:
                fn.close()
            except Exception:  # noqa: BLE001 - the first error is the one to report
                pass
        report(ExecutionState.FAILED, error)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise UserCodeError(
            f"operator '{error.operator}' subtask {error.subtask} failed:\n{error.format()}"
        ) from None


def _register_code(operator_of: dict[Any, str], fn: Any, name: str) -> None:
    """Remember the code objects of ``fn`` (and of its open/close) as operator ``name``."""
    if fn is None:
        return
    call = as_callable(fn)
    code = getattr(getattr(call, "__func__", call), "__code__", None)
    if code is None:  # a callable object
        code = getattr(getattr(type(call), "__call__", None), "__code__", None)
    if code is not None:
        operator_of.setdefault(code, name)
    for method in ("open", "close"):
        hook = getattr(type(fn), method, None)
        if isinstance(fn, Function) and hook is not getattr(Function, method):
            operator_of.setdefault(hook.__code__, f"{name}.{method}()")


def _failed_operator(exc: BaseException, operator_of: dict[Any, str], vertex_name: str) -> str:
    """The operator whose function the failure happened in: the outermost traceback frame
    that runs an operator's code; the whole chain when the error came from C code."""
    tb = exc.__traceback__
    while tb is not None:
        name = operator_of.get(tb.tb_frame.f_code)
        if name is not None:
            return name
        tb = tb.tb_next
    return vertex_name


def _chain(vertex: JobVertex, functions: list[Any], records: Iterator[Any],
           keyed: bool) -> Iterator[Any]:
    """Nest the chained operators as iterators (C-level map/filter where possible): one pass,
    no intermediate lists."""
    for op, fn in zip(vertex.operators, functions):
        kind = op.kind
        if kind.is_source or kind.is_sink:
            continue
        if keyed and not kind.takes_keys:
            records = map(_value, records)  # a keyed exchange into a map, filter, ...
        call = as_callable(fn)
        if kind is OperatorKind.MAP:
            records = map(call, records)
        elif kind is OperatorKind.FILTER:
            records = filter(call, records)
        elif kind is OperatorKind.FLAT_MAP:
            records = itertools.chain.from_iterable(map(call, records))
        elif kind is OperatorKind.PROCESS:
            records = _process(call, records, keyed)
        elif kind is OperatorKind.REDUCE:
            records = _reduce(call, records)
        keyed = False
    return records


_value = operator.itemgetter(1)


def _process(call: Callable[[Any, Any], Any], records: Iterator[Any], keyed: bool) -> Iterator[Any]:
    ctx = ProcessFunction.Context()
    for rec in records:
        if keyed:
            ctx._key, rec = rec
        out = call(rec, ctx)
        if out is not None:
            yield from out


def _reduce(call: Callable[[Any, Any], Any], pairs: Iterator[Any]) -> Iterator[Any]:
    acc: dict[Any, Any] = {}
    for key, rec in pairs:
        if key in acc:
            acc[key] = call(acc[key], rec)
        else:
            acc[key] = rec
    return iter(acc.values())


def _emit(task: VertexTask, subtask: int, records: Iterator[Any], key_selector: Any,
          combiner: Any, records_out: IntCounter) -> Iterator[Any]:
    out = task.output
    if out.kind == "collect" and out.limit is not None:
        records = itertools.islice(records, out.limit)
    if out.kind == "forward":
        for n, rec in enumerate(records, 1):
            records_out.value = n
            yield rec
    elif out.kind == "collect":
        for batch in _batches(records, records_out):
            yield cloudpickle.dumps(batch)
    elif out.kind == "text":
        for batch in _batches(records, records_out):
            yield from map(str, batch)
    elif out.kind == "print":
        prefix = f"{subtask + 1}> " if task.vertex.parallelism > 1 else ""
        for batch in _batches(records, records_out):
            yield "\n".join(f"{prefix}{rec}" for rec in batch)
    elif out.kind == "rebalance":
        buckets: list[list[Any]] = [[] for _ in range(out.partitions)]
        for i, rec in enumerate(records):
            pid = (subtask + i) % out.partitions
            b = buckets[pid]
            b.append(rec)
            if len(b) >= BATCH_RECORDS:
                yield pid, cloudpickle.dumps(b)
                b.clear()
            records_out.value = i + 1
        for pid, b in enumerate(buckets):
            if b:
                yield pid, cloudpickle.dumps(b)
    elif out.kind == "hash":
        yield from _emit_hash(records, out.partitions, key_selector, combiner, records_out)
    else:
        raise ValueError(f"unknown output kind {out.kind!r}")


def _emit_hash(records: Iterator[Any], partitions: int, key_selector: Any, combiner: Any,
               records_out: IntCounter) -> Iterator[tuple[int, bytes]]:
    from pyspark.rdd import portable_hash

    try:
        if isinstance(combiner, FieldAggregation):  # sum/min/max: no call per record
            combined, records_out.value = combiner.combine_by_key(records, key_selector)
            pairs: Iterable[tuple[Any, Any]] = combined.items()
        elif combiner is not None:  # map-side combine: one record per key leaves this subtask
            combined = {}
            n = 0
            for n, rec in enumerate(records, 1):
                key = key_selector(rec)
                if key in combined:
                    combined[key] = combiner(combined[key], rec)
                else:
                    combined[key] = rec
            records_out.value = n
            pairs = combined.items()
        else:
            pairs = ((key_selector(rec), rec) for rec in records)
        buckets: list[list[Any]] = [[] for _ in range(partitions)]
        for n, (key, rec) in enumerate(pairs, 1):
            pid = portable_hash(key) % partitions
            b = buckets[pid]
            b.append((key, rec))
            if len(b) >= BATCH_RECORDS:
                yield pid, cloudpickle.dumps(b)
                b.clear()
            if combiner is None:
                records_out.value = n
    except TypeError as exc:
        if "unhashable" not in str(exc):
            raise
        raise TypeError(f"key_by: the key selector returned an {exc}; return a hashable key, "
                        f"e.g. a tuple instead of a list") from exc
    for pid, b in enumerate(buckets):
        if b:
            yield pid, cloudpickle.dumps(b)


def _batches(records: Iterator[Any], records_out: IntCounter) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for rec in records:
        batch.append(rec)
        if len(batch) >= BATCH_RECORDS:
            records_out.value += len(batch)
            yield batch
            batch = []
    if batch:
        records_out.value += len(batch)
        yield batch


def _task_error(exc: BaseException, operator: str, subtask: str) -> TaskError:
    """The user's part of a traceback: frames of this package, pyspark and cloudpickle dropped."""
    frames = []
    for fs in traceback.extract_tb(exc.__traceback__):
        if fs.filename.startswith(_INTERNAL_PATHS) or "/pyspark/" in fs.filename:
            continue
        frames.append((fs.filename, fs.lineno or 0, fs.name, fs.line or ""))
    return TaskError(type(exc).__name__, str(exc), frames, operator, subtask)


def output_for(vertex: JobVertex, consumer_parallelism: int = 1) -> Output:
    """How a vertex hands on its records, from its out-edge (or its sink)."""
    last = vertex.operators[-1].kind
    if last is OperatorKind.SINK_COLLECT:
        return Output("collect", limit=vertex.operators[-1].config.get("limit"))
    if last is OperatorKind.SINK_PRINT:
        return Output("print")
    if last is OperatorKind.SINK_TEXT:
        return Output("text")
    if last is OperatorKind.SINK_VIEW:
        return Output("forward")  # plain records: Spark turns them into a DataFrame
    if len(vertex.outputs) != 1:
        raise NotImplementedError(
            f"'{vertex.name}' feeds {len(vertex.outputs)} operators; a stream consumed by more "
            "than one operator is not supported yet")
    edge = vertex.outputs[0]
    if edge.ship_strategy is Partitioning.FORWARD:
        return Output("forward")
    return Output(edge.ship_strategy.value.lower(), consumer_parallelism, edge.key_selector_key,
                  edge.combiner_key)
