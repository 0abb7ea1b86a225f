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
10. unregister (nothing to give back: the worker stays for the next task)

Each stage is one method of :class:`Task`, in that order.
"""

from __future__ import annotations

import enum
import gc
import hashlib
import itertools
import operator
import os
import sys
import time
import traceback
import uuid
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import cloudpickle
import zmq

from ..api.accumulators import Accumulator, IntCounter, snapshot
from ..api.functions import FieldAggregation, Function, RuntimeContext, as_callable
from ..cluster.connection import ConnectionInfo
from ..dependencies import JobEnvironment, describe_all, prepare
from ..graph.executiongraph import RECORDS_IN, RECORDS_OUT
from ..graph.jobgraph import JobEdge, JobVertex, PythonDependency
from ..graph.lifecycle import ExecutionState
from ..graph.streamgraph import OperatorKind, Partitioning
from ..lru import Lru
from ..protocol.messages import BlobReply, FetchBlob, TaskError, TaskEvent
from ..protocol.wire import MessageSigner
from ..runtime import textsplits
from ..runtime.chain import chain
from ..runtime.filesink import batch_copy, batch_token, write_partition
from ..runtime.operators import StreamOperator, WindowOperator, WindowPreAggregator, open_function
from ..runtime.sorting import DEFAULT_MEMORY_MB
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
        #: user code already unpickled in this process (bounded: pyspark reuses the worker for
        #: every job of the session)
        self.loaded: Lru[str, Any] = Lru(LOADED_USER_CODE)
        self.pid = os.getpid()
        self.modules = len(sys.modules)

    @classmethod
    def current(cls) -> "SlotWorker":
        """This process's SlotWorker (a forked child makes its own)."""
        if cls._current is None or cls._current.pid != os.getpid():
            cls._current = cls()
        return cls._current

    def report(self, event: TaskEvent) -> None:
        self.signer.send(self.sock, event)

    def freeze_new_modules(self) -> None:
        """After a task that imported modules (pyarrow, pandas, the user's), freeze them out of
        the cycle collector, as the daemon froze what it imported before the fork: pyspark
        collects after every task, and would walk them each time."""
        if len(sys.modules) > self.modules:
            gc.collect()
            gc.freeze()
            self.modules = len(sys.modules)

    def fetch(self, key: str, timeout: float = 60.0, scope: str = "") -> bytes | None:
        """A blob's bytes from the TaskManager's library cache; ``None`` when this process has
        the code loaded already (the TaskManager still hears of the use, for its statistics).
        ``scope`` names the Python dependencies the code was loaded with."""
        have = scope + key in self.loaded
        if have:  # only the use is registered: nothing to wait for
            self.signer.send(self.sock, FetchBlob(key, need_data=False, reply=False))
            return None
        self.signer.send(self.sock, FetchBlob(key))
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
        if reply.data is None:
            raise RuntimeError(f"the BlobServer has no blob {key[:12]}")
        return reply.data

    def load(self, key: str, data: bytes | None, scope: str = "") -> Any:
        """User code by key: this process's unpickled copy (loaded with the same Python
        dependencies), else ``data`` unpickled."""
        loaded = self.loaded.get(scope + key)
        if loaded is None:
            if data is None:
                raise RuntimeError(f"user code {key[:12]} was evicted between fetch and load")
            loaded = cloudpickle.loads(data)
            self.loaded.put(scope + key, loaded)
        return loaded


class InputKind(enum.Enum):
    """What a vertex's Spark partition holds."""

    #: nothing: the vertex is a collection source (its data is a blob, sliced by subtask)
    COLLECTION = "collection"
    #: records Spark reads itself (lines of a text file, rows of a query)
    SPARK_RECORDS = "spark_records"
    #: paths of files (Spark lists them), read by the source's format (its blob is ``data_key``)
    FILES = "files"
    #: byte ranges of local text files, one list of (path, start, end) per subtask
    TEXT_SPLITS = "text_splits"
    #: plain records of a FORWARD producer in the same Spark stage
    FORWARD = "forward"
    #: pickled batches of records from a REBALANCE exchange
    EXCHANGE = "exchange"
    #: pickled batches of (key, record) from a HASH exchange
    KEYED = "keyed"


class OutputKind(enum.Enum):
    """How the last operator of a vertex hands its records on."""

    FORWARD = "forward"      # plain records to a consumer in the same Spark stage
    HASH = "hash"            # (partition, batch of (key, record)) for a HASH exchange
    REBALANCE = "rebalance"  # (partition, batch) round-robin
    COLLECT = "collect"      # pickled batches for the client
    PRINT = "print"          # printed lines for the client
    TEXT = "text"            # a FileSink's part files (the pending files, as JSON, to commit)


@dataclass(slots=True)
class VertexOutput:
    """What the last operator of a vertex hands on: plain records to a FORWARD consumer in
    the same Spark stage, or batches for an exchange (HASH / REBALANCE) or the client."""

    kind: OutputKind
    partitions: int = 1
    key_selector_key: str | None = None
    combiner_key: str | None = None
    #: for "collect": at most this many records per subtask
    limit: int | None = None
    #: the side output (OutputTag's tag_id) this output carries; None: the main output
    side_output: str | None = None
    #: into a two-input vertex: the consumer's input (0 or 1), sent along with each record
    input_index: int | None = None


@dataclass(slots=True)
class VertexTask:
    """Picklable by reference: the Spark closure of one JobVertex."""

    job_id: str
    vertex: JobVertex
    input_kind: InputKind
    output: VertexOutput
    #: for a collection source: the key of the data and its length
    data_key: str | None = None
    #: a vertex read by several consumers (fan-out, side outputs): one VertexOutput each, and the
    #: vertex yields (output index, item); None: the single ``output``
    outputs: list[VertexOutput] | None = None
    #: the input records carry event-time timestamps: ``(timestamp, value)`` pairs
    timestamped_input: bool = False
    #: the job's Python files, archives and requirements
    dependencies: tuple[PythonDependency, ...] = ()
    #: the worker's memory (MB) past which a keyed operator's input spills to disk
    #: (``spark.python.worker.memory``)
    sort_memory_mb: float = DEFAULT_MEMORY_MB

    @property
    def all_outputs(self) -> list[VertexOutput]:
        return self.outputs if self.outputs is not None else [self.output]

    def __call__(self, split_index: int, iterator: Iterable[Any]) -> Iterator[Any]:
        return Task(self, split_index, iterator).run()


def identity_partitioner(partition: int) -> int:
    """Partition function for exchanges: the sending task already chose the target partition."""
    return partition


# -------------------------------------------------------------------------------------------


class Task:
    """One attempt of one subtask, run by a slot worker inside a Spark task: Flink's ten
    stages of a Task, one method each, in order (:meth:`run`). Each state change is reported
    to the TaskManager over ``ipc://``."""

    def __init__(self, spec: VertexTask, subtask: int, upstream: Iterable[Any]) -> None:
        from pyspark import TaskContext

        tc = TaskContext.get()
        if tc is None:
            raise TaskManagerUnavailable("a Task runs only inside a Spark task")
        self.spec = spec
        self.vertex = spec.vertex
        self.subtask = subtask
        self.upstream = upstream
        self.stage_id, self.spark_task_id, self.attempt = tc.stageId(), tc.taskAttemptId(), tc.attemptNumber()
        self.worker = SlotWorker.current()
        self.records_in, self.records_out = IntCounter(), IntCounter()
        self.accumulators: dict[str, Accumulator[Any]] = {RECORDS_IN: self.records_in,
                                                          RECORDS_OUT: self.records_out}
        #: code object of each user function -> the operator it belongs to, to name the operator
        #: of a failure from its traceback (no bookkeeping per record)
        self.operator_of: dict[Any, str] = {}
        self.blobs: dict[str, bytes | None] = {}
        self.functions: list[Any] = []
        self.key_selectors: dict[str, Any] = {}
        self.combiners: dict[str, Any] = {}
        self.data: Any = None
        self.opened: list[Function | StreamOperator] = []
        self._last_report = time.monotonic()
        #: the job's Python dependencies, on sys.path from user-code loading to unregistering
        self.environment: JobEnvironment | None = None
        self.scope = (hashlib.sha256("".join(d.key for d in spec.dependencies).encode()).hexdigest()[:16]
                      + ":" if spec.dependencies else "")

    def run(self) -> Iterator[Any]:
        """The ten stages; yields what the vertex hands on (Spark's partition of its RDD)."""
        try:
            self.load_library_cache()                          # 1.
            self.load_user_code()                              # 2.
            self.register_input_output()                       # 3.
            self.restore_state()                               # 4.
            self.switch_to_running()                           # 5.
            yield from self.invoke()                           # 6.
            self.snapshot_accumulators()                       # 7.
            self.clean_up()                                    # 8.
            self.report(ExecutionState.FINISHED)               # 9. final state
        except GeneratorExit:
            self.report(ExecutionState.CANCELED)               # 9. Spark stopped reading: cancelled
            raise
        except BaseException as exc:  # noqa: BLE001 - every failure is reported, then re-raised
            error = self.fail(exc)                             # 8. and 9.
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            raise UserCodeError(
                f"operator '{error.operator}' subtask {error.subtask} failed:\n{error.format()}"
            ) from None
        finally:
            self.unregister()                                  # 10.

    def report(self, state: ExecutionState, error: TaskError | None = None) -> None:
        self.worker.report(TaskEvent(self.spec.job_id, self.vertex.vertex_id, self.subtask,
                                     self.stage_id, self.spark_task_id, self.attempt, state,
                                     time.time(), snapshot(self.accumulators), error))

    # -- the stages, in order -------------------------------------------------------------
    def load_library_cache(self) -> None:
        """1. The user code's blobs, from this worker or the TaskManager's library cache."""
        self.report(ExecutionState.DEPLOYING)
        keys = [op.function_key for op in self.vertex.operators
                if op.function_key and not op.kind.is_source and not op.config.get("from_cache")]
        for out in self.spec.all_outputs:
            keys += [k for k in (out.key_selector_key, out.combiner_key) if k]
        if self.spec.data_key:
            keys.append(self.spec.data_key)
        self.blobs = {key: self.worker.fetch(key, scope=self.scope) for key in dict.fromkeys(keys)}
        if self.spec.dependencies:
            self.environment = prepare(list(self.spec.dependencies), self.worker.fetch)

    def load_user_code(self) -> None:
        """2. Unpickle the user's functions (cloudpickle), and name their code for errors."""
        worker, scope = self.worker, self.scope
        if self.environment is not None:
            self.environment.__enter__()  # cloudpickle imports modules the code refers to
        self.functions = [worker.load(op.function_key, self.blobs[op.function_key], scope)
                          if op.function_key and not op.kind.is_source
                          and not op.config.get("from_cache") else None
                          for op in self.vertex.operators]
        for op, fn in zip(self.vertex.operators, self.functions):
            for user_fn in (fn.user_functions if isinstance(fn, StreamOperator) else [fn]):
                _register_code(self.operator_of, user_fn, op.name)
        for out in self.spec.all_outputs:
            if out.key_selector_key:
                selector = as_callable(worker.load(out.key_selector_key,
                                                   self.blobs[out.key_selector_key], scope))
                self.key_selectors[out.key_selector_key] = selector
                _register_code(self.operator_of, selector, "key_by")
            if out.combiner_key:
                self.combiners[out.combiner_key] = combiner_of(
                    worker.load(out.combiner_key, self.blobs[out.combiner_key], scope))
        if self.spec.data_key:
            self.data = worker.load(self.spec.data_key, self.blobs[self.spec.data_key], scope)

    def register_input_output(self) -> None:
        """3. The input and output of the chain; the rich functions' runtime context."""
        self.report(ExecutionState.INITIALIZING)
        keyed = self.spec.input_kind is InputKind.KEYED
        if not keyed and self.vertex.operators[0].kind is OperatorKind.REDUCE:
            raise RuntimeError("a reduce must follow key_by()")  # guarded by the API
        self.context = RuntimeContext(self.vertex.name, self.subtask, self.vertex.parallelism,
                                      self.attempt, self.accumulators)

    def restore_state(self) -> None:
        """4. Nothing to restore: a BATCH job keeps no state across attempts."""

    def switch_to_running(self) -> None:
        """5. RUNNING."""
        self.report(ExecutionState.RUNNING)

    def invoke(self) -> Iterator[Any]:
        """6. Open the rich functions, then run the chain over the input, one pass."""
        for fn in self.functions:
            if isinstance(fn, (Function, StreamOperator)):
                self.opened.append(fn)
                open_function(fn, self.context)
        spec = self.spec
        copy = self._batch_copy()
        if copy is not None:
            yield from _copy_files(self, copy)
            return
        records, ts = chain(self.vertex, self.functions, self.read_input(),
                             spec.input_kind is InputKind.KEYED, tagged=spec.outputs is not None,
                             timestamped=spec.timestamped_input, sort_memory_mb=spec.sort_memory_mb)
        yield from _emit_all(self, records, ts)

    def _batch_copy(self) -> Any:
        """For a FileSource chained straight into a bulk FileSink: how its files' records go
        as Arrow tables (``runtime.filesink.batch_copy``); else None."""
        spec = self.spec
        if (spec.input_kind is not InputKind.FILES or spec.output.kind is not OutputKind.TEXT
                or spec.outputs is not None or len(self.vertex.operators) != 2
                or spec.timestamped_input):
            return None
        return batch_copy(self.data, self.functions[-1])

    def snapshot_accumulators(self) -> None:
        """7. The final accumulators travel with the final state's report (stage 9)."""

    def clean_up(self) -> None:
        """8. Close the rich functions."""
        opened, self.opened = self.opened, []
        for fn in opened:
            fn.close()

    def fail(self, exc: BaseException) -> TaskError:
        """8. and 9. after a failure: close what was opened, report FAILED with the user's part
        of the traceback."""
        error = user_task_error(exc, _failed_operator(exc, self.operator_of, self.vertex.name),
                            f"{self.subtask + 1}/{self.vertex.parallelism}")
        if isinstance(exc, ImportError):
            missing = f"'{exc.name}'" if exc.name else "a module"
            error.message += (f" ({missing} is not on this TaskManager; the job's Python "
                              f"dependencies: {describe_all(list(self.spec.dependencies))}. Ship it "
                              "with env.add_python_file(), env.set_python_requirements() or the "
                              "session's --py-files)")
        for fn in self.opened:
            try:
                fn.close()
            except Exception:  # noqa: BLE001 - the first error is the one to report
                pass
        self.report(ExecutionState.FAILED, error)
        return error

    def unregister(self) -> None:
        """10. The job's Python dependencies off sys.path; the slot worker, its user code and its
        connection to the TaskManager stay for the next task (pyspark reuses the process)."""
        if self.environment is not None:
            self.environment.__exit__(None, None, None)
            self.environment = None
        self.worker.freeze_new_modules()

    # -- input ----------------------------------------------------------------------------
    def read_input(self) -> Iterator[Any]:
        """The chain's input records, counted; live accumulators go out every 200 ms at most."""
        kind = self.spec.input_kind
        if kind is InputKind.COLLECTION:
            data = self.data if self.data is not None else []
            n, p = len(data), self.vertex.parallelism
            records: Iterable[Any] = data[self.subtask * n // p:(self.subtask + 1) * n // p]
        elif kind in (InputKind.SPARK_RECORDS, InputKind.FORWARD):
            records = self.upstream
        elif kind is InputKind.FILES:
            source_format = self.data
            records = itertools.chain.from_iterable(source_format.read_file(row.path)
                                                    for row in self.upstream)
        elif kind is InputKind.TEXT_SPLITS:
            records = itertools.chain.from_iterable(
                textsplits.read_split(*split) for splits in self.upstream for split in splits)
        else:
            records = itertools.chain.from_iterable(cloudpickle.loads(b) for _, b in self.upstream)
        return self._counted(records)

    def _counted(self, records: Iterable[Any]) -> Iterator[Any]:
        records_in = self.records_in
        for n, rec in enumerate(records, 1):
            records_in.value = n
            if n & 15 == 0 and time.monotonic() - self._last_report >= LIVE_REPORT_SECONDS:
                self._last_report = time.monotonic()
                self.report(ExecutionState.RUNNING)
            yield rec


def _register_code(operator_of: dict[Any, str], fn: Any, name: str) -> None:
    """Remember the code objects of ``fn`` (and of its open/close) as operator ``name``."""
    if fn is None:
        return
    try:
        call = as_callable(fn)
    except TypeError:
        # a timestamp assigner, a window function, an aggregate function...: every method of its
        # class counts as the operator's code
        for attr in vars(type(fn)).values():
            code = getattr(attr, "__code__", None)
            if code is not None:
                operator_of.setdefault(code, name)
        return
    code = getattr(getattr(call, "__func__", call), "__code__", None)
    if code is None:  # a callable object
        code = getattr(getattr(type(call), "__call__", None), "__code__", None)  # noqa: B004
    if code is not None:
        operator_of.setdefault(code, name)
    for method in ("open", "close"):
        hook = getattr(type(fn), method, None)
        if isinstance(fn, Function) and hook is not None and hook is not getattr(Function, method):
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


def combiner_of(fn: Any) -> Any:
    """The map-side combiner of a HASH edge's consumer: a keyed reduce's function, or a
    window's pre-aggregation (``JobEdge.window_partials``)."""
    if isinstance(fn, WindowOperator):
        return WindowPreAggregator(fn)
    return as_callable(fn)


def _emit(task: VertexTask, subtask: int, records: Iterator[Any], key_selector: Any,
          combiner: Any, records_out: IntCounter, timestamped: bool = False) -> Iterator[Any]:
    out = task.output
    if out.kind is OutputKind.COLLECT and out.limit is not None:
        records = itertools.islice(records, out.limit)
    if out.kind is OutputKind.FORWARD:
        for n, rec in enumerate(records, 1):
            records_out.value = n
            yield rec
    elif out.kind is OutputKind.COLLECT:
        for batch in _batches(records, records_out):
            yield cloudpickle.dumps(batch)
    elif out.kind is OutputKind.PRINT:
        prefix = f"{subtask + 1}> " if task.vertex.parallelism > 1 else ""
        for batch in _batches(records, records_out):
            yield "\n".join(f"{prefix}{rec}" for rec in batch)
    elif out.kind is OutputKind.REBALANCE:
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
    elif out.kind is OutputKind.HASH and isinstance(combiner, WindowPreAggregator):
        yield from _emit_partials(records, out.partitions, key_selector, combiner, records_out,
                                  timestamped)
    elif out.kind is OutputKind.HASH:
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
        raise _unhashable_key(exc) from exc
    for pid, b in enumerate(buckets):
        if b:
            yield pid, cloudpickle.dumps(b)


def _emit_partials(records: Iterator[Any], partitions: int, key_selector: Any,
                   combiner: WindowPreAggregator, records_out: IntCounter,
                   timestamped: bool) -> Iterator[tuple[int, bytes]]:
    """A window's BATCH pre-aggregation: one ``(key, (window's max timestamp, (window,
    partial)))`` per (key, window) of this subtask's records (no timestamp on a stream without
    them); records out counts the partials sent."""
    from pyspark.rdd import portable_hash

    try:
        combined, _ = combiner.combine(records, key_selector, timestamped)
    except TypeError as exc:
        if "unhashable" not in str(exc):
            raise
        raise _unhashable_key(exc) from exc
    buckets: list[list[Any]] = [[] for _ in range(partitions)]
    pid_of: dict[Any, int] = {}
    for n, ((key, window), partial) in enumerate(combined.items(), 1):
        pid = pid_of.get(key)
        if pid is None:
            pid = pid_of[key] = portable_hash(key) % partitions
        b = buckets[pid]
        b.append((key, (window.max_timestamp(), (window, partial)) if timestamped
                  else (window, partial)))
        if len(b) >= BATCH_RECORDS:
            yield pid, cloudpickle.dumps(b)
            b.clear()
        records_out.value = n
    for pid, b in enumerate(buckets):
        if b:
            yield pid, cloudpickle.dumps(b)


def _unhashable_key(exc: TypeError) -> TypeError:
    """The error of a key selector that returned an unhashable key."""
    return TypeError(f"key_by: the key selector returned an {exc}; return a hashable key, "
                     f"e.g. a tuple instead of a list")


_SINKS = frozenset({OutputKind.COLLECT, OutputKind.PRINT, OutputKind.TEXT})


def _writer(task: "Task | _RelayContext", out: VertexOutput, ts: bool) -> "_Writer":
    """The writer of one output of a vertex read by several consumers."""
    key_selector = task.key_selectors.get(out.key_selector_key or "")
    combiner = task.combiners.get(out.combiner_key or "")
    if ts:
        key_selector, combiner = _on_value(key_selector), None
    if out.input_index is not None:
        key_selector, combiner = _on_value(key_selector), None
    return _Writer(out, task.subtask, key_selector, combiner)


def _on_value(key_selector: Any) -> Any:
    """A key selector for ``(timestamp, value)`` records: the key of the value."""
    if key_selector is None:
        return None

    def select(record: tuple[Any, Any]) -> Any:
        return key_selector(record[1])

    return select


class _Writer:
    """Hands records on over one output of a vertex read by several consumers: plain records
    (FORWARD), round-robin batches (REBALANCE) or batches by key hash (HASH, combined first
    when the consumer is a reduce)."""

    def __init__(self, out: VertexOutput, subtask: int, key_selector: Any, combiner: Any) -> None:
        self.out = out
        self.key_selector = key_selector
        self.combiner = combiner
        self.buckets: list[list[Any]] = [[] for _ in range(out.partitions)]
        self.combined: dict[Any, Any] = {}
        self.next = subtask

    def write(self, rec: Any) -> Iterator[Any]:
        if self.out.input_index is not None:
            rec = (self.out.input_index, rec)
        kind = self.out.kind
        if kind is OutputKind.FORWARD:
            yield rec
            return
        if kind is OutputKind.REBALANCE:
            pid = self.next % self.out.partitions
            self.next += 1
            item: Any = rec
        else:
            key = self.key_selector(rec)
            if self.combiner is not None:
                combined = self.combined
                combined[key] = self.combiner(combined[key], rec) if key in combined else rec
                return
            pid, item = _hash_partition(key, self.out.partitions), (key, rec)
        bucket = self.buckets[pid]
        bucket.append(item)
        if len(bucket) >= BATCH_RECORDS:
            yield pid, cloudpickle.dumps(bucket)
            bucket.clear()

    def finish(self) -> Iterator[Any]:
        for key, rec in self.combined.items():
            self.buckets[_hash_partition(key, self.out.partitions)].append((key, rec))
        self.combined.clear()
        for pid, bucket in enumerate(self.buckets):
            if bucket:
                yield pid, cloudpickle.dumps(bucket)
                bucket.clear()


def _hash_partition(key: Any, partitions: int) -> int:
    from pyspark.rdd import portable_hash

    return portable_hash(key) % partitions


def _emit_all(task: "Task | _RelayContext", records: Iterator[Any], ts: bool) -> Iterator[Any]:
    """Hand the chain's records on over the vertex's output(s)."""
    spec = task.spec
    if spec.outputs is not None:
        yield from _emit_many(task, records, ts)
        return
    out = spec.output
    key_selector = task.key_selectors.get(out.key_selector_key or "")
    combiner = task.combiners.get(out.combiner_key or "")
    if ts:
        if out.kind in _SINKS:
            records = map(operator.itemgetter(1), records)  # a sink writes the values
        elif not isinstance(combiner, WindowPreAggregator):  # it takes (timestamp, value) itself
            key_selector, combiner = _on_value(key_selector), None
    if out.kind is OutputKind.TEXT:
        assert isinstance(task, Task)  # a relay never ends in a sink
        yield from _write_files(task, records)
        return
    if out.input_index is not None:  # into a two-input vertex: say which input
        records = zip(itertools.repeat(out.input_index), records)
        key_selector, combiner = _on_value(key_selector), None
    yield from _emit(spec, task.subtask, records, key_selector, combiner, task.records_out, ts)


def _write_files(task: "Task", records: Iterator[Any]) -> Iterator[str]:
    """A FileSink subtask (BATCH): its records into in-progress part files of a run of its own
    (a new uid per attempt); yields each pending file (JSON) for the JobMaster, which commits
    those of the successful attempts when the job has succeeded."""
    records_out = task.records_out

    def counted() -> Iterator[Any]:
        for n, rec in enumerate(records, 1):
            records_out.value = n
            yield rec

    spec = task.spec
    files, _ = write_partition(task.functions[-1], str(uuid.uuid4()),
                               batch_token(spec.job_id, spec.vertex.vertex_id), counted())
    for f in files:
        yield f.to_json()


def _copy_files(task: "Task", read: Any) -> Iterator[str]:
    """A FileSource chained straight into a bulk FileSink (BATCH): each file's records go from
    the source format to the sink's writers as Arrow tables (``read``), as ``_write_files``
    writes records; each table counts its rows as records in and out."""
    counted = task.records_in, task.records_out

    def tables() -> Iterator[Any]:
        for row in task.upstream:
            for table in read(row.path):
                for counter in counted:
                    counter.value += table.num_rows
                if time.monotonic() - task._last_report >= LIVE_REPORT_SECONDS:
                    task._last_report = time.monotonic()
                    task.report(ExecutionState.RUNNING)
                yield table

    spec = task.spec
    files, _ = write_partition(task.functions[-1], str(uuid.uuid4()),
                               batch_token(spec.job_id, spec.vertex.vertex_id), tables(),
                               tables=True)
    for f in files:
        yield f.to_json()


@dataclass(slots=True)
class RelayTask:
    """The consumers' side of a cached stream computed in this job: the vertex's records, kept
    plain in Spark's storage, handed on over the vertex's outputs (no chain runs again, and no
    subtask reports: the vertex's own Task did)."""

    spec: VertexTask
    timestamped: bool = False

    def __call__(self, subtask: int, records: Iterable[Any]) -> Iterator[Any]:
        context = _RelayContext(self.spec, subtask)
        records = iter(records)
        if self.spec.outputs is not None:
            records = zip(itertools.repeat(None), records)
        return _emit_all(context, records, self.timestamped)


class _RelayContext:
    """What the emission needs of a Task, for a :class:`RelayTask`."""

    def __init__(self, spec: VertexTask, subtask: int) -> None:
        self.spec = spec
        self.subtask = subtask
        self.records_out = IntCounter()
        worker = SlotWorker.current()
        self.key_selectors: dict[str, Any] = {}
        self.combiners: dict[str, Any] = {}
        for out in spec.all_outputs:
            for key, into in ((out.key_selector_key, self.key_selectors),
                              (out.combiner_key, self.combiners)):
                if key:
                    fn = worker.load(key, worker.fetch(key))
                    into[key] = combiner_of(fn) if into is self.combiners else as_callable(fn)


def _emit_many(task: "Task | _RelayContext", tagged: Iterator[tuple[str | None, Any]],
               ts: bool = False) -> Iterator[tuple[int, Any]]:
    """Fan-out: each record goes to every output that reads its tag, as ``(output index,
    item)``; the Spark side keeps the vertex's partition and gives each consumer its items.
    Records out counts each record once, however many consumers read it."""
    spec = task.spec
    assert spec.outputs is not None
    writers = [_writer(task, out, ts) for out in spec.outputs]
    routes: dict[str | None, list[tuple[int, _Writer]]] = {}
    for i, (out, writer) in enumerate(zip(spec.outputs, writers)):
        if out.kind in (OutputKind.COLLECT, OutputKind.PRINT, OutputKind.TEXT):
            raise ValueError(f"a sink is never one of several outputs: {out.kind}")
        routes.setdefault(out.side_output, []).append((i, writer))
    records_out = task.records_out
    n = 0
    for n, (tag, rec) in enumerate(tagged, 1):
        for i, writer in routes.get(tag, ()):
            for item in writer.write(rec):
                yield i, item
    records_out.value = n
    for i, writer in enumerate(writers):
        for item in writer.finish():
            yield i, item


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


def user_task_error(exc: BaseException, operator: str, subtask: str) -> TaskError:
    """The user's part of a traceback: frames of this package, pyspark and cloudpickle dropped."""
    frames = []
    for fs in traceback.extract_tb(exc.__traceback__):
        if fs.filename.startswith(_INTERNAL_PATHS) or "/pyspark/" in fs.filename:
            continue
        frames.append((fs.filename, fs.lineno or 0, fs.name, fs.line or ""))
    return TaskError(type(exc).__name__, str(exc), frames, operator, subtask)


def output_for(vertex: JobVertex, consumer_parallelism: int = 1) -> VertexOutput:
    """How a vertex hands on its records, from its out-edge (or its sink)."""
    last = vertex.operators[-1].kind
    if last is OperatorKind.SINK_COLLECT:
        return VertexOutput(OutputKind.COLLECT, limit=vertex.operators[-1].config.get("limit"))
    if last is OperatorKind.SINK_PRINT:
        return VertexOutput(OutputKind.PRINT)
    if last is OperatorKind.SINK_TEXT:
        return VertexOutput(OutputKind.TEXT)
    if last is OperatorKind.SINK_VIEW:
        return VertexOutput(OutputKind.FORWARD)  # plain records: Spark turns them into a DataFrame
    if len(vertex.outputs) != 1:
        raise ValueError(f"'{vertex.name}' has {len(vertex.outputs)} outputs: use edge_output")
    return edge_output(vertex.outputs[0], consumer_parallelism)


def edge_output(edge: JobEdge, consumer_parallelism: int) -> VertexOutput:
    """How a vertex hands its records on over ``edge``."""
    kind = {Partitioning.FORWARD: OutputKind.FORWARD, Partitioning.HASH: OutputKind.HASH,
            Partitioning.REBALANCE: OutputKind.REBALANCE}[edge.ship_strategy]
    if kind is OutputKind.FORWARD:
        return VertexOutput(kind, side_output=edge.side_output, input_index=edge.input_index)
    return VertexOutput(kind, consumer_parallelism, edge.key_selector_key, edge.combiner_key,
                  side_output=edge.side_output, input_index=edge.input_index)
