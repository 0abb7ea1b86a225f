"""The writer side of a Task: how a vertex's records leave its chain (Flink's RecordWriter
and ResultPartition): plain records to a FORWARD consumer in the same Spark stage, batches
by key hash or round robin for an exchange, batches for the client, and the fan-out of a
vertex read by several consumers."""

from __future__ import annotations

import enum
import itertools
import operator
import random
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Protocol

import cloudpickle

from ..api.accumulators import IntCounter
from ..api.functions import CustomPartitioning, FieldAggregation, as_callable
from ..common.printsink import line_formatter
from ..common.typeinfo import read_back
from ..graph.jobgraph import JobEdge, JobVertex
from ..graph.streamgraph import OperatorKind, Partitioning
from ..runtime.operators import WindowOperator, WindowPreAggregator
from .slotworker import SlotWorker

BATCH_RECORDS = 1024


class OutputKind(enum.Enum):
    """How the last operator of a vertex hands its records on."""

    FORWARD = "forward"      # plain records to a consumer in the same Spark stage
    HASH = "hash"            # (partition, batch of (key, record)) for a HASH exchange
    REBALANCE = "rebalance"  # (partition, batch) round-robin
    SHUFFLE = "shuffle"      # (partition, batch) to random partitions
    RESCALE = "rescale"      # (partition, batch) round-robin over this subtask's consumers
    BROADCAST = "broadcast"  # (partition, batch) of every record to every partition
    CUSTOM = "custom"        # (partition, batch) to the partition a user's Partitioner names
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
    #: the producing vertex's parallelism (RESCALE: which consumers each subtask feeds)
    producers: int = 1


def identity_partitioner(partition: int) -> int:
    """Partition function for exchanges: the sending task already chose the target partition."""
    return partition




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
    return edge_output(vertex.outputs[0], consumer_parallelism, vertex.parallelism)


#: the output kind of each ship strategy
_KINDS = {Partitioning.FORWARD: OutputKind.FORWARD, Partitioning.HASH: OutputKind.HASH,
          Partitioning.REBALANCE: OutputKind.REBALANCE, Partitioning.SHUFFLE: OutputKind.SHUFFLE,
          Partitioning.RESCALE: OutputKind.RESCALE, Partitioning.BROADCAST: OutputKind.BROADCAST,
          Partitioning.CUSTOM: OutputKind.CUSTOM}
#: the kinds that send records to partitions without a key
_SPREAD = frozenset({OutputKind.REBALANCE, OutputKind.SHUFFLE, OutputKind.RESCALE,
                     OutputKind.BROADCAST, OutputKind.CUSTOM})


def edge_output(edge: JobEdge, consumer_parallelism: int,
                producer_parallelism: int = 1) -> VertexOutput:
    """How a vertex hands its records on over ``edge``."""
    kind = _KINDS[edge.ship_strategy]
    if kind is OutputKind.FORWARD:
        return VertexOutput(kind, side_output=edge.side_output, input_index=edge.input_index)
    return VertexOutput(kind, consumer_parallelism, edge.key_selector_key, edge.combiner_key,
                        side_output=edge.side_output, input_index=edge.input_index,
                        producers=producer_parallelism)


class Channels:
    """The partitions each record goes to over a keyless exchange (:data:`_SPREAD`), as
    Flink's partitioners choose them."""

    def __init__(self, out: VertexOutput, subtask: int, partitioner: Any) -> None:
        self.kind, self.partitions, self.partitioner = out.kind, out.partitions, partitioner
        self.next = subtask
        if out.kind is OutputKind.RESCALE:  # Flink's pointwise pattern
            producers, n = max(out.producers, 1), out.partitions
            self.targets = list(range(subtask * n // producers, (subtask + 1) * n // producers)) \
                or [subtask * n // producers]
            self.next = 0
        if out.kind is OutputKind.SHUFFLE:
            self.random = random.Random()

    def of(self, record: Any) -> Iterable[int]:
        kind = self.kind
        if kind is OutputKind.REBALANCE:
            self.next += 1
            return ((self.next - 1) % self.partitions,)
        if kind is OutputKind.RESCALE:
            self.next += 1
            return (self.targets[(self.next - 1) % len(self.targets)],)
        if kind is OutputKind.SHUFFLE:
            return (self.random.randrange(self.partitions),)
        if kind is OutputKind.BROADCAST:
            return range(self.partitions)
        return (self.partitioner.channel(record, self.partitions),)


class OutputSpec(Protocol):
    """What the writer needs of a vertex's task (a ``VertexTask``)."""

    @property
    def vertex(self) -> JobVertex: ...

    @property
    def output(self) -> VertexOutput: ...

    @property
    def outputs(self) -> list[VertexOutput] | None: ...

    @property
    def all_outputs(self) -> list[VertexOutput]: ...


class Emitter(Protocol):
    """A running subtask as the writer sees it: a Task, or a relay of a cached stream."""

    @property
    def spec(self) -> OutputSpec: ...

    @property
    def subtask(self) -> int: ...

    @property
    def records_out(self) -> IntCounter: ...

    @property
    def key_selectors(self) -> dict[str, Any]: ...

    @property
    def combiners(self) -> dict[str, Any]: ...


def combiner_of(fn: Any) -> Any:
    """The map-side combiner of a HASH edge's consumer: a keyed reduce's function, or a
    window's pre-aggregation (``JobEdge.window_partials``)."""
    if isinstance(fn, WindowOperator):
        return WindowPreAggregator(fn)
    return as_callable(fn)


def _emit(task: OutputSpec, subtask: int, records: Iterator[Any], key_selector: Any,
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
        line = line_formatter(task.vertex.operators[-1].config, subtask, task.vertex.parallelism)
        for batch in _batches(records, records_out):
            yield "\n".join(map(line, batch))
    elif out.kind in _SPREAD:
        channels = Channels(out, subtask, key_selector)
        buckets: list[list[Any]] = [[] for _ in range(out.partitions)]
        for i, rec in enumerate(records):
            for pid in channels.of(rec):
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


def _writer(task: Emitter, out: VertexOutput, ts: bool) -> "_Writer":
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
    if isinstance(key_selector, CustomPartitioning):
        return CustomPartitioning(key_selector.partition, _on_value(key_selector.key_of))

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
        self.channels = Channels(out, subtask, key_selector) if out.kind in _SPREAD else None

    def write(self, rec: Any) -> Iterator[Any]:
        if self.out.input_index is not None:
            rec = (self.out.input_index, rec)
        kind = self.out.kind
        if kind is OutputKind.FORWARD:
            yield rec
            return
        if self.channels is not None:
            for pid in self.channels.of(rec):
                yield from self._add(pid, rec)
            return
        key = self.key_selector(rec)
        if self.combiner is not None:
            combined = self.combined
            combined[key] = self.combiner(combined[key], rec) if key in combined else rec
            return
        yield from self._add(_hash_partition(key, self.out.partitions), (key, rec))

    def _add(self, pid: int, item: Any) -> Iterator[Any]:
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


def _read_back(spec: OutputSpec, ts: bool) -> Callable[[Any], Any] | None:
    """How the vertex's main output reads back in its consumers (its declared FLOATs in 32
    bits): Flink serializes the records over every edge between vertices, a FORWARD one of
    unchained operators too (``disable_chaining``, ``start_new_chain``, another slot sharing
    group: /work/briefs/data/javaprint2/probe_filesink.out); None when nothing changes."""
    return read_back(spec.vertex.operators[-1].config.get("output_type"), ts)


def emit_all(task: Emitter, records: Iterator[Any], ts: bool) -> Iterator[Any]:
    """Hand the chain's records on over the vertex's output(s)."""
    spec = task.spec
    if spec.outputs is not None:
        yield from _emit_many(task, records, ts)
        return
    out = spec.output
    key_selector = task.key_selectors.get(out.key_selector_key or "")
    combiner = task.combiners.get(out.combiner_key or "")
    convert = _read_back(spec, ts)
    if convert is not None and out.kind not in _SINKS:
        records = map(convert, records)
    if ts:
        if out.kind in _SINKS:
            records = map(operator.itemgetter(1), records)  # a sink writes the values
        elif not isinstance(combiner, WindowPreAggregator):  # it takes (timestamp, value) itself
            key_selector, combiner = _on_value(key_selector), None
    if out.input_index is not None:  # into a two-input vertex: say which input
        records = zip(itertools.repeat(out.input_index), records)
        key_selector, combiner = _on_value(key_selector), None
    yield from _emit(spec, task.subtask, records, key_selector, combiner, task.records_out, ts)


@dataclass(slots=True)
class RelayTask:
    """The consumers' side of a cached stream computed in this job: the vertex's records, kept
    plain in Spark's storage, handed on over the vertex's outputs (no chain runs again, and no
    subtask reports: the vertex's own Task did)."""

    spec: OutputSpec
    timestamped: bool = False

    def __call__(self, subtask: int, records: Iterable[Any]) -> Iterator[Any]:
        context = RelayContext(self.spec, subtask)
        records = iter(records)
        if self.spec.outputs is not None:
            records = zip(itertools.repeat(None), records)
        return emit_all(context, records, self.timestamped)


class RelayContext:
    """What the emission needs of a Task, for a :class:`RelayTask`."""

    def __init__(self, spec: OutputSpec, subtask: int) -> None:
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


def _emit_many(task: Emitter, tagged: Iterator[tuple[str | None, Any]],
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
    convert = _read_back(spec, ts)
    n = 0
    for n, (tag, rec) in enumerate(tagged, 1):
        if tag is None and convert is not None:
            rec = convert(rec)
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
