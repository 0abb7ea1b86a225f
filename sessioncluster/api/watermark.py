"""PyFlink's ``WatermarkStrategy`` and ``TimestampAssigner``.

In BATCH mode watermarks are perfect (the watermark jumps to the end of time once a key's input is
done), so a strategy's watermark generator only matters for its timestamp assigner. In STREAMING
mode the bounded out-of-orderness is the delay of Spark's watermark and the idle timeout takes
effect (``spark/streaming.py``); alignment is accepted and ignored.
"""

from __future__ import annotations

from typing import Any

from ..common.time import Duration, to_millis


class TimestampAssigner:
    """``extract_timestamp(value, record_timestamp)`` gives a record's event time in milliseconds."""

    __class_getitem__ = classmethod(lambda cls, params: cls)

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        raise NotImplementedError


class WatermarkStrategy:
    """How a stream gets its timestamps (and, in STREAMING mode, its watermarks)."""

    def __init__(self, kind: str, max_out_of_orderness: int = 0,
                 timestamp_assigner: TimestampAssigner | Any = None, idleness: int | None = None) -> None:
        self.kind = kind
        self.max_out_of_orderness = max_out_of_orderness
        self.timestamp_assigner = timestamp_assigner
        self.idleness = idleness

    @staticmethod
    def for_monotonous_timestamps() -> "WatermarkStrategy":
        return WatermarkStrategy("monotonous")

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: Duration | int) -> "WatermarkStrategy":
        millis = to_millis(max_out_of_orderness)
        if millis < 0:
            raise ValueError("maxOutOfOrderness cannot be negative")
        return WatermarkStrategy("bounded_out_of_orderness", millis)

    @staticmethod
    def no_watermarks() -> "WatermarkStrategy":
        return WatermarkStrategy("no_watermarks")

    def with_timestamp_assigner(self, timestamp_assigner: TimestampAssigner | Any) -> "WatermarkStrategy":
        """A copy of this strategy whose timestamps come from ``timestamp_assigner``."""
        if not (isinstance(timestamp_assigner, TimestampAssigner) or callable(timestamp_assigner)):
            raise TypeError(f"with_timestamp_assigner needs a TimestampAssigner, got {timestamp_assigner!r}")
        return WatermarkStrategy(self.kind, self.max_out_of_orderness, timestamp_assigner, self.idleness)

    def with_idleness(self, idle_timeout: Duration | int) -> "WatermarkStrategy":
        return WatermarkStrategy(self.kind, self.max_out_of_orderness, self.timestamp_assigner,
                                 to_millis(idle_timeout))

    def with_watermark_alignment(self, watermark_group: str, max_allowed_watermark_drift: Any,
                                 update_interval: Any = None) -> "WatermarkStrategy":
        return self

    def __repr__(self) -> str:
        return f"WatermarkStrategy({self.kind}, out_of_orderness={self.max_out_of_orderness} ms)"
