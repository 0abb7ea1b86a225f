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
import hashlib
import itertools
import operator
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import cloudpickle

from ..api.accumulators import Accumulator, IntCounter, snapshot
from ..api.functions import Function, RuntimeContext, as_callable
from ..dependencies import JobEnvironment, describe_all, prepare
from ..graph.executiongraph import RECORDS_IN, RECORDS_OUT
from ..graph.jobgraph import JobVertex, PythonDependency
from ..graph.lifecycle import ExecutionState
from ..graph.streamgraph import OperatorKind
from ..protocol.messages import TaskError, TaskEvent
from ..runtime import textsplits
from ..runtime.chain import chain
from ..runtime.filesink import batch_copy, batch_token, write_partition
from ..runtime.operators import StreamOperator, open_function
from ..runtime.sorting import DEFAULT_MEMORY_MB
from .slotworker import SlotWorker, TaskManagerUnavailable, user_task_error
from .writer import OutputKind, VertexOutput, combiner_of, emit_all

LIVE_REPORT_SECONDS = 0.2


class UserCodeError(RuntimeError):
    """A user function raised; the message carries the user's own traceback."""


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
    #: the job's global job parameters (``RuntimeContext.get_job_parameter``)
    job_parameters: dict[str, str] = field(default_factory=dict)

    @property
    def all_outputs(self) -> list[VertexOutput]:
        return self.outputs if self.outputs is not None else [self.output]

    def __call__(self, split_index: int, iterator: Iterable[Any]) -> Iterator[Any]:
        return Task(self, split_index, iterator).run()


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
                                      self.attempt, self.accumulators,
                                      job_parameters=self.spec.job_parameters)

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
            yield from self.copy_files(copy)
            return
        records, ts = chain(self.vertex, self.functions, self.read_input(),
                             spec.input_kind is InputKind.KEYED, tagged=spec.outputs is not None,
                             timestamped=spec.timestamped_input, sort_memory_mb=spec.sort_memory_mb)
        if spec.outputs is None and spec.output.kind is OutputKind.TEXT:
            yield from self.write_files(map(operator.itemgetter(1), records) if ts else records)
        else:
            yield from emit_all(self, records, ts)

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

    # -- the FileSink's output ------------------------------------------------------------
    def write_files(self, records: Iterator[Any]) -> Iterator[str]:
        """A FileSink subtask (BATCH): its records into in-progress part files of a run of its own
        (a new uid per attempt); yields each pending file (JSON) for the JobMaster, which commits
        those of the successful attempts when the job has succeeded."""
        records_out = self.records_out

        def counted() -> Iterator[Any]:
            for n, rec in enumerate(records, 1):
                records_out.value = n
                yield rec

        spec = self.spec
        files, _ = write_partition(self.functions[-1], str(uuid.uuid4()),
                                   batch_token(spec.job_id, spec.vertex.vertex_id), counted())
        for f in files:
            yield f.to_json()

    def copy_files(self, read: Any) -> Iterator[str]:
        """A FileSource chained straight into a bulk FileSink (BATCH): each file's records go from
        the source format to the sink's writers as Arrow tables (``read``), as :meth:`write_files`
        writes records; each table counts its rows as records in and out."""
        counted = self.records_in, self.records_out

        def tables() -> Iterator[Any]:
            for row in self.upstream:
                for table in read(row.path):
                    for counter in counted:
                        counter.value += table.num_rows
                    if time.monotonic() - self._last_report >= LIVE_REPORT_SECONDS:
                        self._last_report = time.monotonic()
                        self.report(ExecutionState.RUNNING)
                    yield table

        spec = self.spec
        files, _ = write_partition(self.functions[-1], str(uuid.uuid4()),
                                   batch_token(spec.job_id, spec.vertex.vertex_id), tables(),
                                   tables=True)
        for f in files:
            yield f.to_json()

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


