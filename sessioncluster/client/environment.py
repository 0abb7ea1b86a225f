"""PyFlink's DataStream API in BATCH mode, bound to a session cluster.

>>> env = session.get_execution_environment()                       # doctest: +SKIP
>>> (env.from_collection(["a b", "b"]).flat_map(str.split)          # doctest: +SKIP
...     .map(lambda w: (w, 1)).key_by(lambda t: t[0]).sum(1).execute_and_collect())
[('a', 1), ('b', 2)]
"""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING, Any

from ..common.execution_mode import RuntimeExecutionMode
from ..common.typeinfo import RowTypeInfo, as_declared
from ..common.types import Row
from ..dependencies import pack_archive, pack_python_file, pack_requirements
from ..graph.executionplan import execution_plan
from ..graph.jobgraph import JobGraph, PythonDependency, build_job_graph
from ..graph.streamgraph import (
    ChainingStrategy,
    OperatorKind,
    StreamGraph,
    StreamNode,
)
from . import display
from .datastream import DataStream
from .jobclient import (
    JobClient,
    JobExecutionResult,
    check,
    wait_attached,
)
from .shipping import UnpicklableFunctionError, dumps_user_code

if TYPE_CHECKING:
    from .session import Session




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
        #: node id -> the TypeInformation its records were declared with (``output_type=``)
        self.output_types: dict[int, Any] = {}

    # -- PyFlink's environment API: the current session, runtime mode, configuration, FileSource --
    @staticmethod
    def get_execution_environment(configuration: Any = None) -> "StreamExecutionEnvironment":
        """An environment on the current session: the one this process started or connected,
        else the session named by ``SESSIONCLUSTER_SESSION`` (see ``client/current.py``)."""
        from .current import current_or_connect, environment_factory

        session = current_or_connect()
        env = (environment_factory() or ContextStreamExecutionEnvironment)(session)
        # the session's parallelism.default (every slot unless --parallelism), as Flink's
        # environments take the cluster's: a print sink of 2 subtasks prefixes `1> `, `2> `
        info = getattr(session, "info", None)
        if info is not None:
            env.stream_graph.default_parallelism = info.parallelism
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
        """A stream from a ``FileSource`` (records of its format: lines, CSV rows, Parquet rows...;
        with ``monitor_continuously`` new files are read as they appear, in STREAMING mode) or a
        ``NumberSequenceSource``."""
        from ..api.connectors.file_system import FileSource
        from ..api.connectors.number_seq import NumberSequenceSource

        if isinstance(source, NumberSequenceSource):
            node = self.stream_graph.add_node(OperatorKind.SOURCE_STREAM, None, source_name,
                                              chaining=ChainingStrategy.HEAD)
            node.config.update({"format": "sequence", "start": source.start, "end": source.end})
            ds = DataStream(self, node)
        elif isinstance(source, FileSource):
            ds = self._file_source(source, source_name)
        else:
            raise TypeError(f"from_source takes a FileSource or a NumberSequenceSource, not {source!r}")
        # a strategy with a timestamp assigner stamps the records, as PyFlink's from_source does
        assigner = getattr(watermark_strategy, "timestamp_assigner", None)
        if assigner is not None and hasattr(ds, "assign_timestamps_and_watermarks"):
            ds = ds.assign_timestamps_and_watermarks(watermark_strategy)
        if type_info is not None:
            self.output_types[ds.node.node_id] = type_info
        return ds

    def _file_source(self, source: Any, source_name: str) -> "DataStream":
        """A FileSource's node: its format travels as the node's blob, read by the source's
        subtasks (``read_file``) from the files Spark lists under its paths."""
        node = self.stream_graph.add_node(OperatorKind.SOURCE_TEXT_FILE, source.stream_format,
                                          source_name, chaining=ChainingStrategy.HEAD)
        # several paths are one comma-separated list (as the watched-directory checks read it)
        node.config.update({"path": ",".join(source.paths), "file_source": True})
        if not source.bounded:
            node.config["unbounded"] = True
            node.config["discovery_interval_ms"] = source.discovery_interval_ms
        return DataStream(self, node)

    def create_input(self, input_format: Any, type_info: Any = None) -> "DataStream":
        """The records of an input format over its path (PyFlink's ``create_input``, e.g.
        ``AvroInputFormat(path, schema)``): a bounded FileSource."""
        from ..api.connectors.file_system import FileSource

        path = getattr(input_format, "path", None)
        if not path:
            raise ValueError(f"{input_format!r} names no path to read")
        source = FileSource.for_bulk_file_format(input_format, path).build()
        return self._file_source(source, f"Source: {type(input_format).__name__}")

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
        from ..api.checkpoint_config import CheckpointConfig

        if getattr(self, "_checkpoint_config", None) is None:
            self._checkpoint_config = CheckpointConfig()
        return self._checkpoint_config

    def get_checkpoint_interval(self) -> int:
        return int(self.get_checkpoint_config().get_checkpoint_interval())

    def _streaming_options(self) -> dict[str, Any]:
        """The checkpoint and savepoint options a STREAMING job is submitted with."""
        from ..api.checkpoint_config import INCREMENTAL, INTERVAL, parse_duration_ms

        options: dict[str, Any] = {}
        conf = getattr(self, "_configuration", None)
        if conf is not None:
            for key in ("execution.savepoint.path", "state.checkpoints.dir", INTERVAL,
                        "execution.savepoint.ignore-unclaimed-state", "state.checkpoints.num-retained",
                        INCREMENTAL):
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
        from ..api.restart import RestartStrategyConfiguration

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

    def add_python_dependencies(self, packed: list[tuple[PythonDependency, bytes]]) -> None:
        """Ship these packed dependencies with this environment's jobs too (a
        StreamTableEnvironment's ``python.files``..., whose Table's query is a source of them:
        its Python functions run with them)."""
        for dependency in packed:
            self._add_dependency(dependency)

    def _add_dependency(self, packed: tuple[PythonDependency, bytes]) -> None:
        if all(d.key != packed[0].key or d.target_dir != packed[0].target_dir
               for d, _ in self._python_dependencies):
            self._python_dependencies.append(packed)

    def get_restart_strategy(self) -> Any:
        from ..api.restart import RestartStrategies

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
        # the records as they read back from Flink's Java source of type_info (FLOAT: 32 bits)
        data = [as_declared(x, type_info) for x in collection]
        if isinstance(type_info, RowTypeInfo):
            data = [_as_row(x, type_info.get_field_names()) for x in data]
        node = self.stream_graph.add_node(OperatorKind.SOURCE_COLLECTION, data,
                                          chaining=ChainingStrategy.HEAD)
        if type_info is not None:  # the records' type (a Table of them: its columns' types)
            self.output_types[node.node_id] = type_info
        return DataStream(self, node)

    def read_text_file(self, file_path: str) -> "DataStream":
        """The lines of a text file (or a directory or glob of them): a local path, or anything
        Spark reads (``hdfs://``, ``s3a://``). A relative local path is taken from this process's
        working directory. In BATCH mode each source subtask reads its share of local,
        uncompressed files itself (lines end with ``\n``, a ``\r`` before it dropped, as Flink's
        TextInputFormat); Spark's ``textFile`` reads the rest."""
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
        check(wait_attached(client), f"view {name}")

    # -- execution -------------------------------------------------------------------------
    def job_graph(self, job_name: str = "sessioncluster job",
                  sinks: list[StreamNode] | None = None) -> tuple[JobGraph, dict[str, bytes]]:
        """The JobGraph (and its blobs) of the program's sinks, without running it."""
        blobs: dict[str, bytes] = {}

        def put_blob(obj: Any, what: str) -> str:
            try:
                data = dumps_user_code(obj)
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
        graph.job_parameters = self.get_config().get_global_job_parameters()
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

    def get_execution_plan(self) -> str:
        """The program's operators (before chaining) as Flink's JSON execution plan."""
        return execution_plan(self.stream_graph, self._sinks)

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
            client.print_lines()
        reply = wait_attached(client)
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


def _as_row(value: Any, names: list[str]) -> Any:
    """A tuple or list of a ROW-typed collection as PyFlink's ``Row`` of ``names``; a Row
    without field names gets them (its RowKind kept)."""
    if isinstance(value, Row):
        try:
            value.as_dict()
            return value
        except TypeError:
            if len(value) != len(names):
                return value
            row = Row.of_kind(value.get_row_kind(), *value)
            row.set_field_names(list(names))
            return row
    if not isinstance(value, (tuple, list)):
        return value
    if len(value) != len(names):
        raise ValueError(f"the collection's element {value!r} has {len(value)} fields, its type "
                         f"ROW has {len(names)}: {names}")
    row = Row(*value)
    row.set_field_names(list(names))
    return row

