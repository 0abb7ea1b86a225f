"""The timers of one keyed operator (Flink's InternalTimerService), and the TimeDomain.

A timer is (time domain, timestamp, namespace) of a key, deduplicated on the three (a keyed
process function's timers have no namespace, a window operator's are per window). The drivers
set the current key, the watermark and processing time, and fire due timers with ``fire``;
``snapshot(key)`` / ``restore(key, data)`` / ``clear(key)`` move one key's timers in and out.
In BATCH, while a key's timers fire at its end the service is quiesced: timers registered then
are ignored (Flink's BatchExecutionInternalTimeService).
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, NamedTuple

from ..api.functions import MIN_WATERMARK, TimeDomain, TimerService

log = logging.getLogger(__name__)

__all__ = ["InternalTimer", "InternalTimerService", "KeyedTimerService", "TimeDomain"]


class InternalTimer(NamedTuple):
    """A due timer as an operator's ``on_event_time`` / ``on_processing_time`` gets it."""

    timestamp: int
    namespace: Any
    domain: TimeDomain


#: a key's timers: (domain, timestamp, namespace) -> registration order
TimerSnapshot = dict[tuple[TimeDomain, int, Any], int]


#: a key's timers of one domain, as kept: (timestamp, namespace) -> registration order (no
#: TimeDomain in the key: an Enum hashes in Python, a timer is hashed at every register and fire)
_DomainTimers = dict[tuple[int, Any], int]
_EVENT = TimeDomain.EVENT_TIME
_PROCESSING = TimeDomain.PROCESSING_TIME


class InternalTimerService:
    """Timers per key, the current watermark and processing time."""

    def __init__(self) -> None:
        self.watermark = MIN_WATERMARK
        #: the processing time a driver set (None: the wall clock)
        self.processing_time: int | None = None
        #: BATCH at the end of a key: new timers are ignored
        self.quiesced = False
        #: key -> (event-time timers, processing-time timers)
        self._timers: dict[Any, tuple[_DomainTimers, _DomainTimers]] = {}
        self._key: Any = None
        self._seq = 0

    def set_current_key(self, key: Any) -> None:
        self._key = key

    def current_processing_time(self) -> int:
        return int(time.time() * 1000) if self.processing_time is None else self.processing_time

    def register(self, domain: TimeDomain, timestamp: int, namespace: Any = None) -> None:
        if self.quiesced:
            log.warning("Timer service is quiesced. %s timer for timestamp '%s' will be ignored.",
                        "Event time" if domain is _EVENT else "Processing time", timestamp)
            return
        timers = self._timers.get(self._key)
        if timers is None:
            timers = self._timers[self._key] = ({}, {})
        of_domain = timers[0 if domain is _EVENT else 1]
        k = (int(timestamp), namespace)
        if k not in of_domain:
            self._seq += 1
            of_domain[k] = self._seq

    def delete(self, domain: TimeDomain, timestamp: int, namespace: Any = None) -> None:
        timers = self._timers.get(self._key)
        if timers:
            timers[0 if domain is _EVENT else 1].pop((timestamp, namespace), None)

    def has_timers(self) -> bool:
        timers = self._timers.get(self._key)
        return timers is not None and bool(timers[0] or timers[1])

    def timestamps(self, domain: TimeDomain) -> set[int]:
        """The current key's timer timestamps of ``domain``."""
        timers = self._timers.get(self._key)
        return {ts for ts, _ in timers[0 if domain is _EVENT else 1]} if timers else set()

    def fire(self, domain: TimeDomain, until: int, callback: Callable[[InternalTimer], None]) -> None:
        """Fire the current key's timers of ``domain`` at or before ``until`` in timestamp order
        (then window start, then registration); each is removed as it fires, so a timer deleted
        by an earlier callback does not fire, and one registered by a callback fires in the same
        round when it is due."""
        index = 0 if domain is _EVENT else 1
        timers = self._timers.get(self._key)
        while timers:
            of_domain = timers[index]
            due = [k for k in of_domain if k[0] <= until]
            if not due:
                return
            due.sort(key=lambda k: (k[0], getattr(k[1], "start", 0), of_domain[k]))
            for k in due:
                if of_domain.pop(k, None) is not None:
                    callback(InternalTimer(k[0], k[1], domain))
            timers = self._timers.get(self._key)

    def snapshot(self, key: Any) -> TimerSnapshot | None:
        return _snapshot(self._timers.get(key))

    def restore(self, key: Any, data: TimerSnapshot | None) -> None:
        if data:
            timers: tuple[_DomainTimers, _DomainTimers] = ({}, {})
            for (domain, ts, namespace), seq in data.items():
                timers[0 if domain is _EVENT else 1][(ts, namespace)] = seq
            self._timers[key] = timers
            self._seq = max(self._seq, max(data.values()))

    def take(self, key: Any) -> TimerSnapshot | None:
        """``snapshot(key)`` and ``clear(key)`` in one."""
        return _snapshot(self._timers.pop(key, None))

    def clear(self, key: Any) -> None:
        self._timers.pop(key, None)


def _snapshot(timers: tuple[_DomainTimers, _DomainTimers] | None) -> TimerSnapshot | None:
    if not timers or not (timers[0] or timers[1]):
        return None
    data = {(_EVENT, ts, namespace): seq for (ts, namespace), seq in timers[0].items()}
    for (ts, namespace), seq in timers[1].items():
        data[(_PROCESSING, ts, namespace)] = seq
    return data


def timestamps(timers: TimerSnapshot | None, domain: TimeDomain) -> set[int]:
    """The timestamps of ``domain`` among a key's ``timers``."""
    return {ts for d, ts, _ in timers if d is domain} if timers else set()


class KeyedTimerService(TimerService):
    """The user's TimerService of the current key (timers without a namespace)."""

    def __init__(self, internal: InternalTimerService) -> None:
        self._internal = internal

    def current_processing_time(self) -> int:
        return self._internal.current_processing_time()

    def current_watermark(self) -> int:
        return self._internal.watermark

    def register_event_time_timer(self, timestamp: int) -> None:
        self._internal.register(TimeDomain.EVENT_TIME, timestamp)

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._internal.register(TimeDomain.PROCESSING_TIME, timestamp)

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._internal.delete(TimeDomain.EVENT_TIME, timestamp)

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self._internal.delete(TimeDomain.PROCESSING_TIME, timestamp)
