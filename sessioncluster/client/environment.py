"""PyFlink's DataStream API in BATCH mode, bound to a session cluster.

>>> env = session.get_execution_environment()                       # doctest: +SKIP
>>> (env.from_collection(["a b", "b"]).flat_map(str.split)          # doctest: +SKIP
...     .map(lambda w: (w, 1)).key_by(lambda t: t[0]).sum(1).execute_and_collect())
[('a', 1), ('b', 2)]
"""

from __future__ import annotations

import hashlib
import io
import itertools
import os
import sys
import sysconfig
import uuid
from collections import ChainMap
from types import CodeType, ModuleType
from typing import TYPE_CHECKING, Any, Callable

import cloudpickle

from ..common.execution_mode import RuntimeExecutionMode
from ..common.typeinfo import RowTypeInfo
from ..common.types import Row
from ..dependencies import pack_archive, pack_python_file, pack_requirements
from ..functions import (
    FieldAggregation,
    FieldMax,
    FieldMin,
    FieldSum,
    Function,
    NullByteKeySelector,
    OutputTag,
    as_callable,
)
from ..graph.jobgraph import JobGraph, PythonDependency, build_job_graph
from ..graph.streamgraph import (
    DEFAULT_NAMES,
    ChainingStrategy,
    OperatorKind,
    Partitioning,
    StreamGraph,
    StreamNode,
)
from ..runtime.operators import (
    AllWindowOperator,
    CoFlatMapOperator,
    CoMapOperator,
    CoProcessOperator,
    KeyedCoProcessOperator,
    KeyedFunctionOperator,
    KeyedProcessOperator,
    ProcessOperator,
    StreamOperator,
    TimestampsAndWatermarksOperator,
    WindowOperator,
)
from . import display
from .jobclient import (
    CloseableIterator,
    JobClient,
    JobExecutionException,
    JobExecutionResult,
    check,
    records_of,
)

if TYPE_CHECKING:
    from .session import Session


class UnpicklableFunctionError(TypeError):
    """A function (or what it captures) cannot be shipped to the cluster."""


class StreamExecutionEnvironment:
    """Builds programs and executes them on the session cluster."""

    def __init__(self, session: "Session") -> None:
        self.session = session
        self.stream_graph = StreamGraph()
        self._sinks: list[StreamNode] = []
        self._restart_strategy: Any = None
        #: add_python_file / add_python_archive / set_python_requirements, packed
        self._python_dependencies: list[tuple[PythonDependency, bytes]] = []
        #: cache ids of this environment's streams released by invalidate()
        self._invalidated: set[str] = set()

    # -- PyFlink's environment API: the current session, runtime mode, configuration, FileSource --
    @staticmethod
    def get_execution_environment(configuration: Any = None) -> "StreamExecutionEnvironment":
        """An environment on the current session: the one this process started or connected,
        else the session named by ``SESSIONCLUSTER_SESSION`` (see ``client/current.py``)."""
        from .current import current_or_connect, environment_factory

        session = current_or_connect()
        env = (environment_factory() or ContextStreamExecutionEnvironment)(session)
        if configuration is not None:
            env.configure(configuration)
        return env

    def set_runtime_mode(self, execution_mode: Any) -> "StreamExecutionEnvironment":
        """BATCH (the default of a session's environments; Flink's, and ``sessioncluster run``'s,
        is STREAMING) or STREAMING (Structured Streaming on the session, see docs/streaming.md)."""
        from ..common.execution_mode import RuntimeExecutionMode

        if not isinstance(execution_mode, RuntimeExecutionMode):
            raise TypeError(f"set_runtime_mode takes a RuntimeExecutionMode, not {execution_mode!r}")
        self._runtime_mode = execution_mode
        return self

    def get_runtime_mode(self) -> Any:
        from ..common.execution_mode import RuntimeExecutionMode

        return getattr(self, "_runtime_mode", RuntimeExecutionMode.BATCH)

    def _effective_runtime_mode(self) -> Any:
        """The mode the program runs in: AUTOMATIC is STREAMING when a source is unbounded, else
        BATCH, as in Flink."""
        from ..common.execution_mode import RuntimeExecutionMode

        mode = self.get_runtime_mode()
        if mode is RuntimeExecutionMode.AUTOMATIC:
            unbounded = any(n.config.get("unbounded") for n in self.stream_graph.nodes)
            return RuntimeExecutionMode.STREAMING if unbounded else RuntimeExecutionMode.BATCH
        return mode

    def configure(self, configuration: Any) -> "StreamExecutionEnvironment":
        """Apply a ``Configuration``: ``parallelism.default``, ``execution.runtime-mode`` and
        ``pipeline.operator-chaining`` take effect; other options are kept (``get_config``)."""
        from ..common.configuration import Configuration
        from ..common.execution_mode import RuntimeExecutionMode

        if not isinstance(configuration, Configuration):
            raise TypeError(f"configure takes a Configuration, not {configuration!r}")
        if configuration.contains_key("parallelism.default"):
            self.set_parallelism(configuration.get_integer("parallelism.default", 1))
        if configuration.contains_key("execution.runtime-mode"):
            self.set_runtime_mode(RuntimeExecutionMode.parse(
                configuration.get_string("execution.runtime-mode", "BATCH")))
        if not configuration.get_boolean("pipeline.operator-chaining", True):
            self.disable_operator_chaining()
        self._configuration = Configuration(getattr(self, "_configuration", None)).add_all(configuration)
        return self

    def get_config(self) -> Any:
        """PyFlink's ``ExecutionConfig`` of this environment."""
        from ..common.execution_config import ExecutionConfig

        if getattr(self, "_execution_config", None) is None:
            self._execution_config = ExecutionConfig(self)
        return self._execution_config

    def from_source(self, source: Any, watermark_strategy: Any, source_name: str,
                    type_info: Any = None) -> "DataStream":
        """A stream from a ``FileSource`` (one record per line; with ``monitor_continuously``
        new files are read as they appear, in STREAMING mode) or a ``NumberSequenceSource``."""
        from ..connectors.file_system import FileSource
        from ..connectors.number_seq import NumberSequenceSource

        if isinstance(source, NumberSequenceSource):
            node = self.stream_graph.add_node(OperatorKind.SOURCE_STREAM, None, source_name,
                                              chaining=ChainingStrategy.HEAD)
            node.config.update({"format": "sequence", "start": source.start, "end": source.end})
            ds = DataStream(self, node)
        elif isinstance(source, FileSource):
            # several paths are one comma-separated list, as Hadoop's (and so Spark's) textFile reads
            ds = self.read_text_file(",".join(source.paths)).name(source_name)
            if not source.bounded:
                ds.node.config["unbounded"] = True
        else:
            raise TypeError(f"from_source takes a FileSource or a NumberSequenceSource, not {source!r}")
        # a strategy with a timestamp assigner stamps the records, as PyFlink's from_source does
        assigner = getattr(watermark_strategy, "timestamp_assigner", None)
        if assigner is not None and hasattr(ds, "assign_timestamps_and_watermarks"):
            ds = ds.assign_timestamps_and_watermarks(watermark_strategy)
        return ds

    def socket_text_stream(self, hostname: str, port: int, delimiter: str = "\n",
                           max_retry: int = 0) -> "DataStream":
        """The lines a TCP server sends (STREAMING mode; Spark's socket source, for tests and
        demos: it keeps no offsets, so a restart does not read lines again)."""
        if delimiter != "\n":
            raise ValueError("the socket source splits lines at '\\n' only")
        node = self.stream_graph.add_node(OperatorKind.SOURCE_STREAM, None, "Socket Stream",
                                          parallelism=1, chaining=ChainingStrategy.HEAD)
        node.config.update({"format": "socket", "host": hostname, "port": int(port), "unbounded": True})
        return DataStream(self, node)

    def from_rate(self, rows_per_second: int, source_name: str = "Rate Source") -> "DataStream":
        """Unbounded: 0, 1, 2, ... at ``rows_per_second`` (Spark's rate source; STREAMING mode)."""
        node = self.stream_graph.add_node(OperatorKind.SOURCE_STREAM, None, source_name,
                                          chaining=ChainingStrategy.HEAD)
        node.config.update({"format": "rate", "rows_per_second": int(rows_per_second), "unbounded": True})
        return DataStream(self, node)

    def _check_executable(self) -> None:
        """Fail, before submitting, a program its mode cannot run: an unbounded source
        (``monitor_continuously``, a socket, a rate generator) in BATCH mode."""
        mode = self._effective_runtime_mode()
        unbounded = [n.name for n in self.stream_graph.nodes if n.config.get("unbounded")]
        if unbounded and mode is not RuntimeExecutionMode.STREAMING:
            raise ValueError(
                f"the source {', '.join(map(repr, unbounded))} is unbounded: it needs STREAMING mode "
                "(env.set_runtime_mode(RuntimeExecutionMode.STREAMING)), or read a static file set "
                "(process_static_file_set(), the default) in BATCH mode")

    # -- STREAMING: checkpoints ----------------------------------------------------------------
    def enable_checkpointing(self, interval: int, mode: Any = None) -> "StreamExecutionEnvironment":
        """Checkpoint every ``interval`` ms: in STREAMING mode, each micro-batch of the job's
        queries commits a checkpoint (Spark's offsets, commit log and state), and the interval is
        their trigger interval."""
        config = self.get_checkpoint_config()
        config.set_checkpoint_interval(interval)
        if mode is not None:
            config.set_checkpointing_mode(mode)
        return self

    def get_checkpoint_config(self) -> Any:
        from ..checkpoint_config import CheckpointConfig

        if getattr(self, "_checkpoint_config", None) is None:
            self._checkpoint_config = CheckpointConfig()
        return self._checkpoint_config

    def get_checkpoint_interval(self) -> int:
        return int(self.get_checkpoint_config().get_checkpoint_interval())

    def _streaming_options(self) -> dict[str, Any]:
        """The checkpoint and savepoint options a STREAMING job is submitted with."""
        from ..checkpoint_config import INTERVAL, parse_duration_ms

        options: dict[str, Any] = {}
        conf = getattr(self, "_configuration", None)
        if conf is not None:
            for key in ("execution.savepoint.path", "state.checkpoints.dir", INTERVAL,
                        "execution.savepoint.ignore-unclaimed-state", "state.checkpoints.num-retained"):
                if conf.contains_key(key):
                    options[key] = conf.get_string(key, "")
            if INTERVAL in options:
                options[INTERVAL] = parse_duration_ms(options[INTERVAL])
            flag = options.get("execution.savepoint.ignore-unclaimed-state")
            if flag is not None:
                options["execution.savepoint.ignore-unclaimed-state"] = str(flag).lower() == "true"
        options.update(self.get_checkpoint_config().to_options())
        path = options.get("execution.savepoint.path")
        if path and "://" not in path:
            options["execution.savepoint.path"] = os.path.abspath(os.path.expanduser(path))
        return options

    # -- configuration ---------------------------------------------------------------------
    def set_restart_strategy(self, restart_strategy_configuration: Any) -> "StreamExecutionEnvironment":
        """What the JobMaster does when a job fails after Spark's task retries
        (``RestartStrategies.fixed_delay_restart(3, 1000)``, ``failure_rate_restart``,
        ``no_restart``): restart it whole, as Flink does, or fail it (the default)."""
        from ..restart import RestartStrategyConfiguration

        if not isinstance(restart_strategy_configuration, RestartStrategyConfiguration):
            raise TypeError("set_restart_strategy takes a RestartStrategies.* configuration, not "
                            f"{restart_strategy_configuration!r}")
        self._restart_strategy = restart_strategy_configuration
        return self

    # -- Python dependencies (PyFlink's names) --------------------------------------------
    def add_python_file(self, file_path: str) -> None:
        """Ship a module (``.py``), a package directory, or a zip/wheel/egg with this
        environment's jobs: it is on ``sys.path`` of their tasks, and of no other job's."""
        self._add_dependency(pack_python_file(file_path))

    def add_python_archive(self, archive_path: str, target_dir: str | None = None) -> None:
        """Ship a zip or tar archive, extracted in the tasks' working directory under
        ``target_dir`` (default: the archive's file name): user code opens its files by
        relative paths such as ``open(f"{target_dir}/data.txt")``."""
        self._add_dependency(pack_archive(archive_path, target_dir))

    def set_python_requirements(self, requirements_file_path: str,
                                requirements_cache_dir: str | None = None) -> None:
        """Have pip install a requirements file on each TaskManager, once, into a directory
        of its own that only this environment's jobs see; with ``requirements_cache_dir``, from
        the packages there and nothing else (offline)."""
        self._python_dependencies = [d for d in self._python_dependencies
                                     if d[0].kind != "requirements"]
        self._add_dependency(pack_requirements(requirements_file_path, requirements_cache_dir))

    def _add_dependency(self, packed: tuple[PythonDependency, bytes]) -> None:
        if all(d.key != packed[0].key or d.target_dir != packed[0].target_dir
               for d, _ in self._python_dependencies):
            self._python_dependencies.append(packed)

    def get_restart_strategy(self) -> Any:
        from ..restart import RestartStrategies

        return self._restart_strategy or RestartStrategies.fall_back_restart()

    def set_parallelism(self, parallelism: int) -> "StreamExecutionEnvironment":
        if parallelism < 1:
            raise ValueError("parallelism must be at least 1")
        self.stream_graph.default_parallelism = parallelism
        return self

    def get_parallelism(self) -> int:
        return self.stream_graph.default_parallelism

    def disable_operator_chaining(self) -> "StreamExecutionEnvironment":
        self.stream_graph.chaining_enabled = False
        return self

    # -- sources ---------------------------------------------------------------------------
    def from_collection(self, collection: Any, type_info: Any = None) -> "DataStream":
        """A bounded source over a Python collection (materialized as a list). With a
        ``Types.ROW``/``ROW_NAMED`` type, tuples and lists become ``Row``s of its field names,
        as PyFlink reads them."""
        data = list(collection)
        if isinstance(type_info, RowTypeInfo):
            data = [_as_row(x, type_info.get_field_names()) for x in data]
        node = self.stream_graph.add_node(OperatorKind.SOURCE_COLLECTION, data,
                                          chaining=ChainingStrategy.HEAD)
        return DataStream(self, node)

    def read_text_file(self, file_path: str) -> "DataStream":
        """The lines of a text file (or a directory or glob of them), read by Spark: a local
        path, or anything Spark reads (``hdfs://``, ``s3a://``). A relative local path is taken
        from this process's working directory."""
        if "://" not in file_path:
            file_path = os.path.abspath(os.path.expanduser(file_path))
        node = self.stream_graph.add_node(OperatorKind.SOURCE_TEXT_FILE, None,
                                          chaining=ChainingStrategy.HEAD)
        node.config["path"] = file_path
        return DataStream(self, node)

    def from_spark(self, query_or_table: str) -> "DataStream":
        """The rows (pyspark ``Row``, a tuple) of a Spark SQL query or table, run on the
        session's SparkSession (the client has no Spark of its own, so a DataFrame is named by
        its query; a view made with ``create_temporary_view`` is a table here)."""
        node = self.stream_graph.add_node(OperatorKind.SOURCE_SPARK, None,
                                          chaining=ChainingStrategy.HEAD)
        node.config["query"] = query_or_table
        return DataStream(self, node)

    def create_temporary_view(self, name: str, stream_or_dataframe: Any,
                              schema: "str | list[str] | None" = None) -> None:
        """Name a DataStream's records (tuples, dicts or Rows) or a pandas DataFrame as a
        temporary view of the session's SparkSession, for ``session.sql``. A stream runs as a
        job now and its result is cached in Spark; ``schema`` (a DDL string such as
        ``"word STRING, n BIGINT"`` or column names) saves Spark inferring one."""
        if not isinstance(stream_or_dataframe, DataStream):
            self.session.create_temporary_view(name, stream_or_dataframe)
            return
        sink = stream_or_dataframe._sink(OperatorKind.SINK_VIEW)
        sink.config["name"] = name
        if schema is not None:
            sink.config["schema"] = schema if isinstance(schema, str) else list(schema)
        client = self._attached(self.execute_async(f"view {name}", sinks=[sink]))
        check(_wait_attached(client), f"view {name}")

    # -- execution -------------------------------------------------------------------------
    def job_graph(self, job_name: str = "sessioncluster job",
                  sinks: list[StreamNode] | None = None) -> tuple[JobGraph, dict[str, bytes]]:
        """The JobGraph (and its blobs) of the program's sinks, without running it."""
        blobs: dict[str, bytes] = {}

        def put_blob(obj: Any, what: str) -> str:
            try:
                data = _dumps_user_code(obj)
            except Exception as exc:  # noqa: BLE001 - cloudpickle raises many kinds
                raise UnpicklableFunctionError(
                    f"cannot ship {what} to the cluster: {type(exc).__name__}: {exc}. Functions "
                    "and everything they capture must be picklable by cloudpickle (open files, "
                    "sockets, locks and database connections are not; create them in open())."
                ) from exc
            key = hashlib.sha256(data).hexdigest()
            blobs[key] = data
            return key

        sinks = sinks if sinks is not None else self._sinks
        graph = build_job_graph(self.stream_graph, sinks, job_name, put_blob,
                                self._cached_in_session(sinks))
        graph.restart_strategy = self._restart_strategy
        graph.python_dependencies = [dep for dep, _ in self._python_dependencies]
        blobs.update({dep.key: data for dep, data in self._python_dependencies})
        if self._effective_runtime_mode() is RuntimeExecutionMode.STREAMING:
            graph.runtime_mode = RuntimeExecutionMode.STREAMING
            graph.configuration = self._streaming_options()
        return graph, blobs

    def _cached_in_session(self, sinks: list[StreamNode]) -> frozenset[str]:
        """The cache ids of the program's cached streams that the session holds (asked only
        when the program has one); a stream used after its ``invalidate()`` is an error."""
        ids = {n.config["cache_id"]: n for sink in sinks for n in self.stream_graph.upstream_of(sink)
               if n.config.get("cache_id")}
        if not ids:
            return frozenset()
        for cache_id, node in ids.items():
            if cache_id in self._invalidated:
                raise ValueError(f"the cached stream '{node.name}' was invalidated: its records are "
                                 "gone; call cache() on the stream again to cache it anew")
        held = {info.cache_id for info in self.session.cached_streams()}
        return frozenset(held & set(ids))

    def explain(self, job_name: str = "sessioncluster job") -> str:
        return self.job_graph(job_name)[0].explain()

    def execute_async(self, job_name: str = "sessioncluster job",
                      sinks: list[StreamNode] | None = None) -> JobClient:
        """Submit the program (detached) and return its JobClient at once."""
        self._check_executable()
        graph, blobs = self.job_graph(job_name, sinks)
        if sinks is None:
            self._sinks = []  # like Flink, executing clears the program's sinks
        job_id = self.session.submit(graph, blobs)
        return JobClient(self.session, job_id, job_name)

    def _attached(self, client: JobClient) -> JobClient:
        """An attached job: the front end (a notebook's live job widget) is told of it."""
        display.hooks.on_attached_job(client)
        return client

    def execute(self, job_name: str = "sessioncluster job") -> JobExecutionResult:
        """Run the program's sinks and wait for the result (attached). A STREAMING job runs
        until it ends (bounded sources consumed, cancelled, stopped with a savepoint); its
        ``print()`` lines are printed here as they come."""
        streaming = self._effective_runtime_mode() is RuntimeExecutionMode.STREAMING
        prints = [s for s in self._sinks if s.kind is OperatorKind.SINK_PRINT]
        client = self._attached(self.execute_async(job_name))
        if streaming and prints:
            _print_streamed(client)
        reply = _wait_attached(client)
        if streaming:
            check(reply, job_name)
            return JobExecutionResult(reply, job_name, client)
        check(reply, job_name)
        for line in reply.printed:
            print(line)
        return JobExecutionResult(reply, job_name, client)


class ContextStreamExecutionEnvironment(StreamExecutionEnvironment):
    """The environment of ``get_execution_environment()``: checks, before it submits a job,
    that the program can run (BATCH mode, bounded sources)."""

    def execute_async(self, *args: Any, **kwargs: Any) -> Any:
        self._check_executable()
        return super().execute_async(*args, **kwargs)


class DataStream:
    """A stream of records; every transformation returns a new DataStream."""

    def __init__(self, env: StreamExecutionEnvironment, node: StreamNode) -> None:
        self.env = env
        self.node = node

    def _then(self, kind: OperatorKind, fn: Any, partitioning: Partitioning = Partitioning.FORWARD,
              key_selector: Callable[[Any], Any] | None = None, name: str | None = None,
              explicit: bool = False) -> "DataStream":
        _check_function(fn, kind)
        g = self.env.stream_graph
        node = g.add_node(kind, fn, name)
        node.slot_sharing_group = self.node.slot_sharing_group
        self._connect(node, partitioning, key_selector, explicit)
        return DataStream(self.env, node)

    def _connect(self, node: StreamNode, partitioning: Partitioning = Partitioning.FORWARD,
                 key_selector: Callable[[Any], Any] | None = None, explicit: bool = False,
                 input_index: int | None = None) -> None:
        """The edge(s) from this stream into ``node``."""
        self.env.stream_graph.add_edge(self.node, node, partitioning, key_selector, explicit,
                                       input_index=input_index)

    # -- transformations (PyFlink's signatures: type information is accepted, not needed) ---
    def map(self, func: Any, output_type: Any = None) -> "DataStream":
        return self._then(OperatorKind.MAP, func)

    def flat_map(self, func: Any, output_type: Any = None) -> "DataStream":
        return self._then(OperatorKind.FLAT_MAP, func)

    def filter(self, func: Any) -> "DataStream":
        return self._then(OperatorKind.FILTER, func)

    def key_by(self, key_selector: Any, key_type: Any = None) -> "KeyedStream":
        _check_function(key_selector, None)
        return KeyedStream(self, key_selector)

    def union(self, *streams: "DataStream") -> "DataStream":
        """All records of this and the other streams, as one stream (Flink's union)."""
        for other in streams:
            if other.env is not self.env:
                raise ValueError("union() needs streams of the same environment")
        return _UnionStream(self.env, [self, *streams])

    def process(self, func: Any, output_type: Any = None) -> "DataStream":
        """Apply a ProcessFunction: ``process_element(value, ctx)`` yields outputs, and
        ``ctx.output(tag, value)`` sends one to a side output (:meth:`get_side_output`)."""
        _check_function(func, OperatorKind.PROCESS)
        return self._then(OperatorKind.PROCESS, ProcessOperator(func))

    def get_side_output(self, output_tag: OutputTag) -> "DataStream":
        """The records the process function of this stream sent to ``output_tag``
        (``ctx.output(output_tag, value)``); empty when it sends none."""
        if not isinstance(output_tag, OutputTag):
            raise TypeError(f"get_side_output() takes an OutputTag, not {output_tag!r}")
        if self.node.kind is not OperatorKind.PROCESS or isinstance(self, _SideOutputStream):
            raise ValueError(f"'{self.node.name}' is not a process function: only the stream of a "
                             "process() has side outputs")
        return _SideOutputStream(self.env, self.node, output_tag.tag_id)

    def cache(self) -> "CachedDataStream":
        """Cache this stream in the session (PyFlink's ``cache()``): the first job that computes
        it keeps its records in Spark's storage, and later jobs of this environment read them
        instead of running its upstream again. ``invalidate()`` releases them."""
        if self.env._effective_runtime_mode() is RuntimeExecutionMode.STREAMING:
            raise ValueError("cache() is only supported in BATCH mode")
        if isinstance(self, (_SideOutputStream, _UnionStream)):
            raise TypeError("cache() a stream of an operator: a union or side output is none")
        self.node.config.setdefault("cache_id", uuid.uuid4().hex)
        self.env._invalidated.discard(self.node.config["cache_id"])
        return CachedDataStream(self.env, self.node)

    def connect(self, ds: "DataStream") -> "ConnectedStreams":
        """This stream and ``ds`` as the two inputs of one operator (``map(CoMapFunction)``,
        ``flat_map``, ``process``; after ``key_by(k1, k2)`` with keyed state both share)."""
        if not isinstance(ds, DataStream) or ds.env is not self.env:
            raise ValueError("connect() takes a DataStream of the same environment")
        return ConnectedStreams(self, ds)

    def assign_timestamps_and_watermarks(self, watermark_strategy: Any) -> "DataStream":
        """Event time from here on: each record's timestamp is what the strategy's timestamp
        assigner extracts; it travels with the record through the operators that follow."""
        from ..watermark import WatermarkStrategy

        if not isinstance(watermark_strategy, WatermarkStrategy):
            raise TypeError(f"assign_timestamps_and_watermarks takes a WatermarkStrategy, not "
                            f"{watermark_strategy!r}")
        stream = self._then(OperatorKind.PROCESS, TimestampsAndWatermarksOperator(watermark_strategy),
                            name="Timestamps/Watermarks")
        stream.node.config["timestamped"] = True
        if watermark_strategy.kind != "no_watermarks":
            # STREAMING: the watermark trails the largest timestamp by this much
            stream.node.config["watermark_delay_ms"] = watermark_strategy.max_out_of_orderness
            if watermark_strategy.idleness:
                stream.node.config["watermark_idleness_ms"] = watermark_strategy.idleness
        return stream

    def window_all(self, window_assigner: Any) -> "AllWindowedStream":
        """Windows over every record of the stream, in one subtask (Flink's windowAll)."""
        return AllWindowedStream(self, window_assigner)

    def count_window_all(self, size: int, slide: int = 0) -> "AllWindowedStream":
        """Windows of ``size`` records of the whole stream, every ``slide`` records when sliding,
        in one subtask (Flink's countWindowAll)."""
        from ..window import CountSlidingWindowAssigner, CountTumblingWindowAssigner

        if slide:
            return AllWindowedStream(self, CountSlidingWindowAssigner.of(size, slide))
        return AllWindowedStream(self, CountTumblingWindowAssigner.of(size))

    def window(self, window_assigner: Any) -> Any:
        raise AttributeError("a DataStream that is not keyed has no window(): use "
                             "key_by(...).window(assigner), or window_all(assigner) for windows over "
                             "every record")

    def rebalance(self) -> "DataStream":
        """Round-robin the records over the next operator's subtasks."""
        return _Repartitioned(self, Partitioning.REBALANCE)  # type: ignore[return-value]

    # -- operator settings ------------------------------------------------------------------
    def name(self, name: str) -> "DataStream":
        self.node.name = name
        return self

    def uid(self, uid: str) -> "DataStream":
        self.node.uid = uid
        return self

    def set_parallelism(self, parallelism: int) -> "DataStream":
        if parallelism < 1:
            raise ValueError("parallelism must be at least 1")
        self.node.parallelism = parallelism  # unequal FORWARD edges become REBALANCE in the JobGraph
        return self

    def slot_sharing_group(self, name: str) -> "DataStream":
        self.node.slot_sharing_group = name
        return self

    def disable_chaining(self) -> "DataStream":
        self.node.chaining = ChainingStrategy.NEVER
        return self

    def start_new_chain(self) -> "DataStream":
        self.node.chaining = ChainingStrategy.HEAD
        return self

    # -- sinks ------------------------------------------------------------------------------
    def _sink(self, kind: OperatorKind) -> StreamNode:
        g = self.env.stream_graph
        node = g.add_node(kind, None)  # a sink runs with its input's parallelism
        node.slot_sharing_group = self.node.slot_sharing_group
        self._connect(node)
        return node

    def sink_to_text(self, path: str) -> "DataStream":
        """Write ``str(record)`` lines to the directory ``path`` (one part file per subtask)
        when the job runs (``env.execute()``)."""
        if "://" not in path:
            path = os.path.abspath(os.path.expanduser(path))
        node = self._sink(OperatorKind.SINK_TEXT)
        node.config["path"] = path
        self.env._sinks.append(node)
        return self

    def print(self) -> "DataStream":
        """Print every record at the client when the job runs (``env.execute()``)."""
        self.env._sinks.append(self._sink(OperatorKind.SINK_PRINT))
        return self

    def execute_and_collect(self, job_name: str = "collect", limit: int | None = None) -> list[Any]:
        """Run this stream as a job and return its records (at most ``limit`` of them)."""
        sink = self._sink(OperatorKind.SINK_COLLECT)
        if self.env._effective_runtime_mode() is RuntimeExecutionMode.STREAMING:
            # PyFlink: a CloseableIterator over results as they come; with a limit, that many
            # records as a list, and the job is cancelled
            client = self.env._attached(self.env.execute_async(job_name, sinks=[sink]))
            iterator = CloseableIterator(client)
            if limit is None:
                return iterator  # type: ignore[return-value]
            with iterator:
                return list(itertools.islice(iterator, int(limit)))
        if limit is not None:
            sink.config["limit"] = int(limit)
        client = self.env._attached(self.env.execute_async(job_name, sinks=[sink]))
        reply = _wait_attached(client)
        check(reply, job_name)
        records = records_of(reply)
        return records if limit is None else records[:limit]

    def execute_and_collect_async(self, job_name: str = "collect") -> JobClient:
        """Submit this stream as a job; ``JobClient.collect()`` gives its records."""
        sink = self._sink(OperatorKind.SINK_COLLECT)
        return self.env.execute_async(job_name, sinks=[sink])

    # -- PyFlink's sink_to (a bounded FileSink) ---------------------------------------------
    def sink_to(self, sink: Any) -> "DataStream":
        """Write the records with a row-format ``FileSink``: a line (``str(record)``) per record
        under its base path, one part file per subtask, when the job runs."""
        from ..connectors.file_system import FileSink

        if not isinstance(sink, FileSink):
            raise TypeError(f"sink_to takes a FileSink (the only sink so far), not {sink!r}")
        return self.sink_to_text(sink.writable_base_path())


class CachedDataStream(DataStream):
    """A cached stream (PyFlink's ``CachedDataStream``)."""

    @property
    def cache_id(self) -> str:
        return self.node.config["cache_id"]

    def invalidate(self) -> None:
        """Release the cached records in the session; using the stream afterwards is an error
        until it is cached again."""
        self.env._invalidated.add(self.cache_id)
        self.env.session.invalidate_cache(self.cache_id)


class _SideOutputStream(DataStream):
    """A side output of a process function: the operators that read it get an edge that
    carries the tagged records (never chained to the process function)."""

    def __init__(self, env: StreamExecutionEnvironment, node: StreamNode, tag_id: str) -> None:
        super().__init__(env, node)
        self.tag_id = tag_id

    def _connect(self, node: StreamNode, partitioning: Partitioning = Partitioning.FORWARD,
                 key_selector: Callable[[Any], Any] | None = None, explicit: bool = False,
                 input_index: int | None = None) -> None:
        self.env.stream_graph.add_edge(self.node, node, partitioning, key_selector, explicit,
                                       side_output=self.tag_id, input_index=input_index)

    def _settings_error(self, *args: Any) -> DataStream:
        raise TypeError("a side output is not an operator: set names, parallelism and chaining "
                        "on the operator that produces it or on the one that reads it")

    name = uid = set_parallelism = slot_sharing_group = _settings_error  # type: ignore[assignment]
    disable_chaining = start_new_chain = _settings_error


class _UnionStream(DataStream):
    """Flink's union is no operator: the next operator reads every input."""

    def __init__(self, env: StreamExecutionEnvironment, inputs: list[DataStream]) -> None:
        super().__init__(env, inputs[0].node)
        self.inputs = inputs

    def _connect(self, node: StreamNode, partitioning: Partitioning = Partitioning.FORWARD,
                 key_selector: Callable[[Any], Any] | None = None, explicit: bool = False,
                 input_index: int | None = None) -> None:
        for stream in self.inputs:  # every input of the union feeds the operator
            stream._connect(node, partitioning, key_selector, explicit, input_index)

    def _sink(self, kind: OperatorKind) -> StreamNode:
        g = self.env.stream_graph
        node = g.add_node(kind, None, parallelism=max(g.parallelism_of(s.node) for s in self.inputs))
        self._connect(node)
        return node

    def union(self, *streams: DataStream) -> DataStream:
        return _UnionStream(self.env, [*self.inputs, *streams])

    def _settings_error(self, *args: Any) -> DataStream:
        raise TypeError("a union is not an operator: set names, parallelism and chaining on "
                        "the operator that follows it")

    name = uid = set_parallelism = slot_sharing_group = _settings_error  # type: ignore[assignment]
    disable_chaining = start_new_chain = _settings_error


class _Repartitioned:
    """The stream after ``rebalance()``: the next operator gets a REBALANCE edge."""

    def __init__(self, stream: DataStream, partitioning: Partitioning) -> None:
        self.stream = stream
        self.partitioning = partitioning

    def _next(self, kind: OperatorKind, fn: Any) -> DataStream:
        return self.stream._then(kind, fn, self.partitioning, explicit=True)

    def map(self, func: Any) -> DataStream:
        return self._next(OperatorKind.MAP, func)

    def flat_map(self, func: Any) -> DataStream:
        return self._next(OperatorKind.FLAT_MAP, func)

    def filter(self, func: Any) -> DataStream:
        return self._next(OperatorKind.FILTER, func)


class KeyedStream:
    """A stream partitioned by key (a HASH exchange); reductions give one result per key."""

    def __init__(self, stream: DataStream, key_selector: Any) -> None:
        self.stream = stream
        self.key_selector = key_selector

    def reduce(self, func: Any, output_type: Any = None) -> DataStream:
        """Combine the records of each key pairwise; map-side combined before the shuffle."""
        return self.stream._then(OperatorKind.REDUCE, func, Partitioning.HASH, self.key_selector)

    def sum(self, position_to_sum: int | str = 0) -> DataStream:
        return self.stream._then(OperatorKind.REDUCE, FieldSum(position_to_sum), Partitioning.HASH,
                                 self.key_selector, name="Keyed Aggregation")

    def min(self, position_to_min: int | str | None = 0) -> DataStream:
        return self.stream._then(OperatorKind.REDUCE, FieldMin(position_to_min), Partitioning.HASH,
                                 self.key_selector, name="Keyed Aggregation")

    def max(self, position_to_max: int | str | None = 0) -> DataStream:
        return self.stream._then(OperatorKind.REDUCE, FieldMax(position_to_max), Partitioning.HASH,
                                 self.key_selector, name="Keyed Aggregation")

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        """A KeyedProcessFunction: keyed state (through ``open``'s runtime context),
        ``ctx.get_current_key()``, timers and ``on_timer``, side outputs."""
        _check_function(func, OperatorKind.PROCESS)
        return self.stream._then(OperatorKind.PROCESS, KeyedProcessOperator(func),
                                 Partitioning.HASH, self.key_selector)

    def _keyed(self, kind: OperatorKind, func: Any) -> DataStream:
        """A map/flat_map/filter after key_by; a rich function gets keyed state."""
        if isinstance(func, Function):
            _check_function(func, kind)
            return self.stream._then(OperatorKind.PROCESS, KeyedFunctionOperator(kind.value, func),
                                     Partitioning.HASH, self.key_selector, name=DEFAULT_NAMES[kind])
        return self.stream._then(kind, func, Partitioning.HASH, self.key_selector)

    def window(self, window_assigner: Any) -> "WindowedStream":
        """Windows per key (tumbling, sliding, session, global ... assigners)."""
        return WindowedStream(self, window_assigner)

    def count_window(self, size: int, slide: int = 0) -> "WindowedStream":
        """Windows of ``size`` records per key, every ``slide`` records when sliding (Flink's
        countWindow: an incomplete last window does not fire)."""
        from ..window import CountSlidingWindowAssigner, CountTumblingWindowAssigner

        if slide:
            return WindowedStream(self, CountSlidingWindowAssigner.of(size, slide))
        return WindowedStream(self, CountTumblingWindowAssigner.of(size))

    def map(self, func: Any, output_type: Any = None) -> DataStream:
        return self._keyed(OperatorKind.MAP, func)

    def flat_map(self, func: Any, output_type: Any = None) -> DataStream:
        return self._keyed(OperatorKind.FLAT_MAP, func)

    def filter(self, func: Any) -> DataStream:
        return self._keyed(OperatorKind.FILTER, func)


class ConnectedStreams:
    """Two streams feeding one two-input operator (Flink's ConnectedStreams)."""

    def __init__(self, first: DataStream, second: DataStream,
                 key_selectors: tuple[Any, Any] | None = None) -> None:
        self.first = first
        self.second = second
        self.key_selectors = key_selectors

    def key_by(self, key_selector1: Any, key_selector2: Any, key_type: Any = None) -> "ConnectedStreams":
        """Both inputs partitioned by their key: records of one key meet in one subtask, and
        keyed state is shared by both inputs."""
        _check_function(key_selector1, None)
        _check_function(key_selector2, None)
        return ConnectedStreams(self.first, self.second, (key_selector1, key_selector2))

    def _two_input(self, operator: StreamOperator, name: str) -> DataStream:
        env = self.first.env
        g = env.stream_graph
        node = g.add_node(OperatorKind.PROCESS, operator, name)
        node.slot_sharing_group = self.first.node.slot_sharing_group
        for index, stream in enumerate((self.first, self.second)):
            if self.key_selectors is not None:
                stream._connect(node, Partitioning.HASH, self.key_selectors[index], input_index=index)
            else:
                stream._connect(node, Partitioning.REBALANCE, input_index=index)
        return DataStream(env, node)

    def map(self, func: Any, output_type: Any = None) -> DataStream:
        """A CoMapFunction: ``map1`` for the first input's records, ``map2`` for the second's."""
        return self._two_input(CoMapOperator(func, keyed=self.key_selectors is not None), "Co-Map")

    def flat_map(self, func: Any, output_type: Any = None) -> DataStream:
        """A CoFlatMapFunction: ``flat_map1`` / ``flat_map2`` yield outputs."""
        return self._two_input(CoFlatMapOperator(func, keyed=self.key_selectors is not None),
                               "Co-Flat Map")

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        """A CoProcessFunction, or after key_by a KeyedCoProcessFunction (state, timers)."""
        if self.key_selectors is not None:
            return self._two_input(KeyedCoProcessOperator(func), "Co-Process")
        return self._two_input(CoProcessOperator(func), "Co-Process")


class WindowedStream:
    """A KeyedStream cut into windows; a window function gives each window's result."""

    def __init__(self, keyed: KeyedStream, assigner: Any) -> None:
        from ..window import WindowAssigner

        if not isinstance(assigner, WindowAssigner):
            raise TypeError(f"window() takes a WindowAssigner, not {assigner!r}")
        self.keyed = keyed
        self.assigner = assigner
        self._trigger: Any = None
        self._evictor: Any = None
        self._allowed_lateness: Any = 0
        self._late_data_tag: Any = None

    # -- settings -------------------------------------------------------------------------
    def trigger(self, trigger: Any) -> "WindowedStream":
        self._trigger = trigger
        return self

    def evictor(self, evictor: Any) -> "WindowedStream":
        self._evictor = evictor
        return self

    def allowed_lateness(self, time_ms: Any) -> "WindowedStream":
        self._allowed_lateness = time_ms
        return self

    def side_output_late_data(self, output_tag: OutputTag) -> "WindowedStream":
        self._late_data_tag = output_tag
        return self

    # -- window functions -----------------------------------------------------------------
    def _apply(self, kind: str, function: Any, window_function: Any = None) -> DataStream:
        operator = self._operator(kind, function, window_function)
        stream = self._stream(operator)
        stream.node.config["timestamped"] = True  # a window's result has its max timestamp
        return stream

    def _operator(self, kind: str, function: Any, window_function: Any) -> StreamOperator:
        return WindowOperator(self.assigner, kind, function, window_function,
                              self._allowed_lateness, self._late_data_tag, self._trigger, self._evictor)

    def _stream(self, operator: StreamOperator) -> DataStream:
        return self.keyed.stream._then(OperatorKind.PROCESS, operator, Partitioning.HASH,
                                       self.keyed.key_selector, name="Window")

    def reduce(self, reduce_function: Any, window_function: Any = None,
               output_type: Any = None) -> DataStream:
        return self._apply("reduce", reduce_function, window_function)

    def aggregate(self, aggregate_function: Any, window_function: Any = None,
                  accumulator_type: Any = None, output_type: Any = None) -> DataStream:
        return self._apply("aggregate", aggregate_function, window_function)

    def apply(self, window_function: Any, output_type: Any = None) -> DataStream:
        return self._apply("apply", window_function)

    def process(self, process_window_function: Any, output_type: Any = None) -> DataStream:
        return self._apply("process", process_window_function)


class AllWindowedStream(WindowedStream):
    """Windows over every record of a stream that is not keyed: one subtask (parallelism 1)."""

    def __init__(self, stream: DataStream, assigner: Any) -> None:
        super().__init__(KeyedStream(stream, NullByteKeySelector()), assigner)

    def _operator(self, kind: str, function: Any, window_function: Any) -> StreamOperator:
        return AllWindowOperator(self.assigner, kind, function, window_function,
                                 self._allowed_lateness, self._late_data_tag, self._trigger,
                                 self._evictor)

    def _stream(self, operator: StreamOperator) -> DataStream:
        # a keyed window over one constant key (DESIGN 5f): in STREAMING its windows live in the
        # state store across micro-batches, as a keyed window's do
        stream = self.keyed.stream._then(OperatorKind.PROCESS, operator, Partitioning.HASH,
                                         self.keyed.key_selector, name="Window(All)")
        stream.node.parallelism = 1
        return stream


def _print_streamed(client: JobClient) -> None:
    """Print a STREAMING job's ``print()`` lines as they come, until it ends; an interrupt
    cancels the job."""
    lines = CloseableIterator(client, lines=True)
    try:
        for line in lines:
            print(line, flush=True)
    except KeyboardInterrupt:
        client.cancel()
        raise
    except JobExecutionException:
        pass  # the job's own result says why, next


def _wait_attached(client: JobClient) -> Any:
    """Wait for an attached job; an interrupt (Ctrl-C, the notebook's stop button) cancels it."""
    try:
        return client.wait()
    except KeyboardInterrupt:
        client.cancel()
        raise


_INSTALLED_PATHS = tuple(
    os.path.realpath(p) + os.sep
    for p in {sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")} if p
)


def _user_package(obj: Any) -> ModuleType | None:
    """The top-level package of ``obj``'s module when it is the user's own code (not installed,
    not this package): the TaskManagers cannot import it, so it travels by value."""
    name = getattr(obj, "__module__", None) or getattr(type(obj), "__module__", None)
    if not name or name == "__main__":
        return None  # cloudpickle ships __main__ by value anyway
    top = name.split(".")[0]
    if top in ("sessioncluster", "builtins") or top in sys.builtin_module_names:
        return None
    module = sys.modules.get(top)
    path = getattr(module, "__file__", None)
    if module is None or path is None or os.path.realpath(path).startswith(_INSTALLED_PATHS):
        return None
    return module


def _code_reduce_keeping_filename(code: CodeType) -> Any:
    """cloudpickle's reducer for a code object, with the code's own file name kept.

    cloudpickle 3.1.2 and later write ``<dynamic-code>`` as every function's file name (for
    payloads that do not depend on where a function was defined); a traceback from a
    TaskManager then cannot point at the user's cell or file. The name is the one argument
    equal to that marker."""
    rebuild, args = cloudpickle.Pickler.dispatch_table[CodeType](code)
    return rebuild, tuple(code.co_filename if arg == "<dynamic-code>" else arg for arg in args)


class UserCodePickler(cloudpickle.Pickler):
    """cloudpickle's Pickler, keeping the file names of the user's code for tracebacks."""

    dispatch_table = ChainMap({CodeType: _code_reduce_keeping_filename},
                              cloudpickle.Pickler.dispatch_table)


def _dumps_user_code(obj: Any) -> bytes:
    # an operator travels with the user's functions inside: their packages decide
    functions = obj.user_functions if isinstance(obj, StreamOperator) else [obj]
    packages = {p for p in map(_user_package, functions) if p is not None}
    for package in packages:
        cloudpickle.register_pickle_by_value(package)
    try:
        buffer = io.BytesIO()
        UserCodePickler(buffer).dump(obj)
        return buffer.getvalue()
    finally:
        for package in packages:
            cloudpickle.unregister_pickle_by_value(package)


def _check_function(fn: Any, kind: OperatorKind | None) -> None:
    if fn is None:
        return
    if (kind is OperatorKind.REDUCE and isinstance(fn, FieldAggregation)) or isinstance(fn, StreamOperator):
        return
    if isinstance(fn, Function) or callable(fn):
        as_callable(fn)
        return
    raise TypeError(f"{fn!r} is not a function: pass a callable or a "
                    f"{'MapFunction/FlatMapFunction/...' if kind else 'KeySelector'} object")


def _as_row(value: Any, names: list[str]) -> Any:
    """A tuple or list of a ROW-typed collection as PyFlink's ``Row`` of ``names``."""
    if isinstance(value, Row) or not isinstance(value, (tuple, list)):
        return value
    if len(value) != len(names):
        raise ValueError(f"the collection's element {value!r} has {len(value)} fields, its type "
                         f"ROW has {len(names)}: {names}")
    row = Row(*value)
    row.set_field_names(list(names))
    return row
