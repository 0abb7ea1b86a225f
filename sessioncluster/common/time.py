"""PyFlink's ``Duration`` and ``Time`` (spans of time, exact to the millisecond) and ``Instant``
(a point on the time-line, the values of ``Types.INSTANT()``); Flink's text of a duration
option (``parse_duration_ms``, ``format_duration_ms``)."""

from __future__ import annotations

import datetime
import re
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


#: Flink's TimeUtils units, highest first: (its labels, milliseconds); the first label is the one
#: Flink writes
_UNITS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("d", "day", "days"), 86_400_000),
    (("h", "hour", "hours"), 3_600_000),
    (("min", "m", "minute", "minutes"), 60_000),
    (("s", "sec", "secs", "second", "seconds"), 1000),
    (("ms", "milli", "millis", "millisecond", "milliseconds"), 1),
)
_ISO = re.compile(r"(-)?P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?")


def parse_duration_ms(value: str) -> int:
    """Flink's duration text ('10 s', '500 ms', '1 min', '2 d', '30000' (ms), ISO-8601 'PT1H')
    in milliseconds; ValueError for anything else."""
    text = str(value).strip().lower()
    iso = _ISO.fullmatch(text.upper())
    if iso and text.upper() not in ("P", "-P", "PT"):
        sign = -1 if iso.group(1) else 1
        days, hours, minutes, seconds = (float(g or 0) for g in iso.groups()[1:])
        return sign * round(((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000)
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz ")
    label = text[len(number):].strip() or "ms"
    factor = next((f for labels, f in _UNITS if label in labels), None)
    if factor is None or not number.strip():
        raise ValueError(f"Could not parse duration {value!r}")
    return int(float(number) * factor)


def format_duration_ms(millis: int) -> str:
    """As Flink writes a duration option: in its highest unit that divides it ('1 h', '1500 ms',
    '2883 min'; '0 ms')."""
    for labels, factor in _UNITS:
        if millis and millis % factor == 0:
            return f"{millis // factor} {labels[0]}"
    return f"{millis} ms"
