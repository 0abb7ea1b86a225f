"""The time units of PyFlink's expression DSL (``pyflink.table.expression``)."""

from __future__ import annotations

from enum import Enum


class TimeIntervalUnit(Enum):
    """Units of time intervals (``extract``, ``floor``, ``ceil``)."""

    YEAR = 0
    YEAR_TO_MONTH = 1
    QUARTER = 2
    MONTH = 3
    WEEK = 4
    DAY = 5
    DAY_TO_HOUR = 6
    DAY_TO_MINUTE = 7
    DAY_TO_SECOND = 8
    HOUR = 9
    SECOND = 10
    HOUR_TO_MINUTE = 11
    HOUR_TO_SECOND = 12
    MINUTE = 13
    MINUTE_TO_SECOND = 14


class TimePointUnit(Enum):
    """Units of points in time (``timestamp_diff``)."""

    YEAR = 0
    MONTH = 1
    DAY = 2
    HOUR = 3
    MINUTE = 4
    SECOND = 5
    QUARTER = 6
    WEEK = 7
    MILLISECOND = 8
    MICROSECOND = 9
