"""sessioncluster: a session cluster with Apache Flink's runtime architecture on Apache Spark.

>>> import sessioncluster                                   # doctest: +SKIP
>>> session = sessioncluster.start("demo")                  # doctest: +SKIP
>>> env = session.get_execution_environment()              # doctest: +SKIP
>>> env.from_collection(range(10)).map(lambda x: x * x).execute_and_collect()  # doctest: +SKIP
"""

import sys

from .api.accumulators import (
    AverageAccumulator,
    DoubleCounter,
    DoubleMaximum,
    DoubleMinimum,
    Histogram,
    IntCounter,
    IntMaximum,
    IntMinimum,
    ListAccumulator,
    LongCounter,
)
from .api.functions import (
    AggregateFunction,
    FilterFunction,
    FlatMapFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    OutputTag,
    ProcessFunction,
    ReduceFunction,
    RuntimeContext,
    TimeDomain,
)
from .api.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from .client import (
    DataStream,
    JobClient,
    JobExecutionException,
    JobExecutionResult,
    JobManagerGoneError,
    KeyedStream,
    Session,
    SessionStartError,
    SqlExecutionException,
    StreamExecutionEnvironment,
    UnpicklableFunctionError,
    connect,
    start,
    start_standby,
)
from .graph.lifecycle import ExecutionState, JobStatus

__version__ = "0.1.0"


def load_ipython_extension(ipython: "object") -> None:
    """``%load_ext sessioncluster``: the ``%flink_session`` and ``%%flink_sql`` magics."""
    from .jupyter.magics import load_ipython_extension as load

    load(ipython)


__all__ = [
    "AggregateFunction", "AggregatingStateDescriptor", "AverageAccumulator", "DataStream",
    "DoubleCounter", "DoubleMaximum", "DoubleMinimum", "ExecutionState", "FilterFunction",
    "FlatMapFunction", "Histogram", "IntCounter", "IntMaximum", "IntMinimum", "JobClient",
    "JobExecutionException", "JobExecutionResult", "JobManagerGoneError", "JobStatus",
    "KeySelector", "KeyedProcessFunction", "KeyedStream", "ListAccumulator", "ListStateDescriptor",
    "LongCounter", "MapFunction", "MapStateDescriptor", "OutputTag", "ProcessFunction",
    "ReduceFunction", "ReducingStateDescriptor", "RuntimeContext", "Session", "SessionStartError",
    "SqlExecutionException", "StateTtlConfig", "StreamExecutionEnvironment", "TimeDomain",
    "UnpicklableFunctionError", "ValueStateDescriptor", "connect", "start", "start_standby",
]

if "IPython" in sys.modules:  # in IPython or Jupyter: the HTML views and the live job widget
    from . import jupyter as _jupyter  # noqa: F401
