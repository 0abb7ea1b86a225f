"""The STREAMING driver of a keyed operator, as ``transformWithStateInPandas`` calls it.

Spark groups a micro-batch's rows by key and calls the processor once per key (and once per
expired timer). Per call: the key's snapshot (its keyed state and timers) is restored from
Spark's ValueState, the watermark and processing time come from Spark's timer values, the
records go to ``process_element``, the due timers fire, and the snapshot goes back (none: the
ValueState is cleared). Timers of the query's time mode (``spark_domain``) are Spark's as well:
the driver tells which to register and delete, so Spark calls back at their time (in event
time only the key's earliest is Spark's: its call fires all that the watermark has passed); the
other domain's timers fire at the key's next call after they are due.
"""

from __future__ import annotations

from typing import AbstractSet, Any

from ..api.functions import MAX_WATERMARK, MIN_WATERMARK, RuntimeContext, TimeDomain
from .operators.base import OperatorContext, StreamOperator, TwoInputStreamOperator
from .output import Record
from .timers import timestamps

_NONE: frozenset[int] = frozenset()


class KeyResult:
    """What a key's call leaves: its snapshot, and Spark timers to register and delete."""

    __slots__ = ("snapshot", "register", "delete")

    def __init__(self, snapshot: dict[str, Any] | None, register: AbstractSet[int] = _NONE,
                 delete: AbstractSet[int] = _NONE) -> None:
        self.snapshot = snapshot
        self.register = register
        self.delete = delete


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
        self._spark_before: AbstractSet[int] = _NONE
        self._backend = self.context.state_backend
        self._timers = self.context.timer_service
        self._output = self.context.output

    def open_key(self, key: Any, snapshot: dict[str, Any] | None, watermark: int | None,
                 processing_time: int) -> None:
        """Make ``key`` current with its state and timers, and Spark's time."""
        self._key = key
        backend, timers = self._backend, self._timers
        backend.set_current_key(key)
        timers.set_current_key(key)
        spark_domain = self.spark_domain
        if snapshot:
            backend.restore(key, snapshot.get("state"))
            timer_data = snapshot.get("timers")
            timers.restore(key, timer_data)
            self._spark_before = (timestamps(timer_data, spark_domain)
                                  if spark_domain is not None and timer_data else _NONE)
        else:
            self._spark_before = _NONE
        timers.watermark = watermark if spark_domain is TimeDomain.EVENT_TIME and watermark is not None \
            and watermark >= 0 else MIN_WATERMARK
        timers.processing_time = processing_time

    def process(self, records: list[tuple[int | None, Any]], partials: bool = False) -> list[Record]:
        """The key's records of this micro-batch; a two-input operator's are ``(input, value)``;
        a window's partials pre-aggregated before the shuffle with ``partials``
        (``WindowOperator.process_partials``)."""
        op: Any = self.operator
        if partials:
            op.process_partials(records)
        elif self.two_inputs:
            calls = (op.process_element1, op.process_element2)
            for ts, (index, value) in records:
                calls[index](value, ts)
        else:
            op.process_elements(records)
        return self._output.drain()

    def fire_timers(self, fired: int | None = None) -> list[Record]:
        """Fire the key's due timers: Spark's domain up to ``fired`` (the timer Spark fired),
        the other domain by the watermark or processing time."""
        timers, op = self._timers, self.operator
        if not timers.has_timers():
            return self._output.drain()
        for domain, callback in ((TimeDomain.EVENT_TIME, op.on_event_time),
                                 (TimeDomain.PROCESSING_TIME, op.on_processing_time)):
            if domain is self.spark_domain:
                until = fired
            else:
                until = timers.watermark if domain is TimeDomain.EVENT_TIME else timers.processing_time
            if until is not None:
                timers.fire(domain, until, callback)
        return self._output.drain()

    def end_of_input(self) -> list[Record]:
        """Flink's final watermark for the current key, whose input has ended: its event-time
        timers fire, in order, as Long.MAX_VALUE passes them (processing-time timers do not, as
        in Flink's STREAMING mode)."""
        timers = self._timers
        timers.watermark = MAX_WATERMARK
        if timers.has_timers():
            timers.fire(TimeDomain.EVENT_TIME, MAX_WATERMARK, self.operator.on_event_time)
        return self._output.drain()

    def close_key(self) -> KeyResult:
        """The key's snapshot, the Spark timers to change; the key leaves the driver."""
        key = self._key
        timers = self._timers
        state = self._backend.take(key)
        timer_data = timers.take(key)
        data: dict[str, Any] | None = None
        if state is not None or timer_data is not None:
            data = {}
            if state is not None:
                data["state"] = state
            if timer_data is not None:
                data["timers"] = timer_data
        spark_domain, before = self.spark_domain, self._spark_before
        if spark_domain is None or (not before and not timer_data):
            return KeyResult(data)
        after: AbstractSet[int] = timestamps(timer_data, spark_domain)
        now = (timers.watermark if spark_domain is TimeDomain.EVENT_TIME
               else timers.current_processing_time())
        if spark_domain is TimeDomain.EVENT_TIME:
            # one Spark timer per key, its earliest: when the watermark passes it, Spark calls
            # the key once and every due timer of the key fires (``KeyedVertex.fire``), where a
            # Spark timer per window cost Spark's round trips per window
            before, after = _earliest(before), _earliest(after)
        # a timer at or before Spark's time fires in Spark anyway (and finds none of ours)
        return KeyResult(data, after - before, {t for t in before - after if t > now})


def _earliest(times: AbstractSet[int]) -> AbstractSet[int]:
    return {min(times)} if times else _NONE
