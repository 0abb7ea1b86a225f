"""An operator chain as nested iterators: one pass over a subtask's records, no lists between.

Used by a BATCH task and by a STREAMING vertex's stateless operators (and a keyed vertex's tail).
Operators of ``runtime.operators`` run through the BATCH driver; map/filter/flat_map are C-level
``map``/``filter`` where possible; a keyed exchange into a REDUCE is ``ReduceOperator.reduce_all``.
"""

from __future__ import annotations

import itertools
import operator as _op
from typing import Any, Iterator

from ..api.functions import as_callable
from ..graph.jobgraph import JobVertex
from ..graph.streamgraph import OperatorKind
from . import batch_driver
from .operators.base import TwoInputStreamOperator
from .operators.process import ReduceOperator
from .output import Record
from .sorting import DEFAULT_MEMORY_MB

_value = _op.itemgetter(1)


def chain(vertex: JobVertex, functions: list[Any], records: Iterator[Any], keyed: bool,
          tagged: bool = False, timestamped: bool = False,
          sort_memory_mb: float = DEFAULT_MEMORY_MB) -> tuple[Iterator[Any], bool]:
    """Nest the chained operators as iterators. Returns the records and whether they carry
    event-time timestamps.

    On a stream with timestamps (after ``assign_timestamps_and_watermarks``, or a window) each
    record is a ``(timestamp, value)`` pair and map/filter/flat_map keep the input's timestamp,
    as Flink does. With ``tagged`` the chain yields ``(side output tag or None, record)`` for a
    vertex read by several consumers. A keyed operator's input spills to disk past
    ``sort_memory_mb`` of the worker's memory (``sorting.KeyedInput``)."""
    ops = [(op, fn) for op, fn in zip(vertex.operators, functions)
           if not (op.kind.is_source or op.kind.is_sink or op.config.get("from_cache"))]
    ts = timestamped
    last_tagged = False
    # BATCH: the window at the head of the chain takes partials pre-aggregated before the shuffle
    partials = keyed and bool(vertex.inputs) and all(e.window_partials for e in vertex.inputs)
    for i, (op, fn) in enumerate(ops):
        kind = op.kind
        if kind is OperatorKind.PROCESS:
            out_ts = bool(op.config.get("timestamped", ts))
            emitted = batch_driver.run(fn, operator_input(records, keyed, ts, fn.keyed,
                                                          isinstance(fn, TwoInputStreamOperator)),
                                       partials=partials and i == 0, memory_mb=sort_memory_mb)
            last_tagged = i == len(ops) - 1 and tagged
            records = operator_output(emitted, out_ts, last_tagged)
            ts, keyed = out_ts, False
            continue
        if kind is OperatorKind.REDUCE:
            records = ReduceOperator.reduce_all(as_callable(fn), records, ts)
        else:
            if keyed:
                records = map(_value, records)  # a keyed exchange into a map, filter, ...
            records = _function(kind, as_callable(fn), records, ts)
        keyed = False
    if keyed:
        records = map(_value, records)  # a keyed exchange straight into a sink
    if tagged and not last_tagged:
        records = zip(itertools.repeat(None), records)
    return records, ts


def _function(kind: OperatorKind, call: Any, records: Iterator[Any], ts: bool) -> Iterator[Any]:
    """map / filter / flat_map; over ``(timestamp, value)`` records the output keeps the input's
    timestamp."""
    if ts:
        if kind is OperatorKind.MAP:
            return ((t, call(v)) for t, v in records)
        if kind is OperatorKind.FILTER:
            return ((t, v) for t, v in records if call(v))
        if kind is OperatorKind.FLAT_MAP:
            return ((t, out) for t, v in records for out in call(v))
        raise ValueError(f"no timestamped {kind}")
    if kind is OperatorKind.MAP:
        return map(call, records)
    if kind is OperatorKind.FILTER:
        return filter(call, records)
    if kind is OperatorKind.FLAT_MAP:
        return itertools.chain.from_iterable(map(call, records))
    raise ValueError(f"no chained {kind}")


def operator_input(records: Iterator[Any], keyed_input: bool, ts: bool,
                   keyed_operator: bool, two_inputs: bool = False) -> Iterator[Any]:
    """Records as the BATCH driver takes them: ``(timestamp, value)``, or ``(key, timestamp,
    value)`` for a keyed operator; a two-input operator gets the input index in front. Behind a
    two-input vertex's exchange each record is ``(input index, record)``."""
    if two_inputs:
        if keyed_operator:
            if ts:
                return ((i, k, r[0], r[1]) for k, (i, r) in records)
            return ((i, k, None, r) for k, (i, r) in records)
        if keyed_input:
            records = map(_value, records)
        return ((i, r[0], r[1]) for i, r in records) if ts else ((i, None, r) for i, r in records)
    if keyed_operator:
        if not keyed_input:
            raise RuntimeError("a keyed operator needs key_by() before it")
        return ((k, r[0], r[1]) for k, r in records) if ts else ((k, None, r) for k, r in records)
    if keyed_input:
        records = map(_value, records)
    return records if ts else zip(itertools.repeat(None), records)


def operator_output(emitted: Iterator[Record], ts: bool, tagged: bool) -> Iterator[Any]:
    """An operator's ``(tag, timestamp, value)`` as the chain goes on: the main output only,
    unless ``tagged``; ``(timestamp, value)`` records when the stream carries timestamps."""
    if tagged:
        return ((tag, (t, v)) for tag, t, v in emitted) if ts else ((tag, v) for tag, _, v in emitted)
    if ts:
        return ((t, v) for tag, t, v in emitted if tag is None)
    return (v for tag, _, v in emitted if tag is None)
