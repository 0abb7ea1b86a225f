"""PyFlink's DataStream classes: DataStream, KeyedStream, ConnectedStreams, WindowedStream and the
streams they make; each call adds a StreamNode to its environment's StreamGraph."""

from __future__ import annotations

import itertools
import uuid
from typing import TYPE_CHECKING, Any, Callable

from ..api.functions import (
    CustomPartitioning,
    FieldMax,
    FieldMaxBy,
    FieldMin,
    FieldMinBy,
    FieldSum,
    Function,
    NullByteKeySelector,
    OutputTag,
)
from ..api.slot_sharing_group import SlotSharingGroup
from ..common.execution_mode import RuntimeExecutionMode
from ..common.typeinfo import has_float, type_spec
from ..graph.streamgraph import (
    DEFAULT_NAMES,
    ChainingStrategy,
    OperatorKind,
    Partitioning,
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
from .jobclient import (
    CloseableIterator,
    JobClient,
    check,
    records_of,
    wait_attached,
)
from .shipping import check_function

if TYPE_CHECKING:
    from .environment import StreamExecutionEnvironment


class DataStream:
    """A stream of records; every transformation returns a new DataStream."""

    def __init__(self, env: StreamExecutionEnvironment, node: StreamNode) -> None:
        self.env = env
        self.node = node

    def _then(self, kind: OperatorKind, fn: Any, partitioning: Partitioning = Partitioning.FORWARD,
              key_selector: Callable[[Any], Any] | None = None, name: str | None = None,
              explicit: bool = False) -> "DataStream":
        check_function(fn, kind)
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
        return typed(self._then(OperatorKind.MAP, func), output_type)

    def flat_map(self, func: Any, output_type: Any = None) -> "DataStream":
        return typed(self._then(OperatorKind.FLAT_MAP, func), output_type)

    def filter(self, func: Any) -> "DataStream":
        """The records ``func`` keeps, of this stream's declared type (as PyFlink's filter)."""
        return typed(self._then(OperatorKind.FILTER, func), self.env.output_types.get(self.node.node_id))

    def key_by(self, key_selector: Any, key_type: Any = None) -> "KeyedStream":
        check_function(key_selector, None)
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
        check_function(func, OperatorKind.PROCESS)
        return typed(self._then(OperatorKind.PROCESS, ProcessOperator(func)), output_type)

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
        if isinstance(ds, KeyedStream):  # a non-keyed operator, as PyFlink's
            ds = ds.stream
        if not isinstance(ds, DataStream) or ds.env is not self.env:
            raise ValueError("connect() takes a DataStream of the same environment")
        return ConnectedStreams(self, ds)

    def assign_timestamps_and_watermarks(self, watermark_strategy: Any) -> "DataStream":
        """Event time from here on: each record's timestamp is what the strategy's timestamp
        assigner extracts; it travels with the record through the operators that follow."""
        from ..api.watermark import WatermarkStrategy

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
        from ..api.window import CountSlidingWindowAssigner, CountTumblingWindowAssigner

        if slide:
            return AllWindowedStream(self, CountSlidingWindowAssigner.of(size, slide))
        return AllWindowedStream(self, CountTumblingWindowAssigner.of(size))

    def window(self, window_assigner: Any) -> Any:
        raise AttributeError("a DataStream that is not keyed has no window(): use "
                             "key_by(...).window(assigner), or window_all(assigner) for windows over "
                             "every record")

    # -- physical partitioning: how the next operator's subtasks get the records -----------
    def rebalance(self) -> "DataStream":
        """Round-robin the records over the next operator's subtasks."""
        return _PartitionedStream(self, Partitioning.REBALANCE)

    def shuffle(self) -> "DataStream":
        """Each record to a random subtask of the next operator."""
        return _PartitionedStream(self, Partitioning.SHUFFLE)

    def rescale(self) -> "DataStream":
        """Round-robin over the subset of the next operator's subtasks each subtask feeds
        (Flink's pointwise pattern: 2 -> 4 subtasks, each feeds two; 4 -> 2, two feed each)."""
        return _PartitionedStream(self, Partitioning.RESCALE)

    def forward(self) -> "DataStream":
        """Each subtask's records to the same subtask of the next operator (equal
        parallelism; Flink refuses another)."""
        return _PartitionedStream(self, Partitioning.FORWARD)

    def broadcast(self, *broadcast_state_descriptors: Any) -> "DataStream":
        """Each record to every subtask of the next operator."""
        if broadcast_state_descriptors:
            raise NotImplementedError(
                "broadcast(MapStateDescriptor) (the broadcast state pattern, "
                "BroadcastProcessFunction) is not supported by sessioncluster yet; broadcast() "
                "without descriptors sends each record to every subtask")
        return _PartitionedStream(self, Partitioning.BROADCAST)

    def partition_custom(self, partitioner: Any, key_selector: Any) -> "DataStream":
        """Each record to the subtask ``partitioner`` (a Partitioner, or a function of
        ``(key, num_partitions)``) gives for the key ``key_selector`` gives."""
        return _PartitionedStream(self, Partitioning.CUSTOM,
                                  CustomPartitioning(partitioner, key_selector))

    def project(self, *field_indexes: int) -> "DataStream":
        """The tuples' fields at ``field_indexes``, in that order (Flink's projection)."""
        return self._then(OperatorKind.MAP, _Projection(field_indexes), name="Projection")

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

    def slot_sharing_group(self, name: str | SlotSharingGroup) -> "DataStream":
        """The group by its name (a SlotSharingGroup's resources are not reserved here)."""
        self.node.slot_sharing_group = name.get_name() if isinstance(name, SlotSharingGroup) else name
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
        """Write the records' lines (Java's text of a declared type, else ``str(record)``) into
        the directory ``path`` (one part file per subtask, added to what the directory holds)
        when the job runs: a row-format FileSink with ``base_path_bucket_assigner`` that rolls
        at checkpoints only."""
        from ..api.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
        from ..common.serialization import Encoder

        sink = (FileSink.for_row_format(path, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
                .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy()).build())
        self._file_sink(sink, None)
        return self

    def print(self, sink_identifier: str | None = None) -> "DataStream":
        """Print every record at the client when the job runs (``env.execute()``), as Flink's
        print sink: the Java text of the stream's declared type (``(a,1)`` for a TUPLE), after
        ``sink_identifier`` and the subtask (``ID:2> ``) when the sink runs in several."""
        sink = self._sink(OperatorKind.SINK_PRINT)
        sink.config["print_type"] = type_spec(self.env.output_types.get(self.node.node_id))
        if sink_identifier is not None:
            sink.config["identifier"] = str(sink_identifier)
        self.env._sinks.append(sink)
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
        reply = wait_attached(client)
        check(reply, job_name)
        records = records_of(reply)
        return records if limit is None else records[:limit]

    def collect_job_graph(self, job_name: str = "collect") -> tuple[Any, dict[str, bytes]]:
        """The JobGraph (and its blobs) of a job collecting this stream's records, not
        submitted: a Table of the stream runs it inside its query (``from_data_stream``)."""
        return self.env.job_graph(job_name, sinks=[self._sink(OperatorKind.SINK_COLLECT)])

    def execute_and_collect_async(self, job_name: str = "collect") -> JobClient:
        """Submit this stream as a job; ``JobClient.collect()`` gives its records."""
        sink = self._sink(OperatorKind.SINK_COLLECT)
        return self.env.execute_async(job_name, sinks=[sink])

    # -- PyFlink's sink_to (a FileSink) --------------------------------------------------------
    def sink_to(self, sink: Any) -> "DataStream":
        """Write the records with a ``FileSink`` (row or bulk format) into part files under its
        base path, committed when the job finishes (BATCH) or at each checkpoint (STREAMING).
        The base path is checked now: a file, or a directory that cannot be written, fails."""
        from ..api.connectors.file_system import FileSink

        if not isinstance(sink, FileSink):
            raise TypeError(f"sink_to takes a FileSink (the only sink so far), not {sink!r}")
        self._file_sink(sink, "Sink: File Sink")
        return self

    def _file_sink(self, sink: Any, name: str | None) -> None:
        sink.check_base_path()
        node = self._sink(OperatorKind.SINK_TEXT)
        node.function = sink.of_record_type(self.env.output_types.get(self.node.node_id))
        node.config["path"] = sink.base_path
        if name is not None:
            node.name = name
        self.env._sinks.append(node)


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


class _NotAnOperator(DataStream):
    """A stream that is no operator of its own (a side output, a union, a partitioning): its
    operator settings are errors that say where they belong (``not_an_operator``)."""

    not_an_operator = ""

    def _settings_error(self, *args: Any) -> DataStream:
        raise TypeError(self.not_an_operator)

    name = uid = set_parallelism = slot_sharing_group = _settings_error  # type: ignore[assignment]
    disable_chaining = start_new_chain = _settings_error


class _SideOutputStream(_NotAnOperator):
    """A side output of a process function: the operators that read it get an edge that
    carries the tagged records (never chained to the process function)."""

    #: :meth:`_NotAnOperator._settings_error`'s message
    not_an_operator = ("a side output is not an operator: set names, parallelism and chaining on "
                       "the operator that produces it or on the one that reads it")

    def __init__(self, env: StreamExecutionEnvironment, node: StreamNode, tag_id: str) -> None:
        super().__init__(env, node)
        self.tag_id = tag_id

    def _connect(self, node: StreamNode, partitioning: Partitioning = Partitioning.FORWARD,
                 key_selector: Callable[[Any], Any] | None = None, explicit: bool = False,
                 input_index: int | None = None) -> None:
        self.env.stream_graph.add_edge(self.node, node, partitioning, key_selector, explicit,
                                       side_output=self.tag_id, input_index=input_index)


class _UnionStream(_NotAnOperator):
    """Flink's union is no operator: the next operator reads every input."""

    not_an_operator = ("a union is not an operator: set names, parallelism and chaining on the "
                       "operator that follows it")

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


class _PartitionedStream(_NotAnOperator):
    """A stream after ``rebalance()``, ``shuffle()``, ... (Flink's partition transformation,
    no operator): the operators that read it get an edge of that partitioning, unless they
    partition by key themselves (``key_by``)."""

    not_an_operator = ("a partitioning is not an operator: set names, parallelism and chaining "
                       "on the operator before it or on the one that reads it")

    def __init__(self, stream: DataStream, partitioning: Partitioning,
                 channel: CustomPartitioning | None = None) -> None:
        super().__init__(stream.env, stream.node)
        self.stream, self.partitioning, self.channel = stream, partitioning, channel

    def _connect(self, node: StreamNode, partitioning: Partitioning = Partitioning.FORWARD,
                 key_selector: Callable[[Any], Any] | None = None, explicit: bool = False,
                 input_index: int | None = None) -> None:
        if partitioning is Partitioning.FORWARD:
            partitioning, key_selector, explicit = self.partitioning, self.channel, True
        self.stream._connect(node, partitioning, key_selector, explicit, input_index)


class _Projection:
    """``project(*field_indexes)``: a tuple of the fields at those positions."""

    def __init__(self, field_indexes: tuple[int, ...]) -> None:
        if not field_indexes:
            raise ValueError("project() takes at least one field index")
        self.field_indexes = field_indexes

    def __call__(self, value: Any) -> tuple[Any, ...]:
        return tuple(value[i] for i in self.field_indexes)


def then(stream: DataStream, operator: Any, name: str) -> DataStream:
    """A one-input operator (a StreamOperator) after ``stream``, chained to it: what an API
    kept in a module of its own (``AsyncDataStream``) adds."""
    return stream._then(OperatorKind.PROCESS, operator, name=name)


def typed(stream: DataStream, output_type: Any) -> DataStream:
    """``stream``, its records declared of ``output_type`` (kept for a Table of it)."""
    if output_type is not None:
        stream.env.output_types[stream.node.node_id] = output_type
        if has_float(output_type):  # its values cross an exchange in 32 bits, as in Flink
            stream.node.config["output_type"] = type_spec(output_type)
    return stream


class KeyedStream:
    """A stream partitioned by key (a HASH exchange); reductions give one result per key."""

    def __init__(self, stream: DataStream, key_selector: Any) -> None:
        self.stream = stream
        self.key_selector = key_selector

    def reduce(self, func: Any, output_type: Any = None) -> DataStream:
        """Combine the records of each key pairwise; map-side combined before the shuffle."""
        stream = self.stream._then(OperatorKind.REDUCE, func, Partitioning.HASH, self.key_selector)
        return typed(stream, output_type or self._input_type())  # PyFlink: the input's type

    def _input_type(self) -> Any:
        """The declared type of the records before ``key_by`` (what PyFlink's reduce, sum, min,
        max, min_by, max_by and filter declare for theirs)."""
        return self.stream.env.output_types.get(self.stream.node.node_id)

    def _aggregation(self, aggregation: Any) -> DataStream:
        stream = self.stream._then(OperatorKind.REDUCE, aggregation, Partitioning.HASH,
                                   self.key_selector, name="Keyed Aggregation")
        return typed(stream, self._input_type())

    def sum(self, position_to_sum: int | str = 0) -> DataStream:
        return self._aggregation(FieldSum(position_to_sum))

    def min(self, position_to_min: int | str | None = 0) -> DataStream:
        return self._aggregation(FieldMin(position_to_min))

    def max(self, position_to_max: int | str | None = 0) -> DataStream:
        return self._aggregation(FieldMax(position_to_max))

    def min_by(self, position_to_min_by: int | str = 0) -> DataStream:
        """Per key, the record with the smallest field ``position_to_min_by`` so far (the
        first one of equal ones)."""
        return self._aggregation(FieldMinBy(position_to_min_by))

    def max_by(self, position_to_max_by: int | str = 0) -> DataStream:
        """Per key, the record with the largest field ``position_to_max_by`` so far (the first
        one of equal ones)."""
        return self._aggregation(FieldMaxBy(position_to_max_by))

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        """A KeyedProcessFunction: keyed state (through ``open``'s runtime context),
        ``ctx.get_current_key()``, timers and ``on_timer``, side outputs."""
        check_function(func, OperatorKind.PROCESS)
        stream = self.stream._then(OperatorKind.PROCESS, KeyedProcessOperator(func),
                                   Partitioning.HASH, self.key_selector)
        return typed(stream, output_type)

    def _keyed(self, kind: OperatorKind, func: Any) -> DataStream:
        """A map/flat_map/filter after key_by; a rich function gets keyed state."""
        if isinstance(func, Function):
            check_function(func, kind)
            return self.stream._then(OperatorKind.PROCESS, KeyedFunctionOperator(kind.value, func),
                                     Partitioning.HASH, self.key_selector, name=DEFAULT_NAMES[kind])
        return self.stream._then(kind, func, Partitioning.HASH, self.key_selector)

    def window(self, window_assigner: Any) -> "WindowedStream":
        """Windows per key (tumbling, sliding, session, global ... assigners)."""
        return WindowedStream(self, window_assigner)

    def count_window(self, size: int, slide: int = 0) -> "WindowedStream":
        """Windows of ``size`` records per key, every ``slide`` records when sliding (Flink's
        countWindow: an incomplete last window does not fire)."""
        from ..api.window import CountSlidingWindowAssigner, CountTumblingWindowAssigner

        if slide:
            return WindowedStream(self, CountSlidingWindowAssigner.of(size, slide))
        return WindowedStream(self, CountTumblingWindowAssigner.of(size))

    def map(self, func: Any, output_type: Any = None) -> DataStream:
        return typed(self._keyed(OperatorKind.MAP, func), output_type)

    def flat_map(self, func: Any, output_type: Any = None) -> DataStream:
        return typed(self._keyed(OperatorKind.FLAT_MAP, func), output_type)

    def filter(self, func: Any) -> DataStream:
        return typed(self._keyed(OperatorKind.FILTER, func), self._input_type())

    def key_by(self, key_selector: Any, key_type: Any = None) -> "KeyedStream":
        """The stream before this ``key_by``, keyed by ``key_selector`` instead."""
        return self.stream.key_by(key_selector, key_type)

    def connect(self, ds: Any) -> "ConnectedStreams":
        """With another KeyedStream, the two inputs of a keyed two-input operator (a
        ``KeyedCoProcessFunction``, a ``CoMapFunction`` with keyed state), as
        ``connect(...).key_by(k1, k2)``; with a DataStream, a non-keyed one."""
        if isinstance(ds, KeyedStream):
            return self.stream.connect(ds.stream).key_by(self.key_selector, ds.key_selector)
        return self.stream.connect(ds)

    def union(self, *streams: DataStream) -> DataStream:
        return self._values().union(*streams)

    def project(self, *field_indexes: int) -> DataStream:
        return self._values().project(*field_indexes)

    def print(self, sink_identifier: str | None = None) -> DataStream:
        """Print each record, on the subtask its key goes to (``2> ...``)."""
        values = typed(self._values(), self.stream.env.output_types.get(self.stream.node.node_id))
        return values.print(sink_identifier)

    def sink_to(self, sink: Any) -> DataStream:
        return self._values().sink_to(sink)

    def execute_and_collect(self, job_name: str = "collect", limit: int | None = None) -> list[Any]:
        return self._values().execute_and_collect(job_name, limit)

    def _values(self) -> DataStream:
        """The records as they are, partitioned by key (PyFlink's identity map after a
        ``key_by``)."""
        return self.stream._then(OperatorKind.MAP, _identity, Partitioning.HASH,
                                 self.key_selector, name=KEYED_STREAM_VALUES)

    def _refused(self, what: str) -> Any:
        raise Exception(f"{what} for KeyedStream is not supported.")  # PyFlink's messages

    def set_parallelism(self, parallelism: int) -> Any:
        return self._refused("Set parallelism")

    def name(self, name: str) -> Any:
        return self._refused("Set name")

    def uid(self, uid: str) -> Any:
        return self._refused("Set uid")

    def slot_sharing_group(self, name: Any) -> Any:
        return self._refused("Setting slot sharing group")

    def start_new_chain(self) -> Any:
        return self._refused("Start new chain")

    def disable_chaining(self) -> Any:
        return self._refused("Disable chaining")

    def cache(self) -> Any:
        return self._refused("Cache")

    def _repartitioned(self, *args: Any) -> Any:
        raise Exception("Cannot override partitioning for KeyedStream.")

    shuffle = rebalance = rescale = forward = broadcast = partition_custom = _repartitioned


#: PyFlink's name of a KeyedStream's records taken on as a DataStream
KEYED_STREAM_VALUES = "_keyed_stream_values_operator"


def _identity(value: Any) -> Any:
    return value


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
        check_function(key_selector1, None)
        check_function(key_selector2, None)
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
        keyed = self.key_selectors is not None
        return typed(self._two_input(CoMapOperator(func, keyed=keyed), "Co-Map"), output_type)

    def flat_map(self, func: Any, output_type: Any = None) -> DataStream:
        """A CoFlatMapFunction: ``flat_map1`` / ``flat_map2`` yield outputs."""
        keyed = self.key_selectors is not None
        return typed(self._two_input(CoFlatMapOperator(func, keyed=keyed), "Co-Flat Map"),
                      output_type)

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        """A CoProcessFunction, or after key_by a KeyedCoProcessFunction (state, timers)."""
        if self.key_selectors is not None:
            return typed(self._two_input(KeyedCoProcessOperator(func), "Co-Process"), output_type)
        return typed(self._two_input(CoProcessOperator(func), "Co-Process"), output_type)


class WindowedStream:
    """A KeyedStream cut into windows; a window function gives each window's result."""

    def __init__(self, keyed: KeyedStream, assigner: Any) -> None:
        from ..api.window import WindowAssigner

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
        return typed(self._apply("reduce", reduce_function, window_function), output_type)

    def aggregate(self, aggregate_function: Any, window_function: Any = None,
                  accumulator_type: Any = None, output_type: Any = None) -> DataStream:
        return typed(self._apply("aggregate", aggregate_function, window_function), output_type)

    def apply(self, window_function: Any, output_type: Any = None) -> DataStream:
        return typed(self._apply("apply", window_function), output_type)

    def process(self, process_window_function: Any, output_type: Any = None) -> DataStream:
        return typed(self._apply("process", process_window_function), output_type)


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
