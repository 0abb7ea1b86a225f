"""``pyflink.datastream.time_characteristic``: kept for old programs (deprecated in Flink)."""

from __future__ import annotations

from enum import Enum


class TimeCharacteristic(Enum):
    """The notion of time of a program (deprecated in Flink 1.12: event time is the default)."""

    ProcessingTime = 0
    IngestionTime = 1
    EventTime = 2
