"""PyFlink's interval data types: ``DataTypes.INTERVAL(DataTypes.DAY(), DataTypes.SECOND(3))``.

A :class:`Resolution` (``DataTypes.SECOND()/MINUTE()/HOUR()/DAY()/MONTH()/YEAR()``) names a unit
and its precision; :func:`interval` makes the :class:`DayTimeIntervalType` or
:class:`YearMonthIntervalType` of an upper and an optional lower resolution, with PyFlink 2.3's
combinations and defaults (its YEAR TO MONTH keeps the default year precision). ``repr`` and
``type_name()`` are PyFlink's (``DayTimeIntervalType(true)``, ``DAYTIMEINTERVAL``); ``str`` is
Flink SQL's text of the type, as Flink's schema prints it (``INTERVAL DAY(2) TO SECOND(3)``).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Callable

from .datatype import AtomicType


class Resolution:
    """The resolution of an interval: a unit and its precision (-1: none)."""

    class IntervalUnit(Enum):
        SECOND = 0
        MINUTE = 1
        HOUR = 2
        DAY = 3
        MONTH = 4
        YEAR = 5

    def __init__(self, unit: "Resolution.IntervalUnit", precision: int = -1) -> None:
        self._unit = unit
        self._precision = precision

    @property
    def unit(self) -> "Resolution.IntervalUnit":
        return self._unit

    @property
    def precision(self) -> int:
        return self._precision

    def __str__(self) -> str:
        return f"{self._unit}({self._precision})"


class _IntervalType(AtomicType):
    """What both interval types share: PyFlink's repr and type name."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self._nullable).lower()})"

    def type_name(self) -> str:
        return type(self).__name__[:-4].upper()


class YearMonthIntervalType(_IntervalType):
    """An interval of years, years to months or months (``+years-months``)."""

    class YearMonthResolution:
        YEAR = 1
        MONTH = 2
        YEAR_TO_MONTH = 3

    DEFAULT_PRECISION = 2
    _TEXT = {1: "INTERVAL YEAR({p})", 2: "INTERVAL MONTH", 3: "INTERVAL YEAR({p}) TO MONTH"}

    def __init__(self, resolution: int, precision: int = DEFAULT_PRECISION,
                 nullable: bool = True) -> None:
        if resolution not in self._TEXT:
            raise ValueError(f"not a YearMonthResolution: {resolution!r}")
        if resolution == self.YearMonthResolution.MONTH and precision != self.DEFAULT_PRECISION:
            raise ValueError("an interval of months takes no year precision")
        if not 1 <= precision <= 4:
            raise ValueError(f"the year precision of an interval must be 1..4, not {precision}")
        super().__init__(nullable)
        self._resolution = resolution
        self._precision = precision

    @property
    def resolution(self) -> int:
        return self._resolution

    @property
    def precision(self) -> int:
        return self._precision

    def _sql(self) -> str:
        return self._TEXT[self._resolution].format(p=self._precision)

    def spark_ddl(self) -> str:
        return {1: "INTERVAL YEAR", 2: "INTERVAL MONTH", 3: "INTERVAL YEAR TO MONTH"}[
            self._resolution]


class DayTimeIntervalType(_IntervalType):
    """An interval of days to seconds (``+days hours:minutes:seconds.fractional``); values are
    ``datetime.timedelta``."""

    class DayTimeResolution(Enum):
        DAY = 1
        DAY_TO_HOUR = 2
        DAY_TO_MINUTE = 3
        DAY_TO_SECOND = 4
        HOUR = 5
        HOUR_TO_MINUTE = 6
        HOUR_TO_SECOND = 7
        MINUTE = 8
        MINUTE_TO_SECOND = 9
        SECOND = 10

    DEFAULT_DAY_PRECISION = 2
    DEFAULT_FRACTIONAL_PRECISION = 6

    def __init__(self, resolution: "DayTimeIntervalType.DayTimeResolution",
                 day_precision: int = DEFAULT_DAY_PRECISION,
                 fractional_precision: int = DEFAULT_FRACTIONAL_PRECISION,
                 nullable: bool = True) -> None:
        name = DayTimeIntervalType.DayTimeResolution(resolution).name
        if not name.startswith("DAY") and day_precision != self.DEFAULT_DAY_PRECISION:
            raise ValueError(f"an interval of {name} takes no day precision")
        if not name.endswith("SECOND") and fractional_precision != \
                self.DEFAULT_FRACTIONAL_PRECISION:
            raise ValueError(f"an interval of {name} takes no fractional precision")
        if not 1 <= day_precision <= 6:
            raise ValueError(f"the day precision of an interval must be 1..6, not {day_precision}")
        if not 0 <= fractional_precision <= 9:
            raise ValueError(f"the fractional precision of an interval must be 0..9, not "
                             f"{fractional_precision}")
        super().__init__(nullable)
        self._resolution = resolution
        self._day_precision = day_precision
        self._fractional_precision = fractional_precision

    @property
    def resolution(self) -> "DayTimeIntervalType.DayTimeResolution":
        return self._resolution

    @property
    def day_precision(self) -> int:
        return self._day_precision

    @property
    def fractional_precision(self) -> int:
        return self._fractional_precision

    def _units(self) -> list[str]:
        return self._resolution.name.split("_TO_")

    def _sql(self) -> str:
        parts = [u + (f"({self._day_precision})" if u == "DAY" else
                      f"({self._fractional_precision})" if u == "SECOND" else "")
                 for u in self._units()]
        return "INTERVAL " + " TO ".join(parts)

    def spark_ddl(self) -> str:
        return "INTERVAL " + " TO ".join(self._units())

    def to_arrow(self) -> Any:
        import pyarrow as pa
        return pa.duration("us")


_U = Resolution.IntervalUnit
_D = DayTimeIntervalType.DayTimeResolution
_YM = YearMonthIntervalType.YearMonthResolution
_DAYS = DayTimeIntervalType.DEFAULT_DAY_PRECISION
_Maker = Callable[[int, int], "DayTimeIntervalType | YearMonthIntervalType"]
#: PyFlink 2.3's interval of (upper unit, lower unit) from (upper precision, lower precision)
_INTERVALS: dict[tuple[Resolution.IntervalUnit, Resolution.IntervalUnit | None], _Maker] = {
    (_U.YEAR, None): lambda p1, p2: YearMonthIntervalType(_YM.YEAR, p1),
    (_U.MONTH, None): lambda p1, p2: YearMonthIntervalType(_YM.MONTH),
    (_U.YEAR, _U.MONTH): lambda p1, p2: YearMonthIntervalType(_YM.YEAR_TO_MONTH),
    (_U.DAY, None): lambda p1, p2: DayTimeIntervalType(_D.DAY, p1),
    (_U.DAY, _U.HOUR): lambda p1, p2: DayTimeIntervalType(_D.DAY_TO_HOUR, p1),
    (_U.DAY, _U.MINUTE): lambda p1, p2: DayTimeIntervalType(_D.DAY_TO_MINUTE, p1),
    (_U.DAY, _U.SECOND): lambda p1, p2: DayTimeIntervalType(_D.DAY_TO_SECOND, p1, p2),
    (_U.HOUR, None): lambda p1, p2: DayTimeIntervalType(_D.HOUR),
    (_U.HOUR, _U.MINUTE): lambda p1, p2: DayTimeIntervalType(_D.HOUR_TO_MINUTE),
    (_U.HOUR, _U.SECOND): lambda p1, p2: DayTimeIntervalType(_D.HOUR_TO_SECOND, _DAYS, p2),
    (_U.MINUTE, None): lambda p1, p2: DayTimeIntervalType(_D.MINUTE),
    (_U.MINUTE, _U.SECOND): lambda p1, p2: DayTimeIntervalType(_D.MINUTE_TO_SECOND, _DAYS, p2),
    (_U.SECOND, None): lambda p1, p2: DayTimeIntervalType(_D.SECOND, _DAYS, p1),
}


def interval(upper_resolution: Resolution, lower_resolution: Resolution | None = None
             ) -> DayTimeIntervalType | YearMonthIntervalType:
    """``DataTypes.INTERVAL``: the interval type from ``upper_resolution`` to
    ``lower_resolution``."""
    lower = None if lower_resolution is None else lower_resolution.unit
    make = _INTERVALS.get((upper_resolution.unit, lower))
    if make is None:
        raise ValueError(f"Unsupported interval definition '{upper_resolution} TO "
                         f"{lower_resolution}'. Please check the documentation for supported "
                         f"combinations for year-month and day-time intervals.")
    return make(upper_resolution.precision,
                -1 if lower_resolution is None else lower_resolution.precision)
