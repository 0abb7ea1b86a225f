"""The stream operators, one implementation each for both execution modes."""

from .asyncwait import AsyncWaitOperator
from .base import (
    OneInputStreamOperator,
    OperatorContext,
    StreamOperator,
    TwoInputStreamOperator,
    open_function,
)
from .co import CoFlatMapOperator, CoMapOperator, CoProcessOperator, KeyedCoProcessOperator
from .process import KeyedFunctionOperator, KeyedProcessOperator, ProcessOperator, ReduceOperator
from .watermarks import TimestampsAndWatermarksOperator
from .window import AllWindowOperator, WindowOperator
from .windowcontext import MergingWindowSet
from .windowpreagg import WindowPreAggregator

__all__ = [
    "AllWindowOperator", "AsyncWaitOperator", "CoFlatMapOperator", "CoMapOperator", "CoProcessOperator",
    "KeyedCoProcessOperator", "KeyedFunctionOperator", "KeyedProcessOperator", "MergingWindowSet",
    "OneInputStreamOperator", "OperatorContext", "ProcessOperator", "ReduceOperator", "StreamOperator",
    "TimestampsAndWatermarksOperator", "TwoInputStreamOperator", "WindowOperator", "WindowPreAggregator",
    "open_function",
]
