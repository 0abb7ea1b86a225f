"""PyFlink's ``RuntimeExecutionMode`` (``pyflink.datastream.execution_mode``)."""

from __future__ import annotations

from enum import Enum


class RuntimeExecutionMode(Enum):
    """How a DataStream program runs: BATCH is the only mode sessioncluster runs today;
    STREAMING (and AUTOMATIC over an unbounded source) fail at execute time."""

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
