"""The STREAMING driver of a keyed operator, as ``transformWithStateInPandas`` calls it.

Spark groups a micro-batch's rows by key and calls the processor once per key (and once per
expired timer). Per call: the key's snapshot (its keyed state and timers) is restored from
Spark's ValueState, the watermark and processing time come from Spark's timer values, the
records go to ``process_element``, the due timers fire, and the snapshot goes back (none: the
ValueState is cleared). Timers of the query's time mode (``spark_domain``) are Spark's as well:
the driver tells which to register and delete, so Spark calls back at their time; the other
domain's timers fire at the key's next call after they are due.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..api.functions import MIN_WATERMARK, RuntimeContext, TimeDomain
from .operators.base import OperatorContext, StreamOperator, TwoInputStreamOperator
from .output import Record


@dataclass
class KeyResult:
    """What a key's call leaves: its snapshot, and Spark timers to register and delete."""

    snapshot: dict[str, Any] | None
    register: set[int] = field(default_factory=set)
    delete: set[int] = field(default_factory=set)


class KeyedStreamingDriver:
    """Runs one keyed operator for one key at a time, with the key's state passed in and out."""

    def __init__(self, operator: StreamOperator, runtime_context: RuntimeContext,
                 spark_domain: TimeDomain | None) -> None:
        self.operator = operator
        self.context = OperatorContext(runtime_context, batch=False)
        operator.open(self.context)
        self.spark_domain = spark_domain
        self.two_inputs = isinstance(operator, TwoInputStreamOperator)
        self._key: Any = None
        self._spark_before: set[int] = set()

    def open_key(self, key: Any, snapshot: dict[str, Any] | None, watermark: int | None,
                 processing_time: int) -> None:
        """Make ``key`` current with its state and timers, and Spark's time."""
        self._key = key
        backend, timers = self.context.state_backend, self.context.timer_service
        backend.set_current_key(key)
        timers.set_current_key(key)
        if snapshot:
            backend.restore(key, snapshot.get("state"))
            timers.restore(key, snapshot.get("timers"))
        event_mode = self.spark_domain is TimeDomain.EVENT_TIME
        timers.watermark = watermark if event_mode and watermark is not None and watermark >= 0 \
            else MIN_WATERMARK
        timers.processing_time = processing_time
        self._spark_before = (timers.timestamps(self.spark_domain) if self.spark_domain is not None
                              else set())

    def process(self, records: list[tuple[int | None, Any]]) -> list[Record]:
        """The key's records of this micro-batch; a two-input operator's are ``(input, value)``."""
        op: Any = self.operator
        if self.two_inputs:
            calls = (op.process_element1, op.process_element2)
            for ts, (index, value) in records:
                calls[index](value, ts)
        else:
            process = op.process_element
            for ts, value in records:
                process(value, ts)
        return self.context.output.drain()

    def fire_timers(self, fired: int | None = None) -> list[Record]:
        """Fire the key's due timers: Spark's domain up to ``fired`` (the timer Spark fired),
        the other domain by the watermark or processing time."""
        timers, op = self.context.timer_service, self.operator
        if not timers.has_timers():
            return self.context.output.drain()
        for domain, callback in ((TimeDomain.EVENT_TIME, op.on_event_time),
                                 (TimeDomain.PROCESSING_TIME, op.on_processing_time)):
            if domain is self.spark_domain:
                until = fired
            else:
                until = timers.watermark if domain is TimeDomain.EVENT_TIME else timers.processing_time
            if until is not None:
                timers.fire(domain, until, callback)
        return self.context.output.drain()

    def close_key(self) -> KeyResult:
        """The key's snapshot, the Spark timers to change; the key leaves the driver."""
        key = self._key
        backend, timers = self.context.state_backend, self.context.timer_service
        data = {name: part for name, part in (("state", backend.snapshot(key)),
                                               ("timers", timers.snapshot(key))) if part}
        result = KeyResult(data or None)
        if self.spark_domain is not None:
            after = timers.timestamps(self.spark_domain)
            now = (timers.watermark if self.spark_domain is TimeDomain.EVENT_TIME
                   else timers.current_processing_time())
            result.register = after - self._spark_before
            # a timer at or before Spark's time fires in Spark anyway (and finds none of ours)
            result.delete = {t for t in self._spark_before - after if t > now}
        backend.clear(key)
        timers.clear(key)
        return result
