"""``assign_timestamps_and_watermarks``: each record's timestamp from the strategy's assigner."""

from __future__ import annotations

from typing import Any

from ...api.functions import MIN_WATERMARK
from ...api.watermark import TimestampAssigner, WatermarkStrategy
from .base import OneInputStreamOperator, OperatorContext, method


class TimestampsAndWatermarksOperator(OneInputStreamOperator):
    """Each record's timestamp becomes ``extract_timestamp(value, record_timestamp)``
    (Long.MIN_VALUE when it had none); without an assigner records keep their timestamps.
    The watermarks themselves are the driver's: BATCH has none until the end, STREAMING's come
    from the query's largest timestamps."""

    keyed = False

    def __init__(self, watermark_strategy: WatermarkStrategy) -> None:
        if not isinstance(watermark_strategy, WatermarkStrategy):
            raise TypeError(f"expected a WatermarkStrategy, got {watermark_strategy!r}")
        self.watermark_strategy = watermark_strategy
        assigner = watermark_strategy.timestamp_assigner
        self.user_functions = [assigner] if assigner is not None else []

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        assigner = self.watermark_strategy.timestamp_assigner
        self._extract = (None if assigner is None
                         else assigner.extract_timestamp if isinstance(assigner, TimestampAssigner)
                         else method(assigner, "extract_timestamp", "TimestampAssigner")
                         if hasattr(assigner, "extract_timestamp") else assigner)

    def process_element(self, value: Any, timestamp: int | None) -> None:
        if self._extract is None:
            self.output.records.append((None, timestamp, value))
            return
        new = self._extract(value, MIN_WATERMARK if timestamp is None else timestamp)
        if type(new) is not int:
            if isinstance(new, (int, float)) and not isinstance(new, bool):
                new = int(new)
            else:
                raise TypeError(f"extract_timestamp must return milliseconds (an int), got {new!r} "
                                f"for {value!r}")
        self.output.records.append((None, new, value))

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("_extract", None)
        return state
