"""PyFlink's ``RuntimeExecutionMode`` (``pyflink.datastream.execution_mode``)."""

from __future__ import annotations

from enum import Enum


class RuntimeExecutionMode(Enum):
    """How a DataStream program runs: BATCH (the default of a session's environments;
    ``sessioncluster run`` defaults to Flink's STREAMING), STREAMING (Structured Streaming), or
    AUTOMATIC (STREAMING when a source is unbounded, else BATCH, as in Flink)."""

    STREAMING = 0
    BATCH = 1
    AUTOMATIC = 2

    @staticmethod
    def parse(text: str) -> "RuntimeExecutionMode":
        try:
            return RuntimeExecutionMode[text.strip().upper()]
        except KeyError:
            raise ValueError(f"execution.runtime-mode is {text!r}: expected STREAMING, BATCH or "
                             "AUTOMATIC") from None
