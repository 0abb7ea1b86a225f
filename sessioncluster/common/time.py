"""PyFlink's ``Duration`` and ``Time`` (spans of time, exact to the millisecond) and ``Instant``
(a point on the time-line, the values of ``Types.INSTANT()``)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Duration:
    """A span of time (PyFlink's ``pyflink.common.Duration``), held in milliseconds."""

    millis: int

    @staticmethod
    def of_days(days: int) -> "Duration":
        return Duration(int(days) * 86_400_000)

    @staticmethod
    def of_hours(hours: int) -> "Duration":
        return Duration(int(hours) * 3_600_000)

    @staticmethod
    def of_minutes(minutes: int) -> "Duration":
        return Duration(int(minutes) * 60_000)

    @staticmethod
    def of_seconds(seconds: int) -> "Duration":
        return Duration(int(seconds) * 1000)

    @staticmethod
    def of_millis(millis: int) -> "Duration":
        return Duration(int(millis))

    @staticmethod
    def of_nanos(nanos: int) -> "Duration":
        return Duration(int(nanos) // 1_000_000)

    @staticmethod
    def zero() -> "Duration":
        return Duration(0)

    def to_milliseconds(self) -> int:
        return self.millis

    def get_seconds(self) -> int:
        return self.millis // 1000


@dataclass(frozen=True, slots=True)
class Time:
    """A window size or gap (PyFlink's ``pyflink.datastream.window.Time``), in milliseconds."""

    millis: int

    @staticmethod
    def milliseconds(milliseconds: int) -> "Time":
        return Time(int(milliseconds))

    @staticmethod
    def seconds(seconds: int) -> "Time":
        return Time(int(seconds) * 1000)

    @staticmethod
    def minutes(minutes: int) -> "Time":
        return Time(int(minutes) * 60_000)

    @staticmethod
    def hours(hours: int) -> "Time":
        return Time(int(hours) * 3_600_000)

    @staticmethod
    def days(days: int) -> "Time":
        return Time(int(days) * 86_400_000)

    def to_milliseconds(self) -> int:
        return self.millis


def to_millis(span: "Duration | Time | int") -> int:
    """Milliseconds of a Duration, a Time or a plain number of milliseconds."""
    if isinstance(span, (Duration, Time)):
        return span.millis
    if isinstance(span, int) and not isinstance(span, bool):
        return span
    raise TypeError(f"expected a Duration, a Time or milliseconds, got {span!r}")


@dataclass(frozen=True, slots=True)
class Instant:
    """A point on the time-line, as Java's ``Instant`` (PyFlink's ``pyflink.common.time.
    Instant``): seconds since the epoch and nanoseconds within the second."""

    seconds: int
    nanos: int

    @staticmethod
    def of_epoch_milli(epoch_milli: int) -> "Instant":
        return Instant(epoch_milli // 1000, epoch_milli % 1000 * 1_000_000)

    def to_epoch_milli(self) -> int:
        return self.seconds * 1000 + self.nanos // 1_000_000

    def to_datetime(self) -> "datetime.datetime":
        """As a timezone-aware UTC datetime (a ``TIMESTAMP_LTZ`` value), to the microsecond."""
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        return epoch + datetime.timedelta(seconds=self.seconds, microseconds=self.nanos // 1000)

    def __repr__(self) -> str:
        return f"Instant<{self.seconds}, {self.nanos}>"
